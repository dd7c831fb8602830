"""What every benchmark provides: fetch, build, run and collect.

A benchmark never runs anything itself here: it describes the shell text of
its build and of one run, and parses a run's output. The Snakemake rules and
the C launcher do the executing, so the measured path holds no Python.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from perfsnake.errors import CampaignError
from perfsnake.escape import escape_component, value_text
from perfsnake.shell_template import placeholders, substitute

#: a build's parallelism (make -j, cmake -j): the build rule's threads here;
#: on an ssh host, where the build job takes one core of this machine
#: (planning.Builds.threads), the same number of the host's (stages.build)
BUILD_THREADS = 2


@dataclass(frozen=True)
class BuildContext:
    params: Mapping[str, object]  # build variables (with defaults filled in)
    build_dir: Path  # absolute; the build's own directory
    src_dir: Path | None  # absolute; the fetched sources, if any
    threads: int


@dataclass(frozen=True)
class RunContext:
    params: Mapping[str, object]  # the whole record (build + run variables)
    build_dir: Path | None
    run_dir: Path
    duration_s: float
    src_dir: Path | None = None
    server: str | None = None  # the directory of the campaign's running server, if it has one


#: Benchmark keys read only when a run's output is parsed (collect).
COLLECT_ONLY = frozenset({"metrics", "readings", "units", "derived", "metrics_from", "series", "description"})


#: metric-name suffix -> unit, longest first (the catalog names metrics this way)
_SUFFIX_UNITS = (
    ("_mb_per_s", "MB/s"), ("mb_per_s", "MB/s"), ("_mb_s", "MB/s"), ("_mib_per_s", "MiB/s"), ("mib_per_s", "MiB/s"),
    ("_kib_s", "KiB/s"), ("micros_per_op", "us/op"), ("_ns", "ns"), ("_us", "us"), ("_ms", "ms"), ("_s", "s"),
    ("_pct", "%"), ("_mhz", "MHz"), ("_kb", "KB"), ("_bytes", "B"),
)  # fmt: skip


def metric_unit(name: str) -> str | None:
    """The unit a metric's name spells: `latency_ns` -> ns, `bw_kib_s` ->
    KiB/s, `events_per_s` -> events/s, `iops` -> IO/s; None when it says none."""
    for suffix, unit in _SUFFIX_UNITS:
        if name.endswith(suffix):
            if suffix == "_s" and "_per_" in name:
                what = name[: -len("_per_s")].split("_per_")[0] if name.endswith("_per_s") else ""
                return f"{what.replace('_', ' ')}/s" if what else None
            return unit
    if name.endswith("_per_s"):
        return f"{name[: -len('_per_s')].replace('_', ' ')}/s"
    if name.endswith("iops"):
        return "IO/s"
    return None


def source_key(source: Mapping[str, str]) -> str:
    """Cache directory name of a fetched source: readable and unique."""
    if "debian" in source:
        version = source.get("version", "default")
        return escape_component(f"debian-{source['debian']}-{version}")
    if "git" in source:
        tail = Path(source["git"].rstrip("/")).name.removesuffix(".git")
        digest = hashlib.sha256(source["git"].encode()).hexdigest()[:8]
        return escape_component(f"git-{tail}-{digest}-{source['rev']}")
    if "archive" in source:
        return f"archive-{source['sha256'][:16]}"
    # The path as written (relative paths are relative to the working
    # directory), so a moved checkout keeps its source keys.
    digest = hashlib.sha256(str(source["path"]).encode()).hexdigest()[:12]
    return escape_component(f"path-{Path(source['path']).name}-{digest}")


class Benchmark:
    """Base class; subclasses set the class attributes and override hooks."""

    #: catalog name
    name: str = ""
    #: build variables this benchmark understands, with their defaults
    build_defaults: dict[str, object] = {}
    #: run variables with defaults (used when a campaign does not sweep them)
    run_defaults: dict[str, object] = {}
    #: metrics it reports (for documentation and plot validation)
    metrics: tuple[str, ...] = ()
    #: default source, when the benchmark fetches one
    default_source: dict[str, str] | None = None
    #: units of metrics whose names do not say them (see metric_unit)
    declared_units: dict[str, str] = {}

    def __init__(self, spec: Mapping[str, object], origin: str) -> None:
        self.spec = dict(spec)
        self.origin = origin
        self.source: dict[str, str] | None = spec.get("source") or self.default_source  # type: ignore[assignment]

    def units(self) -> dict[str, str]:
        """Unit of each metric: declared, else read from its name's suffix."""
        out = {m: u for m in self.metrics if (u := metric_unit(m))}
        out.update({m: u for m, u in self.declared_units.items() if m in self.metrics})
        return out

    # ---- identity -------------------------------------------------------
    @property
    def key(self) -> str:
        """Directory name of this benchmark's builds under resources/builds."""
        return self.name

    def fingerprint(self) -> str:
        """Changes whenever what a build or run does changes."""
        blob = json.dumps({"name": self.name, "spec": self.spec}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def run_fingerprint(self) -> str:
        """What a run executes, without the keys that only parse its output
        (metric regexes, readings, units): editing those re-runs collect and
        the analysis, never a measurement."""
        spec = {k: v for k, v in self.spec.items() if k not in COLLECT_ONLY}
        blob = json.dumps({"name": self.name, "spec": spec}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def build_spec(self) -> dict[str, object]:
        """The part of the spec a build depends on, enough to re-create this
        benchmark in the build job (run-only keys such as metric regexes
        stay out, so editing them never rebuilds)."""
        out: dict[str, object] = {"type": self.spec.get("type", self.name)}
        if "source" in self.spec:
            out["source"] = self.spec["source"]
        return out

    # ---- sources that vary --------------------------------------------------
    def source_variables(self) -> list[str]:
        """Variables the source names (`rev: "{version}"`): each value is its
        own source, fetched once, and so a build variable."""
        names: list[str] = []
        for key, value in (self.source or {}).items():
            if isinstance(value, str):
                try:
                    names += sorted(placeholders(value))
                except ValueError as exc:
                    raise self.fail(f"benchmark.source.{key}", str(exc)) from None
        return list(dict.fromkeys(names))

    def source_for(self, params: Mapping[str, object]) -> dict[str, str] | None:
        """The source of a build with these parameters, its variables filled in;
        a per-value checksum mapping (`sha256: {v1: ..., v2: ...}`) gives its value's."""
        if self.source is None:
            return None
        out: dict[str, str] = {}
        for key, value in self.source.items():
            if isinstance(value, Mapping):
                (var,) = self.source_variables()
                out[key] = str(value.get(value_text(params[var]), ""))
            else:
                out[key] = substitute(str(value), params)
        return out

    # ---- parameter space --------------------------------------------------
    def build_variables(self, variables: list[str]) -> list[str]:
        """The campaign variables that are build-time for this benchmark."""
        return [v for v in variables if v in self.build_defaults]

    def generate_values(self, variable: str, generator: str) -> list[object] | None:
        """Values for a generator string such as `cpu: all`; None if unknown."""
        return None

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        """Reject values the benchmark cannot use (raise CampaignError)."""

    def fail(self, key: str, problem: str) -> CampaignError:
        return CampaignError(self.origin, key, problem)

    def programs(self) -> dict[str, str]:
        """This machine's programs a run starts, found by check(): absolute
        path -> its Debian package. A container's image must have them too (a
        build's are in resources/, which the container mounts)."""
        return {}

    # ---- fetch / build / run / collect -------------------------------------
    def needs_build(self) -> bool:
        return True

    def source_files(self) -> list[Path]:
        """Files of our own that the build compiles (rebuild when they change)."""
        return []

    def build_script(self, ctx: BuildContext) -> str:
        raise NotImplementedError

    def run_command(self, ctx: RunContext) -> list[str] | str:
        """One run: an argv list, or shell text for template benchmarks."""
        raise NotImplementedError

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        raise NotImplementedError

    def file_metrics(self, run_dir: Path) -> tuple[dict[str, object], list[str]]:
        """Metrics read from files the run wrote (metrics, problems)."""
        return {}, []

    def readings(self, stdout: str) -> tuple[str, list[tuple[float, float]]] | None:
        """(metric name, [(work, seconds)]) unit readings, for Pilot's WPS regression."""
        return None

    def time_series(self, stdout: str) -> tuple[str, list[float]] | None:
        """(metric name, unit readings in order) when the run printed a time series."""
        return None


def number(text: str) -> object:
    """A metric value: int or float when it looks like one, else the text."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def search_metric(pattern: re.Pattern[str], *texts: str) -> object | None:
    for text in texts:
        match = pattern.search(text)
        if match:
            return number(match.group(1))
    return None
