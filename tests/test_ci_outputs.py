"""`perfsnake check`'s CI outputs (perfsnake.ci_outputs): JUnit XML read by a
real JUnit reader, the Markdown summary, $GITHUB_STEP_SUMMARY, the JSON
verdict file; end to end on a campaign made by real Snakemake, and the
renderers on hand-made gate rows."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import ROOT, env_without_snakemake, snakemake, write_campaign
from junitparser import Error, Failure, JUnitXml, Skipped

from perfsnake import ci_outputs, gates

# Each run's cost is the record's work plus the run's number (1, 2, 3): the
# values are fixed, so the verdicts are too, on any machine and load.
# work=100: mean 102, its 95 % interval about [99.5, 104.5].
CAMPAIGN = {
    "name": "ci",
    "benchmark": {"type": "command", "command": 'echo cost=$(( {work} + $(basename "$PWD" | tr -dc 0-9) ))',
                  "metrics": {"cost": r"cost=(\d+)"}},
    "variables": {"work": [100, 120]},
    "nb_runs": 3,
    "references": [
        {"metric": "cost", "where": {"work": 100}, "lower": 90, "upper": 110},  # pass
        {"metric": "cost", "where": {"work": 120}, "baseline": {"work": 100}, "max_regression": "5%",
         "better": "lower"},  # fail: 20 % more cost
        {"metric": "cost", "where": {"work": 100}, "upper": 103},  # inconclusive: straddled
    ],
}  # fmt: skip
PASS, FAIL, INCONCLUSIVE = "gate 0: cost (work=100)", "gate 1: cost (work=120)", "gate 2: cost (work=100)"


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> tuple[Path, Path]:
    """The campaign run once through the real workflow: (working directory, campaign file)."""
    workdir = tmp_path_factory.mktemp("ci")
    camp = write_campaign(workdir, CAMPAIGN)
    store = tmp_path_factory.mktemp("history") / "history.sqlite"
    snakemake(workdir, camp, "--cores", "1", "all", env={"PERFSNAKE_HISTORY": f"sqlite:///{store}"})
    return workdir, camp


def check(workdir: Path, camp: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in env_without_snakemake().items() if k != ci_outputs.STEP_SUMMARY}
    environ.update({"PYTHONPATH": str(ROOT), **(env or {})})
    cmd = [sys.executable, "-m", "perfsnake", "check", *args, "--config", f"campaign={camp}"]
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, env=environ, timeout=120, check=False)


def outcomes(path: Path) -> dict[str, str]:
    """Each test case's outcome as junitparser reads it: pass, failure, skipped or error."""
    kinds = {Failure: "failure", Skipped: "skipped", Error: "error"}
    return {
        case.name: next((kinds[type(r)] for r in case.result if type(r) in kinds), "pass")
        for suite in JUnitXml.fromfile(str(path))
        for case in suite
    }


