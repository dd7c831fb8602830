"""Benchmark (not a test): how much CPU the orchestrator itself uses while a run executes.

A fixed CPU loop of about 80 ms run through perfsnake had a run-to-run
spread well above the same loop's in a shell loop. On a 2-CPU machine the
loop takes one CPU; whatever the Snakemake process does at the same time
runs on the other one, or preempts the loop when the other CPU is busy.
This measures that work directly, in CPU seconds (not time, so a loaded
machine does not bias it): a thread samples the Snakemake process's own
time on a CPU (the scheduler's per-thread sums, to the nanosecond; its
children, the launcher and the benchmark, are not in it) every 2 ms while
the campaign runs, and each run's [start, end] from its status.json splits
that time into "during runs" (between the first and the last sample inside
the run: a lower bound that never takes in the work before the run) and
"between runs".

Three ways, interleaved in blocks (each block runs every way once, in a
rotated order): the same loop in a shell loop; perfsnake with one job per
run (`batch: 1`); perfsnake with the block's runs in one batch job (`batch:
RUNS`). For each, the coefficient of variation of the loop's wall times,
with the machine's load.

usage: .venv/bin/python bench/orchestrator_cpu.py [--runs 60] [--blocks 3]
Writes bench/results/orchestrator_cpu.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results"
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
#: An awk loop: one CPU, no I/O; its iterations are calibrated to about 80 ms.
LOOP = "awk 'BEGIN {{ s = 0; for (i = 0; i < {n}; i++) s += i; print \"s=\" s }}'"


def loop_seconds(n: int) -> float:
    return loop_run(n)[0]


def loop_run(n: int) -> tuple[float, float]:
    """Wall and CPU seconds of one loop started by a shell, as a shell loop would."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(["sh", "-c", LOOP.format(n=n)], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"bench/orchestrator_cpu.py: the loop failed ({proc.returncode})")
    return wall, usage.ru_utime + usage.ru_stime


def calibrate(target_s: float = 0.08) -> int:
    n = 100_000
    while (took := min(loop_seconds(n) for _ in range(3))) < target_s / 4:
        n *= 4
    return max(1, int(n * target_s / took))


