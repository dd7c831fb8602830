"""The campaign index: what the DAG asks of this invocation's campaigns.

One small owner per concern, each an attribute of CampaignIndex (the rules
call `INDEX.<owner>.<method>`):

    derived   the campaigns made from others: controls (observer effect), why, floor
    builds    the builds, sources and tools the runs need, and their rebuild triggers
    rounds    which runs a campaign starts with and may get (precision, decide, bisect)
    runs      the runs' order and what re-runs a run or its parsing
    batches   which runs one job executes (`batch`), and the batch jobs' markers
    targets   what `all` asks for
    reports   what the analysis and report rules read beyond a campaign's results

No job bodies and no I/O here (those live in `perfsnake.stages`); everything
is precomputed once per workflow parse, so the rules' input functions are
O(1) even for campaigns of tens of thousands of records.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfsnake import hostlock, layout
from perfsnake.benchmarks.base import BUILD_THREADS, Benchmark, source_key
from perfsnake.campaign import Campaign, load_campaigns, schema_error
from perfsnake.campaign.selection import select
from perfsnake.contract import FLEET_VARIABLE, CampaignInfo, Statistics
from perfsnake.errors import CampaignError
from perfsnake.figures import Figure, figure_info, parse_figures
from perfsnake.platforms import Local
from perfsnake.platforms.local import check_slurm_nodes
from perfsnake.platforms.ssh import Ssh


@dataclass(frozen=True)
class BuildEntry:
    """One build directory: the benchmark (or instrument builder) and its variables."""

    bench: Benchmark
    params: dict[str, object]
    platform: str = ""  # JSON of the platform spec when built elsewhere than here

    def spec(self) -> str:
        """What defines the build, without any path: its params (rebuild trigger)."""
        cls = type(self.bench)
        return json.dumps(
            {
                "class": f"{cls.__module__}:{cls.__qualname__}",
                "spec": self.bench.build_spec(),
                "params": self.params,
                "platform": self.platform,
            },
            sort_keys=True,
            default=str,
        )


@dataclass
class Derived:
    """The campaigns derived from others and the campaign each belongs to:
    control campaigns (the observer effect), the why and floor campaigns."""

    campaigns: dict[str, Campaign]

    def controls(self, name: str) -> list[str]:
        """The control campaigns of a campaign, in their order."""
        return [n for n, c in self.campaigns.items() if c.control_of and c.control_of[0] == name]

    def control_results(self, name: str) -> list[str]:
        return [layout.results_json(n) for n in self.controls(name)]

    def control_variants(self, name: str) -> list[str]:
        """Each control's variant (`control`, `only-<instrument>`), in the order of control_results."""
        variants = []
        for n in self.controls(name):
            of = self.campaigns[n].control_of
            assert of is not None  # controls() lists control campaigns only
            variants.append(of[1])
        return variants

    def interleaved_with(self, name: str) -> str:
        """The campaign whose runs a control campaign's interleave with (itself otherwise)."""
        c = self.campaigns[name]
        return c.control_of[0] if c.control_of else name


