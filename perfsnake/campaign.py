"""Loading, validating and expanding campaign files.

A campaign file is checked completely before anything runs: a problem is
reported as one CampaignError line naming the file, the key and the problem.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from perfsnake import expressions, gates, versions
from perfsnake.benchmarks import BUILTINS, make_benchmark
from perfsnake.benchmarks.base import Benchmark
from perfsnake.benchmarks.imported import ImportedBenchmark
from perfsnake.errors import CampaignError, did_you_mean
from perfsnake.escape import key_component, record_path, value_text
from perfsnake.instruments import Instruments
from perfsnake.layout import FLOOR_VARIABLE
from perfsnake.platforms import PLATFORMS as PLATFORM_FACTORIES
from perfsnake.platforms import Local, Platform, make_platform
from perfsnake.schema import fill_defaults, load_schema, schema_defaults, schema_error  # noqa: F401 - re-exported

#: Columns of the aggregated CSV that variables and metrics may not shadow.
RESERVED = ("campaign", "benchmark", "run", "status", "exit_code", "wall_s", "start", "end")


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses duplicate mapping keys instead of keeping the last."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set[object] = set()
    for key_node, _value in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(path: Path, origin: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CampaignError(origin, "", f"cannot read the file: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise CampaignError(origin, "", "the file is not UTF-8 text") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise CampaignError(origin, where, f"invalid YAML: {problem}") from None
    return data


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
    compare: list[tuple[str, str]] = field(default_factory=list)
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
    #: derived metric -> its parsed expression, in declaration order
    derived: dict[str, ast.Expression] = field(default_factory=dict)
    #: reference gates, checked and normalised (perfsnake.gates)
    references: list[dict[str, object]] = field(default_factory=list)

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

    def run_params(self, record: Record) -> dict[str, object]:
        """Every parameter a run sees: defaults, then the record's values."""
        return {**self.benchmark.build_defaults, **self.benchmark.run_defaults, **record.values}

    def build_keys(self) -> dict[str, dict[str, object]]:
        return {r.build_key: self.build_params(r) for r in self.records}

    def metric_names(self) -> list[str]:
        return [*self.benchmark.metrics, *self.instruments.declared_metrics(), *self.derived]

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


#: Longest time a campaign may give anything (timeout_s, duration_s, hook
#: times): 10^7 s, about 115 days. Beyond that a number is a typo.
MAX_SECONDS = 1e7
#: Most repetitions of a record (as precision.max_runs allows).
MAX_RUNS = 100_000


def _is_seconds(key: str) -> bool:
    return key.endswith("_s") or key == "seconds"


def _number_error(data: Any, origin: str, path: str = "") -> CampaignError | None:
    """The first non-finite number anywhere in the campaign, or an absurd
    time or repetition count, as one line naming its key."""
    if isinstance(data, dict):
        for key, value in data.items():
            error = _number_error(value, origin, f"{path}.{key}" if path else str(key))
            if error:
                return error
    elif isinstance(data, list):
        for i, value in enumerate(data):
            error = _number_error(value, origin, f"{path}[{i}]")
            if error:
                return error
    elif isinstance(data, float) and not math.isfinite(data):
        return CampaignError(origin, path, f"{data!r} is not a finite number")
    elif isinstance(data, (int, float)) and not isinstance(data, bool) and "[" not in path.rsplit(".", 1)[-1]:
        key = path.rsplit(".", 1)[-1]
        if _is_seconds(key) and not path.startswith("variables.") and not 0 <= data <= MAX_SECONDS:
            return CampaignError(origin, path, f"{data!r} seconds is out of range (0 to {MAX_SECONDS:.0e})")
        if key in ("nb_runs", "min_runs", "max_runs") and data > MAX_RUNS:
            return CampaignError(origin, path, f"{data!r} repetitions is more than {MAX_RUNS}")
    return None


