"""Every ready campaign runs (issue 31, item 7): each file of config/campaigns/
and both configurations of config/figures/, shrunk (one run per record, the
first value of each variable, short durations, small sizes, the smallest
legal settings of the adaptive ones), through the real workflow, to `ok`
with every metric of its benchmark parsed.

One Snakemake invocation runs them all (`campaigns:` and `figures:` of one
configuration, --keep-going), so its start-up, the LevelDB build and the
builds campaigns share are paid once; each campaign is then checked on its
own, one test case each, so every campaign that no longer runs is named.
A campaign that needs what this machine lacks must be refused in one line
by perfsnake itself (REFUSED).

    make smoke   (pytest -m ready tests/test_ready_campaigns.py)
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers import IMAGE, ROOT, build_image, snakemake

from perfsnake.campaign_csv import read_csv

pytestmark = pytest.mark.ready

CAMPAIGNS = sorted((ROOT / "config" / "campaigns").glob("*.yaml"))
FIGURE_CONFIGS = sorted((ROOT / "config" / "figures").glob("*.yaml"))

# ---- shrinking, generic by key ------------------------------------------------------------

#: Top-level keys: at most this value (set when absent; nb_runs not where
#: the campaign has no fixed run count: precision, statistics.decide).
TOP = {
    "nb_runs": 1,
    "duration_s": 0.5,  # whole-second tools (stress-ng, pgbench, sysbench, fio, cyclictest) round up to 1 s
    "timeout_s": 60,
}
#: Benchmarks whose first run does more than its work: at most this timeout
#: instead. lmbench's first run on a machine calibrates its timing interval
#: (5-90 s, docs/lmbench.md "Calibration") before it measures.
TIMEOUT_FLOOR = {"lmbench": 240}
#: Variables (in `variables:` lists and `records:`): at most this value.
SMALL: dict[str, object] = {
    "reads": 5000,  # db_bench operations per thread (leveldb, rocksdb)
    "rnum": 20000,  # Kyoto Cabinet records per thread: phases of a few ms (it prints ms)
    "requests": 5000,  # redis-benchmark requests
    "keys": 2000,  # memcslap keys per client thread
    "size_kb": 1024,  # lmbench's arrays, buffers and files
    "repetitions": 3,  # lmbench's timed intervals
    "size": "4M",  # fio's file
}
#: Variables that keep their first two values: the first is the instrument's
#: no-op (pthread preloads nothing, glibc neither, "" pins nothing, normal
#: and unpinned place nothing), so one value would not exercise it.
KEEP_TWO = {"lock", "allocator", "cpu_list", "placement"}
#: Variables that keep every value: each lmbench `micro` is another program,
#: and every program a ready campaign names must pass through Snakemake.
KEEP_ALL = {"micro"}
#: Adaptive settings: their smallest legal values.
ADAPTIVE = {
    ("precision",): {"min_runs": 2, "max_runs": 3},  # one round, one more run at most (no ready campaign yet)
    ("statistics", "decide"): {"budget_s": 1},  # no round after the first look (15 runs, the design's)
    ("profile_differences",): {"top": 1, "runs": 1},
    ("noise_floor",): {"layouts": 2, "runs": 2},  # two runs of a build: the within-layout noise
}


@dataclass(frozen=True)
class Override:
    """A campaign that the generic rules would make meaningless."""

    changes: dict[str, object]  # top-level keys set; "variables.X": N keeps X's first N values
    reason: str


OVERRIDES = {
    "decide_early": Override(
        {"variables.n": 2}, "statistics.decide compares records one variable apart: two values of n, not one"
    ),
    "why_it_changed": Override(
        {"variables.variant": 2, "nb_runs": 3},
        "the why runs profile a significant difference: plain and hot, 3 runs each for Welch's test to find it",
    ),
    "noise_floor": Override(
        {"variables.work": 2}, "the floor marks the comparison of its two records (2 % more work): keep both"
    ),
    "bisect_heater": Override(
        {"nb_runs": 2}, "a step decides on 2 ok runs of each end at least: with 1 the bisection stops undecided"
    ),
    "flamegraph_leveldb": Override(
        {"variables.lock": 2}, "flamegraph_pairs: draws the differential graph of cas against mcs, its first two locks"
    ),
    "allocators_leveldb": Override(
        {"variables.allocator": 3}, "the allocators are the experiment: each preloads its own library"
    ),
}


def small(key: str, value: object) -> object:
    limit = SMALL.get(key)
    if limit is None:
        return value
    if isinstance(limit, str):
        return limit
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return min(value, limit)
    return value


def shrink(data: dict) -> dict:
    """A ready campaign, shrunk by the rules above (and its OVERRIDES entry)."""
    data = copy.deepcopy(data)
    override = OVERRIDES.get(data["name"])
    keep = {
        k.split(".", 1)[1]: n for k, n in (override.changes if override else {}).items() if k.startswith("variables.")
    }
    benchmark = data["benchmark"]["type"] if isinstance(data["benchmark"], dict) else data["benchmark"]
    imported = benchmark == "imported"
    for key, limit in TOP.items():
        if imported:
            break  # nothing runs: its runs are the files'
        if key == "nb_runs" and ("precision" in data or "decide" in (data.get("statistics") or {})):
            continue
        floor = TIMEOUT_FLOOR.get(benchmark, limit) if key == "timeout_s" else limit
        data[key] = min(data.get(key) or limit, floor)
    variables = data.get("variables") or {}
    for var, values in variables.items():
        if not isinstance(values, list):
            continue  # a generator (`cpu: all`) or a commit range: kept
        count = keep.get(var, len(values) if var in KEEP_ALL else 2 if var in KEEP_TWO else 1)
        variables[var] = list(dict.fromkeys(small(var, v) for v in values[:count]))
    for var, labels in (data.get("pretty") or {}).items():  # labels of values kept only
        if isinstance(variables.get(var), list):
            data["pretty"][var] = {k: v for k, v in labels.items() if k in map(str, variables[var])}
    records = []
    for record in data.get("records") or []:
        shrunk = {var: small(var, v) for var, v in record.items()}
        if shrunk not in records:
            records.append(shrunk)
    if records:
        data["records"] = records
    for path, settings in ADAPTIVE.items():
        node = data
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.update(settings)
    if override:
        data.update({k: v for k, v in override.changes.items() if not k.startswith("variables.")})
    return data


# ---- what the machine may lack ---------------------------------------------------------------


def _tool_fails(argv: list[str]) -> str | None:
    """What running `argv` says when it fails here (None: it works): the
    machine asked directly, not through perfsnake's own probe."""
    if not shutil.which(argv[0]):
        return f"{argv[0]} is not installed"
    with tempfile.TemporaryDirectory() as scratch:
        proc = subprocess.run(argv, cwd=scratch, capture_output=True, text=True, timeout=120, check=False)
    return None if proc.returncode == 0 else f"{' '.join(argv)}: {proc.stderr.strip()[-200:]}"