@dataclass
class Builds:
    """The builds, fetches and tools the campaigns' runs need, and what
    decides when a build or a fetch is redone."""

    campaigns: dict[str, Campaign]
    derived: Derived
    entries: dict[tuple[str, str], BuildEntry] = field(default_factory=dict)
    sources: dict[str, dict[str, str]] = field(default_factory=dict)
    #: campaign -> record path -> builds and tools its runs need (instruments included)
    run_needs: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    #: campaign -> the launcher and helper programs its runs need
    tools: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for c in self.campaigns.values():
            self._index(c)

    def _add(self, c: Campaign, bench: Benchmark, key: str, params: dict[str, object], platform: str) -> str:
        previous = self.entries.get((bench.key, key))
        if previous and previous.bench.fingerprint() != bench.fingerprint():
            raise CampaignError(
                c.origin, "benchmark", f"build {bench.key}/{key} is defined differently by another campaign"
            )
        self.entries[(bench.key, key)] = BuildEntry(bench, params, platform)
        return layout.build_dir(bench.key, key)

    def _index(self, c: Campaign) -> None:
        bench = c.benchmark
        if bench.needs_build():
            seen: set[str] = set()  # build keys (a fleet's hosts each build their own)
            for record in c.records:
                if record.build_key in seen:
                    continue
                seen.add(record.build_key)
                built_there = c.platform_of(record).build_tag()
                platform = json.dumps(c.platform_spec(record), sort_keys=True) if built_there else ""
                params = c.build_params(record)
                self._add(c, bench, record.build_key, params, platform)
                source = bench.source_for(params)
                if source is not None:
                    self.sources[source_key(source)] = source
        # The launcher (or nothing, when the platform builds it remotely) and
        # our helper programs: made before the campaign's first run (through
        # builds_ready), but not inputs of every run job, which would cost a
        # rule look-up per run when planning (and re-measure everything when
        # the launcher is recompiled).
        self.tools[c.name] = (
            [] if c.imported else [*c.platform.local_inputs(), *(layout.tool(t) for t in c.instruments.tools())]
        )
        needs: dict[str, list[str]] = {}
        for record in c.records:
            params = c.run_params(record)
            # Instruments that need a build of their own (the lock library) say so.
            extra = [self._add(c, b, key, p, "") for b, key, p in c.instruments.builds(params)]
            own = [layout.build_dir(bench.key, record.build_key)] if bench.needs_build() else []
            needs[record.path] = [*own, *extra]
        self.run_needs[c.name] = needs

    def source_spec(self, key: str) -> str:
        return json.dumps(self.sources[key], sort_keys=True)

    def build_inputs(self, bench_key: str, key: str) -> list[str]:
        entry = self.entries[(bench_key, key)]
        bench, source = entry.bench, entry.bench.source_for(entry.params)
        inputs = [layout.source_dir(source_key(source))] if source is not None else []
        return inputs + [layout.shipped(p) for p in bench.source_files()]

    def build_spec(self, bench_key: str, key: str) -> str:
        return self.entries[(bench_key, key)].spec()

    def run_inputs(self, name: str, record_path: str) -> list[str]:
        return self.run_needs[name][record_path]

    def campaign_builds(self, name: str) -> list[str]:
        """Every build, fetch and tool the campaign's runs (and its control
        campaigns' runs) need: all of them are made before its first measured
        run, so that runs of different builds interleave instead of running in
        blocks, one per build."""
        group = [name, *self.derived.controls(name)]
        return sorted(
            {p for n in group for p in (*self.tools[n], *(q for needs in self.run_needs[n].values() for q in needs))}
        )

    def ready_flag(self, name: str, record_path: str | None = None) -> str:
        """The marker a campaign's runs wait for (a control campaign shares the
        one of the campaign it controls, as their runs interleave). A fleet's
        runs wait for their host's builds only: a host that cannot build
        holds up no other."""
        c = self.campaigns[name]
        main = c.control_of[0] if c.control_of else c.why_of or name
        if self.campaigns[main].fleet and record_path is not None:
            return layout.host_builds_ready(main, str(c.by_path[record_path].values[FLEET_VARIABLE]))
        return layout.builds_ready(main)

    def threads(self) -> object:
        """A build job's cores on this machine: BUILD_THREADS, but one for a
        fleet's build on an ssh host, whose work runs there (this machine only
        drives ssh): with BUILD_THREADS here, a host's build could not start
        beside another host's run on `--cores` = the number of hosts, and the
        scheduler starting runs first would hold the host up until the other's
        runs were done. A constant without such builds."""
        remote = {(c.benchmark.key, r.build_key) for c in self.campaigns.values() if c.fleet for r in c.records
                  if isinstance(c.platform_of(r), Ssh)}  # fmt: skip
        if not remote:
            return BUILD_THREADS
        return lambda wildcards: 1 if (wildcards.bench, wildcards.bkey) in remote else BUILD_THREADS

    def placement(self) -> dict[str, object]:
        """A build job's resources that place it on a cluster: a fleet's Slurm
        node builds its own (`slurm_extra`, read by Slurm's executor only);
        nothing without one (a function per job costs planning time)."""
        placed = {(c.benchmark.key, r.build_key): c.platform_of(r).placement()
                  for c in self.campaigns.values() if c.fleet for r in c.records}  # fmt: skip
        if not any(placed.values()):
            return {}
        return {"slurm_extra": lambda wildcards: placed.get((wildcards.bench, wildcards.bkey), "")}

    def host_builds(self, name: str, host: str) -> list[str]:
        """The builds and tools a fleet's runs on one host need (campaign_builds, for that host)."""
        group = [name, *self.derived.controls(name)]
        needs = {q for n in group for r in self.campaigns[n].records if r.values.get(FLEET_VARIABLE) == host
                 for q in self.run_needs[n][r.path]}  # fmt: skip
        return sorted({*needs, *(p for n in group for p in self.tools[n])})


