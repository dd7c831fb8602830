"""Promises of the host lock, fleets and the results store (issue 43), each
observed for real through the workflow or the store, never through timing:
every wait is an upper bound on something that must happen, and each test
fails when its promise is broken (the mutation each was checked against is in
its docstring).

- a batch gives the host benchmark lock up between its runs (docs/short-runs.md);
- a fleet's hosts run side by side (docs/reliability.md, config/README.md "Fleets");
- SQLite writers at once, and a locked store (docs/history.md);
- the history's CSV export, the history gate's same-host and same-state
  filters, the report's history page, the shipped regression demo (docs/history.md).
"""

from __future__ import annotations

import csv
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
import sshd
import yaml
from helpers import ROOT, SNAKEMAKE, jobs_run, snakemake, statuses, store_writer, write_campaign

from perfsnake.campaign_csv import read_csv
from perfsnake.history.store import Store, run_key

DOCS = ROOT / "docs"


def wait_for(condition: Callable[[], object], what: str, timeout: float = 300.0) -> None:
    """Poll `condition` until it holds; `timeout` only bounds a wait for what must happen."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def workflow_argv(camp: Path, *args: str) -> list[str]:
    return [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
            "--configfile", str(ROOT / "config/config.yaml"), "--quiet", "host", "--cores", "1", "all", *args,
            "--config", f"campaign={camp}"]  # fmt: skip


def start_workflow(workdir: Path, camp: Path, env: dict[str, str], stderr: Path) -> subprocess.Popen:
    with stderr.open("w") as err:
        return subprocess.Popen(workflow_argv(camp), cwd=workdir, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True, env={**os.environ, **env})  # fmt: skip


def in_sleep(pid: int) -> bool:
    """Whether the process sleeps in nanosleep: SQLite's busy handler waiting
    for a lock (nothing else in our writers sleeps)."""
    try:
        return "nanosleep" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


# ---- 1. a batch gives the host lock up between its runs ------------------------------------

#: Another invocation's run on this machine: takes the host lock as runs do
#: (hostlock.host_lock, queued behind the turnstile while it waits), says
#: when it got it, holds it until told to go, says when it let it go.
TAKER = r"""
import os, sys, time
from pathlib import Path
from perfsnake import hostlock
out = Path(sys.argv[1])
(out / "trying").touch()
with hostlock.host_lock():
    (out / "taken").write_text(repr(time.time()))
    deadline = time.monotonic() + 300
    while not (out / "letgo").exists():
        if time.monotonic() > deadline:
            sys.exit("never told to let go")
        time.sleep(0.02)
    (out / "released").write_text(repr(time.time()))
