# Analysis: per-record summaries (intervals on subsession means, exact
# median intervals, autocorrelation, stability flags) and corrected Welch
# comparisons between records (perfsnake.stages.analysis).


rule analyse:
    input:
        results="results/{campaign}/results.json",
        # Earlier result directories the reference gates compare with.
        baselines=lambda wildcards: INDEX.reports.baseline_inputs(wildcards.campaign),
        # History gates read the campaign's machine state (its aggregated JSON).
        rows=lambda wildcards: INDEX.reports.history_gate_inputs(wildcards.campaign),
        # The campaign's layout noise floor, if it measures one (rules/floor.smk).
        floor=lambda wildcards: INDEX.reports.floor_inputs(wildcards.campaign),
        code=layout.package_code(
            "stages/analysis.py",
            "statistics/records.py",
            "statistics/summaries.py",
            "statistics/intervals.py",
            "statistics/subsessions.py",
            "statistics/tests.py",
            "statistics/modes.py",
            "gates.py",
            "floor.py",
        ),
    output:
        summary="results/{campaign}/summary.csv",
        # Shown in the report as HTML pages (rules/report.smk), not as downloads.
        comparisons="results/{campaign}/comparisons.csv",
        significant="results/{campaign}/significant.md",
        gates="results/{campaign}/gates.csv",
    log:
        "results/{campaign}/logs/analyse.log",
    # Short and reads the whole campaign: on a cluster it runs on the submit host.
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        campaign=campaign_info,
        # The results store a history gate reads (rules/history.smk records into it).
        store=config.get("history"),
    script:
        "../scripts/analyse.py"


# Observer effect: the campaign against its uninstrumented control runs.
rule overhead:
    input:
        main="results/{campaign}/results.json",
        controls=lambda wildcards: INDEX.derived.control_results(wildcards.campaign),
    output:
        "results/{campaign}/overhead.csv",
    log:
        "results/{campaign}/logs/overhead.log",
    # Short and reads the whole campaign: on a cluster it runs on the submit host.
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        campaign=campaign_info,
        variants=control_variants,
    script:
        "../scripts/overhead.py"


# The campaign against earlier results of its parameter space (`compare_with`:
# result directories or artifact zips from other dates or hosts), earliest
# first (perfsnake.compare), with a report page.
rule compare_with:
    input:
        csv="results/{campaign}/{campaign}.csv",
        earlier=lambda wildcards: INDEX.reports.compare_inputs(wildcards.campaign),
        code=layout.package_code("compare.py", "stages/tables.py"),
    output:
        csv="results/{campaign}/compare/compare.csv",
        md="results/{campaign}/compare/compare.md",
        differences="results/{campaign}/compare/metadata_differences.csv",
        page=report(
            "results/{campaign}/report/compare.html",
            caption="../workflow/report/compare.rst",
            category="{campaign}",
            subcategory="statistics",
            labels={"page": "compared with earlier results"},
        ),
    log:
        "results/{campaign}/logs/compare_with.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        earlier=lambda wildcards: INDEX.campaigns[wildcards.campaign].compare_with,
    script:
        "../scripts/compare.py"


# Regression view of a campaign whose variable is a commit range: the steps
# along the range, then one figure per metric (perfsnake.stages.regression).
rule regression_steps:
    input:
        results="results/{campaign}/results.json",
        code=layout.package_code(
            "stages/regression.py",
            "statistics/records.py",
            "statistics/changepoints.py",
            "statistics/tests.py",
            "statistics/subsessions.py",
        ),
    output:
        "results/{campaign}/regression/steps.csv",
    log:
        "results/{campaign}/logs/regression_steps.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        campaign=campaign_info,
    script:
        "../scripts/regression.py"


rule regression_figure:
    input:
        results="results/{campaign}/results.json",
        steps="results/{campaign}/regression/steps.csv",
        info="results/{campaign}/campaign.json",
        code=layout.package_code("stages/regression.py"),
    output:
        svg=report(
            "results/{campaign}/regression/{metric}.svg",
            caption="../workflow/report/regression.rst",
            category="{campaign}",
            subcategory="figures",
            labels={"figure": "regression of {metric}"},
        ),
        png="results/{campaign}/regression/{metric}.png",
        pdf="results/{campaign}/regression/{metric}.pdf",
    log:
        "results/{campaign}/logs/regression-{metric}.log",
    wildcard_constraints:
        metric=r"[^/]+",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/regression.py"
