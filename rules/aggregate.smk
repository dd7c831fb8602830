# Aggregate: the campaign CSV (with # metadata lines), all rows as JSON, and
# commands.sh listing every executed command in start order.


rule aggregate:
    input:
        results="results/{campaign}/results.json",
        code=layout.package_code("stages/aggregate.py", "machine/metadata.py"),
    output:
        csv="results/{campaign}/{campaign}.csv",
        json="results/{campaign}/{campaign}.json",
        commands="results/{campaign}/commands.sh",
    log:
        "results/{campaign}/logs/aggregate.log",
    # Short and reads the whole campaign: on a cluster it runs on the submit host.
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        campaign=campaign_info,
    script:
        "../scripts/aggregate.py"
