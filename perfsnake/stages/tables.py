"""Tables to paste and report pages, from summary.csv and comparisons.csv.

summary.md / summary.tex (booktabs) / summary.org: one row per record and
metric, the campaign's statistic with its interval, n, and (with
`statistics.baseline`) the ratio to the baseline record with its interval,
written like hyperfine's exports (`1.23 ± 0.04x` in Markdown, `1.23 +- 0.04x`
where plain ASCII is safer). HTML pages render the CSV tables inline in
`snakemake --report`. pandas is imported when a table is made, not when the
workflow is parsed (captions are built at parse time).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perfsnake.contract import CampaignInfo, Statistics
from perfsnake.pages import html as html_render
from perfsnake.pages import latex as latex_render
from perfsnake.pages import markdown as md_render
from perfsnake.pages import org as org_render
from perfsnake.pages.model import (
    Align,
    Bold,
    BulletList,
    Code,
    Document,
    Figure,
    Heading,
    Paragraph,
    Preformatted,
    Table,
)

# numpy only (already loaded when the workflow is parsed); no pandas.
from perfsnake.statistics import speedup
from perfsnake.statistics.intervals import interval_method
from perfsnake.statistics.records import STAT_PREFIX, record_row, stat_column

if TYPE_CHECKING:
    import pandas as pd

    from perfsnake.campaign import Campaign
    from perfsnake.compare import Side

STAT_COLUMNS = {
    "mean": ("mean", "mean_ci_low", "mean_ci_high"),
    "median": ("median", "median_ci_low", "median_ci_high"),
}


def number(x: float, digits: int = 4) -> str:
    """A value with `digits` significant digits, no exponent for everyday sizes."""
    if x is None or not math.isfinite(x):
        return "-"
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e9:
        decimals = max(digits - 1 - int(math.floor(math.log10(abs(x)))), 0)
        return f"{x:,.{decimals}f}".replace(",", " ")
    return f"{x:.{digits - 1}e}"


def plus_minus(centre: float, half: float) -> str:
    """`centre ± half`, both rounded to the half-width's two significant digits (as hyperfine)."""
    if not (math.isfinite(half) and half > 0 and math.isfinite(centre)):
        return number(centre)
    digits = 1 - int(math.floor(math.log10(half)))
    if digits >= 0:
        return f"{centre:,.{digits}f} ± {half:,.{digits}f}".replace(",", " ")
    step = 10 ** (-digits)
    return f"{round(centre / step) * step:,.0f} ± {round(half / step) * step:,.0f}".replace(",", " ")


def _value_text(v: object) -> str:
    from perfsnake.escape import value_text

    return value_text(v)


def _baseline_key(
    summary: pd.DataFrame,
    variables: Sequence[str],
    baseline: Mapping[str, object],
    row: pd.Series,
    metric: str = "metric",
) -> pd.DataFrame:
    """The summary rows of the baseline record matching `row` elsewhere (`metric`: the metric's column)."""
    mask = summary[metric] == row[metric]
    for v in variables:
        want = baseline[v] if v in baseline else row[v]
        mask &= summary[v].map(_value_text) == _value_text(want)
    return summary[mask]


def ratio(a: float, a_lo: float, a_hi: float, b: float, b_lo: float, b_hi: float) -> tuple[float, float]:
    """a/b and its half-width by first-order error propagation of the two intervals."""
    if not (b and math.isfinite(a) and math.isfinite(b)):
        return float("nan"), float("nan")
    r = a / b
    ea = (a_hi - a_lo) / 2 if math.isfinite(a_hi - a_lo) else 0.0
    eb = (b_hi - b_lo) / 2 if math.isfinite(b_hi - b_lo) else 0.0
    rel = math.sqrt((ea / a) ** 2 + (eb / b) ** 2) if a else 0.0
    return r, abs(r) * rel


