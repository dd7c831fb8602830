"""The generic benchmark: shell templates for build and run, regex metrics."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path

from perfsnake.benchmarks.base import Benchmark, BuildContext, RunContext, search_metric
from perfsnake.errors import did_you_mean
from perfsnake.file_metrics import metrics_from
from perfsnake.shell_template import placeholders, render

RUN_BUILTINS = {"build_dir", "run_dir", "duration_s", "src_dir", "free_port"}
BUILD_BUILTINS = {"build_dir", "src_dir"}


class CommandBenchmark(Benchmark):
    name = "command"

    def __init__(self, spec: Mapping[str, object], origin: str) -> None:
        super().__init__(spec, origin)
        self.command: str = str(spec["command"])
        self.build: str | None = spec.get("build")  # type: ignore[assignment]
        self.declared_build_vars: list[str] = [str(v) for v in spec.get("build_variables") or []]  # type: ignore[attr-defined]
        self.metric_patterns: dict[str, re.Pattern[str]] = {}
        for name, regex in dict(spec.get("metrics", {})).items():  # type: ignore[call-overload]
            try:
                pattern = re.compile(regex, re.M)
            except re.error as exc:
                raise self.fail(f"benchmark.metrics.{name}", f"invalid regex: {exc}") from None
            if pattern.groups != 1:
                raise self.fail(f"benchmark.metrics.{name}", f"regex must have exactly one group, has {pattern.groups}")
            self.metric_patterns[name] = pattern
        self.file_specs: list[Mapping[str, object]] = list(spec.get("metrics_from") or [])  # type: ignore[call-overload]
        from_files = [name for f in self.file_specs for name in f["fields"] if name not in self.metric_patterns]
        self.metrics = (*self.metric_patterns, *from_files)
        if spec.get("series"):
            self.metrics = (*self.metrics, f"{dict(spec['series'])['name']}_steady")  # type: ignore[call-overload]
        elif spec.get("readings"):
            self.metrics = (*self.metrics, "work_per_s_steady")
        self.readings_pattern: re.Pattern[str] | None = None
        if spec.get("readings"):
            try:
                self.readings_pattern = re.compile(str(spec["readings"]), re.M)
            except re.error as exc:
                raise self.fail("benchmark.readings", f"invalid regex: {exc}") from None
            if self.readings_pattern.groups != 2:
                raise self.fail("benchmark.readings", "regex must have two groups: work, then seconds")
        self.series_name: str | None = None
        self.series_pattern: re.Pattern[str] | None = None
        if spec.get("series"):
            series = dict(spec["series"])  # type: ignore[call-overload]
            try:
                self.series_pattern = re.compile(str(series["regex"]), re.M)
            except re.error as exc:
                raise self.fail("benchmark.series.regex", f"invalid regex: {exc}") from None
            if self.series_pattern.groups != 1:
                raise self.fail(
                    "benchmark.series.regex", f"regex must have exactly one group, has {self.series_pattern.groups}"
                )
            self.series_name = str(series["name"])
        self.build_defaults = {}

    def build_spec(self) -> dict[str, object]:
        keep = ("type", "build", "build_variables", "source")
        return {"command": "true", **{k: self.spec[k] for k in keep if k in self.spec}}

    @property
    def key(self) -> str:
        blob = json.dumps({"build": self.build, "source": self.source}, sort_keys=True)
        return "command-" + hashlib.sha256(blob.encode()).hexdigest()[:12]

    def build_variables(self, variables: list[str]) -> list[str]:
        return [v for v in variables if v in self.declared_build_vars]

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        for var in self.declared_build_vars:
            if var not in variables:
                raise self.fail(
                    "benchmark.build_variables",
                    f"{var!r} is not a campaign variable (variables: {', '.join(variables) or 'none'})",
                )
        allowed_run = set(variables) | RUN_BUILTINS
        allowed_build = set(self.declared_build_vars) | BUILD_BUILTINS | set(self.source_variables())
        self._check_template("benchmark.command", self.command, allowed_run)
        if self.build is not None:
            self._check_template("benchmark.build", self.build, allowed_build)
        elif self.declared_build_vars:
            raise self.fail("benchmark.build_variables", "set without a benchmark.build template")
        uses_src = "src_dir" in placeholders(self.command) | (placeholders(self.build) if self.build else set())
        if uses_src and self.source is None:
            raise self.fail("benchmark.source", "the templates use {src_dir} but no source is given")

    def _check_template(self, key: str, template: str, allowed: set[str]) -> None:
        try:
            used = placeholders(template)
        except ValueError as exc:
            raise self.fail(key, str(exc)) from None
        unknown = sorted(used - allowed)
        if unknown:
            hint = did_you_mean(unknown[0], sorted(allowed))
            raise self.fail(key, f"unknown placeholder {{{unknown[0]}}}{hint} (known: {', '.join(sorted(allowed))})")

    def needs_build(self) -> bool:
        return self.build is not None or self.source is not None

    def build_script(self, ctx: BuildContext) -> str:
        if self.build is None:
            return "true"
        values = {**ctx.params, "build_dir": ctx.build_dir, "src_dir": ctx.src_dir or ""}
        return render(self.build, values)

    def run_command(self, ctx: RunContext) -> str:
        values = {
            **ctx.params,
            "build_dir": ctx.build_dir or "",
            "run_dir": ctx.run_dir,
            "duration_s": ctx.duration_s,
            "src_dir": ctx.src_dir or "",
        }
        return render(self.command, values)

    def readings(self, stdout: str) -> tuple[str, list[tuple[float, float]]] | None:
        if self.readings_pattern is None:
            return None
        pairs = [(float(w), float(t)) for w, t in self.readings_pattern.findall(stdout)]
        return ("work_per_s", pairs) if len(pairs) >= 3 else None

    def time_series(self, stdout: str) -> tuple[str, list[float]] | None:
        """The run's time series: the `series` regex's matches in order, or else
        the throughput of each of its `readings` (work / seconds). Its steady
        phase is found like the heater's (`<name>_steady`)."""
        if self.series_pattern is not None:
            values = [float(v) for v in self.series_pattern.findall(stdout) if _is_number(v)]
            return (str(self.series_name), values) if len(values) >= 2 else None
        if self.readings_pattern is not None:
            pairs = [(float(w), float(t)) for w, t in self.readings_pattern.findall(stdout)]
            rates = [w / t for w, t in pairs if t > 0]
            return ("work_per_s", rates) if len(rates) >= 2 else None
        return None

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        return {name: search_metric(p, stdout, stderr) for name, p in self.metric_patterns.items()}

    def file_metrics(self, run_dir: Path) -> tuple[dict[str, object], list[str]]:
        return metrics_from(run_dir, self.file_specs)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
