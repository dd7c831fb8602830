"""Benchmark (not a test): how often perfsnake.statistics.modes flags one group and finds two.

usage: .venv/bin/python bench/modes.py [--trials 1000] [--table]

Seeded mixtures with known truth: a minor group of 10 % (or 20 %, 50 %) of the
runs, its centre 3, 4 or 5 standard deviations from the major one, at mean
100 and 5 % spread (what a timed benchmark looks like), at n = 30 ... 300;
and one group, normal or lognormal. Writes bench/results/modes.json and
prints a table. `--table` instead prints modes.MIXTURE_95 again (20,000
seeded draws from one normal per n; takes about seven minutes).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfsnake.statistics.modes import MIXTURE_95, flagged, mixture_ratio  # noqa: E402

OUT = ROOT / "bench" / "results" / "modes.json"


def table() -> None:
    for n in sorted(MIXTURE_95):
        rng = np.random.default_rng(20261125 + n)
        stats = np.concatenate([mixture_ratio(rng.standard_normal((2000, n))).statistic for _ in range(10)])
        print(f"{n}: {np.quantile(stats, 0.95):.3f},", flush=True)


def rate(draw, trials: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    return float(flagged(np.array([draw(rng) for _ in range(trials)])).mean())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    if args.table:
        table()
        return
    rows = []
    start = time.time()
    for n in (30, 50, 100, 200, 300):
        for kind in ("normal", "lognormal"):
            draw = {"normal": lambda rng, n=n: 50 + 3 * rng.standard_normal(n),
                    "lognormal": lambda rng, n=n: rng.lognormal(3, 0.8, n)}[kind]  # fmt: skip
            rows.append({"n": n, "truth": kind, "flagged": rate(draw, args.trials, 1)})
        for minor, separation in ((0.1, 3), (0.1, 4), (0.1, 5), (0.2, 3), (0.5, 3)):
            k = round(minor * n)

            def mixture(rng, n=n, k=k, separation=separation):
                return 100 + 5 * np.r_[rng.normal(0, 1, n - k), rng.normal(separation, 1, k)]

            rows.append(
                {"n": n, "truth": f"{minor:.0%} at {separation} sigma", "flagged": rate(mixture, args.trials, 2)}
            )
        for r in rows[-7:]:
            print(f"n={r['n']:4d} {r['truth']:>16s}: {r['flagged']:.3f}", flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"trials": args.trials, "seconds": round(time.time() - start), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
