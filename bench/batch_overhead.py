"""Benchmark (not a test): what a run of `true` costs, by how runs become jobs.

Side by side, interleaved (each round runs every way once, in a rotated
order, at every size), for N runs of `true` (10 records x N/10 runs;
`--per-record R`: N/R records x R runs; `--command CMD`: CMD instead of
`true`, e.g. `sleep 0.01` for a 10 ms command):

    shell     a shell loop making one directory and one result file per run
    shellsh   the same loop, the command run as a process of its own (`sh -c CMD`,
              as any launcher must; `true` is a builtin of the loop's shell)
    bare      bare Snakemake, one job per run (`true > out/<i>/result.json`), greedy scheduler
    batch1    perfsnake, `batch: 1` (one run job per run)
    auto      perfsnake's default batching (`batch: auto` with `timeout_s: 1`: 60 runs a job)
    auto1000  `batch: auto` with `timeout_s: 0.05` (1,000 runs a job)

Per way and size: the invocation's (up to the campaign's results.json: runs
and their collection, the analysis after them left out) wall and CPU time (itself and its
children), its peak RSS (GNU time: the largest process), the summed run
time perfsnake recorded (the launcher's interval), the gap between runs in a
job (median, from one run's end to the next one's start in status.json:
what a run costs outside the launcher's interval), and a dry run's time and
peak RSS on a fresh directory. From two sizes: the marginal orchestration
per run (wall time per extra run) and the fixed start-up (what is left at
the smaller size). The builds (the launcher) are made before the clock
starts; perfsnake's runs use a host lock of their own (the machine's would
make them wait for other users' benchmarks). Each round's trees stay until
the benchmark ends: deleting a measured way's files slows the next way's
file creations for minutes on an ext4 without a journal (these VMs).

`--before CHECKOUT` (another checkout of perfsnake, e.g. `git archive HEAD |
tar -x -C /tmp/before`) measures each perfsnake way with that checkout too
(`<way>@before`: its workflow, its perfsnake first on PYTHONPATH), right
before or after this tree's at the same size (the order alternates).

usage: .venv/bin/python bench/batch_overhead.py [--sizes 1000 10000] [--rounds 1] [--ways ...] [--before CHECKOUT]
                                                [--command CMD] [--per-record R] [--dry-only]
Writes bench/results/batch_overhead.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
OUT = ROOT / "bench" / "results" / "batch_overhead.json"
RECORDS = 10
WAYS = ("shell", "shellsh", "bare", "batch1", "auto", "auto1000")
#: the perfsnake ways: their campaign keys
CAMPAIGN_KEYS: dict[str, dict[str, object]] = {
    "batch1": {"batch": 1},
    "auto": {"timeout_s": 1},
    "auto1000": {"timeout_s": 0.05},
}

SHELL_LOOP = """\
n=$1
i=1
while [ "$i" -le "$n" ]; do
  mkdir -p "out/run-$i"
  @COMMAND@ > "out/run-$i/stdout.txt"
  echo '{"status": "ok"}' > "out/run-$i/result.json"
  i=$((i + 1))
done
"""

BARE_SNAKEFILE = """\
rule all:
    input:
        expand("out/{i}/result.json", i=range(int(config["njobs"]))),


rule one:
    output:
        "out/{i}/result.json",
    shell:
        "@COMMAND@ > {output}"
"""


def gnu_time(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> dict[str, float]:
    """Wall and CPU seconds and peak RSS (MB) of a command, by GNU time."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%e %M %U %S", *cmd], cwd=cwd, capture_output=True, text=True,
                          check=False, env={**os.environ, **(env or {})})  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} failed:\n{proc.stderr[-3000:]}")
    elapsed, rss_kb, user, system = proc.stderr.strip().splitlines()[-1].split()
    return {"wall_s": float(elapsed), "cpu_s": float(user) + float(system), "peak_rss_mb": int(rss_kb) / 1024}


def perfsnake_cmd(workdir: Path, camp: Path, *args: str, root: Path = ROOT) -> list[str]:
    return [SNAKEMAKE, *args, "-s", str(root / "workflow/Snakefile"), "--workflow-profile", str(root / "profiles/default"),
            "--configfile", str(root / "config/config.yaml"), "--directory", str(workdir),
            "--config", f"campaign={camp}"]  # fmt: skip


