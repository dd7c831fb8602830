# History: the campaign's runs recorded in the results store (perfsnake.history),
# after aggregation; a store that cannot be used never costs the results.


rule history:
    input:
        rows="results/{campaign}/{campaign}.json",
        info="results/{campaign}/campaign.json",
    output:
        record="results/{campaign}/history.json",
        page=report_page("results/{campaign}/report/history.html", "history", "history"),
    log:
        "results/{campaign}/logs/history.log",
    # Short, and the store may be a file on the submit host: never a cluster job.
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        store=config.get("history"),
        strict=summary_stage.strict_mode(config),
    script:
        "../scripts/history.py"