def summary_table(summary: pd.DataFrame, info: CampaignInfo) -> pd.DataFrame:
    """One row per record and metric: variables, metric, statistic ± half-width, interval, n, relative."""
    import pandas as pd

    stats = info.statistics
    # summary.csv's statistics columns, renamed where a variable has their name (stat_column).
    col = {c: stat_column(c, info.variables) for c in ("metric", "n", *STAT_COLUMNS[stats.statistic])}
    centre, low, high = (col[c] for c in STAT_COLUMNS[stats.statistic])
    variables = [v for v in info.variables if v in summary]
    # A variable with one value says nothing per row (it is in the campaign file).
    shown = [v for v in variables if summary[v].map(_value_text).nunique() > 1] or variables[:1]
    pretty = info.pretty
    baseline = stats.baseline
    level = f"{float(stats.confidence) * 100:g} % CI"
    out = []
    for _, row in summary.iterrows():
        c, lo, hi = (float(row.get(k, float("nan"))) for k in (centre, low, high))
        half = (hi - lo) / 2 if math.isfinite(hi - lo) else float("nan")
        fields: dict[str, object] = {"metric": row[col["metric"]], stats.statistic: plus_minus(c, half)}
        fields[level] = f"[{number(lo)}, {number(hi)}]" if math.isfinite(half) else "-"
        n = col["n"]
        fields["n"] = int(row[n]) if n in row and math.isfinite(float(row[n])) else 0
        if baseline:
            base = _baseline_key(summary, variables, baseline, row, col["metric"])
            if len(base) == 1 and base.index[0] == row.name:
                fields["relative"] = "1.00x (baseline)"
            elif len(base) == 1:
                b = base.iloc[0]
                r, err = ratio(c, lo, hi, float(b[centre]), float(b[low]), float(b[high]))
                fields["relative"] = (
                    f"{r:.2f} ± {err:.2f}x"
                    if math.isfinite(err) and err > 0
                    else (f"{r:.2f}x" if math.isfinite(r) else "-")
                )
            else:
                fields["relative"] = "-"
        labels = {v: pretty.get(v, {}).get(_value_text(row[v]), _value_text(row[v])) for v in shown}
        out.append(record_row(labels, fields))
    return pd.DataFrame(out)


def paste_table(table: pd.DataFrame) -> Table:
    """The summary's rows as a page-model table: labels left, numbers right."""
    left = _text_columns(table)
    align: list[Align] = ["left" if i < left else "right" for i in range(len(table.columns))]
    return Table([str(c) for c in table.columns], [[str(v) for v in r] for r in table.itertuples(index=False)], align)


def markdown(table: pd.DataFrame) -> str:
    return md_render.table(paste_table(table)) + "\n"


def _text_columns(table: pd.DataFrame) -> int:
    """Leading label columns (variables and metric), left-aligned."""
    cols = list(table.columns)
    metric = next((c for c in (STAT_PREFIX + "metric", "metric") if c in cols), None)
    return cols.index(metric) + 1 if metric else 1


#: LaTeX's escaping of plain text (the tables to paste use it for their caption too).
latex_text = latex_render.text


def latex(table: pd.DataFrame, caption: str) -> str:
    return latex_render.table(paste_table(table), caption)


def org(table: pd.DataFrame) -> str:
    return org_render.table(paste_table(table))


def write_summary_tables(summary_csv: Path, info: CampaignInfo, md: Path, tex: Path, org_path: Path) -> None:
    import pandas as pd

    try:
        summary = pd.read_csv(summary_csv, keep_default_na=False, na_values=[""])
    except pd.errors.EmptyDataError:
        summary = pd.DataFrame(columns=["metric", "n"])
    table = summary_table(summary, info)
    if table.empty:
        table = pd.DataFrame(columns=["metric", "n"])
    caption = f"{info.name}: {info.statistics.statistic} per record with its interval, n runs"
    Path(md).write_text(markdown(table))
    Path(tex).write_text(latex(table, caption))
    Path(org_path).write_text(org(table))


# ---- HTML pages for snakemake --report (perfsnake.pages renders them) -----
def cell_text(v: object) -> str:
    """A table cell of a CSV page: compact numbers, nothing for a missing value."""
    if v is None or (isinstance(v, float) and v != v):
        return ""
    if isinstance(v, float):
        return number(v)
    return str(v)


def frame_table(frame: pd.DataFrame) -> Table:
    """A DataFrame as a table of the page model."""
    return Table([str(c) for c in frame.columns], [[cell_text(v) for v in r] for r in frame.itertuples(index=False)])


