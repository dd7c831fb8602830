"""Why-it-changed stage (rules/why.smk): the pairs the statistics pick, the
symbol tables of their profiles and the page that puts them together
(perfsnake.why holds the choices; this module the files)."""

from __future__ import annotations

import base64
import csv
import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perfsnake import layout, why

if TYPE_CHECKING:
    from perfsnake.planning import CampaignIndex

#: how the picked rows travel in pairs.json
KEEP = ("metric", "variable", "a", "b", "fixed", "record_a", "record_b", "relative_difference", "p_adjusted",
        "diff_ci_low", "diff_ci_high", "mean_a", "mean_b")  # fmt: skip


def why_campaign(name: str) -> str:
    return f"{name}__why"


def write_pairs(comparisons: Path, top: int, out: Path) -> None:
    """The checkpoint's output: the comparisons to explain, largest first."""
    with comparisons.open(newline="") as f:
        rows = list(csv.DictReader(f))
    picked = [{k: r.get(k, "") for k in KEEP} for r in why.pick(rows, top)]
    out.write_text(json.dumps(picked, indent=1) + "\n")


def _flats(pair: Mapping[str, object]) -> tuple[str, str]:
    return layout.flat(str(pair["record_a"])), layout.flat(str(pair["record_b"]))


def report_inputs(name: str, pairs_file: str) -> list[str]:
    """Per picked pair: its differential flame graph and its symbol table."""
    out = []
    for pair in json.loads(Path(pairs_file).read_text()):
        a, b = _flats(pair)
        out += [layout.diff_flamegraph(why_campaign(name), a, b), layout.why_symbols(name, a, b)]
    return out


def write_symbols(folded_a: Path, folded_b: Path, limit: int, runs: int, out: Path) -> None:
    text_a, text_b = folded_a.read_text(errors="replace"), folded_b.read_text(errors="replace")
    rows = why.symbol_table(text_a, text_b, limit, runs, runs)
    columns = ["symbol", "per_run_a", "per_run_b", "change_per_run", "share_a", "share_b", "delta", "colour"]
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _headline(pair: Mapping[str, object]) -> str:
    rel = float(pair["relative_difference"])  # type: ignore[arg-type]
    fixed = f" ({pair['fixed']})" if pair.get("fixed") else ""
    return f"{pair['metric']}: {pair['variable']} {pair['a']} -> {pair['b']}{fixed}: {rel:+.1%}, adjusted p = {float(pair['p_adjusted']):.2g}"  # type: ignore[arg-type]


def _table(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def write_report(name: str, pairs_file: Path, spec: Mapping[str, object], md: Path, page: Path) -> None:
    """why.md and the report page: per pair, the difference, its graph and its table."""
    pairs = json.loads(pairs_file.read_text())
    runs, event = spec["runs"], spec["event"]
    what = "the significant difference" if len(pairs) == 1 else f"the {len(pairs)} largest significant differences"
    intro = (f"Explained here: {what} (top {spec['top']} asked for), each by "
             f"{runs} profiled runs per side ({event}, never part of the statistics): a differential flame graph "
             "(red: more of B's samples, blue: fewer) and the functions whose own samples per run (where they are the "
             "leaf; at cpu-clock, 1 sample = 1/frequency s of CPU) changed most, with their share of each side.")  # fmt: skip
    lines = [f"# {name}: why it changed", "", intro if pairs else "No significant difference to explain.", ""]
    blocks = [f"<p>{html.escape(lines[2])}</p>"]
    for i, pair in enumerate(pairs, start=1):
        a, b = _flats(pair)
        svg = Path(layout.diff_flamegraph(why_campaign(name), a, b))
        rows = _table(Path(layout.why_symbols(name, a, b)))
        lines += [f"## {i}. {_headline(pair)}", "", f"A: `{pair['record_a']}`, B: `{pair['record_b']}`; "
                  f"differential flame graph: `{svg}`", ""]  # fmt: skip
        lines += _markdown_rows(rows)
        image = (f"<img style='max-width:100%' alt='differential flame graph' src='data:image/svg+xml;base64,"
                 f"{base64.b64encode(svg.read_bytes()).decode()}'>") if svg.exists() and svg.stat().st_size else \
            "<p>No differential flame graph (a side has no samples).</p>"  # fmt: skip
        blocks.append(f"<h4>{i}. {html.escape(_headline(pair))}</h4><p>A: <tt>{html.escape(str(pair['record_a']))}</tt>, "
                      f"B: <tt>{html.escape(str(pair['record_b']))}</tt></p>{image}{_html_rows(rows)}")  # fmt: skip
    md.write_text("\n".join(lines) + "\n")
    from perfsnake.stages.tables import html_page

    page.write_text(html_page(f"{name}: why it changed", "\n".join(blocks)))


def _markdown_rows(rows: Sequence[Mapping[str, str]]) -> list[str]:
    if not rows:
        return ["No samples on one side (its profiled runs failed?).", ""]
    out = ["| function | samples/run A | samples/run B | change | share A | share B | in the graph |",
           "|---|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    out += [f"| `{r['symbol']}` | {float(r['per_run_a']):.1f} | {float(r['per_run_b']):.1f} | {float(r['change_per_run']):+.1f} "
            f"| {float(r['share_a']):.1%} | {float(r['share_b']):.1%} | {r['colour']} |" for r in rows]  # fmt: skip
    return [*out, ""]


def _html_rows(rows: Sequence[Mapping[str, str]]) -> str:
    if not rows:
        return "<p>No samples on one side (its profiled runs failed?).</p>"
    body = ""
    for r in rows:
        change = float(r["change_per_run"])
        tint = "#fbd0cc" if change > 0 else "#cfe0f7" if change < 0 else "transparent"
        body += (f"<tr><td><tt>{html.escape(r['symbol'])}</tt></td><td>{float(r['per_run_a']):.1f}</td>"
                 f"<td>{float(r['per_run_b']):.1f}</td><td style='background:{tint}'>{change:+.1f}</td>"
                 f"<td>{float(r['share_a']):.1%}</td><td>{float(r['share_b']):.1%}</td>"
                 f"<td>{html.escape(r['colour'])}</td></tr>")  # fmt: skip
    head = ("<tr><th>function</th><th>samples/run A</th><th>samples/run B</th><th>change</th><th>share A</th>"
            "<th>share B</th><th>in the graph</th></tr>")  # fmt: skip
    return f"<table>{head}{body}</table>"


def spec_of(index: CampaignIndex, name: str) -> dict[str, object]:
    return dict(index.campaigns[name].data["profile_differences"])
