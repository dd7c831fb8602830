"""The catalog's packaged workloads (issue 24): stress-ng, sysbench, fio,
cyclictest. Each: bad variables refused in one line before anything runs, its
parser on real output captured from the real tool (tests/data/<tool>/, with
the command that made it), malformed output refused, and its ready campaign
run end to end through Snakemake."""

from __future__ import annotations

import shlex
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers import ROOT, snakemake, write_campaign

from perfsnake.benchmarks import BUILTINS
from perfsnake.benchmarks.base import RunContext
from perfsnake.errors import CampaignError

DATA = Path(__file__).parent / "data"


def load(tmp_path: Path, benchmark: str, variables: dict) -> object:
    from perfsnake.campaign import load_campaign

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "benchmark": benchmark, "variables": variables}))
    return load_campaign(path)


def refused(tmp_path: Path, benchmark: str, variables: dict) -> CampaignError:
    with pytest.raises(CampaignError) as info:
        load(tmp_path, benchmark, variables)
    assert "\n" not in str(info.value)
    return info.value


def data(tool: str, name: str) -> str:
    return (DATA / tool / name).read_text()


def argv(tmp_path: Path, benchmark: str, server: str | None = None, **params) -> list[str]:
    bench = BUILTINS[benchmark]({"type": benchmark}, "test")
    return bench.run_command(RunContext(params=params, build_dir=None, run_dir=tmp_path, duration_s=2, server=server))


def run_ready_campaign(tmp_path: Path, name: str, **overrides) -> object:
    """The shipped campaign (with smaller settings), run through the workflow; its CSV."""
    from perfsnake.campaign_csv import read_csv

    spec = yaml.safe_load((ROOT / "config" / "campaigns" / f"{name}.yaml").read_text())
    spec.update(overrides)
    camp = write_campaign(tmp_path, spec)
    snakemake(tmp_path, camp, "--cores", "1", "all")
    return read_csv(tmp_path / "results" / spec["name"] / f"{spec['name']}.csv")


@pytest.mark.parametrize("benchmark,package", [("stress_ng", "stress-ng"), ("sysbench", "sysbench"), ("fio", "fio"),
                                               ("cyclictest", "rt-tests"), ("rocksdb", "rocksdb-tools"),
                                               ("kyotocabinet", "kyotocabinet-utils"), ("redis", "redis-tools"),
                                               ("memcached", "libmemcached-tools"), ("postgresql", "postgresql-15"),
                                               ("mariadb", "mariadb-server")])  # fmt: skip
def test_a_missing_tool_names_its_package(tmp_path, monkeypatch, benchmark, package):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing installed
    error = refused(tmp_path, benchmark, {})
    assert (
        error.key == "benchmark"
        and f"Debian package {package}" in error.problem
        and "scripts/setup/apt.sh" in error.problem
    )


def unparsed(tmp_path: Path) -> list[str]:
    """Metrics any run of the campaign left unparsed (a metric a test does not have must not be one)."""
    import json

    return [
        name
        for path in (tmp_path / "results").rglob("result.json")
        for name in json.loads(path.read_text()).get("unparsed", [])
    ]


# ---- stress-ng ------------------------------------------------------------------------------


@pytest.mark.parametrize("variables,key,problem", [
    ({"stressor": ["cpuu"]}, "variables.stressor", "did you mean 'cpu'"),
    ({"stressor": ["cpu"], "method": ["matrixprd"]}, "variables.method", "not a method of cpu"),
    ({"stressor": ["null"], "method": ["x"]}, "variables.method", "has no methods"),
    ({"instances": [0]}, "variables.instances", "not a positive integer"),
])  # fmt: skip
def test_stress_ng_refuses_bad_variables(tmp_path, variables, key, problem):
    error = refused(tmp_path, "stress_ng", variables)
    assert error.key == key and problem in error.problem


def test_stress_ng_command_and_real_output(tmp_path):
    assert len(load(tmp_path, "stress_ng", {"stressor": ["cpu"], "method": ["", "fft"]}).records) == 2
    cmd = argv(tmp_path, "stress_ng", stressor="cpu", method="fft", instances=2)
    assert cmd[:5] == ["stress-ng", "--cpu", "2", "--cpu-method", "fft"]
    assert cmd[-2:] == ["--yaml", str(tmp_path / "stress-ng.yaml")] and "--metrics-brief" in cmd
    bench = BUILTINS["stress_ng"]({}, "test")
    short = RunContext(params={"stressor": "cpu"}, build_dir=None, run_dir=tmp_path, duration_s=0.4)
    assert bench.run_command(short)[3:5] == ["--timeout", "1s"]  # stress-ng reads "0.4s" as no limit at all
    bench = BUILTINS["stress_ng"]({}, "test")
    got = bench.parse("", data("stress_ng", "stderr.txt"), {"stressor": "cpu"})
    assert got == {"bogo_ops": 90, "bogo_ops_per_s": 85.39, "bogo_ops_per_s_cpu": 429.91,
                   "real_time_s": 1.05, "usr_time_s": 0.21, "sys_time_s": 0.0}  # fmt: skip


def test_stress_ng_refuses_malformed_output():
    bench = BUILTINS["stress_ng"]({}, "test")
    with pytest.raises(ValueError, match="no stress-ng --metrics-brief table"):
        bench.parse("", "stress-ng: info: [1] dispatching hogs: 1 cpu\n", {"stressor": "cpu"})
    with pytest.raises(ValueError, match="no row for stressor 'vm'"):
        bench.parse("", data("stress_ng", "stderr.txt"), {"stressor": "vm"})