def write_compare_page(
    sides: Sequence[Side],
    table: pd.DataFrame,
    differences: Sequence[Mapping[str, str]],
    state: Sequence[str],
    out: Path,
    state_line: str = "",
) -> None:
    """The compare_with page: the sides, what differs between them, the table
    (records with a significant difference first); `state_line`: what compare
    says of the machine state (compare.state_sentence)."""
    import pandas as pd

    # The comparison's own columns, prefixed where a variable has their name (stat_column).
    label, side, significant = (
        STAT_PREFIX + c if STAT_PREFIX + c in table else c for c in ("label", "side", "significant")
    )
    shown = table.drop(columns=[label], errors="ignore")
    if significant in shown:
        # A record's sides stay together; records with a significant difference first.
        keys = list(shown.columns[: list(shown.columns).index(side)])
        flag = shown[significant].map(lambda v: v is True or v == "True")
        shown = shown.assign(_later=~flag.groupby([shown[k] for k in keys]).transform("any"))
        shown = shown.sort_values("_later", kind="stable").drop(columns="_later")
        shown[significant] = shown[significant].map(lambda v: "" if v is None or v != v else str(v))
    doc = Document(f"{sides[-1].campaign}: compared with earlier results")
    doc.add(BulletList([f"side {i + 1}: {s.label}" for i, s in enumerate(sides)], markers=False))
    doc.add(
        Paragraph([Bold("Machine state differs"), f": {', '.join(state)}; significant differences are marked "
                   '"machine state differs".'])
        if state else Paragraph(f"Machine state: {state_line or 'the same on every side.'}")
    )  # fmt: skip
    doc.add(Heading("What differs between the sides"))
    doc.add(frame_table(pd.DataFrame(differences)) if differences else Paragraph("Nothing in the metadata differs."))
    doc.add(Heading("Per record and metric (ratio to side 1, Holm-adjusted p; significant rows first)"))
    doc.add(frame_table(shown))
    html_render.write(doc, out)


def csv_page(source: Path, title: str, significant_first: bool = False) -> Document:
    """A CSV of the analysis as a page (significant rows first on request)."""
    import pandas as pd

    try:
        frame = pd.read_csv(source)
    except pd.errors.EmptyDataError:
        frame = pd.DataFrame()
    if significant_first and "significant" in frame:
        frame = frame.sort_values("significant", ascending=False, kind="stable")
    empty = Paragraph("No rows (fewer than two runs per record, or nothing to compare).")
    return Document(title, [frame_table(frame) if len(frame) else empty])


def write_csv_page(source: Path, out: Path, title: str, significant_first: bool = False) -> None:
    html_render.write(csv_page(source, title, significant_first), out)


# ---- captions (parse time: no pandas) --------------------------------------
def interval_kind(statistics: Statistics) -> str:
    stat, conf = statistics.statistic, float(statistics.confidence)
    return f"{stat} with its {conf * 100:g} % confidence interval ({interval_method(stat)})"


def description(campaign: Campaign) -> str:
    """The campaign's `description`, else the comment lines opening its file."""
    text = str(campaign.data.get("description") or "").strip()
    if text:
        return text
    lines = []
    try:
        for line in Path(campaign.file).read_text().splitlines():
            if not line.startswith("#"):
                break
            lines.append(line.lstrip("#").strip())
    except OSError:
        pass
    return " ".join(x for x in lines if x)


def plot_caption(campaign: Campaign, plot: Mapping[str, object]) -> str:
    """What a figure shows: the campaign, the plot's meaning, n per point, the interval."""
    data = campaign.data
    stats = Statistics.from_dict(data["statistics"])
    desc = description(campaign)
    ys = plot["y"] if isinstance(plot["y"], list) else [plot["y"]]
    ys = [*ys, *(m for m in plot.get("metrics", []) or [] if m not in ys)]  # type: ignore[attr-defined]
    by = [f"{plot[k]} ({k})" for k in ("x", "color", "row", "column", "facet") if plot.get(k)]
    kind = str(plot["kind"])
    if kind == "speedup_stack":  # its y is what it reads, not what it shows
        ys = [f"speedup of {plot['speedup_of']['metric']}"]  # type: ignore[index]
    what = {
        "line": "one point per record: the " + interval_kind(stats),
        "bar": "one bar per record: the " + interval_kind(stats),
        "strip": "one dot per run (jittered within its band), a tick at the median",
        "box": "the runs of each record as a box (quartiles, median, whiskers to min and max)",
        "breakdown": "per thread count, the threads' time split into these parts by their mean share and scaled "
        "to the thread count (bar height: linear scaling; the first part: the parallelism achieved)",
        "speedup_stack": "per thread count N, a bar of height N: its base the measured speedup over one thread "
        "(median, with its interval), its parts the causes of the gap measured in the N-thread runs' parallel "
        "region (spinning in lock code, blocked in synchronisation, runnable waiting for a CPU, load imbalance, "
        "parallelisation overhead) and the unexplained remainder, never forced to zero; " + speedup.interference_note(),
    }[kind]
    n = campaign.nb_runs
    runs = (
        f"{n} runs per record"
        if not data.get("precision")
        else f"{data['precision']['min_runs']} to {data['precision']['max_runs']} runs per record (until precise enough)"
    )
    parts = [desc, f"{', '.join(map(str, ys))} by {', '.join(by)}: {what}; {runs}; failed runs left out."]
    return " ".join(p for p in parts if p)


