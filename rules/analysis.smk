# Analysis: per-record summaries (intervals on subsession means, exact
# median intervals, autocorrelation, stability flags) and corrected Welch
# comparisons between records (perfsnake.stages.analysis).


rule analyse:
    input:
        results="results/{campaign}/results.json",
        # The campaign as a file: the report shows this rule's parameters.
        info="results/{campaign}/campaign.json",
        # Earlier result directories the reference gates compare with.
        baselines=baseline_inputs,
        # Their machine states and this campaign's (the CSVs' # metadata), compared as compare does.
        baseline_states=baseline_state_inputs,
        # History gates read the campaign's machine state (its aggregated JSON).
        rows=history_gate_inputs,
        # The campaign's layout noise floor, if it measures one (rules/noise_floor.smk).
        floor=floor_inputs,
        code=page_code(
            "stages/analysis.py",
            "statistics/records.py",
            "statistics/summaries.py",
            "statistics/intervals.py",
            "statistics/subsessions.py",
            "statistics/tests.py",
            "statistics/modes.py",
            "gates.py",
            "noise_floor.py",
        ),
    output:
        summary="results/{campaign}/summary.csv",
        # Shown in the report as HTML pages (rules/report.smk), not as downloads.
        comparisons="results/{campaign}/comparisons.csv",
        significant="results/{campaign}/significant.md",
        gates="results/{campaign}/gates.csv",
        # significant.md as the report shows it, from the same document.
        significant_page=report_page(
            "results/{campaign}/report/significant.html",
            "significant differences",
            "statistics",
        ),
    log:
        "results/{campaign}/logs/analyse.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        # The results store a history gate reads (rules/history.smk records into it).
        store=config.get("history"),
    script:
        "../scripts/analyse.py"


# Observer effect: the campaign against its uninstrumented control runs.
rule overhead:
    input:
        main="results/{campaign}/results.json",
        controls=control_results,
    output:
        "results/{campaign}/overhead.csv",
    log:
        "results/{campaign}/logs/overhead.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        campaign=campaign_info,
        variants=control_variants,
    script:
        "../scripts/overhead.py"


# The campaign against earlier results of its parameter space (`compare_with`:
# result directories or artifact zips from other dates or hosts), earliest
# first (perfsnake.compare), with a report page.
rule compare_with:
    input:
        csv="results/{campaign}/{campaign}.csv",
        earlier=compare_inputs,
        code=page_code("compare.py", "stages/tables.py"),
    output:
        csv="results/{campaign}/compare/compare.csv",
        md="results/{campaign}/compare/compare.md",
        differences="results/{campaign}/compare/metadata_differences.csv",
        page=report_page(
            "results/{campaign}/report/compare.html",
            "compared with earlier results",
            "statistics",
        ),
    log:
        "results/{campaign}/logs/compare_with.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        earlier=compare_earlier,
    script:
        "../scripts/compare.py"


# Regression view of a campaign whose variable is a commit range: the steps
# along the range, then one figure per metric (perfsnake.stages.regression).
rule regression_steps:
    input:
        results="results/{campaign}/results.json",
        code=layout.package_code(
            "stages/regression.py",
            "statistics/records.py",
            "statistics/changepoints.py",
            "statistics/tests.py",
            "statistics/subsessions.py",
        ),
    output:
        "results/{campaign}/regression/steps.csv",
    log:
        "results/{campaign}/logs/regression_steps.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        campaign=campaign_info,
    script:
        "../scripts/regression_steps.py"


rule regression_figure:
    input:
        results="results/{campaign}/results.json",
        steps="results/{campaign}/regression/steps.csv",
        info="results/{campaign}/campaign.json",
        code=layout.package_code("stages/regression.py"),
    output:
        svg=in_report(
            "results/{campaign}/regression/{metric}.svg",
            "regression",
            {"figure": "regression of {metric}"},
            "figures",
        ),
        png="results/{campaign}/regression/{metric}.png",
        pdf="results/{campaign}/regression/{metric}.pdf",
    log:
        "results/{campaign}/logs/regression-{metric}.log",
    wildcard_constraints:
        metric=r"[^/]+",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/regression_figure.py"
