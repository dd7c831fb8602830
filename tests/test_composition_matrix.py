"""The composition matrix (issue 44): every feature of the catalogs and the
schema (tests/matrix.py), every pair either in a campaign that runs right or
refused by `perfsnake validate` in one line for a reason docs/composition.md
gives.

Two parts. The plan (fast lane, in-process, seconds): each pair alone is
validated; its refusal must match a row of docs/composition.md's table; the
covering campaigns hold every other pair, and validate accepts each. The run
(`make matrix`, marker `matrix`): the covering campaigns through one real
Snakemake invocation (--keep-going, so one broken campaign names itself and
the others still run), then each checked on its own: every run ok, and every
output its features promise present and consistent (PROMISES).
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers import ROOT, SNAKEMAKE, build_image, write_campaign
from matrix import NOT_YET, STRUCTURAL, Context, Feature, all_pairs, campaign, covering, features, pair

from perfsnake.campaign_csv import read_csv
from perfsnake.errors import CampaignError
from perfsnake.schema import load_schema
from perfsnake.stages.validate import plan

DOC = ROOT / "docs" / "composition.md"


# ---- the plan --------------------------------------------------------------------------------


def validate(data: dict, workdir: Path) -> str | None:
    """validate's one line for a campaign (None: accepted), run where the campaign would."""
    path = write_campaign(workdir, data, "probe.yaml")
    cwd = Path.cwd()
    os.chdir(workdir)  # the plan reads results/ (stored run times) where it runs
    try:
        plan({"campaigns": [str(path)]})
        return None
    except CampaignError as exc:
        return f"{exc.key}: {exc.problem}"
    finally:
        os.chdir(cwd)


@dataclass(frozen=True)
class Refusal:
    """A row of docs/composition.md's refusal table."""

    features: str
    key: str
    says: str  # the refusal's text contains this
    why: str

    def matches(self, line: str) -> bool:
        key, _, problem = line.partition(": ")
        return re.fullmatch(self.key, key) is not None and self.says in problem


def documented_refusals() -> list[Refusal]:
    """The table under "## Refusals" in docs/composition.md (features | key | says | why)."""
    text = DOC.read_text().split("## Refusals", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]  # \| is a pipe in a cell
        if len(cells) == 4 and not set(cells[0]) <= {"-", " "} and cells[0] != "Features":
            rows.append(
                Refusal(
                    cells[0], cells[1].strip("`").replace("\\|", "|"), cells[2].strip("`").replace("\\|", "|"), cells[3]
                )
            )
    return rows


@dataclass
class Plan:
    feats: list[Feature]
    refused: dict[tuple[str, str], str]  # pair -> validate's line
    rows: list[list[Feature]]
    ctx: Context


def make_plan(workdir: Path, ctx: Context) -> Plan:
    feats = features()
    probe = workdir / "probe"
    by_id = {f.id: f for f in feats}
    refused = {}
    for a, b in all_pairs(feats):
        line = validate(campaign("probe", [by_id[a], by_id[b]], ctx), probe)
        if line:
            refused[(a, b)] = line
    singles = {f.id: line for f in feats if (line := validate(campaign("probe", [f], ctx), probe))}
    allowed = {p for p in all_pairs(feats) if p not in refused}
    rows = covering(feats, allowed, lambda row: validate(campaign("probe", row, ctx), probe) is None)
    assert not singles, f"features refused alone: {singles}"
    return Plan(feats, refused, rows, ctx)


def plan_context(workdir: Path) -> Context:
    ssh = {"type": "ssh", "host": "127.0.0.1", "port": 22, "user": "root", "remote_dir": str(workdir / "remote")}
    return Context(workdir, ssh_platform=ssh)


def _image() -> None:
    """The container platform's image, which validate runs each wrapper in."""
    if problem := build_image():
        pytest.fail(f"the container platform's image: {problem}")


