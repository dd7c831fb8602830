"""Benchmark (not a test): the fewest runs any sequential design could use, by
dynamic programming, to set perfsnake.statistics.decide's savings against.

usage: .venv/bin/python bench/sequential_bound.py [--mu1 0.3] [--power 0.8]

With a known variance and a look after every pair, the Bayes problem with
prior 1/2 on difference 0 and 1/4 on each of +-m (drift mu1 per pair), a cost
of 1 per pair and terminal losses priced by Lagrange multipliers (a wrong
"different" at 0, a wrong "equivalent" at m, no "equivalent" at 0, no
"different" at m) is solved by backward induction on a grid of the sum of
the differences; the designs' operating characteristics are then propagated
forward exactly. For each price of a missed decision, the prices of the two
errors are tuned until both errors are 5 %; the design's power and average
pairs (over 0 and m, relative to the fixed design of the asked power) are
printed. Randomising between such a design and "undecided at once" reaches
the asked power at a fraction power/achieved of its pairs: the lower convex
hull, which bounds every design with those errors and power (Lagrangian
duality), up to the grid and the truncation at 2.5 fixed designs.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfsnake.statistics.decide import n_fixed_factor  # noqa: E402


def solve(mu: float, prices: tuple[float, float, float, float], longest: int) -> dict[float, tuple[float, ...]]:
    """Per truth (0, mu): P(different), P(equivalent), P(undecided), expected pairs."""
    wrong_diff, wrong_equiv, missed_equiv, missed_diff = prices
    step = 0.05 if longest < 400 else 0.1
    top = mu * longest + 6 * math.sqrt(longest)
    s = np.arange(-top, top + step / 2, step)
    kx = np.arange(-6, 6 + step / 2, step)
    kernel = np.exp(-(kx**2) / 2)
    kernel /= kernel.sum()

    def weights(n: int) -> tuple[np.ndarray, np.ndarray]:
        return 0.5 * np.ones_like(s), 0.25 * (np.exp(mu * s - n * mu * mu / 2) + np.exp(-mu * s - n * mu * mu / 2))

    policy = np.zeros((longest + 1, len(s)), np.int8)  # 0 go on, 1 different, 2 equivalent, 3 undecided
    w0, wm = weights(longest)
    costs = np.stack(
        [w0 * (wrong_diff + missed_equiv), wm * (wrong_equiv + missed_diff), w0 * missed_equiv + wm * missed_diff]
    )
    value = costs.min(axis=0)
    policy[longest] = costs.argmin(axis=0) + 1
    for n in range(longest - 1, 0, -1):
        w0, wm = weights(n)
        go_on = w0 + wm + np.convolve(value, kernel, mode="same")
        costs = np.stack(
            [
                w0 * (wrong_diff + missed_equiv),
                wm * (wrong_equiv + missed_diff),
                w0 * missed_equiv + wm * missed_diff,
                go_on,
            ]
        )
        best = costs.argmin(axis=0)
        value = costs.min(axis=0)
        policy[n] = np.where(best == 3, 0, best + 1)
    out = {}
    for truth in (0.0, mu):
        step_kernel = np.exp(-((kx - truth) ** 2) / 2)
        step_kernel /= step_kernel.sum()
        density = np.zeros(len(s))
        density[np.argmin(np.abs(s))] = 1.0
        ends, pairs = np.zeros(4), 0.0
        for n in range(1, longest + 1):
            density = np.convolve(density, step_kernel, mode="same")
            pairs += density.sum()
            for code in (1, 2, 3):
                ends[code] += density[policy[n] == code].sum()
            density = np.where(policy[n] == 0, density, 0.0)
        out[truth] = (ends[1], ends[2], ends[3], pairs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mu1", type=float, default=0.3, help="m / sigma of one paired difference")
    parser.add_argument("--power", type=float, default=0.8)
    args = parser.parse_args()
    mu1, fixed = args.mu1, n_fixed_factor(0.05, args.power) / args.mu1**2
    longest = int(2.5 * fixed)
    wrong = 5.0 * fixed
    prices = [wrong, wrong]
    for missed in (1.5, 2.0, 3.0):
        for _ in range(12):
            r = solve(mu1, (prices[0], prices[1], missed * fixed, missed * fixed), longest)
            (d0, e0, _, n0), (dm, em, _, nm) = r[0.0], r[mu1]
            prices = [prices[0] * (d0 / 0.05) ** 0.8, prices[1] * (em / 0.05) ** 0.8]
            if abs(d0 - 0.05) < 0.002 and abs(em - 0.05) < 0.002:
                break
        average, achieved = (n0 + nm) / 2 / fixed, min(e0, dm)
        print(f"mu1 {mu1}, missed decision priced {missed} x n_fixed: false different {d0:.4f}, false equivalent {em:.4f}, "
              f"power {achieved:.3f}, pairs / n_fixed(power {args.power}) {average:.3f}; "
              f"randomised to power {args.power}: {average * min(1.0, args.power / achieved):.3f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