def _perf_lacking() -> str | None:
    return _tool_fails(["perf", "stat", "-e", "task-clock", "true"]) or _tool_fails(
        ["perf", "record", "-e", "task-clock", "-o", "perf.data", "true"]
    )


def _sched_lacking() -> str | None:
    return _tool_fails(
        ["perf", "record", "-a", "-e", "sched:sched_switch,sched:sched_waking", "-o", "perf.data", "true"]
    )


@dataclass(frozen=True)
class Refusal:
    key: str  # the key the one-line refusal names (its start)
    reason: str  # what the machine lacks then
    lacking: Callable[[], str | None]  # what of it this machine lacks, asked of the machine (None: nothing)


_SCHED = "sched_timeline records every CPU's scheduler tracepoints: root (or perf_event_paranoid -1) and tracefs"
_PERF = "perf record or stat of the runs: root or perf_event_paranoid <= 2"
#: Campaigns that perfsnake may refuse on a machine that lacks what they
#: need beyond `make setup` (the kernel's tracepoints, perf permissions, the
#: container image). Refused (when the shrunk campaign loads), the refusal
#: must be one line naming this key; not refused, the campaign must run to
#: ok. Any other refusal fails (a package `make setup` installs is not
#: something the machine may lack). None needs a hardware PMU: the perf stat
#: campaign keeps its hardware events' cells empty without one.
REFUSED = {
    "container_leveldb": Refusal(
        "platform",
        f"podman and the local image {IMAGE} (the fixture builds it with scripts/setup/container.sh)",
        lambda: _tool_fails(["podman", "image", "exists", IMAGE]),
    ),
    "placement_heater_timeline": Refusal("wrappers", _SCHED, _sched_lacking),
    "schedulers_leveldb_timeline": Refusal("wrappers", _SCHED, _sched_lacking),
    "locks_leveldb_breakdown": Refusal("wrappers", f"{_SCHED}; {_PERF}", lambda: _sched_lacking() or _perf_lacking()),
    "flamegraph_leveldb": Refusal("wrappers", _PERF, _perf_lacking),
    "perfstat_leveldb": Refusal("wrappers", _PERF, _perf_lacking),
    "why_it_changed": Refusal("profile_differences", _PERF, _perf_lacking),
}