@pytest.mark.e2e
def test_stress_ng_ready_campaign(tmp_path):
    frame = run_ready_campaign(tmp_path, "stress_ng", nb_runs=1, duration_s=1)
    assert len(frame) == 4 and (frame["status"] == "ok").all()
    assert (frame["bogo_ops"] > 0).all() and (frame["bogo_ops_per_s"] > 0).all()
    assert unparsed(tmp_path) == []
    assert len(list((tmp_path / "results").rglob("stress-ng.yaml"))) == 4


# ---- sysbench -------------------------------------------------------------------------------


@pytest.mark.parametrize("variables,key,problem", [
    ({"test": ["fileio"]}, "variables.test", "not one of cpu, memory, threads, mutex"),
    ({"test": ["cpuu"]}, "variables.test", "did you mean 'cpu'"),
    ({"threads": [0]}, "variables.threads", "not a positive integer"),
    ({"test": ["memory"], "memory_block_size": ["4 KB"]}, "variables.memory_block_size", "not a size"),
    ({"test": ["memory"], "memory_oper": ["copy"]}, "variables.memory_oper", "not one of read, write, none"),
    ({"cpu_max_prime": [1.5]}, "variables.cpu_max_prime", "not a positive integer"),
])  # fmt: skip
def test_sysbench_refuses_bad_variables(tmp_path, variables, key, problem):
    error = refused(tmp_path, "sysbench", variables)
    assert error.key == key and problem in error.problem


def test_sysbench_commands(tmp_path):
    assert len(load(tmp_path, "sysbench", {"test": ["cpu", "memory", "threads", "mutex"]}).records) == 4
    bench = BUILTINS["sysbench"]({}, "test")
    cmd = argv(tmp_path, "sysbench", **{**bench.run_defaults, "test": "memory", "threads": 2})
    assert cmd[:4] == ["sysbench", "memory", "--threads=2", "--time=2"] and cmd[-1] == "run"
    assert "--memory-block-size=1K" in cmd and not any(a.startswith("--cpu-max-prime") for a in cmd)
    cmd = argv(tmp_path, "sysbench", **{**bench.run_defaults, "test": "cpu", "time_s": 5, "cpu_max_prime": 2000})
    assert "--time=5" in cmd and "--cpu-max-prime=2000" in cmd and not any(a.startswith("--memory") for a in cmd)


def test_sysbench_parses_real_output():
    bench = BUILTINS["sysbench"]({}, "test")
    cpu = bench.parse(data("sysbench", "cpu.txt"), "", {"test": "cpu"})
    assert cpu == {"total_time_s": 1.0024, "total_events": 4171, "latency_min_ms": 0.03, "latency_avg_ms": 0.24,
                   "latency_max_ms": 28.10, "latency_p95_ms": 0.05, "events_per_s": 4157.22}  # fmt: skip
    memory = bench.parse(data("sysbench", "memory.txt"), "", {"test": "memory"})
    assert memory["mib_per_s"] == 1992.73 and memory["total_events"] == 262144
    assert memory["events_per_s"] == pytest.approx(262144 / 0.5128)
    threads = bench.parse(data("sysbench", "threads.txt"), "", {"test": "threads"})
    assert threads["events_per_s"] == pytest.approx(519 / 1.3316) and threads["latency_p95_ms"] == 6.79
    mutex = bench.parse(data("sysbench", "mutex.txt"), "", {"test": "mutex"})
    assert mutex["total_events"] == 2 and mutex["latency_max_ms"] == 2.74


def test_sysbench_refuses_malformed_output():
    bench = BUILTINS["sysbench"]({}, "test")
    with pytest.raises(ValueError, match="no 'General statistics:'"):
        bench.parse("sysbench 1.0.20\nFATAL: invalid option\n", "", {"test": "cpu"})
    truncated = data("sysbench", "cpu.txt").split("Latency (ms):")[0]
    with pytest.raises(ValueError, match="no latency_min_ms line"):
        bench.parse(truncated, "", {"test": "cpu"})
    no_mib = "\n".join(line for line in data("sysbench", "memory.txt").splitlines() if "MiB/sec" not in line)
    with pytest.raises(ValueError, match="no 'MiB transferred'"):
        bench.parse(no_mib, "", {"test": "memory"})


@pytest.mark.e2e
def test_sysbench_ready_campaign(tmp_path):
    frame = run_ready_campaign(tmp_path, "sysbench", nb_runs=1)
    assert len(frame) == 8 and (frame["status"] == "ok").all()
    assert (frame["events_per_s"] > 0).all() and (frame["total_events"] > 0).all()
    assert unparsed(tmp_path) == []
    assert (frame["latency_max_ms"] >= frame["latency_min_ms"]).all()
    memory = frame[frame["test"] == "memory"]
    assert (memory["mib_per_s"] > 0).all() and frame[frame["test"] != "memory"]["mib_per_s"].isna().all()


# ---- fio ------------------------------------------------------------------------------------


@pytest.mark.parametrize("variables,key,problem", [
    ({"rw": ["randomread"]}, "variables.rw", "did you mean 'randread'"),
    ({"bs": ["4KB"]}, "variables.bs", "not a size"),
    ({"iodepth": [0]}, "variables.iodepth", "not a positive integer"),
    ({"ioengine": ["windowsaio"]}, "variables.ioengine", "not one of psync"),
    ({"direct": [2]}, "variables.direct", "not one of 0, 1"),
    ({"numjobs": ["two"]}, "variables.numjobs", "not a positive integer"),
])  # fmt: skip
def test_fio_refuses_bad_variables(tmp_path, variables, key, problem):
    error = refused(tmp_path, "fio", variables)
    assert error.key == key and problem in error.problem


