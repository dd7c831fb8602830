"""Our lock library: mutual exclusion, progress and condition variables for
every algorithm, and its use as a campaign instrument."""

import shlex
import subprocess
from pathlib import Path

import pytest
from helpers import jobs_run, snakemake, write_campaign

from perfsnake.campaign_csv import read_csv
from perfsnake.instruments.libs import ALLOCATORS
from perfsnake.instruments.locks import ALGORITHMS, LOCK_SOURCE
from perfsnake.layout import c_source
from perfsnake.machine.sysinfo import find_library

TORTURE = c_source("locks", "torture.c")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("locks")
    flags = ["-O2", "-Wall", "-Wextra", "-Werror"]
    subprocess.run(["cc", *flags, "-pthread", "-o", str(out / "torture"), str(TORTURE), "-ldl"], check=True)
    for name, number in ALGORITHMS.items():
        subprocess.run(["cc", *flags, "-fPIC", "-shared", "-pthread", f"-DPSLOCK_ALGO={number}",
                        "-o", str(out / f"{name}.so"), str(LOCK_SOURCE), "-ldl"], check=True)  # fmt: skip
    subprocess.run(
        [
            "cc",
            "-O2",
            "-fPIC",
            "-shared",
            "-o",
            str(out / "broken.so"),
            str(Path(__file__).parent / "data" / "broken_lock.c"),
        ],
        check=True,
    )
    return out


def torture(built, lib, threads, iterations=10000, timeout=120):
    env = {"PATH": "/usr/bin:/bin"}
    if lib:
        env["LD_PRELOAD"] = str(built / lib)
    return subprocess.run(
        [str(built / "torture"), str(threads), str(iterations)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
@pytest.mark.parametrize("threads", [2, 5, 8])
def test_torture_every_algorithm(built, algorithm, threads):
    # Fair queue locks hand over to a waiter that must be scheduled first: on
    # a loaded 2-CPU machine each hand-over can cost a time slice, so few
    # iterations, and a deadline that says "it ends", not how fast.
    proc = torture(built, f"{algorithm}.so", threads, iterations=2000, timeout=900)
    assert proc.returncode == 0, proc.stderr
    # The interposed library was really in effect.
    assert proc.stdout.startswith(f"torture: ok {algorithm} threads={threads}")


def test_torture_catches_a_broken_lock(built):
    # Two threads meet inside an unlocked section within the first thousand
    # iterations on two CPUs; the deadline only says the torture ends (it
    # runs every iteration even after the first failure, slowly under load).
    proc = torture(built, "broken.so", 4, iterations=50000, timeout=600)
    assert proc.returncode == 1
    assert "FAILED" in proc.stderr


@pytest.mark.parametrize("allocator", sorted(ALLOCATORS))
@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_every_algorithm_beside_a_preloaded_allocator(built, algorithm, allocator):
    """shared_libs: [lock, jemalloc] (found by the composition matrix): the
    allocator's own mutexes are the library's, so neither its set-up (the
    NUMA topology) nor a lock's state may allocate; fopen's malloc deadlocked
    inside jemalloc's initialisation before a program's first line."""
    soname, package = ALLOCATORS[allocator]
    path = find_library(soname)
    assert path, f"{soname} missing (Debian package {package}; make setup installs it)"
    env = {"PATH": "/usr/bin:/bin", "LD_PRELOAD": f"{built / f'{algorithm}.so'}:{path}"}
    proc = subprocess.run([str(built / "torture"), "3", "500"], env=env, capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"torture: ok {algorithm} threads=3")


def test_glibc_baseline(built):
    assert torture(built, None, 4).stdout.startswith("torture: ok pthread")


def lock_campaign(records):
    return {
        "name": "locks",
        "benchmark": {
            "type": "command",
            "build": "cc -O2 -pthread -o {build_dir}/torture " + shlex.quote(str(TORTURE)) + " -ldl",
            "command": "{build_dir}/torture 4 5000",
            "metrics": {"algorithm": r"torture: ok (\S+)"},
        },
        "records": records,
        "shared_libs": ["lock"],
        "nb_runs": 1,
        "timeout_s": 120,
    }


@pytest.mark.e2e
def test_lock_instrument_builds_once_per_algorithm_and_rebuilds_only_what_changed(tmp_path):
    records = [
        {"lock": "pthread", "lock_cflags": "-O2"},
        {"lock": "mcs", "lock_cflags": "-O2"},
        {"lock": "ticket", "lock_cflags": "-O2"},
    ]
    camp = write_campaign(tmp_path, lock_campaign(records))
    proc = snakemake(tmp_path, camp, "--cores", "2", "all")
    assert jobs_run(proc, "build") == 3  # the benchmark, mcs and ticket; pthread needs none
    frame = read_csv(tmp_path / "results/locks/locks.csv")
    assert dict(zip(frame["lock"], frame["algorithm"])) == {"pthread": "pthread", "mcs": "mcs", "ticket": "ticket"}
    cmd = (tmp_path / "results/locks/runs/lock-mcs/lock_cflags--O2/run-1/command.sh").read_text()
    assert "libpslock.so" in cmd and "LD_PRELOAD" in cmd
    libs = tmp_path / "resources/builds/pslock"
    before = {p.parent.name: p.stat().st_mtime_ns for p in libs.rglob("libpslock.so")}
    runs_before = {
        p.parent.parent.parent.name: p.stat().st_mtime_ns
        for p in (tmp_path / "results/locks/runs").rglob("status.json")
    }
    # Change only ticket's build flags.
    records[2]["lock_cflags"] = "-O1"
    write_campaign(tmp_path, lock_campaign(records))
    proc = snakemake(tmp_path, camp, "--cores", "2", "all")
    assert jobs_run(proc, "build") == 1 and jobs_run(proc, "run") == 1
    after = {p.parent.name: p.stat().st_mtime_ns for p in libs.rglob("libpslock.so")}
    assert after["lock-mcs,lock_cflags--O2"] == before["lock-mcs,lock_cflags--O2"]
    assert "lock-ticket,lock_cflags--O1" in after
    runs_after = {
        p.parent.parent.parent.name: p.stat().st_mtime_ns
        for p in (tmp_path / "results/locks/runs").rglob("status.json")
    }
    assert (
        runs_after["lock-mcs"] == runs_before["lock-mcs"] and runs_after["lock-pthread"] == runs_before["lock-pthread"]
    )
