"""`perfsnake check`'s verdicts for CI systems: JUnit XML, a Markdown summary,
a versioned JSON verdict file.

One test case per gate row of a campaign's gates.csv (a gate selects one
or more records: each is a row, with its own verdict). The renderers read
the rows as `check_gates` does (gates.own: the record's variables, then the
gate's fields by plain name) and add nothing to the verdicts: a failed gate
is a JUnit failure, an inconclusive one a failure or a skip as the
`--inconclusive` policy counts it, a campaign not analysed yet an error.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from perfsnake import layout, safefile
from perfsnake.gates import VERDICTS, gate_line, own, worst

FORMAT, VERSION = "perfsnake-verdict", 1
SUITES_NAME = "perfsnake check"
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"

# The fields the fixed columns (estimate, interval, threshold) already show.
# Any other field of gates.GATE_FIELDS a gate row carries (state_differs;
# error rates or a minimum detectable effect once gates.csv has them) becomes
# a column of its own in the Markdown table and a line of the JUnit text
# wherever a row has a value, and a key of the verdict file's gate;
# EXTRA_LABELS names its header (the one place to word a new column).
SHOWN = {"gate", "metric", "kind", "statistic", "value", "ci_low", "ci_high", "lower", "upper", "verdict",
         "reason", "baseline", "baseline_mean", "difference", "allowed_change", "max_regression", "better"}  # fmt: skip
EXTRA_LABELS = {"state_differs": "machine state differs", "false_alarm_rate": "false-alarm rate",
                "detectable_change": "detectable change (power 0.8)", "runs_needed": "runs needed"}  # fmt: skip


#: extra columns that are fractions, shown as percentages
FRACTIONS = {"false_alarm_rate", "detectable_change"}


def _shown(name: str, value: object) -> str:
    if value in (None, ""):
        return ""
    if name in FRACTIONS:
        try:
            return f"{100 * float(str(value)):.3g}%"
        except ValueError:
            pass
    return str(value)


def _num(text: object) -> str:
    try:
        return f"{float(str(text)):.4g}"
    except ValueError:
        return str(text)


def _present(value: object) -> bool:
    return value not in (None, "")


@dataclass(frozen=True)
class Gate:
    """One row of a campaign's gates.csv."""

    campaign: str
    row: Mapping[str, str]  # as read from gates.csv (gate_line takes it whole)
    record: dict[str, object] = field(init=False)
    fields: dict[str, object] = field(init=False)

    def __post_init__(self) -> None:
        record, fields = own(self.row)
        object.__setattr__(self, "record", record)
        object.__setattr__(self, "fields", fields)

    @property
    def verdict(self) -> str:
        return str(self.fields["verdict"])

    @property
    def name(self) -> str:
        """Unique in its campaign: a gate index has a row per record it selects."""
        record = ", ".join(f"{k}={v}" for k, v in self.record.items()) or "every record"
        return f"gate {self.fields['gate']}: {self.fields['metric']} ({record})"

    @property
    def estimate(self) -> str:
        f = self.fields
        if _present(f.get("difference")):
            return f"difference {_num(f['difference'])} ({_num(f['value'])} vs {_num(f['baseline_mean'])})"
        if _present(f.get("value")):
            return f"{f.get('statistic') or 'value'} {_num(f['value'])}"
        return "-"

    @property
    def interval(self) -> str:
        f = self.fields
        if _present(f.get("ci_low")) and _present(f.get("ci_high")):
            return f"[{_num(f['ci_low'])}, {_num(f['ci_high'])}]"
        return "-"

    @property
    def threshold(self) -> str:
        f = self.fields
        if f.get("kind") == "absolute":
            return ", ".join(f"{k} {_num(f[k])}" for k in ("lower", "upper") if _present(f.get(k)))
        if not _present(f.get("max_regression")):
            return "-"
        allowed = f"regression at most {float(str(f['max_regression'])):.1%}"
        if _present(f.get("allowed_change")):
            allowed += f" ({_num(f['allowed_change'])})"
        return f"{allowed} vs baseline {f.get('baseline')}, {f.get('better')} is better"

    def extras(self, names: Sequence[str]) -> list[str]:
        """The extra columns' values as a person reads them (fractions as percentages)."""
        return [_shown(n, self.fields.get(n)) for n in names]