# ---- report pages ------------------------------------------------------------

MACHINE_KEYS = (
    "hostname", "cpu_model", "online_cpus", "smt", "numa_nodes", "memory", "uname", "os_release", "cpufreq_governor",
    "perf_event_paranoid", "compiler", "python", "snakemake", "pandas", "perfsnake_commit", "perfsnake_tree", "platform",
)  # fmt: skip
COUNT_KEYS = (
    "runs",
    "runs_ok",
    "runs_failed",
    "runs_timeout",
    "total_duration_s",
    "total_benchmark_time_s",
    "utc_time",
)


def _pairs_table(pairs: Sequence[tuple[str, object]]) -> Table:
    """Keys and values, one row each."""
    return Table(None, [[str(k), str(v)] for k, v in pairs], align=["left", "left"], row_headers=True)


def landing_fragment(info: CampaignInfo, metadata: Mapping[str, object], description: str, files: Sequence[str]) -> str:
    """One campaign on the report's landing page: description, counts, machine, files."""
    imported = info.imported or {}
    counts = [
        ("records", info.records),
        ("runs (ok / failed / timeout)", f"{metadata.get('runs', '?')} ({metadata.get('runs_ok', '?')} / {metadata.get('runs_failed', '?')} / {metadata.get('runs_timeout', '?')})"),
        ("duration", f"{metadata.get('total_duration_s', '?')} s (benchmark time {metadata.get('total_benchmark_time_s', '?')} s)"
         if not imported else "not recorded (measured by another tool)"),
        ("benchmark", info.benchmark if not imported else f"imported from {imported['imported_tool']}: {imported['imported_files']}"),
        ("variables", ", ".join(f"{v} ({len(info.values.get(v, []))})" for v in info.variables)),
        ("campaign file", info.file),
    ]  # fmt: skip
    # An imported campaign's machine is what its tool recorded, not this one.
    machine = (
        [(k, v) for k, v in imported.items() if not k.startswith("imported_")]
        if imported
        else [(k, metadata[k]) for k in MACHINE_KEYS if k in metadata]
    )
    # One line of the machine, the whole table a click away: with several
    # campaigns from one machine the page would repeat it in full for each.
    facts = dict(machine)
    shown = {"hostname": "{}", "cpu_model": "{}", "online_cpus": "CPUs {}", "os_release": "{}"}
    gist = ", ".join(form.format(facts[k]) for k, form in shown.items() if k in facts)
    return html_render.fragment("landing.html", {
        "name": info.name, "description": description or "No description.", "gist": gist or "not recorded",
        "counts": _pairs_table(counts), "machine": _pairs_table(machine), "files": BulletList([Code(f) for f in files]),
    })  # fmt: skip


def summary_page(info: CampaignInfo, summary: pd.DataFrame, tables: Sequence[Path]) -> Document:
    """The statistic per record and metric, every column of summary.csv, the tables to paste."""
    paste = summary_table(summary, info)
    doc = Document(f"{info.name}: summary", [Paragraph(f"{interval_kind(info.statistics)}, per record and metric.")])
    doc.add(frame_table(paste) if len(paste) else Paragraph("No summary rows."))
    doc.add(Heading("Every column of summary.csv"))
    if len(summary):
        doc.add(frame_table(summary))
    for t in tables:
        doc.add(Heading(Code(Path(t).name)), Preformatted(Path(t).read_text()))
    return doc


