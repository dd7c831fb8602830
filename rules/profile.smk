# Profiler post-processing, one rule per step, wildcards = the parameter
# space. These read perf.data next to a finished run; changing flame-graph
# options re-runs only these rules, never the measurement.


rule perf_report:
    input:
        "results/{campaign}/runs/{record}/run-{run}/status.json",
    output:
        "results/{campaign}/runs/{record}/run-{run}/perf.report",
    log:
        "results/{campaign}/runs/{record}/run-{run}/perf.report.log",
    conda:
        "../envs/profiling.yaml"
    shell:
        "d=$(dirname {input:q}); "
        'if [ -s "$d/perf.data" ]; then '
        'perf report --stdio --no-children -i "$d/perf.data" > {output:q} 2> {log:q}; '
        "else echo 'no perf.data: the run failed before perf wrote it' > {output:q}; fi"


rule perf_folded:
    input:
        "results/{campaign}/runs/{record}/run-{run}/status.json",
    output:
        "results/{campaign}/runs/{record}/run-{run}/perf.folded",
    log:
        "results/{campaign}/runs/{record}/run-{run}/perf.folded.log",
    conda:
        "../envs/profiling.yaml"
    params:
        collapse=flame_collapse,
    shell:
        # -F -period: every sample weighs 1 (a count), not its period in ns.
        "d=$(dirname {input:q}); "
        'if [ -s "$d/perf.data" ]; then '
        'perf script -F -period -i "$d/perf.data" 2> {log:q} | {params.collapse} > {output:q}; '
        "else : > {output:q}; fi"


rule flamegraph:
    input:
        "results/{campaign}/runs/{record}/run-{run}/perf.folded",
    output:
        "results/{campaign}/runs/{record}/run-{run}/flamegraph.svg",
    log:
        "results/{campaign}/runs/{record}/run-{run}/flamegraph.log",
    conda:
        "../envs/profiling.yaml"
    params:
        tool=flame_drawer,
        options=flame_options,
        title=run_title,
    shell:
        # An empty profile (failed run) still yields an SVG saying so.
        "{params.tool} --title {params.title:q} {params.options} < {input:q} > {output:q} 2> {log:q} "
        "|| [ ! -s {input:q} ]"


rule record_folded:
    input:
        folded_inputs,
    output:
        "results/{campaign}/folded/{flat}.folded",
    log:
        "results/{campaign}/folded/{flat}.log",
    wildcard_constraints:
        flat=layout.FLAT_RE,
    localrule: True
    conda:
        "../envs/profiling.yaml"
    shell:
        "cat {input:q} > {output:q} 2> {log:q}"


rule diff_flamegraph:
    input:
        a="results/{campaign}/folded/{a}.folded",
        b="results/{campaign}/folded/{b}.folded",
    output:
        "results/{campaign}/diff/{a}~vs~{b}.svg",
    log:
        "results/{campaign}/diff/{a}~vs~{b}.log",
    wildcard_constraints:
        a=layout.FLAT_RE,
        b=layout.FLAT_RE,
    localrule: True
    conda:
        "../envs/profiling.yaml"
    params:
        diff=flame_differ,
        tool=flame_drawer,
        options=flame_options,
        title=diff_title,
    shell:
        "{params.diff} {input.a:q} {input.b:q} 2> {log:q} "
        "| {params.tool} --title {params.title:q} {params.options} > {output:q} 2>> {log:q} "
        "|| [ ! -s {input.a:q} ] || [ ! -s {input.b:q} ]"