def test_fio_command_works_on_a_file_in_the_run_directory(tmp_path):
    assert len(load(tmp_path, "fio", {"rw": ["read", "randrw"], "bs": ["4k", "1M"]}).records) == 4
    bench = BUILTINS["fio"]({}, "test")
    cmd = argv(tmp_path, "fio", **{**bench.run_defaults, "rw": "randrw", "iodepth": 8, "ioengine": "libaio"})
    assert cmd[0] == "fio" and f"--filename={tmp_path / 'fio.data'}" in cmd
    assert {"--rw=randrw", "--iodepth=8", "--ioengine=libaio", "--runtime=2", "--time_based", "--unlink=1",
            "--output-format=json", "--group_reporting"} <= set(cmd)  # fmt: skip


def test_fio_parses_real_output():
    bench = BUILTINS["fio"]({}, "test")
    got = bench.parse(data("fio", "randrw.json"), "", {"rw": "randrw"})
    assert got["read_iops"] == pytest.approx(9826.213592) and got["write_iops"] == pytest.approx(10059.223301)
    assert got["read_lat_p99_us"] == pytest.approx(3948.544)
    for direction in ("read", "write"):
        assert 0 < got[f"{direction}_lat_p50_us"] <= got[f"{direction}_lat_p99_us"]
        assert got[f"{direction}_bw_kib_s"] > 0 and got[f"{direction}_lat_mean_us"] > 0
    # A note before the JSON document (fio prints some) does not hide it.
    assert bench.parse("note: something\n" + data("fio", "randrw.json"), "", {}) == got


def test_fio_refuses_malformed_output():
    import json

    bench = BUILTINS["fio"]({}, "test")
    with pytest.raises(ValueError, match="no JSON document"):
        bench.parse("fio: failed parsing rw=sideways\n", "", {})
    with pytest.raises(json.JSONDecodeError):
        bench.parse(data("fio", "randrw.json")[:500], "", {})
    report = json.loads(data("fio", "randrw.json"))
    report["jobs"][0]["error"] = 5
    with pytest.raises(ValueError, match="fio job error 5"):
        bench.parse(json.dumps(report), "", {})
    for direction in ("read", "write"):
        report["jobs"][0][direction]["total_ios"] = 0
    report["jobs"][0]["error"] = 0
    with pytest.raises(ValueError, match="no completed I/O"):
        bench.parse(json.dumps(report), "", {})


@pytest.mark.e2e
def test_fio_ready_campaign(tmp_path):
    frame = run_ready_campaign(
        tmp_path, "fio", nb_runs=1, duration_s=1, variables={"rw": ["randread", "write"], "bs": ["4k"], "size": ["8M"]}
    )
    assert len(frame) == 2 and (frame["status"] == "ok").all()
    reads, writes = frame[frame["rw"] == "randread"].iloc[0], frame[frame["rw"] == "write"].iloc[0]
    assert reads["read_iops"] > 0 and reads["read_lat_p99_us"] >= reads["read_lat_p50_us"] > 0
    assert writes["write_iops"] > 0 and writes["write_bw_kib_s"] > 0
    assert unparsed(tmp_path) == []
    assert pd.isna(reads["write_iops"]) and pd.isna(writes["read_iops"])  # a direction not exercised has no figures
    assert not list((tmp_path / "results").rglob("fio.data"))  # the data file is deleted after each run


# ---- cyclictest -----------------------------------------------------------------------------


@pytest.mark.parametrize("variables,key,problem", [
    ({"threads": [0]}, "variables.threads", "not a positive integer"),
    ({"interval_us": [0.5]}, "variables.interval_us", "not a positive integer"),
    ({"priority": [120]}, "variables.priority", "above SCHED_FIFO's highest priority, 99"),
    ({"histogram_us": [-1]}, "variables.histogram_us", "not a positive integer"),
])  # fmt: skip
def test_cyclictest_refuses_bad_variables(tmp_path, variables, key, problem):
    error = refused(tmp_path, "cyclictest", variables)
    assert error.key == key and problem in error.problem


def test_cyclictest_command(tmp_path):
    bench = BUILTINS["cyclictest"]({}, "test")
    cmd = argv(tmp_path, "cyclictest", **{**bench.run_defaults, "threads": 2, "duration_s": 5})
    assert cmd[0] == "cyclictest" and {"--mlockall", "--quiet", "--threads=2", "--duration=5", "--priority=80",
                                       "--histogram=5000", "--interval=1000"} == set(cmd[1:])  # fmt: skip


def test_cyclictest_percentiles_from_its_histogram():
    from perfsnake.benchmarks.cyclictest import percentile

    buckets = [(1, 50), (2, 40), (3, 9)]  # plus one overflow: 100 samples
    assert percentile(buckets, 100, 0.5) == 1 and percentile(buckets, 100, 0.9) == 2
    assert percentile(buckets, 100, 0.99) == 3 and percentile(buckets, 100, 0.999) is None