def campaign(workdir: Path, way: str, runs: int, command: str, per_record: int | None) -> Path:
    records = runs // per_record if per_record else RECORDS
    # The record's value in a comment: records differ, the command is the same.
    data = {"name": way, "benchmark": {"type": "command", "command": f"{command} # {{x}}"},
            "variables": {"x": list(range(records))}, "nb_runs": runs // records, **CAMPAIGN_KEYS[way]}  # fmt: skip
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"{way}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def measure(
    base: Path, way: str, runs: int, lock: Path, before: Path | None = None, dry_only: bool = False,
    command: str = "true", per_record: int | None = None,
) -> dict[str, object]:  # fmt: skip
    """One way at one size; with `before`, a perfsnake way with that checkout;
    `dry_only`: the dry run alone (planning a size too large to run here)."""
    root = before or ROOT
    workdir = base / f"{way}-{runs}" if before is None else base / f"{way}-before-{runs}"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    out: dict[str, object] = {"way": way if before is None else f"{way}@before", "runs": runs}
    if way in ("shell", "shellsh"):
        script = workdir / "loop.sh"
        script.write_text(
            SHELL_LOOP.replace("@COMMAND@", command if way == "shell" else f"sh -c {shlex.quote(command)}")
        )
        out.update(gnu_time(["sh", str(script), str(runs)], workdir))
        return out
    if way == "bare":
        snakefile = workdir / "Snakefile"
        snakefile.write_text(BARE_SNAKEFILE.replace("@COMMAND@", command))
        common = ["-s", str(snakefile), "--directory", str(workdir), "--config", f"njobs={runs}"]
        dry = workdir / "dry"
        dry.mkdir()
        # The target first: `--quiet all` would read "all" as a quietness level.
        out["dry"] = gnu_time([SNAKEMAKE, "-n", "all", "--quiet", *common[:1], str(snakefile), "--directory", str(dry),
                               "--config", f"njobs={runs}"], dry)  # fmt: skip
        if dry_only:
            return out
        out.update(gnu_time([SNAKEMAKE, "all", "--cores", "1", "--scheduler", "greedy", "--quiet", *common], workdir))
        return out
    # A lock and a results store of their own: `batch: auto` must not size
    # batches from runs this machine's user recorded.
    env = {"PERFSNAKE_HOST_LOCK": str(lock), "PERFSNAKE_HISTORY": f"sqlite:///{base / 'history.sqlite'}"}
    if before is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(before), *filter(None, [os.environ.get("PYTHONPATH")])])
    camp = campaign(workdir, way, runs, command, per_record)
    dry = workdir / "dry"
    dry.mkdir()
    # The runs and their collection (results.json): the analysis and report
    # jobs after them cost the same however the runs were executed.
    target = f"results/{way}/results.json"
    out["dry"] = gnu_time(perfsnake_cmd(dry, camp, "-n", target, "--quiet", root=root), dry, env)
    if dry_only:
        return out
    # The launcher first: its build is no orchestration of runs.
    gnu_time(perfsnake_cmd(workdir, camp, "--cores", "1", "resources/bin/psrun", root=root), workdir, env)
    out.update(gnu_time(perfsnake_cmd(workdir, camp, "--cores", "1", target, root=root), workdir, env))
    statuses = list((workdir / "results" / way / "runs").rglob("status.json"))
    assert len(statuses) == runs, (way, runs, len(statuses))
    recorded = [json.loads(p.read_text()) for p in statuses]
    out["benchmark_s"] = sum(s["wall_s"] for s in recorded)
    out.update(gaps(recorded))
    out["jobs"] = len(list((workdir / "results" / way / "runs" / "batches").glob("*.json"))) or runs
    return out


