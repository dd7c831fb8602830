"""Where everything lives: the one owner of results/ and resources/ paths.

Paths returned here are relative to the workflow's working directory, as
Snakemake wants them; `here()` makes one absolute for job bodies (command.sh,
build scripts) that must work when re-run by hand from anywhere. Files that
ship with the workflow (C sources, the package's own code) are named relative
to the working directory too (`shipped()`), so a checkout copied elsewhere, or
an unpacked artifact, plans the same jobs with the same inputs: nothing re-runs.
"""

from __future__ import annotations

import os
from pathlib import Path

from perfsnake import ROOT

RESULTS = "results"
RESOURCES = "resources"

#: Wildcard regexes of the rules (one place, used by rules/common.smk).
CAMPAIGN_RE = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
RECORD_RE = r"[^/]+(/[^/]+)*?"
RUN_RE = r"[1-9][0-9]*"
BENCH_RE = r"[A-Za-z0-9_.-]+"
BKEY_RE = r"[^/]+"
SOURCE_RE = r"[^/.][^/]*"
PLOT_RE = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
#: A record as one component (layout.flat): its escaped values may hold `~`
#: (escape.py marks long and periodic ones), never `~vs~` (a hash is hex, a
#: final `~` comes before `,` or the end), which joins the two sides of a pair.
PAIR_SEPARATOR = "~vs~"
FLAT_RE = r"(?:[^/~]|~(?!vs~))+"
#: a batch of runs' name: the round that planned it (1: the first plan) and its place in that round
BATCH_RE = r"r[1-9][0-9]*-b[1-9][0-9]*"
HOST_RE = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"  # a fleet's host name (the campaign schema's)
TOOL_RE = "psrun|psplace"
STATIC_TOOL_RE = "psrun"

WILDCARDS = {
    "campaign": CAMPAIGN_RE,
    "record": RECORD_RE,
    "run": RUN_RE,
    "bench": BENCH_RE,
    "bkey": BKEY_RE,
    "source": SOURCE_RE,
    "plot": PLOT_RE,
    "figure": PLOT_RE,
    "batch": BATCH_RE,
    "host": HOST_RE,
}


# ---- files shipped with the workflow -------------------------------------------
def shipped(relative: str | Path) -> str:
    """A file of the workflow itself, relative to the working directory."""
    return os.path.relpath(ROOT / relative)


def shipped_abs(relative: str | Path) -> Path:
    return ROOT / relative


#: Our C sources (launcher, placement daemon, heater, locks, lmbench, bpftrace
#: programs) are package data: found beside the installed package, editable or not.
CSRC = Path(__file__).resolve().parent / "csrc"


def c_source(*parts: str) -> Path:
    """One of our C sources (or a directory of them), absolute."""
    return CSRC.joinpath(*parts)


def tool_source() -> str:
    """Pattern of our helper programs' sources (psrun, psplace)."""
    return os.path.relpath(CSRC) + "/{tool}/{tool}.c"


def package_code(*modules: str) -> list[str]:
    """Modules of the package whose edits re-run a summary rule (never a run)."""
    return [shipped(f"perfsnake/{m}") for m in modules]


def benchmark_code() -> list[str]:
    return sorted(shipped(p.relative_to(ROOT)) for p in (ROOT / "perfsnake" / "benchmarks").glob("*.py"))


# ---- results/ -------------------------------------------------------------------
def campaign_dir(campaign: str) -> str:
    return f"{RESULTS}/{campaign}"


#: the directory under runs_root holding the batch markers (no record's directory has this name)
BATCH_DIR = "batches"


def runs_root(campaign: str) -> str:
    """Where a campaign's run directories (and its batch markers, under BATCH_DIR) are."""
    return f"{RESULTS}/{campaign}/runs"


def run_dir(campaign: str, record_path: str, run: int | str) -> str:
    return f"{runs_root(campaign)}/{record_path}/run-{run}"


def status_file(campaign: str, record_path: str, run: int | str) -> str:
    return f"{run_dir(campaign, record_path, run)}/status.json"


def split_status(campaign: str, status: str) -> tuple[str, int]:
    """(record path, run index) of results/<campaign>/runs/<record>/run-<i>/status.json."""
    prefix = f"{runs_root(campaign)}/"
    text = str(status)
    rel = text[text.index(prefix) + len(prefix) :]
    record, _, rest = rel.rpartition("/run-")
    return record, int(rest.split("/", 1)[0])


def batch_size(campaign: str) -> str:
    """The size `batch: auto` chose for this results directory, and why (its first batch job writes it)."""
    return f"{RESULTS}/{campaign}/batch-size.json"