@pytest.mark.e2e
def test_junit_markdown_and_verdict_of_a_real_campaign(made, tmp_path):
    workdir, camp = made
    junit, md, verdict = tmp_path / "gates.xml", tmp_path / "gates.md", tmp_path / "verdict.json"
    out = check(workdir, camp, "--junit", str(junit), "--markdown", str(md), "--verdict", str(verdict))
    assert out.returncode == 1, out.stdout + out.stderr
    # JUnit, as a JUnit reader sees it: one suite, the campaign; the failed gate its one failure.
    xml = JUnitXml.fromfile(str(junit))
    (suite,) = list(xml)
    assert suite.name == "ci" and (suite.tests, suite.failures, suite.errors, suite.skipped) == (3, 1, 0, 1)
    assert outcomes(junit) == {PASS: "pass", FAIL: "failure", INCONCLUSIVE: "skipped"}
    assert all(case.classname == "ci" for case in suite)
    (failure,) = next(c for c in suite if c.name == FAIL).result
    assert failure.type == "regression" and failure.message.startswith("FAIL: gate 1, cost (work=120)")
    assert "verdict: fail" in failure.text and "interval: [" in failure.text
    assert "threshold: regression at most 5.0%" in failure.text and "baseline work=100" in failure.text
    # The same counts through xml.etree, on the document's root.
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "3", "failures": "1", "errors": "0", "skipped": "1"}  # fmt: skip
    assert [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None] == [FAIL]
    # Markdown: the headline, and a row for each gate with its verdict.
    text = md.read_text()
    assert "3 gates: 1 passed, 1 failed, 1 inconclusive." in text
    rows = {ln.split(" | ")[1]: ln.split(" | ")[2] for ln in text.splitlines() if ln.startswith("| ci |")}
    assert rows == {PASS: "pass", FAIL: "fail", INCONCLUSIVE: "inconclusive"}
    assert "Exit status 1" in text
    # The verdict file: versioned, and its exit code the one check exited with.
    data = json.loads(verdict.read_text())
    assert (data["format"], data["version"], data["verdict"]) == ("perfsnake-verdict", 1, "fail")
    assert data["exit_code"] == out.returncode and data["counts"] == {"pass": 1, "inconclusive": 1, "fail": 1}
    gates = {g["name"]: g for g in data["gates"]}
    assert gates[FAIL]["verdict"] == "fail" and gates[FAIL]["record"] == {"work": "120"}
    assert gates[PASS]["value"] == pytest.approx(102) and gates[PASS]["lower"] == 90


@pytest.mark.e2e
def test_inconclusive_fail_makes_the_inconclusive_gate_a_failure(made, tmp_path):
    workdir, camp = made
    junit, verdict = tmp_path / "gates.xml", tmp_path / "verdict.json"
    out = check(workdir, camp, "--inconclusive", "fail", "--junit", str(junit), "--verdict", str(verdict))
    assert out.returncode == 1, out.stdout + out.stderr
    assert outcomes(junit) == {PASS: "pass", FAIL: "failure", INCONCLUSIVE: "failure"}
    inconclusive = next(c for s in JUnitXml.fromfile(str(junit)) for c in s if c.name == INCONCLUSIVE)
    assert inconclusive.result[0].type == "inconclusive"
    assert json.loads(verdict.read_text())["inconclusive"] == "fail"


@pytest.mark.e2e
def test_a_passing_check_exits_0_and_its_verdict_says_so(tmp_path):
    """A campaign whose one gate passes: exit 0, verdict pass, no failure."""
    data = {**CAMPAIGN, "name": "ci_pass", "variables": {"work": [100]}, "references": CAMPAIGN["references"][:1]}
    camp = write_campaign(tmp_path, data)
    snakemake(tmp_path, camp, "--cores", "1", "all")
    junit, verdict = tmp_path / "gates.xml", tmp_path / "verdict.json"
    out = check(tmp_path, camp, "--junit", str(junit), "--verdict", str(verdict))
    assert out.returncode == 0, out.stdout + out.stderr
    assert outcomes(junit) == {PASS: "pass"}
    assert ET.parse(junit).getroot().get("failures") == "0"
    data = json.loads(verdict.read_text())
    assert (data["verdict"], data["exit_code"], data["counts"]["pass"]) == ("pass", 0, 1)


@pytest.mark.e2e
def test_github_step_summary_is_appended_to(made, tmp_path):
    workdir, camp = made
    summary = tmp_path / "step_summary.md"
    summary.write_text("# an earlier step\n\nits summary\n")
    out = check(workdir, camp, env={ci_outputs.STEP_SUMMARY: str(summary)})
    assert out.returncode == 1, out.stdout + out.stderr
    text = summary.read_text()
    assert text.startswith("# an earlier step\n\nits summary\n")
    assert all(name in text for name in (PASS, FAIL, INCONCLUSIVE)) and text.count("## perfsnake check") == 1
    check(workdir, camp, env={ci_outputs.STEP_SUMMARY: str(summary)})
    assert summary.read_text().count("## perfsnake check") == 2  # appended, not replaced


