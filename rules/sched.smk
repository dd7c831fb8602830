# Scheduler timelines (sched_timeline wrapper): a Gantt chart per run of
# where its threads ran, drawn from the run's recording
# (perfsnake.stages.sched); redrawing never re-runs a measurement.


rule sched_gantt:
    input:
        status="results/{campaign}/runs/{record}/run-{run}/status.json",
        code=layout.package_code("stages/sched.py", "instruments/sched.py"),
    output:
        svg=report(
            "results/{campaign}/runs/{record}/run-{run}/sched_gantt.svg",
            caption="../workflow/report/sched_gantt.rst",
            category="{campaign}",
            subcategory="profiles",
            labels={"timeline": "{record} run-{run}"},
        ),
        png="results/{campaign}/runs/{record}/run-{run}/sched_gantt.png",
    log:
        "results/{campaign}/runs/{record}/run-{run}/sched_gantt.log",
    conda:
        "../envs/analysis.yaml"
    params:
        title=lambda wildcards: f"{wildcards.campaign}: {wildcards.record} run-{wildcards.run}",
    script:
        "../scripts/sched_gantt.py"
