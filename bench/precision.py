"""Benchmark (not a test): time to reach a +-5 % interval with a precision
target, versus a fixed nb_runs of 30, on the heater and on LevelDB.

usage: .venv/bin/python bench/precision.py
Writes bench/results/precision.json and prints a table.
"""

from __future__ import annotations

import csv
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from overhead import snakemake  # noqa: E402

from perfsnake.machine.metadata import host_metadata  # noqa: E402

OUT = ROOT / "bench" / "results"
CASES = {
    "heater": ({"benchmark": "heater", "variables": {"cpu": [1]}, "duration_s": 0.5}, "ops_per_s", "resources/builds/heater/default"),
    "leveldb": ({"benchmark": "leveldb", "variables": {"bench_name": ["readrandom"], "nb_threads": [1], "reads": [200000]}},
                "ops_per_s", "resources/builds/leveldb/default"),
}  # fmt: skip


def run_case(work: Path, name: str, base: dict, metric: str, build: str, mode: str) -> dict:
    data = {"name": f"{name}_{mode}", **base, "timeout_s": 120}
    if mode == "precision":
        data["precision"] = {"metric": metric, "target_rel_ci": 0.05, "min_runs": 3, "max_runs": 30}
    else:
        data["nb_runs"] = 30
    camp = work / f"{data['name']}.yaml"
    camp.write_text(yaml.safe_dump(data))
    snakemake(work, camp, "--cores", "2", build)  # build outside the timed part
    start = time.monotonic()
    snakemake(work, camp, "--cores", "1", "all")
    elapsed = time.monotonic() - start
    with (work / "results" / data["name"] / "summary.csv").open() as f:
        row = next(r for r in csv.DictReader(f) if r["metric"] == metric)
    mean, lo, hi = float(row["mean"]), float(row["mean_ci_low"]), float(row["mean_ci_high"])
    return {"mode": mode, "wall_s": elapsed, "runs": int(row["n"]), "rel_half_width": (hi - lo) / 2 / mean,
            "target_met": row.get("precision_target_met", "")}  # fmt: skip


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="perfsnake-precision-"))
    if (ROOT / "resources" / "src").exists():
        (work / "resources").mkdir()
        shutil.copytree(ROOT / "resources" / "src", work / "resources" / "src", symlinks=True)
    report: dict = {"host": host_metadata(), "command": " ".join(sys.argv), "cases": {}}
    for name, (base, metric, build) in CASES.items():
        report["cases"][name] = [run_case(work, name, base, metric, build, mode) for mode in ("precision", "fixed30")]
    (OUT / "precision.json").write_text(json.dumps(report, indent=2) + "\n")
    print("benchmark  mode       runs  wall_s  rel.half-width  target met")
    for name, rows in report["cases"].items():
        for r in rows:
            print(
                f"{name:9s}  {r['mode']:9s}  {r['runs']:4d}  {r['wall_s']:6.1f}  {r['rel_half_width']:14.4f}  {r['target_met']}"
            )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
