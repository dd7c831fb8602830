# Bisection over a commit range (campaign key `bisect:`): each step decides
# from every run so far which commit to measure next (with new runs of both
# ends), until the first changed commit is named; bisect.md reports it
# (perfsnake.bisect, perfsnake.stages.bisect). Resumable like the runs.


checkpoint bisect_step:
    input:
        bisect_step_input,
    output:
        "results/{campaign}/bisect/step-{step}.json",
    log:
        "results/{campaign}/logs/bisect-step-{step}.log",
    wildcard_constraints:
        step=layout.RUN_RE,
    localrule: True
    run:
        do_bisect_step(wildcards, input, output, log)


rule bisect_report:
    input:
        final=bisect_final,
        code=page_code("bisect.py", "stages/bisect.py"),
    output:
        "results/{campaign}/bisect.md",
    log:
        "results/{campaign}/logs/bisect.log",
    localrule: True
    run:
        do_bisect_report(wildcards, input, output, log)
