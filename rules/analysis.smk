# Analysis: per-record summaries (intervals on subsession means, BCa median
# intervals, autocorrelation) and Welch comparisons between records.


rule analyse:
    input:
        results="results/{campaign}/results.json",
        code=ws.ANALYSIS_CODE,
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
    conda:
        "../envs/analysis.yaml"
    params:
        campaign=lambda wildcards: PLAN.campaign_info(wildcards.campaign),
    script:
        "../scripts/analyse.py"
