"""The suite's non-root lane: the workflow run by unprivileged users the test
creates, each with its own HOME and a writable copy of the checkout, as most
researchers run benchmarks (from their own account, sudo at most for setup)."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers import ROOT, alive, processes_under, snakemake, statuses, write_campaign
from users import checkout_for, command, ensure_user, give, is_root, run_as, snakemake_argv, user_python

from perfsnake.campaign_csv import read_metadata, read_results

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not is_root(), reason="creates users: needs root")]

#: Root's own copy, for the comparisons: root's built tools kept (the user builds their own).
ROOT_COPY_IGNORE = shutil.ignore_patterns(".venv", ".git", "results", ".snakemake", "__pycache__", "report.html")


@pytest.fixture(scope="module")
def python(alice: str) -> Path:
    return user_python(alice)


@pytest.fixture(scope="module")
def alice() -> str:
    return ensure_user("alice").pw_name


@pytest.fixture(scope="module")
def bob() -> str:
    return ensure_user("bob").pw_name


@pytest.fixture(scope="module")
def alice_checkout(alice: str) -> Path:
    return checkout_for(alice)


def campaign_for(user: str, data: dict, name: str) -> Path:
    home = Path(pwd.getpwnam(user).pw_dir)
    path = home / "campaigns" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    give(user, path.parent)
    return path


def counting_campaign(name: str, **extra: object) -> dict:
    return {
        "name": name,
        "benchmark": {
            "type": "command",
            # Work counted in iterations, never in time: the value is exact.
            "command": "i=0; while [ $i -lt {n}000 ]; do i=$((i+1)); done; echo iterations=$i",
            "metrics": {"iterations": r"iterations=(\d+)"},
        },
        "variables": {"n": [1, 2]},
        "nb_runs": 2,
        **extra,
    }


def test_capability_questions_answer_for_a_normal_user(python, alice, alice_checkout):
    # Root asks first, which mounts tracefs where a fresh boot had not yet:
    # the root-only mount is what made a normal user's question raise.
    from perfsnake.machine import capabilities

    capabilities.tracefs()
    tracing = Path("/sys/kernel/tracing")
    readable = os.access(tracing, os.R_OK | os.X_OK) and bool(tracing.stat().st_mode & 0o005)
    code = (
        "from perfsnake.machine import capabilities as c; "
        "print(c.summary()); print(c.tracepoint_problem(('sched:sched_switch',))); "
        "print(c.recording_problem(('sched:sched_switch',)))"
    )
    proc = run_as(alice, [str(python), "-c", code], cwd=alice_checkout)
    assert proc.returncode == 0, proc.stderr
    summary, tracepoint, recording = proc.stdout.splitlines()
    assert "tracefs=yes" in summary if readable else "tracefs=no" in summary
    if not readable:
        assert "root" in tracepoint and "tracefs" in tracepoint
        assert recording != "None"
    cli = run_as(alice, [str(python), "-m", "perfsnake", "capabilities"], cwd=alice_checkout)
    assert cli.returncode == 0, cli.stderr
    assert "root: False" in cli.stdout


def test_a_normal_users_campaign_gives_what_roots_gives(python, alice, alice_checkout, tmp_path):
    data = counting_campaign("as_alice", wrappers=[{"type": "perf_stat", "events": ["task-clock"]}])
    proc = run_as(alice, snakemake_argv(python, campaign_for(alice, data, "as_alice")), cwd=alice_checkout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr
    mine = read_results(alice_checkout / "results/as_alice/as_alice.csv")

    snakemake(tmp_path, write_campaign(tmp_path, {**data, "name": "as_alice"}))
    roots = read_results(tmp_path / "results/as_alice/as_alice.csv")

    assert list(mine.columns) == list(roots.columns)
    keys = ["n", "run", "status", "iterations"]
    assert mine[keys].sort_values(keys).values.tolist() == roots[keys].sort_values(keys).values.tolist()
    assert set(mine["status"]) == {"ok"}
    assert (mine["perf_stat.task-clock"] > 0).all()
    summary = run_as(alice, [str(python), "-m", "perfsnake", "summary", "--strict", "--config", f"campaign={campaign_for(alice, data, 'as_alice')}"], cwd=alice_checkout)  # fmt: skip
    assert summary.returncode == 0, summary.stdout + summary.stderr


def test_a_normal_users_failing_run_and_rerun_failed(python, alice, alice_checkout):
    home = Path(pwd.getpwnam(alice).pw_dir)
    switch = home / "fail-n2"
    switch.touch()
    give(alice, switch)
    data = {
        "name": "failing_alice",
        "benchmark": {
            "type": "command",
            "command": f"if [ {{n}} = 2 ] && [ -e {switch} ]; then echo broken >&2; exit 3; fi; echo value={{n}}",
            "metrics": {"value": r"value=(\d+)"},
        },
        "variables": {"n": [1, 2]},
        "nb_runs": 2,
    }
    campaign = campaign_for(alice, data, "failing_alice")
    first = run_as(alice, snakemake_argv(python, campaign), cwd=alice_checkout)
    assert first.returncode == 0, first.stderr[-4000:]
    assert "FAILED: exit code 3: broken" in first.stderr
    done = statuses(alice_checkout, "failing_alice")
    assert sorted(s["status"] for s in done.values()) == ["failed", "failed", "ok", "ok"]

    switch.unlink()
    again = run_as(alice, [str(python), "-m", "perfsnake", "rerun-failed", "--config", f"campaign={campaign}"], cwd=alice_checkout)  # fmt: skip
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-4000:]
    after = statuses(alice_checkout, "failing_alice")
    assert {s["status"] for s in after.values()} == {"ok"}
    # The ok runs were not measured again; the failed ones were.
    for run, status in done.items():
        assert (after[run]["start"] == status["start"]) == (status["status"] == "ok"), run
    previous = list((alice_checkout / "results/failing_alice/runs").rglob("previous/attempt-1/status.json"))
    assert len(previous) == 2


def test_a_normal_users_campaign_killed_and_resumed(python, alice, alice_checkout):
    data = {
        "name": "killed_alice",
        "benchmark": {"type": "command", "command": "sleep 0.4; echo value={n}", "metrics": {"value": r"value=(\d+)"}},
        "variables": {"n": [1, 2, 3]},
        "nb_runs": 3,
    }
    campaign = campaign_for(alice, data, "killed_alice")
    results = alice_checkout / "results/killed_alice"
    proc = subprocess.Popen(
        command(alice, snakemake_argv(python, campaign)),
        cwd=alice_checkout,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while len(statuses(alice_checkout, "killed_alice")) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the campaign ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # What the kill left (an orphaned launcher finishing its run) ends by itself.
    while processes_under(results, "") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in processes_under(results, "") if alive(p)]
    before = {run: s["start"] for run, s in statuses(alice_checkout, "killed_alice").items()}
    assert 3 <= len(before) < 9

    unlock = run_as(alice, snakemake_argv(python, campaign, "--unlock"), cwd=alice_checkout)
    assert unlock.returncode == 0, unlock.stderr[-3000:]
    resumed = run_as(alice, snakemake_argv(python, campaign, "--rerun-incomplete"), cwd=alice_checkout)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-4000:]
    after = statuses(alice_checkout, "killed_alice")
    assert len(after) == 9 and {s["status"] for s in after.values()} == {"ok"}
    assert {run: after[run]["start"] for run in before} == before  # nothing finished was redone


@pytest.mark.parametrize(
    ("instrument", "needs"),
    [
        ({"pre_run_hooks": ["drop_caches"]}, "dropping the page cache needs root"),
        ({"wrappers": ["sched_timeline"]}, "root"),
    ],
)
def test_a_root_only_instrument_is_refused_in_one_line(python, alice, alice_checkout, instrument, needs):
    kind = next(iter(instrument.values()))[0]
    data = counting_campaign(f"refused_{kind}", **instrument)
    campaign = campaign_for(alice, data, data["name"])
    proc = run_as(alice, [str(python), "-m", "perfsnake", "validate", str(campaign)], cwd=alice_checkout)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(campaign) in lines[0] and next(iter(instrument)) in lines[0] and needs in lines[0]
    dry = run_as(alice, snakemake_argv(python, campaign, "-n"), cwd=alice_checkout)
    assert dry.returncode != 0 and needs in dry.stderr
    assert not (alice_checkout / "results" / data["name"]).exists()


def test_two_users_benchmarks_never_overlap(python, alice, bob, alice_checkout, tmp_path):
    """Bob starts while Alice's first run holds the machine, and Alice's runs
    go on only once Bob has said he waits: the two invocations certainly
    contend, whatever the machine's speed, and no two runs may overlap."""
    bob_checkout = checkout_for(bob)
    bobs_python = user_python(bob)
    go = Path(pwd.getpwnam(alice).pw_dir) / "go"
    go.unlink(missing_ok=True)
    slow = {
        "name": "overlap_alice",
        "benchmark": {"type": "command", "command": f"while [ ! -e {go} ]; do sleep 0.02; done; sleep 0.1; echo value={{n}}",
                      "metrics": {"value": r"value=(\d+)"}},
        "variables": {"n": [1, 2, 3]},
        "nb_runs": 2,
    }  # fmt: skip
    quick = {
        "name": "overlap_bob",
        "benchmark": {"type": "command", "command": "sleep 0.1; echo value={n}", "metrics": {"value": r"value=(\d+)"}},
        "variables": {"n": [1, 2, 3]},
        "nb_runs": 2,
    }
    logs = {user: (tmp_path / f"{user}.err").open("w") for user in (alice, bob)}
    # The default lock of every user: no PERFSNAKE_HOST_LOCK (the suite's own is private).
    first = subprocess.Popen(command(alice, snakemake_argv(python, campaign_for(alice, slow, "overlap_alice"))),
                             cwd=alice_checkout, stdout=subprocess.DEVNULL, stderr=logs[alice])  # fmt: skip
    deadline = time.monotonic() + 300
    runs = alice_checkout / "results/overlap_alice/runs"
    while not list(runs.glob("*/run-*/command.sh")) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    second = subprocess.Popen(command(bob, snakemake_argv(bobs_python, campaign_for(bob, quick, "overlap_bob"))),
                              cwd=bob_checkout, stdout=subprocess.DEVNULL, stderr=logs[bob])  # fmt: skip
    waiting = ""
    while not waiting and second.poll() is None and time.monotonic() < deadline:
        waiting = next(
            (line for line in (tmp_path / f"{bob}.err").read_text().splitlines() if "waiting for" in line), ""
        )
        time.sleep(0.05)
    go.touch()
    for user, proc in ((alice, first), (bob, second)):
        assert proc.wait(timeout=600) == 0, (tmp_path / f"{user}.err").read_text()[-4000:]
    assert "another benchmark" in waiting and alice in waiting, waiting
    intervals = sorted(
        (status["start_epoch"], status["end_epoch"], user)
        for user, checkout, name in ((alice, alice_checkout, "overlap_alice"), (bob, bob_checkout, "overlap_bob"))
        for status in statuses(checkout, name).values()
    )
    assert len(intervals) == 12
    overlapping = [(a, b) for a, b in zip(intervals, intervals[1:]) if b[0] < a[1]]
    assert overlapping == [], f"{len(overlapping)} of {len(intervals) - 1} neighbouring run pairs overlap"


