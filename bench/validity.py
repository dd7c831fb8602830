"""Benchmark (not a test): validity of perfsnake's statistics on seeded
simulations with known truth, before (the code at BEFORE, loaded from git)
and after (the working tree), side by side in one run.

usage: .venv/bin/python bench/validity.py [--quick]
Prints tables and writes bench/results/validity.json:
- false-positive rate of the comparison of two records on AR(1) data, and
  its power on independent data;
- coverage of the 95 % interval of the mean by n and phi;
- the sample-size estimate on the issue's example and the precision loop's
  success rate on AR(1) data;
- warm-up detection: series whose warm-up (and cool-down) is found within
  +-5 % of its length, stationary series trimmed;
- significant differences in null campaigns of 20 identical records, with
  and without correction.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy import signal, stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfsnake import precision  # noqa: E402
from perfsnake.contract import CampaignInfo  # noqa: E402
from perfsnake.stages.analysis import comparison_rows  # noqa: E402
from perfsnake.statistics.changepoints import steady_segment  # noqa: E402
from perfsnake.statistics.intervals import mean_intervals  # noqa: E402
from perfsnake.statistics.subsessions import ar1_mean_factor  # noqa: E402
from perfsnake.statistics.tests import welch_p_values  # noqa: E402

BEFORE = "4eccd8c"  # the statistics before issue 18
OUT = ROOT / "bench" / "results"
QUICK = "--quick" in sys.argv
SCALE = 0.2 if QUICK else 1.0


def sims(n: int) -> int:
    return max(200, int(n * SCALE))


def load_before() -> tuple[object, object]:
    """The old stats and precision modules, from git."""
    mods = []
    for name in ("stats", "precision"):
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{BEFORE}:perfsnake/{name}.py"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        source = source.replace("from perfsnake.stats import", "from old_stats import")
        spec = importlib.util.spec_from_loader(f"old_{name}", loader=None)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[f"old_{name}"] = module
        exec(compile(source, f"{BEFORE}:perfsnake/{name}.py", "exec"), module.__dict__)
        mods.append(module)
    return mods[0], mods[1]


def ar1(phi: float, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    e = rng.normal(size=shape)
    e[..., 0] /= math.sqrt(1 - phi**2)
    return signal.lfilter([1.0], [1.0, -phi], e, axis=-1)


# ---- the old method, vectorised (checked against the old code below) ----------------


def old_sizes(x: np.ndarray, old) -> np.ndarray:  # type: ignore[no-untyped-def]
    from perfsnake.statistics.subsessions import lag1_rows, subsessions

    n = x.shape[-1]
    r = lag1_rows(x)
    size = np.ones(len(x), dtype=int)
    done = old.independent_enough_v(r, n)
    k = 1
    while not done.all() and n // (k + 1) >= old.MIN_SUBSESSIONS:
        k += 1
        rk = lag1_rows(subsessions(x, k))
        size[~done] = k
        r[~done] = rk[~done]
        done = done | old.independent_enough_v(rk, n // k)
    return size, r


def old_welch_p(a: np.ndarray, b: np.ndarray, old) -> np.ndarray:  # type: ignore[no-untyped-def]
    from perfsnake.statistics.subsessions import subsessions

    size = np.maximum(old_sizes(a, old)[0], old_sizes(b, old)[0])
    p = np.empty(len(a))
    for k in np.unique(size):
        rows = size == k
        p[rows] = stats.ttest_ind(
            subsessions(b[rows], int(k)), subsessions(a[rows], int(k)), axis=1, equal_var=False
        ).pvalue
    return p


def old_intervals(x: np.ndarray, old) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    from perfsnake.statistics.subsessions import subsessions

    size, r = old_sizes(x, old)
    lo, hi = np.empty(len(x)), np.empty(len(x))
    for k in np.unique(size):
        rows = size == k
        merged = subsessions(x[rows], int(k))
        m = merged.shape[-1]
        half = stats.t.ppf(0.975, m - 1) * merged.std(axis=-1, ddof=1) / math.sqrt(m)
        rb = old.debiased(r[rows], m)
        with np.errstate(invalid="ignore"):
            widen = np.where(
                (k > 1) & (m > 2) & (rb > 0.1), np.sqrt((1 + np.minimum(rb, 0.9)) / (1 - np.minimum(rb, 0.9))), 1.0
            )
        lo[rows], hi[rows] = merged.mean(axis=-1) - half * widen, merged.mean(axis=-1) + half * widen
    return lo, hi


def check_old_vectorised(old) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    a, b = ar1(0.7, (40, 60), rng), ar1(0.7, (40, 60), rng)
    p = old_welch_p(a, b, old)
    lo, hi = old_intervals(a, old)
    for i in range(40):
        assert math.isclose(old.welch_on_subsessions(a[i], b[i], 0.95, 0.05)[0].p_value, p[i], rel_tol=1e-9)
        (olo, ohi), *_ = old.mean_interval(a[i], 0.95)
        assert math.isclose(olo, lo[i], rel_tol=1e-9, abs_tol=1e-12) and math.isclose(
            ohi, hi[i], rel_tol=1e-9, abs_tol=1e-12
        )


# ---- sections -------------------------------------------------------------------------


def comparison_section(old) -> dict:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    fpr = []
    for phi in (0.3, 0.7, 0.9):
        for n, count in ((30, 20000), (100, 10000), (300, 5000)):
            a, b = ar1(phi, (sims(count), n), rng), ar1(phi, (sims(count), n), rng)
            fpr.append({"phi": phi, "n": n, "sims": len(a), "before": float(np.mean(old_welch_p(a, b, old) < 0.05)),
                        "after": float(np.mean(welch_p_values(a, b) < 0.05))})  # fmt: skip
    power = []
    for n, delta, count in ((10, 1.0, 20000), (30, 0.5, 20000), (100, 0.3, 10000), (300, 0.2, 5000)):
        a, b = rng.normal(size=(sims(count), n)), rng.normal(size=(sims(count), n))
        power.append({"n": n, "delta_sd": delta, "sims": len(a),
                      "fpr_before": float(np.mean(old_welch_p(a, b, old) < 0.05)), "fpr_after": float(np.mean(welch_p_values(a, b) < 0.05)),
                      "power_before": float(np.mean(old_welch_p(a, b + delta, old) < 0.05)),
                      "power_after": float(np.mean(welch_p_values(a, b + delta) < 0.05))})  # fmt: skip
    return {"fpr_ar1": fpr, "iid": power}


def coverage_section(old) -> list[dict]:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(2)
    out = []
    for phi in (0.0, 0.3, 0.7, 0.9):
        for n, count in ((10, 20000), (30, 20000), (100, 10000), (300, 5000)):
            x = ar1(phi, (sims(count), n), rng) if phi else rng.normal(size=(sims(count), n))
            lo, hi, _ = mean_intervals(x, 0.95)
            olo, ohi = old_intervals(x, old)
            out.append({"phi": phi, "n": n, "sims": len(x), "before": float(np.mean((olo <= 0) & (ohi >= 0))),
                        "after": float(np.mean((lo <= 0) & (hi >= 0)))})  # fmt: skip
    return out


def loop(module, phi: float, rng: np.random.Generator, cap: int, start: int) -> tuple[bool, int, int, float]:  # type: ignore[no-untyped-def]
    """One simulated precision campaign (cv 5 %, target +-2 %): (met, runs, rounds, true relative half-width / target)."""
    e = rng.normal(size=cap)
    e[0] /= math.sqrt(1 - phi**2)
    series = 100 + 5 * math.sqrt(1 - phi**2) * signal.lfilter([1.0], [1.0, -phi], e)
    plan = {"r": list(range(1, start + 1))}
    spec = {"target_rel_ci": 0.02, "confidence": 0.95, "max_runs": cap}
    for rnd in range(1, 1001):
        d = module.decide({"r": list(series[: len(plan["r"])])}, plan, spec, rnd)
        if d["done"]:
            n = len(plan["r"])
            true = 1.96 * 0.05 * math.sqrt(float(ar1_mean_factor(phi, n)) / n) / 0.02
            return bool(d["records"]["r"]["met"]), n, rnd, true
        plan = module.next_plan(d)
    return False, len(plan["r"]), 1000, float("inf")  # still adding runs after 1000 rounds


def sample_size_section(old_precision) -> dict:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    example = {"before": [], "after": []}  # phi 0.9, cv 10 %, +-1 %, from 1000 runs
    for _ in range(sims(50)):
        x = list(100 + 10 * math.sqrt(1 - 0.81) * ar1(0.9, (1000,), rng))
        example["before"].append(old_precision.runs_needed(x, 0.01, 0.95))
        example["after"].append(precision.runs_needed(x, 0.01, 0.95))
    truth = 1.96**2 * 0.1**2 * 19 / 0.01**2
    out = {"example_phi0.9_cv10_pm1pct": {"needed": truth, "before_median": float(np.median(example["before"])),
                                          "after_median": float(np.median(example["after"]))}, "loop": []}  # fmt: skip
    for phi in (0.0, 0.5, 0.7, 0.9):
        oracle = (1.96 * 0.05 / 0.02) ** 2 * (1 + phi) / (1 - phi)
        cap = int(3 * oracle)
        for label, module in (("before", old_precision), ("after", precision)):
            res = [loop(module, phi, rng, cap, 10) for _ in range(sims(300))]
            met = np.array([r[0] for r in res])
            runs = np.array([r[1] for r in res])
            true = np.array([r[3] for r in res])
            out["loop"].append({"phi": phi, "method": label, "oracle_runs": oracle, "cap": cap, "campaigns": len(res),
                                "met": float(met.mean()), "true_width_within_10pct": float(np.mean(met & (true <= 1.1))),
                                "stopped_below_half_oracle": float(np.mean(runs < 0.5 * oracle)),
                                "runs_median": float(np.median(runs)), "runs_p90": float(np.percentile(runs, 90)),
                                "rounds_median": float(np.median([r[2] for r in res])), "rounds_max": int(max(r[2] for r in res))})  # fmt: skip
    return out


def warm_series(
    kind: str, rng: np.random.Generator, warmup: int, cooldown: int, noise: float, phi: float, n: int = 300
) -> np.ndarray:
    level = np.full(n, 100.0)
    level[:warmup] *= np.linspace(0.3, 0.5, warmup)
    if cooldown:
        level[n - cooldown :] *= 0.75
    if kind == "multiplicative":
        return level * (1 + noise * rng.normal(size=n))
    if kind == "ar1":
        return level + 100 * noise * math.sqrt(1 - phi**2) * ar1(phi, (n,), rng)
    return level + 100 * noise * rng.normal(size=n)


def warmup_section(old) -> dict:  # type: ignore[no-untyped-def]
    cases = [("iid", 0.02, 0.0), ("multiplicative", 0.02, 0.0), ("multiplicative", 0.1, 0.0), ("multiplicative", 0.2, 0.0),
             ("ar1", 0.02, 0.5), ("ar1", 0.02, 0.7), ("ar1", 0.02, 0.9)]  # fmt: skip
    rng = np.random.default_rng(4)
    rows = []
    for kind, noise, phi in cases:
        for warmup, cooldown in ((40, 0), (40, 20), (0, 0)):
            row = {"noise": kind, "level": noise, "phi": phi, "warmup": warmup, "cooldown": cooldown}
            for label, fn, count in (("after", steady_segment, 500), ("before", old.steady_segment, 15)):
                hits, seconds = 0, time.monotonic()
                for _ in range(sims(count) if label == "after" else max(5, int(count * SCALE))):
                    seg = fn(warm_series(kind, rng, warmup, cooldown, noise, phi))
                    if warmup == 0:
                        hits += seg.removed > 0
                    else:
                        hits += abs(seg.start - warmup) <= 2 and abs((300 - seg.end) - cooldown) <= max(
                            1, 0.05 * cooldown
                        )
                total = sims(count) if label == "after" else max(5, int(count * SCALE))
                row[label] = hits / total
                row[f"{label}_series"] = total
                row[f"{label}_ms_per_series"] = (time.monotonic() - seconds) / total * 1000
            rows.append(row)
    example = [30.2, 30.5, 30.2, 29.2, 30.5, 30.3, 29.7, 30.3, 30.2, 30.2, 160.1, 161.7, 157.6, 159.5, 158.5, 161.9, 160.1, 159.1,
               157.5, 159.2, 160.0, 159.1, 164.1, 163.2, 151.3, 154.0, 159.4, 158.6, 160.7, 160.7]  # fmt: skip
    return {
        "cases": rows,
        "issue_example": {"before": vars(old.steady_segment(example)), "after": vars(steady_segment(example))},
    }


def null_campaign_section() -> list[dict]:
    out = []
    for correction in ("none", "holm", "bh"):
        counts = []
        for seed in range(max(5, int(50 * SCALE))):
            rng = np.random.default_rng(seed)
            results = [{"variables": {"v": f"r{j:02d}"}, "metrics": {"value": float(100 + rng.normal())}, "status": "ok",
                        "start_epoch": i * 20 + j, "wall_s": 1.0} for i in range(10) for j in range(20)]  # fmt: skip
            rows = comparison_rows(
                results,
                CampaignInfo.from_dict(
                    {"name": "null", "variables": ["v"], "statistics": {"correction": correction, "metrics": ["value"]}}
                ),
            )
            counts.append(sum(bool(r["significant"]) for r in rows))
        out.append({"correction": correction, "comparisons": len(rows), "campaigns": len(counts),
                    "significant_mean": float(np.mean(counts)), "campaigns_with_any": float(np.mean(np.array(counts) > 0))})  # fmt: skip
    return out


def main() -> None:
    old_stats, old_precision = load_before()
    old_stats.independent_enough_v = lambda r, n: (
        np.isnan(r) | (np.abs(old_stats.debiased(r, n)) <= 0.1) | (np.abs(r) <= 1.96 / math.sqrt(n))
    )
    check_old_vectorised(old_stats)
    started = time.monotonic()
    report = {"before": BEFORE, "command": " ".join(["bench/validity.py", *sys.argv[1:]])}
    report["comparison"] = comparison_section(old_stats)
    report["coverage"] = coverage_section(old_stats)
    report["sample_size"] = sample_size_section(old_precision)
    report["warmup"] = warmup_section(old_stats)
    report["null_campaign"] = null_campaign_section()
    report["seconds"] = time.monotonic() - started
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "validity.json").write_text(json.dumps(report, indent=1) + "\n")
    show(report)


def show(r: dict) -> None:
    print("False-positive rate of the comparison, AR(1), nominal 5 %")
    for row in r["comparison"]["fpr_ar1"]:
        print(
            f"  phi {row['phi']:.1f} n {row['n']:4d}: before {row['before']:.3f}  after {row['after']:.3f}  ({row['sims']} pairs)"
        )
    print("Independent data: false positives and power")
    for row in r["comparison"]["iid"]:
        print(
            f"  n {row['n']:4d} delta {row['delta_sd']} sd: fpr {row['fpr_before']:.3f} -> {row['fpr_after']:.3f}, power {row['power_before']:.3f} -> {row['power_after']:.3f}"
        )
    print("Coverage of the 95 % interval of the mean")
    for row in r["coverage"]:
        print(f"  phi {row['phi']:.1f} n {row['n']:4d}: before {row['before']:.3f}  after {row['after']:.3f}")
    ex = r["sample_size"]["example_phi0.9_cv10_pm1pct"]
    print(
        f"Runs needed, phi 0.9, cv 10 %, +-1 % (truth {ex['needed']:.0f}): before {ex['before_median']:.0f}, after {ex['after_median']:.0f} (medians)"
    )
    print("Precision loop (cv 5 %, target +-2 %, 10 runs first, cap 3x the runs needed)")
    for row in r["sample_size"]["loop"]:
        print(
            f"  phi {row['phi']:.1f} {row['method']:6s}: met {row['met']:.3f}, true width <= 1.1 target {row['true_width_within_10pct']:.3f}, "
            f"stopped < half the runs needed {row['stopped_below_half_oracle']:.3f}, runs median {row['runs_median']:.0f} "
            f"(needed {row['oracle_runs']:.0f}), rounds median {row['rounds_median']:.0f} max {row['rounds_max']}"
        )
    print("Warm-up detection (found within +-5 %; for warmup 0: share of stationary series trimmed)")
    for row in r["warmup"]["cases"]:
        print(
            f"  {row['noise']:14s} {row['level']:.2f} phi {row['phi']:.1f} warmup {row['warmup']:2d} cooldown {row['cooldown']:2d}: "
            f"before {row['before']:.2f} ({row['before_series']}, {row['before_ms_per_series']:.0f} ms each)  after {row['after']:.3f} ({row['after_series']}, {row['after_ms_per_series']:.1f} ms each)"
        )
    print(
        f"  issue example: before {r['warmup']['issue_example']['before']}, after {r['warmup']['issue_example']['after']}"
    )
    print("Null campaign of 20 identical records (190 comparisons)")
    for row in r["null_campaign"]:
        print(
            f"  {row['correction']:4s}: {row['significant_mean']:.2f} significant on average, campaigns with any: {row['campaigns_with_any']:.2f}"
        )
    print(f"({r['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
