"""Benchmark (not a test): the workload catalog's ready campaigns on this
machine, for the figures of the catalog table (config/README.md).

usage: .venv/bin/python bench/catalog.py [--only redis,fio,...] [--label quiet]

Runs each ready campaign of the catalog (config/campaigns/<name>.yaml, as a
new user would: `snakemake --cores 1 all`) in a scratch working directory,
then reads its summary.csv and keeps, per record, the metric its first
figure draws: n, median, mean and the interval of the mean. Writes
bench/results/catalog.json (appended under --label, with the machine, the
load average before and after, and each campaign's wall time) and
bench/results/catalog-<label>.md, the table the catalog page quotes. Run it
on a quiet machine (nothing else running); it says the load it saw.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
CATALOG = ("stress_ng", "sysbench", "fio", "cyclictest", "rocksdb", "kyotocabinet", "redis", "memcached",
           "postgresql", "mariadb")  # fmt: skip


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def figure_metric(campaign: dict) -> str:
    """The metric the campaign's first figure draws (its main figure)."""
    y = campaign["plots"][0]["y"]
    return str(y[0] if isinstance(y, list) else y)


def run_campaign(name: str, work: Path) -> tuple[float, int]:
    cmd = [str(Path(sys.executable).with_name("snakemake")), "-s", str(ROOT / "workflow" / "Snakefile"),
           "--workflow-profile", str(ROOT / "profiles" / "default"), "--configfile", str(ROOT / "config" / "config.yaml"),
           "--directory", str(work), "--cores", "1", "all", "--config", f"campaign={ROOT / 'config/campaigns' / name}.yaml"]  # fmt: skip
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode:
        print(proc.stderr[-2000:], file=sys.stderr)
    return time.monotonic() - start, proc.returncode


def rows_of(name: str, work: Path, metric: str) -> list[dict[str, object]]:
    path = work / "results" / name / "summary.csv"
    if not path.exists():
        return []
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        header = list(reader.fieldnames or [])
        variables = header[: header.index("metric")] if "metric" in header else []
        # (a record the metric does not apply to, e.g. fio's writes for read IOPS, has no runs of it)
        keep = [r for r in reader if r["metric"] == metric and r["n"] not in ("", "0")]
    return [{"record": ", ".join(f"{v}={r[v]}" for v in variables if v in r), "metric": metric, "n": r["n"],
             "median": r["median"], "mean": r["mean"], "ci": [r["mean_ci_low"], r["mean_ci_high"]]} for r in keep]  # fmt: skip


def number(text: object) -> str:
    try:
        value = float(str(text))
    except ValueError:
        return str(text)
    return f"{value:.4g}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="comma-separated campaign names (default: the whole catalog)")
    parser.add_argument("--label", default="quiet")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(CATALOG)
    work = Path(tempfile.mkdtemp(prefix="perfsnake-catalog-"))
    entry: dict[str, object] = {"label": args.label, "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                "host": platform.node(), "cpu": cpu_model(), "cpus": os.cpu_count(),
                                "kernel": platform.release(), "load_before": os.getloadavg()[0], "campaigns": {}}  # fmt: skip
    for name in names:
        spec = yaml.safe_load((ROOT / "config" / "campaigns" / f"{name}.yaml").read_text())
        seconds, status = run_campaign(name, work)
        metric = figure_metric(spec)
        entry["campaigns"][name] = {"seconds": round(seconds, 1), "exit": status,  # type: ignore[index]
                                    "rows": rows_of(name, work, metric)}  # fmt: skip
        print(f"{name}: {seconds:.0f} s, exit {status}", flush=True)
    entry["load_after"] = os.getloadavg()[0]
    RESULTS.mkdir(parents=True, exist_ok=True)
    store = RESULTS / "catalog.json"
    history = json.loads(store.read_text()) if store.exists() else []
    store.write_text(json.dumps([*history, entry], indent=1) + "\n")
    lines = [f"# Catalog figures ({args.label})", "",
             f"{entry['host']}: {entry['cpu']}, {entry['cpus']} CPUs, Linux {entry['kernel']}; {entry['utc']}; "
             f"load average {entry['load_before']:.2f} before, {entry['load_after']:.2f} after. "
             "`.venv/bin/python bench/catalog.py` made it.", "",
             "| campaign | record | metric | n | median | mean [95 % CI] |", "|---|---|---|---:|---:|---|"]  # fmt: skip
    for name, data in entry["campaigns"].items():  # type: ignore[attr-defined]
        for row in data["rows"]:
            lo, hi = row["ci"]
            lines.append(f"| {name} | {row['record']} | {row['metric']} | {row['n']} | {number(row['median'])} | "
                         f"{number(row['mean'])} [{number(lo)}, {number(hi)}] |")  # fmt: skip
        if not data["rows"]:
            lines.append(f"| {name} | (no result: exit {data['exit']}) | | | | |")
    out = RESULTS / f"catalog-{args.label}.md"
    out.write_text("\n".join(lines) + "\n")
    print(out)


if __name__ == "__main__":
    main()