def _expand_values(raw: dict, benchmark: Benchmark, origin: str) -> dict[str, list]:
    values: dict[str, list] = {}
    for var, spec in raw.items():
        if isinstance(spec, dict):  # a commit range: the commits, oldest first
            spec = versions.commit_range(spec, origin, f"variables.{var}")
        if isinstance(spec, str):
            generated = benchmark.generate_values(var, spec)
            if generated is None:
                raise CampaignError(
                    origin,
                    f"variables.{var}",
                    f"{spec!r} is neither a list of values nor a generator the {benchmark.name} benchmark knows",
                )
            spec = generated
        seen: set[str] = set()
        for value in spec:
            text = value_text(value)
            if text in seen:
                raise CampaignError(origin, f"variables.{var}", f"duplicate value {text!r}")
            seen.add(text)
        values[var] = list(spec)
    return values


def _records(data: dict, values: dict[str, list], origin: str) -> tuple[list[str], list[dict]]:
    order = list(values)
    records: list[dict] = []
    if values:
        records = [dict(zip(order, combo)) for combo in itertools.product(*values.values())]
    for i, explicit in enumerate(data["records"]):
        if not order:
            order = list(explicit)
        if set(explicit) != set(order):
            missing = sorted(set(order) - set(explicit))
            extra = sorted(set(explicit) - set(order))
            what = f"missing {', '.join(missing)}" if missing else f"unknown variable {extra[0]}"
            raise CampaignError(origin, f"records[{i}]", f"{what} (every record sets: {', '.join(order)})")
        records.append({var: explicit[var] for var in order})
    seen: set[tuple] = set()
    for i, rec in enumerate(records):
        sig = tuple(value_text(rec[v]) for v in order)
        if sig in seen:
            where = (
                f"records[{i - (len(records) - len(data['records']))}]"
                if i >= len(records) - len(data["records"])
                else "variables"
            )
            raise CampaignError(origin, where, "duplicate record")
        seen.add(sig)
    for i, pattern in enumerate(data["exclude"]):
        unknown = sorted(set(pattern) - set(order))
        if unknown:
            raise CampaignError(
                origin, f"exclude[{i}].{unknown[0]}", f"not a variable (variables: {', '.join(order) or 'none'})"
            )
        want = {k: value_text(v) for k, v in pattern.items()}
        records = [r for r in records if any(value_text(r[k]) != v for k, v in want.items())]
    if not records and (values or data["records"]):
        raise CampaignError(origin, "exclude", "removes every record")
    if not records:
        records = [{}]
    return order, records


def _check_names(order: list[str], metrics: list[str], origin: str) -> None:
    for var in order:
        if var in RESERVED:
            raise CampaignError(origin, f"variables.{var}", f"reserved column name (reserved: {', '.join(RESERVED)})")
    for metric in metrics:
        if metric in RESERVED or metric in order:
            raise CampaignError(origin, f"benchmark.metrics.{metric}", "clashes with a variable or a reserved column")


