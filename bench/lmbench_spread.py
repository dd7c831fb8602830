"""Benchmark (not a test): why ours moves more than lmbench3 under load (issue 36).

usage: .venv/bin/python bench/lmbench_spread.py --lmbench3 BIN [--rounds 30] [--enough-us 1000]
           [--program "lat_syscall null"] [--variants base,theirs,...] [--label NAME]

Runs one program of both suites with the same operands, interval
(LMBENCH_ENOUGH_US / ENOUGH) and repetitions (-N 11), unpinned, each
invocation in a session of its own as bench/lmbench_figures.py runs them,
in interleaved rounds (the variants' order rotates every round), so every
variant sees the same load. Variants:

  ours          our program as lmbench_figures.py runs it
  ours_min      the same invocation's .min line (its shortest interval)
  ours_warm     ours with -W 40000 (40 ms of untimed warm-up before the
                intervals, about what lmbench3 spends measuring its timer
                and loop overheads before its first interval)
  ours_wUS      ours with -W US
  ours_head     ours built from the committed sources (git HEAD): before an
                uncommitted change to the harness
  theirs        lmbench3 as lmbench_figures.py runs it
  theirs_cold   lmbench3 with TIMING_O=0 LOOP_O=0 (no overhead measurement,
                so it starts timing at once, as ours does)

Per variant: the median over rounds, CV, the quartiles' spread (IQR /
median: one outlier round does not make it), the largest over the
median, and the wall time per invocation; per round the ratio ours /
theirs. Appends to bench/results/lmbench_spread.json under --label, with
the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from lmbench_interval import build  # noqa: E402  (a sibling: bench/ is the script's directory)

from perfsnake.benchmarks.lmbench import program_sources  # noqa: E402

OUT = ROOT / "bench" / "results" / "lmbench_spread.json"
_US = r"(\S+) microseconds"
#: label -> (our argv, its result line, lmbench3 argv, regex for lmbench3's value)
PROGRAMS = {
    "lat_syscall null": (["lat_syscall", "null"], "lat_syscall.null", ["lat_syscall", "null"], "Simple syscall: " + _US),
    "lat_syscall read": (["lat_syscall", "read"], "lat_syscall.read", ["lat_syscall", "read"], "Simple read: " + _US),
    "lat_syscall write": (["lat_syscall", "write"], "lat_syscall.write", ["lat_syscall", "write"], "Simple write: " + _US),
    "lat_pipe": (["lat_pipe"], "lat_pipe", ["lat_pipe"], "Pipe latency: " + _US),
    "lat_mem_rd 16 KB": (["lat_mem_rd", "16", "64"], None, ["lat_mem_rd", "0.016", "64"], r"^0\.01600 (\S+)$"),
}  # fmt: skip
_LINE = re.compile(r"^(\S+) ([0-9.]+) (ns|us|MB/s)$", re.M)
_NOTE = re.compile(r"^# benchmp (.*)$", re.M)


def run(cmd: list[str], env: dict, cwd: Path | None = None) -> tuple[str, float]:
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=300, start_new_session=True)
    wall = time.monotonic() - t0
    if proc.returncode:
        raise RuntimeError(f"{cmd}: exit {proc.returncode}: {proc.stderr[-300:]}")
    return proc.stderr + proc.stdout, wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lmbench3", type=Path, required=True, help="lmbench3's bin/<os> directory")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--enough-us", type=int, default=1000)
    parser.add_argument("--repetitions", type=int, default=11)
    parser.add_argument("--program", default="lat_syscall null", choices=sorted(PROGRAMS))
    parser.add_argument("--variants", default="ours,ours_warm,theirs,theirs_cold")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    ours_argv, line, theirs_argv, pattern = PROGRAMS[args.program]
    variants = args.variants.split(",")
    work = Path(tempfile.mkdtemp(prefix="lmbench-spread-"))
    ours_bin = build(work, ours_argv[0])
    head_bin = None
    if "ours_head" in variants:
        old = work / "head"
        old.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "HEAD", "perfsnake/csrc/lmbench"], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
        srcs = [old / p.relative_to(ROOT) for p in program_sources(ours_argv[0])]
        head_bin = old / ours_argv[0]
        subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(head_bin), *map(str, srcs)], check=True)
    base = {
        k: v for k, v in os.environ.items() if not k.startswith("LMBENCH") and k not in ("ENOUGH", "TIMING_O", "LOOP_O")
    }
    base["TMPDIR"] = str(work)
    reps = ["-N", str(args.repetitions)]
    values: dict[str, list[float]] = {v: [] for v in [*variants, "ours_min"]}
    walls: dict[str, list[float]] = {v: [] for v in variants}
    notes: list[str] = []
    ratios: list[float] = []
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    start = time.monotonic()
    for rnd in range(args.rounds):
        order = variants[rnd % len(variants) :] + variants[: rnd % len(variants)]
        got: dict[str, float] = {}
        for v in order:
            if v.startswith("ours"):
                warm = "40000" if v == "ours_warm" else v[len("ours_w") :] if v.startswith("ours_w") else ""
                flags = reps + (["-W", warm] if warm else [])
                env = {**base, "LMBENCH_ENOUGH_US": str(args.enough_us)}
                binary = head_bin if v == "ours_head" else ours_bin
                out, wall = run([str(binary), *flags, *ours_argv[1:]], env)
                found = {m.group(1): float(m.group(2)) for m in _LINE.finditer(out)}
                name = line or next(iter(found))
                got[v] = found[name]
                if v == "ours":
                    got["ours_min"] = found[name + ".min"]
                    notes.extend(_NOTE.findall(out))
            else:
                env = {**base, "ENOUGH": str(args.enough_us)}
                if v == "theirs_cold":
                    env |= {"TIMING_O": "0", "LOOP_O": "0"}
                out, wall = run([str(args.lmbench3 / theirs_argv[0]), *reps, *theirs_argv[1:]], env, cwd=args.lmbench3)
                m = re.search(pattern, out, re.M)
                if not m:
                    raise RuntimeError(f"lmbench3: no match in {out[-300:]!r}")
                got[v] = float(m.group(1))
            walls[v].append(wall)
        for k, x in got.items():
            values[k].append(x)
        if "ours" in got and "theirs" in got:
            ratios.append(got["ours"] / got["theirs"])
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    rows = {}
    for v, xs in values.items():
        if not xs:
            continue
        q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
        med = statistics.median(xs)
        rows[v] = {
            "median": med, "cv": statistics.stdev(xs) / statistics.mean(xs) if len(xs) > 1 else None,
            "iqr_over_median": (q[2] - q[0]) / med, "max_over_median": max(xs) / med, "min": min(xs), "max": max(xs),
            "wall_ms_median": statistics.median(walls[v]) * 1000 if walls.get(v) else None, "values": xs,
        }  # fmt: skip
    record = {
        "label": args.label, "program": args.program, "enough_us": args.enough_us, "repetitions": args.repetitions,
        "rounds": args.rounds, "date": time.strftime("%Y-%m-%d %H:%M"), "loadavg_before": load_before,
        "loadavg_after": load_after, "wall_s": round(time.monotonic() - start, 1), "rows": rows,
        "ratio_median": statistics.median(ratios) if ratios else None,
        "ratio_range": [min(ratios), max(ratios)] if ratios else None, "ratios": ratios, "our_notes": notes,
    }  # fmt: skip
    old = json.loads(OUT.read_text()) if OUT.exists() else []
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps([*old, record], indent=1) + "\n")
    print(
        f"{args.program}, {args.rounds} rounds, {args.enough_us} us, -N {args.repetitions}; load {' '.join(load_before)} -> {' '.join(load_after)}"
    )
    print(f"{'variant':<12} {'median':>9} {'CV':>7} {'IQR/med':>8} {'max/med':>8} {'wall ms':>8}")
    for v, r in rows.items():
        wall_ms = f"{r['wall_ms_median']:.0f}" if r["wall_ms_median"] else "-"
        print(
            f"{v:<12} {r['median']:>9.4g} {r['cv']:>7.1%} {r['iqr_over_median']:>8.1%} {r['max_over_median']:>8.2f} {wall_ms:>8}"
        )
    if ratios:
        print(f"ours/theirs per round: median {record['ratio_median']:.3f} ({min(ratios):.2f}-{max(ratios):.2f})")
    print(f"wrote {OUT} ({record['wall_s']} s)")


if __name__ == "__main__":
    main()