"""


@pytest.mark.e2e
def test_a_batch_gives_the_host_lock_up_between_its_runs(tmp_path):
    """docs/short-runs.md: the host lock is "taken before the run's pre-run
    hooks and released after its post-run hooks, as for a run job, so another
    invocation may run between two runs of a batch, never inside one".

    A batch of nine runs blocks inside its first run (it holds the lock);
    another process then asks for the same lock file. Once the first run
    ends, that process must get the lock while the batch still has runs to do,
    and the batch's next run must wait for it (the batch says so) and start
    only after it let go. Checked against a batch that holds the lock for the
    whole batch (hostlock.host_lock keeping its descriptor): the other process
    gets the lock only once the batch ended, the batch never waits, the test
    fails on the waiting line."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    hold = f"touch {tmp_path}/started; cat {fifo} > /dev/null"
    command = f"case {{run_dir}} in */x-1/run-1) {hold};; esac; echo value={{x}}"
    data = {"name": "c", "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\S+)"}},
            "variables": {"x": [1, 2, 3]}, "nb_runs": 3, "batch": 9}  # fmt: skip
    camp = write_campaign(tmp_path, data)
    lock = tmp_path / "host.lock"
    err = tmp_path / "workflow.err"
    proc = start_workflow(tmp_path, camp, {"PERFSNAKE_HOST_LOCK": str(lock)}, err)
    taker = None
    try:
        wait_for(lambda: (tmp_path / "started").exists() or proc.poll() is not None, "the batch's first run")
        assert proc.poll() is None, err.read_text()[-3000:]
        out = tmp_path / "taker"
        out.mkdir()
        taker = subprocess.Popen(
            [sys.executable, "-c", TAKER, str(out)], env={**os.environ, "PERFSNAKE_HOST_LOCK": str(lock)}
        )
        wait_for(lambda: (out / "trying").exists() or taker.poll() is not None, "the other process to ask")
        assert not (out / "taken").exists(), "the lock was free while the batch ran its first run"
        os.close(os.open(fifo, os.O_WRONLY))  # the first run ends
        wait_for(lambda: (out / "taken").exists() or taker.poll() is not None, "the other process to get the lock")
        # The batch goes on to its next run and finds the lock taken: it waits, and says so.
        wait_for(lambda: "[perfsnake] waiting for" in err.read_text() or proc.poll() is not None,
                 "the batch to wait for the lock", timeout=120)  # fmt: skip
        assert proc.poll() is None, "the batch ended without waiting for the lock:\n" + err.read_text()[-3000:]
        (out / "letgo").touch()
        assert taker.wait(timeout=300) == 0
        assert proc.wait(timeout=600) == 0, err.read_text()[-3000:]
    finally:
        for p in (proc, taker):
            if p is not None and p.poll() is None:
                p.kill()
    taken, released = float((out / "taken").read_text()), float((out / "released").read_text())
    runs = statuses(tmp_path, "c")
    assert len(runs) == 9 and {s["status"] for s in runs.values()} == {"ok"}
    before = sorted(k for k, s in runs.items() if s["end_epoch"] <= taken)
    after = sorted(k for k, s in runs.items() if s["start_epoch"] >= released)
    # Every run is entirely before the other process's hold or after it; some on each side.
    assert "x-1/run-1" in before and after and sorted(before + after) == sorted(runs), (taken, released, runs)
    assert list((tmp_path / "results/c/logs/batches").glob("*.log")), "the runs were not one batch"


# ---- 2. a fleet's hosts run at the same time -------------------------------------------------


@pytest.fixture
def two_hosts(tmp_path):
    if not Path(sshd.SSHD).exists():
        pytest.skip("openssh-server is not installed (scripts/setup/apt.sh installs it)")
    servers = {h: sshd.start(tmp_path / f"sshd-{h}") for h in ("alpha", "beta")}
    yield servers
    for server in servers.values():
        sshd.stop(server)


@pytest.mark.e2e
def test_a_fleets_hosts_run_at_the_same_time(tmp_path, tmp_path_factory, two_hosts):
    """config/README.md "Fleets": the campaign runs on each host "in parallel
    across hosts and one run at a time on each"; docs/reliability.md: "a
    fleet's hosts run side by side".

    A rendezvous: each host's run says it arrived and waits (60 s at most)
    for the other host's run to arrive. Hosts run one after another: the
    first run gives up, fails, and the test with it. Checked against fleet
    runs that also hold `bench_lock` (planning.Runs.locks): the runs are
    serial, the first fails after its deadline. (It found that a host's
    build, taking two of this machine's cores for work done on the host,
    could wait for another host's run on `--cores` = the number of hosts:
    planning.Builds.threads now gives such builds one core.)"""
    from test_fleet import fleet_platform

    # Outside the workflow's directory: a remote host maps paths under it to its remote_dir.
    meet = tmp_path_factory.mktemp("meet")
    wait = (f"end=$(( $(date +%s) + 60 )); while [ ! -e {meet}/alpha ] || [ ! -e {meet}/beta ]; do "
            f"[ $(date +%s) -lt $end ] || exit 9; sleep 0.05; done")  # fmt: skip
    data = {
        "name": "f",
        "benchmark": {"type": "command", "build": "echo built > marker",
                      "command": f"touch {meet}/{{host}}; {wait}; echo value={{x}}",
                      "metrics": {"value": r"value=(\S+)"}},
        "variables": {"x": [1]},
        "nb_runs": 1,
        "timeout_s": 300,
        "hosts": ["alpha", "beta"],
        "platform": fleet_platform(tmp_path, two_hosts),
    }  # fmt: skip
    camp = write_campaign(tmp_path, data)
    proc = snakemake(tmp_path, camp, "--cores", "2", "all", check=False)
    runs = statuses(tmp_path, "f")
    assert sorted(runs) == ["host-alpha/x-1/run-1", "host-beta/x-1/run-1"], proc.stderr[-3000:]
    assert {k: s["status"] for k, s in runs.items()} == dict.fromkeys(runs, "ok"), proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = (runs[f"host-{h}/x-1/run-1"] for h in ("alpha", "beta"))
    # What made the rendezvous miss now and then: a host's build holding two
    # of this machine's cores (Snakemake's job block says "threads: 2").
    # Each job's block: its header and its indented lines (two jobs started at
    # once may print their blocks with no blank line between them).
    text = proc.stdout + proc.stderr
    builds = re.findall(r"^(?:local)?rule build:\n(?:    .*\n?)*", text, re.M)
    assert len(builds) == 2 == jobs_run(proc, "build"), text[-6000:]
    assert not any("threads: 2" in block for block in builds), builds
    assert a["start_epoch"] < b["end_epoch"] and b["start_epoch"] < a["end_epoch"], (a, b)