@pytest.mark.ready
def test_the_default_campaigns_as_a_normal_user_match_roots(python, alice, alice_checkout, tmp_path):
    """`make run`'s campaigns (config/config.yaml: heater and LevelDB, its build
    fetched with apt-get source as the user) give the CSVs root's give: the
    same columns, records, run counts and statuses, the same metadata keys."""
    proc = run_as(alice, [str(python), "-m", "snakemake", "--cores", "1", "all"], cwd=alice_checkout, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    root_checkout = shutil.copytree(ROOT, tmp_path / "root", ignore=ROOT_COPY_IGNORE, symlinks=True)
    roots_proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "all"], cwd=root_checkout,
                               capture_output=True, text=True, timeout=1800, check=False)  # fmt: skip
    assert roots_proc.returncode == 0, roots_proc.stderr[-4000:]
    for name, keys in (("heater", ["cpu", "run"]), ("leveldb", ["bench_name", "nb_threads", "reads", "run"])):
        mine = read_results(alice_checkout / f"results/{name}/{name}.csv")
        roots = read_results(root_checkout / f"results/{name}/{name}.csv")
        assert list(mine.columns) == list(roots.columns), name
        assert sorted(mine[keys].astype(str).values.tolist()) == sorted(roots[keys].astype(str).values.tolist())
        assert set(mine["status"]) == set(roots["status"]) == {"ok"}, name
        assert mine["ops_per_s"].notna().all() and (mine["ops_per_s"] > 0).all()
        assert set(read_metadata(alice_checkout / f"results/{name}/{name}.csv")) == set(
            read_metadata(root_checkout / f"results/{name}/{name}.csv")
        )
