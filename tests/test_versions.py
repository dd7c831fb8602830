"""Source versions as a variable and commit ranges (regression campaigns),
on a real git repository made by the test: eight commits of a small C
program, the fifth of which plants 20 % more work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import jobs_run, snakemake, write_campaign

from perfsnake.campaign import load_campaign
from perfsnake.campaign_csv import read_csv
from perfsnake.errors import CampaignError

PROGRAM = """#include <stdio.h>
#define WORK {work}
int main(void) {{ volatile unsigned long x = 0; for (unsigned long i = 0; i < WORK * 1000UL; i++) x += i; printf("work=%d\\n", WORK); return 0; }}
"""


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "PATH": "/usr/bin:/bin", "HOME": str(repo)}  # fmt: skip
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env).stdout


def read_csv_plain(path: Path) -> list[dict[str, str]]:
    import csv

    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def commit(repo: Path, i: int) -> str:
    (repo / "prog.c").write_text(PROGRAM.format(work=120 if i >= 5 else 100))
    (repo / "history.txt").write_text(f"{i}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"commit {i}" + (": 20 % more work" if i == 5 else ""))
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[Path, list[str]]:
    path = tmp_path_factory.mktemp("versions") / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    return path, [commit(path, i) for i in range(1, 9)]


def campaign(repo: Path, start: str, end: str, **extra: object) -> dict:
    return {
        "name": "reg",
        "benchmark": {
            "type": "command",
            "source": {"git": str(repo), "rev": "{version}"},
            "build": "cc -O2 -o {build_dir}/prog {src_dir}/prog.c",
            "command": "{build_dir}/prog",
            "metrics": {"work": r"work=(\d+)"},
        },
        "variables": {"version": {"git": str(repo), "range": f"{start}..{end}"}},
        "nb_runs": 2,
        **extra,
    }


@pytest.mark.e2e
def test_a_commit_range_fetches_builds_and_runs_each_commit_once(repo, tmp_path):
    path, commits = repo
    camp = write_campaign(tmp_path, campaign(path, commits[0], commits[-1]))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert jobs_run(proc, "fetch") == 8 and jobs_run(proc, "build") == 8 and jobs_run(proc, "run") == 16
    frame = read_csv(tmp_path / "results/reg/reg.csv")
    by_version = dict(zip(frame["version"].astype(str), frame["work"]))
    # Oldest first, each commit's own source: commit 5 onwards does 20 % more work.
    assert [by_version[c[:12]] for c in commits] == [100] * 4 + [120] * 4
    sources = sorted(p.name for p in (tmp_path / "resources/src").iterdir())
    assert len(sources) == 8 and all(s.endswith(tuple(c[:12] for c in commits)) for s in sources)
    # The regression view: commit 5 is the one step, in the figure and the steps table.
    steps = read_csv_plain(tmp_path / "results/reg/regression/steps.csv")
    assert [(s["version"], s["previous"], s["significant"]) for s in steps] == [
        (commits[4][:12], commits[3][:12], "True")
    ]
    assert float(steps[0]["relative_change"]) == pytest.approx(0.2)
    assert (tmp_path / "results/reg/regression/work.png").read_bytes()[:4] == b"\x89PNG"
    assert "+20.0%" in (tmp_path / "results/reg/regression/work.svg").read_text()
    significant = (tmp_path / "results/reg/significant.md").read_text()
    assert "## Adjacent versions" in significant
    assert f"- work: {commits[3][:12]} -> {commits[4][:12]}" in significant and "+20.00%" in significant
    # A new commit on the branch: only it is fetched, built and run.
    new = commit(path, 9)
    camp = write_campaign(tmp_path, campaign(path, commits[0], new))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert jobs_run(proc, "fetch") == 1 and jobs_run(proc, "build") == 1 and jobs_run(proc, "run") == 2
    assert len(read_csv(tmp_path / "results/reg/reg.csv")) == 18


def test_range_expansion_keeps_order_every_and_the_last(repo, tmp_path):
    path, commits = repo
    c = load_campaign(write_campaign(tmp_path, campaign(path, commits[0], commits[7])))
    assert [r.values["version"] for r in c.records] == [x[:12] for x in commits[:8]]
    assert c.build_vars == ["version"]
    spec = campaign(path, commits[0], commits[7])
    spec["variables"]["version"]["every"] = 3
    c = load_campaign(write_campaign(tmp_path, spec))
    assert [r.values["version"] for r in c.records] == [commits[i][:12] for i in (0, 3, 6, 7)]


@pytest.mark.parametrize(
    ("change", "key", "problem"),
    [
        (lambda d, c: d["variables"]["version"].update(range="main"), "variables.version.range", "does not match"),
        (lambda d, c: d["variables"]["version"].update(range=f"{c[3]}..nosuchref"), "variables.version", "cannot read the range"),
        (lambda d, c: d["variables"]["version"].update(range=f"{c[3]}..{c[3]}"), "variables.version.range", "holds no commit"),
        (lambda d, c: d["benchmark"]["source"].update(rev="{versoin}"), "benchmark.source", "did you mean 'version'"),
        (lambda d, c: d["benchmark"]["source"].update(rev="v {version}"), "benchmark.source.rev", "does not match"),
    ],
)  # fmt: skip
def test_bad_ranges_and_sources_are_refused_in_one_line(repo, tmp_path, change, key, problem):
    path, commits = repo
    data = campaign(path, commits[0], commits[3])
    change(data, commits)
    with pytest.raises(CampaignError) as info:
        load_campaign(write_campaign(tmp_path, data))
    assert info.value.key == key and problem in info.value.problem, str(info.value)
    assert "\n" not in str(info.value)


def test_checksums_per_version(tmp_path):
    good = "a" * 64
    data = {
        "name": "arch",
        "benchmark": {"type": "command", "source": {"archive": "https://example.org/p-{v}.tar.gz", "sha256": {"1.0": good}},
                      "build": "true", "command": "true"},
        "variables": {"v": ["1.0", "1.1"]},
    }  # fmt: skip
    with pytest.raises(CampaignError) as info:
        load_campaign(write_campaign(tmp_path, data))
    assert info.value.key == "benchmark.source.sha256" and "no checksum for v '1.1'" in info.value.problem
    data["benchmark"]["source"]["sha256"]["1.1"] = "b" * 64
    c = load_campaign(write_campaign(tmp_path, data))
    sources = {c.benchmark.source_for(c.build_params(r))["sha256"] for r in c.records}
    assert sources == {good, "b" * 64} and c.build_vars == ["v"]


def _series(rng, means, runs=5, sd=0.02):
    return [(f"v{i}", rng.normal(m, sd * m, runs)) for i, m in enumerate(means)]


OPTS = {"confidence": 0.95, "alpha": 0.05, "autocorrelation_threshold": 0.1}


def test_steps_are_found_where_the_metric_changed_and_nowhere_else():
    from perfsnake.statistics.changepoints import find_steps

    found, false = 0, 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        steps = [s["version"] for s in find_steps(_series(rng, [100] * 4 + [120] * 4), OPTS) if s["p_value"] < 0.01]
        found += "v4" in steps
        false += len(steps) - ("v4" in steps)
        false += sum(s["p_value"] < 0.01 for s in find_steps(_series(rng, [100] * 8), OPTS))
    # Seeded: a 20 % step under 2 % noise is found every time; a step where
    # nothing changed shows up about once in 40 series.
    assert found == 20 and false <= 2


#: The regression `scripts/setup/demo_repo.sh` plants in v5 of the demo history.
PLANTED = "x = (i % 4 == 0) ? work(work(x)) : work(x);"


@pytest.mark.e2e
def test_the_ready_regression_campaign_finds_the_step_at_v5_and_fails_its_gate(tmp_path):
    """The README's demonstration: on the demo history the step is found at
    v5, the gate against v1 fails from v5 onwards (and not before), and
    `perfsnake check` exits 1.

    The ready campaign counts in time (operations per wall-clock second,
    +25 % work per operation at v5), which a loaded machine can blur into
    `inconclusive`. This copy keeps its history, range, metrics, derived
    ops_per_s, gate and run count, and builds each release so that the claims
    hold by construction: the heater's clock is its own CPU time (a co-runner
    taking turns on the CPU no longer changes ops_per_s) and v5's planted
    line does four times the work of every step instead of a quarter more."""
    import subprocess as sp

    import yaml
    from helpers import ROOT

    sp.run(["bash", str(ROOT / "scripts/setup/demo_repo.sh")], check=True)  # made by `make setup`; idempotent
    history = ROOT / "resources/demo/heater-history"
    tags = {f"v{i}": git(history, "rev-parse", f"v{i}").strip()[:12] for i in range(1, 9)}
    # What the build amplifies is what the demo plants, in v5 and not before.
    assert PLANTED in git(history, "show", "v5:heater.c") and PLANTED not in git(history, "show", "v4:heater.c")
    (tmp_path / "resources/demo").mkdir(parents=True)
    (tmp_path / "resources/demo/heater-history").symlink_to(history)
    data = yaml.safe_load((ROOT / "config/campaigns/regression_heater.yaml").read_text())
    assert data["nb_runs"] == 3 and data["references"] == [
        {"metric": "ops_per_s", "baseline": {"version": "v1"}, "max_regression": "5%", "better": "higher"}
    ]
    # Both substitutions must have happened (else the build fails): no wall clock, no quarter-step plant.
    data["benchmark"]["build"] = (
        "sed -e 's/CLOCK_MONOTONIC/CLOCK_PROCESS_CPUTIME_ID/' "
        "-e 's/(i % 4 == 0) ? work(work(x)) : work(x)/work(work(work(work(x))))/' "
        "{src_dir}/heater.c > {build_dir}/heater.c && ! grep -q -e CLOCK_MONOTONIC -e 'i % 4' {build_dir}/heater.c && "
        + data["benchmark"]["build"].replace("{src_dir}/heater.c", "{build_dir}/heater.c")
    )
    data["duration_s"] = 0.2
    camp = write_campaign(tmp_path, data)
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert jobs_run(proc, "build") == 8 and jobs_run(proc, "run") == 24
    results = tmp_path / "results/regression_heater"
    assert (results / "regression/ops_per_s.png").exists()
    # The step is found at v5 (against v4), a drop in throughput.
    steps = [s for s in read_csv_plain(results / "regression/steps.csv") if s["significant"] == "True"]
    at_v5 = [s for s in steps if s["metric"] == "ops_per_s" and s["version"] == tags["v5"]]
    assert len(at_v5) == 1 and at_v5[0]["previous"] == tags["v4"], steps
    assert float(at_v5[0]["relative_change"]) < -0.05
    # The gate against v1 fails from v5 onwards, and for no release before it.
    gates = {g["version"]: g for g in read_csv_plain(results / "gates.csv")}
    assert set(gates) == set(tags.values()) and {g["baseline"] for g in gates.values()} == {f"version={tags['v1']}"}
    verdicts = {tag: gates[commit]["verdict"] for tag, commit in tags.items()}
    assert [tag for tag, v in verdicts.items() if v == "fail"] == ["v5", "v6", "v7", "v8"], verdicts
    # `perfsnake check` exits 1, naming each failed gate.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    check = sp.run([sys.executable, "-m", "perfsnake", "check", "--config", f"campaign={camp}"],
                   cwd=tmp_path, capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, check=False)  # fmt: skip
    assert check.returncode == 1, check.stdout + check.stderr
    failed = [line for line in check.stdout.splitlines() if line.startswith("regression_heater: FAIL: ")]
    named = [tag for tag, commit in tags.items() for line in failed if f"ops_per_s (version={commit}):" in line]
    assert len(failed) == 4 and named == ["v5", "v6", "v7", "v8"], check.stdout


# ---- bisection ------------------------------------------------------------------------------


def test_bisection_decisions_on_seeded_series():
    from perfsnake import bisect

    rng = np.random.default_rng(11)
    versions = [f"c{i}" for i in range(1, 9)]
    means = {v: 100.0 if i < 4 else 120.0 for i, v in enumerate(versions)}  # c5 plants +20 %
    values: dict[str, list[float]] = {}
    state, step, measured = None, 1, set()
    plan = {versions[0]: [1, 2, 3], versions[-1]: [1, 2, 3]}
    while True:
        for version, runs in plan.items():
            measured.add(version)
            values.setdefault(version, []).extend(rng.normal(means[version], 2.0, len(runs)).tolist())
        state = bisect.decide(versions, state, values, step, 3, 0.05, 0.05)
        if state["done"]:
            break
        plan, step = state["next"], step + 1
    assert state["verdict"] == "changed" and state["first"] == "c5" and state["previous"] == "c4"
    assert step <= bisect.max_steps(8) and len(measured) <= 2 + 3 and state["steps"][0]["ends"]["changed"]
    # Every step after the first measures both ends again, with the same run numbers as the middle.
    assert all(len(set(map(tuple, s["measured"]))) for s in state["steps"])
    flat = {v: [100.0 + rng.normal(0, 2.0) for _ in range(3)] for v in versions}
    assert bisect.decide(versions, None, flat, 1, 3, 0.05, 0.05)["verdict"] == "no change"


@pytest.mark.e2e
def test_bisection_names_the_commit_that_changed_in_log2_steps(repo, tmp_path):
    path, commits = repo
    camp = write_campaign(
        tmp_path, campaign(path, commits[0], commits[-1], bisect={"metric": "work", "threshold": "5%"})
    )
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    # The ends, then 3 middles for 8 commits (each step with 2 new runs of both ends): 2*2 + 3*3*2 runs.
    assert jobs_run(proc, "run") == 4 + 3 * 6
    assert sorted(p.name for p in (tmp_path / "results/reg/bisect").iterdir()) == [
        f"step-{k}.json" for k in (1, 2, 3, 4)
    ]
    report = (tmp_path / "results/reg/bisect.md").read_text()
    assert f"**First commit that changed work: `{commits[4][:12]}`** (commit 5: 20 % more work)" in report
    assert f"against `{commits[3][:12]}`, the commit before it: +20.00%" in report
    frame = read_csv(tmp_path / "results/reg/reg.csv")
    assert len(set(frame["version"].astype(str))) == 5  # the two ends and three middles, not all eight
    # Resumable: nothing runs again.
    again = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert jobs_run(again, "run") == 0


def test_bisection_is_refused_without_a_single_commit_range(repo, tmp_path):
    from perfsnake.campaign import load_campaign
    from perfsnake.errors import CampaignError

    path, commits = repo
    cases = [
        ({"bisect": {"metric": "work", "threshold": "5%"}, "variables": {"version": [commits[0][:12], commits[1][:12]]}},
         "bisect.variable", "a variable whose values are a commit range"),
        ({"bisect": {"metric": "wrk", "threshold": "5%"}}, "bisect.metric", "'wrk' is not a metric"),
        ({"bisect": {"metric": "work", "threshold": "150%"}}, "bisect.threshold", "between 0 and 100 %"),
    ]  # fmt: skip
    for change, key, problem in cases:
        data = campaign(path, commits[0], commits[-1], **change)
        with pytest.raises(CampaignError) as err:
            load_campaign(write_campaign(tmp_path, data))
        assert err.value.key == key and problem in err.value.problem
