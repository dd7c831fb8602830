"""Benchmark (not a test): perfsnake's history step finder
(changepoints.find_invocation_steps) beside Apache Otava 0.8.0 (e-divisive
means with a t-test, formerly Hunter) and the pooled finder it replaced
(changepoints.find_steps), on seeded simulations with known truth.

usage:
    python3 -m venv /tmp/otava-venv && /tmp/otava-venv/bin/pip install apache-otava==0.8.0
    .venv/bin/python bench/otava_steps.py [--otava-python /tmp/otava-venv/bin/python]

Otava is no dependency of perfsnake: it runs in its own venv, through
bench/otava_runner.py (series as JSON on stdin, change points on stdout).

A series is k invocations of r runs each around 100: an invocation's level
moves by AR(1) noise (marginal sd `between`, coefficient phi), its runs by
independent noise (sd `within`), both relative; a stepped series is
`step` higher from invocation k // 2 on. Ours and pooled see the runs;
Otava sees one value per invocation, the mean of its runs, as a user would
feed it. Per cell: the fraction of null series with any detected step, and
over the stepped series precision, recall and F1 of the detections against
the planted step (+-1 index; at most one true positive per series). Then
the cost of appending one invocation at k = 120 (and 500): each tool's
analysis of k and of k + 1 points, and Otava's incremental append.

Writes bench/results/otava-steps-2026-12-04.json (or --output).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from timing import interleaved_medians

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfsnake.history.views import STEP_OPTIONS  # noqa: E402
from perfsnake.statistics.changepoints import find_invocation_steps, find_steps  # noqa: E402

Series = list[tuple[str, np.ndarray]]
Finder = Callable[[Series, Any], list[dict[str, object]]]

ALPHA = float(STEP_OPTIONS["alpha"])
#: noise kind -> (between, phi, within), relative to the level
NOISE = {
    "runs 1 % only": (0.0, 0.0, 0.01),
    "invocations differ (5 % iid)": (0.05, 0.0, 0.01),
    "invocations wander (5 % AR(1) 0.5)": (0.05, 0.5, 0.01),
}
KS = (30, 60, 120)
RUNS = (1, 3)
STEPS = (0.05, 0.10, 0.25)
TOLERANCE = 1
#: Otava's defaults (otava.series.AnalysisOptions) but for max_pvalue, our alpha
OTAVA_OPTIONS = {"window_len": 50, "max_pvalue": ALPHA, "min_magnitude": 0.0}
#: Otava out of the box (its default max_pvalue 0.001), for reference only
OTAVA_DEFAULT_OPTIONS = {"window_len": 50, "max_pvalue": 0.001, "min_magnitude": 0.0}
TIMING_KS = (120, 500)
OUTPUT = ROOT / "bench" / "results" / "otava-steps-2026-12-04.json"


def simulate(
    rng: np.random.Generator, k: int, runs: int, between: float, phi: float, within: float, step: float = 0.0
) -> Series:
    """As tests/test_invocation_steps.py simulates: the step, if any, at k // 2."""
    u = np.zeros(k)
    u[0] = rng.normal(0, between)
    for i in range(1, k):
        u[i] = phi * u[i - 1] + rng.normal(0, between * math.sqrt(1 - phi**2))
    level = 100 * (1 + u) * np.where(np.arange(k) >= k // 2, 1 + step, 1.0)
    return [(str(i), level[i] * (1 + rng.normal(0, within, runs))) for i in range(k)]


def seed_of(noise: str, k: int, runs: int, step: float) -> int:
    # One seed per cell, from its name: a cell's series do not depend on
    # which other cells run or in what order.
    return zlib.crc32(f"{noise}|{k}|{runs}|{step}".encode())


def detections(finder: Finder, series: Series) -> list[int]:
    """The indexes of the first invocation after each step that counts."""
    return [int(str(s["version"])) for s in finder(series, STEP_OPTIONS) if float(s["p_value"]) < ALPHA]  # type: ignore[arg-type]


def run_otava(python: str, request: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        [python, str(ROOT / "bench" / "otava_runner.py")],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def flagged(found: Sequence[list[int]]) -> dict[str, float]:
    hits = sum(bool(f) for f in found)
    return {"series": len(found), "flagged": hits, "rate": round(hits / len(found), 4),
            "mean_detections": round(sum(map(len, found)) / len(found), 3)}  # fmt: skip


def scores(found: Sequence[list[int]], at: int) -> dict[str, float]:
    """Precision, recall and F1 over a cell: a series' detection within the
    tolerance of the planted step is its one true positive, any other
    detection a false positive, a series without one a false negative."""
    tp = sum(any(abs(i - at) <= TOLERANCE for i in f) for f in found)
    fp = sum(map(len, found)) - tp
    fn = len(found) - tp
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"tp": tp, "fp": fp, "fn": fn, "precision": round(precision, 4), "recall": round(recall, 4),
            "f1": round(f1, 4)}  # fmt: skip


def make_cells(null_series: int, stepped_series: int) -> list[dict[str, Any]]:
    cells = []
    for noise, (between, phi, within) in NOISE.items():
        for k in KS:
            for runs in RUNS:
                for step in (0.0, *STEPS):
                    seed = seed_of(noise, k, runs, step)
                    rng = np.random.default_rng(seed)
                    n = null_series if step == 0 else stepped_series
                    series = [simulate(rng, k, runs, between, phi, within, step) for _ in range(n)]
                    cells.append({"noise": noise, "k": k, "runs": runs, "step": step, "seed": seed, "series": series})
    return cells


def evaluate(cells: list[dict[str, Any]], otava_python: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every finder on every cell's series; Otava on the invocations' means,
    all cells in one call of the runner per option set."""
    means = [[float(x.mean()) for _, x in s] for cell in cells for s in cell["series"]]
    otava: dict[str, list[list[int]]] = {}
    info: dict[str, Any] = {}
    for name, opts in (("otava", OTAVA_OPTIONS), ("otava_default_p", OTAVA_DEFAULT_OPTIONS)):
        start = time.perf_counter()
        answer = run_otava(otava_python, {"mode": "detect", "series": means, "options": opts})
        info[name] = {"options": answer["options"], "seconds": time.perf_counter() - start}
        info["version"] = answer["otava"]
        otava[name] = answer["change_points"]
    rows, offset = [], 0
    for cell in cells:
        n = len(cell["series"])
        found = {"ours": [], "pooled": []}
        seconds = {}
        for name, finder in (("ours", find_invocation_steps), ("pooled", find_steps)):
            start = time.perf_counter()
            found[name] = [detections(finder, s) for s in cell["series"]]
            seconds[name] = round(time.perf_counter() - start, 3)
        for name in otava:
            found[name] = otava[name][offset : offset + n]
        offset += n
        at = cell["k"] // 2
        row = {key: cell[key] for key in ("noise", "k", "runs", "step", "seed")}
        row["at"] = None if cell["step"] == 0 else at
        for name, f in found.items():
            row[name] = flagged(f) if cell["step"] == 0 else scores(f, at)
        row["seconds"] = seconds
        rows.append(row)
    return rows, info


def append_cost(otava_python: str, repetitions: int) -> list[dict[str, Any]]:
    """The cost of one more invocation: perfsnake has no incremental API (a
    history recomputes), so k and k + 1 points each in full; Otava in full
    and by its incremental append of the last point."""
    between, phi, within = NOISE["invocations differ (5 % iid)"]
    out = []
    for k in TIMING_KS:
        series = simulate(np.random.default_rng(seed_of("timing", k, 3, 0.0)), k + 1, 3, between, phi, within)
        row: dict[str, Any] = {"k": k, "runs": 3, "noise": "invocations differ (5 % iid)", "repetitions": repetitions}
        for name, finder in (("ours", find_invocation_steps), ("pooled", find_steps)):
            row[name] = interleaved_medians(
                {
                    "full_k_s": lambda f=finder, s=series: f(s[:-1], STEP_OPTIONS),
                    "full_k_plus_1_s": lambda f=finder, s=series: f(s, STEP_OPTIONS),
                },
                repetitions,
            )
        means = [float(x.mean()) for _, x in series]
        answer = run_otava(otava_python, {"mode": "time", "series": means, "repetitions": repetitions,
                                          "options": OTAVA_OPTIONS})  # fmt: skip
        row["otava"] = {key: answer[key] for key in answer if key not in ("otava", "options", "k")}
        out.append(row)
    return out


def to_text(result: dict[str, Any]) -> str:
    """The result as JSON, one line per cell, so the file stays small and a
    cell reads at a glance."""
    head = json.dumps({**result, "cells": "@CELLS@"}, indent=1)
    cells = ",\n".join("  " + json.dumps(row) for row in result["cells"])
    return head.replace('"@CELLS@"', "[\n" + cells + "\n ]") + "\n"


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout.strip()


def percent(x: float) -> str:
    return f"{100 * x:.1f} %"


def print_table(rows: list[dict[str, Any]]) -> None:
    names = ("ours", "otava", "pooled", "otava_default_p")
    print("noise | k x r | step | " + " | ".join(names) + "   (null: flagged; step: F1)")
    for row in rows:
        cells = [percent(row[n]["rate"]) if row["step"] == 0 else f"{row[n]['f1']:.2f}" for n in names]
        print(f"{row['noise']} | {row['k']} x {row['runs']} | {row['step']:.2f} | " + " | ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--otava-python", default="/tmp/otava-venv/bin/python")
    parser.add_argument("--null-series", type=int, default=200)
    parser.add_argument("--stepped-series", type=int, default=100)
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    load_before, start = loadavg(), time.perf_counter()
    cells = make_cells(args.null_series, args.stepped_series)
    rows, otava = evaluate(cells, args.otava_python)
    cost = append_cost(args.otava_python, args.repetitions)
    print_table(rows)
    print(json.dumps(cost, indent=1))
    result = {
        "what": "history step finders on seeded simulations: perfsnake find_invocation_steps (ours), "
        "Apache Otava compute_change_points on the invocations' means, perfsnake find_steps (pooled)",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join([".venv/bin/python", "bench/otava_steps.py", *sys.argv[1:]]),
        "otava_setup": "python3 -m venv /tmp/otava-venv && /tmp/otava-venv/bin/pip install apache-otava==0.8.0",
        "versions": {
            "perfsnake_commit": git("rev-parse", "--short", "HEAD"),
            "changepoints_py_modified": bool(git("status", "--porcelain", "perfsnake/statistics/changepoints.py")),
            "otava": otava.pop("version"),
            "python": sys.version.split()[0],
            "numpy": version("numpy"),
            "scipy": version("scipy"),
            "ruptures": version("ruptures"),
        },
        "load_before": load_before,
        "load_after": loadavg(),
        "seconds": round(time.perf_counter() - start, 1),
        "step_options": dict(STEP_OPTIONS),
        "otava_runs": otava,
        "design": {
            "noise": {name: dict(zip(("between", "phi", "within"), v, strict=True)) for name, v in NOISE.items()},
            "k": list(KS),
            "runs": list(RUNS),
            "steps": list(STEPS),
            "step_at": "k // 2",
            "null_series_per_cell": args.null_series,
            "stepped_series_per_cell": args.stepped_series,
            "tolerance": TOLERANCE,
            "seed": "zlib.crc32(f'{noise}|{k}|{runs}|{step}') per cell (in each row)",
            "otava_input": "the mean of each invocation's runs, one value per invocation",
        },  # fmt: skip
        "cells": rows,
        "append_cost": cost,
    }
    args.output.write_text(to_text(result))
    print(f"wrote {args.output} in {result['seconds']} s; load {load_before} -> {result['load_after']}")


if __name__ == "__main__":
    main()
