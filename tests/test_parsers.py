"""Parsers against real outputs: the heater run here, db_bench output recorded on this machine."""

import subprocess
from pathlib import Path

import pytest
from helpers import compile_c, printed, printed_intervals

from perfsnake.benchmarks.command import CommandBenchmark
from perfsnake.benchmarks.heater import HeaterBenchmark
from perfsnake.benchmarks.leveldb import LevelDBBenchmark
from perfsnake.layout import c_source

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def heater(tmp_path_factory):
    return compile_c(c_source("heater", "heater.c"), tmp_path_factory.mktemp("bin") / "heater")


def test_heater_output(heater):
    out = subprocess.run(
        [str(heater), "--cpu", "0", "--duration", "0.3", "--interval-ms", "50"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    metrics = HeaterBenchmark({"type": "heater"}, "t").parse(out, "", {"cpu": 0})
    # What the program printed, whatever the machine's speed: how long the run
    # overshot its deadline and how many operations fit depend on the load.
    assert metrics["operations"] == int(printed(out, "Operations performed")) > 0
    assert metrics["duration_s"] == float(printed(out, "Duration")) >= 0.3  # it stops only at the deadline
    assert metrics["ops_per_s"] == pytest.approx(metrics["operations"] / metrics["duration_s"])
    # Every interval line, none lost or added. How many a run prints depends on
    # the load (one per loop batch at most: a CPU shared with stress-ng prints
    # fewer); the heater guarantees the one the deadline falls in (50 ms <=
    # 0.3 s), numbered from 0, each printed at or after its tick, and at most
    # one per tick before the deadline plus that last one (<= 6, 7 with the
    # rounding of the summed ticks).
    samples = HeaterBenchmark.samples(out)
    assert samples == printed_intervals(out) and 1 <= len(samples) <= 7
    assert [k for k, _t, _n in samples] == list(range(len(samples)))
    assert all(t >= (k + 1) * 0.05 - 1e-6 for k, t, _n in samples), samples
    assert samples[-1][1] <= metrics["duration_s"]
    assert sum(n for _k, _t, n in samples) <= metrics["operations"]


def test_heater_rejects_bad_arguments(heater):
    assert subprocess.run([str(heater), "--duration", "x"], capture_output=True, check=False).returncode == 2
    proc = subprocess.run(
        [str(heater), "--cpu", "4096", "--duration", "0.1"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1 and "cannot pin" in proc.stderr


def test_db_bench_readrandom_multithread():
    out = (DATA / "db_bench_readrandom_2threads.txt").read_text()
    metrics = LevelDBBenchmark({"type": "leveldb"}, "t").parse(out, "", {"bench_name": "readrandom", "nb_threads": 2})
    micros = float(next(line for line in out.splitlines() if line.startswith("readrandom")).split(":")[1].split()[0])
    assert metrics["micros_per_op"] == pytest.approx(micros)
    assert metrics["ops_per_s"] == pytest.approx(2e6 / micros)
    # Read benchmarks print no MB/s: left out, so the run is not "unparsed".
    assert "mb_per_s" not in metrics


def test_db_bench_with_rate_and_other_benchmark_name():
    out = (DATA / "db_bench_fillrandom.txt").read_text()
    bench = LevelDBBenchmark({"type": "leveldb"}, "t")
    metrics = bench.parse(out, "", {"bench_name": "fillrandom", "nb_threads": 1})
    assert metrics["mb_per_s"] > 0 and metrics["micros_per_op"] > 0
    # A different benchmark's line is not mistaken for the requested one.
    assert bench.parse(out, "", {"bench_name": "readrandom"})["micros_per_op"] is None


def test_command_metrics_from_stdout_then_stderr():
    bench = CommandBenchmark(
        {"type": "command", "command": "x", "metrics": {"a": r"a=(\S+)", "b": r"b=(\d+)", "c": r"c=(\d+)"}}, "t"
    )
    metrics = bench.parse("a=1.5e3\nnoise\n", "b=7\n", {})
    assert metrics == {"a": 1500.0, "b": 7, "c": None}
    assert bench.parse("a=fast", "", {})["a"] == "fast"