@pytest.mark.e2e
def test_a_bad_output_path_is_one_line_and_writes_nothing(made, tmp_path):
    workdir, camp = made
    md, verdict = tmp_path / "gates.md", tmp_path / "verdict.json"
    bad = tmp_path / "missing" / "gates.xml"
    summary = tmp_path / "step_summary.md"
    out = check(workdir, camp, "--markdown", str(md), "--junit", str(bad), "--verdict", str(verdict),
                env={ci_outputs.STEP_SUMMARY: str(summary)})  # fmt: skip
    assert out.returncode == 2 and out.stdout == "", out.stdout + out.stderr
    assert out.stderr.splitlines() == [f"perfsnake: check: --junit {bad}: its directory {bad.parent} does not exist"]
    assert sorted(tmp_path.iterdir()) == []  # not the Markdown, not the verdict, not the step summary
    out = check(workdir, camp, "--verdict", str(tmp_path))
    assert out.returncode == 2 and out.stderr.strip() == f"perfsnake: check: --verdict {tmp_path}: is a directory"


def test_a_campaign_not_run_yet_is_an_error_case(tmp_path):
    """No gates.csv: exit 2 as before, and the outputs say why instead of passing silently."""
    camp = write_campaign(tmp_path, CAMPAIGN)
    junit, verdict = tmp_path / "gates.xml", tmp_path / "verdict.json"
    out = check(tmp_path, camp, "--junit", str(junit), "--verdict", str(verdict))
    assert out.returncode == 2 and "run the campaign first" in out.stderr
    assert outcomes(junit) == {"gates.csv": "error"}
    data = json.loads(verdict.read_text())
    assert (data["verdict"], data["exit_code"], data["gates"]) == ("error", 2, [])
    assert data["errors"][0]["campaign"] == "ci" and "results/ci/gates.csv" in data["errors"][0]["problem"]


# ---- the renderers on hand-made gate rows (as gates.csv holds them: text) ----------------------------------

ABSOLUTE = {"gate": "0", "n": "4", "metric": "ops", "kind": "absolute", "statistic": "mean", "value": "10",
            "ci_low": "9.5", "ci_high": "10.5", "lower": "12", "upper": "", "verdict": "fail",
            "reason": "interval outside the bounds"}  # fmt: skip
BASELINE = {"gate": "1", "n": "4", "metric": "ops", "kind": "baseline", "baseline": "old/results", "baseline_mean": "100",
            "value": "99", "difference": "-1", "ci_low": "-2", "ci_high": "0.5", "allowed_change": "5",
            "max_regression": "0.05", "better": "higher", "verdict": "pass", "reason": "within the allowed regression",
            "state_differs": "kernel"}  # fmt: skip


def report(*rows: dict[str, str], inconclusive: str = "pass", exit_code: int = 1) -> ci_outputs.Report:
    return ci_outputs.Report.of({"c<&>": list(rows)}, inconclusive, exit_code)


def test_rows_render_their_estimate_interval_and_threshold():
    fail, ok = report(ABSOLUTE, BASELINE).gates
    assert fail.name == "gate 0: ops (n=4)" and fail.record == {"n": "4"}  # `n` a variable, not a field
    assert (fail.estimate, fail.interval, fail.threshold) == ("mean 10", "[9.5, 10.5]", "lower 12")
    assert ok.estimate == "difference -1 (99 vs 100)" and ok.interval == "[-2, 0.5]"
    assert ok.threshold == "regression at most 5.0% (5) vs baseline old/results, higher is better"


