"""The results store (perfsnake.history): every invocation recorded once,
over time, through the real workflow; SQLite and a real PostgreSQL server."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest
import sqlalchemy as sa
from helpers import ROOT, SNAKEMAKE, alive, processes_under, snakemake, statuses, store_writer, write_campaign

from perfsnake.history import import_path
from perfsnake.history.store import SCHEMA_VERSION, Store, StoreError, run_key, schema_info


def cost_campaign(tmp_path: Path, name: str = "hist", sleep: float = 0.0, **extra: object) -> Path:
    """A command whose work the test sets in a file: the planted step is
    counted in work (ops per pass), never in time, so it holds under load.
    A counter adds 0, 1 or 2 in turn: noise of known size, the same every time."""
    cost, counter = tmp_path / "cost", tmp_path / "counter"
    if not cost.exists():
        cost.write_text("100\n")
        counter.write_text("0\n")
    wobble = f"c=$(cat {counter}); echo $((c + 1)) > {counter}; " if extra.pop("wobble", False) else "c=0; "
    return write_campaign(
        tmp_path,
        {
            "name": name,
            "benchmark": {
                "type": "command",
                "command": f"sleep {sleep}; {wobble}echo ops=$(( $(cat {cost}) + c % 3 ))",
                "metrics": {"ops": r"ops=(\d+)"},
            },
            "variables": {"size": [1, 2]},
            "nb_runs": 3,
            **extra,
        },
    )


def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store' / 'history.sqlite'}"


def history(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfsnake", "history", "--store", store_url(tmp_path), *args],
                          capture_output=True, text=True, cwd=tmp_path, check=False)  # fmt: skip


def run_keys(url: str) -> list[str]:
    store = Store.open(url)
    with store.engine.connect() as conn:
        return list(conn.execute(sa.text("SELECT run_key FROM runs")).scalars())


@pytest.mark.e2e
def test_five_invocations_with_a_planted_step_and_a_kill_in_the_third(tmp_path):
    gate = {"metric": "ops", "history": {"last": 10}, "max_regression": "5%", "better": "higher"}
    camp = cost_campaign(tmp_path, sleep=0.3, wobble=True, references=[gate])
    env = {"PERFSNAKE_HISTORY": store_url(tmp_path)}
    verdicts = []
    measured: set[tuple[str, str]] = set()  # (run, start): every measurement any invocation kept
    for invocation in range(1, 6):
        if invocation == 4:
            (tmp_path / "cost").write_text("80\n")  # 20 % fewer ops from the fourth invocation on
        force = [] if invocation == 1 else ["--forcerun", "run"]  # every night measures again
        if invocation == 3:
            killed_first(tmp_path, camp, force, env)
            snakemake(tmp_path, camp, "--unlock", env=env)
            proc = snakemake(tmp_path, camp, "--rerun-incomplete", env=env)
        else:
            proc = snakemake(tmp_path, camp, *force, env=env)
        assert "[perfsnake] history: hist:" in proc.stderr and "recorded as invocation" in proc.stderr
        measured |= {(run, s["start"]) for run, s in statuses(tmp_path, "hist").items()}
        assert json.loads((tmp_path / "results/hist/history.json").read_text())["recorded"] is True
        with (tmp_path / "results/hist/gates.csv").open() as f:
            verdicts.append(sorted(row["verdict"] for row in csv.DictReader(f)))
        check = subprocess.run([sys.executable, "-m", "perfsnake", "check", "--config", f"campaign={camp}"], cwd=tmp_path,
                               capture_output=True, text=True, env={**os.environ, **env}, check=False)  # fmt: skip
        assert check.returncode == (1 if invocation == 4 else 0), check.stdout + check.stderr

    # The gate against the recent past: nothing to compare with at first, then
    # within 5 %, failed where the 20 % step appeared, and passed after it (the
    # recent past begins at the step): a regression is alerted once.
    assert verdicts == [["inconclusive"] * 2, ["pass"] * 2, ["pass"] * 2, ["fail"] * 2, ["pass"] * 2]
    keys = run_keys(store_url(tmp_path))
    assert len(keys) == len(set(keys)) == len(measured)  # every run once, the killed invocation's too
    shown = history(tmp_path, "show", "hist", "--metric", "ops")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "hist: 5 invocation(s)" in text
    for size in (1, 2):
        line = next(line for line in text.splitlines() if line.strip().startswith(f"size={size}"))
        assert "(n=4)" in line and line.rstrip().endswith("at invocation 4"), text + stored_runs(store_url(tmp_path))
    # Recording the same results again stores nothing.
    again = history(tmp_path, "import", str(tmp_path / "results"))
    assert again.returncode == 0 and "nothing new" in again.stdout
    assert len(run_keys(store_url(tmp_path))) == len(measured)


def stored_runs(url: str) -> str:
    """The store's runs of the campaign, a line each: what a failure message shows."""
    columns = ["invocation_id", "record", "run", "status", "start", "metrics"]
    return "\n" + Store.open(url).frame("hist")[columns].sort_values("start").to_string()