@pytest.fixture(scope="module")
def matrix_plan(tmp_path_factory) -> Plan:
    if os.geteuid() != 0:
        # A normal user's validate refuses drop_caches, attach and the every-CPU
        # recorders alone (and perf_record without cargo's inferno): the
        # matrix is root's, and conftest.ROOT_ONLY lists its tests.
        pytest.skip("the matrix holds root-only features (drop_caches, attach, every-CPU recording)")
    _image()
    workdir = tmp_path_factory.mktemp("matrix-plan")
    return make_plan(workdir, plan_context(workdir))


def test_every_catalog_entry_and_schema_key_is_in_the_matrix():
    missing = [f.id for f in features() if "missing" in f.promises]
    assert not missing, f"features without a fragment in tests/matrix.py (or a ready campaign): {missing}"
    used = set()
    ctx = plan_context(Path("/nonexistent"))
    for f in features():
        used |= set(f.fragment(ctx))
    keys = set(load_schema("campaign.schema.yaml")["properties"])
    assert keys - used - set(STRUCTURAL) - set(NOT_YET) == set(), "schema keys the matrix does not know"
    assert not (set(STRUCTURAL) | set(NOT_YET)) - keys, "tests/matrix.py names keys the schema no longer has"


def test_every_pair_runs_in_a_campaign_or_is_refused_for_a_documented_reason(matrix_plan):
    table = documented_refusals()
    undocumented = {p: line for p, line in matrix_plan.refused.items() if not any(r.matches(line) for r in table)}
    assert not undocumented, "refusals docs/composition.md does not give a reason for:\n" + "\n".join(
        f"{a} + {b}: {line}" for (a, b), line in sorted(undocumented.items())
    )
    unused = [r for r in table if not any(r.matches(line) for line in matrix_plan.refused.values())]
    assert not unused, f"docs/composition.md lists refusals validate no longer makes: {unused}"
    covered = {pair(x, y) for row in matrix_plan.rows for x, y in itertools.combinations(row, 2)}
    allowed = set(all_pairs(matrix_plan.feats)) - set(matrix_plan.refused)
    assert allowed <= covered, sorted(allowed - covered)[:10]
    assert not covered & set(matrix_plan.refused)
    # The size docs/composition.md states, so a change of the matrix shows there.
    size = re.search(r"(\d+) features, (\d+) pairs, (\d+) refused, (\d+) campaigns", DOC.read_text())
    stated = tuple(map(int, size.groups())) if size else None
    actual = (len(matrix_plan.feats), len(all_pairs(matrix_plan.feats)), len(matrix_plan.refused),
              len(matrix_plan.rows))  # fmt: skip
    assert stated == actual, f"docs/composition.md states {stated}; the matrix is {actual}"


# ---- the run -----------------------------------------------------------------------------------


def _runs(base: Path) -> list[Path]:
    return sorted(p.parent for p in (base / "runs").rglob("status.json"))


def promise_flamegraph(base: Path, frame: pd.DataFrame, _arg: str) -> None:
    missing = [str(r) for r in _runs(base) if not (r / "flamegraph.svg").is_file()]
    assert not missing, f"profiled runs without flamegraph.svg: {missing[:3]}"


def promise_diff_graphs(base: Path, frame: pd.DataFrame, _arg: str) -> None:
    assert len(list((base / "diff").glob("*.svg"))) >= 2, "no differential flame graphs"


def promise_offcpu(base: Path, frame: pd.DataFrame, _arg: str) -> None:
    missing = [str(r) for r in _runs(base) if not list(r.glob("offcpu*.svg"))]
    assert not missing, f"off-CPU runs without their graph: {missing[:3]}"


def promise_sched(base: Path, frame: pd.DataFrame, _arg: str) -> None:
    assert frame["sched.threads"].notna().all(), "runs without their scheduler timeline's totals"


def promise_hook_metric(base: Path, frame: pd.DataFrame, _arg: str) -> None:
    assert (pd.to_numeric(frame["hooked"]) == 7).all(), "the command hook's metric"
    summary = read_csv(base / "summary.csv")
    assert (summary["metric"] == "hooked").any(), "no summary row of the hook's metric"


