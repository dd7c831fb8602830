# Report: the campaign's plots, drawn with Altair, as SVG and PNG; both are
# registered for `snakemake --report report.html`.


rule plot:
    input:
        rows="results/{campaign}/{campaign}.json",
        code=ws.PLOT_CODE,
    output:
        svg=report(
            "results/{campaign}/plots/{plot}.svg",
            caption="../workflow/report/plot.rst",
            category="{campaign}",
            labels={"campaign": "{campaign}", "figure": "{plot}"},
        ),
        png="results/{campaign}/plots/{plot}.png",
    log:
        "results/{campaign}/logs/plot/{plot}.log",
    conda:
        "../envs/analysis.yaml"
    params:
        plot=plot_spec,
        campaign=lambda wildcards: PLAN.campaign_info(wildcards.campaign),
    script:
        "../scripts/plot.py"
