# Why it changed (`profile_differences`): after the statistics, a checkpoint
# picks the largest significant differences; profiled runs of both sides
# (campaign <name>__why, never in the statistics) give each a differential
# flame graph and a table of the functions whose share changed most
# (perfsnake.stages.why).


checkpoint why_pairs:
    input:
        comparisons="results/{campaign}/comparisons.csv",
        code=layout.package_code("profile_differences.py", "stages/why.py"),
    output:
        "results/{campaign}/why/pairs.json",
    log:
        "results/{campaign}/logs/why_pairs.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        spec=why_spec,
    script:
        "../scripts/why_pairs.py"


rule why_symbols:
    input:
        a="results/{campaign}__why/folded/{a}.folded",
        b="results/{campaign}__why/folded/{b}.folded",
        code=layout.package_code("profile_differences.py", "stages/why.py"),
    output:
        "results/{campaign}/why/{a}~vs~{b}.csv",
    log:
        "results/{campaign}/logs/why-{a}~vs~{b}.log",
    wildcard_constraints:
        a=layout.FLAT_RE,
        b=layout.FLAT_RE,
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        spec=why_spec,
    script:
        "../scripts/why_symbols.py"


rule why_report:
    input:
        files=why_report_inputs,
        code=page_code("profile_differences.py", "stages/why.py"),
    output:
        md="results/{campaign}/why/why.md",
        page=report_page(
            "results/{campaign}/report/why.html", "why it changed", "profiles"
        ),
    log:
        "results/{campaign}/logs/why_report.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        spec=why_spec,
    script:
        "../scripts/why_report.py"