# ---- 3, 4. SQLite writers at once, a locked store ------------------------------------------

#: The store writer's set-up: a marker file at its first INSERT, from when it
#: may have to wait for the store (argv[3]).
FIRST_WRITE = """
import sqlalchemy as sa
marker = Path(sys.argv[3])

@sa.event.listens_for(store.engine, "before_cursor_execute")
def _about_to(conn, cursor, statement, *args):
    if statement.lstrip().upper().startswith("INSERT"):
        marker.touch()
"""


def hold_write_lock(path: Path) -> sqlite3.Connection:
    """Another connection holding the store's write lock (until it commits)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def test_two_sqlite_writers_at_once_wait_for_each_other_and_lose_no_row(tmp_path):
    """docs/history.md: "two invocations ... writing at once never duplicate
    or lose a row"; a locked store is waited for (store.py: "Concurrent
    writers wait for each other instead of failing at once").

    The store's write lock is held while two writers start recording; the
    lock is let go only once both sleep in SQLite's wait for it, so the two
    are certain to meet at the lock. Both must finish, with every row once.
    Checked against a store opened without the wait (timeout 0 in
    Store.open): a writer fails at its first insert, the test says which."""
    path = tmp_path / "store" / "history.sqlite"
    url = f"sqlite:///{path}"
    Store.open(url)  # the store exists: what its writers meet is the lock, not its creation
    holder = hold_write_lock(path)
    code = store_writer("lite", FIRST_WRITE)
    writers = {}
    try:
        for who in ("a", "b"):
            writers[who] = subprocess.Popen([sys.executable, "-c", code, url, who, str(tmp_path / f"writing-{who}")],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        for who, w in writers.items():
            wait_for(lambda w=w, who=who: ((tmp_path / f"writing-{who}").exists() and in_sleep(w.pid))
                     or w.poll() is not None, f"writer {who} to wait for the lock", timeout=120)  # fmt: skip
            assert w.poll() is None, f"writer {who} gave up on a locked store:\n" + w.communicate()[1][-2000:]
    finally:
        holder.execute("COMMIT")
        holder.close()
    for who, w in writers.items():
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0 and out.strip() == "done", (who, err[-2000:])
    frame = Store.open(url).frame("lite")
    assert len(frame) == 500 and frame["run_key"].is_unique
    assert sorted(frame.groupby("hostname").size().items()) == [("a", 200), ("b", 200), ("shared", 100)]


def cost_campaign(tmp_path: Path, name: str = "hist", **extra: object) -> Path:
    """ops counted in work (a file's number), with noise of known size (0, 1, 2 in turn)."""
    cost, counter = tmp_path / "cost", tmp_path / "counter"
    if not cost.exists():
        cost.write_text("100\n")
        counter.write_text("0\n")
    command = f"c=$(cat {counter}); echo $((c + 1)) > {counter}; echo ops=$(( $(cat {cost}) + c % 3 ))"
    data = {"name": name, "benchmark": {"type": "command", "command": command, "metrics": {"ops": r"ops=(\d+)"}},
            "variables": {"size": [1, 2]}, "nb_runs": 3, **extra}  # fmt: skip
    return write_campaign(tmp_path, data)


def perfsnake(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    return subprocess.run([sys.executable, "-m", "perfsnake", *args], cwd=cwd, capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(ROOT)}, timeout=300, check=False)  # fmt: skip


@pytest.mark.long  # the store's own wait (60 s) comes first
@pytest.mark.e2e
def test_a_store_locked_all_along_costs_no_result_and_says_so_in_one_line(tmp_path):
    """docs/history.md: "A store that is missing, locked, ... never costs the
    results: the campaign finishes, one line says it was not recorded and how
    to record it later (`perfsnake history import results/<campaign>`)".

    Another connection holds the store's write lock for the whole
    invocation (longer than the store's wait): the campaign finishes, one
    line names the store and the import command, no traceback; once the lock
    is gone the import records every run. Checked against the history rule
    letting the store's error through (record.py catching only SourceError):
    a traceback and a failed invocation."""
    path = tmp_path / "store" / "history.sqlite"
    url = f"sqlite:///{path}"
    Store.open(url)
    camp = cost_campaign(tmp_path)
    holder = hold_write_lock(path)
    try:
        proc = snakemake(tmp_path, camp, "--cores", "1", "all", check=False, env={"PERFSNAKE_HISTORY": url})
    finally:
        holder.execute("COMMIT")
        holder.close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if "NOT recorded" in line]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert str(path) in lines[0] and "locked" in lines[0], lines[0]
    assert "(later: perfsnake history import " in lines[0] and "results/hist)" in lines[0], lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert len(read_csv(tmp_path / "results/hist/hist.csv")) == 6
    assert json.loads((tmp_path / "results/hist/history.json").read_text())["recorded"] is False
    assert Store.open(url).counts() == (0, 0)
    imported = perfsnake(tmp_path, "history", "--store", url, "import", str(tmp_path / "results/hist"))
    assert imported.returncode == 0, imported.stderr
    assert Store.open(url).counts() == (1, 6)


