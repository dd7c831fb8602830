"""Benchmark (not a test): what containment costs the launcher, per run.

The launcher before containment (perfsnake/csrc/psrun/psrun.c at a base commit) and the
current one, side by side in one process, arms interleaved round by round
with the order rotating, each launching /bin/true in a fresh run directory:

  before            the base commit's psrun
  cgroup            the current psrun, a run cgroup (clone3 into it; needs root)
  subreaper         the current psrun, PERFSNAKE_CGROUP=none

Reported (bench/results/launcher_cost.json), per arm: the median timed
interval (status.json's wall_s: fork to wait4, what a measurement contains)
and the median whole launch (process start to exit, as the workflow sees
it: sweep, cgroup set-up and removal, status writing), and each arm's
ratios to `before` with bootstrap 95 % intervals of the median ratio.

usage: .venv/bin/python bench/launcher_cost.py [--rounds N] [--base COMMIT]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfsnake.layout import c_source

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "launcher_cost.json"


def compile_psrun(source: str, out: Path) -> Path:
    src = out.with_suffix(".c")
    src.write_text(source)
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out), str(src)], check=True)
    return out


def launch(psrun: Path, run_dir: Path, env: dict[str, str]) -> tuple[float, float]:
    run_dir.mkdir()
    started = time.perf_counter()
    subprocess.run([str(psrun), "--dir", str(run_dir), "--", "/bin/true"], env=env, check=True)
    whole = time.perf_counter() - started
    return json.loads((run_dir / "status.json").read_text())["wall_s"], whole


def ratio_ci(num: list[float], den: list[float], rng: random.Random, n: int = 2000) -> tuple[float, float, float]:
    """Median of paired per-round ratios, with a bootstrap 95 % interval."""
    ratios = [a / b for a, b in zip(num, den, strict=True)]
    boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(n))
    return statistics.median(ratios), boot[int(0.025 * n)], boot[int(0.975 * n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--base", default="4eccd8c", help="commit of the launcher before containment")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="launcher-cost-"))
    old = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{args.base}:src/psrun/psrun.c"], capture_output=True, text=True, check=True
    ).stdout
    bins = {"before": compile_psrun(old, work / "psrun-before"),
            "current": compile_psrun((c_source("psrun", "psrun.c")).read_text(), work / "psrun-current")}  # fmt: skip
    base_env = {k: v for k, v in os.environ.items() if k != "PERFSNAKE_CGROUP"}
    arms = {
        "before": (bins["before"], base_env),
        "subreaper": (bins["current"], {**base_env, "PERFSNAKE_CGROUP": "none"}),
    }
    if os.geteuid() == 0:
        arms["cgroup"] = (bins["current"], base_env)
    names = list(arms)
    wall: dict[str, list[float]] = {n: [] for n in names}
    whole: dict[str, list[float]] = {n: [] for n in names}
    containment: dict[str, str] = {}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            psrun, env = arms[name]
            run_dir = work / f"{name}-{r}"
            w, t = launch(psrun, run_dir, env)
            wall[name].append(w)
            whole[name].append(t)
            containment[name] = json.loads((run_dir / "status.json").read_text()).get("containment", "none (before)")
    rng = random.Random(1)
    result: dict[str, object] = {"rounds": args.rounds, "base": args.base, "command": "/bin/true", "arms": {}}
    for name in names:
        entry: dict[str, object] = {
            "containment": containment[name],
            "timed_interval_median_us": statistics.median(wall[name]) * 1e6,
            "whole_launch_median_us": statistics.median(whole[name]) * 1e6,
        }
        if name != "before":
            for label, data in (("timed_interval", wall), ("whole_launch", whole)):
                med, lo, hi = ratio_ci(data[name], data["before"], rng)
                entry[f"{label}_ratio_to_before"] = {"median": med, "ci95": [lo, hi]}
        result["arms"][name] = entry  # type: ignore[index]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