def batch_marker(campaign: str, round_number: int | str, k: int | str) -> str:
    """What a job executing a batch of runs declares as its output (each run keeps its own files)."""
    return f"{runs_root(campaign)}/{BATCH_DIR}/r{round_number}-b{k}.json"


def split_batch(campaign: str, marker: str) -> tuple[int, int] | None:
    """(round, place) of a batch marker of the campaign; None for any other path."""
    prefix = f"{runs_root(campaign)}/{BATCH_DIR}/r"
    text = str(marker)
    if not text.startswith(prefix) or not text.endswith(".json"):
        return None
    round_text, _, k = text[len(prefix) : -len(".json")].partition("-b")
    return (int(round_text), int(k)) if round_text.isdigit() and k.isdigit() else None


def server_dir(campaign: str, key: str) -> str:
    """A campaign-scoped server's launcher directory (its output and status)."""
    return f"{RESULTS}/{campaign}/servers/{key}"


def builds_ready(campaign: str) -> str:
    return f"{RESULTS}/{campaign}/builds.ready"


def host_builds_ready(campaign: str, host: str) -> str:
    """A fleet's marker of one host's builds (builds_ready, per host)."""
    return f"{RESULTS}/{campaign}/hosts/{host}/builds.ready"


def results_json(campaign: str) -> str:
    return f"{RESULTS}/{campaign}/results.json"


def csv(campaign: str) -> str:
    return f"{RESULTS}/{campaign}/{campaign}.csv"


def rows_json(campaign: str) -> str:
    return f"{RESULTS}/{campaign}/{campaign}.json"


def campaign_json(campaign: str) -> str:
    """The campaign's description as a file (rules/report.smk's campaign_info)."""
    return f"{RESULTS}/{campaign}/campaign.json"


def history_record(campaign: str) -> str:
    """What the history rule recorded of the campaign (perfsnake.stages.history)."""
    return f"{RESULTS}/{campaign}/history.json"


def commands(campaign: str) -> str:
    return f"{RESULTS}/{campaign}/commands.sh"


def summary(campaign: str) -> str:
    return f"{RESULTS}/{campaign}/summary.csv"


def comparisons(campaign: str) -> str:
    return f"{RESULTS}/{campaign}/comparisons.csv"


def significant(campaign: str) -> str:
    return f"{RESULTS}/{campaign}/significant.md"


def regression_steps(campaign: str) -> str:
    """Steps found along a campaign's commit range (regression view)."""
    return f"{RESULTS}/{campaign}/regression/steps.csv"


def regression_figure(campaign: str, metric: str, ext: str) -> str:
    return f"{RESULTS}/{campaign}/regression/{metric}.{ext}"


def bisect_step(campaign: str, step: int | str) -> str:
    """One step's decision of a bisection (rules/bisect.smk's checkpoint)."""
    return f"{RESULTS}/{campaign}/bisect/step-{step}.json"


def bisect_report(campaign: str) -> str:
    return f"{RESULTS}/{campaign}/bisect.md"


def gates(campaign: str) -> str:
    return f"{RESULTS}/{campaign}/gates.csv"


def overhead(campaign: str) -> str:
    return f"{RESULTS}/{campaign}/overhead.csv"


def plot(campaign: str, name: str, ext: str) -> str:
    return f"{RESULTS}/{campaign}/plots/{name}.{ext}"


#: The report's HTML pages of a campaign (rules/report.smk), besides the optional
#: overhead and flame-graph pages.
PAGES = ("landing", "machine", "summary", "comparisons", "significant")


def figure(name: str, ext: str) -> str:
    """A figure drawn over several campaigns (the configuration's `figures:`)."""
    return f"{RESULTS}/figures/{name}.{ext}"


def page(campaign: str, name: str) -> str:
    return f"{RESULTS}/{campaign}/report/{name}.html"


def table_files(campaign: str) -> list[str]:
    """The tables to paste: summary.md, .tex (booktabs) and .org."""
    return [f"{RESULTS}/{campaign}/summary.{ext}" for ext in ("md", "tex", "org")]


def report_targets(campaign: str, overhead: bool, flamegraphs: bool) -> list[str]:
    """The tables to paste and the report's pages of one campaign."""
    names = [*PAGES, *(["overhead"] if overhead else []), *(["flamegraphs"] if flamegraphs else [])]
    return [*table_files(campaign), *(page(campaign, n) for n in names)]


#: the build variable a noise-floor campaign adds: the seed of a build's function order
FLOOR_VARIABLE = "layout"


