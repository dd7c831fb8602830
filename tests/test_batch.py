"""Runs batched into jobs (`batch`), resume still per run: the README's
promises of short runs, through the real workflow.

Deterministic points are reached with a FIFO: the chosen run touches a file
the test waits for, then blocks reading the FIFO until the test opens it (or,
on a resume, until a file says it may go on). No timing is relied upon.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from helpers import ROOT, SNAKEMAKE, jobs_run, mtimes, snakemake, statuses, write_campaign
from snakemake_logger_plugin_perfsnake.progress import BATCH_RULE, Progress
from test_decide import campaign as decide_campaign

from perfsnake.campaign import load_campaign
from perfsnake.campaign_csv import read_csv
from perfsnake.errors import CampaignError
from perfsnake.planning import index_from_config

#: what every run of a batch leaves in its directory, as a run job's run does
RUN_FILES = ("command.sh", "stdout.txt", "stderr.txt", "status.json", "machine.json", "result.json")


def campaign(name: str = "c", command: str = "echo value={x}", **extra: object) -> dict:
    data: dict[str, object] = {
        "name": name,
        "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\S+)"}},
        "variables": {"x": [1, 2, 3]},
        "nb_runs": 3,
    }
    data.update(extra)
    return data


def blocking(tmp: Path, at: str, then: str = "echo value={x}") -> str:
    """A command whose run `at` (e.g. x-2/run-2) says it started, then blocks on
    the FIFO until the test opens it or `released` exists."""
    fifo = tmp / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    hold = f"[ -e {tmp}/released ] || {{{{ touch {tmp}/started; cat {fifo} > /dev/null; }}}}"
    return f"case {{run_dir}} in */{at}) {hold};; esac; {then}"


def release(tmp: Path) -> None:
    """Let the blocked run go on: the FIFO's reader sees its end."""
    fd = os.open(tmp / "fifo", os.O_WRONLY)
    os.close(fd)


def wait_for(condition: Callable[[], object], what: str, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def lock_env(tmp: Path) -> dict[str, str]:
    """A host lock of this test's own: its invocations contend with each other only."""
    return {"PERFSNAKE_HOST_LOCK": str(tmp / "host.lock")}


def argv(camp: Path) -> list[str]:
    return [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
            "--configfile", str(ROOT / "config/config.yaml"), "--quiet", "host", "--cores", "1", "all",
            "--config", f"campaign={camp}"]  # fmt: skip


def start(workdir: Path, camp: Path, env: dict[str, str], stderr: Path) -> subprocess.Popen:
    with stderr.open("w") as err:
        return subprocess.Popen(argv(camp), cwd=workdir, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True, env={**os.environ, **env})  # fmt: skip


def order(workdir: Path, name: str = "c") -> list[str]:
    """The runs in the order they started."""
    return [k for k, s in sorted(statuses(workdir, name).items(), key=lambda kv: kv[1]["start_epoch"])]


def interleaved(records: int = 3, runs: int = 3) -> list[str]:
    return [f"x-{x}/run-{i}" for i in range(1, runs + 1) for x in range(1, records + 1)]


def fingerprints(workdir: Path, name: str = "c") -> dict[str, tuple[int, str]]:
    runs = workdir / "results" / name / "runs"
    return {k: (m, (runs / k / "status.json").read_text()) for k, m in mtimes(workdir, name).items()}


# ---- the key ------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "problem"), [(0, "batch: 0 is less than the minimum of 1"), ("some", "batch: ")])
def test_a_bad_batch_is_refused_in_one_line(tmp_path, value, problem):
    path = write_campaign(tmp_path, campaign(batch=value))
    with pytest.raises(CampaignError) as err:
        load_campaign(path)
    assert err.value.key == "batch" and str(path) in str(err.value) and "\n" not in str(err.value)
    assert problem in str(err.value), str(err.value)


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"control": True, "wrappers": ["time"]}, "control runs interleave"),
        ({"wrappers": [{"type": "perf_record", "frequency": 499}]}, "post-process"),
    ],
)
def test_a_batch_a_campaign_cannot_have_is_refused_in_one_line(tmp_path, extra, why):
    path = write_campaign(tmp_path, campaign(batch=4, **extra))
    try:
        load_campaign(path)
    except CampaignError as exc:  # an instrument this machine lacks: nothing to check here
        pytest.skip(str(exc))
    with pytest.raises(CampaignError) as err:
        index_from_config({"campaign": str(path)}, measuring=False)
    text = str(err.value)
    assert err.value.key == "batch" and str(path) in text and why in text and "batch: 1 or auto" in text
    assert "\n" not in text


