# Collect: parses the runs of one record into a result.json per run. It runs
# in the Snakemake process (no interpreter start-up per record). One rule per
# distinct nb_runs, because a rule's outputs cannot vary in number.

for _nb_runs, _names in PLAN.nb_runs_groups().items():

    rule:
        name:
            f"collect_{_nb_runs}_runs"
        input:
            collect_input,
        output:
            expand(
                "results/{{campaign}}/runs/{{record}}/run-{run}/result.json",
                run=range(1, _nb_runs + 1),
            ),
        log:
            "results/{campaign}/logs/collect/{record}.log",
        wildcard_constraints:
            campaign=ws.alternatives(_names),
        run:
            PLAN.collect(wildcards.campaign, wildcards.record, log[0])