def killed_first(tmp_path: Path, camp: Path, force: list[str], env: dict[str, str]) -> None:
    """Start an invocation and SIGKILL its process group once some of its runs are done."""
    cmd = [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
           "--directory", str(tmp_path), "--configfile", str(ROOT / "config/config.yaml"), "--cores", "1", "all",
           *force, "--config", f"campaign={camp}"]  # fmt: skip
    before = {k: s["start"] for k, s in statuses(tmp_path, "hist").items()}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env={**os.environ, **env}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        # Two runs measured anew (a run whose status.json Snakemake deleted
        # as its job began is not: killed then, its earlier record is kept).
        now = {k: s["start"] for k, s in statuses(tmp_path, "hist").items()}
        if sum(now.get(k) not in (None, v) for k, v in before.items()) >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the invocation ended before the kill"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    results = tmp_path / "results" / "hist"
    while time.monotonic() < deadline and [p for p in processes_under(results, "") if alive(p)]:
        time.sleep(0.05)


def test_recording_is_idempotent_and_keyed_by_the_run(tmp_path):
    store = Store.open(store_url(tmp_path))
    rows = [
        {"run_key": run_key("c", "h", '{"x": 1}', i, f"2026-01-01T00:00:0{i}Z"), "campaign": "c", "hostname": "h",
         "record": '{"x": 1}', "run": i, "status": "ok", "start": f"2026-01-01T00:00:0{i}Z", "end": None,
         "wall_s": 1.0, "metrics": "{}", "versions": "{}"}
        for i in (1, 2)
    ]  # fmt: skip
    invocation = {"campaign": "c", "hostname": "h", "recorded_at": "now", "source": "import"}
    first, added = store.record(invocation, rows)
    assert first and added == 2
    assert store.record(invocation, rows) == (None, 0)
    third = {**rows[1], "run": 3, "run_key": run_key("c", "h", '{"x": 1}', 3, "t3")}
    _, added = store.record(invocation, [*rows, third])
    assert added == 1 and store.counts() == (2, 3)


def test_a_store_from_a_newer_schema_is_refused_and_the_campaign_loses_nothing(tmp_path):
    url = store_url(tmp_path)
    store = Store.open(url)
    with store.engine.begin() as conn:
        conn.execute(sa.update(schema_info).values(version=SCHEMA_VERSION + 1))
    with pytest.raises(StoreError, match=rf"schema version {SCHEMA_VERSION + 1}, newer than this perfsnake's {SCHEMA_VERSION}"):  # fmt: skip
        Store.open(url)
    camp = cost_campaign(tmp_path)
    proc = snakemake(tmp_path, camp, env={"PERFSNAKE_HISTORY": url})
    lines = [line for line in proc.stderr.splitlines() if "history: hist NOT recorded" in line]
    assert len(lines) == 1 and "newer than this perfsnake's" in lines[0]
    assert "(later: perfsnake history import results/hist)" in lines[0]
    assert (tmp_path / "results/hist/hist.csv").exists()
    assert json.loads((tmp_path / "results/hist/history.json").read_text())["recorded"] is False
    # Strict mode makes it an error (the results are still all there).
    shutil.rmtree(tmp_path / "results")
    strict = snakemake(tmp_path, camp, check=False, env={"PERFSNAKE_HISTORY": url, "PERFSNAKE_STRICT": "1"})
    assert strict.returncode != 0 and (tmp_path / "results/hist/hist.csv").exists()


