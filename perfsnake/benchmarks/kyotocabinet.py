"""Kyoto Cabinet 1.2.79's test tools (Debian kyotocabinet-utils): the
multi-threaded workload of the paper's lock figures.

Variables: `db` (cache: kccachetest's in-memory hash; hash: kchashtest's file
hash; tree: kctreetest's B+ tree), `mode` (order: set, get, then remove
`rnum` records per thread in order; wicked: `rnum` random mixed operations per
thread for each of `iterations`), `nb_threads`, `rnum`, `iterations` (wicked
only). File databases live in the run directory and are deleted after the run.
Metrics: ops/s over the measured phases (all threads), their total time, and
for order the set/get/remove rates. The tools print times with millisecond
resolution, so keep rnum large enough for phases of tens of milliseconds.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from perfsnake.benchmarks.base import RunContext
from perfsnake.benchmarks.packaged import PackagedTool
from perfsnake.escape import value_text

#: db -> (tool, database file name or None for the in-memory cache)
TOOLS = {"cache": ("kccachetest", None), "hash": ("kchashtest", "kc.kch"), "tree": ("kctreetest", "kc.kct")}
MODES = ("order", "wicked")
_PHASE = re.compile(r"^(setting|getting|removing) records:$", re.M)
_TIME = re.compile(r"^time: ([0-9.]+)$", re.M)
_ORDER_METRICS = {"setting": "set_ops_per_s", "getting": "get_ops_per_s", "removing": "remove_ops_per_s"}


class KyotoCabinetBenchmark(PackagedTool):
    name = "kyotocabinet"
    executable = "kchashtest"
    package = "kyotocabinet-utils"
    run_defaults = {"db": "hash", "mode": "order", "nb_threads": 1, "rnum": 100000, "iterations": 1}
    kinds = {"db": tuple(TOOLS), "mode": MODES, "nb_threads": "int", "rnum": "int", "iterations": "int"}
    metrics = ("ops_per_s", "time_s", *_ORDER_METRICS.values())

    def run_command(self, ctx: RunContext) -> str:
        p = self.params(ctx.params)
        tool, file = TOOLS[str(p["db"])]
        argv = [tool, str(p["mode"]), "-th", value_text(p["nb_threads"])]
        if p["mode"] == "wicked":
            argv += ["-it", value_text(p["iterations"])]
        if file is None:
            return shlex.join([*argv, value_text(p["rnum"])])
        path = str(ctx.run_dir / file)
        # The database file is scratch: removed whatever the exit status.
        return f"{shlex.join([*argv, path, value_text(p['rnum'])])}; status=$?; rm -f {shlex.quote(path)}; exit $status"

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        lines = stdout.strip().splitlines()
        if not lines or lines[-1] != "ok":
            raise ValueError("the Kyoto Cabinet test did not end with 'ok'")
        p = self.params(params)
        records = int(p["rnum"]) * int(p["nb_threads"])  # type: ignore[call-overload]
        out: dict[str, object] = {}  # wicked has no per-phase rates: left out, not unparsed
        if p["mode"] == "order":
            phases = list(_PHASE.finditer(stdout))
            if [m.group(1) for m in phases] != list(_ORDER_METRICS):
                raise ValueError("no setting/getting/removing phases in the order test's output")
            total = 0.0
            for match in phases:
                time = _TIME.search(stdout, match.end())
                if time is None:
                    raise ValueError(f"no time after '{match.group(1)} records'")
                seconds = float(time.group(1))
                total += seconds
                out[_ORDER_METRICS[match.group(1)]] = records / seconds if seconds > 0 else None
            operations = 3 * records
        else:
            # One "time:" line per iteration.
            times = [float(t) for t in _TIME.findall(stdout)]
            if len(times) != int(p["iterations"]):  # type: ignore[call-overload]
                raise ValueError(f"{len(times)} times in the wicked test's output for {p['iterations']} iterations")
            total = sum(times)
            operations = records * int(p["iterations"])  # type: ignore[call-overload]
        out["time_s"] = total
        out["ops_per_s"] = operations / total if total > 0 else None
        return out