@pytest.mark.parametrize(("timeout_s", "size"), [(None, 1), (2, 1), (1, 60), (0.1, 600), (0.01, 1000)])
def test_auto_batches_runs_their_timeout_bounds_to_a_second(tmp_path, timeout_s, size):
    path = write_campaign(tmp_path, campaign(timeout_s=timeout_s))
    index = index_from_config({"campaign": str(path)}, measuring=False)
    assert index.batches.size("c") == size
    explicit = write_campaign(tmp_path, campaign(timeout_s=timeout_s, batch=7), "d.yaml")
    assert index_from_config({"campaign": str(explicit)}, measuring=False).batches.size("c") == 7


def _store_with_runs(url: str, campaign_name: str, wall_s: float, runs: int = 30) -> None:
    import socket

    from perfsnake.history.store import Store, run_key

    host, record = socket.gethostname(), json.dumps({"x": 1})
    rows = [{"run_key": run_key(campaign_name, host, record, i, f"2026-11-01T00:00:{i:02d}Z"), "campaign": campaign_name,
             "hostname": host, "record": record, "run": i, "status": "ok", "start": f"2026-11-01T00:00:{i:02d}Z",
             "end": None, "wall_s": wall_s * (1 + (i % 3 - 1) / 10), "metrics": "{}", "versions": None}
            for i in range(1, runs + 1)]  # fmt: skip
    Store.open(url).record({"campaign": campaign_name, "hostname": host, "recorded_at": "now", "source": "import",
                            "first_start": rows[0]["start"], "results_dir": ""}, rows)  # fmt: skip


@pytest.mark.parametrize(("wall_s", "size"), [(0.002, 1000), (0.1, 600), (0.5, 120), (2.0, 1)])
def test_auto_sizes_a_fresh_directorys_batches_from_measured_run_times(tmp_path, monkeypatch, wall_s, size):
    """In a fresh results directory `batch: auto` reads the campaign's
    measured run time on this machine from the results store (its median),
    before its timeout; a directory keeps the size it started with."""
    from perfsnake import run_times

    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    path = write_campaign(tmp_path, campaign(timeout_s=1))
    config = {"campaign": str(path)}

    def index():
        return index_from_config(config, measuring=False, run_times=run_times.lookup(url))

    assert index().batches.size("c") == 60  # nothing measured: the timeout's
    _store_with_runs(url, "c", wall_s)
    _store_with_runs(url, "other", 0.0001)  # another campaign's runs say nothing of this one's
    batches = index().batches
    assert batches.size("c") == size and batches.reason("c") == f"median run {wall_s:.3g} s of 30 in the results store"
    # Once a batch job recorded the size, the directory keeps it, whatever is measured later.
    (tmp_path / "results/c").mkdir(parents=True)
    (tmp_path / "results/c/batch-size.json").write_text(json.dumps({"size": 9, "reason": "timeout_s 1"}))
    assert index().batches.size("c") == 9
    # Runs made one job each stay so (a batch would measure again runs without its stamp).
    (tmp_path / "results/c/batch-size.json").unlink()
    (tmp_path / "results/c/runs/x-1/run-1").mkdir(parents=True)
    (tmp_path / "results/c/runs/x-1/run-1/status.json").write_text('{"status": "ok"}')
    assert index().batches.size("c") == 1
    # Also while that run is measured again (Snakemake deleted its status.json
    # first), and whichever run a job made: a resume must not batch them.
    (tmp_path / "results/c/runs/x-1/run-1/status.json").unlink()
    assert index().batches.size("c") == 1
    shutil.rmtree(tmp_path / "results/c/runs/x-1")
    (tmp_path / "results/c/runs/x-2/run-3").mkdir(parents=True)
    assert index().batches.size("c") == 1
    # A batch job's markers alone are not runs made one job each.
    shutil.rmtree(tmp_path / "results/c/runs/x-2")
    (tmp_path / "results/c/runs/batches").mkdir()
    assert index().batches.size("c") == size