def test_junit_escapes_and_counts():
    inconclusive = {**ABSOLUTE, "gate": "2", "verdict": "inconclusive", "reason": 'a "<bound>" & more'}
    text = ci_outputs.junit(report(ABSOLUTE, BASELINE, inconclusive))
    root = ET.fromstring(text)  # the campaign's `<&>` and the reason's quotes are escaped, or this fails
    (suite,) = root
    assert suite.get("name") == "c<&>" and suite.find("properties/property").get("value") == "pass"
    assert [suite.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["3", "1", "0", "1"]
    assert suite.find("testcase[@name='gate 2: ops (n=4)']/skipped").get("message").endswith('a "<bound>" & more)')
    # A field beyond the fixed columns (here state_differs) reaches the test case's text.
    assert "machine state differs: kernel" in suite.find("testcase[@name='gate 1: ops (n=4)']/system-out").text
    strict = ET.fromstring(ci_outputs.junit(report(inconclusive, inconclusive="fail")))
    assert strict.get("failures") == "1" and strict.find(".//failure").get("type") == "inconclusive"


def test_markdown_headline_table_and_extra_columns():
    text = ci_outputs.markdown(report(BASELINE, {**ABSOLUTE, "reason": "a | b"}))
    lines = text.splitlines()
    assert "2 gates: 1 passed, 1 failed, 0 inconclusive." in lines
    header = next(ln for ln in lines if ln.startswith("| campaign"))
    # A column for each field beyond the fixed ones that some row has: the extension point.
    assert header == "| campaign | gate | verdict | estimate | interval | threshold | machine state differs |"
    rows = [ln for ln in lines if ln.startswith("| c<&> |")]
    assert [r.split(" | ")[2] for r in rows] == ["fail", "pass"]  # worst first
    assert rows[0].endswith("| lower 12 |  |") and rows[1].endswith("| kernel |")
    assert "Exit status 1 (inconclusive gates count as passes)." in lines


def test_the_error_rates_and_a_new_gate_column_flow_through(monkeypatch):
    """The gates' error rates (gates.csv's false_alarm_rate, ...) and any column
    gates.csv may grow once gates.GATE_FIELDS names it: in the verdict file, a
    Markdown column, the JUnit text."""
    rates = report({**ABSOLUTE, "false_alarm_rate": "0.025", "detectable_change": "0.12"})
    assert json.loads(ci_outputs.verdict(rates))["gates"][0]["false_alarm_rate"] == 0.025
    shown = ci_outputs.markdown(rates)
    assert "| threshold | false-alarm rate | detectable change (power 0.8) |" in shown
    assert shown.splitlines()[-3].endswith("| 2.5% | 12% |"), shown  # fractions read as percentages
    assert "false-alarm rate: 2.5%" in ET.fromstring(ci_outputs.junit(rates)).find(".//failure").text
    monkeypatch.setattr(gates, "GATE_FIELDS", gates.GATE_FIELDS | {"future_column"})
    future = report({**ABSOLUTE, "future_column": "7"})
    assert json.loads(ci_outputs.verdict(future))["gates"][0]["future_column"] == 7
    assert "| threshold | future_column |" in ci_outputs.markdown(future)
    assert "future_column: 7" in ET.fromstring(ci_outputs.junit(future)).find(".//failure").text


def test_verdict_file_carries_every_field():
    data = json.loads(ci_outputs.verdict(report(ABSOLUTE, BASELINE)))
    assert (data["format"], data["version"], data["verdict"], data["exit_code"]) == ("perfsnake-verdict", 1, "fail", 1)
    first = data["gates"][0]
    assert first["upper"] is None and first["ci_low"] == 9.5 and first["gate"] == 0 and first["record"] == {"n": "4"}
    empty = json.loads(ci_outputs.verdict(ci_outputs.Report.of({}, "pass", 0)))
    assert (empty["verdict"], empty["gates"], empty["counts"]["pass"]) == ("pass", [], 0)


def test_an_unwritable_output_is_named(tmp_path):
    outputs = ci_outputs.requested(tmp_path / "a.xml", None, tmp_path / "no" / "v.json", {})
    assert ci_outputs.unwritable(outputs) == f"--verdict {tmp_path / 'no' / 'v.json'}: its directory {tmp_path / 'no'} does not exist"  # fmt: skip
    assert ci_outputs.requested(None, None, None, {"GITHUB_STEP_SUMMARY": ""}) == {}  # set but empty: not asked
