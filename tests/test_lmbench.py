"""The lmbench-style timing harness and its first micro-benchmarks (real processes)."""

import os
import re
import subprocess

import pytest

from helpers import ROOT

SRC = ROOT / "src" / "lmbench"
FAST = {"LMBENCH_ENOUGH_US": "5000", "LMBENCH_PARALLEL_INTERVAL_US": "50000"}


@pytest.fixture(scope="module")
def bins(tmp_path_factory):
    out = tmp_path_factory.mktemp("lmbench")
    for prog in ("lat_syscall", "lat_mem_rd", "bw_mem", "lat_proc", "lat_ctx", "protocol_test"):
        subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out / prog), str(SRC / f"{prog}.c"), str(SRC / "harness.c")], check=True)
    return out


def run(bins, *argv, env=None, check=True):
    proc = subprocess.run([str(bins / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or FAST)}, check=False)  # fmt: skip
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def value(out: str, suffix: str = "") -> float:
    """The median line's value (first result line), or the `.min`/`.max`/... line's with a suffix."""
    pattern = r"^\S+" + re.escape(suffix) + r" (-?[0-9.]+) (?:ns|us|MB/s)$" if suffix else r"^\S+ (-?[0-9.]+) (?:ns|us|MB/s)$"
    return float(re.search(pattern, out, re.M).group(1))


@pytest.mark.parametrize("children", [2, 4, 8])
def test_no_child_measures_before_all_have_started(bins, children):
    out = run(bins, "protocol_test", str(children)).stdout
    assert f"children={children} all_started_before_timing=yes" in out


def test_a_killed_child_is_a_failure(bins):
    proc = run(bins, "protocol_test", "3", "1", check=False)
    assert proc.returncode == 1
    assert "failure detected" in proc.stdout and "died before the exit signal" in proc.stderr


def test_interval_detection_by_the_delta_method(bins):
    # Without the override the harness calibrates itself; null syscalls still come out plausible.
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMBENCH")}
    out = subprocess.run([str(bins / "lat_syscall"), "-N", "5", "null"], capture_output=True, text=True, env=env, timeout=300, check=True).stdout
    assert 0.005 < value(out) < 20


@pytest.mark.parametrize("op", ["null", "read", "write", "stat", "fstat", "open"])
def test_syscall_latencies_are_plausible_and_stable(bins, op):
    values = [value(run(bins, "lat_syscall", op).stdout) for _ in range(3)]
    assert all(0.005 < v < 50 for v in values), values  # microseconds
    assert max(values) / min(values) < 2.0, values  # a shared VM: loose, but not random


def test_parallel_syscalls(bins):
    out = run(bins, "lat_syscall", "-P", "2", "-N", "3", "null").stdout
    assert out.startswith("lat_syscall.null ") and 0.005 < value(out) < 50


def test_memory_latency_grows_across_cache_levels(bins):
    lat = {kb: value(run(bins, "lat_mem_rd", "-N", "5", str(kb), "64").stdout) for kb in (16, 8192, 131072)}
    assert 0.2 < lat[16] < 10  # L1: a few cycles
    assert lat[16] < lat[8192] < lat[131072]
    assert 30 < lat[131072] < 1000  # DRAM
    assert lat[131072] > 5 * lat[16]


def test_memory_bandwidth(bins):
    bw = {op: value(run(bins, "bw_mem", "-N", "3", "65536", op).stdout) for op in ("rd", "wr", "cp", "bzero")}
    assert all(500 < v < 1_000_000 for v in bw.values()), bw  # MB/s, DRAM-sized buffer
    small = value(run(bins, "bw_mem", "-N", "3", "16", "rd").stdout)
    assert small > bw["rd"]  # a buffer in L1 reads faster than one in DRAM


def test_process_creation_costs_order(bins):
    lat = {op: value(run(bins, "lat_proc", "-N", "3", op).stdout) for op in ("fork", "exec", "shell")}
    assert 5 < lat["fork"] < 20_000  # microseconds
    assert lat["fork"] < lat["exec"] < lat["shell"], lat


def test_context_switch_ring_leaves_no_process(bins):
    for size, procs in ((0, 2), (64, 4)):
        out = run(bins, "lat_ctx", "-N", "3", str(size), str(procs)).stdout
        assert out.startswith(f"lat_ctx.{procs}p_{size}k ") and 0.1 < value(out) < 10_000
    left = subprocess.run(["pgrep", "-f", str(bins / "lat_ctx")], capture_output=True, text=True, check=False).stdout
    assert left == ""


def test_bad_arguments(bins):
    assert run(bins, "lat_syscall", "nonsense", check=False).returncode == 2
    assert run(bins, "lat_mem_rd", "1", "4", check=False).returncode == 2
    assert run(bins, "bw_mem", "64", "scribble", check=False).returncode == 2
    assert run(bins, "lat_proc", "spoon", check=False).returncode == 2
    assert run(bins, "lat_ctx", "0", "1", check=False).returncode == 2


@pytest.mark.e2e
def test_lmbench_in_the_catalog(tmp_path):
    from helpers import snakemake, write_campaign
    from perfsnake.aggregate import read_csv

    camp = write_campaign(tmp_path, {
        "name": "lm", "benchmark": "lmbench",
        "records": [{"micro": "lat_syscall", "op": "null", "size_kb": 1, "parallel": 1},
                    {"micro": "lat_syscall", "op": "null", "size_kb": 1, "parallel": 2},
                    {"micro": "lat_mem_rd", "op": "null", "size_kb": 16, "parallel": 1},
                    {"micro": "lat_mem_rd", "op": "null", "size_kb": 65536, "parallel": 1},
                    {"micro": "bw_mem", "op": "rd", "size_kb": 4096, "parallel": 1}],
        "nb_runs": 1, "timeout_s": 120,
        "wrappers": [{"type": "env", "set": FAST}],
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/lm/lm.csv")
    assert (frame["status"] == "ok").all()
    lat = {(r.micro, r.size_kb, r.parallel): r.latency_ns for r in frame.itertuples()}
    assert 5 < lat[("lat_syscall", 1, 1)] < 50_000 and 5 < lat[("lat_syscall", 1, 2)] < 50_000
    assert lat[("lat_mem_rd", 16, 1)] < lat[("lat_mem_rd", 65536, 1)]
    bw = frame[frame["micro"] == "bw_mem"]["bandwidth_mb_s"].iloc[0]
    assert bw > 500