@dataclass(frozen=True)
class Report:
    """Every gate `perfsnake check` read, the campaigns it could not, and its exit status."""

    gates: list[Gate]
    missing: dict[str, str]  # campaign -> why it has no gates to read
    inconclusive: str  # the --inconclusive policy: "fail" or "pass"
    exit_code: int

    @classmethod
    def of(cls, found: Mapping[str, list[dict[str, str]] | None], inconclusive: str, exit_code: int) -> Report:
        """`found`: what check_gates read, campaign -> its gates.csv rows (None: no gates.csv)."""
        gates = [Gate(name, row) for name, rows in found.items() for row in rows or []]
        missing = {name: f"no {layout.gates(name)} (run the campaign first)" for name, rows in found.items() if rows is None}  # fmt: skip
        return cls(gates, missing, inconclusive, exit_code)

    @property
    def verdict(self) -> str:
        """The worst gate verdict; "error" when a campaign's gates could not be read."""
        return "error" if self.missing else worst([g.verdict for g in self.gates]) or "pass"

    def count(self, verdict: str) -> int:
        return sum(1 for g in self.gates if g.verdict == verdict)

    def headline(self) -> str:
        return (f"{len(self.gates)} gates: {self.count('pass')} passed, {self.count('fail')} failed, "
                f"{self.count('inconclusive')} inconclusive")  # fmt: skip

    def extra_fields(self) -> list[str]:
        """The fields beyond SHOWN that some gate row has a value for, in the order they come."""
        names = dict.fromkeys(k for g in self.gates for k, v in g.fields.items() if k not in SHOWN and _present(v))
        return list(names)

    def campaigns(self) -> list[str]:
        return list(dict.fromkeys([*(g.campaign for g in self.gates), *self.missing]))


def _details(gate: Gate, extras: Sequence[str]) -> str:
    lines = [f"verdict: {gate.verdict}", f"estimate: {gate.estimate}", f"interval: {gate.interval}",
             f"threshold: {gate.threshold}", f"reason: {gate.fields.get('reason')}"]  # fmt: skip
    lines += [f"{EXTRA_LABELS.get(n, n)}: {v}" for n, v in zip(extras, gate.extras(extras), strict=True) if v]
    return "\n".join(lines) + "\n"


def junit(report: Report) -> str:
    """JUnit XML: a testsuite per campaign, a testcase per gate row. No `time`
    attributes: a verdict takes no time of its own (the analysis computed it),
    and readers take a missing time as 0."""
    extras = report.extra_fields()
    root = ET.Element("testsuites", name=SUITES_NAME)
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for campaign in report.campaigns():
        suite = ET.SubElement(root, "testsuite", name=campaign)
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="inconclusive", value=report.inconclusive)
        counts = dict.fromkeys(totals, 0)
        if campaign in report.missing:
            case = ET.SubElement(suite, "testcase", classname=campaign, name="gates.csv")
            ET.SubElement(case, "error", message=report.missing[campaign], type="not-analysed")
            counts["tests"], counts["errors"] = 1, 1
        for gate in (g for g in report.gates if g.campaign == campaign):
            counts["tests"] += 1
            case = ET.SubElement(suite, "testcase", classname=campaign, name=gate.name)
            message = f"{gate.verdict.upper()}: {gate_line(gate.row)}"
            if gate.verdict == "fail":
                ET.SubElement(case, "failure", message=message, type="regression").text = _details(gate, extras)
                counts["failures"] += 1
            elif gate.verdict == "inconclusive" and report.inconclusive == "fail":
                ET.SubElement(case, "failure", message=message, type="inconclusive").text = _details(gate, extras)
                counts["failures"] += 1
            elif gate.verdict == "inconclusive":
                ET.SubElement(case, "skipped", message=message).text = _details(gate, extras)
                counts["skipped"] += 1
            else:
                ET.SubElement(case, "system-out").text = _details(gate, extras)
        suite.attrib.update({k: str(v) for k, v in counts.items()})
        totals = {k: totals[k] + counts[k] for k in totals}
    root.attrib.update({k: str(v) for k, v in totals.items()})
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown(report: Report) -> str:
    """A headline and a table of every gate, then what could not be read and the exit status."""
    extras = report.extra_fields()
    header = ["campaign", "gate", "verdict", "estimate", "interval", "threshold", *(EXTRA_LABELS.get(n, n) for n in extras)]  # fmt: skip
    lines = ["## perfsnake check", "", report.headline() + ".", ""]
    if report.gates:
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        # Worst first, as significant.md orders them: a failure is read first.
        ordered = sorted(report.gates, key=lambda g: -VERDICTS.index(g.verdict))
        for g in ordered:
            cells = [g.campaign, g.name, g.verdict, g.estimate, g.interval, g.threshold, *g.extras(extras)]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        lines.append("")
    lines += [f"- {campaign}: error: {why}" for campaign, why in report.missing.items()]
    policy = "failures" if report.inconclusive == "fail" else "passes"
    lines += [f"Exit status {report.exit_code} (inconclusive gates count as {policy}).", ""]
    return "\n".join(lines)


