# Report: the campaign's figures (Altair: SVG, PNG and PDF), the tables to
# paste (summary.md/.tex/.org) and HTML pages of the analysis tables, all
# registered for `snakemake --report report.html`, one category per campaign.
from perfsnake.stages import tables as tables_stage

flame_entries = lambda w: tables_stage.flame_entries(
    INDEX.campaigns[w.campaign], INDEX.targets.instrument_targets(w.campaign)
)


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
            "stages/report.py",
            "statistics/summaries.py",
            "statistics/intervals.py",
            "statistics/subsessions.py",
            "statistics/modes.py",
        ),
    output:
        svg=report(
            "results/{campaign}/plots/{plot}.svg",
            caption="../workflow/report/plot.rst",
            category="{campaign}",
            subcategory="figures",
            labels={"figure": "{plot}"},
        ),
        png="results/{campaign}/plots/{plot}.png",
        pdf="results/{campaign}/plots/{plot}.pdf",
    log:
        "results/{campaign}/logs/plot/{plot}.log",
    # Short and reads the whole campaign: on a cluster it runs on the submit host.
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        plot=plot_spec,
        caption=lambda w: tables_stage.plot_caption(
            INDEX.campaigns[w.campaign],
            json.loads(INDEX.reports.plot_spec(w.campaign, w.plot)),
        ),
    script:
        "../scripts/plot.py"


# A figure over several campaigns (the configuration's `figures:`), e.g. one
# lock sweep faceted by store.
rule figure:
    input:
        rows=figure_rows,
        code=layout.package_code(
            "stages/report.py",
            "statistics/summaries.py",
            "statistics/intervals.py",
            "statistics/subsessions.py",
            "statistics/modes.py",
        ),
    output:
        svg=report(
            "results/figures/{figure}.svg",
            caption="../workflow/report/figure.rst",
            category="figures",
            labels={"figure": "{figure}"},
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
        campaigns=lambda w: ", ".join(INDEX.figures[w.figure].campaigns),
    script:
        "../scripts/figure.py"


# Tables to paste (Markdown, LaTeX booktabs, Org): one row per record and
# metric, the statistic with its interval, n and the ratio to the baseline.
rule summary_tables:
    input:
        summary="results/{campaign}/summary.csv",
        code=layout.package_code("stages/tables.py"),
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
        "../scripts/tables.py"


# The report's pages of a campaign: its part of the landing page and the
# machine and statistics pages, tables rendered inline.
rule report_pages:
    input:
        rows="results/{campaign}/{campaign}.json",
        summary="results/{campaign}/summary.csv",
        comparisons="results/{campaign}/comparisons.csv",
        significant="results/{campaign}/significant.md",
        tables=rules.summary_tables.output,
        info="results/{campaign}/campaign.json",
        code=layout.package_code("stages/tables.py"),
    output:
        landing="results/{campaign}/report/landing.html",
        machine=report(
            "results/{campaign}/report/machine.html",
            caption="../workflow/report/machine.rst",
            category="{campaign}",
            subcategory="machine",
            labels={"page": "machine and run metadata"},
        ),
        summary=report(
            "results/{campaign}/report/summary.html",
            caption="../workflow/report/summary.rst",
            category="{campaign}",
            subcategory="statistics",
            labels={"page": "summary"},
        ),
        comparisons=report(
            "results/{campaign}/report/comparisons.html",
            caption="../workflow/report/comparisons.rst",
            category="{campaign}",
            subcategory="statistics",
            labels={"page": "comparisons"},
        ),
        significant=report(
            "results/{campaign}/report/significant.html",
            caption="../workflow/report/significant.rst",
            category="{campaign}",
            subcategory="statistics",
            labels={"page": "significant differences"},
        ),
    log:
        "results/{campaign}/logs/report_pages.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        description=lambda w: tables_stage.description(INDEX.campaigns[w.campaign]),
    script:
        "../scripts/tables.py"


rule overhead_page:
    input:
        overhead="results/{campaign}/overhead.csv",
        info="results/{campaign}/campaign.json",
        code=layout.package_code("stages/tables.py"),
    output:
        overhead=report(
            "results/{campaign}/report/overhead.html",
            caption="../workflow/report/overhead.rst",
            category="{campaign}",
            subcategory="statistics",
            labels={"page": "instrument overhead"},
        ),
    log:
        "results/{campaign}/logs/overhead_page.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/tables.py"


# Every flame graph of the campaign on one page, with short titles.
rule flamegraph_page:
    input:
        svgs=lambda w: [e["path"] for e in flame_entries(w)],
        info="results/{campaign}/campaign.json",
        code=layout.package_code("stages/tables.py"),
    output:
        flamegraphs=report(
            "results/{campaign}/report/flamegraphs.html",
            caption="../workflow/report/flamegraphs.rst",
            category="{campaign}",
            subcategory="profiles",
            labels={"page": "flame graphs"},
        ),
    log:
        "results/{campaign}/logs/flamegraph_page.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        entries=lambda w: flow(flame_entries(w)),
    script:
        "../scripts/tables.py"
