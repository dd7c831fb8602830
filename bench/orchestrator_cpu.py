"""Benchmark (not a test): how much CPU the orchestrator itself uses while a run executes.

A fixed CPU loop of about 80 ms run through perfsnake had a run-to-run
spread well above the same loop's in a shell loop. On a 2-CPU machine the
loop takes one CPU; whatever the Snakemake process does at the same time
runs on the other one, or preempts the loop when the other CPU is busy.
This measures that work directly, in CPU seconds (not time, so a loaded
machine does not bias it): a thread samples the Snakemake process's own
user + system time (/proc/PID/stat, all its threads; its children, the
launcher and the benchmark, are not in it) every few milliseconds while the
campaign runs, and each run's [start, end] from its status.json splits that
time into "during runs" and "between runs".

Beside it, interleaved in blocks, the same loop in a shell loop, and the
coefficient of variation of both loops' wall times with the machine's load.

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
TICK = os.sysconf("SC_CLK_TCK")
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
    """User + system seconds of the process (all its threads, not its children)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime: fields 14 and 15


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
    """The cumulative CPU at `at`: the last sample taken before it (CPU time moves in ticks)."""
    value = samples[0][1]
    for t, cpu in samples:
        if t > at:
            break
        value = cpu
    return value


def perfsnake_block(work: Path, n: int, runs: int) -> dict:
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
    during = sum(cpu_at(samples, s["end_epoch"]) - cpu_at(samples, s["start_epoch"]) for s in statuses)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=60, help="runs per block")
    parser.add_argument("--blocks", type=int, default=3, help="perfsnake and shell blocks, alternating")
    parser.add_argument("--output", type=Path, default=OUT / "orchestrator_cpu.json")
    args = parser.parse_args()
    n = calibrate()
    load_before = os.getloadavg()
    blocks = []
    shell: list[float] = []
    shell_cpu: list[float] = []
    with tempfile.TemporaryDirectory(prefix="perfsnake-orchestrator-") as tmp:
        for b in range(args.blocks):
            # Alternating who goes first, so a trend in the machine's load favours neither.
            if b % 2 == 0:
                walls, cpus = shell_block(n, args.runs)
            blocks.append(perfsnake_block(Path(tmp) / f"b{b}", n, args.runs))
            if b % 2 == 1:
                walls, cpus = shell_block(n, args.runs)
            shell += walls
            shell_cpu += cpus
    wall = [w for blk in blocks for w in blk["wall_s"]]
    cpu = [c for blk in blocks for c in blk["cpu_s"]]
    during = sum(b["orchestrator_cpu_during_runs_s"] for b in blocks)
    between = sum(b["orchestrator_cpu_between_runs_s"] for b in blocks)
    run_time = sum(b["run_time_s"] for b in blocks)
    report = {
        "iterations": n,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "cpus": os.cpu_count(),
        "blocks": blocks,
        "shell_wall_s": shell,
        "shell_cpu_s": shell_cpu,
        "summary": {
            "runs": len(wall),
            "perfsnake_median_s": statistics.median(wall),
            "perfsnake_cv": cv(wall),
            "shell_median_s": statistics.median(shell),
            "shell_cv": cv(shell),
            "perfsnake_median_cpu_s": statistics.median(cpu),
            "shell_median_cpu_s": statistics.median(shell_cpu),
            "orchestrator_cpu_during_runs_s": during,
            "orchestrator_share_of_a_cpu_during_runs": during / run_time,
            "orchestrator_cpu_per_run_during_s": during / len(wall),
            "orchestrator_cpu_per_run_between_s": between / len(wall),
        },
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1) + "\n")
    s = report["summary"]
    print(f"loop of {n} awk iterations; load {load_before[0]:.1f} before, {report['load_after'][0]:.1f} after; "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    print("| | median wall s | CV of wall | median CPU s |")
    print("|---|---|---|---|")
    print(f"| through perfsnake ({s['runs']} runs) | {s['perfsnake_median_s']:.4f} | {s['perfsnake_cv']:.1%} | "
          f"{s['perfsnake_median_cpu_s']:.4f} |")  # fmt: skip
    print(f"| shell loop ({len(shell)} runs) | {s['shell_median_s']:.4f} | {s['shell_cv']:.1%} | "
          f"{s['shell_median_cpu_s']:.4f} |")  # fmt: skip
    print(f"orchestrator CPU while runs execute: {s['orchestrator_cpu_during_runs_s']:.3f} s in {run_time:.2f} s of runs "
          f"= {s['orchestrator_share_of_a_cpu_during_runs']:.2%} of one CPU "
          f"({s['orchestrator_cpu_per_run_during_s'] * 1000:.2f} ms per run; between runs "
          f"{s['orchestrator_cpu_per_run_between_s'] * 1000:.1f} ms per run)")  # fmt: skip


if __name__ == "__main__":
    main()
