# Report: the campaign's plots, drawn with Altair, as SVG and PNG; both are
# registered for `snakemake --report report.html`.


rule plot:
    input:
        rows="results/{campaign}/{campaign}.json",
        code=layout.package_code("stages/report.py", "stats.py"),
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
    # Short and reads the whole campaign: on a cluster it runs on the submit host.
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        plot=plot_spec,
        campaign=campaign_info,
    script:
        "../scripts/plot.py"
