"""Benchmark (not a test): LevelDB on the host versus in a container.

The benchkit paper's overhead study, reproduced: the same LevelDB
readrandom runs (same build, same database) four ways, interleaved round by
round with the order rotating, so drift on this shared machine hits every
arm alike:

  host-workflow       a campaign with the local platform
  container-workflow  the same campaign with `platform: {type: container}`
  host-shell          db_bench from a hand-written shell loop
  container-shell     `podman run ... db_bench` from the same shell loop

Reported (bench/results/container_overhead.json): per-arm medians, and the
paired per-round ratios container/host (workflow and shell) and
workflow/shell (host and container) with 95 % CIs and Welch p-values.

usage: .venv/bin/python bench/container_overhead.py [--rounds N] [--quick]
Needs the image: scripts/setup/container.sh
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead import OUT, READS, ROOT, leveldb_ops, paired_summary, snakemake, write  # noqa: E402

sys.path.insert(0, str(ROOT))
from perfsnake.machine.metadata import host_metadata  # noqa: E402

IMAGE = "localhost/perfsnake-bookworm:latest"
BUILD = "resources/builds/leveldb/default"
ARMS = ("host-workflow", "container-workflow", "host-shell", "container-shell")


def db_bench_argv(work: Path) -> list[str]:
    build = work / BUILD
    return [str(build / "cmake/db_bench"), "--benchmarks=readrandom", "--threads=1", "--use_existing_db=1",
            f"--db={build / 'db'}", "--num=100000", f"--reads={READS}"]  # fmt: skip


def container_argv(work: Path, image: str) -> list[str]:
    resources = work / "resources"
    return ["podman", "run", "--rm", "--network=none", "-v", f"{resources}:{resources}:rw", image, *db_bench_argv(work)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="3 rounds, for a smoke run")
    parser.add_argument("--image", default=IMAGE)
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="perfsnake-container-"))
    if (ROOT / "resources" / "src").exists():  # share the fetched LevelDB source
        (work / "resources").mkdir()
        shutil.copytree(ROOT / "resources" / "src", work / "resources" / "src", symlinks=True)
    variables = {"bench_name": ["readrandom"], "nb_threads": [1], "reads": [READS]}
    base = {"benchmark": "leveldb", "variables": variables, "nb_runs": rounds, "timeout_s": 300}
    campaigns = {
        "host-workflow": write(work, {"name": "host", **base}),
        "container-workflow": write(
            work, {"name": "ctr", **base, "platform": {"type": "container", "image": args.image}}
        ),
    }
    for camp in campaigns.values():  # build (shared) and launchers, outside the measurement
        snakemake(work, camp, "--cores", "2", BUILD, "resources/bin/psrun", "resources/bin/psrun-static")
    record = f"bench_name-readrandom/nb_threads-1/reads-{READS}"
    loop = ["sh", str(ROOT / "bench" / "shell_loop.sh"), "1"]
    values: dict[str, list[float]] = {arm: [] for arm in ARMS}
    for r in range(1, rounds + 1):
        order = ARMS[r % 4 :] + ARMS[: r % 4]  # rotate who goes first
        for arm in order:
            if arm.endswith("workflow"):
                name = "host" if arm.startswith("host") else "ctr"
                target = f"results/{name}/runs/{record}/run-{r}/status.json"
                snakemake(work, campaigns[arm], "--cores", "1", target)
                out = (work / target).with_name("stdout.txt").read_text()
            else:
                argv = db_bench_argv(work) if arm == "host-shell" else container_argv(work, args.image)
                out = subprocess.run([*loop, *argv], capture_output=True, text=True, check=True).stdout
            values[arm].append(leveldb_ops(out))
        print(f"round {r}: " + ", ".join(f"{a}={values[a][-1]:.0f}" for a in ARMS), flush=True)
    report = {
        "host": host_metadata(),
        "command": " ".join(sys.argv),
        "image": args.image,
        "metric": "readrandom ops/s (1e6 / micros_per_op), 1 thread",
        "values": values,
        "container_vs_host_workflow": paired_summary(values["container-workflow"], values["host-workflow"]),
        "container_vs_host_shell": paired_summary(values["container-shell"], values["host-shell"]),
        "workflow_vs_shell_host": paired_summary(values["host-workflow"], values["host-shell"]),
        "workflow_vs_shell_container": paired_summary(values["container-workflow"], values["container-shell"]),
    }
    (OUT / "container_overhead.json").write_text(json.dumps(report, indent=2) + "\n")
    print("\n== ratios, paired by round (first / second) ==")
    for key in (
        "container_vs_host_workflow",
        "container_vs_host_shell",
        "workflow_vs_shell_host",
        "workflow_vs_shell_container",
    ):
        s = report[key]
        lo, hi = s["paired_ratio_ci95"]
        print(f"{key:28s} ratio={s['paired_ratio_mean']:.4f} CI95=[{lo:.4f}, {hi:.4f}] Welch p={s['welch_p']:.3f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
