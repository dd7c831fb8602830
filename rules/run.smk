# Run: one job per (record, repetition), serialised by the bench_lock
# resource. The C launcher alone spans the timed interval; this block only
# writes command.sh before it and reports progress.


rule run:
    input:
        launcher=run_launcher,
        build=run_build_input,
    output:
        "results/{campaign}/runs/{record}/run-{run}/status.json",
    log:
        "results/{campaign}/runs/{record}/run-{run}/stderr.txt",
    resources:
        bench_lock=1,
        # Read by the perfsnake scheduler: the campaign's execution order.
        run_order=run_order,
        # Wall-time limit (minutes) of a run job on a cluster: the campaign's
        # timeout_s plus start-up and hooks.
        runtime=run_runtime,
    params:
        spec=run_params,
    run:
        do_run(wildcards, output)