def test_an_unreachable_store_does_not_stop_the_campaign(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://nobody@127.0.0.1:{port}/none"
    proc = snakemake(tmp_path, cost_campaign(tmp_path), env={"PERFSNAKE_HISTORY": url})
    line = next(line for line in proc.stderr.splitlines() if "history: hist NOT recorded" in line)
    assert "cannot be used" in line and "nobody@127.0.0.1" in line
    assert (tmp_path / "results/hist/hist.csv").exists()


@pytest.mark.e2e
def test_import_of_result_directories_and_an_artifact_zip(tmp_path):
    camp = cost_campaign(tmp_path)
    snakemake(tmp_path, camp, env={"PERFSNAKE_HISTORY": "off"})
    assert json.loads((tmp_path / "results/hist/history.json").read_text())["reason"] == "history is off"
    url = store_url(tmp_path)
    lines = import_path(tmp_path / "results", url)
    assert lines == [f"history: hist: 6 run(s) recorded as invocation {lines[0].split()[7]} in {url}"]
    # The same results inside a zip (as an artifact holds them) are the same runs.
    archive = tmp_path / "hist-artifact.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in (tmp_path / "results/hist").rglob("*"):
            if path.is_file():
                zf.write(path, f"hist-artifact/{path.relative_to(tmp_path)}")
    other = f"sqlite:///{tmp_path / 'other.sqlite'}"
    assert "6 run(s) recorded" in import_path(archive, other)[0]
    assert sorted(run_keys(other)) == sorted(run_keys(url))
    assert "nothing new" in import_path(archive, url)[0]
    frame = Store.open(other).frame("hist")
    assert frame["results_dir"].iloc[0].startswith(f"{archive.resolve()}!")
    exported = history(tmp_path, "export", str(tmp_path / "all.parquet"))
    assert exported.returncode == 0, exported.stderr
    import pandas as pd

    table = pd.read_parquet(tmp_path / "all.parquet")
    assert len(table) == 6 and set(table["metric.ops"]) == {100} and set(table["var.size"]) == {1, 2}


# ---- PostgreSQL: a real server, two writers at once ----------------------------------------


@pytest.fixture(scope="module")
def postgres():
    bindir = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not bindir:
        pytest.skip("PostgreSQL is not installed (Debian package postgresql-15; scripts/setup/apt.sh installs it)")
    bins = bindir[-1].parent
    base = Path(tempfile.mkdtemp(prefix="perfsnake-pg-", dir="/var/tmp"))
    # Root runs the server as the postgres user (PostgreSQL refuses root); a
    # normal user runs it as themselves, in a directory they already own.
    # setpriv execs (runuser would stay the parent and not pass on the stop signal)
    as_pg = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"] if os.geteuid() == 0 else []
    if as_pg:
        shutil.chown(base, "postgres", "postgres")
    subprocess.run([*as_pg, str(bins / "initdb"), "-D", str(base / "data"), "-A", "trust", "-U", "bench", "--no-sync"],
                   check=True, capture_output=True)  # fmt: skip
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([*as_pg, str(bins / "postgres"), "-D", str(base / "data"), "-k", str(base), "-p", str(port),
                               "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"postgresql://bench@127.0.0.1:{port}/postgres"
    deadline = time.monotonic() + 60
    while True:
        try:
            Store.open(url)
            break
        except StoreError:
            assert server.poll() is None and time.monotonic() < deadline, "PostgreSQL did not start"
            time.sleep(0.1)
    yield url
    server.send_signal(signal.SIGINT)
    server.wait(timeout=60)
    shutil.rmtree(base, ignore_errors=True)


def test_two_writers_at_once_on_postgresql_lose_no_row(postgres):
    code = store_writer("pg")
    writers = [subprocess.Popen([sys.executable, "-c", code, postgres, who], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for who in ("a", "b")]  # fmt: skip
    for w in writers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0 and out.strip() == "done", err
    store = Store.open(postgres)
    frame = store.frame("pg")
    assert len(frame) == 500 and frame["run_key"].is_unique
    assert sorted(frame.groupby("hostname").size().items()) == [("a", 200), ("b", 200), ("shared", 100)]


@pytest.mark.e2e
def test_two_invocations_record_into_postgresql_at_once(tmp_path, postgres):
    """Two workflows (two checkouts, as two machines would be) finish and
    record into one PostgreSQL store at the same time: every run of both, once."""
    env = {**os.environ, "PERFSNAKE_HISTORY": postgres}
    procs = []
    for side in ("left", "right"):
        work = tmp_path / side
        work.mkdir()
        camp = cost_campaign(work, name=f"pg{side}")
        cmd = [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
               "--directory", str(work), "--configfile", str(ROOT / "config/config.yaml"), "--cores", "1", "all",
               "--config", f"campaign={camp}"]  # fmt: skip
        procs.append(
            subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        assert "run(s) recorded as invocation" in err
    store = Store.open(postgres)
    for side in ("left", "right"):
        frame = store.frame(f"pg{side}")
        assert len(frame) == 6 and frame["run_key"].is_unique


# ---- the dashboard, in a real browser ------------------------------------------------------


def _synthetic_store(url: str) -> None:
    """Two machines, two records, six invocations, a step at the fourth (known truth)."""
    store = Store.open(url)
    for inv in range(6):
        for host in ("alpha", "beta"):
            rows = []
            for size in (1, 2):
                record = json.dumps({"size": size})
                for run in range(1, 4):
                    value = (100 if inv < 3 else 80) * size * (1.0 if host == "alpha" else 1.5) + run
                    start = f"2026-11-0{inv + 1}T0{run}:00:00Z"
                    rows.append({"run_key": run_key("dash", host, record, run, start), "campaign": "dash", "hostname": host,
                                 "record": record, "run": run, "status": "ok", "start": start, "end": start, "wall_s": 1.0,
                                 "metrics": json.dumps({"ops": value, "wall_s": 1.0}), "versions": json.dumps({"commit": f"v{inv + 1}"})})  # fmt: skip
            store.record({"campaign": "dash", "hostname": host, "recorded_at": "now", "source": "import",
                          "first_start": rows[0]["start"], "results_dir": ""}, rows)  # fmt: skip


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.skip("chromium and chromium-driver are not installed (scripts/setup/apt.sh installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,1600"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    yield driver
    driver.quit()


def _wait(driver, condition, seconds: float = 60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds, poll_frequency=0.1).until(condition)


def test_the_dashboard_renders_and_answers_in_a_real_browser(tmp_path, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    url = store_url(tmp_path)
    _synthetic_store(url)
    site = tmp_path / "site"
    published = history(tmp_path, "publish", str(site))
    assert published.returncode == 0, published.stderr
    pages = sorted(site.glob("*.html"))
    assert [p.name for p in pages] == ["campaign-dash.html", "index.html"]

    browser.get((site / "index.html").as_uri())
    cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "td")]
    assert cells[:3] == ["dash", "alpha", "6"] and cells[5:8] == ["dash", "beta", "6"]
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []

    browser.get((site / "campaign-dash.html").as_uri())
    charts = browser.find_elements(By.CSS_SELECTOR, "div.chart")
    assert [c.get_attribute("data-metric") for c in charts] == ["ops", "wall_s"]
    _wait(browser, lambda d: all(c.get_attribute("data-rendered") == "yes" for c in charts))
    ops = charts[0]

    def points() -> list[str]:
        # Read in one script: Vega redraws the marks, so an element found earlier may be gone.
        return sorted(browser.execute_script(
            "return Array.from(document.querySelectorAll('#chart-0 g.mark-symbol.role-mark path'))"
            ".map(p => p.getAttribute('transform'))"
        ))  # fmt: skip

    before = points()
    assert len(before) == 12  # six invocations x two machines, one record shown
    # The step is drawn: one dashed rule per machine (at the fourth invocation, as planted).
    assert len(ops.find_elements(By.CSS_SELECTOR, "g.steps_marks > *")) == 2
    Select(ops.find_element(By.CSS_SELECTOR, ".vega-bindings select")).select_by_visible_text("size=2")
    _wait(browser, lambda d: points() != before)
    assert len(points()) == 12
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_a_version_1_store_is_migrated_and_keeps_its_rows(tmp_path):
    url = store_url(tmp_path)
    store = Store.open(url)
    store.record({"campaign": "c", "hostname": "h", "recorded_at": "now", "source": "import"},
                 [{"run_key": run_key("c", "h", "{}", 1, "t"), "campaign": "c", "hostname": "h", "record": "{}", "run": 1,
                   "status": "ok", "start": "t", "end": None, "wall_s": 1.0, "metrics": "{}", "versions": "{}"}])  # fmt: skip
    with store.engine.begin() as conn:  # what a store written by schema version 1 looks like
        conn.execute(sa.text("ALTER TABLE invocations DROP COLUMN version_order"))
        conn.execute(sa.update(schema_info).values(version=1))
    again = Store.open(url)
    with again.engine.connect() as conn:
        assert conn.execute(sa.select(schema_info.c.version)).scalar() == SCHEMA_VERSION == 2
        assert "version_order" in {c["name"] for c in sa.inspect(conn).get_columns("invocations")}
    assert again.counts() == (1, 1) and len(again.frame("c")) == 1


def test_versions_are_drawn_in_their_ranges_first_parent_order():
    import pandas as pd

    from perfsnake.history.views import version_order

    # Measured newest first (a bisection, say); the range says a, b, c.
    frame = pd.DataFrame(
        {"first_start": ["t1", "t2"], "version_order": [json.dumps({"commit": ["a", "b", "c"]}), None]}
    )
    data = pd.DataFrame({"when": ["1", "2", "3", "4"], "version": ["commit=c", "commit=a", "commit=x", "commit=b"]})
    assert version_order(frame, data) == ["commit=a", "commit=b", "commit=c", "commit=x"]


def test_a_campaign_whose_runs_all_failed_is_recorded_and_shown():
    import pandas as pd

    from perfsnake.history import views

    frame = pd.DataFrame({"invocation_id": ["i"], "first_start": ["t"], "hostname": ["h"], "record": ["{}"],
                          "status": ["hook_failed"], "metrics": ['{"ops": null}'], "versions": ["{}"], "start": ["t"]})  # fmt: skip
    assert views.series(frame, "ops") == []
    text = views.show(frame, "c", "ops")
    assert "1 invocation(s)" in text and "latest" in text
