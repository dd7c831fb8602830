# Helpers of the rule files (functions only). How an output enters
# `snakemake --report`, and the rules' named input functions and parameters.
#
# Rules that are short and read a whole campaign (or a store on the submit
# host) declare `localrule: True` each: on a cluster they run on the submit
# host. A single `localrules:` directive would say it once, but Snakemake
# (9.27) does not rename its entries when the workflow is used as a module
# with a prefix (`use rule * from perfsnake as ps_*`), so those rules would
# become cluster jobs there.


def in_report(path, caption, labels, subcategory=None, category="{campaign}"):
    """`path` registered in the report under the campaign's category, described
    by workflow/report/<caption>.rst (resolved from rules/)."""
    return report(
        path,
        caption=f"../workflow/report/{caption}.rst",
        category=category,
        subcategory=subcategory,
        labels=labels,
    )


def report_page(path, page, subcategory):
    """A campaign's HTML page (results/<campaign>/report/<name>.html), its caption
    workflow/report/<name>.rst, labelled `page` in the report."""
    name = Path(path).stem
    return in_report(path, name, {"page": page}, subcategory)


def page_code(*modules):
    """package_code(*modules) and the page model, its renderers and templates:
    editing how pages are drawn redraws them."""
    return layout.package_code(
        *modules,
        "pages/model.py",
        "pages/markdown.py",
        "pages/html.py",
        "pages/templates/page.html",
        "pages/templates/style.css",
        "pages/templates/landing.html",
    )


# ---- input functions and parameters of rules/report.smk ----------


def flame_entries(wildcards):
    """The campaign's flame graphs with their short titles."""
    return tables_stage.flame_entries(
        INDEX.campaigns[wildcards.campaign],
        INDEX.targets.instrument_targets(wildcards.campaign),
    )


def flame_svgs(wildcards):
    return [e["path"] for e in flame_entries(wildcards)]


def flame_entries_param(wildcards):
    return flow(flame_entries(wildcards))


def plot_caption(wildcards):
    return tables_stage.plot_caption(
        INDEX.campaigns[wildcards.campaign],
        json.loads(INDEX.reports.plot_spec(wildcards.campaign, wildcards.plot)),
    )


def figure_campaigns(wildcards):
    return ", ".join(INDEX.figures[wildcards.figure].campaigns)


def campaign_description(wildcards):
    return tables_stage.description(INDEX.campaigns[wildcards.campaign])


# ---- input functions and parameters of rules/analysis.smk ----------


def baseline_inputs(wildcards):
    return INDEX.reports.baseline_inputs(wildcards.campaign)


def baseline_state_inputs(wildcards):
    return INDEX.reports.baseline_state_inputs(wildcards.campaign)


def history_gate_inputs(wildcards):
    return INDEX.reports.history_gate_inputs(wildcards.campaign)


def floor_inputs(wildcards):
    return INDEX.reports.floor_inputs(wildcards.campaign)


def control_results(wildcards):
    return INDEX.derived.control_results(wildcards.campaign)


def compare_inputs(wildcards):
    return INDEX.reports.compare_inputs(wildcards.campaign)


def compare_earlier(wildcards):
    return INDEX.campaigns[wildcards.campaign].compare_with


# ---- input functions and parameters of rules/why.smk ----------


def why_spec(wildcards):
    return flow(why_stage.spec_of(INDEX, wildcards.campaign))


# ---- input functions and parameters of rules/profile.smk ----------


def flame_collapse(wildcards):
    return flame_tool("collapse")


def flame_drawer(wildcards):
    return flame_tool("flamegraph")


def flame_differ(wildcards):
    return flame_tool("diff")


def run_title(wildcards):
    return f"{wildcards.campaign}: {wildcards.record} run-{wildcards.run}"


def diff_title(wildcards):
    return f"{wildcards.campaign}: {wildcards.b} relative to {wildcards.a}"


# ---- input functions and parameters of rules/sched.smk ----------


def offcpu_run_title(wildcards):
    return f"off-CPU {run_title(wildcards)}"


def offcpu_diff_title(wildcards):
    return f"off-CPU {diff_title(wildcards)}"


def offcpu_record_inputs(wildcards):
    return profile_stage.folded_inputs(
        INDEX, wildcards.campaign, wildcards.flat, "offcpu.folded"
    )
