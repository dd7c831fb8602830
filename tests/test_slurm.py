"""profiles/slurm on a real single-node Slurm cluster (slurm-wlm and munge
from Debian, started and stopped by this module): a small heater campaign goes
through Snakemake's Slurm executor plugin and yields what a local run yields."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest
from helpers import jobs_run, slurm_command, snakemake, statuses, write_campaign
from slurm_cluster import ClusterUnavailable, SlurmCluster, for_tests, missing_binaries

from perfsnake.campaign_csv import read_csv
from perfsnake.machine.sysinfo import online_cpus

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        bool(missing_binaries()),
        reason=f"Slurm/munge binaries missing: {', '.join(missing_binaries())} (apt-get install slurm-wlm munge)",
    ),
]


@pytest.fixture(scope="module")
def cluster():
    try:
        yield from for_tests()
    except ClusterUnavailable as exc:
        pytest.skip(str(exc))


def campaign_data():
    return {
        "name": "heat",
        "benchmark": "heater",
        "variables": {"cpu": [online_cpus()[0]], "interval_ms": [100, 200]},
        "nb_runs": 2,
        "duration_s": 0.3,
        "timeout_s": 30,
        "plots": [{"kind": "bar", "x": "interval_ms", "y": "ops_per_s"}],
        # One job per run both ways: the local run would otherwise be batched from the Slurm run's measured times.
        "batch": 1,
    }


def slurm_snakemake(
    workdir: Path, campaign: Path, cluster: SlurmCluster, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess:
    """The documented cluster command, checked."""
    cmd = slurm_command(workdir, campaign, *args)
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, cwd=workdir, env=cluster.env, check=False
    )
    if proc.returncode != 0:
        raise AssertionError(
            f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}\n"
            f"--- slurmctld.log\n{cluster.log('slurmctld')}\n--- slurmd.log\n{cluster.log('slurmd')}"
        )
    return proc


def tree(base: Path) -> set[str]:
    """File names under results/<campaign>, relative (no Slurm-only files),
    but a run's samples.csv: the heater's intervals in it are there when the
    run printed two or more, which a loaded machine may not reach in 0.3 s
    (checked run by run instead: samples_follow_the_output)."""
    return {str(p.relative_to(base)) for p in base.rglob("*") if p.is_file() and p.name != "samples.csv"}


def samples_follow_the_output(base: Path) -> None:
    """A run has samples.csv exactly when its stdout has two intervals or more."""
    from perfsnake.benchmarks.heater import HeaterBenchmark

    for run in (base / "runs").glob("*/*/run-*"):
        printed = len(HeaterBenchmark.samples((run / "stdout.txt").read_text()))
        assert (run / "samples.csv").exists() == (printed >= 2), (run, printed)


def test_campaign_through_slurm_matches_local_run(cluster, tmp_path):
    on_slurm, local = tmp_path / "slurm", tmp_path / "local"
    camp = write_campaign(on_slurm, campaign_data())
    started = time.monotonic()
    proc = slurm_snakemake(on_slurm, camp, cluster, "all")
    elapsed = time.monotonic() - started
    log = proc.stdout + proc.stderr

    # The same campaign run locally, for comparison.
    snakemake(local, write_campaign(local, campaign_data()), "--cores", "2", "all")

    base, base_local = on_slurm / "results" / "heat", local / "results" / "heat"
    frame, frame_local = read_csv(base / "heat.csv"), read_csv(base_local / "heat.csv")
    assert list(frame.columns) == list(frame_local.columns)
    key = ["interval_ms", "run"]
    assert sorted(map(tuple, frame[key].values.tolist())) == sorted(map(tuple, frame_local[key].values.tolist())) == [
        (100, 1), (100, 2), (200, 1), (200, 2),
    ]  # fmt: skip
    assert set(frame["status"]) == {"ok"} and (frame["ops_per_s"] > 0).all()
    runs = statuses(on_slurm, "heat")
    assert sorted(runs) == sorted(statuses(local, "heat"))
    assert len(runs) == 4 and all(s["status"] == "ok" for s in runs.values())
    assert tree(base) == tree(base_local)
    samples_follow_the_output(base)
    samples_follow_the_output(base_local)
    assert json.loads((base / "results.json").read_text()) and (base / "summary.csv").exists()

    # Run, build and tool jobs went through Slurm; the summary rules stayed local.
    assert log.count("has been submitted with SLURM jobid") == 6, log[-3000:]
    for rule in ("collect", "aggregate", "analyse", "plot"):
        assert f"localrule {rule}:" in log
    assert jobs_run(proc, "run") == 4
    slurm_logs = on_slurm / ".snakemake" / "slurm_logs"
    run_logs = sorted((slurm_logs / "rule_run").rglob("*.log"))
    assert len(run_logs) == 4, run_logs
    assert sorted(p.name for p in slurm_logs.iterdir()) == ["rule_build", "rule_run", "rule_tool"]
    run_ids = {p.stem for p in run_logs}
    # Each run names the node and the Slurm job that measured it.
    assert {s["slurm_job_id"] for s in runs.values()} == run_ids
    assert {s["host"] for s in runs.values()} == {cluster.host}
    assert f"# run_hosts: {cluster.host}" in (base / "heat.csv").read_text()

    # Slurm's view: every run job completed on the node, with the whole node
    # to itself (--exclusive), never overlapping any other job.
    jobs = {j["JobID"]: j for j in cluster.jobs()}
    assert run_ids <= set(jobs), (run_ids, jobs)
    for jid in run_ids:
        job = jobs[jid]
        assert job["State"] == "COMPLETED" and job["NodeList"] == cluster.host, job
        assert job["OverSubscribe"] == "NO", job
        # Wall-time limit from the campaign: timeout_s 30 -> 1 + 5 minutes.
        assert job["TimeLimit"] == "6:00", job
        for other in jobs.values():
            if other["JobID"] != jid and other["StartTime"] != "N/A":
                assert other["EndTime"] <= job["StartTime"] or other["StartTime"] >= job["EndTime"], (job, other)
    durations = [
        (datetime.fromisoformat(j["EndTime"]) - datetime.fromisoformat(j["StartTime"])).total_seconds()
        for j in jobs.values()
    ]
    print(
        f"\nslurm campaign: {elapsed:.1f} s for {len(jobs)} Slurm jobs, each "
        f"{min(durations):.0f}-{max(durations):.0f} s from start to end (runs of 0.3 s)"
    )

    # Nothing left to do: a second invocation submits nothing.
    again = slurm_snakemake(on_slurm, camp, cluster, "all")
    assert "has been submitted" not in again.stdout + again.stderr
