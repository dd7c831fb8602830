"""A fleet of Slurm nodes (`hosts:` without ssh, run with profiles/slurm) on a
real three-node Slurm cluster: three slurmd on this machine, each under its
own node name (tests/slurm_cluster.py). Each node builds its own and runs its
records, one at a time; a node that is down holds up only its own runs, and
the resume finishes them alone. The three nodes share this machine, so its
benchmark lock also keeps their runs apart (on a real cluster each node has
its own)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers import kill_group, run_group, slurm_command, statuses, write_campaign
from slurm_cluster import ClusterUnavailable, SlurmCluster, for_tests, missing_binaries

from perfsnake.campaign_csv import read_csv

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        bool(missing_binaries()),
        reason=f"Slurm/munge binaries missing: {', '.join(missing_binaries())} (apt-get install slurm-wlm munge)",
    ),
]

NODES = ("n1", "n2", "n3")


@pytest.fixture(scope="module")
def cluster():
    try:
        yield from for_tests(list(NODES))
    except ClusterUnavailable as exc:
        pytest.skip(str(exc))


def campaign(hosts: list[str]) -> dict:
    # The build and each run say which node made them; the sleep makes overlaps visible.
    return {
        "name": "sf",
        "benchmark": {"type": "command", "build": "echo $SLURMD_NODENAME > {build_dir}/node",
                      "command": "cat {build_dir}/node; sleep 0.2; echo value={x}",
                      "metrics": {"value": r"value=(\S+)"}},
        "variables": {"x": [1, 2]},
        "nb_runs": 2,
        "timeout_s": 30,
        "hosts": hosts,
    }  # fmt: skip


def run(
    workdir: Path, camp: Path, cluster: SlurmCluster, *args: str, check: bool = True
) -> subprocess.CompletedProcess:
    proc = run_group(slurm_command(workdir, camp, *args), 600, cwd=workdir, env=cluster.env)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc


def results(workdir: Path) -> dict[str, dict]:
    return {str(p.parent.relative_to(workdir / "results" / "sf" / "runs")): json.loads(p.read_text())
            for p in (workdir / "results" / "sf" / "runs").glob("host-*/*/run-*/result.json")}  # fmt: skip


def run_jobs(cluster: SlurmCluster, before: set[str] = frozenset()) -> list[dict[str, str]]:
    """The cluster's run jobs (their time limit is the campaign's: 6 minutes), beyond `before`."""
    return [j for j in cluster.jobs() if j["TimeLimit"] == "6:00" and j["JobID"] not in before]


def test_each_node_builds_its_own_and_runs_its_records_alone(cluster, tmp_path):
    camp = write_campaign(tmp_path, campaign(list(NODES)))
    run(tmp_path, camp, cluster, "all")

    builds = sorted((tmp_path / "resources" / "builds").glob("*/*/node"))
    assert sorted(p.read_text().strip() for p in builds) == list(NODES), builds
    assert all(f"slurm-{p.read_text().strip()}~" in p.parent.name for p in builds)
    found = results(tmp_path)
    assert len(found) == 12 and all(r["status"] == "ok" for r in found.values())
    # Every run measured on its host's node, and says so.
    assert all(r["slurm_node"] == r["variables"]["host"] for r in found.values()), found
    for path in found:
        stdout = (tmp_path / "results" / "sf" / "runs" / path / "stdout.txt").read_text()
        assert stdout.startswith(path.split("/")[0].removeprefix("host-") + "\n"), (path, stdout)
    # One CSV, one set of rows per host.
    frame = read_csv(tmp_path / "results" / "sf" / "sf.csv")
    assert frame.groupby("host").size().to_dict() == dict.fromkeys(NODES, 4)
    # Slurm's view: each run job on its node, the node to itself; a node's jobs one after another.
    jobs = run_jobs(cluster)
    assert len(jobs) == 12 and all(j["State"] == "COMPLETED" and j["OverSubscribe"] == "NO" for j in jobs), jobs
    by_id = {str(r["slurm_job_id"]): r["variables"]["host"] for r in found.values()}
    assert {j["JobID"]: j["NodeList"] for j in jobs} == by_id
    for node in NODES:
        spans = sorted((j["StartTime"], j["EndTime"]) for j in jobs if j["NodeList"] == node)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), spans
    # The runs' own intervals never overlap (one machine here: one benchmark lock).
    spans = sorted((s["start_epoch"], s["end_epoch"]) for s in statuses(tmp_path, "sf").values())
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), spans
    again = run(tmp_path, camp, cluster, "all")
    assert "has been submitted" not in again.stdout + again.stderr


def test_a_node_that_is_not_the_clusters_is_refused_in_one_line(cluster, tmp_path):
    camp = write_campaign(tmp_path, campaign(["n1", "n9"]))
    proc = run(tmp_path, camp, cluster, "all", check=False)
    errors = [ln for ln in proc.stderr.splitlines() if "perfsnake: error" in ln]
    assert proc.returncode != 0 and len(errors) == 1, proc.stderr[-3000:]
    assert f"{camp}: hosts[1]: 'n9' is not a node of this Slurm cluster (sinfo lists n1, n2, n3)" in errors[0]
    assert "has been submitted" not in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what}")
        time.sleep(0.5)


def test_a_down_node_holds_up_only_its_runs_and_the_resume_makes_only_them(cluster, tmp_path):
    camp = write_campaign(tmp_path, campaign(list(NODES)))
    down = ["scontrol", "update", "NodeName=n3"]
    # Drained, not DOWN: with the test cluster's ReturnToService=2 a DOWN node
    # came back by itself when its slurmd answered late under load (and ran its jobs).
    subprocess.run([*down, "State=DRAIN", "Reason=perfsnake-test"], env=cluster.env, check=True, timeout=30)
    log = (tmp_path / "first.log").open("w")
    proc = None
    try:
        proc = subprocess.Popen(slurm_command(tmp_path, camp, "all"), cwd=tmp_path, env=cluster.env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip

        def others_done() -> bool:
            assert proc.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
            done = {p.split("/")[0] for p in statuses(tmp_path, "sf")}
            return len(statuses(tmp_path, "sf")) == 8 and done == {"host-n1", "host-n2"}

        _wait_for(others_done, 400, "the runs of n1 and n2")
        kept = statuses(tmp_path, "sf")
        # The user gives up waiting for n3: Ctrl-C (Snakemake cancels its Slurm jobs).
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    finally:
        if (
            proc is not None and proc.poll() is None
        ):  # the wait above failed: nothing of this invocation outlives the test
            kill_group(proc)
        log.close()
        subprocess.run([*down, "State=RESUME"], env=cluster.env, check=False, timeout=30)
    first = (tmp_path / "first.log").read_text()
    assert "Slurm node n3 is down" in first or "Slurm node n3 is drain" in first, first[-3000:]
    # Ctrl-C cancels the Slurm jobs of runs that had ended before Snakemake
    # polled them; Snakemake then deletes their output (restored on resume).
    after_kill = statuses(tmp_path, "sf")
    assert all(p.startswith(("host-n1", "host-n2")) for p in after_kill)
    for job in cluster.jobs():  # what Ctrl-C left queued
        if job["State"] in ("PENDING", "RUNNING"):
            subprocess.run(["scancel", job["JobID"]], env=cluster.env, check=False, timeout=30)
    _wait_for(lambda: "idle" in subprocess.run(["sinfo", "-h", "-n", "n3", "-o", "%T"], env=cluster.env,
                                               capture_output=True, text=True).stdout, 60, "n3 back")  # fmt: skip

    before = {j["JobID"] for j in cluster.jobs()}
    unlocked = run(tmp_path, camp, cluster, "--unlock", "all")
    resumed = run(tmp_path, camp, cluster, "all", "--rerun-incomplete")
    if len(after_kill) < len(kept):
        said = unlocked.stderr + resumed.stderr
        assert f"resume: {len(kept) - len(after_kill)} run(s) that finished before the interruption restored" in said
    final = statuses(tmp_path, "sf")
    assert len(final) == 12 and all(s["status"] == "ok" for s in final.values())
    assert {p: final[p] for p in kept} == kept  # nothing of n1 and n2 measured again
    assert {j["NodeList"] for j in run_jobs(cluster, before)} == {"n3"}, resumed.stdout + resumed.stderr
    assert len(run_jobs(cluster, before)) == 4
    frame = read_csv(tmp_path / "results" / "sf" / "sf.csv")
    assert frame.groupby("host").size().to_dict() == dict.fromkeys(NODES, 4)
