"""stress-ng (Debian 0.15.06): one stressor, optionally one of its methods.

Variables: `stressor` (any stressor of the installed stress-ng), `method`
(its `--<stressor>-method`; empty for the stressor's default), `instances`
(workers). The run lasts the campaign's `duration_s`, rounded to whole
seconds (at least 1). Metrics are stress-ng's
--metrics-brief figures: bogo operations, and bogo-ops/s over wall-clock
time and over user+system time. The YAML report (--yaml) is kept in the run
directory as `stress-ng.yaml`; the metrics are parsed from the text report.
"""

from __future__ import annotations

import functools
import re
import subprocess
from collections.abc import Mapping

from perfsnake.benchmarks.base import RunContext
from perfsnake.benchmarks.packaged import PackagedTool
from perfsnake.errors import did_you_mean
from perfsnake.escape import value_text

YAML_FILE = "stress-ng.yaml"
# "stress-ng: metrc: [20302] cpu   253   2.03   0.32   0.00   124.69   794.58"
_ROW = re.compile(
    r"^stress-ng: metrc: \[\d+\] (\S+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s*$", re.M
)
_HEADER = re.compile(r"^stress-ng: metrc: \[\d+\] stressor\s+bogo ops", re.M)


@functools.cache
def _words(binary: str, *args: str) -> tuple[str, ...]:
    """The words stress-ng lists for a query (`--stressors`, `--cpu-method which`)."""
    proc = subprocess.run([binary, *args], capture_output=True, text=True, check=False)
    text = proc.stdout + proc.stderr
    if "must be one of:" in text:
        text = text.split("must be one of:", 1)[1]
    elif proc.returncode != 0:
        return ()
    return tuple(text.split())


class StressNgBenchmark(PackagedTool):
    name = "stress_ng"
    executable = "stress-ng"
    package = "stress-ng"
    run_defaults = {"stressor": "cpu", "method": "", "instances": 1}
    kinds = {"instances": "int"}
    metrics = ("bogo_ops", "bogo_ops_per_s", "bogo_ops_per_s_cpu", "real_time_s", "usr_time_s", "sys_time_s")
    declared_units = {"bogo_ops_per_s_cpu": "bogo ops/CPU s"}

    def check_record(self, p: Mapping[str, object]) -> None:
        binary = self.binary()
        stressor = value_text(p["stressor"])
        stressors = _words(binary, "--stressors")
        if stressor not in stressors:
            raise self.fail(
                "variables.stressor",
                f"{stressor!r} is not a stressor of this stress-ng{did_you_mean(stressor, list(stressors))}",
            )
        method = value_text(p["method"])
        if not method:
            return
        methods = _words(binary, f"--{stressor}-method", "which")
        if not methods:
            raise self.fail("variables.method", f"stressor {stressor!r} has no methods (leave method empty)")
        if method not in methods:
            raise self.fail(
                "variables.method", f"{method!r} is not a method of {stressor}{did_you_mean(method, list(methods))}"
            )

    def run_command(self, ctx: RunContext) -> list[str]:
        p = self.params(ctx.params)
        stressor = value_text(p["stressor"])
        argv = ["stress-ng", f"--{stressor}", value_text(p["instances"])]
        if p["method"]:
            argv += [f"--{stressor}-method", value_text(p["method"])]
        # Whole seconds: stress-ng reads "0.5s" as 0, which means no time limit.
        seconds = max(1, round(ctx.duration_s))
        return [*argv, "--timeout", f"{seconds}s", "--metrics-brief", "--yaml", str(ctx.run_dir / YAML_FILE)]

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        """stress-ng writes its report on stderr (stdout when redirected by some wrappers)."""
        text = stderr + "\n" + stdout
        if not _HEADER.search(text):
            raise ValueError("no stress-ng --metrics-brief table in the output")
        stressor = value_text(params.get("stressor", "cpu"))
        for name, ops, real, usr, sys_, per_real, per_cpu in _ROW.findall(text):
            if name == stressor:
                return {
                    "bogo_ops": int(ops), "bogo_ops_per_s": float(per_real), "bogo_ops_per_s_cpu": float(per_cpu),
                    "real_time_s": float(real), "usr_time_s": float(usr), "sys_time_s": float(sys_),
                }  # fmt: skip
        raise ValueError(f"stress-ng's metrics table has no row for stressor {stressor!r}")