def check_plots(
    plots: list[dict], order: list[str], metrics: list[str], origin: str, recs: list[dict] | None = None
) -> list[dict]:
    """Plot entries with their names; every axis names a variable or metric,
    and every variable that varies is mapped (else the plot would silently
    average across it)."""
    columns = set(order) | {"run"}
    numeric = set(metrics) | {"wall_s"}
    varying = [v for v in order if len({value_text(r[v]) for r in recs or []}) > 1]
    named: list[dict] = []
    names: set[str] = set()
    for i, plot in enumerate(plots):
        for axis in ("x", "color", "row", "column", "facet"):
            if axis in plot and plot[axis] not in columns | numeric:
                raise CampaignError(
                    origin,
                    f"plots[{i}].{axis}",
                    f"{plot[axis]!r} is not a variable or metric (variables: {', '.join(sorted(columns))}; metrics: {', '.join(sorted(numeric))})",
                )
        if "facet" in plot and "column" in plot:
            raise CampaignError(origin, f"plots[{i}].facet", "facet is another name for column: set only one")
        ys = plot["y"] if isinstance(plot["y"], list) else [plot["y"]]
        ys = [*ys, *(m for m in plot.get("metrics", []) if m not in ys)]
        for y in ys:
            if y not in numeric:
                key = (
                    f"plots[{i}].y"
                    if y in (plot["y"] if isinstance(plot["y"], list) else [plot["y"]])
                    else f"plots[{i}].metrics"
                )
                raise CampaignError(origin, key, f"{y!r} is not a metric (metrics: {', '.join(sorted(numeric))})")
        if len(ys) > 1 and "row" in plot and ("column" in plot or "facet" in plot):
            raise CampaignError(
                origin, f"plots[{i}].y", "several metrics take the rows or the columns: drop row or column"
            )
        if plot["kind"] == "breakdown":
            if "color" in plot or len(ys) < 2:
                raise CampaignError(
                    origin,
                    f"plots[{i}]",
                    "a breakdown stacks two or more y metrics (its colours): set y to a list and no color",
                )
            if plot["x"] not in order:
                raise CampaignError(
                    origin, f"plots[{i}].x", f"a breakdown's x must be a variable (a thread count), not {plot['x']!r}"
                )
            xs = [r[plot["x"]] for r in recs or []]
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in xs):
                raise CampaignError(
                    origin, f"plots[{i}].x", f"a breakdown's x must be a positive thread count ({plot['x']!r} is not)"
                )
        mapped = {plot.get(a) for a in ("x", "color", "row", "column", "facet")}
        loose = [v for v in varying if v not in mapped]
        if loose:
            raise CampaignError(
                origin,
                f"plots[{i}]",
                f"{loose[0]!r} varies but is not mapped: set it as x, color, row or column (or fix it with records:)",
            )
        for var in plot.get("labels", {}):
            if var not in columns | numeric:
                raise CampaignError(origin, f"plots[{i}].labels.{var}", "not a variable or metric")
        name = plot.get("name") or f"{plot['kind']}-{'-'.join(ys)}-by-{plot['x']}"
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        if name in names:
            raise CampaignError(origin, f"plots[{i}].name", f"duplicate plot name {name!r}")
        names.add(name)
        named.append({"log_x": False, "log_y": False, **plot, "name": name})
    return named


def _compare_pairs(entries: list[dict], recs: list[dict], order: list[str], origin: str) -> list[tuple[str, str]]:
    """Record-path pairs (a, b) and (b, a) for every `compare` entry.

    `a` and `b` are partial records naming the same variables; each record
    matching `a` is paired with the record that equals it but for b's values.
    """
    by_sig = {tuple(value_text(r[v]) for v in order): r for r in recs}
    pairs: list[tuple[str, str]] = []
    for i, entry in enumerate(entries):
        a, b = entry["a"], entry["b"]
        for side, part in (("a", a), ("b", b)):
            unknown = sorted(set(part) - set(order))
            if unknown:
                raise CampaignError(
                    origin, f"compare[{i}].{side}.{unknown[0]}", f"not a variable (variables: {', '.join(order)})"
                )
        if set(a) != set(b):
            raise CampaignError(origin, f"compare[{i}]", "a and b must set the same variables")
        found = 0
        for rec in recs:
            if any(value_text(rec[k]) != value_text(v) for k, v in a.items()):
                continue
            other = {**rec, **b}
            match = by_sig.get(tuple(value_text(other[v]) for v in order))
            if match is None:
                continue
            pa, pb = record_path(rec, order), record_path(match, order)
            pairs += [(pa, pb), (pb, pa)]
            found += 1
        if not found:
            raise CampaignError(origin, f"compare[{i}]", "no pair of records matches a and b")
    return list(dict.fromkeys(pairs))


def _with_commits(references: list[dict], variables: dict) -> list[dict]:
    """References naming a version by a tag or branch (`baseline: {version: v1}`)
    name it by the commit id the range gives it."""
    ranges = {v: spec for v, spec in variables.items() if isinstance(spec, dict)}
    if not ranges:
        return references
    out = []
    for ref in references:
        ref = dict(ref)
        for part in ("where", "baseline"):
            if isinstance(ref.get(part), dict):
                ref[part] = {k: versions.resolve(ranges[k], v) if k in ranges else v for k, v in ref[part].items()}
        out.append(ref)
    return out


