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
    from perfsnake.benchmarks.lmbench import PROGRAMS

    out = tmp_path_factory.mktemp("lmbench")
    compilers = [
        subprocess.Popen(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out / prog), str(SRC / f"{prog}.c"), str(SRC / "harness.c")])
        for prog in (*PROGRAMS, "protocol_test")
    ]  # fmt: skip
    assert [c.wait() for c in compilers] == [0] * len(compilers)
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
    from perfsnake.results import read_csv

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


# ---- the rest of the paper's micro-benchmarks ---------------------------------------------


def lines(out: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^(\S+) (-?[0-9.]+) (?:ns|us|MB/s|ratio)$", out, re.M)}


def leftovers(bins, prog: str) -> str:
    return subprocess.run(["pgrep", "-f", str(bins / prog)], capture_output=True, text=True, check=False).stdout


def test_every_result_has_its_minimum(bins):
    got = lines(run(bins, "lat_syscall", "-N", "5", "null").stdout)
    assert 0 < got["lat_syscall.null.min"] <= got["lat_syscall.null"]
    got = lines(run(bins, "bw_mem", "-N", "5", "1024", "rd").stdout)
    assert got["bw_mem.rd.max"] >= got["bw_mem.rd"] > 0  # the shortest interval is the best bandwidth


def test_pipe_latency(bins):
    out = run(bins, "lat_pipe", "-N", "5").stdout
    assert out.startswith("lat_pipe ") and 1 < value(out) < 200  # us per round trip
    assert 1 < value(run(bins, "lat_pipe", "-P", "2", "-N", "3").stdout) < 400
    assert leftovers(bins, "lat_pipe") == ""


def test_signals(bins):
    lat = {op: value(run(bins, "lat_sig", "-N", "5", op).stdout) for op in ("install", "catch", "prot")}
    assert 0.01 < lat["install"] < 20 and 0.1 < lat["catch"] < 50 and 0.2 < lat["prot"] < 200, lat
    assert lat["install"] < lat["catch"] < lat["prot"], lat  # a syscall < a delivery < a fault + delivery + 2 mprotects


def test_mmap_and_page_faults(bins, tmp_path):
    small, large = (value(run(bins, "lat_mmap", "-N", "5", str(kb), str(tmp_path)).stdout) for kb in (64, 4096))
    assert 0.5 < small < large < 50_000, (small, large)  # us per mmap+touch+munmap
    got = lines(run(bins, "lat_pagefault", "-N", "5", "4096", str(tmp_path)).stdout)
    assert 0.05 < got["lat_pagefault"] < 50, got  # us per page touched
    assert 0 < got["lat_pagefault.faults_per_page"] <= 1.0
    assert got["lat_pagefault.per_fault"] >= got["lat_pagefault"]
    assert list(tmp_path.iterdir()) == []  # the private files are unlinked


def test_stream_kernels(bins):
    ops = ("copy", "scale", "add", "triad", "fill", "daxpy", "sum")
    bw = {op: value(run(bins, "stream", "-N", "3", op, "8192").stdout) for op in ops}
    assert all(1000 < v < 200_000 for v in bw.values()), bw  # MB/s
    both = value(run(bins, "stream", "-P", "2", "-N", "3", "triad").stdout)  # default 32 MB arrays, one set per child
    assert 1000 < both < 200_000
    assert run(bins, "stream", "copy", "0", check=False).returncode == 2


def test_pipe_and_unix_socket_bandwidth(bins):
    for prog in ("bw_pipe", "bw_unix"):
        out = run(bins, prog, "-N", "5").stdout
        assert out.startswith(f"{prog} ") and 100 < value(out) < 100_000, out  # MB/s in 64 KB chunks
        assert 100 < value(run(bins, prog, "-N", "3", "4096").stdout) < 100_000
        assert leftovers(bins, prog) == ""


@pytest.mark.parametrize("prog,low,high", [("lat_tcp", 5, 500), ("lat_udp", 5, 500), ("lat_connect", 5, 2000)])
def test_loopback_latencies_leave_no_server(bins, prog, low, high):
    out = run(bins, prog, "-N", "5").stdout
    assert out.startswith(f"{prog} ") and low < value(out) < high, out  # us
    assert leftovers(bins, prog) == ""


def test_loopback_parallel_and_message_sizes(bins):
    assert 5 < value(run(bins, "lat_tcp", "-P", "2", "-N", "3", "1000").stdout) < 1000
    assert 5 < value(run(bins, "lat_udp", "-N", "3", "8192").stdout) < 1000
    assert run(bins, "lat_connect", "-P", "2", check=False).returncode == 2  # not scalable
    assert run(bins, "lat_udp", "70000", check=False).returncode == 2
    assert leftovers(bins, "lat_tcp") == leftovers(bins, "lat_udp") == ""


def test_sleep_timers(bins):
    for op in ("usleep", "nanosleep", "select"):
        got = lines(run(bins, "lat_timer", "-N", "3", op, "1000").stdout)
        assert 0 <= got[f"lat_timer.{op}.min"] <= got[f"lat_timer.{op}"] < 20_000, got  # oversleep, us
        assert got[f"lat_timer.{op}.actual"] >= 1000, got
    assert value(run(bins, "lat_timer", "-N", "3", "nanosleep", "1").stdout) >= 0


def test_basic_operations(bins):
    got = {k: v for k, v in lines(run(bins, "lat_ops", "-N", "3", "all").stdout).items() if not k.endswith(".min")}
    assert len(got) == 16 and all(0.05 < v < 100 for v in got.values()), got  # ns
    assert got["lat_ops.int_add"] < 5
    assert got["lat_ops.double_div"] > got["lat_ops.int_add"]
    assert got["lat_ops.int64_div"] > got["lat_ops.int64_add"] and got["lat_ops.int_mul"] >= got["lat_ops.int_add"]
    assert run(bins, "lat_ops", "float_mod", check=False).returncode == 2  # mod only for integers
    assert run(bins, "lat_ops", "-P", "2", "int_add", check=False).returncode == 2


def test_interval_detection_and_its_cache(bins, tmp_path):
    cache = tmp_path / "calibration.tsv"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMBENCH")}

    def calibrated(*argv, **extra):
        return subprocess.run([str(bins / "lat_syscall"), "-N", "3", *argv, "null"], capture_output=True, text=True,
                              env={**env, **extra}, timeout=120, check=True)  # fmt: skip

    # Without LMBENCH_ENOUGH_US the harness calibrates itself by the delta method (seconds), then stores it.
    first = calibrated("-C", str(cache))
    assert "calibrated timing interval" in first.stderr and str(cache) in first.stderr
    assert 0.005 < value(first.stdout) < 20
    key, interval = cache.read_text().strip().split("\t")
    assert "host=" in key and "cpu=" in key and "clock_res_ns=" in key and int(interval) in (5000, 10000, 50000, 100000)

    second = calibrated("-C", str(cache))  # no calibration: read from the file
    assert f"timing interval {interval} us from calibration cache" in second.stderr
    assert "calibrated" not in second.stderr and 0.005 < value(second.stdout) < 20

    cache.write_text(f"host=elsewhere cpu=other clock_res_ns=1\t777\n{key}\t20000\n")
    third = calibrated(LMBENCH_CALIBRATION=str(cache))  # the environment names the file too
    assert "timing interval 20000 us from calibration cache" in third.stderr
    assert 0.005 < value(third.stdout) < 20 and "elsewhere" in cache.read_text()


def test_new_bad_arguments(bins):
    assert run(bins, "lat_pipe", "extra", check=False).returncode == 2
    assert run(bins, "lat_sig", "wave", check=False).returncode == 2
    assert run(bins, "lat_mmap", "0", check=False).returncode == 2
    assert run(bins, "lat_pagefault", "8", check=False).returncode == 2
    assert run(bins, "stream", "stir", check=False).returncode == 2
    assert run(bins, "bw_unix", "0", check=False).returncode == 2
    assert run(bins, "lat_timer", "doze", check=False).returncode == 2


# ---- the catalog wrapper ---------------------------------------------------------------------


def lmbench_campaign(tmp_path, variables):
    import yaml

    from perfsnake.campaign import load_campaign

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "benchmark": "lmbench", "variables": variables}))
    return load_campaign(path)


