"""The sequential heater: our own C program, pinned to one CPU."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from perfsnake.benchmarks.base import Benchmark, BuildContext, RunContext, search_metric
from perfsnake.escape import value_text
from perfsnake.layout import c_source
from perfsnake.machine.sysinfo import online_cpus

_OPS = re.compile(r"^Operations performed: (\d+)$", re.M)
_DURATION = re.compile(r"^Duration: ([0-9.]+)$", re.M)
_INTERVAL = re.compile(r"^interval (\d+) ([0-9.]+) (\d+)$", re.M)

HEATER_SOURCE = c_source("heater", "heater.c")


class HeaterBenchmark(Benchmark):
    name = "heater"
    build_defaults = {"cflags": "-O2"}
    run_defaults: dict[str, object] = {}
    metrics = ("operations", "ops_per_s", "duration_s")

    def source_files(self) -> list[Path]:
        return [HEATER_SOURCE]

    def generate_values(self, variable: str, generator: str) -> list[object] | None:
        if variable == "cpu" and generator == "all":
            return list(online_cpus())
        return None

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        online = online_cpus()
        for record in records:
            if "cpu" not in record:
                continue
            cpu = record["cpu"]
            if isinstance(cpu, bool) or not isinstance(cpu, int) or cpu not in online:
                choices = ", ".join(map(str, online))
                raise self.fail(
                    "variables.cpu", f"{value_text(cpu)!r} is not an online CPU (online: {choices}, or 'all')"
                )
            interval = record.get("interval_ms", 0)
            if isinstance(interval, bool) or not isinstance(interval, int) or interval < 0:
                raise self.fail("variables.interval_ms", f"{value_text(interval)!r} is not a non-negative integer")

    def build_script(self, ctx: BuildContext) -> str:
        flags = shlex.split(value_text(ctx.params["cflags"]))
        argv = ["cc", *flags, "-Wall", "-Wextra", "-Werror", "-o", str(ctx.build_dir / "heater"), str(HEATER_SOURCE)]
        return shlex.join(argv)

    def run_command(self, ctx: RunContext) -> list[str]:
        assert ctx.build_dir is not None
        argv = [str(ctx.build_dir / "heater"), "--duration", value_text(ctx.duration_s)]
        if "cpu" in ctx.params:
            argv += ["--cpu", value_text(ctx.params["cpu"])]
        if ctx.params.get("interval_ms"):
            argv += ["--interval-ms", value_text(ctx.params["interval_ms"])]
        return argv

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        ops = search_metric(_OPS, stdout)
        duration = search_metric(_DURATION, stdout)
        metrics: dict[str, object] = {"operations": ops, "duration_s": duration}
        if isinstance(ops, int) and isinstance(duration, (int, float)) and duration > 0:
            metrics["ops_per_s"] = ops / duration
        else:
            metrics["ops_per_s"] = None
        return metrics

    def time_series(self, stdout: str) -> tuple[str, list[float]] | None:
        """Operations per second of each interval printed with --interval-ms."""
        samples = self.samples(stdout)
        if len(samples) < 2:
            return None
        rates, previous = [], 0.0
        for _k, t, n in samples:
            rates.append(n / (t - previous) if t > previous else float("nan"))
            previous = t
        return "ops_per_s", rates

    @staticmethod
    def samples(stdout: str) -> list[tuple[int, float, int]]:
        """The per-interval time series printed with --interval-ms."""
        return [(int(k), float(t), int(n)) for k, t, n in _INTERVAL.findall(stdout)]