def _check_sources(benchmark: Benchmark, recs: list[dict], order: list[str], origin: str) -> None:
    """A source naming variables (`rev: "{version}"`): every name is a
    variable, a checksum mapping has one variable and an entry for each of its
    values, and every source it resolves to is a valid source."""
    names = benchmark.source_variables()
    if not names:
        return
    for name in names:
        if name not in order:
            raise CampaignError(
                origin,
                "benchmark.source",
                f"names {{{name}}}, which is not a variable{did_you_mean(name, order)} (variables: {', '.join(order) or 'none'})",
            )
    checksums = (benchmark.source or {}).get("sha256")
    if isinstance(checksums, dict) and len(names) != 1:
        raise CampaignError(
            origin,
            "benchmark.source.sha256",
            f"a checksum per value needs one variable in the source, not {len(names)}",
        )
    schema = {
        "$defs": load_schema("campaign.schema.yaml")["$defs"],
        **load_schema("campaign.schema.yaml")["$defs"]["resolved_source"],
    }
    validator = jsonschema.Draft202012Validator(schema)
    for rec in recs:
        params = {**benchmark.build_defaults, **benchmark.run_defaults, **rec}
        if isinstance(checksums, dict) and value_text(params[names[0]]) not in checksums:
            raise CampaignError(
                origin, "benchmark.source.sha256", f"no checksum for {names[0]} {value_text(params[names[0]])!r}"
            )
        resolved = benchmark.source_for(params)
        error = jsonschema.exceptions.best_match(validator.iter_errors(resolved))
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path)
            raise CampaignError(
                origin, f"benchmark.source.{where}" if where else "benchmark.source", f"{error.message} (for {rec})"
            )


def _derived(spec: dict[str, str], variables: list[str], metrics: list[str], origin: str) -> dict[str, ast.Expression]:
    """Derived metrics, checked before any run: each expression parses and
    reads only metrics, variables and the derived metrics declared before it."""
    out: dict[str, ast.Expression] = {}
    for name, text in spec.items():
        key = f"derived.{name}"
        if name in metrics or name in variables:
            raise CampaignError(origin, key, f"{name!r} is already a {'metric' if name in metrics else 'variable'}")
        try:
            tree = expressions.parse(text)
        except expressions.ExpressionError as exc:
            raise CampaignError(origin, key, str(exc)) from None
        known = [*metrics, "wall_s", *variables, *out]
        for used in sorted(expressions.names(tree)):
            if used not in known:
                raise CampaignError(
                    origin,
                    key,
                    f"unknown name {used!r}{did_you_mean(used, known)} (metrics, variables and earlier derived metrics)",
                )
        out[name] = tree
    return out