def gaps(recorded: list[dict]) -> dict[str, float]:
    """What a run costs inside its job, outside the launcher's interval: from
    one run's end to the next one's start (status.json's epochs), median and
    mean over the runs (gaps of a second or more, between jobs, left out)."""
    ordered = sorted(recorded, key=lambda s: s["start_epoch"])
    found = [b["start_epoch"] - a["end_epoch"] for a, b in zip(ordered, ordered[1:], strict=False)]
    found = sorted(g for g in found if g < 1.0)
    if not found:
        return {}
    return {"gap_median_ms": found[len(found) // 2] * 1000, "gap_mean_ms": sum(found) / len(found) * 1000,
            "interval_median_ms": sorted(s["wall_s"] for s in recorded)[len(recorded) // 2] * 1000}  # fmt: skip


def summarise(rows: list[dict], sizes: list[int]) -> dict[str, dict[str, object]]:
    """Per way: the median of its rounds at each size, the marginal cost per run
    between the smallest and largest size, and the fixed start-up."""
    table: dict[str, dict[str, object]] = {}
    small, large = min(sizes), max(sizes)
    for way in dict.fromkeys(r["way"] for r in rows):
        entry: dict[str, object] = {}
        for size in sizes:
            mine = [r for r in rows if r["way"] == way and r["runs"] == size]
            if not mine:
                continue
            walls = sorted(float(r["wall_s"]) for r in mine)
            pick = min(mine, key=lambda r: abs(float(r["wall_s"]) - walls[len(walls) // 2]))
            entry[str(size)] = pick
        if str(small) in entry and str(large) in entry and large > small:
            a, b = entry[str(small)], entry[str(large)]
            marginal = (float(b["wall_s"]) - float(a["wall_s"])) / (large - small)  # type: ignore[index]
            entry["marginal_ms_per_run"] = marginal * 1000
            entry["marginal_cpu_ms_per_run"] = (float(b["cpu_s"]) - float(a["cpu_s"])) / (large - small) * 1000  # type: ignore[index]
            entry["fixed_s"] = float(a["wall_s"]) - small * marginal  # type: ignore[index]
        table[way] = entry
    return table


def print_table(table: dict[str, dict[str, object]], sizes: list[int]) -> None:
    head = "| way | " + " | ".join(f"{n:,} runs: wall s (jobs, gap) | dry run s / MB | peak MB" for n in sizes)
    print(head + " | marginal ms/run (CPU) | fixed s |")
    print("|---" * (2 + 3 * len(sizes) + 1) + "|")
    for way, entry in table.items():
        cells = []
        for n in sizes:
            r = entry.get(str(n))
            if not isinstance(r, dict):
                cells += ["", "", ""]
                continue
            dry = r.get("dry")
            gap = f", gap {r['gap_median_ms']:.1f} ms" if "gap_median_ms" in r else ""
            cells.append(f"{r['wall_s']:.1f}" + (f" ({r['jobs']:,}{gap})" if "jobs" in r else ""))
            cells.append(f"{dry['wall_s']:.1f} / {dry['peak_rss_mb']:.0f}" if isinstance(dry, dict) else "-")
            cells.append(f"{r['peak_rss_mb']:.0f}")
        marginal = entry.get("marginal_ms_per_run")
        tail = (
            f"{marginal:.2f} ({entry['marginal_cpu_ms_per_run']:.2f}) | {entry['fixed_s']:.1f}"
            if marginal is not None
            else " | "
        )
        print(f"| {way} | " + " | ".join(cells) + f" | {tail} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    parser.add_argument("--output", type=Path, default=OUT)
    parser.add_argument("--before", type=Path, metavar="CHECKOUT", help="another checkout, measured beside this one")
    parser.add_argument("--dry-only", action="store_true", help="only the dry runs (the shell loop has none)")
    parser.add_argument("--command", default="true", help="what each run executes (default: true)")
    parser.add_argument(
        "--per-record", type=int, metavar="R", help="R runs a record, N/R records (default: 10 records)"
    )
    args = parser.parse_args()
    if args.dry_only:
        args.ways = [w for w in args.ways if not w.startswith("shell")]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="batch-overhead-") as tmp:
        for round_number in range(args.rounds):
            # Every tree stays until the end: on an ext4 without a journal (these VMs) an
            # inode freed in the last 60 s (300 s more while its block is dirty) is skipped,
            # one check each, by every file creation after it, so deleting a measured way's
            # tens of thousands of files would slow the next way's runs for minutes.
            base = Path(tmp) / f"round{round_number + 1}"
            base.mkdir()
            lock = base / "host.lock"
            for size in args.sizes:
                # Rotated each round and size: no way always runs first on a cold or warm machine.
                shift = (round_number + args.sizes.index(size)) % len(args.ways)
                for way in args.ways[shift:] + args.ways[:shift]:
                    trees: list[Path | None] = [None]
                    if args.before is not None and way in CAMPAIGN_KEYS:
                        trees = [None, args.before.resolve()]
                        # Which goes first alternates by round and size, so that over two
                        # rounds each tree follows the other once at every size.
                        if (round_number + args.sizes.index(size)) % 2:
                            trees.reverse()
                    for before in trees:
                        started = time.monotonic()
                        row = measure(base, way, size, lock, before, args.dry_only, args.command, args.per_record)
                        row["command"], row["per_record"] = args.command, args.per_record
                        if args.dry_only:
                            row["wall_s"] = row["dry"]["wall_s"]  # type: ignore[index]
                        row["round"] = round_number + 1
                        row["load1"] = os.getloadavg()[0]
                        rows.append(row)
                        # Written as it goes: an interrupted benchmark keeps what it measured.
                        args.output.parent.mkdir(parents=True, exist_ok=True)
                        args.output.write_text(
                            json.dumps({"command": " ".join(sys.argv), "rows": rows}, indent=1) + "\n"
                        )
                        print(f"round {round_number + 1} {size:>6} {row['way']:>15}: {row['wall_s']:.1f} s "
                              f"(measured in {time.monotonic() - started:.0f} s)", flush=True)  # fmt: skip
    if args.dry_only:
        for row in rows:
            print(f"{row['runs']:>7} {row['way']:>10}: dry run {row['dry']['wall_s']:.1f} s, "
                  f"peak {row['dry']['peak_rss_mb']:.0f} MB (load {row['load1']:.1f})")  # fmt: skip
        return
    table = summarise(rows, args.sizes)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"command": " ".join(sys.argv), "sizes": args.sizes, "rows": rows,
                                       "table": table, "cpus": os.cpu_count()}, indent=1) + "\n")  # fmt: skip
    print_table(table, args.sizes)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
