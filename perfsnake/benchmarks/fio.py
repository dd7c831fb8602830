"""fio 3.33 (Debian package): one job on a file inside the run directory.

Variables: `rw` (read, write, randread, randwrite, rw, randrw), `bs`, `size`
(of the file, which fio lays out before measuring and deletes after), `iodepth`,
`ioengine` (psync, sync, libaio, io_uring, posixaio, mmap), `numjobs`,
`direct` (0 or 1: O_DIRECT, which some file systems such as tmpfs refuse),
`runtime_s` (time-based; the campaign's duration_s when unset). The jobs'
figures are reported as one group (--group_reporting). Metrics per direction
(read_, write_): IOPS, bandwidth in KiB/s, completion latency mean, p50 and
p99 in microseconds. A direction the job did not exercise has no metrics.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from perfsnake.benchmarks.base import RunContext
from perfsnake.benchmarks.packaged import PackagedTool
from perfsnake.escape import value_text

RW = ("read", "write", "randread", "randwrite", "rw", "randrw", "readwrite")
ENGINES = ("psync", "sync", "pvsync", "libaio", "io_uring", "posixaio", "mmap")
DATA_FILE = "fio.data"
_PER_DIRECTION = ("iops", "bw_kib_s", "lat_mean_us", "lat_p50_us", "lat_p99_us")


class FioBenchmark(PackagedTool):
    name = "fio"
    executable = "fio"
    package = "fio"
    run_defaults = {"rw": "randread", "bs": "4k", "size": "64M", "iodepth": 1, "ioengine": "psync",
                    "numjobs": 1, "direct": 0}  # fmt: skip
    kinds = {"rw": RW, "bs": "size", "size": "size", "iodepth": "int", "ioengine": ENGINES, "numjobs": "int",
             "direct": (0, 1), "runtime_s": "int"}  # fmt: skip
    metrics = tuple(f"{d}_{m}" for d in ("read", "write") for m in _PER_DIRECTION)

    def run_command(self, ctx: RunContext) -> list[str]:
        p = self.params(ctx.params)
        runtime = p.get("runtime_s", max(1, round(ctx.duration_s)))
        return [
            "fio", "--name=perfsnake", f"--filename={ctx.run_dir / DATA_FILE}",
            f"--rw={value_text(p['rw'])}", f"--bs={value_text(p['bs'])}", f"--size={value_text(p['size'])}",
            f"--iodepth={value_text(p['iodepth'])}", f"--ioengine={value_text(p['ioengine'])}",
            f"--numjobs={value_text(p['numjobs'])}", f"--direct={value_text(p['direct'])}",
            f"--runtime={value_text(runtime)}", "--time_based", "--group_reporting", "--unlink=1",
            "--output-format=json",
        ]  # fmt: skip

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        # fio may print notes before the JSON document (e.g. "note: both iodepth >= 1 ...").
        start = stdout.find("{")
        if start < 0:
            raise ValueError("no JSON document in fio's output")
        report = json.loads(stdout[start:])
        jobs = report.get("jobs")
        if not jobs:
            raise ValueError("fio's JSON report has no jobs")
        job = jobs[0]
        if job.get("error"):
            raise ValueError(f"fio job error {job['error']}")
        # A direction the job did not exercise is left out (not reported as unparsed).
        out: dict[str, object] = {}
        for direction in ("read", "write"):
            stats = job[direction]
            if not stats.get("total_ios"):
                continue
            clat = stats["clat_ns"]
            percentiles = clat.get("percentile", {})
            out[f"{direction}_iops"] = float(stats["iops"])
            out[f"{direction}_bw_kib_s"] = float(stats["bw"])
            out[f"{direction}_lat_mean_us"] = clat["mean"] / 1000
            out[f"{direction}_lat_p50_us"] = percentiles["50.000000"] / 1000
            out[f"{direction}_lat_p99_us"] = percentiles["99.000000"] / 1000
        if not out:
            raise ValueError("fio's report shows no completed I/O in either direction")
        return out
