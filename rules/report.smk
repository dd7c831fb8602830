# Report: the campaign's figures (Altair: SVG, PNG and PDF), the tables to
# paste (summary.md/.tex/.org) and HTML pages of the analysis tables, all
# registered for `snakemake --report report.html`, one category per campaign.
from perfsnake.stages import tables as tables_stage


rule plot:
    input:
        rows="results/{campaign}/{campaign}.json",
        code=layout.package_code("stages/report.py", "stats.py"),
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
        campaign=campaign_info,
        caption=lambda w: tables_stage.plot_caption(
            INDEX.campaigns[w.campaign], json.loads(plot_spec(w))
        ),
    script:
        "../scripts/plot.py"