@dataclass
class Rounds:
    """Which runs a campaign starts with and which it may get: nb_runs each,
    or the adaptive rounds (precision, statistics.decide) and bisection steps
    adding to a first plan (their checkpoints: stages.precision, stages.bisect)."""

    campaigns: dict[str, Campaign]

    def first_plan(self, name: str) -> dict[str, list[int]]:
        c = self.campaigns[name]
        if c.bisect:  # the range's two ends first (perfsnake.bisect)
            return {r.path: list(range(1, c.nb_runs + 1)) for r in (c.records[0], c.records[-1])}
        return {r.path: list(range(1, c.nb_runs + 1)) for r in c.records}

    @staticmethod
    def plan_targets(name: str, plan: dict[str, list[int]]) -> list[str]:
        return [layout.status_file(name, path, i) for path, runs in plan.items() for i in runs]

    def run_targets(self, name: str) -> list[str]:
        """The status files of the runs every campaign starts with (nb_runs each)."""
        return self.plan_targets(name, self.first_plan(name))

    def possible_run_targets(self, name: str) -> list[str]:
        """Every run a campaign may get (up to precision's max_runs)."""
        c = self.campaigns[name]
        return self.plan_targets(name, {r.path: list(range(1, c.max_runs + 1)) for r in c.records})


#: sbatch's option that gives a run job its node to itself, as the benchmark
#: lock gives a run this machine (Slurm's executor reads `slurm_extra`; other
#: executors ignore it).
EXCLUSIVE = "--exclusive"


def fleet_lock(host: str) -> str:
    """The Snakemake resource that serialises the runs on a fleet's host (one of it is global)."""
    return "fleet_" + re.sub(r"[^A-Za-z0-9_]", "_", host)


