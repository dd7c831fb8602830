"""Benchmark (not a test): what recording into the results store costs.

1. Per invocation: the history rule's whole job as Snakemake runs it (a
   fresh Python reading a campaign's aggregated JSON and recording it),
   for a campaign of 100 runs, into SQLite.
2. Per 10,000 runs: Store.record of one invocation of 10,000 runs, and of
   100 invocations of 100 runs each (a store that grows), into SQLite.
3. Reading: `history show`'s frame of a campaign with 10,000 stored runs.

usage: .venv/bin/python bench/history_cost.py
Writes bench/results/history_cost.json and prints a table.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfsnake.history.store import Store, run_key  # noqa: E402


def rows(campaign: str, n: int, offset: int = 0) -> list[dict]:
    out = []
    for i in range(offset, offset + n):
        record = json.dumps({"size": i % 10})
        start = f"2026-01-01T00:00:00.{i:06d}Z"
        out.append({"run_key": run_key(campaign, "bench", record, i, start), "campaign": campaign, "hostname": "bench",
                    "record": record, "run": i, "status": "ok", "start": start, "end": start, "wall_s": 0.01,
                    "metrics": json.dumps({"ops": 100.0 + i % 7, "wall_s": 0.01}), "versions": "{}"})  # fmt: skip
    return out


def invocation(campaign: str) -> dict:
    return {"campaign": campaign, "hostname": "bench", "recorded_at": "now", "source": "import", "machine": "{}"}


def timed(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def campaign_dir(tmp: Path, n: int) -> Path:
    """A campaign directory as aggregation leaves it: campaign.json and <name>.json."""
    d = tmp / "results" / "c100"
    d.mkdir(parents=True)
    (d / "campaign.json").write_text(
        json.dumps({"name": "c100", "variables": ["size"], "metrics": ["ops"], "versions": []})
    )
    data = {"metadata": {"hostname": "bench"}, "columns": [],
            "rows": [{"size": i % 10, "run": i, "status": "ok", "start": f"2026-01-01T00:00:{i % 60:02d}.{i:06d}Z",
                      "end": None, "wall_s": 0.01, "ops": 100 + i % 7} for i in range(n)]}  # fmt: skip
    (d / "c100.json").write_text(json.dumps(data))
    return d


def main() -> None:
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        # 1. the rule's job: interpreter, imports, read, record (a fresh store each time: first recording)
        d = campaign_dir(tmp, 100)
        code = ("import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
                "from perfsnake.history.record import record; "
                "record(Path(sys.argv[2]), sys.argv[3], False, Path(sys.argv[4]))")  # fmt: skip
        times = []
        for i in range(5):
            url = f"sqlite:///{tmp / f'job{i}.sqlite'}"
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code, str(ROOT), str(d), url, str(tmp / "out.json")], check=True,
                           capture_output=True)  # fmt: skip
            times.append(time.perf_counter() - t0)
        out["rule_job_100_runs_s"] = statistics.median(times)
        # 2. recording alone
        store = Store.open(f"sqlite:///{tmp / 'big.sqlite'}")
        big = rows("big", 10_000)
        t0 = time.perf_counter()
        store.record(invocation("big"), big)
        out["record_10000_runs_one_invocation_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        store.record(invocation("big"), big)
        out["record_10000_runs_again_nothing_new_s"] = time.perf_counter() - t0
        grow = Store.open(f"sqlite:///{tmp / 'grow.sqlite'}")
        t0 = time.perf_counter()
        for k in range(100):
            grow.record(invocation("grow"), rows("grow", 100, offset=k * 100))
        out["record_100_invocations_of_100_runs_s"] = time.perf_counter() - t0
        out["per_invocation_of_100_runs_ms"] = 1000 * out["record_100_invocations_of_100_runs_s"] / 100
        # 3. reading
        out["frame_of_10000_runs_s"] = timed(lambda: store.frame("big"), repeat=3)
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "history_cost.json").write_text(json.dumps(out, indent=1) + "\n")
    for k, v in out.items():
        print(f"{k:<45} {v:10.3f}")


if __name__ == "__main__":
    main()
