"""Benchmark (not a test): what running through perfsnake costs.

1. Metric fidelity: the heater and LevelDB readrandom, run via a campaign and
   via a hand-written shell loop, interleaved round by round (ABBA order).
   Reported: the paired same-round ratio campaign/shell with its 95 % CI,
   the medians and Welch's p-value.
2. Orchestration cost per run: campaign wall time minus the summed benchmark
   time for 100 and 1,000 runs of `true`, as 1 record x N runs and as
   N records x 1 run; the marginal cost per extra run.
3. DAG cost: dry-run time and peak memory for a 10,000-record campaign.
4. Bare Snakemake baselines measured in the same invocation, and the ratios
   the architecture issue sets targets for: dry run of 10,000 trivial jobs
   (target: perfsnake <= 1.3x, <= 400 MB), marginal cost per job with
   `--scheduler greedy` (target: perfsnake's marginal cost per run <= 1.2x),
   and a one-job workflow end to end (target: a 1-run campaign <= 3x).

usage: .venv/bin/python bench/overhead.py [--quick]
Writes bench/results/overhead.json and prints a table.

`--one-run ROUNDS [--before CHECKOUT]` measures only the one-run campaign
against the bare one-job workflow (and another checkout's, e.g. the commit
before a change), interleaved round by round; writes bench/results/one_run.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
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

from perfsnake.machine.metadata import host_metadata  # noqa: E402

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
OUT = ROOT / "bench" / "results"
#: LevelDB readrandom operations per run (about 2 s here: longer runs, less noise).
READS = 1_000_000


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def snakemake(
    workdir: Path, campaign: Path, *args: str, root: Path = ROOT, env: dict | None = None
) -> subprocess.CompletedProcess:
    cmd = [SNAKEMAKE, "-s", str(root / "workflow/Snakefile"), "--workflow-profile", str(root / "profiles/default"),
           "--configfile", str(root / "config/config.yaml"), "--directory", str(workdir),
           "--config", f"campaign={campaign}", *args]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
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
                out = subprocess.run(
                    ["sh", str(script), "1", *shell_argv(workdir)], capture_output=True, text=True, check=True
                ).stdout
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
    start, cpu0 = time.monotonic(), _cpu_of_children()
    snakemake(workdir, camp, "--cores", "1", "all")
    total, cpu = time.monotonic() - start, _cpu_of_children() - cpu0
    busy = sum(json.loads(p.read_text())["wall_s"] for p in (workdir / "results" / name).rglob("status.json"))
    return {"records": records, "runs_per_record": runs, "runs": records * runs, "wall_s": total, "cpu_s": cpu,
            "benchmark_s": busy, "overhead_s": total - busy, "overhead_per_run_ms": (total - busy) / (records * runs) * 1000}  # fmt: skip


def dag_cost(workdir: Path, records: int) -> dict:
    camp = write(workdir, {"name": "dag", "benchmark": {"type": "command", "command": "true {a} {b}"},
                           "variables": {"a": list(range(records // 100)), "b": list(range(100))}})  # fmt: skip
    # The target first: `--quiet all` would read "all" as a quietness level.
    cmd = [SNAKEMAKE, "-n", "all", "--quiet", "-s", str(ROOT / "workflow/Snakefile"),
           "--workflow-profile", str(ROOT / "profiles/default"), "--configfile", str(ROOT / "config/config.yaml"),
           "--directory", str(workdir), "--config", f"campaign={camp}"]  # fmt: skip
    elapsed, rss, cpu = timed(cmd, workdir)
    return {"records": records, "dry_run_s": elapsed, "peak_rss_mb": rss, "cpu_s": cpu}


BARE_SNAKEFILE = """\
rule all:
    input:
        expand("out/{i}.txt", i=range(int(config["njobs"]))),


rule one:
    output:
        "out/{i}.txt",
    shell:
        "true > {output}"
