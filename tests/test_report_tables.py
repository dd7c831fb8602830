"""Tables to paste (summary.md/.tex/.org) and the report's pages."""

from __future__ import annotations

import math
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from helpers import ROOT, snakemake, write_campaign

from perfsnake.campaign import load_campaign
from perfsnake.contract import CampaignInfo
from perfsnake.pages import html as html_render
from perfsnake.pages import markdown as md_render
from perfsnake.pages.model import Bold, BulletList, Code, Document, Heading, Paragraph, Table
from perfsnake.planning import CampaignIndex
from perfsnake.stages import tables
from perfsnake.statistics.intervals import median_interval

INFO = {
    "name": "c",
    "variables": ["lock", "t"],
    "pretty": {"lock": {"cas": "CAS"}},
    "statistics": {"statistic": "mean", "confidence": 0.95, "baseline": {"lock": "pthread"}},
}


def summary() -> pd.DataFrame:
    rows = []
    for lock, mean, half in (("pthread", 100.0, 4.0), ("cas", 200.0, 6.0)):
        for t in (1, 2):
            rows.append({"lock": lock, "t": t, "metric": "ops", "n": 5, "mean": mean * t, "mean_ci_low": mean * t - half, "mean_ci_high": mean * t + half,
                         "median": mean * t, "median_ci_low": math.nan, "median_ci_high": math.nan})  # fmt: skip
    return pd.DataFrame(rows)


def test_summary_rows_with_interval_n_and_ratio_to_the_baseline():
    table = tables.summary_table(summary(), CampaignInfo.from_dict(INFO))
    assert list(table.columns) == ["lock", "t", "metric", "mean", "95 % CI", "n", "relative"]
    cas1 = table[(table["lock"] == "CAS") & (table["t"] == "1")].iloc[0]
    assert cas1["mean"] == "200.0 ± 6.0" and cas1["95 % CI"] == "[194.0, 206.0]" and cas1["n"] == 5
    err = 2.0 * math.sqrt((6 / 200) ** 2 + (4 / 100) ** 2)  # first-order propagation of both intervals
    assert cas1["relative"] == f"2.00 ± {err:.2f}x"
    cas2 = table[(table["lock"] == "CAS") & (table["t"] == "2")].iloc[0]  # against pthread at t=2, not t=1
    assert cas2["relative"].startswith("2.00 ± ")
    assert table[table["lock"] == "pthread"]["relative"].tolist() == ["1.00x (baseline)"] * 2
    no_base = tables.summary_table(summary(), CampaignInfo.from_dict({**INFO, "statistics": {"statistic": "median"}}))
    assert "relative" not in no_base and no_base["median"].iloc[0] == "100.0"  # no interval: the value alone


def test_plus_minus_rounds_to_the_half_width():
    assert tables.plus_minus(1.23456, 0.0412) == "1.235 ± 0.041"
    assert tables.plus_minus(70_123_456.0, 5_612_345.0) == "70 100 000 ± 5 600 000"
    assert tables.plus_minus(3.0, math.nan) == "3.000"


def test_markdown_latex_and_org_exports(tmp_path):
    src = tmp_path / "summary.csv"
    summary().to_csv(src, index=False)
    md, tex, org = tmp_path / "s.md", tmp_path / "s.tex", tmp_path / "s.org"
    tables.write_summary_tables(src, CampaignInfo.from_dict({**INFO, "name": "c_1"}), md, tex, org)
    lines = md.read_text().splitlines()
    assert lines[0] == "| lock | t | metric | mean | 95 % CI | n | relative |"
    assert lines[1] == "|:---|:---|:---|---:|---:|---:|---:|" and len(lines) == 6
    latex = tex.read_text()
    assert (
        r"\toprule" in latex
        and r"\midrule" in latex
        and r"\bottomrule" in latex
        and r"\begin{tabular}{lllrrrr}" in latex
    )
    assert r"95 \% CI" in latex and r"$\pm$" in latex and r"c\_1" in latex
    rows = org.read_text().splitlines()
    assert rows[1].startswith("|-") and "+" in rows[1] and "2.00 +- " in org.read_text() and "±" not in org.read_text()


def test_latex_escapes_special_characters():
    assert tables.latex_text("a_b & 50% #1 {x} ~ ^") == r"a\_b \& 50\% \#1 \{x\} \textasciitilde{} \textasciicircum{}"


