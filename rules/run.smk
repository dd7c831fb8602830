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
        # Runs never overlap; the perfsnake scheduler starts them in the
        # campaign's order (looked up from the output path, see common.smk).
        bench_lock=1,
        # Wall-time limit (minutes) of a run job on a cluster: the longest
        # timeout_s plus start-up and hooks.
        runtime=INDEX.runs.run_runtime(),
    params:
        spec=run_params,
    run:
        do_run(wildcards)