@dataclass
class Runs:
    """The runs' execution order, their time limit, and what decides when a
    run, or the parsing of its output, is redone."""

    campaigns: dict[str, Campaign]
    derived: Derived
    _specs: dict[tuple[str, str], str] = field(default_factory=dict)
    _fingerprints: dict[str, str] = field(default_factory=dict)
    _orders: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)

    def imported_files(self, name: str) -> list[str]:
        """What an imported campaign's collect reads, instead of runs."""
        from perfsnake.benchmarks.imported import ImportedBenchmark

        bench = self.campaigns[name].benchmark
        assert isinstance(bench, ImportedBenchmark)
        module = bench.tool.replace("-", "_")
        return bench.input_files() + layout.package_code("importers/__init__.py", f"importers/{module}.py")

    def run_runtime(self) -> int:
        """Minutes a run job may take (a cluster's wall-time limit): the longest
        timeout_s of this invocation's campaigns plus 5 minutes for Snakemake's
        start-up in the job and the hooks; 30 minutes when a campaign has no
        timeout. One constant for every run job: a per-job function costs
        seconds of planning at 10,000 runs."""
        timeouts = [c.timeout_s for c in self.campaigns.values() if c.timeout_s is not None]
        if len(timeouts) < len(self.campaigns):
            return 30
        return math.ceil(max(timeouts) / 60) + 5

    def fleet_hosts(self) -> list[str]:
        """Every host of this invocation's fleets (`hosts:`), each once."""
        return list(dict.fromkeys(h for c in self.campaigns.values() for h in c.fleet))

    def locks(self) -> dict[str, object]:
        """A run job's lock resources. `bench_lock` serialises this machine's
        runs; a fleet's run holds instead its host's lock (fleet_lock), so
        hosts run side by side and each one run at a time. Without a fleet
        it is the constant 1 (a function per job costs planning time)."""
        hosts = self.fleet_hosts()
        if not hosts:
            return {"bench_lock": 1}

        def host_of(wildcards: Any) -> str | None:
            c = self.campaigns[wildcards.campaign]
            return str(c.by_path[wildcards.record].values[FLEET_VARIABLE]) if c.fleet else None

        def on_host(host: str | None) -> Callable[[Any], int]:
            return lambda wildcards: int(host_of(wildcards) == host)

        return {"bench_lock": on_host(None), **{fleet_lock(h): on_host(h) for h in hosts}}

    def check_slurm_fleets(self, executor: str | None) -> list[str]:
        """Each fleet of Slurm nodes against the executor and the cluster
        (platforms.local.check_slurm_nodes): its warnings, or a CampaignError."""
        lines = []
        for c in self.campaigns.values():
            nodes = [p.node for p in c.fleet.values() if isinstance(p, Local) and p.node]
            if nodes:
                lines += check_slurm_nodes(c.origin, nodes, executor)
        return lines

    def placement(self) -> dict[str, object]:
        """A run job's resources that place it on a cluster (`slurm_extra`,
        read by Slurm's executor only): a node to itself, as the benchmark lock
        keeps a machine, and a fleet's run on its Slurm node. A constant
        without Slurm nodes (a function per job costs planning time)."""
        if not any(p.placement() for c in self.campaigns.values() for p in c.fleet.values()):
            return {"slurm_extra": EXCLUSIVE}

        def extra(wildcards: Any) -> str:
            c = self.campaigns[wildcards.campaign]
            return f"{EXCLUSIVE} {c.platform_of(c.by_path[wildcards.record]).placement()}".strip()

        return {"slurm_extra": extra}

    def run_order(self, name: str, record_path: str, run: int) -> int:
        """Position of a run in the invocation's execution order (lower first).

        Control campaigns interleave with the campaign they control: slot k
        of the campaign is followed by slot k of each control."""
        main = self.derived.interleaved_with(name)
        group = [main, *self.derived.controls(main)]
        return self._base_order(main, record_path, run) * len(group) + group.index(name)

    def order_of_output(self, status: str) -> int:
        """run_order of the run job writing this status file (the scheduler
        plugin asks; a table look-up instead of a resource function per job)."""
        campaign = str(status).split("/", 2)[1]
        record, run = layout.split_status(campaign, status)
        return self.run_order(campaign, record, run)

    def _base_order(self, name: str, record_path: str, run: int) -> int:
        if name not in self._orders:
            c = self.campaigns[name]
            slots = [(r.path, i) for r in c.records for i in range(1, c.max_runs + 1)]
            order = c.data["order"]
            if order == "interleaved":
                slots.sort(key=lambda s: s[1])  # stable: record order within a round
            elif order == "random":
                random.Random(c.data["seed"]).shuffle(slots)
            offset = sorted(self.campaigns).index(name) * 10**9
            self._orders[name] = {slot: offset + k for k, slot in enumerate(slots)}
        return self._orders[name][(record_path, run)]

    def run_spec(self, name: str, record_path: str) -> str:
        """Everything that defines a run's execution; a change here re-runs it (params trigger)."""
        key = (name, record_path)
        spec = self._specs.get(key)
        if spec is None:
            c = self.campaigns[name]
            record = c.by_path[record_path]
            if name not in self._fingerprints:
                self._fingerprints[name] = c.fingerprint()
            data: dict[str, object] = {
                "record": record.values,
                "benchmark": self._fingerprints[name],
                "duration_s": c.duration_s,
            }
            if fingerprint := c.platform_of(record).fingerprint():
                data["platform"] = fingerprint
            spec = self._specs[key] = json.dumps(data, sort_keys=True, default=str)
        return spec

    def collect_spec(self, name: str) -> str:
        """What parsing depends on (metric regexes, readings, instruments, warm-up
        handling): a change re-runs collect and the analysis, never a run."""
        c = self.campaigns[name]
        data = {"benchmark": c.benchmark.fingerprint(), "instruments": c.instruments.fingerprint(),
                "warmup": Statistics.from_dict(c.data["statistics"]).warmup, "derived": c.data["derived"]}  # fmt: skip
        return json.dumps(data, sort_keys=True)


#: `batch: auto` batches a campaign whose runs take (measured) or may take (timeout_s) at most this many seconds
AUTO_SHORT_RUN_S = 1.0
#: `batch: auto`: a batch holds as many runs as fit, by their measured times or their timeouts, in this many seconds
AUTO_BATCH_SPAN_S = 60.0
#: `batch: auto`: at most this many runs per batch (a batch's marker lists them)
AUTO_MAX_BATCH = 1000


def _span_size(run_s: float) -> int:
    """Runs of `run_s` seconds a batch: as many as fit AUTO_BATCH_SPAN_S, one
    when a run is longer than AUTO_SHORT_RUN_S."""
    if run_s > AUTO_SHORT_RUN_S:
        return 1
    return max(1, min(AUTO_MAX_BATCH, int(AUTO_BATCH_SPAN_S / max(run_s, 1e-6))))


#: A run of a campaign: (record path, run number).
Slot = tuple[str, int]


