# Build: keyed by the benchmark and its build variables only, so changing a
# run variable never rebuilds and one changed build value rebuilds one build.


rule launcher:
    input:
        str(ws.ROOT / "src/psrun/psrun.c"),
    output:
        "resources/bin/psrun",
    log:
        "resources/logs/launcher.log",
    conda:
        "../envs/build.yaml"
    shell:
        "cc -O2 -Wall -Wextra -Werror -o {output} {input} 2> {log}"


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
    script:
        "../scripts/build.py"