"""


def bare_workflow(workdir: Path) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    snakefile = workdir / "Snakefile"
    snakefile.write_text(BARE_SNAKEFILE)
    return snakefile


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MB, CPU seconds user+system) of a command, via
    GNU time. On a shared machine the CPU time is the steadier of the two."""
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%e %M %U %S", *cmd], cwd=cwd, capture_output=True, text=True, check=True
    )
    elapsed, rss_kb, user, system = proc.stderr.strip().splitlines()[-1].split()
    return float(elapsed), int(rss_kb) / 1024, float(user) + float(system)


def bare_dag(workdir: Path, jobs: int) -> dict:
    # The target first: `--quiet all` would read "all" as a quietness level.
    snakefile = bare_workflow(workdir / f"bare_dag_{jobs}")
    cmd = [
        SNAKEMAKE,
        "-n",
        "all",
        "--quiet",
        "-s",
        str(snakefile),
        "--directory",
        str(snakefile.parent),
        "--config",
        f"njobs={jobs}",
    ]
    elapsed, rss, cpu = timed(cmd, snakefile.parent)
    return {"jobs": jobs, "dry_run_s": elapsed, "peak_rss_mb": rss, "cpu_s": cpu}


def bare_jobs(workdir: Path, jobs: int) -> tuple[float, float]:
    """(wall, CPU) seconds of running `jobs` trivial shell jobs, one core, greedy scheduler."""
    snakefile = bare_workflow(workdir / f"bare_run_{jobs}")
    cmd = [SNAKEMAKE, "all", "--cores", "1", "--scheduler", "greedy", "--quiet", "-s", str(snakefile),
           "--directory", str(snakefile.parent), "--config", f"njobs={jobs}"]  # fmt: skip
    start, cpu0 = time.monotonic(), _cpu_of_children()
    subprocess.run(cmd, cwd=snakefile.parent, capture_output=True, text=True, check=True)
    return time.monotonic() - start, _cpu_of_children() - cpu0


def one_run_end_to_end(workdir: Path) -> dict:
    """A 1-run perfsnake campaign against a bare 1-job workflow, end to end."""
    workdir.mkdir(parents=True, exist_ok=True)
    camp = write(
        workdir,
        {"name": "one", "benchmark": {"type": "command", "command": "true {x}"}, "variables": {"x": [1]}, "nb_runs": 1},
    )
    snakemake(workdir, camp, "--cores", "1", "resources/bin/psrun")
    shutil.rmtree(workdir / "results" / "one", ignore_errors=True)
    start = time.monotonic()
    snakemake(workdir, camp, "--cores", "1", "all")
    perfsnake_s = time.monotonic() - start
    bare_s = bare_jobs(workdir / "bare_one", 1)[0]
    return {"perfsnake_s": perfsnake_s, "bare_s": bare_s, "ratio": perfsnake_s / bare_s}