@dataclass
class Batches:
    """Runs executed by one job: chunks of `batch` consecutive runs in the
    campaign's order, per round (round 1: the first plan; round r > 1: the
    runs precision's round r - 1 added). A batch job's declared output is its
    marker (layout.batch_marker), never its runs' status.json: Snakemake
    deletes a job's outputs before running it again, and a batch killed in
    its middle must keep the runs it finished. Batch size 1 is today's DAG:
    one run job per run, no markers."""

    campaigns: dict[str, Campaign]
    derived: Derived
    runs: Runs
    instrument_targets: Callable[[str], list[str]]
    #: measured run times for `batch: auto` (perfsnake.run_times.lookup; None: none, only timeouts)
    run_times: Callable[[str], tuple[float, int] | None] | None = None
    _sizes: dict[str, int] = field(default_factory=dict)
    #: how `batch: auto` chose each campaign's size (written with it by the first batch job)
    _reasons: dict[str, str] = field(default_factory=dict)
    _chunks: dict[str, list[list[Slot]]] = field(default_factory=dict)
    _specs: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.campaigns:
            self._sizes[name] = self._size(name)  # an impossible batch: key is refused here, before anything runs

    def _blocker(self, name: str) -> str | None:
        """Why the campaign's runs must stay one job each (None when they may be batched)."""
        c = self.campaigns[name]
        if c.control_of or self.derived.controls(name):
            return "its control runs interleave with its runs one by one"
        if c.bisect:
            return "bisection steps ask for single runs"
        if c.fleet:
            return "a fleet's hosts run in parallel (a batch would hold one host's runs up behind another's)"
        if self.instrument_targets(name):
            return "its instruments post-process each run (a rule per run reads its status.json)"
        return None

    def _size(self, name: str) -> int:
        c = self.campaigns[name]
        if c.imported or c.why_of or c.floor_of or c.control_of:
            return 1  # no runs, or a derived campaign whose runs other rules ask for one by one
        setting = c.data.get("batch", "auto")
        blocker = self._blocker(name)
        if setting == "auto":
            if blocker:
                return 1
            size, self._reasons[name] = self._auto_size(c)
            return size
        size = int(setting)
        if size > 1 and blocker:
            raise CampaignError(c.origin, "batch", f"{size}: not possible here, {blocker} (use batch: 1 or auto)")
        return size

    def _auto_size(self, c: Campaign) -> tuple[int, str]:
        """`batch: auto`, and why. The plan must stay the same in one results
        directory (another size re-plans, re-collects, and a batch would
        measure again runs a run job made), so first: the size its first batch
        job recorded (layout.batch_size); one job per run when runs were made
        that way already (a run directory exists). In a fresh directory: from
        the campaign's measured run time on this machine, the median of its
        latest ok runs in the results store; without any, from its timeout_s;
        else one job per run.
        Short runs (at most AUTO_SHORT_RUN_S) get as many a job as fit
        AUTO_BATCH_SPAN_S, at most AUTO_MAX_BATCH."""
        try:
            recorded = json.loads(Path(layout.batch_size(c.name)).read_text())
            return int(recorded["size"]), str(recorded.get("reason", "recorded"))
        except (OSError, ValueError, KeyError, TypeError):
            pass
        # A run job made a run directory (a batch job writes the size first):
        # not a status.json, which a run measured again lacks until it ends.
        runs = Path(layout.runs_root(c.name))
        if runs.is_dir() and any(p.name != layout.BATCH_DIR for p in runs.iterdir()):
            return 1, "runs made one job each before"
        measured = self.run_times(c.name) if self.run_times is not None else None
        if measured is not None:
            median, count = measured
            reason = f"median run {median:.3g} s of {count} in the results store"
            return _span_size(median), reason
        if c.timeout_s is not None:
            return _span_size(c.timeout_s), f"timeout_s {c.timeout_s:g}"
        return 1, "no measured run time and no timeout_s"

    def size(self, name: str) -> int:
        return self._sizes[name]

    def reason(self, name: str) -> str:
        """How `batch: auto` chose the size ("" for a size the campaign sets)."""
        return self._reasons.get(name, "")

    def batched(self, name: str) -> bool:
        return self._sizes[name] > 1

    def chunks(self, name: str, plan: dict[str, list[int]]) -> list[list[Slot]]:
        """A plan's runs in the campaign's order, cut into batches."""
        slots = sorted(((p, i) for p, runs in plan.items() for i in runs), key=lambda s: self.runs.run_order(name, *s))
        size = self._sizes[name]
        return [slots[k : k + size] for k in range(0, len(slots), size)]

    def first_chunks(self, name: str) -> list[list[Slot]]:
        if name not in self._chunks:
            self._chunks[name] = self.chunks(name, Rounds(self.campaigns).first_plan(name))
        return self._chunks[name]

    def markers(self, name: str, round_number: int, plan: dict[str, list[int]]) -> list[str]:
        """The markers of the batches of one round's runs (`plan`)."""
        chunks = self.first_chunks(name) if round_number == 1 else self.chunks(name, plan)
        return [layout.batch_marker(name, round_number, k) for k in range(1, len(chunks) + 1)]

    def first_markers(self, name: str) -> list[str]:
        return [layout.batch_marker(name, 1, k) for k in range(1, len(self.first_chunks(name)) + 1)]

    def runs_of(self, name: str, round_number: int, k: int, added: dict[str, list[int]] | None = None) -> list[Slot]:
        """The runs of batch k of a round; `added`: the runs the previous round added (round > 1)."""
        chunks = self.first_chunks(name) if round_number == 1 else self.chunks(name, added or {})
        return chunks[k - 1]

    def records_of(self, name: str, round_number: int, k: int, added: dict[str, list[int]] | None = None) -> list[str]:
        return list(dict.fromkeys(p for p, _ in self.runs_of(name, round_number, k, added)))

    def spec(self, name: str) -> str:
        """What a batch job re-runs on (its params): every record's run spec and
        what cuts the plan into batches. A re-run batch measures again only
        the runs whose own spec or builds changed (stages.run.execute_batch)."""
        if name not in self._specs:
            c = self.campaigns[name]
            data = {"size": self._sizes[name], "nb_runs": c.nb_runs, "order": c.data["order"], "seed": c.data["seed"],
                    "runs": [self.runs.run_spec(name, r.path) for r in c.records]}  # fmt: skip
            self._specs[name] = json.dumps(data, sort_keys=True)
        return self._specs[name]

    def order_of_marker(self, name: str, marker: str) -> int:
        """The scheduler's position of a batch job: its first run's (round 1);
        a later round's batches follow the round's order (only one round of a
        campaign is ever waiting)."""
        found = layout.split_batch(name, marker)
        if found is None:
            raise ValueError(marker)
        round_number, k = found
        if round_number == 1:
            return self.runs.run_order(name, *self.first_chunks(name)[k - 1][0])
        return sorted(self.campaigns).index(name) * 10**9 + k

    def runtime(self) -> int:
        """Minutes a batch job may take (a cluster's wall-time limit): the most
        runs' timeouts of a batch plus 5 minutes; 30 per run without a timeout."""
        longest = [
            self._sizes[n] * (c.timeout_s if c.timeout_s is not None else 1800.0)
            for n, c in self.campaigns.items()
            if self._sizes[n] > 1
        ]
        return math.ceil(max(longest, default=0.0) / 60) + 5


