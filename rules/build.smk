# Build: keyed by the benchmark and its build variables only, so changing a
# run variable never rebuilds and one changed build value rebuilds one build
# (perfsnake.stages.build). The build's params name no path, so a moved
# checkout rebuilds nothing.


rule tool:
    input:
        layout.tool_source(),
    output:
        "resources/bin/{tool}",
    log:
        "resources/logs/tool/{tool}.log",
    wildcard_constraints:
        tool=layout.TOOL_RE,
    conda:
        "../envs/build.yaml"
    shell:
        "cc -O2 -Wall -Wextra -Werror -o {output:q} {input:q} 2> {log:q}"


# The launcher inside containers: static, so it runs whatever the image's C
# library.
rule static_tool:
    input:
        layout.tool_source(),
    output:
        "resources/bin/{tool}-static",
    log:
        "resources/logs/tool/{tool}-static.log",
    wildcard_constraints:
        tool=layout.STATIC_TOOL_RE,
    conda:
        "../envs/build.yaml"
    shell:
        "cc -O2 -Wall -Wextra -Werror -static -o {output:q} {input:q} 2> {log:q}"


rule build:
    input:
        build_input,
    output:
        directory("resources/builds/{bench}/{bkey}"),
    log:
        "resources/logs/build/{bench}/{bkey}.log",
    conda:
        "../envs/build.yaml"
    # One core of this machine for a fleet's build on an ssh host (it runs there).
    threads: INDEX.builds.threads()
    resources:
        # A fleet's Slurm node builds its own, on that node.
        **INDEX.builds.placement(),
    params:
        spec=build_params,
    script:
        "../scripts/build.py"


# Every build a campaign needs exists before its first measured run, so that
# `order: interleaved` holds across build variables too (a lock algorithm,
# CFLAGS, a source version): the runs wait for this marker.
rule builds_ready:
    input:
        campaign_builds,
    output:
        "results/{campaign}/builds.ready",
    log:
        "results/{campaign}/logs/builds-ready.log",
    localrule: True
    run:
        mark_builds_ready(input, output, log)


# A fleet's runs on one host wait for that host's builds only.
rule host_builds_ready:
    input:
        host_builds,
    output:
        "results/{campaign}/hosts/{host}/builds.ready",
    log:
        "results/{campaign}/logs/builds-ready-{host}.log",
    localrule: True
    run:
        mark_builds_ready(input, output, log)