# ---- through Snakemake --------------------------------------------------------------------
@pytest.mark.e2e
def test_batches_run_every_run_once_in_the_campaigns_order_and_nothing_again(tmp_path):
    camp = write_campaign(tmp_path, campaign(batch=4))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all", env=lock_env(tmp_path))
    assert jobs_run(proc, "run_batch") == 3 and jobs_run(proc, "run") == 0
    assert order(tmp_path) == interleaved()
    # Progress counts runs, not jobs: a line per run, at most a few a second
    # in a batch (the log has each written; the terminal's plain lines are at
    # most one a second), always each batch's first and last run's, with its ETA.
    (log,) = (tmp_path / ".snakemake/log").glob("*.snakemake.log")
    lines = [ln for ln in log.read_text().splitlines() if ln.startswith("[perfsnake] c: run ")]
    ks = [int(ln.split()[3].split("/")[0]) for ln in lines]
    assert {1, 4, 5, 8, 9} <= set(ks) and ks == sorted(set(ks)), lines  # batches of 4, 4 and 1
    assert all(ln.split()[3].endswith("/9") for ln in lines), lines
    assert all("(ETA " in ln and "ETA unknown" not in ln for ln in lines[1:]), lines
    # The terminal's last line counts the last run, with a measured ETA.
    shown = [ln for ln in proc.stderr.splitlines() if ln.startswith("[perfsnake] c: run ")]
    assert shown[-1].startswith("[perfsnake] c: run 9/9 x-3/run-3 (ETA "), shown
    assert "unknown" not in shown[-1], shown
    for run in interleaved():
        for name in RUN_FILES:
            assert (tmp_path / "results/c/runs" / run / name).is_file(), (run, name)
    assert sorted(read_csv(tmp_path / "results/c/c.csv")["value"]) == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    again = snakemake(tmp_path, camp, "--cores", "1", "all", env=lock_env(tmp_path))
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.e2e
def test_auto_records_its_choice_for_the_directory(tmp_path):
    camp = write_campaign(tmp_path, campaign(timeout_s=1))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all", env=lock_env(tmp_path))
    assert jobs_run(proc, "run_batch") == 1 and jobs_run(proc, "run") == 0
    recorded = json.loads((tmp_path / "results/c/batch-size.json").read_text())
    assert recorded == {"size": 60, "reason": "timeout_s 1"}


@pytest.mark.e2e
def test_a_new_batch_size_keeps_the_runs_and_a_changed_command_measures_them_again(tmp_path):
    """The batch jobs run again when the plan's cut changes, but keep every
    run measured under the same spec; a changed command is a new spec."""
    camp = write_campaign(tmp_path, campaign(batch=4))
    snakemake(tmp_path, camp, "--cores", "1", "all", env=lock_env(tmp_path))
    first = fingerprints(tmp_path)
    write_campaign(tmp_path, campaign(batch=5))
    resized = snakemake(tmp_path, camp, "--cores", "1", "all", env=lock_env(tmp_path))
    assert jobs_run(resized, "run_batch") == 2 and fingerprints(tmp_path) == first
    write_campaign(tmp_path, campaign(command="echo value={x}; true", batch=5))
    changed = snakemake(tmp_path, camp, "--cores", "1", "all", env=lock_env(tmp_path))
    assert jobs_run(changed, "run_batch") == 2
    after = fingerprints(tmp_path)
    assert sorted(after) == sorted(first) and all(after[k][0] != first[k][0] for k in first)


