"""Why-it-changed stage (rules/why.smk): the pairs the statistics pick, the
symbol tables of their profiles and the page that puts them together
(perfsnake.profile_differences holds the choices; this module the files)."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perfsnake import layout, profile_differences
from perfsnake.pages import html as html_render
from perfsnake.pages import markdown as md_render
from perfsnake.pages.model import Cell, Code, Document, Figure, Heading, Paragraph, Table, Text
from perfsnake.values import number

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
    picked = [{k: r.get(k, "") for k in KEEP} for r in profile_differences.pick(rows, top)]
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
    rows = profile_differences.symbol_table(text_a, text_b, limit, runs, runs)
    columns = ["symbol", "per_run_a", "per_run_b", "change_per_run", "share_a", "share_b", "delta", "colour"]
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _headline(pair: Mapping[str, object]) -> str:
    rel = number(pair["relative_difference"])
    fixed = f" ({pair['fixed']})" if pair.get("fixed") else ""
    return f"{pair['metric']}: {pair['variable']} {pair['a']} -> {pair['b']}{fixed}: {rel:+.1%}, adjusted p = {number(pair['p_adjusted']):.2g}"


def _table(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def write_report(name: str, pairs_file: Path, spec: Mapping[str, object], md: Path, page: Path) -> None:
    """why.md and the report page: per pair, the difference, its graph and its table."""
    doc = report_document(name, json.loads(pairs_file.read_text()), spec)
    md_render.write(doc, md)
    html_render.write(doc, page)


def report_document(name: str, pairs: Sequence[Mapping[str, object]], spec: Mapping[str, object]) -> Document:
    runs, event = spec["runs"], spec["event"]
    what = "the significant difference" if len(pairs) == 1 else f"the {len(pairs)} largest significant differences"
    intro = (f"Explained here: {what} (top {spec['top']} asked for), each by "
             f"{runs} profiled runs per side ({event}, never part of the statistics): a differential flame graph "
             "(red: more of B's samples, blue: fewer) and the functions whose own samples per run (where they are the "
             "leaf; at cpu-clock, 1 sample = 1/frequency s of CPU) changed most, with their share of each side.")  # fmt: skip
    doc = Document(f"{name}: why it changed", [Paragraph(intro if pairs else "No significant difference to explain.")])
    for i, pair in enumerate(pairs, start=1):
        a, b = _flats(pair)
        svg = Path(layout.diff_flamegraph(why_campaign(name), a, b))
        doc.add(Heading(f"{i}. {_headline(pair)}"))
        doc.add(Paragraph(["A: ", Code(str(pair["record_a"])), ", B: ", Code(str(pair["record_b"])),
                           "; differential flame graph: ", Code(str(svg))]))  # fmt: skip
        drawn = svg.exists() and svg.stat().st_size
        doc.add(
            Figure("differential flame graph", path=str(svg))
            if drawn
            else Paragraph("No differential flame graph (a side has no samples).")
        )
        doc.add(_symbols_table(_table(Path(layout.why_symbols(name, a, b)))))
    return doc


def _symbols_table(rows: Sequence[Mapping[str, str]]) -> Table | Paragraph:
    if not rows:
        return Paragraph("No samples on one side (its profiled runs failed?).")
    body: list[list[Text | Cell]] = []
    for r in rows:
        change = float(r["change_per_run"])
        # The graph's colours: red where B has more samples, blue fewer.
        tint = "#fbd0cc" if change > 0 else "#cfe0f7" if change < 0 else None
        body.append([Code(r["symbol"]), f"{float(r['per_run_a']):.1f}", f"{float(r['per_run_b']):.1f}",
                     Cell(f"{change:+.1f}", tint), f"{float(r['share_a']):.1%}", f"{float(r['share_b']):.1%}",
                     r["colour"]])  # fmt: skip
    columns = ["function", "samples/run A", "samples/run B", "change", "share A", "share B", "in the graph"]
    return Table(columns, body, [None, "right", "right", "right", "right", "right", None])


def spec_of(index: CampaignIndex, name: str) -> dict[str, object]:
    return dict(index.campaigns[name].data["profile_differences"])
