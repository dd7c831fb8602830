# Collect: parses every run of a campaign into its result.json (next to the
# run's raw outputs) and into one results.json for the campaign. One job per
# campaign, inside the Snakemake process: re-parsing is cheap, and the per-run
# path keeps a single Snakemake job, the run itself.


rule collect:
    input:
        runs=collect_input,
        decision=precision_final,
        code=ws.COLLECT_CODE,
    output:
        "results/{campaign}/results.json",
    log:
        "results/{campaign}/logs/collect.log",
    run:
        PLAN.collect(
            wildcards.campaign, input.runs, output[0], log[0], *input.decision
        )


# Run until precise: after each round of runs, this checkpoint decides which
# records need more runs (and how many); the next round depends on it.
checkpoint precision_round:
    input:
        precision_round_input,
    output:
        "results/{campaign}/precision/round-{round}.json",
    log:
        "results/{campaign}/logs/precision-round-{round}.log",
    wildcard_constraints:
        round=r"[1-9][0-9]*",
    run:
        PLAN.precision_decide(
            wildcards.campaign, int(wildcards.round), list(input), output[0], log[0]
        )