def load_campaign(path: str | Path, origin: str | None = None) -> Campaign:
    """Load and fully check one campaign file."""
    path = Path(path)
    origin = origin or str(path)
    raw = load_yaml(path, origin)
    if raw is None:
        raise CampaignError(origin, "", "the file is empty")
    if not isinstance(raw, dict):
        raise CampaignError(origin, "", f"expected a mapping at the top level, got {type(raw).__name__}")
    error = _number_error(raw, origin) or schema_error(
        raw, "campaign.schema.yaml", origin, benchmarks=list(BUILTINS), platforms=tuple(PLATFORM_FACTORIES)
    )
    if error:
        raise error
    data = fill_defaults(raw, load_schema("campaign.schema.yaml"))
    benchmark = make_benchmark(data["benchmark"], origin)
    imported = _imported_records(benchmark, raw, data, origin)
    values = _expand_values(data["variables"], benchmark, origin)
    order, recs = _records(data, values, origin)
    _check_names(order, list(benchmark.metrics), origin)
    for var, labels in data["pretty"].items():
        if var not in order:
            raise CampaignError(origin, f"pretty.{var}", f"not a variable (variables: {', '.join(order) or 'none'})")
        known = {value_text(r[var]) for r in recs}
        for value in labels:
            if value not in known:
                raise CampaignError(origin, f"pretty.{var}.{value}", f"not a value of {var}")
    benchmark.check(recs, order)
    _check_sources(benchmark, recs, order, origin)
    instruments = Instruments.from_campaign(data, origin)
    instruments.check(recs, order)
    platform = make_platform(data["platform"], order, origin)
    platform.check(instruments, origin)
    derived = _derived(data["derived"], order, [*benchmark.metrics, *instruments.declared_metrics()], origin)
    plots = check_plots(
        data["plots"], order, [*benchmark.metrics, *instruments.declared_metrics(), *derived], origin, recs
    )
    for var in data["statistics"].get("baseline") or {}:
        if var not in order:
            raise CampaignError(origin, f"statistics.baseline.{var}", f"not a variable (variables: {', '.join(order)})")
        if value_text(data["statistics"]["baseline"][var]) not in {value_text(r[var]) for r in recs}:
            raise CampaignError(
                origin,
                f"statistics.baseline.{var}",
                f"{value_text(data['statistics']['baseline'][var])!r} is not a value of {var}",
            )
    if (
        data["statistics"]["warmup"] == "wps"
        and benchmark.readings("") is None
        and not (isinstance(data["benchmark"], dict) and data["benchmark"].get("readings"))
    ):
        raise CampaignError(
            origin,
            "statistics.warmup",
            "wps needs unit readings: set benchmark.readings (a regex with work and seconds groups)",
        )
    for var in data["statistics"].get("compare") or []:
        if var not in order:
            raise CampaignError(
                origin, "statistics.compare", f"{var!r} is not a variable (variables: {', '.join(order)})"
            )
    precision = None
    if "precision" in data:
        precision = dict(data["precision"])  # defaults filled from the schema
        if precision["metric"] not in [*benchmark.metrics, *instruments.declared_metrics(), *derived, "wall_s"]:
            raise CampaignError(
                origin,
                "precision.metric",
                f"{precision['metric']!r} is not a metric (metrics: {', '.join([*benchmark.metrics, 'wall_s'])})",
            )
        if precision["min_runs"] > precision["max_runs"]:
            raise CampaignError(origin, "precision.min_runs", "is larger than max_runs")
        if "nb_runs" in raw:
            raise CampaignError(origin, "nb_runs", "conflicts with precision (which sets min_runs and max_runs)")
    bisect = _bisect(data, order, recs, [*benchmark.metrics, *instruments.declared_metrics(), *derived], origin)
    if bisect and precision:
        raise CampaignError(origin, "bisect", "conflicts with precision (bisection decides which runs to add)")
    if "decide" in data["statistics"]:
        for other, given in (("precision", precision), ("bisect", bisect), ("nb_runs", "nb_runs" in raw)):
            if given:
                raise CampaignError(
                    origin, "statistics.decide", f"conflicts with {other} (the design decides how many runs)"
                )
        precision = _decide(data, recs, order, [*benchmark.metrics, *instruments.declared_metrics(), *derived], origin)
    references = gates.parse_references(
        _with_commits(data["references"], data["variables"]), order, recs,
        [*benchmark.metrics, *instruments.declared_metrics(), *derived], origin,
    )  # fmt: skip
    compare = _compare_pairs(data["compare"], recs, order, origin)
    if compare and not (instruments.uses("perf_record") or instruments.uses("offcpu")):
        raise CampaignError(origin, "compare", "differential flame graphs need the perf_record or offcpu wrapper")
    build_vars = benchmark.build_variables(order)
    # A variable the source names is a build variable: each value its own source and build.
    build_vars += [v for v in benchmark.source_variables() if v not in build_vars]
    # Builds on another machine get a directory of their own.
    records = [Record(r, record_path(r, order), key_component(r, build_vars, platform.build_tag())) for r in recs]
    campaign = Campaign(
        name=data["name"],
        file=path,
        origin=origin,
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        data=data,
        benchmark=benchmark,
        variables=order,
        build_vars=build_vars,
        records=records,
        nb_runs=imported or (precision["min_runs"] if precision else data["nb_runs"]),
        duration_s=data["duration_s"],
        timeout_s=data["timeout_s"],
        pretty=data["pretty"],
        plots=plots,
        instruments=instruments,
        compare=compare,
        compare_with=_compare_with(data.get("compare_with") or [], origin),
        precision=precision,
        bisect=bisect,
        platform=platform,
        derived=derived,
        references=references,
    )
    campaign.by_path = {r.path: r for r in records}
    return campaign