def test_cyclictest_parses_real_output():
    bench = BUILTINS["cyclictest"]({}, "test")
    got = bench.parse(data("cyclictest", "hist.txt"), data("cyclictest", "hist.err"), {"priority": 80})
    # Thread totals 974 and 884 in the histogram, plus 3 and 6 overflows.
    assert got["samples"] == 974 + 884 + 3 + 6 and got["overflows"] == 9
    assert got["latency_min_us"] == 7 and got["latency_max_us"] == 75150 and got["rt_priority"] == 80
    assert got["latency_avg_us"] == pytest.approx((40 * 977 + 128 * 890) / 1867)
    assert 7 <= got["latency_p50_us"] <= got["latency_p99_us"] < 400
    assert got["latency_p999_us"] is None  # the slowest 0.5 % overflowed the 400 us histogram


def test_cyclictest_without_rt_priority_says_so():
    bench = BUILTINS["cyclictest"]({}, "test")
    with pytest.raises(ValueError, match="could not get real-time priority 80: run as root or raise RLIMIT_RTPRIO"):
        bench.parse("", data("cyclictest", "nort.err"), {"priority": 80})


def test_cyclictest_refuses_malformed_output():
    bench = BUILTINS["cyclictest"]({}, "test")
    summary_only = "T: 0 ( 1) P:80 I:1000 C:   1000 Min:  7 Act:  9 Avg:  12 Max:  40\n"
    with pytest.raises(ValueError, match="was it run with -h"):
        bench.parse(summary_only, "", {})
    text = data("cyclictest", "hist.txt")
    with pytest.raises(ValueError, match="no histogram"):
        bench.parse("\n".join(line for line in text.splitlines() if line.startswith("#")), "", {})
    with pytest.raises(ValueError, match="1 counts for 2 threads"):
        bench.parse(text.replace("000007 000005\t000003", "000007 000005"), "", {})


@pytest.mark.e2e
def test_cyclictest_ready_campaign(tmp_path):
    import os

    if os.geteuid() != 0:
        pytest.skip("cyclictest's real-time priority needs root here")
    frame = run_ready_campaign(tmp_path, "cyclictest", nb_runs=1, duration_s=1)
    assert len(frame) == 2 and (frame["status"] == "ok").all()
    assert (frame["samples"] > 0).all() and (frame["latency_p50_us"] > 0).all()
    assert (frame["latency_max_us"] >= frame["latency_avg_us"]).all() and (
        frame["latency_avg_us"] >= frame["latency_min_us"]
    ).all()
    # Under load the p99 may overflow the histogram (then it is empty, never wrong).
    assert (frame["latency_p99_us"].isna() | (frame["latency_p99_us"] >= frame["latency_p50_us"])).all()


