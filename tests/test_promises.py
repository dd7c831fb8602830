"""Promises of the README that no other test held: the resume message about
runs that finished before an interruption, strict mode from the environment,
and where run cgroups go (`PERFSNAKE_CGROUP`)."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from helpers import ROOT, SNAKEMAKE, jobs_run, snakemake, statuses, write_campaign

pytestmark = pytest.mark.e2e


def snakemake_argv(camp, *args: str) -> list[str]:
    """The documented invocation, `snakemake --cores 1 all`, of one campaign."""
    return [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
            "--configfile", str(ROOT / "config/config.yaml"), "--quiet", "host", "--cores", "1", "all", *args,
            "--config", f"campaign={camp}"]  # fmt: skip


def command_campaign(command: str = "echo value={x}", **extra: object) -> dict:
    return {
        "name": "p",
        "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\S+)"}},
        "variables": {"x": [1]},
        "nb_runs": 2,
        **extra,
    }


def test_resume_keeps_a_run_that_finished_before_the_interruption(tmp_path):
    """docs/usage.md, "Resume after an interruption": a run whose launcher had
    written its status when the workflow died counts as finished, even though
    Snakemake had not marked its job complete; `make resume` says
    `resume: N run(s) that finished before the interruption kept` and does
    not measure it again.

    The state is made deterministically: the first run's post-run hook (after
    the launcher wrote status.json, before the job returns to Snakemake)
    SIGKILLs the workflow's whole process group, as `timeout -s KILL` or job
    control would."""
    once = tmp_path / "interrupted-once"
    hook = {"type": "command", "name": "interrupt", "command": f"mkdir {once} 2>/dev/null && kill -KILL 0; true"}
    camp = write_campaign(tmp_path, command_campaign(post_run_hooks=[hook]))
    # A session of its own: the hook's `kill 0` must reach the workflow, not pytest.
    killed = subprocess.run(
        snakemake_argv(camp), cwd=tmp_path, capture_output=True, text=True, timeout=300, start_new_session=True
    )
    assert killed.returncode == -9 and once.is_dir(), killed.stdout + killed.stderr
    # The state the message is about: one run's status.json written, its job still marked incomplete.
    finished = statuses(tmp_path, "p")
    assert list(finished) == ["x-1/run-1"] and finished["x-1/run-1"]["status"] == "ok"
    assert any((tmp_path / ".snakemake/incomplete").rglob("*"))
    status = tmp_path / "results/p/runs/x-1/run-1/status.json"
    before = (status.stat().st_mtime_ns, status.read_bytes())
    # The documented resume (make resume): unlock, then --rerun-incomplete.
    unlock = snakemake(tmp_path, camp, "--unlock", "all")
    resume = snakemake(tmp_path, camp, "--cores", "1", "all", "--rerun-incomplete")
    said = [
        line
        for proc in (unlock, resume)
        for line in (proc.stdout + proc.stderr).splitlines()
        if "finished before the interruption" in line
    ]
    assert said == [
        "[perfsnake] resume: 1 run(s) that finished before the interruption kept: results/p/runs/x-1/run-1/status.json"
    ], unlock.stderr + resume.stderr
    # Not redone: only the run that never started runs; the kept one is untouched.
    assert jobs_run(resume, "run") == 1
    assert (status.stat().st_mtime_ns, status.read_bytes()) == before
    assert {k: v["status"] for k, v in statuses(tmp_path, "p").items()} == {"x-1/run-1": "ok", "x-1/run-2": "ok"}
    assert (tmp_path / "results/p/p.csv").exists()


def test_perfsnake_strict_in_the_environment_fails_an_invocation_with_a_failed_run(tmp_path):
    """`PERFSNAKE_STRICT=1` is `--config strict=true`: an invocation that ran
    a failing run exits 1 with it and 0 without it."""
    command = "if [ {x} = 2 ]; then echo broken >&2; exit 3; fi; echo value={x}"
    environ = {k: v for k, v in os.environ.items() if k != "PERFSNAKE_STRICT"}
    exits, outputs = {}, []
    for strict in ("", "1"):
        workdir = tmp_path / f"strict-{strict or 'unset'}"
        workdir.mkdir()
        # One job per run in both (batch: auto would batch the second from the first's measured runs).
        camp = write_campaign(workdir, command_campaign(command, variables={"x": [1, 2]}, nb_runs=1, batch=1))
        env = {**environ, "PERFSNAKE_STRICT": strict} if strict else environ
        proc = subprocess.run(
            [*snakemake_argv(camp)], cwd=workdir, capture_output=True, text=True, timeout=300, env=env, check=False
        )
        out = proc.stdout + proc.stderr
        # The same invocation either way: both runs ran, one failed, loudly.
        assert jobs_run(proc, "run") == 2 and "run x-2/run-1 FAILED: exit code 3: broken" in out, out
        exits[strict] = (proc.returncode, "strict mode: exit status 1" in out)
        outputs.append(out[-3000:])
    assert exits == {"": (0, False), "1": (1, True)}, "\n".join(outputs)


#: config/README.md: "times (`timeout_s`, `duration_s`, hooks' `seconds`,
#: `startup_s`) are at most 10^7 s; `nb_runs` and precision's run counts at
#: most 100000" (a daemon's `startup_s` has its own bound, 3600).
SECONDS, RUNS = r"(0 to 1e\+07\)|maximum of 10000000)", r"(more than|maximum of) 100000\b"
LIMITS = [
    ({"timeout_s": 1e7 + 1}, {"timeout_s": 1e7}, "timeout_s", SECONDS),
    ({"duration_s": 1e7 + 1}, {"duration_s": 1e7}, "duration_s", SECONDS),
    ({"pre_run_hooks": [{"type": "cooldown", "seconds": 1e7 + 1}]},
     {"pre_run_hooks": [{"type": "cooldown", "seconds": 1e7}]}, "pre_run_hooks[0].seconds", SECONDS),
    ({"pre_run_hooks": [{"type": "daemon", "command": "sleep 1", "startup_s": 3601}]},
     {"pre_run_hooks": [{"type": "daemon", "command": "sleep 1", "startup_s": 3600}]},
     "pre_run_hooks[0].startup_s", r"from 0 to 3600\b"),
    ({"nb_runs": 100_001}, {"nb_runs": 100_000}, "nb_runs", RUNS),
    ({"nb_runs": None, "precision": {"metric": "value", "target_rel_ci": 0.05, "max_runs": 100_001}},
     {"nb_runs": None, "precision": {"metric": "value", "target_rel_ci": 0.05, "max_runs": 100_000}},
     "precision.max_runs", RUNS),
    ({"nb_runs": None, "precision": {"metric": "value", "target_rel_ci": 0.05, "min_runs": 100_001, "max_runs": 100_001}},
     {"nb_runs": None, "precision": {"metric": "value", "target_rel_ci": 0.05, "min_runs": 100_000, "max_runs": 100_000}},
     ("precision.min_runs", "precision.max_runs"), RUNS),  # min_runs may not exceed max_runs either
]  # fmt: skip


def _without_none(data: dict) -> dict:
    return {k: v for k, v in data.items() if v is not None}


@pytest.mark.parametrize(("over", "at", "key", "problem"), LIMITS)
def test_times_and_run_counts_beyond_their_limits_are_refused_and_the_limits_themselves_taken(
    tmp_path, over, at, key, problem
):
    from perfsnake.campaign import load_campaign
    from perfsnake.errors import CampaignError

    with pytest.raises(CampaignError) as info:
        load_campaign(write_campaign(tmp_path, _without_none(command_campaign(**over))))
    # Refused in one line naming the key and the limit (the schema or the loader, whichever speaks first).
    assert info.value.key in ((key,) if isinstance(key, str) else key), str(info.value)
    assert re.search(problem, info.value.problem), str(info.value)
    assert "\n" not in str(info.value)
    load_campaign(write_campaign(tmp_path, _without_none(command_campaign(**at))))  # the bound itself is allowed


def test_a_refused_limit_stops_the_workflow_in_one_line_before_anything(tmp_path):
    camp = write_campaign(tmp_path, command_campaign(nb_runs=100_001))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all", check=False)
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("perfsnake: error:")]
    assert proc.returncode != 0 and len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"perfsnake: error: {camp}: nb_runs: ") and re.search(RUNS, lines[0]), lines
    assert not (tmp_path / "results").exists() and not (tmp_path / "resources").exists()


def test_precision_stops_at_max_runs_when_the_target_is_never_met(tmp_path):
    """`precision`: further runs "up to max_runs": a record whose interval
    can never be narrow enough (its values are its run numbers) gets exactly
    max_runs runs, and summary.csv says the target was not met."""
    data = command_campaign(
        'echo x={x} value=$(basename "$PWD" | tr -dc 0-9)',
        precision={"metric": "value", "target_rel_ci": 0.001, "min_runs": 3, "max_runs": 7},
    )
    del data["nb_runs"]
    camp = write_campaign(tmp_path, data)
    snakemake(tmp_path, camp, "--cores", "1", "all")
    assert sorted(statuses(tmp_path, "p")) == [f"x-1/run-{i}" for i in range(1, 8)]
    with (tmp_path / "results/p/summary.csv").open(newline="") as f:
        (row,) = [r for r in csv.DictReader(f) if r["metric"] == "value"]
    assert (row["n"], row["precision_target_met"], row["precision_runs_ok"]) == ("7", "False", "7"), row
    assert float(row["mean"]) == 4.0  # the runs 1..7, each measured once
    # Finished: asking again runs nothing.
    again = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert jobs_run(again, "run") == 0


def _cgroup2_mount() -> Path | None:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split()[:1] == ["cgroup2"]:
            return Path(left.split()[4])
    return None


def test_perfsnake_cgroup_says_where_run_cgroups_are_made(tmp_path):
    """`PERFSNAKE_CGROUP=DIR` sets where run cgroups are made (the run's and
    a daemon hook's), `none` leaves the launcher's subreaper only; status.json
    and hooks.json say which held."""
    mount = _cgroup2_mount()
    if os.geteuid() != 0 or mount is None:
        pytest.skip("making cgroups anywhere under the cgroup2 mount needs root and a cgroup2 mount")
    daemon = {
        "type": "daemon",
        "name": "d",
        "command": "cat /proc/self/cgroup > {run_dir}/d.tmp && mv {run_dir}/d.tmp {run_dir}/daemon-cgroup.txt && exec sleep 600",
        "ready": {"file": "{run_dir}/daemon-cgroup.txt"},
    }
    data = command_campaign("cat /proc/self/cgroup > cgroup.txt; echo value={x}", nb_runs=1, pre_run_hooks=[daemon])
    base = mount / f"perfsnake-test-{os.getpid()}-{tmp_path.name}"
    assert not base.exists()

    def cgroup_of(path: Path) -> str:  # the unified hierarchy's line of /proc/<pid>/cgroup
        (line,) = [ln for ln in path.read_text().splitlines() if ln.startswith("0::")]
        return str(mount) + line[3:]

    try:
        contained = {}
        for setting in (str(base), "none"):
            workdir = tmp_path / ("dir" if setting != "none" else "none")
            workdir.mkdir()
            camp = write_campaign(workdir, data)
            snakemake(workdir, camp, "--cores", "1", "all", env={"PERFSNAKE_CGROUP": setting})
            run = workdir / "results/p/runs/x-1/run-1"
            status = json.loads((run / "status.json").read_text())
            teardown = next(h for h in json.loads((run / "hooks.json").read_text()) if h["phase"] == "teardown")
            contained[setting] = (status["containment"], teardown["containment"], run)
        run_cg, daemon_cg, run = contained[str(base)]
        # The run's cgroup is a directory of its own under DIR, and the benchmark ran in it.
        assert run_cg.startswith(f"cgroup2:{base}/run-"), run_cg
        assert cgroup_of(run / "cgroup.txt") == run_cg.removeprefix("cgroup2:")
        # So did the daemon hook, in another one.
        assert daemon_cg.startswith(f"cgroup2:{base}/") and daemon_cg != run_cg, daemon_cg
        assert cgroup_of(run / "daemon-cgroup.txt") == daemon_cg.removeprefix("cgroup2:")
        # `none`: no cgroup, the subreaper; nothing made under the default place either.
        run_cg, daemon_cg, run = contained["none"]
        assert (run_cg, daemon_cg) == ("subreaper", "subreaper")
        assert not cgroup_of(run / "cgroup.txt").startswith(str(base))
    finally:
        if base.exists():
            for child in sorted(base.rglob("*/"), key=lambda p: len(p.parts), reverse=True):
                if child.is_dir():
                    child.rmdir()
            base.rmdir()