def _decide(data: dict, recs: list[dict], order: list[str], metrics: list[str], origin: str) -> dict[str, object]:
    """statistics.decide, checked, as the precision loop's spec (mode "decide")."""
    from perfsnake import sequential

    spec = data["statistics"]["decide"]  # defaults filled from the schema
    metric = spec.get("metric") or (data["statistics"].get("metrics") or metrics or ["wall_s"])[0]
    if metric not in [*metrics, "wall_s"]:
        raise CampaignError(
            origin, "statistics.decide.metric", f"{metric!r} is not a metric (metrics: {', '.join(metrics)})"
        )
    effect = spec["min_effect"]
    effect = float(effect.rstrip("%")) / 100 if isinstance(effect, str) else float(effect)
    if not 0 < effect < 1:
        raise CampaignError(
            origin, "statistics.decide.min_effect", f"{spec['min_effect']!r} is not between 0 and 100 %"
        )
    if spec["alpha"] != sequential.ALPHA:
        raise CampaignError(
            origin,
            "statistics.decide.alpha",
            f"the design is calibrated for {sequential.ALPHA} only, not {spec['alpha']!r}",
        )
    if spec["power"] not in sequential.POWERS:
        powers = ", ".join(str(p) for p in sequential.POWERS)
        raise CampaignError(
            origin, "statistics.decide.power", f"the design is calibrated for {powers} only, not {spec['power']!r}"
        )
    compared = data["statistics"].get("compare") or order
    if not any(
        sum(a[v] != b[v] for v in order) == 1 and any(a[v] != b[v] for v in compared)
        for i, a in enumerate(recs)
        for b in recs[i + 1 :]
    ):
        raise CampaignError(origin, "statistics.decide", "needs records one variable apart to compare")
    if data.get("order", "interleaved") != "interleaved":
        # A pair is run i of each record; only interleaving makes them neighbours in time.
        raise CampaignError(
            origin, "order", f"is {data['order']!r}: statistics.decide pairs runs, so it needs interleaved"
        )
    first = sequential.Spec(effect, spec["variance"], spec["power"]).first_look
    if spec["max_runs"] < first:
        raise CampaignError(origin, "statistics.decide.max_runs", f"is below the design's first look ({first} runs)")
    return {"mode": "decide", "metric": metric, "min_effect": effect, "variance": spec["variance"], "power": spec["power"],
            "budget_s": spec.get("budget_s"), "min_runs": first, "max_runs": spec["max_runs"]}  # fmt: skip


def _compare_with(paths: list[str], origin: str) -> list[str]:
    """Earlier results to compare with: each a result directory holding its
    campaign's CSV, or an artifact zip (read when the comparison is made)."""
    import zipfile

    for i, raw in enumerate(paths):
        path = Path(raw)
        if path.is_dir():
            if not (path / f"{path.name}.csv").exists():
                raise CampaignError(
                    origin, f"compare_with[{i}]", f"{raw}: no {path.name}.csv (not a results/<campaign>/ directory)"
                )
        elif not (path.is_file() and zipfile.is_zipfile(path)):
            raise CampaignError(origin, f"compare_with[{i}]", f"{raw}: no such result directory or artifact zip")
    return list(paths)


def _imported_records(benchmark: Benchmark, raw: dict, data: dict, origin: str) -> int:
    """An imported campaign's records come from its files: they go into
    data["records"]; returns the most runs a record has (0 when not imported)."""
    if not isinstance(benchmark, ImportedBenchmark):
        return 0
    for name in ("variables", "records", "exclude", "nb_runs", "precision", "bisect", "control", "platform",
                 "duration_s", "timeout_s", "flamegraph", "compare", "wrappers", "shared_libs", "pre_run_hooks",
                 "post_run_hooks", "instruments"):  # fmt: skip
        if name in raw:
            raise CampaignError(origin, name, "not for an imported campaign (its records and runs come from its files)")
    records = benchmark.given_records()
    data["records"] = [record for record, _runs in records]
    return max(runs for _record, runs in records)


