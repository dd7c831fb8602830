"""Benchmark (not a test): does anything escape a run, do runs ever overlap?

Three experiments with the real workflow, in scratch directories:

  kills        a campaign whose runs start a detached grandchild and a
               self-detaching daemon hook; Snakemake (or its process group,
               alternately) is killed with SIGKILL at a random moment (0 to
               4 s after its first run began), N times, each attempt resuming the previous one (--unlock,
               --rerun-incomplete); counted 1 s after each kill: processes
               of the campaign still alive (working directory inside it).
               Then the campaign is finished and its runs checked for
               overlapping intervals.
  concurrent   2 and 3 invocations started together in one directory, one
               campaign each; overlapping pairs among all their runs.
  leftovers    30 runs that each leave a setsid grandchild and a detached
               daemon; processes of the campaign alive once it finished.

Processes found alive are killed after being counted, so one experiment
never pollutes the next. --root runs another checkout's workflow (e.g. the
code before containment) with this script's Snakemake.

Results: bench/results/containment.json (or --out).

usage: .venv/bin/python bench/containment.py [--kills 10] [--root DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent.parent
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
DAEMON = "setsid sh -c 'exec sleep 1000' & exec sleep 1000"
BENCH = "setsid sleep 300 & sleep {t}; echo value={x}"


def campaign(name: str, runs: int, sleep: float, daemon: bool = True) -> dict:
    data = {
        "name": name,
        "benchmark": {
            "type": "command",
            "command": BENCH.replace("{t}", str(sleep)),
            "metrics": {"value": r"value=(\S+)"},
        },
        "variables": {"x": list(range(runs))},
        "nb_runs": 1,
    }
    if daemon:
        data["pre_run_hooks"] = [{"type": "daemon", "name": "srv", "command": DAEMON, "startup_s": 0.05}]
    return data


def write(workdir: Path, data: dict) -> Path:
    path = workdir / "campaigns" / f"{data['name']}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def argv(root: Path, camp: Path, *args: str) -> list[str]:
    return [SNAKEMAKE, "-s", str(root / "workflow/Snakefile"), "--workflow-profile", str(root / "profiles/default"),
            "--configfile", str(root / "config/config.yaml"), *args, "--config", f"campaign={camp}"]  # fmt: skip


def run(root: Path, workdir: Path, camp: Path, *args: str) -> None:
    subprocess.run(
        argv(root, camp, *args), cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )


def inside(workdir: Path) -> list[int]:
    """Live processes whose working directory is in the campaign's results."""
    results = str((workdir / "results").resolve())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and cwd.startswith(results):
            found.append(int(entry.name))
    return found


def clean(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def spans(workdir: Path, names: list[str]) -> list[tuple[float, float]]:
    out = []
    for name in names:
        for status in (workdir / "results" / name / "runs").rglob("status.json"):
            if "previous" not in status.parts and "daemon-srv" not in status.parts:
                s = json.loads(status.read_text())
                out.append((s["start_epoch"], s["end_epoch"]))
    return out


def overlapping_pairs(intervals: list[tuple[float, float]]) -> int:
    return sum(1 for (s0, e0), (s1, e1) in itertools.combinations(intervals, 2) if s0 < e1 and s1 < e0)


def kills(root: Path, n: int, rng: random.Random) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="containment-kills-"))
    camp = write(workdir, campaign("k", runs=n + 4, sleep=1.5))
    left_per_kill: list[int] = []
    alive_at_kill: list[int] = []
    for i in range(n):
        run(root, workdir, camp, "--unlock", "all")
        proc = subprocess.Popen(argv(root, camp, "--cores", "1", "all", "--rerun-incomplete"), cwd=workdir,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        # A random moment once the runs have begun: in a hook, a run, between two.
        deadline = time.monotonic() + 120
        while not inside(workdir) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 4.0))
        alive_at_kill.append(len(inside(workdir)))
        if i % 2:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        time.sleep(1.0)  # the promise: nothing alive 1 s after the kill
        left = inside(workdir)
        left_per_kill.append(len(left))
        clean(left)
        # Also the launchers' sentinels, still in the killed group (not in results/).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    run(root, workdir, camp, "--unlock", "all")
    run(root, workdir, camp, "--cores", "1", "all", "--rerun-incomplete")
    intervals = spans(workdir, ["k"])
    left = inside(workdir)
    clean(left)
    return {"kills": n, "processes_of_the_run_alive_at_each_kill": alive_at_kill, "processes_left_1s_after_each_kill": left_per_kill, "total_left": sum(left_per_kill),
            "runs_recorded": len(intervals), "overlapping_pairs": overlapping_pairs(intervals), "workdir": str(workdir)}  # fmt: skip


def concurrent(root: Path, k: int) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix=f"containment-concurrent{k}-"))
    camps = [write(workdir, campaign(f"c{i}", runs=4, sleep=0.3, daemon=False)) for i in range(k)]
    run(root, workdir, camps[0], "--cores", "1", "resources/bin/psrun")  # shared input, built once
    procs = [subprocess.Popen(argv(root, c, "--cores", "2", "all"), cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for c in camps]  # fmt: skip
    waited = sum("[perfsnake] waiting for" in p.communicate()[1] for p in procs)
    intervals = spans(workdir, [f"c{i}" for i in range(k)])
    clean(inside(workdir))
    return {"invocations": k, "runs": len(intervals), "pairs": len(intervals) * (len(intervals) - 1) // 2,
            "overlapping_pairs": overlapping_pairs(intervals), "invocations_that_waited": waited}  # fmt: skip


def leftovers(root: Path, runs: int) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="containment-leftovers-"))
    camp = write(workdir, campaign("l", runs=runs, sleep=0.1))
    run(root, workdir, camp, "--cores", "1", "all")
    left = inside(workdir)
    clean(left)
    return {"runs": len(spans(workdir, ["l"])), "processes_left": len(left), "started_to_escape": 2 * runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--root", type=Path, default=HERE)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--out", type=Path, default=HERE / "bench" / "results" / "containment.json")
    args = parser.parse_args()
    os.environ.setdefault("PERFSNAKE_HOST_LOCK", str(Path(tempfile.mkdtemp(prefix="containment-lock-")) / "bench.lock"))
    rng = random.Random(args.seed)
    result = {
        "root": str(args.root),
        "kills": kills(args.root, args.kills, rng),
        "concurrent": [concurrent(args.root, 2), concurrent(args.root, 3)],
        "leftovers": leftovers(args.root, 30),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
