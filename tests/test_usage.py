"""What each run used and waited for (perfsnake.machine.usage): peak memory,
stall time and steal as standard columns, end to end through Snakemake."""

import json
import subprocess
import time
from pathlib import Path

import pytest
from helpers import compile_c, snakemake, write_campaign

from perfsnake.campaign_csv import read_csv
from perfsnake.machine.usage import run_usage, usage_flags

#: Allocates argv[1] MiB and touches every page, so all of it is resident at once.
TOUCH = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
	size_t n = (size_t)atol(argv[1]) << 20;
	char *p = malloc(n);
	(void)argc;
	if (!p)
		return 1;
	memset(p, 1, n);
	printf("value=%d\n", p[n / 2]);
	return 0;
}
"""

#: A fixed amount of CPU work (argv[1] iterations).
SPIN = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	volatile unsigned long x = 0;
	long i, n = atol(argv[1]);
	for (i = 0; i < n; i++)
		x += (unsigned long)i * 7;
	printf("value=%lu\n", x & 1);
	(void)argc;
	return 0;
}
"""


def campaign(name, command, variables, **extra):
    return {
        "name": name,
        "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\S+)"}},
        "variables": variables,
        **extra,
    }


def build(tmp_path: Path, name: str, source: str) -> Path:
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    return compile_c(src, tmp_path / name)


@pytest.mark.e2e
def test_peak_memory_of_a_program_touching_200_mb(tmp_path):
    prog = build(tmp_path, "touch", TOUCH)
    camp = write_campaign(tmp_path, campaign("mem", f"{prog} {{mb}}", {"mb": [200]}, nb_runs=2))
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/mem/mem.csv")
    assert set(frame["status"]) == {"ok"}
    # 200 MiB plus the program and libc: within 3 %, whichever source measured it.
    assert frame["usage.peak_memory_mb"].between(200, 206).all(), frame["usage.peak_memory_mb"].tolist()
    # The source is what this machine offers: the cgroup's when its memory controller is on.
    result = json.loads(next((tmp_path / "results/mem/runs").rglob("result.json")).read_text())
    status = json.loads((Path(result["run_dir"]) / "status.json").read_text())
    expected = "cgroup" if status["usage"]["peak_memory_bytes"] is not None else "maxrss"
    assert set(frame["usage.peak_memory_source"]) == {expected}
    assert (frame["usage.steal_s"] >= 0).all()


def _share(tmp_path: Path, name: str, prog: Path) -> float:
    """Median CPU stall share of wall time of three runs of `prog` pinned to CPU 0."""
    camp = write_campaign(tmp_path, campaign(name, f"taskset -c 0 {prog} {{n}}", {"n": [300_000_000]}, nb_runs=3),
                          f"{name}.yaml")  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_csv(tmp_path / f"results/{name}/{name}.csv")
    assert set(frame["status"]) == {"ok"}
    assert set(frame["usage.stall_source"]) <= {"cgroup", "machine"}
    return float((frame["usage.cpu_stall_s"] / frame["wall_s"]).median())


@pytest.mark.e2e
def test_cpu_pressure_beside_stress_ng_exceeds_alone(tmp_path):
    """Ordering, not timing: the same pinned work waits longer for its CPU
    with six stress-ng workers on that CPU than without them (whatever else
    loads the machine, since the others' load is there in both)."""
    prog = build(tmp_path, "spin", SPIN)
    alone = _share(tmp_path, "alone", prog)
    stress = subprocess.Popen(["stress-ng", "--cpu", "6", "--taskset", "0", "--timeout", "600"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        # Poll (with a deadline) until stress-ng's six workers exist.
        deadline = time.monotonic() + 60
        while len(subprocess.run(["pgrep", "-s", str(stress.pid)], capture_output=True, text=True).stdout.split()) < 7:
            assert stress.poll() is None and time.monotonic() < deadline, "stress-ng did not start its workers"
            time.sleep(0.05)
        crowded = _share(tmp_path, "crowded", prog)
    finally:
        subprocess.run(["kill", "--", f"-{stress.pid}"], check=False)
        stress.wait()
    assert crowded > 0
    assert crowded > alone, (crowded, alone)


def test_run_usage_sources():
    cgroup = {"usage": {"peak_memory_bytes": 3 * 2**20, "cpu_stall_us": 250_000, "memory_stall_us": 0,
                        "io_stall_us": None, "stall_source": "cgroup"},
              "maxrss_kb": 1024, "machine": {"before": {"steal_s": 10.0}, "after": {"steal_s": 10.5}}}  # fmt: skip
    assert run_usage(cgroup) == {"peak_memory_mb": 3.0, "peak_memory_source": "cgroup", "cpu_stall_s": 0.25,
                                 "memory_stall_s": 0.0, "stall_source": "cgroup", "steal_s": 0.5}  # fmt: skip
    # No memory controller: the largest process's resident set, said so.
    plain = {"usage": {"peak_memory_bytes": None, "stall_source": ""}, "maxrss_kb": 2048}
    assert run_usage(plain) == {"peak_memory_mb": 2.0, "peak_memory_source": "maxrss"}
    # A run recorded before the launcher read usage.
    assert run_usage({"maxrss_kb": 0}) == {}


def test_usage_flags_name_what_runs_differ_by():
    def run(stall, steal, peak, wall=1.0):
        return {"wall_s": wall, "usage": {"cpu_stall_s": stall, "steal_s": steal, "peak_memory_mb": peak}}

    assert usage_flags([run(0.01, 0.0, 100), run(0.05, 0.01, 105)]) == []
    flags = usage_flags([run(0.01, 0.0, 100), run(0.6, 0.3, 150)])
    assert flags == ["runs differ by cpu stall: 1% to 60% of their wall time",
                     "runs differ by steal: 0% to 30% of their wall time",
                     "runs differ by peak memory: 100.0 to 150.0 MB"]  # fmt: skip
    # One run says nothing of how runs differ.
    assert usage_flags([run(0.9, 0.9, 100)]) == []