def one_run_rounds(work: Path, rounds: int, before: Path | None) -> dict:
    """A 1-run campaign end to end against bare Snakemake's one-job workflow,
    `rounds` times, interleaved (the order rotates each round); with `before`
    (another checkout of perfsnake, e.g. `git worktree add /tmp/before HEAD`
    with .venv symlinked), that checkout's campaign too, in the same rounds.
    Each side records into a results store of its own in the scratch
    directory (PERFSNAKE_HISTORY), so the history job reads the same small
    store on both sides, not the user's growing one."""
    trees = {"perfsnake": ROOT, **({"before": before.resolve()} if before else {})}
    camps, envs = {}, {}
    for side, root in trees.items():
        wd = work / f"one_{side}"
        wd.mkdir(parents=True, exist_ok=True)
        camps[side] = write(wd, {"name": "one", "benchmark": {"type": "command", "command": "true {x}"},
                                 "variables": {"x": [1]}, "nb_runs": 1})  # fmt: skip
        envs[side] = {**os.environ, "PERFSNAKE_HISTORY": f"sqlite:///{wd / 'history.sqlite'}"}
        snakemake(wd, camps[side], "--cores", "1", "resources/bin/psrun", root=root, env=envs[side])
        snakemake(wd, camps[side], "--cores", "1", "all", root=root, env=envs[side])  # warm-up: bytecode, caches
    bare_dir = bare_workflow(work / "bare_one_rounds").parent
    bare_cmd = [SNAKEMAKE, "all", "--cores", "1", "--scheduler", "greedy", "--quiet", "-s", str(bare_dir / "Snakefile"),
                "--directory", str(bare_dir), "--config", "njobs=1"]  # fmt: skip
    subprocess.run(bare_cmd, cwd=bare_dir, capture_output=True, check=True)
    sides = [*trees, "bare"]
    times: dict[str, list[float]] = {side: [] for side in sides}
    for r in range(rounds):
        for side in sides[r % len(sides) :] + sides[: r % len(sides)]:
            if side == "bare":
                shutil.rmtree(bare_dir / "out", ignore_errors=True)
                start = time.monotonic()
                subprocess.run(bare_cmd, cwd=bare_dir, capture_output=True, check=True)
            else:
                wd = camps[side].parent
                shutil.rmtree(wd / "results" / "one", ignore_errors=True)
                start = time.monotonic()
                snakemake(wd, camps[side], "--cores", "1", "all", root=trees[side], env=envs[side])
            times[side].append(time.monotonic() - start)
    out: dict = {"rounds": rounds, "loadavg": Path("/proc/loadavg").read_text().split()[:3], "times_s": times}
    for side in trees:
        ratios = sorted(a / b for a, b in zip(times[side], times["bare"]))
        out[side] = {"median_s": float(np.median(times[side])), "min_s": min(times[side]),
                     "paired_ratio_median": ratios[len(ratios) // 2], "paired_ratio_range": [ratios[0], ratios[-1]],
                     "min_ratio": min(times[side]) / min(times["bare"])}  # fmt: skip
    out["bare"] = {"median_s": float(np.median(times["bare"])), "min_s": min(times["bare"])}
    return out


def print_one_run(res: dict) -> None:
    print(f"\n== one-run campaign end to end, {res['rounds']} interleaved rounds (load {' '.join(res['loadavg'])}) ==")
    print(f"bare one-job workflow: median {res['bare']['median_s']:.2f} s, min {res['bare']['min_s']:.2f} s")
    for side in ("before", "perfsnake"):
        if side in res:
            r = res[side]
            lo, hi = r["paired_ratio_range"]
            print(f"{side:9s}: median {r['median_s']:.2f} s, min {r['min_s']:.2f} s; ratio to bare, paired by round: "
                  f"median {r['paired_ratio_median']:.2f}x [{lo:.2f}, {hi:.2f}], of minima {r['min_ratio']:.2f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="few rounds, for a smoke run")
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=["heater", "leveldb", "orchestration", "dag", "baselines"]
    )
    parser.add_argument("--one-run", type=int, metavar="ROUNDS",
                        help="only the one-run campaign against bare Snakemake, ROUNDS interleaved rounds")  # fmt: skip
    parser.add_argument("--before", type=Path, metavar="CHECKOUT",
                        help="with --one-run: another checkout's campaign in the same rounds")  # fmt: skip
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="perfsnake-bench-"))
    if args.one_run:
        res = one_run_rounds(work, args.one_run, args.before)
        res["command"] = " ".join(sys.argv)
        (OUT / "one_run.json").write_text(json.dumps(res, indent=2) + "\n")
        print_one_run(res)
        shutil.rmtree(work, ignore_errors=True)
        return
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
    if "baselines" not in args.skip:
        report["baselines"] = baselines(work, args.quick)
        print("baselines", report["baselines"], flush=True)
    (OUT / "overhead.json").write_text(json.dumps(report, indent=2) + "\n")
    print_table(report)
    if not os.environ.get("PERFSNAKE_BENCH_KEEP"):
        shutil.rmtree(work, ignore_errors=True)


