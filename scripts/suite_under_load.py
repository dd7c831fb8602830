"""Both test lanes (`make test`, `make long`) side by side under `stress-ng
--cpu N`, as CI would meet a busy machine, with each test file's time
written to a JSON file (bench/results/suite-<date>-<load>.json).

    make loaded                              # this checkout, stress-ng --cpu 2
    .venv/bin/python scripts/suite_under_load.py --clone   # a fresh clone in a private
                                             # directory whose path has a space
    .venv/bin/python scripts/suite_under_load.py --cpu 0   # quiet: the lanes one after the other

The lanes run with PERFSNAKE_NO_SKIP=1, as `.ci/run` runs them. Exit status:
0 when both lanes passed."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LANES = ("test", "long")


def clone(source: Path) -> Path:
    """A fresh clone of `source` in a 0700 directory, under a path with a space."""
    base = Path(tempfile.mkdtemp(prefix="perfsnake-suite-"))  # 0700, as mktemp -d makes it
    dest = base / "a clone" / "perfsnake"
    dest.parent.mkdir()
    subprocess.run(["git", "clone", "--quiet", str(source), str(dest)], check=True)
    return dest


def per_file(junit: Path) -> dict[str, dict[str, float]]:
    """test file -> its tests' summed time and outcome counts, from pytest's JUnit XML."""
    files: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    if not junit.exists():
        return {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        # classname: tests.test_x (or tests.test_x.TestClass): the module's file
        parts = (case.get("classname") or "").split(".")
        name = (
            "/".join(parts[: next((i + 1 for i, p in enumerate(parts) if p.startswith("test_")), len(parts))]) + ".py"
        )
        entry = files[name]
        entry["seconds"] += float(case.get("time") or 0)
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        entry[outcome] += 1
    return {name: {k: round(v, 1) for k, v in entry.items()} for name, entry in sorted(files.items())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu", type=int, default=2, help="stress-ng --cpu workers (0: no load, lanes in sequence)")
    parser.add_argument("--clone", action="store_true", help="run in a fresh clone in a private directory")
    parser.add_argument("--output", type=Path, help="the JSON file (default bench/results/suite-<date>-<load>.json)")
    args = parser.parse_args()

    checkout = clone(ROOT) if args.clone else ROOT
    load = f"stress-ng-cpu{args.cpu}" if args.cpu else "quiet"
    output = args.output or ROOT / "bench" / "results" / f"suite-{dt.date.today()}-{load}.json"
    scratch = Path(tempfile.mkdtemp(prefix="perfsnake-suite-out-"))
    env = {**os.environ, "PERFSNAKE_NO_SKIP": "1"}
    if args.clone or not (checkout / ".venv").exists():
        subprocess.run(["make", "setup"], cwd=checkout, check=True)  # outside the timed lanes

    stress = None
    if args.cpu:
        if not shutil.which("stress-ng"):
            print("suite_under_load: stress-ng is not installed (scripts/setup/apt.sh installs it)", file=sys.stderr)
            return 2
        stress = subprocess.Popen(["stress-ng", "--cpu", str(args.cpu), "--quiet"], stdout=subprocess.DEVNULL)
    started = dt.datetime.now(dt.UTC)
    results: dict[str, dict[str, object]] = {}
    try:
        procs = {}
        for lane in LANES:
            junit = scratch / f"{lane}.xml"
            log = (scratch / f"{lane}.log").open("w")
            lane_env = {**env, "PYTEST_ADDOPTS": f"--junitxml={junit}"}
            begin = time.monotonic()
            proc = subprocess.Popen(["make", lane], cwd=checkout, env=lane_env, stdout=log, stderr=subprocess.STDOUT)
            procs[lane] = (proc, begin, junit, log)
            if not args.cpu:
                proc.wait()  # quiet: one lane at a time, nothing beside it
        ended: dict[str, float] = {}
        while len(ended) < len(procs):  # each lane's own wall time, whichever ends first
            for lane, (proc, begin, _junit, _log) in procs.items():
                if lane not in ended and proc.poll() is not None:
                    ended[lane] = time.monotonic() - begin
            time.sleep(1)
        for lane, (proc, _begin, junit, log) in procs.items():
            status = proc.wait()
            log.close()
            tail = (scratch / f"{lane}.log").read_text(errors="replace").splitlines()[-3:]
            results[lane] = {
                "status": status,
                "wall_s": round(ended[lane], 1),
                "last_lines": tail,
                "files": per_file(junit),
            }
            print(f"make {lane}: exit {status} in {results[lane]['wall_s']} s ({tail[-1] if tail else ''})")
    finally:
        if stress:
            stress.terminate()
            stress.wait()
    report = {
        "version": 1,
        "started": started.isoformat(timespec="seconds"),
        "checkout": str(checkout),
        "load": load,
        "loadavg_after": Path("/proc/loadavg").read_text().split()[:3],
        "cpus": os.cpu_count(),
        "lanes": results,
        "logs": str(scratch),
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1) + "\n")
    print(f"per-file times: {output}; logs: {scratch}")
    return 0 if all(r["status"] == 0 for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