@pytest.mark.parametrize("variables,key,problem", [
    ({"micro": ["stream"], "op": ["stir"]}, "variables.op", "not an operation of stream"),
    ({"micro": ["lat_ops"], "op": ["float_mod"]}, "variables.op", "not an operation of lat_ops"),
    ({"micro": ["lat_sig"], "op": ["wave"]}, "variables.op", "not an operation of lat_sig"),
    ({"micro": ["lat_connect"], "parallel": [1, 2]}, "variables.parallel", "not a scalable benchmark"),
    ({"micro": ["lat_timer"], "interval_us": [0]}, "variables.interval_us", "not a positive integer"),
    ({"micro": ["lat_udp"], "msg_bytes": [100000]}, "variables.msg_bytes", "up to 65507"),
    ({"micro": ["lat_pagefault"], "size_kb": [16]}, "variables.size_kb", "size_kb >= 64"),
    ({"micro": ["lat_nope"]}, "variables.micro", "unknown micro-benchmark"),
])  # fmt: skip
def test_catalog_rejects_bad_variables(tmp_path, variables, key, problem):
    from perfsnake.errors import CampaignError

    with pytest.raises(CampaignError) as info:
        lmbench_campaign(tmp_path, variables)
    assert info.value.key == key and problem in info.value.problem and "\n" not in str(info.value)