@dataclass
class Targets:
    """What `all` asks for: each campaign's products, its instruments' and the figures'."""

    campaigns: dict[str, Campaign]
    figures: dict[str, Figure]
    derived: Derived
    #: a precision campaign's runs once its rounds decided (the workflow's
    #: checkpoints, rules/common.smk): its runs' post-processing covers every
    #: round's runs, not only the first nb_runs
    final_plan: Callable[[str], dict[str, list[int]]] | None = None

    def plan(self, name: str) -> dict[str, list[int]]:
        """The runs whose post-processing the campaign's instruments owe: record path -> run numbers."""
        c = self.campaigns[name]
        if c.precision is not None and self.final_plan is not None:
            return self.final_plan(name)
        return {r.path: list(range(1, c.nb_runs + 1)) for r in c.records}

    def campaign_targets(self, name: str) -> list[str]:
        c = self.campaigns[name]
        if c.control_of:
            return [layout.results_json(name)]  # compared in the controlled campaign's overhead.csv
        if c.floor_of:
            return []  # read by its campaign's noise_floor.csv
        if c.why_of:
            return []  # its runs are asked for by the pairs the statistics pick (rules/why.smk)
        controlled = bool(self.derived.controls(name))
        targets = [layout.csv(name), layout.rows_json(name), layout.commands(name)]
        targets += [layout.summary(name), layout.comparisons(name), layout.significant(name), layout.gates(name)]
        if not c.imported:
            targets.append(layout.history_record(name))
        if controlled:
            targets.append(layout.overhead(name))
        if c.compare_with:
            targets += [*layout.compare_outputs(name), layout.page(name, "compare")]
        if c.data.get("profile_differences"):
            targets += [layout.why_report(name), layout.page(name, "why")]
        if c.data.get("noise_floor"):
            targets += [layout.noise_floor(name), layout.page(name, "floor")]
        for plot in c.plots:
            targets += [layout.plot(name, plot["name"], ext) for ext in ("svg", "png", "pdf")]
        if c.bisect:
            targets.append(layout.bisect_report(name))
        if c.precision and c.precision.get("mode") == "decide":
            targets += layout.decisions(name)
        if c.version_variables:
            targets.append(layout.regression_steps(name))
            targets += [
                layout.regression_figure(name, m, e) for m in c.regression_metrics() for e in ("svg", "png", "pdf")
            ]
        targets += layout.report_targets(
            name, controlled, any(t.endswith(".svg") for t in self.instrument_targets(name))
        )
        return targets

    def instrument_targets(self, name: str) -> list[str]:
        """Post-processing products the campaign's instruments declare (flame graphs...)."""
        c = self.campaigns[name]
        targets: list[str] = []
        if c.why_of or c.floor_of:
            return targets  # only the pairs' folded stacks and differential graphs (rules/why.smk); the floor's runs
        plan = self.plan(name) if c.instruments.all() else {}
        for instrument in c.instruments.all():
            targets += instrument.targets(name, plan, c.flamegraph_pairs)
        return targets

    def all_targets(self) -> list[str]:
        targets = [t for name in self.campaigns for t in (*self.campaign_targets(name), *self.instrument_targets(name))]
        return targets + [layout.figure(f, ext) for f in self.figures for ext in ("svg", "png", "pdf")]


