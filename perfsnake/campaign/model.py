"""A checked campaign and its records: what the planning and the stages read."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from perfsnake.benchmarks.base import Benchmark
from perfsnake.benchmarks.imported import ImportedBenchmark
from perfsnake.contract import FLEET_VARIABLE
from perfsnake.instruments import Instruments
from perfsnake.platforms import Local, Platform


def metrics_of(benchmark: Benchmark, instruments: Instruments, derived: Iterable[str] = ()) -> list[str]:
    """A campaign's metrics in the CSV's column order: the benchmark's, the
    instruments', then the derived ones (wall_s, which every run has, is none
    of them). The loader needs them before the Campaign exists."""
    return [*benchmark.metrics, *instruments.declared_metrics(), *derived]


@dataclass(frozen=True)
class Record:
    """One assignment of values to every variable."""

    values: dict[str, object]
    path: str  # relative directory under runs/, escaped
    build_key: str  # flat directory name of the build it needs


@dataclass
class Campaign:
    name: str
    file: Path
    origin: str
    sha256: str
    data: dict
    benchmark: Benchmark
    variables: list[str]
    build_vars: list[str]
    records: list[Record]
    nb_runs: int
    duration_s: float
    timeout_s: float | None
    pretty: dict[str, dict[str, str]]
    plots: list[dict]
    instruments: Instruments
    #: record pairs drawn as differential flame graphs (`flamegraph_pairs`)
    flamegraph_pairs: list[tuple[str, str]] = field(default_factory=list)
    #: for the derived campaign of profiled runs (`profile_differences`): the campaign it explains
    why_of: str | None = None
    #: for the derived campaign of layout builds (`noise_floor`): the campaign whose floor it measures
    floor_of: str | None = None
    #: earlier result directories or artifact zips compared with this campaign's results
    compare_with: list[str] = field(default_factory=list)
    precision: dict | None = None
    #: bisection over a commit range (perfsnake.bisect): metric, threshold, variable
    bisect: dict | None = None
    #: for a derived control campaign: (the campaign it controls, which variant it is)
    control_of: tuple[str, str] | None = None
    by_path: dict[str, Record] = field(default_factory=dict)
    platform: Platform = field(default_factory=Local)
    #: a fleet (`hosts:`): host name -> its platform; a record's `host` picks it
    fleet: dict[str, Platform] = field(default_factory=dict)
    #: derived metric -> its parsed expression, in declaration order
    derived: dict[str, ast.Expression] = field(default_factory=dict)
    #: reference gates, checked and normalised (perfsnake.gates)
    references: list[dict[str, object]] = field(default_factory=list)
    #: records this machine cannot run (an instrument's `unavailable`), as "var=value, ..." -> why
    skipped: dict[str, str] = field(default_factory=dict)
    #: what `--config only=...` chose (perfsnake.campaign.selection), else None
    selection: dict[str, object] | None = None

    @property
    def root(self) -> str:
        """The campaign this one derives from (controls, profiled pairs, noise floor), or its own name."""
        if self.control_of:
            return self.control_of[0]
        return self.why_of or self.floor_of or self.name

    @property
    def imported(self) -> bool:
        """Results another tool measured: nothing to build or run (perfsnake.importers)."""
        return isinstance(self.benchmark, ImportedBenchmark)

    @property
    def version_variables(self) -> list[str]:
        """Variables whose values are a commit range (oldest first): the regression view's x."""
        return [v for v, spec in self.data["variables"].items() if isinstance(spec, dict)]

    def regression_metrics(self) -> list[str]:
        """The metrics the regression view draws: the gated ones, else the plotted ones, else the benchmark's."""
        gated = [str(r["metric"]) for r in self.references]
        plotted = [str(m) for p in self.plots for m in (p["y"] if isinstance(p["y"], list) else [p["y"]])]
        return list(dict.fromkeys(gated or plotted or list(self.benchmark.metrics)))

    def build_params(self, record: Record) -> dict[str, object]:
        params = dict(self.benchmark.build_defaults)
        params.update({v: record.values[v] for v in self.build_vars})
        return params

    def platform_of(self, record: Record) -> Platform:
        """Where the record's builds and runs execute (its host's, in a fleet)."""
        return self.fleet[str(record.values[FLEET_VARIABLE])] if self.fleet else self.platform

    def platform_spec(self, record: Record) -> dict[str, object]:
        """The campaign's `platform:`, or in a fleet the record's host's."""
        if not self.fleet:
            return self.data["platform"]
        where = self.platform_of(record)
        if isinstance(where, Local):  # a Slurm node (not a key a campaign may set)
            return {"type": "local", "node": where.node}
        from perfsnake.platforms.ssh import fleet_spec

        return fleet_spec(self.data["platform"], str(record.values[FLEET_VARIABLE]))

    def run_params(self, record: Record) -> dict[str, object]:
        """Every parameter a run sees: defaults, then the record's values."""
        return {**self.benchmark.build_defaults, **self.benchmark.run_defaults, **record.values}

    def build_keys(self) -> dict[str, dict[str, object]]:
        return {r.build_key: self.build_params(r) for r in self.records}

    def metric_names(self) -> list[str]:
        return metrics_of(self.benchmark, self.instruments, self.derived)

    @property
    def max_runs(self) -> int:
        """The most repetitions a record can get (nb_runs, or precision's max_runs)."""
        if self.bisect:  # the ends are measured at every step
            from perfsnake.bisect import max_steps

            return self.nb_runs * max_steps(len(self.records))
        return int(self.precision["max_runs"]) if self.precision else self.nb_runs

    def fingerprint(self) -> str:
        """What a run executes beyond its record: benchmark and instruments."""
        return f"{self.benchmark.run_fingerprint()}-{self.instruments.fingerprint()}"
