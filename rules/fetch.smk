# Fetch: one job per source version, into resources/src/, atomically
# (perfsnake.stages.fetch).


rule fetch:
    output:
        directory("resources/src/{source}"),
    log:
        "resources/logs/fetch/{source}.log",
    conda:
        "../envs/build.yaml"
    params:
        spec=fetch_params,
    script:
        "../scripts/fetch.py"