def test_comparisons_page_lists_significant_rows_first(tmp_path):
    src = tmp_path / "comparisons.csv"
    pd.DataFrame({"metric": ["m", "m"], "a": ["x", "y"], "p_value": [0.5, 0.001], "significant": [False, True]}).to_csv(
        src, index=False
    )
    tables.write_csv_page(src, tmp_path / "c.html", "c: comparisons", significant_first=True)
    page = (tmp_path / "c.html").read_text()
    assert page.index("<td>y</td>") < page.index("<td>x</td>") and "<table" in page


def test_flame_graphs_get_short_titles_naming_what_differs():
    c = load_campaign(ROOT / "config/campaigns/flamegraph_leveldb.yaml")
    entries = tables.flame_entries(c, CampaignIndex({c.name: c}, None).instrument_targets(c.name))
    titles = [e["title"] for e in entries]
    assert titles == [
        "lock = cas, run 1",
        "lock = mcs, run 1",
        "differential: lock: cas -> mcs",
        "differential: lock: mcs -> cas",
    ]


def test_campaign_targets_include_tables_pages_and_pdf():
    c = load_campaign(ROOT / "config/campaigns/flamegraph_leveldb.yaml")
    targets = CampaignIndex({c.name: c}, None).campaign_targets(c.name)
    for name in (
        "summary.md",
        "summary.tex",
        "summary.org",
        "report/landing.html",
        "report/summary.html",
        "report/flamegraphs.html",
    ):
        assert f"results/flamegraph_leveldb/{name}" in targets
    h = load_campaign(ROOT / "config/campaigns/heater.yaml")
    assert any(t.endswith(".pdf") for t in CampaignIndex({h.name: h}, None).campaign_targets(h.name))


@pytest.mark.e2e
def test_report_shows_landing_tables_and_captions(tmp_path):
    camp = write_campaign(tmp_path, {
        "name": "c", "description": "Echo two values, as a reader would see it.",
        "benchmark": {"type": "command", "command": "echo value={x}", "metrics": {"value": r"value=(\S+)"}},
        "variables": {"x": [2, 1]}, "nb_runs": 2, "statistics": {"baseline": {"x": 1}},
        "plots": [{"kind": "bar", "x": "x", "y": "value", "name": "values", "labels": {"value": "Echoed value"}}],
    })  # fmt: skip
    other = write_campaign(tmp_path, {"name": "d", "description": "A second campaign.", "benchmark": {"type": "command", "command": "echo value=1",
                                      "metrics": {"value": r"value=(\S+)"}}, "nb_runs": 2}, "d.yaml")  # fmt: skip
    both = ["--config", f"campaigns=[{camp},{other}]"]
    snakemake(tmp_path, None, "--cores", "1", "all", *both)
    base = tmp_path / "results/c"
    assert "2.00x" in (base / "summary.md").read_text() and (base / "plots/values.pdf").read_bytes()[:5] == b"%PDF-"
    snakemake(tmp_path, None, "--report", str(tmp_path / "report.html"), *both)
    page = (tmp_path / "report.html").read_text()
    # The landing page lists both campaigns (with counts); captions carry the description.
    assert page.count("runs (ok / failed / timeout)") == 2 and "A second campaign." in page
    assert "Echo two values, as a reader would see it." in page and "2 runs per record" in page
    assert "machine.html" in page and "summary.html" in page and "values.svg" in page
    # Job parameters read as written (YAML flow), not as the whole campaign in escaped JSON.
    assert "plot={kind: " in page and "campaign={" not in page
    for written in (base / "report").glob("*.html"):  # every page well-formed, the landing fragment too
        assert unclosed(written.read_text()) == [], written.name
    assert "<h3>c: significant differences</h3>" in (base / "report/significant.html").read_text()
    svg = (base / "plots/values.svg").read_text()
    assert "Echoed value" in svg and ">2<" in svg and svg.index(">2<") < svg.index(">1<")  # label, campaign order


def test_landing_fragment_names_counts_machine_and_files():
    info = CampaignInfo.from_dict(
        {"name": "c", "records": 2, "benchmark": "b", "variables": ["x"], "values": {"x": ["1", "2"]}}
    )
    frag = tables.landing_fragment(info,
                                   {"runs": 4, "runs_ok": 3, "runs_failed": 1, "runs_timeout": 0, "cpu_model": "Z80 <fast>"}, "Desc & more", ["c.csv"])  # fmt: skip
    assert (
        "4 (3 / 1 / 0)" in frag
        and "Z80 &lt;fast&gt;" in frag
        and "Desc &amp; more" in frag
        and "<code>c.csv</code>" in frag
    )