def write_pages(
    info: CampaignInfo, description: str, rows_json: Path, summary_csv: Path, comparisons_csv: Path,
    tables: Sequence[Path], out: Mapping[str, Path],
) -> None:  # fmt: skip
    """The landing fragment and the machine, summary and comparisons pages
    (the analysis writes the significant differences' page with significant.md)."""
    import json

    import pandas as pd

    name = info.name
    metadata = json.loads(Path(rows_json).read_text()).get("metadata", {})
    files = [f"{name}.csv (every run, metadata above the header)", f"{name}.json", "summary.csv", "summary.md / .tex / .org (tables to paste)",
             "comparisons.csv", "significant.md", "plots/*.svg, .png, .pdf"]  # fmt: skip
    if not info.imported:
        files += ["runs/<record>/run-<i>/ (stdout, stderr, result.json)", "commands.sh"]
    Path(out["landing"]).write_text(landing_fragment(info, metadata, description, files))
    machine = [(k, v) for k, v in metadata.items() if k not in ("metric_units",)]
    html_render.write(Document(f"{name}: machine and run metadata", [_pairs_table(machine)]), out["machine"])
    try:
        summary = pd.read_csv(summary_csv, keep_default_na=False, na_values=[""])
    except pd.errors.EmptyDataError:
        summary = pd.DataFrame(columns=["metric", "n"])
    html_render.write(summary_page(info, summary, tables), out["summary"])
    write_csv_page(
        comparisons_csv, out["comparisons"], f"{name}: comparisons (significant first)", significant_first=True
    )


def record_label(values: Mapping[str, object], shown: Sequence[str]) -> str:
    return ", ".join(f"{v} = {_value_text(values[v])}" for v in shown) or "the record"


def flame_entries(campaign: Campaign, targets: Sequence[str]) -> list[dict[str, str]]:
    """Flame graphs of a campaign with short titles: per run, the variables that
    vary; per differential graph, only those that differ (`lock: cas -> mcs`)."""
    records = {r.path: r.values for r in campaign.records}
    varying = [v for v in campaign.variables if len({_value_text(r[v]) for r in records.values()}) > 1]
    out = []
    for t in targets:
        if t.endswith("/flamegraph.svg"):
            rel = t.split("/runs/", 1)[1].rsplit("/", 2)[0]
            run = t.rsplit("/", 2)[1]
            vals = records.get(rel)
            out.append({"path": t, "title": f"{record_label(vals, varying) if vals else rel}, {run.replace('-', ' ')}"})
    from perfsnake import layout

    for a, b in campaign.flamegraph_pairs:
        path = layout.diff_flamegraph(campaign.name, layout.flat(a), layout.flat(b))
        if path in targets:
            va, vb = records[a], records[b]
            differ = [v for v in campaign.variables if _value_text(va[v]) != _value_text(vb[v])]
            out.append(
                {
                    "path": path,
                    "title": "differential: "
                    + "; ".join(f"{v}: {_value_text(va[v])} -> {_value_text(vb[v])}" for v in differ),
                }
            )
    return out


def svg_height(raw: bytes) -> int | None:
    """The height an SVG declares on its root element, in pixels."""
    import xml.etree.ElementTree as ET

    try:
        height = ET.fromstring(raw).get("height", "")
        return int(float(height.removesuffix("px")))
    except (ET.ParseError, ValueError):
        return None


def flamegraph_page(entries: Sequence[Mapping[str, str]], title: str) -> Document:
    """Every flame graph embedded in a frame (inferno's search and zoom work inside it)."""
    doc = Document(title)
    for e in entries:
        raw = Path(e["path"]).read_bytes()
        height = svg_height(raw)
        doc.add(Heading(e["title"]), Paragraph(Code(e["path"])))
        doc.add(
            Figure(e["title"], path=e["path"], data=raw, frame=True, height=min(height + 24, 1600) if height else 520)
        )
    if not entries:
        doc.add(Paragraph("No flame graphs."))
    return doc


def write_flamegraph_page(entries: Sequence[Mapping[str, str]], out: Path, title: str) -> None:
    html_render.write(flamegraph_page(entries, title), out)
