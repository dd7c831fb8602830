"""The composition matrix (issue 44): every feature a campaign can name,
enumerated from the catalogs and the schema, and a pairwise covering set of
campaigns over them.

A *feature* is one catalog entry (a benchmark kind, a wrapper, a shared
library, a hook, a platform) or one level of a schema key (a statistics
mode, batching, an output, an unusual value), with the smallest campaign
fragment that turns it on. The benchmark kinds are the catalog's, each shrunk
from the ready campaign that uses it (tests/test_ready_campaigns.shrink), so a
new benchmark joins with its ready campaign; a new instrument, platform or
schema key without an entry here fails tests/test_composition_matrix.py
naming it.

The covering set: every pair of features of different categories (and of
one category with two slots: two wrappers, two hooks, two outputs) is in at
least one campaign, unless the pair alone is refused by `perfsnake validate`
(a combination without meaning, docs/composition.md lists each with its
reason). Greedy, in the manner of AETG: each campaign starts from the first
pair not yet covered and takes, slot by slot, the feature that covers the
most pairs still open; deterministic, so a failure names the same campaign
on every machine.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from helpers import IMAGE, ROOT

from perfsnake import benchmarks, platforms
from perfsnake.instruments.registry import HOOKS, LIBS, WRAPPERS

#: the metric every run records, whatever its benchmark (the launcher's)
METRIC = "wall_s"


@dataclass(frozen=True)
class Context:
    """What some fragments need from the test's world."""

    workdir: Path
    ssh_platform: dict = field(default_factory=dict)  # tests/sshd.py's platform for 127.0.0.1
    earlier: str = ""  # a results directory of an earlier invocation (compare_with)


Fragment = Callable[[Context], dict]


@dataclass(frozen=True)
class Feature:
    category: str
    name: str
    fragment: Fragment
    #: what a run of it must leave (names of checks in test_composition_matrix.PROMISES)
    promises: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.category}={self.name}"


def _const(data: dict) -> Fragment:
    return lambda _ctx: copy.deepcopy(data)


# ---- benchmarks: from the ready campaigns -------------------------------------------------

#: the one benchmark kind with no ready campaign of its own: the inline command
COMMAND = {
    "benchmark": {"type": "command", "source": {"path": str(ROOT / "src/demo")},
                  "build": "cc -O2 -Wall -Wextra -Werror -o {build_dir}/layout {src_dir}/layout.c",
                  "command": "{build_dir}/layout 100 {n}",
                  "metrics": {"iterations": r"iterations=(\d+)"}},
    "variables": {"n": ["m"]},
}  # fmt: skip
#: keys of a ready campaign a benchmark's fragment keeps (the rest are other features)
BENCHMARK_KEYS = ("benchmark", "variables", "records", "exclude", "duration_s", "timeout_s")


def _kind(data: dict) -> str:
    bench = data["benchmark"]
    return bench if isinstance(bench, str) else str(bench["type"])


