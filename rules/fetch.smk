# Fetch: one job per source version, into resources/src/, atomically.


rule fetch:
    output:
        directory("resources/src/{source}"),
    params:
        spec=fetch_params,
    log:
        "resources/logs/fetch/{source}.log",
    conda:
        "../envs/build.yaml"
    script:
        "../scripts/fetch.py"