def _requires_unmet(name: str) -> str | None:
    from perfsnake.machine import requirements

    requires = yaml.safe_load(_names()[name].read_text()).get("requires") or {}
    unmet = requirements.unmet(requires)
    return "; ".join(f"{key}: {why}" for key, why in unmet) or None


#: Any campaign: its `requires:` (the machine state it needs) may be unmet here.
REFUSED_ANY = Refusal("requires", "the machine state of its requires: (governor, turbo, SMT, ...)", lambda: None)


# ---- the shared invocation --------------------------------------------------------------------


def _figures() -> list[dict]:
    """Both figure configurations, as one configuration's figures: each
    figure names its configuration's campaigns (by default a figure draws
    every campaign of the invocation, here all of them)."""
    figures = []
    for path in FIGURE_CONFIGS:
        config = yaml.safe_load(path.read_text())
        names = [yaml.safe_load((ROOT / c).read_text())["name"] for c in config["campaigns"]]
        figures += [{"campaigns": names, **figure} for figure in config.get("figures") or []]
    return figures


#: Run in the scratch directory (campaigns give paths relative to it): each
#: shrunk campaign loaded alone (refused ones set apart), then the plan of
#: the others, what each campaign should produce.
FACTS = """
import json, sys, yaml
from perfsnake import planning
from perfsnake.campaign import load_campaign
from perfsnake.errors import CampaignError
config = yaml.safe_load(open(sys.argv[1]))
refused = {}
for file in list(config["campaigns"]):
    try:
        load_campaign(file)
    except CampaignError as exc:
        refused[yaml.safe_load(open(file))["name"]] = str(exc)
        config["campaigns"].remove(file)
# A figure over a refused campaign is not drawn (its test says so).
config["figures"] = [f for f in config["figures"] if not set(f["campaigns"]) & set(refused)]
yaml.safe_dump(config, open(sys.argv[1], "w"), sort_keys=False)
index = planning.index_from_config(config)
facts = {}
for name, c in index.campaigns.items():
    facts[name] = {
        "benchmark": c.benchmark.name, "metrics": list(c.benchmark.metrics), "records": len(c.records),
        "variables": list(c.variables), "nb_runs": c.nb_runs, "adaptive": bool(c.bisect or c.precision),
        "targets": [*index.campaign_targets(name), *index.instrument_targets(name)],
        "derived": [d for d, o in index.campaigns.items() if name in (o.why_of, o.floor_of, o.control_of)],
    }
figures = {f: [t for t in index.all_targets() if t.startswith("results/figures/" + f + ".")] for f in index.figures}
print(json.dumps({"campaigns": facts, "figures": figures, "refused": refused}))
"""


