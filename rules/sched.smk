# Scheduler timelines (sched_timeline wrapper): a Gantt chart per run of
# where its threads ran, drawn from the run's recording
# (perfsnake.stages.sched); redrawing never re-runs a measurement.


rule sched_gantt:
    input:
        status="results/{campaign}/runs/{record}/run-{run}/status.json",
        code=layout.package_code("stages/sched.py", "instruments/sched.py"),
    output:
        svg=in_report(
            "results/{campaign}/runs/{record}/run-{run}/sched_gantt.svg",
            "sched_gantt",
            {"timeline": "{record} run-{run}"},
            "profiles",
        ),
        png="results/{campaign}/runs/{record}/run-{run}/sched_gantt.png",
    log:
        "results/{campaign}/runs/{record}/run-{run}/sched_gantt.log",
    conda:
        "../envs/analysis.yaml"
    params:
        title=run_title,
    script:
        "../scripts/sched_gantt.py"


# Off-CPU analysis (offcpu wrapper): per run, the stacks where its threads
# blocked, weighted by the time blocked (us), drawn as a flame graph; per
# record, all its runs' stacks, and the differential graphs `compare:` names.
rule offcpu_folded:
    input:
        status="results/{campaign}/runs/{record}/run-{run}/status.json",
        code=layout.package_code("instruments/offcpu.py"),
    output:
        "results/{campaign}/runs/{record}/run-{run}/offcpu.folded",
    log:
        "results/{campaign}/runs/{record}/run-{run}/offcpu.folded.log",
    conda:
        "../envs/profiling.yaml"
    script:
        "../scripts/offcpu.py"


rule offcpu_flamegraph:
    input:
        "results/{campaign}/runs/{record}/run-{run}/offcpu.folded",
    output:
        in_report(
            "results/{campaign}/runs/{record}/run-{run}/offcpu.svg",
            "offcpu",
            {"off-CPU": "{record} run-{run}"},
            "profiles",
        ),
    log:
        "results/{campaign}/runs/{record}/run-{run}/offcpu.log",
    conda:
        "../envs/profiling.yaml"
    params:
        tool=flame_drawer,
        title=offcpu_run_title,
    shell:
        # An empty profile (nothing blocked, or a failed run) is an empty graph.
        "{params.tool} --title {params.title:q} --countname us --colors io < {input:q} > {output:q} 2> {log:q} "
        "|| [ ! -s {input:q} ]"


rule offcpu_record_folded:
    input:
        offcpu_record_inputs,
    output:
        "results/{campaign}/offcpu/{flat}.folded",
    log:
        "results/{campaign}/offcpu/{flat}.log",
    wildcard_constraints:
        flat=layout.FLAT_RE,
    localrule: True
    conda:
        "../envs/profiling.yaml"
    shell:
        "cat {input:q} > {output:q} 2> {log:q}"


rule offcpu_diff:
    input:
        a="results/{campaign}/offcpu/{a}.folded",
        b="results/{campaign}/offcpu/{b}.folded",
    output:
        "results/{campaign}/offcpu/{a}~vs~{b}.svg",
    log:
        "results/{campaign}/offcpu/{a}~vs~{b}.log",
    wildcard_constraints:
        a=layout.FLAT_RE,
        b=layout.FLAT_RE,
    localrule: True
    conda:
        "../envs/profiling.yaml"
    params:
        diff=flame_differ,
        tool=flame_drawer,
        title=offcpu_diff_title,
    shell:
        "{params.diff} {input.a:q} {input.b:q} 2> {log:q} "
        "| {params.tool} --title {params.title:q} --countname us > {output:q} 2>> {log:q} "
        "|| [ ! -s {input.a:q} ] || [ ! -s {input.b:q} ]"