@pytest.mark.e2e
def test_cyclictest_without_rt_priority_is_a_failed_run_with_the_reason(tmp_path, monkeypatch):
    """The workflow run without CAP_SYS_NICE (as an unprivileged user would be):
    the run fails, and its result says why."""
    import json
    import os
    import shutil

    import helpers

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to drop CAP_SYS_NICE")
    # Dropped from the bounding and inheritable sets, so nothing the workflow starts gets it back.
    wrapper = tmp_path / "snakemake-without-rt"
    wrapper.write_text(
        f'#!/bin/sh\nexec setpriv --bounding-set -sys_nice --inh-caps -sys_nice {shlex.quote(helpers.SNAKEMAKE)} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setattr(helpers, "SNAKEMAKE", str(wrapper))
    camp = write_campaign(tmp_path, {"name": "nort", "benchmark": "cyclictest", "variables": {"threads": [1]},
                                     "nb_runs": 1, "duration_s": 1, "timeout_s": 30})  # fmt: skip
    helpers.snakemake(tmp_path, camp, "--cores", "1", "all")
    (result,) = [json.loads(p.read_text()) for p in (tmp_path / "results" / "nort").rglob("result.json")]
    assert result["status"] == "failed"
    assert any("could not get real-time priority 80" in e for e in result["parse_errors"])
    assert "Unable to change scheduling policy" in result["stderr_tail"]


# ---- RocksDB db_bench -----------------------------------------------------------------------


@pytest.mark.parametrize("variables,key,problem", [
    ({"bench_name": ["readrandon"]}, "variables.bench_name", "did you mean 'readrandom'"),
    ({"nb_threads": [0]}, "variables.nb_threads", "not a positive integer"),
    ({"num": ["many"]}, "variables.num", "not a positive integer"),
    ({"value_size": [-5]}, "variables.value_size", "not a positive integer"),
])  # fmt: skip
def test_rocksdb_refuses_bad_variables(tmp_path, variables, key, problem):
    error = refused(tmp_path, "rocksdb", variables)
    assert error.key == key and problem in error.problem


def test_rocksdb_fill_once_and_commands(tmp_path):
    from perfsnake.benchmarks.base import BuildContext

    bench = BUILTINS["rocksdb"]({}, "test")
    assert bench.build_variables(["num", "value_size", "nb_threads", "bench_name"]) == ["num", "value_size"]
    fill = bench.build_script(
        BuildContext(params={"num": 500, "value_size": 64}, build_dir=tmp_path, src_dir=None, threads=1)
    )
    assert fill == f"db_bench --benchmarks=fillseq --num=500 --value_size=64 --db={tmp_path / 'db'}"
    params = {**bench.build_defaults, **bench.run_defaults}
    ctx = RunContext(params={**params, "nb_threads": 4}, build_dir=tmp_path, run_dir=tmp_path, duration_s=1)
    cmd = bench.run_command(ctx)
    assert {
        "--benchmarks=readrandom",
        "--threads=4",
        "--use_existing_db=1",
        f"--db={tmp_path / 'db'}",
        "--readonly=1",
    } <= set(cmd)
    ctx = RunContext(params={**params, "bench_name": "overwrite"}, build_dir=tmp_path, run_dir=tmp_path, duration_s=1)
    assert "--readonly=1" not in bench.run_command(ctx)


def test_rocksdb_parses_real_output_and_refuses_malformed():
    bench = BUILTINS["rocksdb"]({}, "test")
    got = bench.parse(data("rocksdb", "readrandom.txt"), "", {"bench_name": "readrandom"})
    assert got == {"micros_per_op": 9.975, "ops_per_s": 183027.0, "mb_per_s": 20.2}
    with pytest.raises(ValueError, match="no 'seekrandom : ... micros/op"):
        bench.parse(data("rocksdb", "readrandom.txt"), "", {"bench_name": "seekrandom"})
    with pytest.raises(ValueError, match="micros/op"):
        bench.parse("Invalid argument: db_bench: unknown benchmark\n", "", {"bench_name": "readrandom"})


@pytest.mark.e2e
def test_rocksdb_ready_campaign_fills_once(tmp_path):
    frame = run_ready_campaign(tmp_path, "rocksdb", nb_runs=1, variables={"bench_name": ["readrandom", "seekrandom"],
                                                                          "nb_threads": [1, 2], "reads": [5000]})  # fmt: skip
    assert len(frame) == 4 and (frame["status"] == "ok").all()
    assert (frame["ops_per_s"] > 0).all() and (frame["micros_per_op"] > 0).all()
    assert unparsed(tmp_path) == []
    assert len(list((tmp_path / "resources" / "builds" / "rocksdb").glob("*/db/CURRENT"))) == 1  # one fill for all runs


# ---- Kyoto Cabinet --------------------------------------------------------------------------


@pytest.mark.parametrize("variables,key,problem", [
    ({"db": ["btree"]}, "variables.db", "not one of cache, hash, tree"),
    ({"mode": ["queue"]}, "variables.mode", "not one of order, wicked"),
    ({"nb_threads": [0]}, "variables.nb_threads", "not a positive integer"),
    ({"rnum": [True]}, "variables.rnum", "not a positive integer"),
])  # fmt: skip
def test_kyotocabinet_refuses_bad_variables(tmp_path, variables, key, problem):
    error = refused(tmp_path, "kyotocabinet", variables)
    assert error.key == key and problem in error.problem


def test_kyotocabinet_commands(tmp_path):
    bench = BUILTINS["kyotocabinet"]({}, "test")
    base = bench.run_defaults
    assert (
        argv(tmp_path, "kyotocabinet", **{**base, "db": "cache", "nb_threads": 4}) == "kccachetest order -th 4 100000"
    )
    db = tmp_path / "kc.kct"
    text = argv(tmp_path, "kyotocabinet", **{**base, "db": "tree", "mode": "wicked", "iterations": 3, "rnum": 10})
    assert text == f"kctreetest wicked -th 1 -it 3 {db} 10; status=$?; rm -f {db}; exit $status"


def test_kyotocabinet_parses_real_output():
    bench = BUILTINS["kyotocabinet"]({}, "test")
    got = bench.parse(data("kyotocabinet", "hash_order.txt"), "", {"db": "hash", "nb_threads": 2, "rnum": 20000})
    assert got["set_ops_per_s"] == pytest.approx(40000 / 0.070) and got["get_ops_per_s"] == pytest.approx(40000 / 0.039)
    assert got["remove_ops_per_s"] == pytest.approx(40000 / 0.045) and got["time_s"] == pytest.approx(0.154)
    assert got["ops_per_s"] == pytest.approx(120000 / 0.154)
    got = bench.parse(data("kyotocabinet", "cache_order.txt"), "", {"db": "cache", "rnum": 20000})
    assert got["set_ops_per_s"] == pytest.approx(20000 / 0.042)
    params = {"db": "tree", "mode": "wicked", "nb_threads": 2, "iterations": 2, "rnum": 2000}
    got = bench.parse(data("kyotocabinet", "tree_wicked.txt"), "", params)
    assert got["time_s"] == pytest.approx(0.029) and got["ops_per_s"] == pytest.approx(8000 / 0.029)
    assert "set_ops_per_s" not in got  # not a metric of wicked, so not reported as unparsed


def test_kyotocabinet_refuses_malformed_output():
    bench = BUILTINS["kyotocabinet"]({}, "test")
    failed = data("kyotocabinet", "hash_order.txt").replace(
        "\nok\n", "\nerror\n\nFAILED: KCRNDSEED=1 PID=2 kchashtest\n", 1
    )
    with pytest.raises(ValueError, match="did not end with 'ok'"):
        bench.parse(failed, "", {"rnum": 20000})
    with pytest.raises(ValueError, match="1 times in the wicked test's output for 2 iterations"):
        bench.parse(
            data("kyotocabinet", "tree_wicked.txt").split("iteration 2:")[0] + "ok\n",
            "",
            {"mode": "wicked", "iterations": 2},
        )
    with pytest.raises(ValueError, match="no setting/getting/removing phases"):
        bench.parse(data("kyotocabinet", "tree_wicked.txt"), "", {"mode": "order"})


@pytest.mark.e2e
def test_kyotocabinet_ready_campaign(tmp_path):
    frame = run_ready_campaign(tmp_path, "kyotocabinet", nb_runs=1, variables={"db": ["cache", "tree"], "mode": ["order", "wicked"],
                                                                               "nb_threads": [2], "rnum": [20000]})  # fmt: skip
    assert len(frame) == 4 and (frame["status"] == "ok").all()
    assert (frame["ops_per_s"] > 0).all() and (frame["time_s"] > 0).all()
    assert unparsed(tmp_path) == []
    assert (frame[frame["mode"] == "order"]["get_ops_per_s"] > 0).all()
    assert not list((tmp_path / "results").rglob("kc.kc[ht]"))  # the database files are removed after each run


# ---- redis ----------------------------------------------------------------------------------


@pytest.mark.parametrize("variables,key,problem", [
    ({"tests": ["set,gett"]}, "variables.tests", "'gett' is not a redis-benchmark test"),
    ({"clients": [0]}, "variables.clients", "not a positive integer"),
    ({"maxmemory": ["lots"]}, "variables.maxmemory", "not a size"),
])  # fmt: skip
def test_redis_refuses_bad_variables(tmp_path, variables, key, problem):
    error = refused(tmp_path, "redis", variables)
    assert error.key == key and problem in error.problem


def test_redis_command_and_real_output(tmp_path):
    cmd = argv(tmp_path, "redis", tests="set,get", clients=10, requests=2000, pipeline=4, data_size=32,
               io_threads=1, maxmemory="64mb")  # fmt: skip
    assert cmd[:2] == ["/bin/sh", "-c"] and cmd[3] == "redis"
    start, ready, client, stop = cmd[4:]
    assert start.startswith('redis-server --port 0 --unixsocket "$dir"/redis.sock') and "--maxmemory 64mb" in start
    assert "--save '' " in start and ready.endswith("| grep -q PONG")
    assert client == 'redis-benchmark -s "$dir"/redis.sock -t set,get -c 10 -n 2000 -P 4 -d 32 --csv'
    assert stop == 'redis-cli -s "$dir"/redis.sock shutdown nosave'
    bench = BUILTINS["redis"]({}, "test")
    got = bench.parse(data("redis", "set_get_incr.csv"), "", {})
    assert got["set_rps"] == 65789.48 and got["get_p99_ms"] == 0.151 and got["incr_max_ms"] == 4.095
    assert len(got) == 3 * 6
    with pytest.raises(ValueError, match="no CSV table"):
        bench.parse("Could not connect to Redis at /tmp/x/redis.sock: No such file or directory\n", "", {})
    with pytest.raises(ValueError, match="has no number in 'rps'"):
        bench.parse(
            '"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"\n"SET","n/a","1","1","1","1","1","1"\n',
            "",
            {},
        )


def test_a_campaign_server_runs_the_client_alone(tmp_path):
    from perfsnake.benchmarks.server import AGAINST

    cmd = argv(tmp_path, "redis", clients=10, requests=2000, server="/tmp/perfsnake-server.x")
    assert cmd[:3] == ["/bin/sh", "-c", AGAINST] and cmd[3:5] == ["redis", "/tmp/perfsnake-server.x"]
    assert cmd[5].startswith('redis-benchmark -s "$dir"/redis.sock')
    bench = BUILTINS["redis"]({}, "test")
    # Runs that agree on the server variables share a server; client variables do not matter.
    assert bench.server_key({"clients": 1}) == bench.server_key({"clients": 50, "pipeline": 16})
    assert bench.server_key({"io_threads": 1}) != bench.server_key({"io_threads": 2})


@pytest.mark.parametrize("benchmark,key,problem", [
    ({"type": "redis", "server": "sometimes"}, "benchmark", "sometimes"),
    ({"type": "heater", "server": "run"}, "benchmark.server", "heater starts no server (the servers: mariadb, memcached, postgresql, redis)"),
])  # fmt: skip
def test_a_bad_server_scope_is_refused(tmp_path, benchmark, key, problem):
    error = refused(tmp_path, benchmark, {})
    assert error.key.startswith(key) and problem in error.problem


def server_records(tmp_path: Path) -> dict[str, dict]:
    """Each run's server.json (run path -> record)."""
    import json

    return {str(p.parent.relative_to(tmp_path / "results")): json.loads(p.read_text())
            for p in (tmp_path / "results").rglob("server.json")}  # fmt: skip


def gone(tmp_path: Path, needle: str, paths: list[Path] = (), within: float = 10) -> None:
    """Poll until no process of the test named `needle` is left and the paths are gone."""
    import time

    from helpers import processes_under

    deadline = time.monotonic() + within
    while processes_under(tmp_path, needle) or any(p.exists() for p in paths):
        assert time.monotonic() < deadline, f"{needle} or {[str(p) for p in paths if p.exists()]} outlived the campaign"
        time.sleep(0.05)


@pytest.mark.e2e
def test_redis_campaign_starts_one_server_per_setting_and_leaves_nothing(tmp_path):
    from perfsnake.stages.servers import private_dir

    frame = run_ready_campaign(tmp_path, "redis", nb_runs=1, plots=[],
                               variables={"clients": [1, 10], "io_threads": [1, 2], "requests": [2000]})  # fmt: skip
    assert len(frame) == 4 and (frame["status"] == "ok").all()
    assert (frame["set_rps"] > 0).all() and (frame["get_p99_ms"] > 0).all() and unparsed(tmp_path) == []
    served = server_records(tmp_path)
    assert len(served) == 4 and {r["scope"] for r in served.values()} == {"campaign"}
    by_server: dict[str, list[dict]] = {}
    for run, record in served.items():
        assert f"io_threads-{record['variables']['io_threads']}" in run
        by_server.setdefault(record["server"], []).append(record)
    # Two servers (io_threads 1 and 2), each started once and serving both client counts.
    assert len(by_server) == 2
    for records in by_server.values():
        assert len({r["pid"] for r in records}) == 1 and sorted(r["runs_before"] for r in records) == [0, 1]
    homes = [tmp_path / "results" / "redis" / "servers" / key for key in by_server]
    gone(tmp_path, "redis-server", [private_dir(home) for home in homes])


@pytest.mark.e2e
def test_a_server_that_dies_mid_run_fails_that_run_and_is_started_again(tmp_path):
    import os
    import signal
    import subprocess
    import time

    from helpers import SNAKEMAKE, processes_under

    spec = yaml.safe_load((ROOT / "config/campaigns/redis.yaml").read_text())
    spec.update(variables={"clients": [1], "requests": [100_000_000]}, nb_runs=2, timeout_s=3, plots=[])
    camp = write_campaign(tmp_path, spec)
    cmd = [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
           "--configfile", str(ROOT / "config/config.yaml"), "--cores", "1", "all", "--config", f"campaign={camp}"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not processes_under(tmp_path, "redis-benchmark"):
        assert time.monotonic() < deadline and proc.poll() is None, "the benchmark never started"
        time.sleep(0.05)
    for pid in processes_under(tmp_path, "redis-server"):  # the server itself, not its launcher
        if Path(f"/proc/{pid}/comm").read_text().strip() == "redis-server":
            os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    first, second = (tmp_path / "results/redis/runs/clients-1/requests-100000000" / f"run-{i}" for i in (1, 2))
    status = yaml.safe_load((first / "status.json").read_text())
    assert status["status"] == "hook_failed"
    assert status["reason"] == "the campaign's redis server was killed by signal 9 during the run"
    assert "HOOK_FAILED: the campaign's redis server was killed by signal 9 during the run" in err
    assert "was killed by signal 9; starting it again" in err
    # The next run met a new server (and timed out, as its client asked too much).
    assert yaml.safe_load((second / "status.json").read_text())["status"] == "timeout"
    served = server_records(tmp_path)
    assert served[str(second.relative_to(tmp_path / "results"))]["runs_before"] == 0
    assert len({r["pid"] for r in served.values()}) == 2
    gone(tmp_path, "redis-server")


@pytest.mark.e2e
def test_a_run_scoped_server_goes_with_its_timed_out_run(tmp_path):
    import re

    frame = run_ready_campaign(tmp_path, "redis", benchmark={"type": "redis", "server": "run"}, nb_runs=1,
                               variables={"clients": [1], "requests": [100_000_000]}, timeout_s=2, plots=[])  # fmt: skip
    assert list(frame["status"]) == ["timeout"] and not server_records(tmp_path)
    log = next((tmp_path / "results").rglob("server.log")).read_text()
    private = Path(re.search(r"connections at (/\S+)/redis\.sock", log).group(1))
    gone(tmp_path, "redis-server", [private])


@pytest.mark.e2e
def test_a_killed_workflow_takes_its_redis_server(tmp_path):
    import os
    import signal
    import subprocess
    import time

    from helpers import SNAKEMAKE, processes_under

    from perfsnake.stages.servers import private_dir

    spec = yaml.safe_load((ROOT / "config/campaigns/redis.yaml").read_text())
    spec.update(variables={"clients": [1], "requests": [100_000_000]}, nb_runs=1, plots=[])
    camp = write_campaign(tmp_path, spec)
    cmd = [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
           "--configfile", str(ROOT / "config/config.yaml"), "--cores", "1", "all", "--config", f"campaign={camp}"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 300
    while not processes_under(tmp_path, "redis-benchmark"):
        assert time.monotonic() < deadline and proc.poll() is None, "the benchmark never started"
        time.sleep(0.05)
    servers = processes_under(tmp_path, "redis-server")
    homes = list((tmp_path / "results/redis/servers").iterdir())
    assert servers and len(homes) == 1 and private_dir(homes[0]).is_dir()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 20
    while any(Path(f"/proc/{p}").exists() for p in servers):
        assert time.monotonic() < deadline, "redis-server outlived the killed workflow"
        time.sleep(0.05)
    gone(tmp_path, "redis-server", [private_dir(homes[0])])


# ---- memcached ------------------------------------------------------------------------------


@pytest.mark.parametrize("variables,key,problem", [
    ({"test": ["gett"]}, "variables.test", "did you mean 'get'"),
    ({"concurrency": [0]}, "variables.concurrency", "not a positive integer"),
    ({"binary": ["yes"]}, "variables.binary", "not one of True, False"),
])  # fmt: skip
def test_memcached_refuses_bad_variables(tmp_path, variables, key, problem):
    error = refused(tmp_path, "memcached", variables)
    assert error.key == key and problem in error.problem


def test_memcached_command_and_real_output(tmp_path):
    cmd = argv(tmp_path, "memcached", test="set", concurrency=2, keys=1000, binary=True, threads=2, memory_mb=64)
    start, ready, client, stop = cmd[4:]
    assert start == 'memcached -s "$dir"/memcached.sock -a 0700 -m 64 -t 2 -u "$(id -un)"'
    assert ready == 'test -S "$dir"/memcached.sock' and stop == 'kill "$server"'
    assert (
        client == 'memcslap --servers="$dir"/memcached.sock --test=set --concurrency=2 --execute-number=1000 --binary'
    )
    bench = BUILTINS["memcached"]({}, "test")
    assert bench.parse(data("memcached", "get.txt"), "", {"test": "get"}) == {"ops": 10000, "time_s": 0.119,
                                                                              "ops_per_s": 10000 / 0.119}  # fmt: skip
    # The get run also prints its loading "Time to set 5000 keys:" line, which is not the set test's.
    assert bench.parse(data("memcached", "set.txt"), "", {"test": "set"})["ops"] == 10000
    with pytest.raises(ValueError, match="no 'Time to mget"):
        bench.parse(data("memcached", "get.txt"), "", {"test": "mget"})


@pytest.mark.e2e
def test_memcached_ready_campaign_leaves_no_server(tmp_path):
    from helpers import processes_under

    frame = run_ready_campaign(tmp_path, "memcached", variables={"test": ["get", "set"], "concurrency": [2], "keys": [2000]},
                               nb_runs=1, plots=[])  # fmt: skip
    assert len(frame) == 2 and (frame["status"] == "ok").all() and (frame["ops_per_s"] > 0).all()
    assert unparsed(tmp_path) == [] and not processes_under(tmp_path, "memcached")


# ---- postgresql -----------------------------------------------------------------------------


@pytest.mark.parametrize("variables,key,problem", [
    ({"mode": ["select"]}, "variables.mode", "did you mean 'select-only'"),
    ({"shared_buffers": ["lots"]}, "variables.shared_buffers", "not a size"),
    ({"clients": [1], "threads": [2]}, "variables.threads", "at least as many clients as threads"),
])  # fmt: skip
def test_postgresql_refuses_bad_variables(tmp_path, variables, key, problem):
    error = refused(tmp_path, "postgresql", variables)
    assert error.key == key and problem in error.problem


def test_postgresql_command_and_real_output(tmp_path):
    cmd = argv(tmp_path, "postgresql", mode="select-only", scale=2, clients=4, threads=2, shared_buffers="64MB",
               fsync="off", synchronous_commit="on")  # fmt: skip
    start, ready, client, stop = cmd[4:]
    assert 'initdb -D "$dir"/data -A trust -U bench --no-sync' in start and "-c fsync=off" in start
    assert "-c shared_buffers=64MB" in start and "-c listen_addresses=" in start and "pg_isready" in ready
    assert 'pgbench -h "$dir" -U bench -i -q -s 2 postgres' in client
    assert client.endswith("-b select-only -c 4 -j 2 -T 2 postgres") and stop == 'kill -INT "$server"'
    bench = BUILTINS["postgresql"]({}, "test")
    got = bench.parse(data("postgresql", "pgbench_select_only.txt"), "", {})
    assert got == {"tps": 10670.049694, "latency_avg_ms": 0.094, "transactions": 21321, "connection_ms": 1.923,
                   "failed_transactions": 0}  # fmt: skip
    with pytest.raises(ValueError, match="no tps line"):
        bench.parse("pgbench: error: connection to server failed\n", "", {})


@pytest.mark.e2e
def test_postgresql_ready_campaign_leaves_no_server(tmp_path):
    from helpers import processes_under

    frame = run_ready_campaign(tmp_path, "postgresql", variables={"mode": ["select-only"], "clients": [2]},
                               nb_runs=1, duration_s=1, plots=[])  # fmt: skip
    assert len(frame) == 1 and (frame["status"] == "ok").all() and (frame["tps"] > 0).all()
    assert unparsed(tmp_path) == [] and not processes_under(tmp_path, "postgres -D")


# ---- mariadb --------------------------------------------------------------------------------


@pytest.mark.parametrize("variables,key,problem", [
    ({"script": ["oltp_read_writ"]}, "variables.script", "did you mean 'oltp_read_write'"),
    ({"buffer_pool": ["lots"]}, "variables.buffer_pool", "not a size"),
    ({"table_size": [0]}, "variables.table_size", "not a positive integer"),
])  # fmt: skip
def test_mariadb_refuses_bad_variables(tmp_path, variables, key, problem):
    error = refused(tmp_path, "mariadb", variables)
    assert error.key == key and problem in error.problem


def test_mariadb_command_and_real_output(tmp_path):
    start, ready, client, stop = argv(tmp_path, "mariadb", script="oltp_point_select", threads=4, tables=1,
                                      table_size=500, buffer_pool="64M")[4:]  # fmt: skip
    assert start.startswith('mariadb-install-db --no-defaults --datadir="$dir"/data') and "--skip-networking" in start
    assert "--innodb-buffer-pool-size=64M" in start and ready.endswith("ping") and stop.endswith("shutdown")
    assert "CREATE DATABASE sbtest" in client and " prepare >sysbench-prepare.log 2>&1 && " in client
    assert client.endswith("--tables=1 --table-size=500 --threads=4 --time=2 --percentile=95 run")
    bench = BUILTINS["mariadb"]({}, "test")
    got = bench.parse(data("mariadb", "oltp_read_write.txt"), "", {})
    assert set(got) == set(bench.metrics) and got["tps"] > 0 and got["qps"] > got["tps"]
    with pytest.raises(ValueError, match="no 'General statistics:'"):
        bench.parse("FATAL: unable to connect to MySQL server on socket\n", "", {})


@pytest.mark.e2e
def test_mariadb_ready_campaign_leaves_no_server(tmp_path):
    from helpers import processes_under

    frame = run_ready_campaign(tmp_path, "mariadb", variables={"script": ["oltp_point_select"], "threads": [2]},
                               nb_runs=1, duration_s=1, plots=[])  # fmt: skip
    assert len(frame) == 1 and (frame["status"] == "ok").all() and (frame["tps"] > 0).all()
    assert unparsed(tmp_path) == [] and not processes_under(tmp_path, "mariadbd")
