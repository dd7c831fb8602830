"""Run order across build variables: every build exists before the first
measured run, and `order: interleaved` holds across builds (proved from the
start times the launcher recorded)."""

from __future__ import annotations

import datetime as dt

import pytest
from helpers import jobs_run, snakemake, statuses, write_campaign

pytestmark = pytest.mark.e2e


def _when(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _campaign(variants: list[str]) -> dict:
    # Build "b" takes 3 s, so with a core to spare the runs of "a" could start
    # (and run in a block) before it exists, if nothing held them back.
    return {
        "name": "twobuilds",
        "benchmark": {
            "type": "command",
            "build": "if [ {variant} = b ]; then sleep 3; fi; echo {variant} > {build_dir}/variant",
            "build_variables": ["variant"],
            "command": "cat {build_dir}/variant; echo value=1",
            "metrics": {"value": r"value=(\d+)"},
        },
        "variables": {"variant": variants},
        "nb_runs": 2,
        "timeout_s": 30,
    }


def test_runs_of_two_builds_interleave_after_both_builds(tmp_path):
    camp = write_campaign(tmp_path, _campaign(["a", "b"]))
    snakemake(tmp_path, camp, "--cores", "3", "all")
    runs = statuses(tmp_path, "twobuilds")
    order = [key for key, _ in sorted(runs.items(), key=lambda kv: _when(kv[1]["start"]))]
    assert order == ["variant-a/run-1", "variant-b/run-1", "variant-a/run-2", "variant-b/run-2"], order
    first_start = min(_when(s["start"]) for s in runs.values())
    built = list((tmp_path / "resources/builds").glob("*/*/variant"))
    assert len(built) == 2 and all(b.stat().st_mtime <= first_start for b in built)
    # A third build value: one build, its two runs, nothing else re-measured.
    before = {k: v["start"] for k, v in runs.items()}
    write_campaign(tmp_path, _campaign(["a", "b", "c"]))
    proc = snakemake(tmp_path, camp, "--cores", "3", "all")
    assert jobs_run(proc, "build") == 1 and jobs_run(proc, "run") == 2
    after = statuses(tmp_path, "twobuilds")
    assert all(after[k]["start"] == v for k, v in before.items())


def test_scheduling_rounds_follow_finished_jobs_not_a_timer(tmp_path):
    """Snakemake's job-rate limiter re-runs the scheduler every second while a
    run holds the lock (each round walks every waiting run's inputs: tens of
    ms per run at thousands of runs); the workflow turns it off for local runs
    (rules/common.smk, onstart), so rounds happen only when jobs finish."""
    spec = {"name": "rounds", "benchmark": {"type": "command", "command": "sleep 1.2"}, "nb_runs": 4, "plots": []}
    proc = snakemake(tmp_path, write_campaign(tmp_path, spec), "--cores", "1", "all", "--verbose")
    log = proc.stdout + proc.stderr
    rounds, finished = log.count("Ready jobs:"), log.count("Finished jobid:")
    # With the limiter: about one more round per second of runs (29 rounds for 12 jobs here).
    assert finished >= 10 and rounds <= finished + 1, (rounds, finished)
