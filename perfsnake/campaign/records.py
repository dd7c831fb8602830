"""A campaign's records: its variables' values expanded (lists, generators,
numeric ranges, commit ranges), their cartesian product (zipped variables
taken together, as one axis) plus the explicit records, minus the excludes;
or, for an imported campaign, the records its files hold."""

from __future__ import annotations

import itertools
import math
from decimal import Decimal

from perfsnake import versions
from perfsnake.benchmarks.base import Benchmark
from perfsnake.benchmarks.imported import ImportedBenchmark
from perfsnake.campaign.model import Record
from perfsnake.errors import CampaignError
from perfsnake.escape import key_component, record_path, value_text


def _expand_values(raw: dict, benchmark: Benchmark, origin: str) -> dict[str, list]:
    values: dict[str, list] = {}
    for var, spec in raw.items():
        if isinstance(spec, dict) and "git" not in spec:
            spec = numeric_range(spec, origin, f"variables.{var}")
        elif isinstance(spec, dict):  # a commit range: the commits, oldest first
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


#: the most values one range may give (a typo's range of a million values is refused, not planned)
MAX_RANGE_VALUES = 10_000


def numeric_range(spec: dict, origin: str, key: str) -> list[int | float]:
    """`{range: [first, last], geometric: ratio}` (first, first x ratio, ... up
    to last) or `{range: [first, last], step: s}` (first, first + s, ...):
    the last value is included when the sequence meets it. Integers stay
    integers; decimal steps are exact (0.1 + 0.2 gives 0.3)."""
    first, last = spec["range"]
    if ("geometric" in spec) == ("step" in spec):
        raise CampaignError(origin, key, "a range takes one of geometric (a ratio) or step (an increment)")
    if last < first:
        raise CampaignError(origin, f"{key}.range", f"[{first}, {last}] is empty (the first value is above the last)")
    exact = all(isinstance(v, int) for v in (first, last, spec.get("geometric", spec.get("step"))))
    cast = int if exact else float
    values: list[int | float] = []
    if "geometric" in spec:
        ratio = spec["geometric"]
        if ratio <= 1:
            raise CampaignError(origin, f"{key}.geometric", f"a ratio of {ratio} never grows: give one above 1")
        if first <= 0:
            raise CampaignError(origin, f"{key}.range", f"a geometric range starts above 0 (it starts at {first})")
        count = math.floor(math.log(last / first, ratio) + 1e-9) + 1
        if count > MAX_RANGE_VALUES:
            raise CampaignError(origin, key, f"gives {count} values (at most {MAX_RANGE_VALUES})")
        values = [cast(Decimal(str(first)) * Decimal(str(ratio)) ** i) for i in range(count + 1)]
    else:
        step = spec["step"]
        if step <= 0:
            raise CampaignError(origin, f"{key}.step", f"a step of {step} never reaches {last}: give one above 0")
        count = math.floor((Decimal(str(last)) - Decimal(str(first))) / Decimal(str(step))) + 1
        if count > MAX_RANGE_VALUES:
            raise CampaignError(origin, key, f"gives {count} values (at most {MAX_RANGE_VALUES})")
        values = [cast(Decimal(str(first)) + Decimal(str(step)) * i) for i in range(count)]
    return [v for v in values if v <= last]  # the logarithm's rounding may give one past the last


def _axes(data: dict, values: dict[str, list], origin: str) -> list[list[dict]]:
    """The product's axes: each zipped group one axis of its values taken
    together (the i-th of each), every other variable an axis of its own."""
    axes: list[list[dict]] = []
    grouped: dict[str, int] = {}
    for i, group in enumerate(data.get("zip") or []):
        for var in group:
            if var not in values:
                raise CampaignError(
                    origin, f"zip[{i}]", f"{var!r} is not a variable (variables: {', '.join(values) or 'none'})"
                )
            if var in grouped:
                raise CampaignError(origin, f"zip[{i}]", f"{var!r} is also zipped in zip[{grouped[var]}]")
            grouped[var] = i
        lengths = {var: len(values[var]) for var in group}
        if len(set(lengths.values())) > 1:
            said = ", ".join(f"{var} has {n}" for var, n in lengths.items())
            raise CampaignError(origin, f"zip[{i}]", f"zipped variables need as many values each ({said})")
        axes.append([dict(zip(group, combo)) for combo in zip(*(values[var] for var in group))])
    axes += [[{var: v} for v in vals] for var, vals in values.items() if var not in grouped]
    return axes


def _records(data: dict, values: dict[str, list], origin: str) -> tuple[list[str], list[dict]]:
    order = list(values)
    records: list[dict] = []
    if values:
        axes = _axes(data, values, origin)
        records = [{var: merged[var] for var in order} for combo in itertools.product(*axes)
                   for merged in [{k: v for part in combo for k, v in part.items()}]]  # fmt: skip
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


def _imported_records(benchmark: Benchmark, raw: dict, data: dict, origin: str) -> int:
    """An imported campaign's records come from its files: they go into
    data["records"]; returns the most runs a record has (0 when not imported)."""
    if not isinstance(benchmark, ImportedBenchmark):
        return 0
    for name in ("variables", "records", "exclude", "zip", "nb_runs", "precision", "bisect", "control", "platform", "hosts",
                 "duration_s", "timeout_s", "flamegraph", "flamegraph_pairs", "wrappers", "shared_libs", "pre_run_hooks",
                 "post_run_hooks", "instruments"):  # fmt: skip
        if name in raw:
            raise CampaignError(origin, name, "not for an imported campaign (its records and runs come from its files)")
    records = benchmark.given_records()
    data["records"] = [record for record, _runs in records]
    return max(runs for _record, runs in records)


def _build_variables(benchmark: Benchmark, order: list[str]) -> list[str]:
    build_vars = benchmark.build_variables(order)
    # A variable the source names is a build variable: each value its own source and build.
    build_vars += [v for v in benchmark.source_variables() if v not in build_vars]
    return build_vars


def _record(values: dict[str, object], order: list[str], build_vars: list[str], build_tag: str) -> Record:
    """The record of `values`: its run directory, and its build's (builds on
    another machine, `build_tag`, get a directory of their own)."""
    return Record(values, record_path(values, order), key_component(values, build_vars, build_tag))
