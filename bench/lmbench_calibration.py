"""Benchmark (not a test): how repeatable the harness's calibration is.

usage: .venv/bin/python bench/lmbench_calibration.py [--draws 10] [--label quiet]

Builds lat_syscall from perfsnake/csrc/lmbench, then runs `lat_syscall -R -C <fresh
cache> -N 1 null` --draws times (each a fresh calibration by the delta
method), and records per draw the chosen interval, whether it settled or
fell back (with the fallback line's worst errors), how many delta trials
each candidate passed (how close the choice was) and the load average.
Appends to bench/results/lmbench_calibration.json under --label (run it once
quiet and once under `stress-ng --cpu 1` to compare).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from perfsnake.benchmarks.lmbench import program_sources
from perfsnake.layout import c_source

ROOT = Path(__file__).resolve().parent.parent
SRC = c_source("lmbench")
OUT = ROOT / "bench" / "results" / "lmbench_calibration.json"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--label", default="quiet")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lmbench-calibration-"))
    binary = work / "lat_syscall"
    subprocess.run(
        [
            "cc",
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-o",
            str(binary),
            *map(str, program_sources("lat_syscall")),
        ],
        check=True,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMBENCH")}
    draws = []
    for i in range(args.draws):
        cache = work / f"cal{i}.tsv"
        start = time.monotonic()
        proc = subprocess.run(
            [str(binary), "-R", "-C", str(cache), "-N", "1", "null"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        _key, interval, verdict = cache.read_text().strip().split("\t")
        fallback = next((ln for ln in proc.stderr.splitlines() if "could not settle" in ln), None)
        said = next(ln for ln in proc.stderr.splitlines() if " timing interval " in ln)
        trials = {int(us): [int(p), int(t)] for us, p, t in re.findall(r"(\d+) us (?:passed )?(\d+) of (\d+)", said)}
        draws.append({"interval_us": int(interval), "verdict": verdict, "seconds": round(time.monotonic() - start, 2),
                      "load1": os.getloadavg()[0], "trials_passed": trials, "fallback_line": fallback})  # fmt: skip
        print(
            f"draw {i + 1}: {interval} us {verdict} ({draws[-1]['seconds']} s, load {draws[-1]['load1']:.2f}; "
            + ", ".join(f"{us} us {p}/{t}" for us, (p, t) in trials.items())
            + ")",
            file=sys.stderr,
        )
    counts = Counter(f"{d['interval_us']} {d['verdict']}" for d in draws)
    report = json.loads(OUT.read_text()) if OUT.exists() else {}
    report[args.label] = {"draws": draws, "counts": dict(counts), "cpus": os.cpu_count()}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{args.label}: {dict(counts)}; wrote {OUT}")


if __name__ == "__main__":
    main()