def _bisect(data: dict, order: list[str], recs: list[dict], metrics: list[str], origin: str) -> dict | None:
    """The bisect section, checked: a metric, a relative threshold, the commit-range variable."""
    if "bisect" not in data:
        return None
    spec = dict(data["bisect"])
    ranges = [v for v, values in data["variables"].items() if isinstance(values, dict)]
    var = spec.get("variable") or (ranges[0] if len(ranges) == 1 else None)
    if var not in ranges:
        raise CampaignError(origin, "bisect.variable", "bisection needs a variable whose values are a commit range "
                            f"(variables with a range: {', '.join(ranges) or 'none'})")  # fmt: skip
    varying = [v for v in order if len({value_text(r[v]) for r in recs}) > 1 and v != var]
    if varying:
        raise CampaignError(
            origin, "bisect", f"{varying[0]!r} varies too: bisection needs {var!r} to be the only variable that varies"
        )
    if spec["metric"] not in [*metrics, "wall_s"]:
        raise CampaignError(
            origin, "bisect.metric", f"{spec['metric']!r} is not a metric (metrics: {', '.join([*metrics, 'wall_s'])})"
        )
    threshold = spec["threshold"]
    if isinstance(threshold, str):
        threshold = float(threshold.rstrip("%")) / 100
    if not 0 < float(threshold) < 1:
        raise CampaignError(
            origin, "bisect.threshold", f"{spec['threshold']!r} is not a relative change between 0 and 100 %"
        )
    return {"metric": spec["metric"], "threshold": float(threshold), "variable": var}


def control_campaigns(c: Campaign) -> list[Campaign]:
    """The observer-effect controls of a campaign: the same records and runs
    without the observing instruments (perf, strace, time, ...) and, with
    `per_instrument`, with each observer alone; results under
    results/<name>__<variant>/. Treatments (libraries, pinning, placement,
    governor, env, daemons) are the experiment, so every control keeps them."""
    mode = c.data.get("control", False)
    if not mode:
        return []
    observers = c.instruments.observers()
    treatments = [i for i in c.instruments.all() if not i.observer]
    if not observers:
        kinds = ", ".join(i.kind for i in treatments) or "none"
        raise CampaignError(
            c.origin,
            "control",
            f"no observing instrument to control for (the instruments here are part of the experiment: {kinds})",
        )
    variants = [("control", c.instruments.keeping(treatments))]
    if mode == "per_instrument":
        kinds = [i.kind for i in observers]  # type: ignore[assignment]
        for i, inst in enumerate(observers):
            label = inst.kind if kinds.count(inst.kind) == 1 else f"{inst.kind}{i}"
            variants.append((f"only-{label}", c.instruments.keeping([*treatments, inst])))
    return [
        _derived_campaign(c, variant, instruments, control_of=(c.name, variant)) for variant, instruments in variants
    ]


def _derived_campaign(c: Campaign, suffix: str, instruments: Instruments, **changes: Any) -> Campaign:
    """A campaign of extra runs of `c`'s records (results/<name>__<suffix>/):
    other instruments, no figures or differential graphs, no controls of its
    own; `changes` set the rest (what it is of `c`, its runs)."""
    derived = dataclasses.replace(
        c, name=f"{c.name}__{suffix}", instruments=instruments, plots=[], compare=[], **changes,
        data={**c.data, "control": False, "compare": [], "plots": [], "profile_differences": None, "noise_floor": None},
    )  # fmt: skip
    derived.by_path = c.by_path
    return derived