@dataclass
class Ready:
    workdir: Path
    proc: subprocess.CompletedProcess
    facts: dict  # campaign -> what it should produce
    figures: dict  # figure -> its files
    refused: dict  # campaign -> perfsnake's refusal
    image_problem: str | None
    wall_s: float

    def log(self) -> str:
        return self.proc.stdout + self.proc.stderr


def _names() -> dict[str, Path]:
    return {yaml.safe_load(p.read_text())["name"]: p for p in CAMPAIGNS}


@pytest.fixture(scope="module")
def ready(tmp_path_factory) -> Ready:
    workdir = tmp_path_factory.mktemp("ready")
    # What campaigns name by paths relative to the checkout.
    subprocess.run(["bash", str(ROOT / "scripts/setup/demo_repo.sh")], check=True, capture_output=True)
    (workdir / "resources/demo").mkdir(parents=True)
    (workdir / "resources/demo/heater-history").symlink_to(ROOT / "resources/demo/heater-history")
    (workdir / "src").symlink_to(ROOT / "src")
    (workdir / "tests/data").mkdir(parents=True)
    (workdir / "tests/data/import").symlink_to(ROOT / "tests/data/import")
    image_problem = build_image()
    (workdir / "campaigns").mkdir()
    for path in CAMPAIGNS:
        shrunk = shrink(yaml.safe_load(path.read_text()))
        (workdir / "campaigns" / path.name).write_text(yaml.safe_dump(shrunk, sort_keys=False))
    config = workdir / "ready.yaml"
    files = [f"campaigns/{p.name}" for p in CAMPAIGNS]
    config.write_text(yaml.safe_dump({"campaigns": files, "figures": _figures()}, sort_keys=False))
    facts = subprocess.run([sys.executable, "-c", FACTS, str(config)], cwd=workdir, capture_output=True, text=True)
    assert facts.returncode == 0, facts.stderr[-3000:]
    known = json.loads(facts.stdout)
    start = time.monotonic()
    proc = snakemake(workdir, None, "--cores", "2", "--keep-going", "all", "--configfile", str(config),
                     timeout=3600, check=False)  # fmt: skip
    wall = time.monotonic() - start
    (workdir / "snakemake.log").write_text(proc.stdout + proc.stderr)
    return Ready(workdir, proc, known["campaigns"], known["figures"], known["refused"], image_problem, wall)


# ---- metrics a row may lack by design ---------------------------------------------------------

LMBENCH_BANDWIDTH = {"bw_mem", "stream", "bw_pipe", "bw_unix", "bw_tcp", "bw_udp", "bw_file_rd", "bw_mmap_rd"}
FIO_READS, FIO_WRITES = {"read", "randread"}, {"write", "randwrite"}  # the others do both


def _lmbench_own(row: pd.Series) -> set[str]:
    micro, op = row["micro"], row.get("op")
    own = {"bandwidth_mb_s", "bandwidth_max_mb_s"} if micro in LMBENCH_BANDWIDTH else {"latency_ns", "latency_min_ns"}
    if micro == "lat_pagefault" and op != "fault_lmbench":
        own.add("per_fault_ns")
    own |= {
        "lat_timer": {"actual_ns"},
        "mhz": {"mhz"},
        "line": {"line_bytes"},
        "tlb": {"tlb_pages"},
        "par_mem": {"parallelism"},
        "par_ops": {"parallelism"},
        "lat_dram_page": {"dram_hit_ns", "dram_miss_ns"},
    }.get(micro, set())
    return own


def _fio_own(row: pd.Series, metrics: list[str]) -> set[str]:
    rw = row["rw"]
    sides = ("read",) if rw in FIO_READS else ("write",) if rw in FIO_WRITES else ("read", "write")
    return {m for m in metrics if m.split("_")[0] in sides}


