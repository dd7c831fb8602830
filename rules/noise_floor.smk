# Is the change real (`noise_floor`): the selected records built several
# times with a shuffled function order and run under environment padding
# (campaign <name>__floor, never in the statistics); the spread across
# builds is each record's noise floor, which marks the comparisons and gates
# of the analysis (perfsnake.statistics.noise_floor, perfsnake.noise_floor,
# perfsnake.stages.noise_floor).


rule noise_floor:
    input:
        results="results/{campaign}__floor/results.json",
        code=layout.package_code(
            "stages/noise_floor.py",
            "statistics/noise_floor.py",
            "statistics/records.py",
        ),
    output:
        "results/{campaign}/floor/noise_floor.csv",
    log:
        "results/{campaign}/logs/noise_floor.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        campaign=campaign_info,
    script:
        "../scripts/noise_floor.py"


rule noise_floor_page:
    input:
        floor="results/{campaign}/floor/noise_floor.csv",
        info="results/{campaign}/campaign.json",
        code=page_code("stages/tables.py"),
    output:
        floor=report_page(
            "results/{campaign}/report/floor.html", "layout noise floor", "statistics"
        ),
    log:
        "results/{campaign}/logs/noise_floor_page.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/noise_floor_page.py"
