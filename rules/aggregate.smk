# Aggregate: the campaign CSV (with # metadata lines), all rows as JSON, and
# commands.sh listing every executed command in start order.


rule aggregate:
    input:
        results="results/{campaign}/results.json",
        code=ws.AGGREGATE_CODE,
    output:
        csv="results/{campaign}/{campaign}.csv",
        json="results/{campaign}/{campaign}.json",
        commands="results/{campaign}/commands.sh",
    log:
        "results/{campaign}/logs/aggregate.log",
    conda:
        "../envs/analysis.yaml"
    params:
        campaign=lambda wildcards: PLAN.campaign_info(wildcards.campaign),
    script:
        "../scripts/aggregate.py"
