"""Promises of the README that no other test held: the resume message about
runs that finished before an interruption, strict mode from the environment,
and where run cgroups go (`PERFSNAKE_CGROUP`)."""

from __future__ import annotations

import subprocess

import pytest
from helpers import ROOT, SNAKEMAKE, jobs_run, snakemake, statuses, write_campaign

pytestmark = pytest.mark.e2e


def command_campaign(command: str = "echo value={x}", **extra: object) -> dict:
    return {
        "name": "p",
        "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\S+)"}},
        "variables": {"x": [1]},
        "nb_runs": 2,
        **extra,
    }


def test_resume_keeps_a_run_that_finished_before_the_interruption(tmp_path):
    """README, "Resume after an interruption": a run whose launcher had
    written its status when the workflow died counts as finished, even though
    Snakemake had not marked its job complete; `make resume` says
    `resume: N run(s) that finished before the interruption kept` and does
    not measure it again.

    The state is made deterministically: the first run's post-run hook (after
    the launcher wrote status.json, before the job returns to Snakemake)
    SIGKILLs the workflow's whole process group, as `timeout -s KILL` or job
    control would."""
    once = tmp_path / "interrupted-once"
    hook = {"type": "command", "name": "interrupt", "command": f"mkdir {once} 2>/dev/null && kill -KILL 0; true"}
    camp = write_campaign(tmp_path, command_campaign(post_run_hooks=[hook]))
    argv = [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
            "--configfile", str(ROOT / "config/config.yaml"), "--cores", "1", "all", "--config", f"campaign={camp}"]  # fmt: skip
    # A session of its own: the hook's `kill 0` must reach the workflow, not pytest.
    killed = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, start_new_session=True)
    assert killed.returncode == -9 and once.is_dir(), killed.stdout + killed.stderr
    # The state the message is about: one run's status.json written, its job still marked incomplete.
    finished = statuses(tmp_path, "p")
    assert list(finished) == ["x-1/run-1"] and finished["x-1/run-1"]["status"] == "ok"
    assert any((tmp_path / ".snakemake/incomplete").rglob("*"))
    status = tmp_path / "results/p/runs/x-1/run-1/status.json"
    before = (status.stat().st_mtime_ns, status.read_bytes())
    # The documented resume (make resume): unlock, then --rerun-incomplete.
    unlock = snakemake(tmp_path, camp, "--unlock", "all")
    resume = snakemake(tmp_path, camp, "--cores", "1", "all", "--rerun-incomplete")
    said = [
        line
        for proc in (unlock, resume)
        for line in (proc.stdout + proc.stderr).splitlines()
        if "finished before the interruption" in line
    ]
    assert said == [
        "[perfsnake] resume: 1 run(s) that finished before the interruption kept: results/p/runs/x-1/run-1/status.json"
    ], unlock.stderr + resume.stderr
    # Not redone: only the run that never started runs; the kept one is untouched.
    assert jobs_run(resume, "run") == 1
    assert (status.stat().st_mtime_ns, status.read_bytes()) == before
    assert {k: v["status"] for k, v in statuses(tmp_path, "p").items()} == {"x-1/run-1": "ok", "x-1/run-2": "ok"}
    assert (tmp_path / "results/p/p.csv").exists()