def why_campaign(c: Campaign) -> Campaign | None:
    """The profiled runs of `profile_differences`: the same records with perf
    record added (or the campaign's own perf_record), under
    results/<name>__why/, run only for the pairs the statistics pick and never
    part of them."""
    spec = c.data.get("profile_differences")
    if spec is None:
        return None
    from perfsnake.instruments.profiling import PerfRecord
    from perfsnake.machine import capabilities

    if c.imported:
        raise CampaignError(c.origin, "profile_differences", "an imported campaign has no runs to profile")
    problem = capabilities.sampling_problem()
    if problem:
        raise CampaignError(c.origin, "profile_differences", f"perf cannot sample here: {problem}")
    instruments = c.instruments
    if not instruments.uses("perf_record"):
        options = {k: spec[k] for k in ("event", "frequency", "call_graph")}
        recorder = PerfRecord({"type": "perf_record", **options}, c.origin, "profile_differences")
        recorder.check([r.values for r in c.records], c.variables)
        # innermost: it samples the benchmark, not the other wrappers
        instruments = dataclasses.replace(instruments, wrappers=[*instruments.wrappers, recorder])
    return _derived_campaign(c, "why", instruments, nb_runs=int(spec["runs"]), precision=None, bisect=None, references=[],
                    compare_with=[], why_of=c.name)  # fmt: skip


def floor_campaign(c: Campaign) -> Campaign | None:
    """The layout builds of `noise_floor`: each selected record built
    `layouts` times (the `layout` build variable seeds the function order),
    each build run under environment padding, under results/<name>__floor/."""
    spec = c.data.get("noise_floor")
    if spec is None:
        return None
    import shutil

    if c.imported or not c.benchmark.needs_build():
        raise CampaignError(c.origin, "noise_floor", f"{c.benchmark.name} is not built here: its layout cannot change")
    if FLOOR_VARIABLE in c.variables:
        raise CampaignError(c.origin, f"variables.{FLOOR_VARIABLE}", "is the variable noise_floor adds: rename it")
    if isinstance(c.platform, Local) and shutil.which("ld.lld") is None:
        raise CampaignError(c.origin, "noise_floor", "needs lld (Debian package lld; run: bash scripts/setup/apt.sh)")
    selected = []
    for i, where in enumerate(spec.get("records") or [{}]):
        for var in where:
            if var not in c.variables:
                raise CampaignError(
                    c.origin, f"noise_floor.records[{i}]", f"{var!r} is not a variable{did_you_mean(var, c.variables)}"
                )
        found = [r for r in c.records if gates.matches(r.values, where)]
        if not found:
            raise CampaignError(c.origin, f"noise_floor.records[{i}]", f"selects no record ({where})")
        selected += [r for r in found if r not in selected]
    order, build_vars = [*c.variables, FLOOR_VARIABLE], [*c.build_vars, FLOOR_VARIABLE]
    tag = c.platform.build_tag()
    records = [
        Record(values, record_path(values, order), key_component(values, build_vars, tag))
        for r in selected
        for values in ({**r.values, FLOOR_VARIABLE: k} for k in range(1, int(spec["layouts"]) + 1))
    ]
    derived = _derived_campaign(c, "floor", c.instruments, nb_runs=int(spec["runs"]), precision=None, bisect=None,
                                references=[], compare_with=[], floor_of=c.name, variables=order,
                                build_vars=build_vars, records=records)  # fmt: skip
    derived.by_path = {r.path: r for r in records}
    return derived


def load_campaigns(paths: list[str], origin: str = "config") -> list[Campaign]:
    campaigns = [load_campaign(p) for p in paths]
    campaigns += [d for c in list(campaigns) for d in control_campaigns(c)]
    campaigns += [w for c in list(campaigns) if (w := why_campaign(c)) is not None]
    campaigns += [f for c in list(campaigns) if (f := floor_campaign(c)) is not None]
    seen: dict[str, str] = {}
    for c in campaigns:
        if c.name in seen:
            raise CampaignError(c.origin, "name", f"campaign name {c.name!r} is also used by {seen[c.name]}")
        seen[c.name] = c.origin
    if not campaigns:
        raise CampaignError(origin, "campaigns", "no campaign to run")
    return campaigns