@dataclass
class Reports:
    """What the analysis and report rules read of a campaign beyond its own
    results: its info (perfsnake.contract), plot and figure specs (params
    values: edits redraw), and the files its comparisons and gates need."""

    campaigns: dict[str, Campaign]
    figures: dict[str, Figure]

    def campaign_info(self, name: str) -> str:
        return campaign_info(self.campaigns[name]).to_json()

    def plot_spec(self, name: str, plot: str) -> str:
        for p in self.campaigns[name].plots:
            if p["name"] == plot:
                return json.dumps(p, sort_keys=True)
        raise KeyError(plot)

    def figure_rows(self, figure: str) -> list[str]:
        """The rows files a figure over several campaigns reads, in its campaigns' order."""
        return [layout.rows_json(name) for name in self.figures[figure].campaigns]

    def figure_spec(self, figure: str) -> str:
        """Parameters of a figure over several campaigns (a params value: edits redraw it)."""
        f = self.figures[figure]
        info = figure_info(f, self.campaigns)
        return json.dumps({"campaigns": f.campaigns, "spec": f.spec, "info": info}, sort_keys=True)

    def compare_inputs(self, name: str) -> list[str]:
        """The files `compare_with` reads: each directory's CSV, or the zip."""
        out = []
        for raw in self.campaigns[name].compare_with:
            path = Path(raw)
            out.append(str(path / f"{path.name}.csv") if path.is_dir() else raw)
        return out

    def floor_inputs(self, name: str) -> list[str]:
        """The noise floor the campaign's comparisons and gates are marked with, if it has one."""
        return [layout.noise_floor(name)] if self.campaigns[name].data.get("noise_floor") else []

    def baseline_inputs(self, name: str) -> list[str]:
        """Earlier result directories the campaign's gates compare with (their results.json)."""
        from perfsnake.gates import baseline_dirs

        return [f"{d}/{name}/results.json" for d in baseline_dirs(self.campaigns[name].references)]

    def baseline_state_inputs(self, name: str) -> list[str]:
        """The CSVs whose # metadata tell the machine states a directory gate
        compares (this campaign's, then each earlier directory's)."""
        from perfsnake.gates import baseline_dirs

        dirs = baseline_dirs(self.campaigns[name].references)
        return [layout.csv(name), *(f"{d}/{name}/{name}.csv" for d in dirs)] if dirs else []

    def history_gate_inputs(self, name: str) -> list[str]:
        """The campaign's aggregated JSON and its description when a gate
        compares with its history (perfsnake.history.sources reads both)."""
        refs = self.campaigns[name].references
        wanted = any(r.get("kind") == "history" for r in refs)
        return [layout.rows_json(name), layout.campaign_json(name)] if wanted else []