def noise_floor(campaign: str) -> str:
    """Each selected record's layout noise floor (`noise_floor`)."""
    return f"{RESULTS}/{campaign}/floor/noise_floor.csv"


def floor_campaign(campaign: str) -> str:
    """The derived campaign of a campaign's layout builds."""
    return f"{campaign}__floor"


def why_dir(campaign: str) -> str:
    return f"{RESULTS}/{campaign}/why"


def why_report(campaign: str) -> str:
    """`profile_differences`: every picked difference with its profile's table."""
    return f"{why_dir(campaign)}/why.md"


def why_symbols(campaign: str, flat_a: str, flat_b: str) -> str:
    return f"{why_dir(campaign)}/{flat_a}{PAIR_SEPARATOR}{flat_b}.csv"


def compare_outputs(campaign: str) -> list[str]:
    """`compare_with`: the table, its Markdown and what differs in the metadata."""
    return [f"{RESULTS}/{campaign}/compare/{n}" for n in ("compare.csv", "compare.md", "metadata_differences.csv")]


def decisions(campaign: str) -> list[str]:
    """What `statistics.decide` decided: one row per comparison, the summary, and its report page."""
    return [f"{RESULTS}/{campaign}/decisions.csv", f"{RESULTS}/{campaign}/decisions.md",
            f"{RESULTS}/{campaign}/report/decisions.html"]  # fmt: skip


def precision_round(campaign: str, round_number: int | str) -> str:
    return f"{RESULTS}/{campaign}/precision/round-{round_number}.json"


def folded(campaign: str, flat: str) -> str:
    return f"{RESULTS}/{campaign}/folded/{flat}.folded"


def flat(record_path: str) -> str:
    """A record path as one component (',' never occurs in escaped values)."""
    return record_path.replace("/", ",")


def unflat(key: str) -> str:
    return key.replace(",", "/")


def diff_flamegraph(campaign: str, flat_a: str, flat_b: str) -> str:
    return f"{RESULTS}/{campaign}/diff/{flat_a}{PAIR_SEPARATOR}{flat_b}.svg"


def offcpu_folded(campaign: str, flat: str) -> str:
    """A record's off-CPU stacks, all runs together (offcpu wrapper)."""
    return f"{RESULTS}/{campaign}/offcpu/{flat}.folded"


def offcpu_diff(campaign: str, flat_a: str, flat_b: str) -> str:
    return f"{RESULTS}/{campaign}/offcpu/{flat_a}{PAIR_SEPARATOR}{flat_b}.svg"


def campaign_log(campaign: str, name: str) -> str:
    return f"{RESULTS}/{campaign}/logs/{name}.log"


def artifact_zip(campaign: str) -> str:
    return f"{RESULTS}/{campaign}/artifact/{campaign}-artifact.zip"


# ---- resources/ -----------------------------------------------------------------
def source_dir(key: str) -> str:
    return f"{RESOURCES}/src/{key}"


def git_cache(digest: str) -> str:
    """A bare clone of a remote repository whose commit range a campaign reads."""
    return f"{RESOURCES}/git/{digest}.git"


def build_dir(bench: str, key: str) -> str:
    return f"{RESOURCES}/builds/{bench}/{key}"


def build_log(bench: str, key: str) -> str:
    return f"{RESOURCES}/logs/build/{bench}/{key}.log"


def fetch_log(key: str) -> str:
    return f"{RESOURCES}/logs/fetch/{key}.log"


def tool(name: str) -> str:
    """Our helper programs, built per working directory (psrun, psplace)."""
    return f"{RESOURCES}/bin/{name}"


def static_tool(name: str) -> str:
    """One of our helper programs linked statically: the launcher inside a container, whatever its C library."""
    return f"{RESOURCES}/bin/{name}-static"


def tool_log(name: str) -> str:
    return f"{RESOURCES}/logs/tool/{name}.log"


def resources_dir(workdir: Path) -> Path:
    """A working directory's resources/ (sources, builds, our tools), absolute: what a container mounts."""
    return workdir / RESOURCES


def third_party_tools() -> str:
    """Where `make setup` installs other projects' tools (inferno, by `cargo install --root`), in the checkout."""
    return f"{RESOURCES}/tools"


def generated_dirs() -> tuple[str, str]:
    """What a working directory's campaigns write (results/, resources/): never the workflow's own files."""
    return RESULTS, RESOURCES


def build_root_of(build: Path) -> Path:
    """The working directory that holds a build directory (<wd>/resources/builds/<bench>/<key>)."""
    return build.parents[3]


def here(relative: str | Path, workdir: Path | None = None) -> Path:
    """A layout path made absolute against the working directory."""
    return (workdir or Path.cwd()) / relative