@pytest.mark.e2e
@pytest.mark.parametrize("order_key", ["interleaved", "random"])
def test_batching_leaves_the_recorded_order_unchanged(tmp_path, order_key):
    orders = []
    for size in (1, 4):
        work = tmp_path / f"batch-{size}"
        camp = write_campaign(work, campaign(order=order_key, seed=3, batch=size))
        snakemake(work, camp, "--cores", "1", "all", env=lock_env(tmp_path))
        orders.append(order(work))
    assert orders[0] == orders[1]
    if order_key == "interleaved":
        assert orders[1] == interleaved()


@pytest.mark.e2e
def test_a_batch_killed_in_its_middle_keeps_its_finished_runs(tmp_path):
    """SIGKILL of the workflow's process group while the fifth run of a batch
    of six runs; the README's resume runs only the five missing runs."""
    camp = write_campaign(tmp_path, campaign(command=blocking(tmp_path, "x-2/run-2"), batch=6))
    proc = start(tmp_path, camp, lock_env(tmp_path), tmp_path / "first.err")
    wait_for(lambda: (tmp_path / "started").exists() or proc.poll() is not None, "the fifth run")
    assert proc.poll() is None, (tmp_path / "first.err").read_text()[-3000:]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # The orphaned launcher notices its parent died and stops the benchmark.
    wait_for(
        lambda: not subprocess.run(["pgrep", "-f", f"{tmp_path}/results"], capture_output=True, check=False).stdout,
        "the launcher to go",
        timeout=60,
    )
    done = fingerprints(tmp_path)
    assert sorted(done) == sorted(interleaved()[:4])
    assert not (tmp_path / "results/c/runs/batches/r1-b1.json").exists()
    (tmp_path / "released").touch()
    snakemake(tmp_path, camp, "--unlock", "all")
    resume = snakemake(tmp_path, camp, "--cores", "1", "all", "--rerun-incomplete", env=lock_env(tmp_path))
    after = fingerprints(tmp_path)
    assert sorted(after) == sorted(interleaved())
    assert {k: after[k] for k in done} == done  # content and mtime: not measured again
    assert jobs_run(resume, "run_batch") == 2 and jobs_run(resume, "run") == 0
    log = (tmp_path / "results/c/logs/batches/r1-b1.log").read_text()
    assert log.startswith("2 run(s) measured, 4 kept"), log
    for run in interleaved():
        for name in RUN_FILES:
            assert (tmp_path / "results/c/runs" / run / name).is_file(), (run, name)
    frame = read_csv(tmp_path / "results/c/c.csv")
    assert len(frame) == 9 and set(frame["status"]) == {"ok"}
    # The resumed runs went on in the campaign's order.
    assert order(tmp_path) == interleaved()


