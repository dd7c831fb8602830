# Analysis: per-record summaries (intervals on subsession means, BCa median
# intervals, autocorrelation) and Welch comparisons between records.


rule analyse:
    input:
        results="results/{campaign}/results.json",
        code=layout.package_code("stages/analysis.py", "stats.py"),
    output:
        summary="results/{campaign}/summary.csv",
        comparisons=report(
            "results/{campaign}/comparisons.csv",
            caption="../workflow/report/comparisons.rst",
            category="{campaign}",
            labels={"campaign": "{campaign}", "figure": "comparisons (table)"},
        ),
        significant=report(
            "results/{campaign}/significant.md",
            caption="../workflow/report/significant.rst",
            category="{campaign}",
            labels={"campaign": "{campaign}", "figure": "significant differences"},
        ),
    log:
        "results/{campaign}/logs/analyse.log",
    # Short and reads the whole campaign: on a cluster it runs on the submit host.
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        campaign=campaign_info,
    script:
        "../scripts/analyse.py"


# Observer effect: the campaign against its uninstrumented control runs.
rule overhead:
    input:
        main="results/{campaign}/results.json",
        controls=lambda wildcards: INDEX.control_results(wildcards.campaign),
    output:
        report(
            "results/{campaign}/overhead.csv",
            caption="../workflow/report/overhead.rst",
            category="{campaign}",
            labels={"campaign": "{campaign}", "figure": "instrument overhead (table)"},
        ),
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
