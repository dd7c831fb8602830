# Collect: parses every run of a campaign into its result.json (next to the
# run's raw outputs) and into one results.json for the campaign
# (perfsnake.stages.collect). One job per campaign, inside the Snakemake
# process: re-parsing is cheap, and the per-run path keeps a single Snakemake
# job, the run itself.


rule collect:
    input:
        runs=collect_input,
        decision=precision_final,
        code=layout.benchmark_code() + layout.package_code("stages/collect.py"),
    output:
        "results/{campaign}/results.json",
    log:
        "results/{campaign}/logs/collect.log",
    # Short and reads the whole campaign: on a cluster it runs on the submit host.
    localrule: True
    params:
        spec=collect_params,
    run:
        do_collect(wildcards, input, output, log)


# Run until precise: after each round of runs, this checkpoint decides which
# records need more runs (and how many); the next round depends on it
# (perfsnake.stages.precision).
checkpoint precision_round:
    input:
        precision_round_input,
    output:
        "results/{campaign}/precision/round-{round}.json",
    log:
        "results/{campaign}/logs/precision-round-{round}.log",
    wildcard_constraints:
        round=layout.RUN_RE,
    # Short and reads the whole campaign: on a cluster it runs on the submit host.
    localrule: True
    run:
        do_precision_round(wildcards, input, output, log)


# Decided in the fewest runs (`statistics.decide`): what the rounds decided,
# one row per comparison, and the summary (perfsnake.stages.precision).
rule decisions:
    input:
        precision_final,
    output:
        csv="results/{campaign}/decisions.csv",
        md="results/{campaign}/decisions.md",
        page=report_page(
            "results/{campaign}/report/decisions.html",
            "decided in the fewest runs",
            "statistics",
        ),
    log:
        "results/{campaign}/logs/decisions.log",
    # Short: on a cluster it runs on the submit host.
    localrule: True
    run:
        do_decisions(wildcards, input, output, log)