def test_catalog_commands_and_parsing(tmp_path):
    from perfsnake.benchmarks.base import RunContext
    from perfsnake.benchmarks.lmbench import LmbenchBenchmark, OPS

    bench = LmbenchBenchmark({}, "test")
    campaign = lmbench_campaign(tmp_path, {"micro": list(OPS)})  # every program validates with its defaults
    assert len(campaign.records) == len(OPS)

    def argv(**params):
        ctx = RunContext(params={**bench.run_defaults, **params}, build_dir=tmp_path, run_dir=tmp_path, duration_s=1)
        return bench.run_command(ctx)

    common = ["-P", "1", "-N", "11", "-C", str(tmp_path / "calibration.tsv")]
    assert argv(micro="stream", op="triad") == [str(tmp_path / "stream"), *common, "triad", "32768"]
    assert argv(micro="stream", op="sum", size_kb=1024)[-2:] == ["sum", "1024"]
    assert argv(micro="lat_timer", op="select", interval_us=500)[-2:] == ["select", "500"]
    assert argv(micro="lat_tcp", msg_bytes=64)[-1] == "64" and argv(micro="lat_pipe")[-1] == str(tmp_path / "calibration.tsv")
    assert argv(micro="lat_ops", op="int64_div")[-1] == "int64_div" and argv(micro="lat_pagefault", size_kb=256)[-1] == "256"

    got = bench.parse("lat_tcp 12.5000 us\nlat_tcp.min 11.0000 us\n", "", {})
    assert got["latency_ns"] == 12500 and got["latency_min_ns"] == 11000 and got["bandwidth_mb_s"] is None
    got = bench.parse("stream.triad 40000.00 MB/s\nstream.triad.max 45000.00 MB/s\n", "", {})
    assert got["bandwidth_mb_s"] == 40000 and got["bandwidth_max_mb_s"] == 45000 and got["latency_ns"] is None
    got = bench.parse("lat_timer.select 70.5 us\nlat_timer.select.min 60.0 us\nlat_timer.select.actual 1070.5 us\n", "", {})
    assert got["latency_ns"] == 70500 and got["latency_min_ns"] == 60000 and got["actual_ns"] == 1070500
    got = bench.parse("lat_pagefault 0.1 us\nlat_pagefault.min 0.09 us\nlat_pagefault.per_fault 1.6 us\nlat_pagefault.faults_per_page 0.0625 ratio\n", "", {})
    assert got["per_fault_ns"] == pytest.approx(1600) and got["latency_ns"] == pytest.approx(100)
    got = bench.parse("lat_ops.int_add 0.2500 ns\nlat_ops.int_add.min 0.2400 ns\n", "", {})  # older output without .min still parses
    assert got["latency_ns"] == 0.25 and bench.parse("lat_syscall.null 0.1 us\n", "", {})["latency_min_ns"] is None
