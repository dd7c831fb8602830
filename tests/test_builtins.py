"""The built-in benchmarks, built and run for real through the workflow."""

import json
import shutil
from pathlib import Path

import pytest
from helpers import jobs_run, printed, printed_intervals, snakemake, write_campaign

from perfsnake.campaign_csv import read_csv, read_metadata
from perfsnake.machine.sysinfo import online_cpus

pytestmark = pytest.mark.e2e


def interval_rates(intervals: list[tuple[int, float, int]]) -> list[float]:
    """Operations per second of each interval: its operations over its length."""
    starts = [0.0] + [t for _k, t, _n in intervals[:-1]]
    return [n / (t - start) for (_k, t, n), start in zip(intervals, starts, strict=True)]


def samples_csv(run: Path) -> list[float] | None:
    """A run's samples.csv, checked for its header and index column: its values (None: no file)."""
    if not (run / "samples.csv").exists():
        return None
    header, *rows = (run / "samples.csv").read_text().splitlines()
    assert header == "index,value"
    assert [int(r.split(",")[0]) for r in rows] == list(range(len(rows)))
    return [float(r.split(",")[1]) for r in rows]


def test_heater_on_every_online_cpu(tmp_path):
    camp = write_campaign(tmp_path, {
        "name": "heat", "benchmark": "heater", "variables": {"cpu": "all", "interval_ms": [100]},
        "nb_runs": 1, "duration_s": 0.3,
        "plots": [{"kind": "bar", "x": "cpu", "y": "ops_per_s"}],
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "2", "all")
    frame = read_csv(tmp_path / "results/heat/heat.csv")
    assert sorted(frame["cpu"]) == list(online_cpus())
    assert (frame["status"] == "ok").all()
    for cpu in online_cpus():
        run = tmp_path / f"results/heat/runs/cpu-{cpu}/interval_ms-100/run-1"
        out = (run / "stdout.txt").read_text()
        assert f"CPU: {cpu}\n" in out
        # The CSV's rate is the run's own printed count over its printed
        # duration (how fast the CPU was is the load's business).
        (row,) = frame[frame["cpu"] == cpu].to_dict("records")
        ops, duration = int(printed(out, "Operations performed")), float(printed(out, "Duration"))
        assert ops > 0 and row["ops_per_s"] == pytest.approx(ops / duration, rel=1e-9)
        # The intervals the run printed, at least the one its deadline falls in
        # (100 ms <= 0.3 s: the heater's guarantee; a loaded CPU prints fewer
        # than three), make its samples.csv: one rate per interval, when there
        # are two or more.
        intervals = printed_intervals(out)
        assert [k for k, _t, _n in intervals] == list(range(len(intervals))) and intervals, out
        assert samples_csv(run) == (interval_rates(intervals) if len(intervals) >= 2 else None), out
    assert (tmp_path / "results/heat/plots/bar-ops_per_s-by-cpu.svg").exists()
    # Units the metric names spell reach the CSV and the figure's axis.
    assert "ops_per_s=ops/s" in read_metadata(tmp_path / "results/heat/heat.csv")["metric_units"]
    assert "ops_per_s (ops/s)" in (tmp_path / "results/heat/plots/bar-ops_per_s-by-cpu.svg").read_text()


@pytest.mark.skipif(shutil.which("apt-get") is None, reason="needs Debian's apt-get source")
def test_leveldb_from_debian_source(tmp_path):
    camp = write_campaign(tmp_path, {
        "name": "ldb", "benchmark": "leveldb",
        "variables": {"num": [20000], "bench_name": ["readrandom", "seekrandom"], "nb_threads": [1, 2], "reads": [20000]},
        "nb_runs": 1, "timeout_s": 120,
    })  # fmt: skip
    proc = snakemake(tmp_path, camp, "--cores", "2", "all", timeout=900)
    assert jobs_run(proc, "fetch") == 1 and jobs_run(proc, "build") == 1
    src = next((tmp_path / "resources/src").iterdir())
    assert src.name == "debian-leveldb-1.23-4" and (src / "db" / "db_impl.cc").exists()
    assert not list((tmp_path / "resources/src").glob(".tmp-*"))
    frame = read_csv(tmp_path / "results/ldb/ldb.csv")
    assert len(frame) == 4 and (frame["status"] == "ok").all()
    assert (frame["micros_per_op"] > 0).all() and (frame["ops_per_s"] > 1000).all()
    # One fill per build; runs read the existing database.
    build = next((tmp_path / "resources/builds/leveldb").iterdir())
    assert (build / "db" / "CURRENT").exists()
    cmd = (
        tmp_path / "results/ldb/runs/num-20000/bench_name-readrandom/nb_threads-2/reads-20000/run-1/command.sh"
    ).read_text()
    assert "--use_existing_db=1" in cmd and "--threads=2" in cmd
    meta = read_metadata(tmp_path / "results/ldb/ldb.csv")
    assert meta["benchmark"] == "leveldb" and meta["runs_ok"] == "4"
    # Every metric a read benchmark prints was parsed: no run is "unparsed".
    results = list((tmp_path / "results/ldb/runs").rglob("result.json"))
    assert len(results) == 4 and not any(json.loads(r.read_text()).get("unparsed") for r in results)
    # A new run-time value reuses the build and the database.
    write_campaign(tmp_path, json.loads(json.dumps({
        "name": "ldb", "benchmark": "leveldb",
        "variables": {"num": [20000], "bench_name": ["readrandom", "seekrandom"], "nb_threads": [1, 2, 3], "reads": [20000]},
        "nb_runs": 1, "timeout_s": 120,
    })))  # fmt: skip
    proc = snakemake(tmp_path, camp, "--cores", "2", "all", timeout=600)
    assert jobs_run(proc, "fetch") == 0 and jobs_run(proc, "build") == 0 and jobs_run(proc, "run") == 2
    # db_bench under every lock algorithm of our library, reusing the build.
    from perfsnake.instruments.locks import ALGORITHMS

    locks = write_campaign(tmp_path, {
        "name": "ldb_locks", "benchmark": "leveldb",
        "variables": {"num": [20000], "lock": ["pthread", *ALGORITHMS], "nb_threads": [2], "reads": [20000]},
        "nb_runs": 1, "timeout_s": 120, "shared_libs": [{"type": "lock", "stats": True}],
    }, name="locks.yaml")  # fmt: skip
    proc = snakemake(tmp_path, locks, "--cores", "2", "all", timeout=900)
    assert jobs_run(proc, "fetch") == 0 and jobs_run(proc, "build") == len(ALGORITHMS)
    frame = read_csv(tmp_path / "results/ldb_locks/ldb_locks.csv")
    assert sorted(frame["lock"]) == sorted(["pthread", *ALGORITHMS])
    assert (frame["status"] == "ok").all() and (frame["ops_per_s"] > 1000).all()
    # The proof that the sweep swaps LevelDB's mutexes: every algorithm took
    # them (LevelDB locks its DBImpl mutex at least once per read), glibc's
    # run preloads nothing and counts nothing.
    swept = frame[frame["lock"] != "pthread"]
    assert (swept["lock.acquisitions"] >= 2 * 20000).all(), swept[["lock", "lock.acquisitions"]]
    assert frame[frame["lock"] == "pthread"]["lock.acquisitions"].isna().all()