#: Metrics a row lacks by design: benchmark -> (the row's own metrics, why
#: the others are absent). Any other benchmark: every one of its metrics.
OWN_METRICS: dict[str, tuple[Callable[[pd.Series, list[str]], set[str]], str]] = {
    "lmbench": (
        lambda row, metrics: _lmbench_own(row),
        "each program prints its own figures (latency or bandwidth; per_fault_ns is lat_pagefault's fault)",
    ),
    "leveldb": (lambda row, metrics: set(metrics) - {"mb_per_s"}, "db_bench 1.23 prints no MB/s for reads"),
    "rocksdb": (
        lambda row, metrics: (
            set(metrics) - ({"mb_per_s"} if row["bench_name"] in ("seekrandom", "readrandomwriterandom") else set())
        ),
        "RocksDB's db_bench prints no MB/s for seekrandom and readrandomwriterandom",
    ),
    "fio": (lambda row, metrics: _fio_own(row, metrics), "a direction the job does not exercise stays empty"),
    "sysbench": (
        lambda row, metrics: set(metrics) - (set() if row["test"] == "memory" else {"mib_per_s"}),
        "mib_per_s is the memory test's",
    ),
    "kyotocabinet": (
        lambda row, metrics: (
            set(metrics) - (set() if row["mode"] == "order" else set(metrics) - {"ops_per_s", "time_s"})
        ),
        "wicked mode has no per-phase rates",
    ),
    "imported": (
        lambda row, metrics: set(metrics) & {"real_time_ns", "cpu_time_ns", "iterations"},
        "Google Benchmark's user counters are their functions' own (only BM_sum counts items_per_second)",
    ),
}


def own_metrics(benchmark: str, row: pd.Series, metrics: list[str]) -> set[str]:
    rule = OWN_METRICS.get(benchmark)
    return rule[0](row, metrics) if rule else set(metrics)


def _failures(ready: Ready, name: str) -> str:
    """What the log says went wrong for a campaign: its failed jobs (with the
    tail of each job's log file), its runs that did not end ok, its summary
    line, and any one-line refusal of the whole invocation."""
    lines = ready.log().splitlines()
    out = [ln for ln in lines if ln.startswith("perfsnake: error:")]
    for i, line in enumerate(lines):
        if line.startswith("Error in rule"):
            block = lines[i : i + 12]
            block = block[: next((k for k, ln in enumerate(block[1:], 1) if not ln.startswith(" ")), len(block))]
            if any(f"results/{name}/" in ln or f"campaign={name}" in ln for ln in block):
                # The job's traceback, when Snakemake printed it (a script's) above the block.
                before = lines[max(0, i - 40) : i]
                tb = [k for k, ln in enumerate(before) if ln.startswith("Traceback (most recent call last)")]
                out += before[tb[-1] :] if tb else []
                out += block
                for ln in block:
                    if ln.strip().startswith("log:"):
                        log = ready.workdir / ln.split("log:", 1)[1].split("(")[0].strip()
                        if log.is_file():
                            out += ["    | " + t for t in log.read_text(errors="replace").splitlines()[-15:]]
        elif line.startswith(f"  {name}:") or (
            line.startswith(f"[perfsnake] {name}:") and re.search(r"FAILED|UNPARSED|TIMEOUT|HOOK", line)
        ):
            out.append(line)  # the summary's counts, a run that did not end ok
    if not any(ln.startswith("Error in rule") for ln in out) and "the workflow stopped on an error" in ready.log():
        out += ["(the invocation stopped on an error; its last lines:)", *lines[-25:]]
    return "\n".join(out)[-8000:] or "(nothing in the log)"


