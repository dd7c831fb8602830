"""The `perfsnake` command: every subcommand and option documented, `failed`
and `summary` on a campaign's recorded results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import ROOT, write_campaign

from perfsnake.cli import _parser

PERFSNAKE = [sys.executable, "-m", "perfsnake"]


def test_every_subcommand_and_option_has_help():
    parser = _parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) == {
        "validate",
        "failed",
        "rerun-failed",
        "summary",
        "check",
        "compare",
        "capabilities",
        "artifact",
        "import",
        "history",
        "tune",
    }
    helps = {a.dest: a.help for a in sub._choices_actions}
    assert all(helps.values()), helps
    for name, command in sub.choices.items():
        for action in command._actions:
            assert action.help, (name, action.dest)


def _recorded(tmp_path, statuses: list[str]):
    camp = write_campaign(tmp_path, {
        "name": "rec", "benchmark": {"type": "command", "command": "echo value={x}", "metrics": {"value": r"value=(\d+)"}},
        "variables": {"x": list(range(len(statuses)))}, "nb_runs": 1,
    })  # fmt: skip
    results = []
    for i, state in enumerate(statuses):
        rdir = tmp_path / f"results/rec/runs/x-{i}/run-1"
        rdir.mkdir(parents=True)
        (rdir / "status.json").write_text(json.dumps({"status": state}))
        results.append({"status": state, "variables": {"x": i}})
    (tmp_path / "results/rec/results.json").write_text(json.dumps(results))
    return camp


def _run(tmp_path, *args):
    return subprocess.run(
        [*PERFSNAKE, *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_failed_says_so_when_there_are_none_and_lists_them_otherwise(tmp_path):
    camp = _recorded(tmp_path, ["ok", "ok"])
    proc = _run(tmp_path, "failed", "--config", f"campaign={camp}")
    assert proc.returncode == 0 and proc.stdout.strip() == "no failed runs"
    other = tmp_path / "other"
    other.mkdir()
    camp = _recorded(other, ["ok", "timeout"])
    proc = _run(other, "failed", "--config", f"campaign={camp}")
    assert proc.stdout.split() == ["results/rec/runs/x-1/run-1"]


def test_summary_strict_fails_when_a_run_failed(tmp_path):
    camp = _recorded(tmp_path, ["ok", "failed"])
    relaxed = _run(tmp_path, "summary", "--config", f"campaign={camp}")
    assert relaxed.returncode == 0 and "rec: 1 ok, 1 failed" in relaxed.stdout
    strict = _run(tmp_path, "summary", "--strict", "--config", f"campaign={camp}")
    assert strict.returncode == 1 and "strict mode" in strict.stdout


def test_capabilities_answer_every_question_instruments_ask():
    out = subprocess.run(
        [sys.executable, "-m", "perfsnake", "capabilities"], capture_output=True, text=True, check=True
    )
    keys = [line.split(":", 1)[0] for line in out.stdout.splitlines()]
    assert {"hardware_pmu", "kprobes", "uprobes", "btf", "tracefs", "sched_tracepoints", "perf_event_paranoid"} <= set(
        keys
    )
    # This VM: no PMU, no kprobes (what the refusals rely on); elsewhere the answers are the machine's.
    pmu = any(p.name == "cpu" or p.name.startswith("cpu_") for p in Path("/sys/bus/event_source/devices").iterdir())
    assert f"hardware_pmu: {pmu}" in out.stdout
