# Collect: parses every run of a campaign into its result.json (next to the
# run's raw outputs) and into one results.json for the campaign. One job per
# campaign, inside the Snakemake process: re-parsing is cheap, and the per-run
# path keeps a single Snakemake job, the run itself.


rule collect:
    input:
        runs=collect_input,
        code=ws.COLLECT_CODE,
    output:
        "results/{campaign}/results.json",
    log:
        "results/{campaign}/logs/collect.log",
    run:
        PLAN.collect(wildcards.campaign, output[0], log[0])