@dataclass
class CampaignIndex:
    """The campaigns of this invocation and the owners of every look-up the rules need."""

    campaigns: dict[str, Campaign]
    flamegraph_dir: str | None = None
    figures: dict[str, Figure] = field(default_factory=dict)
    run_times: Callable[[str], tuple[float, int] | None] | None = None  # for `batch: auto` (Batches)
    derived: Derived = field(init=False)
    builds: Builds = field(init=False)
    rounds: Rounds = field(init=False)
    runs: Runs = field(init=False)
    batches: Batches = field(init=False)
    targets: Targets = field(init=False)
    reports: Reports = field(init=False)

    def __post_init__(self) -> None:
        self.derived = Derived(self.campaigns)
        self.builds = Builds(self.campaigns, self.derived)  # refuses a build two campaigns define differently
        self.rounds = Rounds(self.campaigns)
        self.runs = Runs(self.campaigns, self.derived)
        self.targets = Targets(self.campaigns, self.figures, self.derived)
        self.batches = Batches(self.campaigns, self.derived, self.runs, self.targets.instrument_targets,
                               self.run_times)  # fmt: skip
        self.reports = Reports(self.campaigns, self.figures)

    # The invocation-wide questions modules outside the rules ask (the run
    # stage, the artifact, the tests): each the answer of its owner.
    def controls(self, name: str) -> list[str]:
        return self.derived.controls(name)

    def all_targets(self) -> list[str]:
        return self.targets.all_targets()

    def order_of_output(self, output: str) -> int:
        """The scheduler's position of the job writing `output`: a run's status
        file or a batch's marker (the scheduler plugin asks)."""
        campaign = str(output).split("/", 2)[1]
        if layout.split_batch(campaign, output) is not None:
            return self.batches.order_of_marker(campaign, output)
        return self.runs.order_of_output(output)

    def campaign_targets(self, name: str) -> list[str]:
        return self.targets.campaign_targets(name)

    def instrument_targets(self, name: str) -> list[str]:
        return self.targets.instrument_targets(name)

    def run_targets(self, name: str) -> list[str]:
        return self.rounds.run_targets(name)

    def possible_run_targets(self, name: str) -> list[str]:
        return self.rounds.possible_run_targets(name)

    def campaign_builds(self, name: str) -> list[str]:
        return self.builds.campaign_builds(name)


def campaign_files(config: dict) -> list[str]:
    error = schema_error(config, "config.schema.yaml", "config")
    if error:
        raise error
    if config.get("campaign"):
        return [str(config["campaign"])]
    files = list(config.get("campaigns") or [])
    if not files:
        raise CampaignError("config", "campaigns", "no campaign listed (or pass --config campaign=PATH)")
    return files


def index_from_config(
    config: dict, measuring: bool = True, run_times: Callable[[str], tuple[float, int] | None] | None = None
) -> CampaignIndex:
    """The invocation's campaigns. `measuring=False` (commands that only read
    results: summary, check, failed, artifact): the machine's state and the
    benchmark lock are not required, since nothing runs. `run_times`: the
    measured run times `batch: auto` sizes a fresh directory's batches from
    (the workflow's: perfsnake.run_times.lookup)."""
    loaded = {c.name: c for c in load_campaigns(campaign_files(config), check_machine=measuring)}
    campaigns = select(loaded, config, Path.cwd(), loud=measuring)
    hostlock.configure(config.get("host_lock"))
    problem = hostlock.problem() if measuring else None
    if problem:
        raise CampaignError("config", "host_lock", problem)
    # A figure drawing a campaign not chosen (only, tags) waits for an invocation that runs it.
    left = set(loaded) - set(campaigns)
    chosen = [f for f in config.get("figures") or [] if not left & set(f.get("campaigns") or [])]
    figures = {f.name: f for f in parse_figures(chosen, campaigns)}
    return CampaignIndex(campaigns, config.get("flamegraph_dir"), figures, run_times)


def campaign_info(c: Campaign) -> CampaignInfo:
    """What aggregation, analysis and plots need to know about a campaign."""
    from perfsnake.escape import value_text

    return CampaignInfo(
        name=c.name,
        file=str(c.file),
        sha256=c.sha256,
        benchmark=c.benchmark.name,
        platform=c.platform.kind,
        variables=c.variables,
        metrics=c.metric_names(),
        pretty=c.pretty,
        nb_runs=c.nb_runs,
        records=len(c.records),
        statistics=Statistics.from_dict(c.data["statistics"]),
        references=c.references,
        versions=c.version_variables,
        units=c.benchmark.units(),
        regression_metrics=c.regression_metrics() if c.version_variables else [],
        values={v: list(dict.fromkeys(value_text(r.values[v]) for r in c.records)) for v in c.variables},
        imported=imported_metadata(c),
        profile_differences=c.data.get("profile_differences"),
        requires=c.data.get("requires") or None,
        hosts=list(c.fleet),
        selection=c.selection,
    )


def imported_metadata(c: Campaign) -> dict[str, str] | None:
    """The `#` lines of an imported campaign: the tool, its files and what it recorded."""
    from perfsnake.benchmarks.imported import ImportedBenchmark

    if not isinstance(c.benchmark, ImportedBenchmark):
        return None
    data = c.benchmark.imported
    return {"imported_tool": data.tool, "imported_files": " ".join(map(str, c.benchmark.files)),
            "hostname": "unknown (not recorded by the tool)", **data.context}  # fmt: skip