def _json_value(value: object) -> object:
    """A gates.csv field as JSON: numbers as numbers, an empty cell as null."""
    if not isinstance(value, str):
        return value
    if value == "":
        return None
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


def verdict(report: Report) -> str:
    """The versioned verdict file: every field of every gate row flows through."""
    gates = [{"campaign": g.campaign, "name": g.name, "record": {k: str(v) for k, v in g.record.items()},
              **{k: _json_value(v) for k, v in g.fields.items()}} for g in report.gates]  # fmt: skip
    data = {
        "format": FORMAT,
        "version": VERSION,
        "verdict": report.verdict,
        "exit_code": report.exit_code,
        "inconclusive": report.inconclusive,
        "counts": {v: report.count(v) for v in VERDICTS},
        "errors": [{"campaign": c, "problem": why} for c, why in report.missing.items()],
        "gates": gates,
    }
    return json.dumps(data, indent=2) + "\n"


# ---- where they go -----------------------------------------------------------------------------


def requested(
    junit: Path | None, markdown: Path | None, verdict: Path | None, environ: Mapping[str, str]
) -> dict[str, Path]:
    """The outputs asked for, each by the option (or variable) that named it."""
    out = {opt: path for opt, path in (("--junit", junit), ("--markdown", markdown), ("--verdict", verdict)) if path}
    if environ.get(STEP_SUMMARY):
        out[STEP_SUMMARY] = Path(environ[STEP_SUMMARY])
    return out


def unwritable(outputs: Mapping[str, Path]) -> str:
    """The first output that cannot be written, in one line ("" when all can):
    checked before anything is written, so a typo leaves no partial set."""
    for opt, path in outputs.items():
        parent = path.parent
        if path.is_dir():
            why = "is a directory"
        elif not parent.is_dir():
            why = f"its directory {parent} does not exist"
        elif not os.access(parent, os.W_OK | os.X_OK) or (opt == STEP_SUMMARY and path.exists() and not os.access(path, os.W_OK)):  # fmt: skip
            why = "is not writable"
        else:
            continue
        return f"{opt} {path}: {why}"
    return ""


def write(outputs: Mapping[str, Path], report: Report) -> None:
    """Each file whole (a temporary file renamed over it: a reader never sees
    half a file); the step summary appended, as GitHub expects of a step."""
    render = {"--junit": junit, "--markdown": markdown, "--verdict": verdict, STEP_SUMMARY: markdown}
    for opt, path in outputs.items():
        text = render[opt](report)
        if opt == STEP_SUMMARY:
            with path.open("a") as f:  # one write: another step's summary is kept, ours not interleaved
                f.write(text)
        else:
            safefile.write_text(path, text)