# ---- the cases ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(_names()))
def test_ready_campaign_runs(ready, name):
    if name in ready.refused:
        # Refused when it loads: perfsnake says so in one line, for a reason listed in REFUSED.
        file = f"campaigns/{_names()[name].name}"
        proc = subprocess.run([sys.executable, "-m", "perfsnake", "validate", file], cwd=ready.workdir,
                              capture_output=True, text=True)  # fmt: skip
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode != 0 and len(lines) == 1 and lines[0].startswith("perfsnake: error:"), (
            f"{name} did not load ({ready.refused[name]}), but validate says:\n{proc.stdout}{proc.stderr}"
        )
        allowed = [r for r in (REFUSED.get(name), REFUSED_ANY) if r]
        refusal = next((r for r in allowed if lines[0].startswith(f"perfsnake: error: {file}: {r.key}")), None)
        assert refusal, f"{name} is refused, for no reason of REFUSED: {ready.refused[name]}"
        # A refusal is a pass only when the machine really lacks what it names.
        lacking = _requires_unmet(name) if refusal is REFUSED_ANY else refusal.lacking()
        assert lacking, f"{name} is refused ({lines[0]}), but this machine has {refusal.reason}"
        return
    assert name in ready.facts, f"{name} was not planned:\n{ready.log()[-3000:]}"
    facts = ready.facts[name]
    where = f"\n--- the log about {name} ---\n{_failures(ready, name)}"
    if name in REFUSED:
        where += f"\n(not refused here, so this machine should have: {REFUSED[name].reason})"
    if name == "container_leveldb" and ready.image_problem:
        where += f"\n(its image: {ready.image_problem})"
    missing = [t for t in facts["targets"] if not (ready.workdir / t).exists()]
    assert not missing, f"{name}: {len(missing)} outputs missing, e.g. {missing[:6]}{where}"
    frame = read_csv(ready.workdir / "results" / name / f"{name}.csv")
    if facts["adaptive"]:
        assert len(frame) >= 2, f"{name}: {len(frame)} rows{where}"
    else:
        assert len(frame) == facts["records"] * facts["nb_runs"], f"{name}: {len(frame)} rows{where}"
    bad = frame[frame["status"] != "ok"]
    assert bad.empty, f"{name}: runs not ok:\n{bad.to_string(max_colwidth=40)}{where}"
    empty = {}
    for _, row in frame.iterrows():
        wanted = own_metrics(facts["benchmark"], row, facts["metrics"])
        blank = sorted(m for m in wanted if m not in row or pd.isna(row[m]) or row[m] == "")
        if blank:
            label = ", ".join(f"{v}={row[v]}" for v in facts["variables"]) + f" run {row['run']}"
            empty[label] = blank
    assert not empty, f"{name}: empty metric cells {empty}{where}"
    unparsed = {
        str(p.relative_to(ready.workdir)): r["unparsed"]
        for p in (ready.workdir / "results" / name / "runs").rglob("result.json")
        if (r := json.loads(p.read_text())).get("unparsed")
    }
    assert not unparsed, f"{name}: unparsed metrics {unparsed}{where}"
    # The campaigns it derives (the why runs, the floor's layouts): every run ok too.
    for derived in facts["derived"]:
        for status in (ready.workdir / "results" / derived / "runs").rglob("status.json"):
            state = json.loads(status.read_text())["status"]
            assert state == "ok", f"{derived}: {status.parent} is {state}{where}"


@pytest.mark.parametrize("config", [p.name for p in FIGURE_CONFIGS])
def test_ready_figure_configuration(ready, config):
    figures = yaml.safe_load((ROOT / "config" / "figures" / config).read_text())["figures"]
    for figure in figures:
        targets = ready.figures.get(figure["name"], [])
        assert targets, f"{figure['name']} was not planned (refused campaigns: {ready.refused})"
        missing = [t for t in targets if not (ready.workdir / t).exists()]
        assert not missing, f"{config}: missing {missing}\n{_failures(ready, 'figures')}"


def test_every_lmbench_program_of_the_ready_campaigns_ran(ready):
    named = set()
    for path in CAMPAIGNS:
        data = yaml.safe_load(path.read_text())
        if data["benchmark"] == "lmbench":
            named |= set((data.get("variables") or {}).get("micro") or [])
            named |= {r["micro"] for r in data.get("records") or []}
    ran = set()
    for csv in (ready.workdir / "results").glob("lmbench_*/lmbench_*.csv"):
        frame = read_csv(csv)
        ran |= set(frame[frame["status"] == "ok"]["micro"])
    assert named and not named - ran, f"never ran to ok: {sorted(named - ran)}"
