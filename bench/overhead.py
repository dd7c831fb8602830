"""Benchmark (not a test): what running through perfsnake costs.

1. Metric fidelity: the heater and LevelDB readrandom, run via a campaign and
   via a hand-written shell loop, interleaved round by round (ABBA order).
   Reported: the paired same-round ratio campaign/shell with its 95 % CI,
   the medians and Welch's p-value.
2. Orchestration cost per run: campaign wall time minus the summed benchmark
   time for 100 and 1,000 runs of `true`, as 1 record x N runs and as
   N records x 1 run; the marginal cost per extra run.
3. DAG cost: dry-run time and peak memory for a 10,000-record campaign.

usage: .venv/bin/python bench/overhead.py [--quick]
Writes bench/results/overhead.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfsnake.metadata import host_metadata  # noqa: E402

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
OUT = ROOT / "bench" / "results"
#: LevelDB readrandom operations per run (about 2 s here: longer runs, less noise).
READS = 1_000_000


def snakemake(workdir: Path, campaign: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
           "--configfile", str(ROOT / "config/config.yaml"), "--directory", str(workdir),
           "--config", f"campaign={campaign}", *args]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return proc


def write(workdir: Path, data: dict) -> Path:
    path = workdir / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def paired_summary(campaign: list[float], shell: list[float]) -> dict:
    a, b = np.asarray(campaign), np.asarray(shell)
    ratio = a / b
    mean = float(ratio.mean())
    half = float(stats.t.ppf(0.975, len(ratio) - 1) * ratio.std(ddof=1) / np.sqrt(len(ratio)))
    welch = stats.ttest_ind(a, b, equal_var=False)
    return {
        "rounds": len(ratio),
        "paired_ratio_mean": mean,
        "paired_ratio_ci95": [mean - half, mean + half],
        "median_campaign": float(np.median(a)),
        "median_shell": float(np.median(b)),
        "median_ratio": float(np.median(a) / np.median(b)),
        "welch_t": float(welch.statistic),
        "welch_p": float(welch.pvalue),
        "campaign_cv": float(a.std(ddof=1) / a.mean()),
        "shell_cv": float(b.std(ddof=1) / b.mean()),
    }


def fidelity(workdir: Path, name: str, bench: dict, variables: dict, rounds: int, metric: str,
             build_target: str, shell_argv, parse) -> dict:  # fmt: skip
    """Interleave one campaign run and one shell run per round (ABBA order)."""
    camp = write(workdir, {"name": name, "benchmark": bench, "variables": variables, "nb_runs": rounds,
                           "duration_s": 1, "timeout_s": 300})  # fmt: skip
    snakemake(workdir, camp, "--cores", "2", build_target)
    camp_values: list[float] = []
    shell_values: list[float] = []
    script = ROOT / "bench" / "shell_loop.sh"
    for r in range(1, rounds + 1):
        target = f"results/{name}/runs/{'/'.join(f'{k}-{v[0]}' for k, v in variables.items())}/run-{r}/status.json"
        order = ("campaign", "shell") if r % 4 in (1, 0) else ("shell", "campaign")
        for side in order:
            if side == "campaign":
                snakemake(workdir, camp, "--cores", "1", target)
                out = (workdir / target).with_name("stdout.txt").read_text()
                camp_values.append(parse(out))
            else:
                out = subprocess.run(["sh", str(script), "1", *shell_argv(workdir)], capture_output=True, text=True, check=True).stdout
                shell_values.append(parse(out))
    return {"metric": metric, **paired_summary(camp_values, shell_values)}


def heater_ops(out: str) -> float:
    ops = int(re.search(r"Operations performed: (\d+)", out).group(1))
    dur = float(re.search(r"Duration: ([0-9.]+)", out).group(1))
    return ops / dur


def leveldb_ops(out: str) -> float:
    return 1e6 / float(re.search(r"readrandom\s*:\s*([0-9.]+) micros/op", out).group(1))


def orchestration(workdir: Path, records: int, runs: int) -> dict:
    name = f"trivial_{records}x{runs}"
    variables = {"x": list(range(records))}
    camp = write(workdir, {"name": name, "benchmark": {"type": "command", "command": "true {x}"},
                           "variables": variables, "nb_runs": runs})  # fmt: skip
    snakemake(workdir, camp, "--cores", "1", "resources/bin/psrun")
    start = time.monotonic()
    snakemake(workdir, camp, "--cores", "1", "all")
    total = time.monotonic() - start
    busy = sum(json.loads(p.read_text())["wall_s"] for p in (workdir / "results" / name).rglob("status.json"))
    return {"records": records, "runs_per_record": runs, "runs": records * runs, "wall_s": total,
            "benchmark_s": busy, "overhead_s": total - busy, "overhead_per_run_ms": (total - busy) / (records * runs) * 1000}  # fmt: skip


def dag_cost(workdir: Path, records: int) -> dict:
    camp = write(workdir, {"name": "dag", "benchmark": {"type": "command", "command": "true {a} {b}"},
                           "variables": {"a": list(range(records // 100)), "b": list(range(100))}})  # fmt: skip
    cmd = ["/usr/bin/time", "-f", "%e %M", SNAKEMAKE, "-n", "--quiet", "all", "-s", str(ROOT / "workflow/Snakefile"),
           "--workflow-profile", str(ROOT / "profiles/default"), "--configfile", str(ROOT / "config/config.yaml"),
           "--directory", str(workdir), "--config", f"campaign={camp}"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    elapsed, rss_kb = proc.stderr.strip().splitlines()[-1].split()
    return {"records": records, "dry_run_s": float(elapsed), "peak_rss_mb": int(rss_kb) / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="few rounds, for a smoke run")
    parser.add_argument("--skip", nargs="*", default=[], choices=["heater", "leveldb", "orchestration", "dag"])
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="perfsnake-bench-"))
    # Share the fetched LevelDB source with the scratch directory.
    if (ROOT / "resources" / "src").exists():
        (work / "resources").mkdir()
        shutil.copytree(ROOT / "resources" / "src", work / "resources" / "src", symlinks=True)
    previous = OUT / "overhead.json"
    # Sections skipped this time keep their earlier measurements.
    report: dict = json.loads(previous.read_text()) if previous.exists() and args.skip else {}
    report.update({"host": host_metadata(), "command": " ".join(sys.argv)})
    h_rounds, l_rounds = (4, 4) if args.quick else (30, 40)
    if "heater" not in args.skip:
        report["heater"] = fidelity(
            work, "fid_heater", "heater", {"cpu": [1]}, h_rounds, "ops_per_s", "resources/builds/heater/default",
            lambda w: [str(w / "resources/builds/heater/default/heater"), "--cpu", "1", "--duration", "1"], heater_ops,
        )  # fmt: skip
        print("heater", report["heater"], flush=True)
    if "leveldb" not in args.skip:
        build = "resources/builds/leveldb/default"
        report["leveldb"] = fidelity(
            work, "fid_leveldb", "leveldb", {"bench_name": ["readrandom"], "nb_threads": [1], "reads": [READS]},
            l_rounds, "ops_per_s (1e6 / micros_per_op)", build,
            lambda w: [str(w / build / "cmake/db_bench"), "--benchmarks=readrandom", "--threads=1", "--use_existing_db=1",
                       f"--db={w / build / 'db'}", "--num=100000", f"--reads={READS}"], leveldb_ops,
        )  # fmt: skip
        print("leveldb", report["leveldb"], flush=True)
    if "orchestration" not in args.skip:
        sizes = [100, 1000] if not args.quick else [20, 100]
        rows = []
        for n in sizes:
            rows.append(orchestration(work, 1, n))
            rows.append(orchestration(work, n, 1))
            print(rows[-2], rows[-1], flush=True)
        marginal = {}
        for shape in ("1xN", "Nx1"):
            pick = [r for r in rows if (r["records"] == 1) == (shape == "1xN")]
            lo, hi = pick[0], pick[-1]
            marginal[shape] = (hi["overhead_s"] - lo["overhead_s"]) / (hi["runs"] - lo["runs"]) * 1000
        report["orchestration"] = {"rows": rows, "marginal_ms_per_run": marginal}
    if "dag" not in args.skip:
        report["dag"] = dag_cost(work, 10000 if not args.quick else 1000)
        print("dag", report["dag"], flush=True)
    (OUT / "overhead.json").write_text(json.dumps(report, indent=2) + "\n")
    print_table(report)
    if not os.environ.get("PERFSNAKE_BENCH_KEEP"):
        shutil.rmtree(work, ignore_errors=True)


def print_table(report: dict) -> None:
    print("\n== metric fidelity (campaign / shell, paired by round) ==")
    for key in ("heater", "leveldb"):
        if key in report:
            r = report[key]
            lo, hi = r["paired_ratio_ci95"]
            print(f"{key:8s} rounds={r['rounds']:3d} ratio={r['paired_ratio_mean']:.4f} CI95=[{lo:.4f}, {hi:.4f}] "
                  f"medians {r['median_campaign']:.4g} vs {r['median_shell']:.4g} Welch p={r['welch_p']:.3f}")  # fmt: skip
    if "orchestration" in report:
        print("\n== orchestration cost ==")
        for row in report["orchestration"]["rows"]:
            print(f"{row['records']:5d} records x {row['runs_per_record']:5d} runs: wall {row['wall_s']:.2f} s, "
                  f"overhead {row['overhead_per_run_ms']:.1f} ms/run")  # fmt: skip
        for shape, ms in report["orchestration"]["marginal_ms_per_run"].items():
            print(f"marginal cost per extra run ({shape}): {ms:.1f} ms")
    if "dag" in report:
        d = report["dag"]
        print(f"\n== DAG: {d['records']} records: dry-run {d['dry_run_s']:.1f} s, peak RSS {d['peak_rss_mb']:.0f} MB")


if __name__ == "__main__":
    main()
