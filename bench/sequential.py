"""Benchmark (not a test): error rates and runs saved by the sequential design
(perfsnake.statistics.decide) on seeded simulations with known truth.

usage: .venv/bin/python bench/sequential.py [--reps 4000] [--quick] [--power 0.8 0.9 0.95]
       .venv/bin/python bench/sequential.py --calibrate [--variance ar1] [--power 0.9] [--reps 20000]

Noise models, mean 100, min_effect 2 %, the long-run sd of the paired
difference set so that m / sigma = mu1 (n_fixed = 8.564 / mu1^2 pairs at
power 0.8, 10.82 / mu1^2 at 0.9, 12.99 / mu1^2 at 0.95):
  iid   independent runs;
  seq   AR(1) phi 0.7 along the run sequence (the machine drifts), the two runs
        of a round adjacent in random order;
  side  AR(1) phi 0.7 within each side's own series (the worst case).
Truths: difference 0, m/2, m and 2 m (the savings on larger effects). Per
power and cell: P(different), P(equivalent), P(undecided), pairs used over
n_fixed (the fixed design of the same alpha and power). Writes
bench/results/sequential.json. --calibrate prints the 95 % points C_d and C_e
are the maxima of, per power asked (default 0.8).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfsnake.statistics.decide import ALPHA, OUTCOMES, POWERS, Spec, n_fixed_factor, simulate  # noqa: E402

OUT = ROOT / "bench" / "results" / "sequential.json"
MEAN, MIN_EFFECT, PHI = 100.0, 0.02, 0.7
MU1 = (0.45, 0.3, 0.2, 0.15)
MODELS = ("iid", "seq", "side")
TRUTHS = (0.0, 0.5, 1.0, 2.0)


def ar1(rng: np.random.Generator, rows: int, n: int, sd: float) -> np.ndarray:
    x = np.empty((rows, n))
    x[:, 0] = rng.normal(0, sd, rows)
    e = rng.normal(0, sd * math.sqrt(1 - PHI**2), (rows, n))
    for i in range(1, n):
        x[:, i] = PHI * x[:, i - 1] + e[:, i]
    return x


def runs(rng: np.random.Generator, model: str, rows: int, n: int, truth: float, mu1: float):
    """Runs of a and b, rows x n rounds in time order; truth in units of m."""
    m = MIN_EFFECT * MEAN
    long_run = m / mu1
    if model == "iid":
        sd = long_run / math.sqrt(2)
        ea, eb = rng.normal(0, sd, (rows, n)), rng.normal(0, sd, (rows, n))
    elif model == "seq":  # d = difference of neighbours: variance 2 sd^2 (1 - phi); random order decorrelates it
        x = ar1(rng, rows, 2 * n, long_run / math.sqrt(2 * (1 - PHI)))
        flip = rng.random((rows, n)) < 0.5
        ea, eb = np.where(flip, x[:, 1::2], x[:, 0::2]), np.where(flip, x[:, 0::2], x[:, 1::2])
    else:  # side: d is AR(1) with long-run variance 2 sd^2 (1 + phi) / (1 - phi)
        sd = long_run / math.sqrt(2 * (1 + PHI) / (1 - PHI))
        ea, eb = ar1(rng, rows, n, sd), ar1(rng, rows, n, sd)
    return MEAN + ea, MEAN + truth * m + eb


def horizon(spec: Spec, mu1: float) -> int:
    r_max, _, first, _ = spec.shape
    return int(2.5 * r_max * n_fixed_factor(power=spec.power) / mu1**2) + first + (150 if spec.variance == "ar1" else 0)


def paths(spec: Spec, model: str, mu1: float, truth: float, reps: int, seed: int, chunk: int = 2000):
    """Seeded chunks of (d, a's running mean)."""
    n = horizon(spec, mu1)
    for i, start in enumerate(range(0, reps, chunk)):
        rng = np.random.default_rng([seed, round(mu1 * 100), round(truth * 10), MODELS.index(model), i])
        a, b = runs(rng, model, min(chunk, reps - start), n, truth, mu1)
        yield b - a, np.cumsum(a, axis=1) / np.arange(1, n + 1)


def cell(spec: Spec, model: str, mu1: float, truth: float, reps: int, seed: int) -> dict[str, float]:
    outcomes, used = zip(
        *(simulate(d, ref, spec) for d, ref in paths(spec, model, mu1, truth, reps, seed)), strict=True
    )
    o, u = np.concatenate(outcomes), np.concatenate(used)
    fixed = n_fixed_factor(power=spec.power) / mu1**2
    return {
        **{OUTCOMES[i]: float(np.mean(o == i)) for i in range(3)},
        "ended_by_cap": float(np.mean(o == 3)), "pairs": float(u.mean()), "n_fixed": fixed, "ratio": float(u.mean() / fixed),
    }  # fmt: skip


def calibrate(variance: str, power: float, reps: int, seed: int) -> None:
    spec = Spec(MIN_EFFECT, variance, power)
    worst = [0.0, 0.0]
    for model in ("iid", "seq") if variance == "iid" else ("side",):
        for mu1 in MU1:
            points = []
            for which, truth in ((0, 0.0), (1, 1.0)):
                maxima = [
                    simulate(d, ref, spec, calibrate=True)[which]
                    for d, ref in paths(spec, model, mu1, truth, reps, seed + 7)
                ]
                points.append(float(np.quantile(np.concatenate(maxima), 1 - ALPHA)))
                worst[which] = max(worst[which], points[-1])
            print(f"{variance} power {power} {model} mu1={mu1}: C_d {points[0]:.3f}  C_e {points[1]:.3f}", flush=True)
    print(f"{variance} power {power} largest: C_d {worst[0]:.3f}  C_e {worst[1]:.3f} "
          "(perfsnake.statistics.decide.CONSTANTS rounds them up)", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--quick", action="store_true", help="mu1 0.3 and 0.15 only")
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--variance", default="iid", choices=["iid", "ar1"])
    parser.add_argument("--power", type=float, nargs="+", choices=POWERS, help="default: all (calibrate: 0.8)")
    args = parser.parse_args()
    if args.calibrate:
        for power in args.power or (0.8,):
            calibrate(args.variance, power, args.reps or 20000, args.seed)
        return
    reps, start, rows = args.reps or 4000, time.time(), []
    print("| power | variance | model | mu1 | n_fixed | truth | different | equivalent | undecided | pairs / n_fixed |")
    for power in args.power or POWERS:
        for variance, model in [("iid", m) for m in MODELS] + [("ar1", "side")]:
            spec = Spec(MIN_EFFECT, variance, power)
            for mu1 in (0.3, 0.15) if args.quick else MU1:
                for truth in TRUTHS:
                    r = {
                        "power": power,
                        "variance": variance,
                        "model": model,
                        "mu1": mu1,
                        "truth_in_m": truth,
                        **cell(spec, model, mu1, truth, reps, args.seed),
                    }
                    rows.append(r)
                    print(f"| {power} | {variance} | {model} | {mu1} | {r['n_fixed']:.0f} | {truth:g} m | "
                          f"{r['different']:.4f} | {r['equivalent']:.4f} | {r['undecided'] + r['ended_by_cap']:.4f} | "
                          f"{r['ratio']:.3f} |", flush=True)  # fmt: skip
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps({"reps": reps, "seed": args.seed, "seconds": round(time.time() - start), "rows": rows}, indent=1)
        + "\n"
    )


if __name__ == "__main__":
    main()
