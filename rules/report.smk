# Report: the campaign's figures (Altair: SVG, PNG and PDF), the tables to
# paste (summary.md/.tex/.org) and HTML pages of the analysis tables, all
# registered for `snakemake --report report.html`, one category per campaign.
from perfsnake.stages import tables as tables_stage


# What the report's rules need to know of a campaign, as a file: their job
# parameters, which the report shows, stay short and readable.
rule campaign_info:
    output:
        "results/{campaign}/campaign.json",
    log:
        "results/{campaign}/logs/campaign_info.log",
    localrule: True
    params:
        info=campaign_info,
    run:
        do_campaign_info(params, output, log)


rule plot:
    input:
        rows="results/{campaign}/{campaign}.json",
        info="results/{campaign}/campaign.json",
        code=layout.package_code(
            "stages/plots.py",
            "statistics/summaries.py",
            "statistics/intervals.py",
            "statistics/subsessions.py",
            "statistics/modes.py",
        ),
    output:
        svg=in_report(
            "results/{campaign}/plots/{plot}.svg",
            "plot",
            {"figure": "{plot}"},
            "figures",
        ),
        png="results/{campaign}/plots/{plot}.png",
        pdf="results/{campaign}/plots/{plot}.pdf",
    log:
        "results/{campaign}/logs/plot/{plot}.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        plot=plot_spec,
        caption=plot_caption,
    script:
        "../scripts/plot.py"


# A figure over several campaigns (the configuration's `figures:`), e.g. one
# lock sweep faceted by store.
rule figure:
    input:
        rows=figure_rows,
        code=layout.package_code(
            "stages/plots.py",
            "statistics/summaries.py",
            "statistics/intervals.py",
            "statistics/subsessions.py",
            "statistics/modes.py",
        ),
    output:
        svg=in_report(
            "results/figures/{figure}.svg",
            "figure",
            {"figure": "{figure}"},
            category="figures",
        ),
        png="results/figures/{figure}.png",
        pdf="results/figures/{figure}.pdf",
    log:
        "results/figures/logs/{figure}.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        figure=figure_spec,
        campaigns=figure_campaigns,
    script:
        "../scripts/figure.py"


# Tables to paste (Markdown, LaTeX booktabs, Org): one row per record and
# metric, the statistic with its interval, n and the ratio to the baseline.
rule summary_tables:
    input:
        summary="results/{campaign}/summary.csv",
        code=page_code("stages/tables.py"),
    output:
        md="results/{campaign}/summary.md",
        tex="results/{campaign}/summary.tex",
        org="results/{campaign}/summary.org",
    log:
        "results/{campaign}/logs/summary_tables.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        campaign=campaign_info,
    script:
        "../scripts/summary_tables.py"


# The report's pages of a campaign: its part of the landing page and the
# machine and statistics pages, tables rendered inline (the analysis writes
# the significant differences' page, with significant.md).
rule report_pages:
    input:
        rows="results/{campaign}/{campaign}.json",
        summary="results/{campaign}/summary.csv",
        comparisons="results/{campaign}/comparisons.csv",
        tables=rules.summary_tables.output,
        info="results/{campaign}/campaign.json",
        code=page_code("stages/tables.py"),
    output:
        landing="results/{campaign}/report/landing.html",
        machine=report_page(
            "results/{campaign}/report/machine.html",
            "machine and run metadata",
            "machine",
        ),
        summary=report_page(
            "results/{campaign}/report/summary.html", "summary", "statistics"
        ),
        comparisons=report_page(
            "results/{campaign}/report/comparisons.html", "comparisons", "statistics"
        ),
    log:
        "results/{campaign}/logs/report_pages.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        description=campaign_description,
    script:
        "../scripts/report_pages.py"


rule overhead_page:
    input:
        overhead="results/{campaign}/overhead.csv",
        info="results/{campaign}/campaign.json",
        code=page_code("stages/tables.py"),
    output:
        overhead=report_page(
            "results/{campaign}/report/overhead.html",
            "instrument overhead",
            "statistics",
        ),
    log:
        "results/{campaign}/logs/overhead_page.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/overhead_page.py"


# Every flame graph of the campaign on one page, with short titles.
rule flamegraph_page:
    input:
        svgs=flame_svgs,
        info="results/{campaign}/campaign.json",
        code=page_code("stages/tables.py"),
    output:
        flamegraphs=report_page(
            "results/{campaign}/report/flamegraphs.html", "flame graphs", "profiles"
        ),
    log:
        "results/{campaign}/logs/flamegraph_page.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        entries=flame_entries_param,
    script:
        "../scripts/flamegraph_page.py"
