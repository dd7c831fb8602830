"""What the Snakemake rules ask of the campaigns: targets, inputs, params.

Everything is precomputed in dictionaries once per workflow parse, so input
functions are O(1) even for campaigns with tens of thousands of records.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from perfsnake import ROOT, flamegraph, precision, runner
from perfsnake.benchmarks.base import Benchmark, BuildContext, RunContext, source_key
from perfsnake.instruments.base import Context
from perfsnake.instruments.locks import Lock
from perfsnake.collect import collect_run, write_result
from perfsnake.campaign import Campaign, load_campaigns, load_schema, schema_error
from perfsnake.errors import CampaignError
from perfsnake.escape import value_text

CAMPAIGN_RE = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
RECORD_RE = r"[^/]+(/[^/]+)*?"

RESULTS = "results"

#: Modules whose edits re-run collect (parsers) but never the measurements.
_PKG = ROOT / "perfsnake"
COLLECT_CODE = sorted(str(p) for p in (_PKG / "benchmarks").glob("*.py")) + [str(_PKG / "collect.py")]
AGGREGATE_CODE = [str(_PKG / "aggregate.py"), str(_PKG / "metadata.py")]
ANALYSIS_CODE = [str(_PKG / "analysis.py"), str(_PKG / "stats.py")]
PLOT_CODE = [str(_PKG / "plots.py"), str(_PKG / "stats.py")]


def run_dir(campaign: str, record_path: str, run: int) -> str:
    return f"{RESULTS}/{campaign}/runs/{record_path}/run-{run}"


class Plan:
    """The campaigns of this invocation and every lookup the rules need."""

    def __init__(self, campaigns: list[Campaign], flamegraph_dir: str | None = None) -> None:
        self.campaigns = {c.name: c for c in campaigns}
        # Snakemake paths are relative to the working directory; command.sh
        # and the builds use absolute ones so they can be re-run from anywhere.
        self.workdir = Path.cwd()
        self.builds: dict[tuple[str, str], tuple[Benchmark, dict[str, object]]] = {}
        #: the platform spec (JSON) of builds made elsewhere than here
        self.build_platforms: dict[tuple[str, str], str] = {}
        self.sources: dict[str, dict[str, str]] = {}
        self._existing: dict[str, int] = {}
        self._specs: dict[tuple[str, str], str] = {}
        self._orders: dict[str, dict[tuple[str, int], int]] = {}
        self._instrument_builds: dict[str, dict[str, list[str]]] = {}
        self.flame_tools = None
        for c in campaigns:
            if c.instruments.uses("perf_record"):
                self.flame_tools = flamegraph.require_tools(c.origin, flamegraph_dir)
        for c in campaigns:
            bench = c.benchmark
            if bench.source is not None:
                self.sources[source_key(bench.source)] = bench.source
            if bench.needs_build():
                for key, params in c.build_keys().items():
                    previous = self.builds.get((bench.key, key))
                    if previous and previous[0].fingerprint() != bench.fingerprint():
                        raise CampaignError(c.origin, "benchmark", f"build {bench.key}/{key} is defined differently by another campaign")
                    self.builds[(bench.key, key)] = (bench, params)
                    if c.platform.build_tag():
                        self.build_platforms[(bench.key, key)] = json.dumps(c.data["platform"], sort_keys=True)
            # Instruments that need building (the lock library), per record.
            self._instrument_builds[c.name] = {}
            for record in c.records:
                needed = []
                for lib in c.instruments.libs:
                    if isinstance(lib, Lock):
                        found = lib.build_params(c.run_params(record))
                        if found:
                            key, params = found
                            self.builds[(lib.builder.key, key)] = (lib.builder, params)
                            needed.append(f"resources/builds/{lib.builder.key}/{key}")
                needed += [f"resources/bin/{tool}" for tool in c.instruments.tools()]
                self._instrument_builds[c.name][record.path] = needed

    # ---- targets --------------------------------------------------------------
    def campaign_targets(self, name: str) -> list[str]:
        c = self.campaigns[name]
        base = f"{RESULTS}/{name}"
        if c.control_of:
            return [f"{base}/results.json"]  # compared in the controlled campaign's overhead.csv
        targets = [f"{base}/{name}.csv", f"{base}/{name}.json", f"{base}/commands.sh"]
        targets += [f"{base}/summary.csv", f"{base}/comparisons.csv", f"{base}/significant.md"]
        if self.controls(name):
            targets.append(f"{base}/overhead.csv")
        for plot in c.plots:
            targets += [f"{base}/plots/{plot['name']}.svg", f"{base}/plots/{plot['name']}.png"]
        return targets

    def all_targets(self) -> list[str]:
        return [t for name in self.campaigns for t in (*self.campaign_targets(name), *self.profile_targets(name))]

    # ---- profiling post-processing ---------------------------------------------------
    def profile_targets(self, name: str) -> list[str]:
        """perf report, flame graphs per run, folded stacks per record, declared diffs."""
        c = self.campaigns[name]
        if not c.instruments.uses("perf_record"):
            return []
        targets = []
        for r in c.records:
            for i in range(1, c.nb_runs + 1):
                rdir = run_dir(name, r.path, i)
                targets += [f"{rdir}/perf.report", f"{rdir}/flamegraph.svg"]
            targets.append(f"{RESULTS}/{name}/folded/{flamegraph.flat(r.path)}.folded")
        targets += [self.diff_target(name, a, b) for a, b in c.compare]
        return targets

    def diff_target(self, name: str, a: str, b: str) -> str:
        return f"{RESULTS}/{name}/diff/{flamegraph.flat(a)}~vs~{flamegraph.flat(b)}.svg"

    def folded_inputs(self, name: str, flat_record: str) -> list[str]:
        c = self.campaigns[name]
        record = flamegraph.unflat(flat_record)
        if record not in c.by_path:
            raise KeyError(f"{name} has no record {record}")
        return [f"{run_dir(name, record, i)}/perf.folded" for i in range(1, c.nb_runs + 1)]

    def flame_tool(self, which: str) -> str:
        if self.flame_tools is None:
            raise CampaignError("config", "wrappers", "no flame-graph tools")
        return str(getattr(self.flame_tools, which))

    def flame_options(self, name: str) -> str:
        return flamegraph.options(self.campaigns[name].data["flamegraph"])

    def run_targets(self, name: str) -> list[str]:
        """The status files of the runs every campaign starts with (nb_runs each)."""
        return self.plan_targets(name, self.first_plan(name))

    def possible_run_targets(self, name: str) -> list[str]:
        """Every run a campaign may get (up to precision's max_runs)."""
        c = self.campaigns[name]
        return self.plan_targets(name, {r.path: list(range(1, c.max_runs + 1)) for r in c.records})

    # ---- run until precise ---------------------------------------------------------
    def first_plan(self, name: str) -> dict[str, list[int]]:
        c = self.campaigns[name]
        return {r.path: list(range(1, c.nb_runs + 1)) for r in c.records}

    @staticmethod
    def plan_targets(name: str, plan: dict[str, list[int]]) -> list[str]:
        return [f"{run_dir(name, path, i)}/status.json" for path, runs in plan.items() for i in runs]

    def precision_decide(self, name: str, round_number: int, status_files: list[str], output: str, log_file: str) -> None:
        """Checkpoint of one round: which records need more runs, and how many."""
        c = self.campaigns[name]
        assert c.precision is not None
        plan: dict[str, list[int]] = {}
        values: dict[str, list[float]] = {}
        metric = c.precision["metric"]
        for status in status_files:
            path, run = split_run_path(name, status)
            plan.setdefault(path, []).append(run)
            record = c.by_path[path]
            result = collect_run(Path(status).parent, c.benchmark, c.run_params(record), record.values, name, run, c.instruments)
            value = result["wall_s"] if metric == "wall_s" else result["metrics"].get(metric)  # type: ignore[union-attr]
            if result["status"] == "ok" and isinstance(value, (int, float)):
                values.setdefault(path, []).append(float(value))
        decision = precision.decide(values, {p: sorted(r) for p, r in plan.items()}, c.precision, round_number)
        Path(output).write_text(json.dumps(decision, indent=1) + "\n")
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        Path(log_file).write_text("".join(
            f"{path}: {len(r['runs'])} runs, relative half-width {r['rel_ci']}, met={r['met']}, adding {len(r['add'])}\n"
            for path, r in decision["records"].items()
        ))  # fmt: skip

    # ---- fetch and build ---------------------------------------------------------
    def source_spec(self, key: str) -> str:
        return json.dumps(self.sources[key], sort_keys=True)

    def _build_dir(self, bench: Benchmark, key: str) -> Path:
        return self.workdir / "resources" / "builds" / bench.key / key

    def _src_dir(self, bench: Benchmark) -> Path | None:
        if bench.source is None:
            return None
        return self.workdir / "resources" / "src" / source_key(bench.source)

    def build_inputs(self, bench_key: str, key: str) -> list[str]:
        bench, _params = self.builds[(bench_key, key)]
        inputs = []
        if bench.source is not None:
            inputs.append(f"resources/src/{source_key(bench.source)}")
        inputs += [str(p) for p in bench.source_files()]
        return inputs

    def build_platform(self, bench_key: str, key: str) -> str:
        return self.build_platforms.get((bench_key, key), "")

    def build_spec(self, bench_key: str, key: str, threads: int = 2) -> str:
        bench, params = self.builds[(bench_key, key)]
        ctx = BuildContext(params, self._build_dir(bench, key), self._src_dir(bench), threads)
        return bench.build_script(ctx)

    # ---- run ---------------------------------------------------------------------
    def launcher(self, name: str) -> list[str]:
        """What a run needs built here (over ssh, the launcher is built there)."""
        return self.campaigns[name].platform.local_inputs()

    def run_runtime(self, name: str) -> int:
        """Minutes a run job may take (a cluster's wall-time limit): timeout_s
        plus 5 minutes for Snakemake's start-up in the job and the hooks;
        30 minutes for a campaign without a timeout."""
        timeout_s = self.campaigns[name].timeout_s
        return 30 if timeout_s is None else math.ceil(timeout_s / 60) + 5

    def run_build_input(self, name: str, record_path: str) -> list[str]:
        c = self.campaigns[name]
        builds = self._instrument_builds[name][record_path]
        if not c.benchmark.needs_build():
            return builds
        return [f"resources/builds/{c.benchmark.key}/{c.by_path[record_path].build_key}", *builds]

    def controls(self, name: str) -> list[str]:
        """The control campaigns of a campaign, in their order."""
        return [n for n, c in self.campaigns.items() if c.control_of and c.control_of[0] == name]

    def run_order(self, name: str, record_path: str, run: int) -> int:
        """Position of a run in its campaign's execution order (lower first).

        Control campaigns interleave with the campaign they control: slot k
        of the campaign is followed by slot k of each control."""
        c = self.campaigns[name]
        main = c.control_of[0] if c.control_of else name
        group = [main, *self.controls(main)]
        return self._base_order(main, record_path, run) * len(group) + group.index(name)

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
        """Everything that defines a run; a change here re-runs it (params trigger)."""
        key = (name, record_path)
        spec = self._specs.get(key)
        if spec is None:
            spec = self._specs[key] = self._make_spec(name, record_path)
        return spec

    def _make_spec(self, name: str, record_path: str) -> str:
        c = self.campaigns[name]
        record = c.by_path[record_path]
        spec = {"record": record.values, "benchmark": c.fingerprint(), "duration_s": c.duration_s}
        if c.platform.fingerprint():
            spec["platform"] = c.platform.fingerprint()
        return json.dumps(spec, sort_keys=True, default=str)

    def run_script(self, name: str, record_path: str, run: int) -> tuple[Path, str]:
        c = self.campaigns[name]
        record = c.by_path[record_path]
        bench = c.benchmark
        rdir = self.workdir / run_dir(name, record_path, run)
        build_dir = self._build_dir(bench, record.build_key) if bench.needs_build() else None
        params = c.run_params(record)
        ctx = RunContext(params, build_dir, rdir, c.duration_s, self._src_dir(bench))
        header = {"campaign": name, "record": record_path, "run": run}
        body = c.instruments.compose(Context(params, rdir, self.workdir), bench.run_command(ctx))
        return rdir, runner.command_text(rdir, body, header=header)

    def execute_run(self, name: str, record_path: str, run: int, status_file: str) -> None:
        c = self.campaigns[name]
        rdir, script = self.run_script(name, record_path, run)
        total = len(c.records) * c.max_runs
        if name not in self._existing:
            self._existing[name] = runner.count_done(self.possible_run_targets(name))
        progress = runner.progress_for(name, total, self._existing[name])
        params = c.run_params(c.by_path[record_path])
        ctx = Context(params, rdir, self.workdir)

        def launch(run_dir: Path, text: str, timeout_s: float | None) -> int:
            return c.platform.launch(self.workdir, run_dir, text, timeout_s, params)

        runner.execute(launch, rdir, script, c.timeout_s, progress, name, f"{record_path}/run-{run}",
                       hooks=(c.instruments.pre, c.instruments.post, ctx))  # fmt: skip

    # ---- collect, aggregate, plots -------------------------------------------------
    def collect(self, name: str, status_files: list[str], results_file: str, log_file: str, decision_file: str | None = None) -> None:
        """Parse every run of the campaign into its result.json and results_file."""
        c = self.campaigns[name]
        lines = []
        results = []
        decision = json.loads(Path(decision_file).read_text())["records"] if decision_file else {}
        for status in status_files:
            path, i = split_run_path(name, status)
            record = c.by_path[path]
            rdir = self.workdir / run_dir(name, record.path, i)
            result = collect_run(rdir, c.benchmark, c.run_params(record), record.values, name, i, c.instruments,
                                 warmup=c.data["statistics"].get("warmup", "changepoint"))  # fmt: skip
            if path in decision:
                result["precision"] = {k: decision[path][k] for k in ("met", "rel_ci", "ok")}
            write_result(rdir, result)
            results.append(result)
            lines.append(f"{record.path}/run-{i}: {result['status']} {json.dumps(result['metrics'], default=str)}\n")
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        Path(log_file).write_text("".join(lines))
        tmp = Path(results_file + ".tmp")
        tmp.write_text(json.dumps(results, default=str) + "\n")
        tmp.replace(results_file)

    def control_results(self, name: str) -> list[str]:
        return [f"{RESULTS}/{n}/results.json" for n in self.controls(name)]

    def control_variants(self, name: str) -> list[str]:
        return [self.campaigns[n].control_of[1] for n in self.controls(name)]  # type: ignore[index]

    def campaign_info(self, name: str) -> str:
        return json.dumps(campaign_info(self.campaigns[name]), sort_keys=True)

    def plot_spec(self, name: str, plot: str) -> str:
        c = self.campaigns[name]
        for p in c.plots:
            if p["name"] == plot:
                return json.dumps(p, sort_keys=True)
        raise KeyError(plot)


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


def plan_from_config(config: dict) -> Plan:
    _ = load_schema("config.schema.yaml")
    return Plan(load_campaigns(campaign_files(config)), config.get("flamegraph_dir"))


def campaign_info(c: Campaign) -> dict[str, object]:
    """What aggregation and plots need to know about a campaign."""
    return {
        "name": c.name,
        "file": str(c.file),
        "sha256": c.sha256,
        "benchmark": c.benchmark.name,
        "platform": c.platform.kind,
        "variables": c.variables,
        "metrics": c.metric_names(),
        "pretty": c.pretty,
        "nb_runs": c.nb_runs,
        "records": len(c.records),
        "statistics": c.data["statistics"],
        "values": {v: list(dict.fromkeys(value_text(r.values[v]) for r in c.records)) for v in c.variables},
    }


def cache_signature(func) -> None:  # type: ignore[no-untyped-def]
    """Precompute the signature Snakemake would inspect on every call."""
    import inspect

    func._overwrite_params = inspect.signature(func).parameters


def split_run_path(campaign: str, status_file: str) -> tuple[str, int]:
    """(record path, run index) of results/<campaign>/runs/<record>/run-<i>/status.json."""
    prefix = f"{RESULTS}/{campaign}/runs/"
    rel = str(status_file)[str(status_file).index(prefix) + len(prefix) :]
    record, _, rest = rel.rpartition("/run-")
    return record, int(rest.split("/", 1)[0])