def ready_benchmarks() -> dict[str, dict]:
    """Benchmark kind -> the fragment of the first ready campaign that uses it
    alone (no instruments, modes or outputs to take out), shrunk."""
    from test_ready_campaigns import shrink

    out: dict[str, dict] = {"command": COMMAND}
    for path in sorted((ROOT / "config" / "campaigns").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        kind = _kind(data)
        if kind in out or isinstance((data.get("benchmark") or {}), dict) and data["benchmark"].get("source"):
            continue
        shrunk = shrink(data)
        if shrunk.get("records"):  # its first record as variables: other features add variables
            shrunk.setdefault("variables", {}).update({k: [v] for k, v in shrunk.pop("records")[0].items()})
        out[kind] = {k: shrunk[k] for k in BENCHMARK_KEYS if k in shrunk}
        if kind == "imported":  # its files are the checkout's
            out[kind] = _absolute_files(out[kind], ROOT)
    return out


def _absolute_files(fragment: dict, base: Path) -> dict:
    bench = fragment["benchmark"]
    for key in ("files", "file"):
        if isinstance(bench.get(key), str):
            bench[key] = str((base / bench[key]).resolve())
        elif isinstance(bench.get(key), list):
            bench[key] = [str((base / f).resolve()) for f in bench[key]]
    return fragment


# ---- instruments -----------------------------------------------------------------------------

#: each wrapper, library and hook of the catalog, turned on (a variable the
#: instrument reads gets one value that does something: records multiply)
INSTRUMENTS: dict[str, dict] = {
    "taskset": {"wrappers": ["taskset"], "variables": {"cpu_list": ["0"]}},
    "numactl": {"wrappers": ["numactl"], "variables": {"physcpubind": ["0"]}},
    "env": {"wrappers": [{"type": "env", "set": {"MATRIX_ENV": "on"}}]},
    "nice": {"wrappers": ["nice"], "variables": {"nice": [5]}},
    "time": {"wrappers": ["time"]},
    "strace": {"wrappers": ["strace"]},
    "ltrace": {"wrappers": ["ltrace"]},
    "valgrind": {"wrappers": ["valgrind"]},
    "perf_stat": {"wrappers": ["perf_stat"]},
    "perf_record": {"wrappers": [{"type": "perf_record", "frequency": 199}]},
    "sched_timeline": {"wrappers": ["sched_timeline"]},
    "offcpu": {"wrappers": ["offcpu"]},
    "jemalloc": {"shared_libs": ["jemalloc"]},
    "tcmalloc": {"shared_libs": ["tcmalloc"]},
    "allocator": {"shared_libs": ["allocator"], "variables": {"allocator": ["jemalloc"]}},
    "preload": {"shared_libs": [{"type": "preload", "path": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}]},
    "lock": {"shared_libs": ["lock"], "variables": {"lock": ["mcs"]}},
    "daemon": {"pre_run_hooks": [{"type": "daemon", "command": "sleep 600"}]},
    "placement": {"pre_run_hooks": ["placement"], "variables": {"placement": ["close"]}},
    "monitor": {"pre_run_hooks": ["monitor"]},
    "drop_caches": {"pre_run_hooks": ["drop_caches"]},
    "governor": {"pre_run_hooks": ["governor"], "variables": {"governor": ["performance"]}},
    "cooldown": {"post_run_hooks": [{"type": "cooldown", "seconds": 0.05}]},
    "command": {"post_run_hooks": [{"type": "command", "command": "echo hooked=7", "metrics": {"hooked": r"hooked=(\d+)"}}]},
    "attach": {"pre_run_hooks": [{"type": "attach", "program": "syscalls"}]},
}  # fmt: skip
INSTRUMENT_PROMISES: dict[str, tuple[str, ...]] = {
    "perf_record": ("flamegraph",),
    "offcpu": ("offcpu",),
    "sched_timeline": ("sched",),
    "command": ("hook_metric",),
    "perf_stat": ("columns:perf.",),
    "time": ("columns:time.",),
}


def _platform(name: str) -> Fragment:
    if name == "local":
        return _const({})
    if name == "container":
        return _const({"platform": {"type": "container", "image": IMAGE}})
    return lambda ctx: {"platform": copy.deepcopy(ctx.ssh_platform)}


# ---- schema levels ---------------------------------------------------------------------------

#: statistics modes: how many runs and what they are compared with
MODES: dict[str, dict] = {
    "precision": {"precision": {"metric": METRIC, "target_rel_ci": 0.5, "min_runs": 2, "max_runs": 3}},
    "decide": {
        "statistics": {"decide": {"metric": METRIC, "min_effect": "50%", "budget_s": 1}},
        "variables": {"arm": ["a", "b"]},
    },
    "control": {"control": True, "wrappers": ["time"]},  # an observer to control for
    "control_per_instrument": {"control": "per_instrument", "wrappers": ["time"]},
    "noise_floor": {"noise_floor": {"layouts": 2, "runs": 2}},
    "interleaved_seed": {"order": "random", "seed": 7},
}
BATCHES: dict[str, dict] = {"one_job_per_run": {"batch": 1}, "batched": {"batch": 4}}
OUTPUTS: dict[str, Fragment] = {
    "flamegraph_pairs": _const({"wrappers": [{"type": "perf_record", "frequency": 199}],
                                "variables": {"side": ["a", "b"]},
                                "flamegraph_pairs": [{"a": {"side": "a"}, "b": {"side": "b"}}]}),
    "profile_differences": _const({"variables": {"side": ["a", "b"]}, "nb_runs": 3,
                                   "profile_differences": {"top": 1, "runs": 1}}),
    "references": _const({"references": [{"metric": METRIC, "lower": 0}]}),
    "plots": _const({"plots": [{"kind": "bar", "x": "matrix", "y": METRIC}], "variables": {"matrix": [1]}}),
    "derived": _const({"derived": {"wall_ms": f"{METRIC} * 1000"}}),
    "requires": _const({"requires": {"aslr": "on"}, "on_unmet": "warn"}),
}  # fmt: skip
OUTPUT_PROMISES: dict[str, tuple[str, ...]] = {
    "flamegraph_pairs": ("flamegraph", "diff_graphs"),
    "profile_differences": ("why",),
    "references": ("verdict",),
    "plots": ("png",),
    "derived": ("columns:wall_ms",),
}
#: unusual values of a variable the benchmark does not read (a label)
VALUES: dict[str, object] = {
    "long": "x" * 130,
    "periodic": "f" * 30,
    "quotes": 'it\'s "q"',
    "spaces": "a b  c",
    "unicode": "naïve ☃",
    "tilde": "a~b~",
    "slash": "a/b",
    "shell": "$(echo no); `x` | ; &",
}
#: a variable named like a column the statistics write
STAT_NAMED = {"mean": ["1"]}

#: campaign keys that are not features (what every campaign has, or what the
#: benchmark's fragment sets), with why
STRUCTURAL = {
    "name": "every campaign's",
    "description": "prose",
    "tags": "chooses campaigns from the command line, changes nothing of a run (tests/test_selection.py)",
    "benchmark": "the benchmark category",
    "variables": "every fragment's variables",
    "records": "a benchmark's fragment (lmbench)",
    "exclude": "a benchmark's fragment",
    "zip": "shapes the records as records and exclude do (tests/test_generators.py)",
    "nb_runs": "every campaign's (2)",
    "duration_s": "a benchmark's fragment",
    "timeout_s": "every campaign's",
    "pretty": "display only",
    "statistics": "the decide mode",
    "hosts": "fleets need several hosts (tests/test_fleet.py)",
    "bisect": "its own benchmark: a commit range (tests/test_versions.py)",
    "flamegraph": "drawing options of flamegraph_pairs",
    "wrappers": "the wrapper category",
    "shared_libs": "the shared_lib category",
    "pre_run_hooks": "the hook category",
    "post_run_hooks": "the hook category",
    "on_unmet": "with requires",
    "seed": "the interleaved_seed mode",
    "order": "the interleaved_seed mode",
    "platform": "the platform category",
    "batch": "the batch category",
}
#: schema keys the matrix does not cover yet, with why (issue 44 stays open on them)
NOT_YET = {
    "compare_with": "needs an earlier results directory of the same parameter space: a second invocation",
}
#: categories and how many of their features one campaign may hold
SLOTS = {"benchmark": 1, "wrapper": 4, "shared_lib": 2, "hook": 3, "platform": 1, "mode": 2, "batch": 1,
         "output": 2, "value": 4}  # fmt: skip


def features() -> list[Feature]:
    """Every feature, in category order."""
    out: list[Feature] = []
    bench = ready_benchmarks()
    for kind in benchmarks.names():
        if kind in bench:
            out.append(Feature("benchmark", kind, _const(bench[kind])))
        else:  # no ready campaign uses it: the test names it
            out.append(Feature("benchmark", kind, _const({"benchmark": {"type": kind}}), ("missing",)))
    for category, catalog in (("wrapper", WRAPPERS), ("shared_lib", LIBS), ("hook", HOOKS)):
        for kind in catalog:
            fragment = INSTRUMENTS.get(kind)
            promises = INSTRUMENT_PROMISES.get(kind, ()) if fragment else ("missing",)
            out.append(Feature(category, kind, _const(fragment or {}), promises))
    out += [Feature("platform", name, _platform(name)) for name in platforms.names()]
    out += [Feature("mode", name, _const(data)) for name, data in MODES.items()]
    out += [Feature("batch", name, _const(data)) for name, data in BATCHES.items()]
    out += [Feature("output", name, frag, OUTPUT_PROMISES.get(name, ())) for name, frag in OUTPUTS.items()]
    # each its own variable: one campaign holds several
    out += [Feature("value", name, _const({"variables": {f"tag_{name}": [v]}}), (f"values:tag_{name}",))
            for name, v in VALUES.items()]  # fmt: skip
    out.append(Feature("value", "statistic_named", _const({"variables": STAT_NAMED})))
    return out


# ---- campaigns from features -----------------------------------------------------------------


def merge(base: dict, extra: dict) -> dict:
    """`extra` into `base`: mappings merged, lists joined (an instrument list
    keeps both), anything else replaced."""
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        elif isinstance(value, list) and isinstance(out.get(key), list) and key != "variables":
            out[key] = [*out[key], *(v for v in value if v not in out[key])]
        else:
            out[key] = copy.deepcopy(value)
    return out


def campaign(name: str, row: Iterable[Feature], ctx: Context) -> dict:
    """The campaign a row of features makes: the benchmark first (command when none)."""
    row = sorted(row, key=lambda f: list(SLOTS).index(f.category))
    data: dict = {"name": name, "nb_runs": 2, "timeout_s": 120}
    if not any(f.category == "benchmark" for f in row):
        data = merge(data, copy.deepcopy(COMMAND))
    for feature in row:
        data = merge(data, feature.fragment(ctx))
    if "precision" in data or "decide" in data.get("statistics", {}) or _kind(data) == "imported":
        data.pop("nb_runs", None)  # the mode decides how many runs; an import has its files' runs
    if _kind(data) == "imported":
        data.pop("timeout_s", None)
    return _map_plots(data)


#: a plot's channels, in the order the varying variables take them
CHANNELS = ("x", "color", "column", "row")


def _map_plots(data: dict) -> dict:
    """Every varying variable on a channel of each plot (a plot refuses an
    unmapped one): the plot's own x first, then the others in order."""
    # a generator (`cpu: all`) varies too
    varying = [k for k, v in (data.get("variables") or {}).items() if not isinstance(v, list) or len(v) > 1]
    for plot in data.get("plots") or []:
        if plot.get("kind") != "bar" or plot.get("x") != "matrix":
            continue
        others = [v for v in varying if v != "matrix"][: len(CHANNELS) - 1]
        plot.update(dict(zip(CHANNELS[1:], others, strict=False)))
    return data


# ---- the covering set -------------------------------------------------------------------------

Pair = tuple[str, str]


def pair(a: Feature, b: Feature) -> Pair:
    first, second = sorted((a.id, b.id))
    return first, second


def all_pairs(feats: list[Feature]) -> list[Pair]:
    """Every pair a campaign can hold: different categories, or one category with two slots."""
    return sorted(
        pair(a, b) for a, b in itertools.combinations(feats, 2) if a.category != b.category or SLOTS[a.category] > 1
    )


def covering(
    feats: list[Feature], allowed: set[Pair], accepts: Callable[[list[Feature]], bool] = lambda _row: True
) -> list[list[Feature]]:
    """Rows that together hold every allowed pair; no row holds a pair outside
    `allowed`, and each is one `accepts` (validate: more than two features
    can clash where no two do, e.g. more varying variables than a plot has
    channels)."""
    by_id = {f.id: f for f in feats}
    open_pairs = set(allowed)
    rows: list[list[Feature]] = []
    while open_pairs:
        a, b = min(open_pairs)
        row = [by_id[a], by_id[b]]
        for category, slots in SLOTS.items():
            for _ in range(slots - sum(f.category == category for f in row)):
                gains = [
                    (-sum(pair(f, h) in open_pairs for h in row), i, f)
                    for i, f in enumerate(feats)
                    if f.category == category and f not in row and all(pair(f, g) in allowed for g in row)
                ]
                best = next((f for gain, _, f in sorted(gains) if gain < 0 and accepts([*row, f])), None)
                if best is None:
                    break
                row.append(best)
        rows.append(row)
        open_pairs -= {pair(x, y) for x, y in itertools.combinations(row, 2)}
    return rows
