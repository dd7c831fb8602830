# Build: keyed by the benchmark and its build variables only, so changing a
# run variable never rebuilds and one changed build value rebuilds one build.


rule tool:
    input:
        str(ws.ROOT / "src/{tool}/{tool}.c"),
    output:
        "resources/bin/{tool}",
    log:
        "resources/logs/tool/{tool}.log",
    wildcard_constraints:
        tool="psrun|psplace",
    conda:
        "../envs/build.yaml"
    shell:
        "cc -O2 -Wall -Wextra -Werror -o {output} {input} 2> {log}"


# The launcher inside containers: static, so it runs whatever the image's C
# library.
rule static_tool:
    input:
        str(ws.ROOT / "src/{tool}/{tool}.c"),
    output:
        "resources/bin/{tool}-static",
    log:
        "resources/logs/tool/{tool}-static.log",
    wildcard_constraints:
        tool="psrun",
    conda:
        "../envs/build.yaml"
    shell:
        "cc -O2 -Wall -Wextra -Werror -static -o {output} {input} 2> {log}"


rule build:
    input:
        build_input,
    output:
        directory("resources/builds/{bench}/{bkey}"),
    log:
        "resources/logs/build/{bench}/{bkey}.log",
    conda:
        "../envs/build.yaml"
    threads: 2
    params:
        script=build_params,
        platform=build_platform,
    script:
        "../scripts/build.py"