# ---- 5, 7. what two recorded invocations give: the CSV export, the report's page -----------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Two invocations of a campaign recorded in a store of their own: (workdir, url, each one's runs)."""
    work = tmp_path_factory.mktemp("recorded")
    url = f"sqlite:///{work / 'store' / 'history.sqlite'}"
    camp = cost_campaign(work)
    env = {"PERFSNAKE_HISTORY": url}
    invocations = []
    for force in ([], ["--forcerun", "run"]):
        proc = snakemake(work, camp, "--cores", "1", "all", *force, env=env)
        assert "recorded as invocation" in proc.stderr, proc.stderr[-3000:]
        invocations.append(read_csv(work / "results/hist/hist.csv"))
    return work, url, invocations


@pytest.mark.e2e
def test_the_csv_export_gives_the_rows_recorded(recorded, tmp_path):
    """docs/history.md: `perfsnake history export all.parquet  # or .csv: one
    row per run`. Every run of both invocations, once, with its record, run
    index, status, start and metric as the campaign's CSV had them. Checked
    against an export that loses the last run (cli._export on the frame but
    its last row: the count fails) and one whose metrics are another run's
    (their list reversed: the comparison of values fails)."""
    work, url, invocations = recorded
    out = tmp_path / "all.csv"
    proc = perfsnake(work, "history", "--store", url, "export", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"history: 12 run(s) written to {out}"
    with out.open() as f:
        exported = sorted((int(r["var.size"]), int(r["run"]), r["status"], r["start"], float(r["metric.ops"]))
                          for r in csv.DictReader(f))  # fmt: skip
    expected = sorted((int(row["size"]), int(row["run"]), row["status"], row["start"], float(row["ops"]))
                      for frame in invocations for _, row in frame.iterrows())  # fmt: skip
    assert len(expected) == 12 and len({e[3] for e in expected}) == 12  # two invocations of 6 runs, measured apart
    assert exported == expected


@pytest.mark.e2e
def test_the_reports_history_page_shows_the_recorded_points(recorded):
    """The history rule's page (rules/history.smk, the report's "history"
    page; workflow/report/history.rst: "every invocation recorded on this
    machine, the latest one's mean per record ... beside the recent past"):
    it exists, lists both invocations, each record's latest mean and the
    recent past's, and draws a point per invocation and record at its mean.
    Checked against a page drawn from the latest invocation only
    (record.history_page keeping the newest invocation's rows: the count of
    invocations fails) and one without its figure (no figure)."""
    import numpy as np

    work, url, invocations = recorded
    page = work / "results/hist/report/history.html"
    assert page.is_file()
    text = page.read_text()
    assert "hist: 2 invocation(s)" in text, text[:3000]
    frame = Store.open(url).frame("hist")
    for inv in frame["invocation_id"].unique():
        assert inv[:12] in text
    latest, previous = invocations[1], invocations[0]
    for size in (1, 2):
        mean_now = float(np.mean(latest.loc[latest["size"] == size, "ops"]))
        mean_before = float(np.mean(previous.loc[previous["size"] == size, "ops"]))
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(f"size={size}"))
        assert f"{mean_now:.4g} [" in line and f"{mean_before:.4g} [{mean_before:.4g}, {mean_before:.4g}] (n=1)" in line
    # The figure (an SVG in the page): a point per invocation and record, at its mean.
    import base64

    encoded = re.search(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", text)
    assert encoded, "the page has no figure"
    svg = base64.b64decode(encoded.group(1)).decode()
    point = r'<path aria-label="[^"]*record: (size=\d+);[^"]*mean: ([0-9.]+);[^"]*invocation: (\w+)"[^>]*aria-roledescription="point"'
    drawn = sorted((record, invocation, float(mean)) for record, mean, invocation in re.findall(point, svg))
    stored = sorted((f"size={json.loads(rec)['size']}", inv[:12], float(np.mean([json.loads(m)["ops"] for m in runs["metrics"]])))
                    for (rec, inv), runs in frame.groupby(["record", "invocation_id"]))  # fmt: skip
    assert len(stored) == 4 and drawn == stored, (drawn, stored)


# ---- 6. the history gate compares with this host in this state only ------------------------


def add_invocation(url: str, campaign: str, like: dict, rows: list[dict], hostname: str, machine: dict,
                   after: str, factor: float) -> None:  # fmt: skip
    """Store another invocation of `campaign`: `rows` (stored runs) again,
    measured later than `after` on `hostname` in `machine`'s state, their ops
    `factor` times as many."""
    base = datetime.fromisoformat(after.replace("Z", "+00:00"))
    new = []
    for i, r in enumerate(rows, 1):
        start = (base + timedelta(milliseconds=i)).isoformat().replace("+00:00", "Z")
        metrics = {k: v * factor for k, v in json.loads(r["metrics"]).items()}
        new.append({**{k: r[k] for k in ("record", "run", "status", "end", "wall_s", "versions")}, "campaign": campaign,
                    "hostname": hostname, "start": start, "metrics": json.dumps(metrics),
                    "run_key": run_key(campaign, hostname, r["record"], int(r["run"]), start)})  # fmt: skip
    invocation = {k: like[k] for k in ("campaign_sha256", "perfsnake_commit", "results_dir")}
    invocation |= {"campaign": campaign, "hostname": hostname, "recorded_at": new[-1]["start"], "source": "import",
                   "first_start": new[0]["start"], "last_end": new[-1]["start"], "machine": json.dumps(machine)}  # fmt: skip
    _, added = Store.open(url).record(invocation, new)
    assert added == len(new)


def first_gated_invocation(tmp_path: Path) -> tuple[Path, str, dict[str, str]]:
    """A campaign with a history gate, its first invocation recorded in a store of its own: (campaign, url, env)."""
    gate = {"metric": "ops", "history": {"last": 10}, "max_regression": "5%", "better": "higher"}
    camp = cost_campaign(tmp_path, references=[gate])
    url = f"sqlite:///{tmp_path / 'store' / 'history.sqlite'}"
    env = {"PERFSNAKE_HISTORY": url}
    snakemake(tmp_path, camp, "--cores", "1", "all", env=env)
    return camp, url, env


@pytest.mark.e2e
@pytest.mark.parametrize("other", ["host", "state"])
def test_the_history_gate_compares_with_this_host_in_this_state_only(tmp_path, other):
    """docs/history.md: a history gate compares "the current records against
    the ok runs of the last ten invocations on this machine in the same
    state". After a first invocation, the store gets a later one with ten
    times the ops, from another host (or from this host in another machine
    state: another kernel); the second invocation measures as the first did,
    so its gate passes against the first alone. Compared with the foreign
    points it would fail (a 90 % regression). Checked against the gate
    reading every host's runs (baseline.recent_past without its host) and
    every state's (without its same-state filter): the verdicts are fail."""
    camp, url, env = first_gated_invocation(tmp_path)
    store = Store.open(url)
    frame = store.frame("hist")
    assert len(frame) == 6
    with store.engine.connect() as conn:
        (like,) = conn.execute(sa.text("SELECT * FROM invocations")).mappings().all()
    machine = json.loads(like["machine"])
    hostname = like["hostname"]
    if other == "host":
        hostname = "elsewhere.lab"
    else:
        assert "uname" in machine, machine
        machine = {**machine, "uname": f"{machine['uname']}-other"}
    add_invocation(url, "hist", dict(like), frame.to_dict("records"), hostname, machine,
                   after=max(frame["start"]), factor=10)  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all", "--forcerun", "run", env=env)
    with (tmp_path / "results/hist/gates.csv").open() as f:
        gates = list(csv.DictReader(f))
    assert sorted(g["verdict"] for g in gates) == ["pass", "pass"], gates
    assert len(Store.open(url).frame("hist")) == 18  # the foreign points were there to be compared with


@pytest.mark.e2e
def test_a_history_gate_after_a_state_change_names_it(tmp_path):
    """A history gate whose every stored invocation on this machine was in
    another state (here: the first invocation's kernel rewritten in the
    store, as after an upgrade) has no recent past: inconclusive, naming
    what changed, from what to what."""
    camp, url, env = first_gated_invocation(tmp_path)
    store = Store.open(url)
    with store.engine.begin() as conn:
        (like,) = conn.execute(sa.text("SELECT * FROM invocations")).mappings().all()
        machine = json.loads(like["machine"])
        old = {**machine, "uname": "Linux old 5.10.0-oldkernel"}
        conn.execute(sa.text("UPDATE invocations SET machine = :m"), {"m": json.dumps(old)})
    snakemake(tmp_path, camp, "--cores", "1", "all", "--forcerun", "run", env=env)
    with (tmp_path / "results/hist/gates.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [g["verdict"] for g in rows] == ["inconclusive", "inconclusive"], rows
    for g in rows:
        assert g["reason"].endswith(f"no recent past in this machine state, which changed: uname {old['uname']} -> "
                                    f"{machine['uname']}"), g["reason"]  # fmt: skip


# ---- 8. the shipped regression demo --------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.e2e
def test_the_regression_demo_gives_what_the_docs_state(tmp_path):
    """docs/history.md, "Try it": on the demo history (tags v1..v8 made by
    scripts/setup/demo_repo.sh) "the step found at v5, -19.9 % ..., no other
    step; the gate against v1 passed for v1-v4 and failed for v5-v8". The
    claim is read from the docs and checked on the shipped campaign (its
    history, range, build, metrics, derived ops_per_s, gate, run count),
    shrunk as tests/test_ready_campaigns.py shrinks campaigns (shorter runs)
    and made independent of the machine's speed and load: the heater's clock
    counts its work steps instead of nanoseconds, so ops_per_s is what each
    release's source makes it (v5's planted line: a quarter more work, -20 %),
    with a noise of known size added by the command. Checked against a gate
    that reads higher-is-better the wrong way round (gates._relative's sign
    flipped): v5-v8 pass, the test fails."""
    text = " ".join((DOCS / "history.md").read_text().split())
    claim = re.search(r"the step found at (v\d)\b[^;]*, no other step; the gate against (v\d) passed for "
                      r"(v\d)-(v\d) and failed for (v\d)-(v\d)", text)  # fmt: skip
    assert claim, "docs/history.md no longer states the demo's outcome"
    step_at, baseline, pass_from, pass_to, fail_from, fail_to = claim.groups()
    subprocess.run(["bash", str(ROOT / "scripts/setup/demo_repo.sh")], check=True, capture_output=True)
    history = ROOT / "resources/demo/heater-history"
    tags = {f"v{i}": git(history, "rev-parse", f"v{i}").strip()[:12] for i in range(1, 9)}
    (tmp_path / "resources/demo").mkdir(parents=True)
    (tmp_path / "resources/demo/heater-history").symlink_to(history)
    data = yaml.safe_load((ROOT / "config/campaigns/regression_heater.yaml").read_text())
    assert data["references"][0]["baseline"] == {"version": baseline}
    assert data["variables"]["version"]["range"] == "v1..v8"
    # The heater's clock counts its work steps (1 ns each), so ops_per_s is
    # what the source says: v1-v4 one step per operation, v5's planted line a
    # quarter more (-20 %); the only noise is the one the command adds, a
    # Duration 0, 1 or 2 % longer in turn (a counter across runs).
    clock = [
        r"s/^#define BATCH 4096$/&\nstatic uint64_t steps;/",
        r"s/^\tx ^= x << 13;$/\tsteps++;\n&/",
        r"/^\tstruct timespec t;$/d",
        r"s/^\tclock_gettime(CLOCK_MONOTONIC, &t);$/\treturn (double)steps \/ 1e9;/",
        r"/^\treturn (double)t.tv_sec/d",
    ]
    data["benchmark"]["build"] = (
        "sed " + " ".join(f"-e '{e}'" for e in clock) + " {src_dir}/heater.c > {build_dir}/heater.c && "
        "grep -q 'steps++' {build_dir}/heater.c && ! grep -q CLOCK_MONOTONIC {build_dir}/heater.c && "
        + data["benchmark"]["build"].replace("{src_dir}/heater.c", "{build_dir}/heater.c")
    )
    counter = tmp_path / "counter"
    counter.write_text("0\n")
    scale = "'/^Duration:/ {{ printf \"Duration: %.9f\\n\", $2 * f / 100; next }} {{ print }}'"
    data["benchmark"]["command"] = (
        f"c=$(cat {counter}); echo $((c + 1)) > {counter}; "
        f"{data['benchmark']['command']} | awk -v f=$((100 + c % 3)) {scale}"
    )
    data["duration_s"] = 0.05
    camp = write_campaign(tmp_path, data)
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert jobs_run(proc, "build") == 8 and jobs_run(proc, "run") == 24
    results = tmp_path / "results/regression_heater"
    with (results / "regression/steps.csv").open() as f:
        steps = [s for s in csv.DictReader(f) if s["significant"] == "True" and s["metric"] == "ops_per_s"]
    assert [s["version"] for s in steps] == [tags[step_at]], steps
    assert abs(float(steps[0]["relative_change"]) + 0.2) < 0.01, steps  # the docs' -19.9 %
    with (results / "gates.csv").open() as f:
        verdicts = {g["version"]: g["verdict"] for g in csv.DictReader(f)}
    by_tag = {tag: verdicts[commit] for tag, commit in tags.items()}
    span = lambda a, b: [f"v{i}" for i in range(int(a[1:]), int(b[1:]) + 1)]  # noqa: E731
    assert [t for t, v in by_tag.items() if v == "pass"] == span(pass_from, pass_to), by_tag
    assert [t for t, v in by_tag.items() if v == "fail"] == span(fail_from, fail_to), by_tag