def test_constant_variables_left_out_of_the_rows():
    frame = summary().assign(flags="-O2")
    table = tables.summary_table(frame, CampaignInfo.from_dict({**INFO, "variables": ["flags", "lock", "t"]}))
    assert "flags" not in table and "lock" in table


VOID = {"meta", "img", "br", "hr", "link", "input"}


def unclosed(page: str) -> list[str]:
    """Tags opened and not closed in order (an HTML element closed out of order included)."""
    stack: list[str] = []
    wrong: list[str] = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag: str, attrs: object) -> None:
            if tag not in VOID:
                stack.append(tag)

        def handle_endtag(self, tag: str) -> None:
            if stack and stack[-1] == tag:
                stack.pop()
            else:
                wrong.append(f"</{tag}>")

    Parser().feed(page)
    return wrong + stack


def test_one_document_renders_the_same_page_in_markdown_and_html(tmp_path):
    doc = Document("t: page", [
        Paragraph(["A paragraph wrapped\nover two lines with ", Code("code"), "."]),
        BulletList(["first item", ["second ", Bold("bold"), " item"]]),
        Heading("Warnings"),
        Table(["a", "outcome"], [["x<y", Bold("equivalent")], ["p|q", "-"]]),
    ])  # fmt: skip
    md = md_render.render(doc)
    assert md.startswith("# t: page\n\nA paragraph wrapped\nover two lines with `code`.\n\n- first item\n")
    assert "- second **bold** item\n\n## Warnings\n\n| a | outcome |\n|---|---|\n| x<y | **equivalent** |\n" in md
    assert "| p\\|q | - |" in md  # a pipe in a cell does not end it
    html_render.write(doc, tmp_path / "page.html")
    page = (tmp_path / "page.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<title>t: page</title>" and "<h3>t: page</h3>" in page
    assert "<p>A paragraph wrapped over two lines with <code>code</code>.</p>" in page
    assert "<ul><li>first item</li><li>second <b>bold</b> item</li></ul>" in page
    assert "<h4>Warnings</h4>" in page and "<td>x&lt;y</td><td><b>equivalent</b></td>" in page
    assert "border-collapse" in page  # the template's styles
    assert unclosed(page) == []


def test_landing_fragment_is_well_formed_and_escapes_what_it_shows():
    info = CampaignInfo.from_dict({"name": "c&d", "records": 1, "benchmark": "b", "variables": []})
    frag = tables.landing_fragment(info, {"hostname": "h<1>"}, "", ["a&b.csv"])
    assert unclosed(frag) == [] and "<h2>c&amp;d</h2>" in frag
    assert "No description." in frag and "h&lt;1&gt;" in frag and "<li><code>a&amp;b.csv</code></li>" in frag


def test_a_median_campaign_names_the_order_statistic_interval_it_computes(tmp_path):
    # Captions and the summary page say how the median's interval was made:
    # the method median_interval reports, never the bootstrap it replaced.
    path = write_campaign(tmp_path, {
        "name": "med", "benchmark": {"type": "command", "command": "echo v=1", "metrics": {"v": r"v=(\S+)"}},
        "variables": {"x": [1, 2]}, "nb_runs": 7, "statistics": {"statistic": "median"},
        "plots": [{"kind": "bar", "x": "x", "y": "v", "name": "v"}],
    })  # fmt: skip
    c = load_campaign(path)
    _, _, used, _ = median_interval(np.arange(7.0), 0.95)
    caption = tables.plot_caption(c, c.data["plots"][0])
    assert used == "order-statistic" and used in caption and "distribution-free" in caption
    rows, summary_csv = tmp_path / "rows.json", tmp_path / "summary.csv"
    rows.write_text('{"metadata": {}}')
    pd.DataFrame([{"x": 1, "metric": "v", "n": 7, "median": 3.0, "median_ci_low": 0.0, "median_ci_high": 6.0,
                   "median_ci_method": used}]).to_csv(summary_csv, index=False)  # fmt: skip
    (tmp_path / "comparisons.csv").write_text("metric\n")
    out = {k: tmp_path / f"{k}.html" for k in ("landing", "machine", "summary", "comparisons")}
    info = CampaignInfo.from_dict({"name": "med", "variables": ["x"], "statistics": c.data["statistics"]})
    tables.write_pages(info, "", rows, summary_csv, tmp_path / "comparisons.csv", [], out)
    page = out["summary"].read_text()
    assert "median with its 95 % confidence interval (exact order-statistic" in page
    for text in (caption, page):
        assert "BCa" not in text and "bootstrap" not in text