def baselines(work: Path, quick: bool) -> dict:
    """Bare Snakemake beside perfsnake, interleaved, and the target ratios."""
    n = 1000 if quick else 10000
    small, large = (20, 100) if quick else (100, 1000)
    out: dict = {}
    dags = [(dag_cost(work, n), bare_dag(work, n)) for _ in range(3)]
    ours = min(d[0]["dry_run_s"] for d in dags)
    bare = min(d[1]["dry_run_s"] for d in dags)
    ours_cpu = min(d[0]["cpu_s"] for d in dags)
    bare_cpu = min(d[1]["cpu_s"] for d in dags)
    print("dry runs", dags, flush=True)
    out["dag"] = {"jobs": n, "perfsnake_s": ours, "bare_s": bare, "ratio": ours / bare,
                  "perfsnake_cpu_s": ours_cpu, "bare_cpu_s": bare_cpu, "cpu_ratio": ours_cpu / bare_cpu,
                  "perfsnake_rss_mb": max(d[0]["peak_rss_mb"] for d in dags), "bare_rss_mb": max(d[1]["peak_rss_mb"] for d in dags)}  # fmt: skip
    # A work dir of its own: the orchestration section's campaigns of the same
    # names are complete in `work`, so re-running them there would run nothing.
    fresh = work / "baselines"
    fresh.mkdir(exist_ok=True)
    ours_rows = [orchestration(fresh, 1, small), orchestration(fresh, 1, large)]
    ours_marginal = (ours_rows[1]["overhead_s"] - ours_rows[0]["overhead_s"]) / (large - small) * 1000
    bare_large, bare_small = bare_jobs(work, large), bare_jobs(work, small)
    bare_marginal = (bare_large[0] - bare_small[0]) / (large - small) * 1000
    ours_cpu_marginal = (ours_rows[1]["cpu_s"] - ours_rows[0]["cpu_s"]) / (large - small) * 1000
    bare_cpu_marginal = (bare_large[1] - bare_small[1]) / (large - small) * 1000
    print("orchestration", ours_rows, flush=True)
    out["marginal"] = {"perfsnake_ms": ours_marginal, "bare_greedy_ms": bare_marginal, "ratio": ours_marginal / bare_marginal,
                       "perfsnake_cpu_ms": ours_cpu_marginal, "bare_cpu_ms": bare_cpu_marginal, "cpu_ratio": ours_cpu_marginal / bare_cpu_marginal}  # fmt: skip
    out["one_run"] = one_run_end_to_end(work / "one_run")
    out["targets"] = {"dag_ratio<=1.3": out["dag"]["ratio"] <= 1.3, "dag_cpu_ratio<=1.3": out["dag"]["cpu_ratio"] <= 1.3, "dag_rss<=400MB": out["dag"]["perfsnake_rss_mb"] <= 400,
                      "marginal_ratio<=1.2": out["marginal"]["ratio"] <= 1.2, "one_run_ratio<=3": out["one_run"]["ratio"] <= 3}  # fmt: skip
    return out


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
    if "baselines" in report:
        b = report["baselines"]
        print("\n== against bare Snakemake (same invocation) ==")
        print(f"dry run, {b['dag']['jobs']} jobs: {b['dag']['perfsnake_s']:.1f} s vs {b['dag']['bare_s']:.1f} s = {b['dag']['ratio']:.2f}x "
              f"(CPU {b['dag'].get('perfsnake_cpu_s', 0):.1f} vs {b['dag'].get('bare_cpu_s', 0):.1f} s = {b['dag'].get('cpu_ratio', 0):.2f}x); "
              f"RSS {b['dag']['perfsnake_rss_mb']:.0f} vs {b['dag']['bare_rss_mb']:.0f} MB")  # fmt: skip
        print(
            f"marginal per run: {b['marginal']['perfsnake_ms']:.1f} ms vs {b['marginal']['bare_greedy_ms']:.1f} ms (greedy) = {b['marginal']['ratio']:.2f}x "
            f"(CPU {b['marginal'].get('perfsnake_cpu_ms', 0):.1f} vs {b['marginal'].get('bare_cpu_ms', 0):.1f} ms = {b['marginal'].get('cpu_ratio', 0):.2f}x)"
        )
        print(
            f"one run end to end: {b['one_run']['perfsnake_s']:.2f} s vs {b['one_run']['bare_s']:.2f} s = {b['one_run']['ratio']:.2f}x"
        )
        print("targets met:", b["targets"])


if __name__ == "__main__":
    main()
