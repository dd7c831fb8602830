"""Benchmark (not a test): how repeatable the valgrind wrapper's
instruction count and cycle estimate are, beside wall time, and what
valgrind costs.

A fixed C program (a loop of arithmetic with a volatile store, about 65 ms
natively here) runs ROUNDS times natively and ROUNDS times under the
valgrind wrapper's exact command (`Valgrind.prefix`: cachegrind with the
cache simulation, the pinned cache geometry, `--trace-children=yes`),
alternating native and valgrind run by run, so drift on this shared machine
hits both alike. Both arms run the program as a campaign's command runs,
through `/bin/sh -c` (perfsnake.instruments.Instruments.compose), directly
with subprocess rather than through a campaign: the figures are valgrind's
and the program's, without Snakemake's per-run cost. The counts are read by
the wrapper's own `metrics()`.

Reported (bench/results/instructions-<date>.json): the coefficient of
variation (standard deviation / mean) of the native wall time, of the
instruction count, of the cycle estimate and of the wall time under
valgrind; the overhead factor (median wall time under valgrind / native
median); every value; valgrind's version, the load average before and
after, the date and the command.

usage: .venv/bin/python bench/instructions.py [--rounds 20] [--iterations 50000000] [--output PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfsnake.instruments.base import Context  # noqa: E402
from perfsnake.instruments.wrappers import Valgrind  # noqa: E402
from perfsnake.machine.metadata import host_metadata  # noqa: E402

OUT = ROOT / "bench" / "results"
#: the program of tests/test_valgrind.py: N iterations, N from argv
PROGRAM = (ROOT / "tests" / "programs" / "fixed_work.c").read_text()


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values)


def timed(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=50_000_000, help="the program's loop count")
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--note", default="", help="what else ran on the machine, in words (kept in the JSON)")
    args = parser.parse_args()
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    output = args.output or OUT / f"instructions-{date}.json"
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    wrapper = Valgrind({"type": "valgrind"}, "bench", "wrappers[0]")
    with tempfile.TemporaryDirectory(prefix="perfsnake-instructions-") as tmp:
        work = Path(tmp)
        (work / "work.c").write_text(PROGRAM)
        subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(work / "work"), str(work / "work.c")],
                       check=True)  # fmt: skip
        inner = ["/bin/sh", "-c", f"{work / 'work'} {args.iterations}"]
        native_s: list[float] = []
        valgrind_s: list[float] = []
        counts: dict[str, list[int]] = {m: [] for m in Valgrind.METRICS}
        command = ""
        load1: list[float] = []  # the 1-minute load after each round: when other work came and went
        for r in range(args.rounds):
            native_s.append(timed(inner, work))
            run_dir = work / f"run-{r}"
            run_dir.mkdir()
            argv = [*wrapper.prefix(Context({}, run_dir)), *inner]
            command = " ".join(argv)
            valgrind_s.append(timed(argv, run_dir))
            for name, value in wrapper.metrics(run_dir).items():
                if not isinstance(value, int):
                    raise SystemExit(f"round {r}: {name} is {value!r}: valgrind wrote no counts in {run_dir}")
                counts[name.removeprefix("valgrind.")].append(value)
            load1.append(os.getloadavg()[0])
            print(f"round {r}: native {native_s[-1] * 1e3:.1f} ms, valgrind {valgrind_s[-1]:.2f} s, "
                  f"instructions {counts['instructions'][-1]}", flush=True)  # fmt: skip
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    version = subprocess.run(["valgrind", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    host = host_metadata()
    report = {
        "what": "repeatability of the valgrind wrapper's counts beside wall time, and valgrind's overhead",
        "date": date,
        "command": " ".join([".venv/bin/python", "bench/instructions.py", *sys.argv[1:]]),
        "valgrind_command": command.replace(tmp, "<tmp>"),
        "native_command": " ".join(inner).replace(tmp, "<tmp>"),
        "how": "direct subprocess runs (not a campaign), native and valgrind alternating run by run; "
        "wall time by time.perf_counter around subprocess.run; counts by Valgrind.metrics()",
        "rounds": args.rounds,
        "iterations": args.iterations,
        "valgrind_version": version,
        "host": {k: host.get(k) for k in ("cpu_model", "online_cpus", "uname", "os_release", "compiler", "aslr")},
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": load_after,
        "load1_per_round": load1,
        "note": args.note,
        "cv": {
            "native_wall_s": cv(native_s),
            "instructions": cv([float(v) for v in counts["instructions"]]),
            "cycles_estimate": cv([float(v) for v in counts["cycles_estimate"]]),
            "valgrind_wall_s": cv(valgrind_s),
        },
        "median": {"native_wall_s": statistics.median(native_s), "valgrind_wall_s": statistics.median(valgrind_s)},
        "overhead_factor": statistics.median(valgrind_s) / statistics.median(native_s),
        "distinct": {m: sorted(set(v)) for m, v in counts.items()},
        "instructions": counts["instructions"],
        "cycles_estimate": counts["cycles_estimate"],
        "native_wall_s": native_s,
        "valgrind_wall_s": valgrind_s,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1) + "\n")
    print(
        json.dumps({k: report[k] for k in ("cv", "median", "overhead_factor", "load_before", "load_after")}, indent=1)
    )
    print(f"written to {output}")


if __name__ == "__main__":
    main()
