# Run: one job per (record, repetition), serialised by the bench_lock
# resource. The C launcher alone spans the timed interval; the job body
# (perfsnake.stages.run) only writes command.sh before it and reports progress.


rule run:
    input:
        run_inputs,
    output:
        "results/{campaign}/runs/{record}/run-{run}/status.json",
    log:
        "results/{campaign}/runs/{record}/run-{run}/stderr.txt",
    resources:
        # Runs never overlap (a fleet's, never on one host: planning.Runs.locks);
        # the perfsnake scheduler starts them in the campaign's order (looked
        # up from the output path, see common.smk).
        **INDEX.runs.locks(),
        # On a Slurm cluster: the node to the run alone, a fleet's on its node.
        **INDEX.runs.placement(),
        # Wall-time limit (minutes) of a run job on a cluster: the longest
        # timeout_s plus start-up and hooks.
        runtime=INDEX.runs.run_runtime(),
    params:
        spec=run_params,
    run:
        do_run(wildcards)


# A batch of runs (a campaign's `batch`: consecutive runs of its order) in one
# job: Snakemake's cost per job is paid once per batch. Its declared output is
# the batch's marker, not its runs' status.json, so a batch killed in its
# middle keeps the runs it finished: the re-run executes only the others
# (perfsnake.stages.run.execute_batch). Each run takes the host lock by
# itself, so another invocation's run may come between two runs of a batch,
# never inside one; bench_lock only keeps this invocation's own runs apart.
rule run_batch:
    input:
        batch_inputs,
    output:
        "results/{campaign}/runs/batches/{batch}.json",
    log:
        "results/{campaign}/logs/batches/{batch}.log",
    resources:
        bench_lock=1,
        runtime=INDEX.batches.runtime(),
        # A batch is never a fleet's: on a Slurm cluster, its node to itself.
        slurm_extra=planning.EXCLUSIVE,
    params:
        spec=batch_params,
    run:
        do_batch(wildcards, input, output, log)