def promise_columns(base: Path, frame: pd.DataFrame, prefix: str) -> None:
    cols = [c for c in frame.columns if c.startswith(prefix)]
    assert cols and frame[cols].notna().any(axis=1).all(), f"runs without {prefix}* values"


def promise_verdict(base: Path, frame: pd.DataFrame, _arg: str) -> None:
    gates = read_csv(base / "gates.csv")
    assert len(gates) and set(gates["verdict"]) <= {"pass", "inconclusive"}, gates


def promise_png(base: Path, frame: pd.DataFrame, _arg: str) -> None:
    assert list((base / "plots").glob("*.png")), "no figure"


def promise_why(base: Path, frame: pd.DataFrame, _arg: str) -> None:
    assert (base / "why" / "why.md").is_file(), "no why.md"


def promise_values(base: Path, frame: pd.DataFrame, column: str) -> None:
    assert frame[column].astype(str).nunique() == 1, frame[column]


PROMISES = {
    "flamegraph": promise_flamegraph,
    "diff_graphs": promise_diff_graphs,
    "offcpu": promise_offcpu,
    "sched": promise_sched,
    "hook_metric": promise_hook_metric,
    "columns": promise_columns,
    "verdict": promise_verdict,
    "png": promise_png,
    "why": promise_why,
    "values": promise_values,
}


@dataclass
class Invocation:
    workdir: Path
    plan: Plan
    names: list[str]
    proc: subprocess.CompletedProcess


@pytest.fixture(scope="module")
def matrix_run(tmp_path_factory, request) -> Invocation:
    from sshd import start

    _image()
    workdir = tmp_path_factory.mktemp("matrix")
    server = start(workdir / "sshd")
    request.addfinalizer(server.proc.terminate)
    ctx = Context(workdir, ssh_platform=server.platform(workdir / "remote"))
    the_plan = make_plan(workdir, ctx)
    names, paths = [], []
    for i, row in enumerate(the_plan.rows):
        name = f"m{i:02d}"
        data = campaign(name, row, ctx)
        data["description"] = ", ".join(f.id for f in row)
        paths.append(str(write_campaign(workdir, data, f"{name}.yaml")))
        names.append(name)
    (workdir / "config.yaml").write_text(yaml.safe_dump({"campaigns": paths}))
    cmd = [SNAKEMAKE, "-s", str(ROOT / "workflow" / "Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
           "--directory", str(workdir), "--configfile", str(workdir / "config.yaml"), "--cores", "2",
           "--keep-going", "all"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, cwd=workdir, check=False)
    (workdir / "matrix.log").write_text(proc.stdout + proc.stderr)
    return Invocation(workdir, the_plan, names, proc)


def check_campaign(workdir: Path, name: str, row: list[Feature]) -> None:
    base = workdir / "results" / name
    assert (base / f"{name}.csv").is_file(), "no CSV"
    frame = read_csv(base / f"{name}.csv")
    bad = frame[frame["status"] != "ok"]
    assert len(frame) and bad.empty, f"runs not ok:\n{bad.to_string()[:1500]}"
    for feature in row:
        for promise in feature.promises:
            kind, _, arg = promise.partition(":")
            try:
                PROMISES[kind](base, frame, arg)
            except (AssertionError, KeyError, FileNotFoundError) as exc:
                raise AssertionError(f"{feature.id} promised {promise}: {exc}") from None
    assert (base / "report.html").is_file() or (base / "report").is_dir(), "no report"


@pytest.mark.matrix
def test_every_covering_campaign_runs_right(matrix_run):
    failures = []
    for name, row in zip(matrix_run.names, matrix_run.plan.rows, strict=True):
        try:
            check_campaign(matrix_run.workdir, name, row)
        except AssertionError as exc:
            failures.append(f"{name} ({', '.join(f.id for f in row)}): {exc}")
    assert not failures, f"{len(failures)} of {len(matrix_run.names)} campaigns:\n" + "\n".join(failures)


@pytest.mark.matrix
def test_the_invocation_exits_zero(matrix_run):
    assert matrix_run.proc.returncode == 0, matrix_run.proc.stderr[-4000:]