def process_cpu(pid: int) -> float | None:
    """Seconds on a CPU of the process, all its threads (not its children), to
    the nanosecond: the scheduler's own sum per thread (/proc/PID/task/TID/
    schedstat), not utime + stime, which move by whole ticks (10 ms) charged
    to whatever runs when the tick comes, too coarse for a gap of 1 ms
    between two runs of a batch."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended since the listing
    return total / 1e9


class Sampler(threading.Thread):
    def __init__(self, pid: int, every_s: float = 0.002) -> None:
        super().__init__(daemon=True)
        self.pid, self.every_s = pid, every_s
        self.samples: list[tuple[float, float]] = []  # (epoch, cumulative CPU seconds)
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            cpu = process_cpu(self.pid)
            if cpu is None:
                return
            self.samples.append((time.time(), cpu))
            time.sleep(self.every_s)


def cpu_at(samples: list[tuple[float, float]], at: float) -> float:
    """The cumulative CPU at `at`: the last sample taken at or before it."""
    value = samples[0][1]
    for t, cpu in samples:
        if t > at:
            break
        value = cpu
    return value


def cpu_within(samples: list[tuple[float, float]], start: float, end: float) -> float:
    """CPU used between the first sample after `start` and the last before
    `end`: a lower bound of what was used during [start, end], which never
    counts work done before `start` (in a batch, the gap before a run lasts
    about as long as the time between two samples)."""
    inside = [cpu for t, cpu in samples if start <= t <= end]
    return inside[-1] - inside[0] if len(inside) >= 2 else 0.0


#: the perfsnake ways: their campaign's `batch`
WAYS = {"job per run": "1", "batched": "runs"}


def perfsnake_block(work: Path, n: int, runs: int, batch: int) -> dict:
    work.mkdir(parents=True)
    campaign = work / "loop.yaml"
    campaign.write_text(
        yaml.safe_dump(
            {
                "name": "loop",
                "benchmark": {
                    # Literal braces of a campaign's command template are doubled.
                    "type": "command",
                    "command": LOOP.format(n=n).replace("{", "{{").replace("}", "}}"),
                    "metrics": {"s": r"s=(\S+)"},
                },
                "nb_runs": runs,
                "batch": batch,
            }
        )
    )
    cmd = [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
           "--configfile", str(ROOT / "config/config.yaml"), "--directory", str(work), "--cores", "1", "all",
           "--config", f"campaign={campaign}", "history=off"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sampler = Sampler(proc.pid)
    sampler.start()
    _, err = proc.communicate()
    sampler.stop.set()
    sampler.join()
    if proc.returncode != 0:
        sys.exit(f"bench/orchestrator_cpu.py: snakemake failed:\n{err[-3000:]}")
    statuses = [
        json.loads(p.read_text()) for p in sorted((work / "results" / "loop" / "runs").glob("*/run-*/status.json"))
    ]
    samples = sampler.samples
    during = sum(cpu_within(samples, s["start_epoch"], s["end_epoch"]) for s in statuses)
    sampled = sum(  # the part of the runs' time the samples inside them span
        (max(inside) - min(inside))
        if len(inside := [t for t, _ in samples if s["start_epoch"] <= t <= s["end_epoch"]]) >= 2
        else 0.0
        for s in statuses
    )
    first, last = min(s["start_epoch"] for s in statuses), max(s["end_epoch"] for s in statuses)
    total_window = cpu_at(samples, last) - cpu_at(samples, first)
    wall = [float(s["wall_s"]) for s in statuses]
    return {
        "runs": len(statuses),
        "wall_s": wall,
        "cpu_s": [float(s["utime_s"]) + float(s["stime_s"]) for s in statuses],
        "run_time_s": sum(wall),
        "orchestrator_cpu_total_s": samples[-1][1] - samples[0][1],
        "orchestrator_cpu_during_runs_s": during,
        "sampled_run_time_s": sampled,
        "orchestrator_cpu_between_runs_s": total_window - during,
        "window_s": last - first,
        "samples": len(samples),
    }


def shell_block(n: int, runs: int) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = loop_run(n)
        walls.append(wall)
        cpus.append(cpu)
    return walls, cpus


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values)


def summary(walls: list[float], cpus: list[float]) -> dict[str, float]:
    return {"runs": len(walls), "median_s": statistics.median(walls), "cv": cv(walls),
            "median_cpu_s": statistics.median(cpus), "cpu_cv": cv(cpus)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=60, help="runs per block")
    parser.add_argument("--blocks", type=int, default=3, help="blocks, each running every way once")
    parser.add_argument("--output", type=Path, default=OUT / "orchestrator_cpu.json")
    args = parser.parse_args()
    n = calibrate()
    load_before = os.getloadavg()
    ways = ["shell loop", *WAYS]
    blocks: dict[str, list[dict]] = {way: [] for way in WAYS}
    shell: list[float] = []
    shell_cpu: list[float] = []
    with tempfile.TemporaryDirectory(prefix="perfsnake-orchestrator-") as tmp:
        for b in range(args.blocks):
            # A rotated order, so a trend in the machine's load favours no way.
            for way in ways[b % len(ways) :] + ways[: b % len(ways)]:
                if way == "shell loop":
                    walls, cpus = shell_block(n, args.runs)
                    shell += walls
                    shell_cpu += cpus
                    continue
                batch = args.runs if WAYS[way] == "runs" else int(WAYS[way])
                blocks[way].append(perfsnake_block(Path(tmp) / f"b{b}-{batch}", n, args.runs, batch))
    summaries: dict[str, dict[str, float]] = {"shell loop": summary(shell, shell_cpu)}
    for way, done in blocks.items():
        during = sum(b["orchestrator_cpu_during_runs_s"] for b in done)
        between = sum(b["orchestrator_cpu_between_runs_s"] for b in done)
        run_time = sum(b["sampled_run_time_s"] for b in done)
        runs = sum(b["runs"] for b in done)
        summaries[way] = {
            **summary([w for b in done for w in b["wall_s"]], [c for b in done for c in b["cpu_s"]]),
            "orchestrator_cpu_during_runs_s": during,
            "run_time_s": run_time,
            "orchestrator_share_of_a_cpu_during_runs": during / run_time,
            "orchestrator_cpu_per_run_during_s": during / runs,
            "orchestrator_cpu_per_run_between_s": between / runs,
        }
    load_after = os.getloadavg()
    report = {"iterations": n, "load_before": load_before, "load_after": load_after, "cpus": os.cpu_count(),
              "blocks": blocks, "shell_wall_s": shell, "shell_cpu_s": shell_cpu, "summary": summaries}  # fmt: skip
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1) + "\n")
    print(f"loop of {n} awk iterations; load {load_before[0]:.1f} before, {load_after[0]:.1f} after; "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    print("| way | runs | median wall s | CV of wall | median CPU s | CV of CPU | orchestrator CPU during runs: share of "
          "a CPU, ms a run | between runs, ms a run |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for way, s in summaries.items():
        extra = (f"{s['orchestrator_share_of_a_cpu_during_runs']:.2%}, {s['orchestrator_cpu_per_run_during_s'] * 1000:.2f} | "
                 f"{s['orchestrator_cpu_per_run_between_s'] * 1000:.1f}") if way in WAYS else "- | -"  # fmt: skip
        print(f"| {way} | {s['runs']} | {s['median_s']:.4f} | {s['cv']:.1%} | {s['median_cpu_s']:.4f} | "
              f"{s['cpu_cv']:.1%} | {extra} |")  # fmt: skip


if __name__ == "__main__":
    main()
