"""Source versions as a variable and commit ranges (regression campaigns),
on a real git repository made by the test: eight commits of a small C
program, the fifth of which plants 20 % more work."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import jobs_run, snakemake, write_campaign

from perfsnake.campaign import load_campaign
from perfsnake.errors import CampaignError
from perfsnake.results import read_csv

PROGRAM = """#include <stdio.h>
#define WORK {work}
int main(void) {{ volatile unsigned long x = 0; for (unsigned long i = 0; i < WORK * 1000UL; i++) x += i; printf("work=%d\\n", WORK); return 0; }}
"""


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "PATH": "/usr/bin:/bin", "HOME": str(repo)}  # fmt: skip
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env).stdout


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
        "nb_runs": 1,
        **extra,
    }


@pytest.mark.e2e
def test_a_commit_range_fetches_builds_and_runs_each_commit_once(repo, tmp_path):
    path, commits = repo
    camp = write_campaign(tmp_path, campaign(path, commits[0], commits[-1]))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert jobs_run(proc, "fetch") == 8 and jobs_run(proc, "build") == 8 and jobs_run(proc, "run") == 8
    frame = read_csv(tmp_path / "results/reg/reg.csv")
    by_version = dict(zip(frame["version"].astype(str), frame["work"]))
    # Oldest first, each commit's own source: commit 5 onwards does 20 % more work.
    assert [by_version[c[:12]] for c in commits] == [100] * 4 + [120] * 4
    sources = sorted(p.name for p in (tmp_path / "resources/src").iterdir())
    assert len(sources) == 8 and all(s.endswith(tuple(c[:12] for c in commits)) for s in sources)
    # A new commit on the branch: only it is fetched, built and run.
    new = commit(path, 9)
    camp = write_campaign(tmp_path, campaign(path, commits[0], new))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert jobs_run(proc, "fetch") == 1 and jobs_run(proc, "build") == 1 and jobs_run(proc, "run") == 1
    assert len(read_csv(tmp_path / "results/reg/reg.csv")) == 9


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