@pytest.mark.e2e
def test_a_failed_run_in_a_batch_is_data_and_rerun_failed_reruns_exactly_it(tmp_path):
    fixed = tmp_path / "fixed"
    command = f"case {{run_dir}} in */x-2/run-1) [ -e {fixed} ] || {{{{ echo broken >&2; exit 3; }}}};; esac; echo value={{x}}"
    camp = write_campaign(tmp_path, campaign(command=command, batch=9))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all", env=lock_env(tmp_path))
    assert jobs_run(proc, "run_batch") == 1
    frame = read_csv(tmp_path / "results/c/c.csv")
    status = dict(zip(frame["x"].astype(str) + "/" + frame["run"].astype(str), frame["status"], strict=True))
    assert status.pop("2/1") == "failed" and set(status.values()) == {"ok"} and len(status) == 8
    assert "run x-2/run-1 FAILED: exit code 3: broken" in proc.stderr
    assert "1 run(s) failed, timed out or did not parse" in proc.stdout + proc.stderr
    before = fingerprints(tmp_path)
    fixed.touch()
    env = {**os.environ, **lock_env(tmp_path), "PATH": f"{Path(SNAKEMAKE).parent}:{os.environ['PATH']}"}
    rerun = subprocess.run(
        [str(Path(SNAKEMAKE).with_name("python")), "-m", "perfsnake", "rerun-failed", "--config", f"campaign={camp}", "--",
         "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
         "--configfile", str(ROOT / "config/config.yaml"), "--quiet", "host"],
        cwd=tmp_path, capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=300, check=False,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert jobs_run(rerun, "run_batch") == 1 and jobs_run(rerun, "run") == 0
    after = fingerprints(tmp_path)
    changed = sorted(k for k in after if after[k] != before.get(k))
    assert changed == ["x-2/run-1"]
    log = (tmp_path / "results/c/logs/batches/r1-b1.log").read_text()
    assert log.startswith("1 run(s) measured, 8 kept"), log
    assert set(read_csv(tmp_path / "results/c/c.csv")["status"]) == {"ok"}
    kept = tmp_path / "results/c/runs/x-2/run-1/previous/attempt-1"
    assert "broken" in (kept / "stderr.txt").read_text()


@pytest.mark.e2e
def test_two_invocations_with_batches_never_overlap(tmp_path):
    """Invocation A blocks inside a run of its batch; B, started then, waits
    for the host lock (it says so) instead of running beside it; once A's
    run ends, the two go on, a run at a time whoever takes the lock between
    two runs of a batch: no two recorded run intervals overlap."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    camp_a = write_campaign(
        a, campaign(name="a", command=blocking(a, "x-1/run-2", "sleep 0.05; echo value={x}"), batch=4)
    )
    camp_b = write_campaign(b, campaign(name="b", command="sleep 0.05; echo value={x}", batch=4))
    env = lock_env(tmp_path)
    first = start(a, camp_a, env, tmp_path / "a.err")
    wait_for(lambda: (a / "started").exists() or first.poll() is not None, "A's blocked run")
    second = start(b, camp_b, env, tmp_path / "b.err")
    wait_for(lambda: "[perfsnake] waiting for" in (tmp_path / "b.err").read_text() or second.poll() is not None,
             "B to wait for the host lock")  # fmt: skip
    assert not (b / "results/b/runs").exists() or not statuses(b, "b")
    release(a)
    for proc, err in ((first, "a.err"), (second, "b.err")):
        assert proc.wait(timeout=600) == 0, (tmp_path / err).read_text()[-3000:]
    spans = sorted(
        (s["start_epoch"], s["end_epoch"], f"{w.name}:{k}") for w in (a, b) for k, s in statuses(w, w.name).items()
    )
    assert len(spans) == 18
    for (_s0, e0, r0), (s1, _e1, r1) in zip(spans, spans[1:]):
        assert s1 >= e0, (r0, r1, spans)


def test_the_live_line_counts_a_batch_jobs_runs():
    """The logger plugin counts runs, not jobs: a batch job's runs are counted
    from perfsnake's run lines, each ending when the next starts (the last
    when the job ends), and the ETA comes from their times."""
    p = Progress()
    p.plan({"c": {"total": 6, "done": 1, "adaptive": False}})
    p.job_started(7, BATCH_RULE, {"campaign": "c", "batch": "r1-b1"}, 100.0)
    for k, when in enumerate((100.5, 102.5, 104.5)):
        p.batched_run("c", f"x-1/run-{k + 2}", when)
    assert (p.campaigns["c"].done, p.campaigns["c"].mean()) == (3, 2.0)
    assert p.doing() == "now c x-1/run-4"
    # 3 runs left at 2 s each, the current one 1 s in.
    assert p.estimate(105.5).seconds == pytest.approx(5.0)
    p.job_ended(7, 106.5, ok=True)
    assert (p.campaigns["c"].done, p.campaigns["c"].measured) == (4, 3)
    # A line that follows runs without a line of their own counts them too.
    p.job_started(9, BATCH_RULE, {"campaign": "c", "batch": "r1-b2"}, 110.0)
    p.batched_run("c", "x-2/run-1", 110.0)
    p.batched_run("c", "x-2/run-4", 116.0, skipped=2)
    assert (p.campaigns["c"].done, p.campaigns["c"].mean()) == (7, 2.0)
    p.job_ended(9, 118.0, ok=True)
    assert p.campaigns["c"].done == 8
    # A run job's line is counted by its job's events, not twice.
    p.job_started(8, "run", {"campaign": "c", "record": "x-1", "run": "5"}, 120.0)
    p.batched_run("c", "x-1/run-5", 120.0)
    p.job_ended(8, 121.0, ok=True)
    assert p.campaigns["c"].done == 9


def test_a_batchs_progress_lines_are_spaced_out_and_count_the_runs_between(monkeypatch):
    """In a batch job a run's progress line waits BATCH_LINE_INTERVAL_S after
    the one before; the next line says how many runs went without one; the
    batch's first and last run and the campaign's last always have theirs."""
    from perfsnake.stages import run

    said: list[dict] = []
    monkeypatch.setattr(run, "say", lambda line, fields, level=0: said.append(fields))
    now = [0.0]
    lines = run.BatchLines(clock=lambda: now[0])
    monkeypatch.setattr(run._batch, "lines", lines, raising=False)
    progress = run.Progress(total=12)
    for k, at in enumerate((0.0, 0.05, 0.1, 0.25, 0.3, 0.5, 0.55), start=1):
        now[0] = at
        lines.final = k == 7
        run._announce(progress, "c", f"x-1/run-{k}")
    assert [(f["k"], f.get("skipped", 0)) for f in said] == [(1, 0), (4, 2), (6, 1), (7, 0)]
    said.clear()
    lines.final = False
    for k in range(8, 13):  # all within the interval: the campaign's last run still has its line
        run._announce(progress, "c", f"x-1/run-{k}")
    assert [(f["k"], f.get("skipped", 0)) for f in said] == [(12, 4)]
    # Outside a batch, every run has its line.
    monkeypatch.setattr(run._batch, "lines", None)
    said.clear()
    run._announce(run.Progress(total=3), "c", "x-1/run-1")
    run._announce(run.Progress(total=3), "c", "x-1/run-2")
    assert len(said) == 2


# ---- adaptive campaigns ---------------------------------------------------------------------
@pytest.mark.e2e
def test_the_precision_loop_adds_its_rounds_as_batches(tmp_path):
    """As test_promises' max_runs test, batched: the rounds' runs run as
    batches (markers of rounds after the first), exactly max_runs each."""
    data = campaign(
        command='echo x={x} value=$(basename "$PWD" | tr -dc 0-9)',
        precision={"metric": "value", "target_rel_ci": 0.001, "min_runs": 3, "max_runs": 7},
        variables={"x": [1, 2]},
        batch=2,
    )
    del data["nb_runs"]
    camp = write_campaign(tmp_path, data)
    proc = snakemake(tmp_path, camp, "--cores", "1", "all", env=lock_env(tmp_path))
    assert jobs_run(proc, "run") == 0 and jobs_run(proc, "run_batch") >= 4
    assert sorted(statuses(tmp_path, "c")) == sorted(f"x-{x}/run-{i}" for x in (1, 2) for i in range(1, 8))
    markers = sorted(p.name for p in (tmp_path / "results/c/runs/batches").glob("*.json"))
    assert "r1-b1.json" in markers and any(not m.startswith("r1-") for m in markers), markers
    with (tmp_path / "results/c/summary.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["metric"] == "value"]
    assert {(r["n"], r["precision_target_met"], float(r["mean"])) for r in rows} == {("7", "False", 4.0)}
    again = snakemake(tmp_path, camp, "--cores", "1", "all", env=lock_env(tmp_path))
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.e2e
def test_decide_with_batches_decides_as_without(tmp_path):
    """statistics.decide's rounds as batches: the same runs in the same order,
    so the same values and the same decisions as one job per run."""
    decided = []
    for batch in (1, 8):
        work = tmp_path / f"batch-{batch}"
        # test_decide's campaign: seeded noise by run count, so the same order gives the same values.
        camp = write_campaign(work, decide_campaign(work, {"min_effect": "3%", "budget_s": 600}, batch=batch))
        proc = snakemake(work, camp, "--cores", "1", "all", env=lock_env(tmp_path))
        assert jobs_run(proc, "run" if batch == 1 else "run_batch") > 0
        assert jobs_run(proc, "run_batch" if batch == 1 else "run") == 0
        decided.append((work / "results/d/decisions.csv").read_text())
        rounds = sorted((work / "results/d/precision").glob("round-*.json"))
        assert len(rounds) > 1 and json.loads(max(rounds, key=lambda p: int(p.stem[6:])).read_text())["done"]
    assert decided[0] == decided[1]
    assert "different" in decided[1] and "equivalent" in decided[1]


def test_the_schema_documents_batch():
    schema = yaml.safe_load((ROOT / "config/schemas/campaign.schema.yaml").read_text())
    assert schema["properties"]["batch"]["default"] == "auto"
    assert "`batch`" in (ROOT / "config/README.md").read_text()


# ---- a batch's status.json: one sync a batch, not one fsync a run -------------------------
def test_a_batchs_runs_leave_fsync_to_one_sync_of_the_batch(tmp_path):
    import dataclasses

    from perfsnake.platforms import local
    from perfsnake.stages import run as run_stage

    # A batched run's launcher is told to skip the fsync (run_stage.execute_run;
    # psrun's side: test_launcher.py::test_status_fsync_can_be_left_to_the_caller).
    for durable in (True, False):
        argv = dataclasses.replace(local.Local(), durable_status=durable).launcher_argv(tmp_path, tmp_path, 1.0)
        assert ("--no-fsync" in argv) == (not durable)
    run_stage.sync_results(tmp_path)
    run_stage.sync_results(tmp_path / "missing")  # falls back to os.sync
    # Through the workflow: every run recorded, the batch synced before its marker.
    camp = write_campaign(tmp_path, campaign(batch=9))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all", env=lock_env(tmp_path))
    assert jobs_run(proc, "run_batch") == 1
    for run in interleaved():
        assert statuses(tmp_path, "c")[run]["status"] == "ok"


def test_a_batched_runs_spec_is_command_sh_header_or_an_earlier_versions_file(tmp_path):
    """What a batched run was measured under is the `# spec:` line of its
    command.sh (one file fewer per run); a directory an earlier version made
    keeps its runs through their `.run-spec`."""
    from perfsnake.stages import run as run_stage

    new, old, none = (tmp_path / name for name in ("new", "old", "none"))
    for d in (new, old, none):
        d.mkdir()
    (new / "command.sh").write_text(run_stage.command_text(new, "true", header={"run": 1, "spec": "abc"}))
    (old / "command.sh").write_text(run_stage.command_text(old, "echo '# spec: not a header'"))
    (old / ".run-spec").write_text("def\n")
    (none / "command.sh").write_text(run_stage.command_text(none, "true", header={"run": 1}))
    assert [run_stage._recorded_spec(d) for d in (new, old, none)] == ["abc", "def", None]
