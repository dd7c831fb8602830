"""Fleets (`hosts:`): one campaign on several ssh hosts at once, each host one
run at a time, results merged with the host as a variable. The hosts are real
sshd servers on 127.0.0.1 that the tests start, each with its own benchmark
lock file (on one machine, a host is what its lock says it is)."""

from __future__ import annotations

import fcntl
import json
import subprocess
from pathlib import Path

import pytest
import sshd
from helpers import snakemake, statuses, write_campaign

from perfsnake.campaign import load_campaign
from perfsnake.campaign_csv import read_csv
from perfsnake.errors import CampaignError
from perfsnake.planning import fleet_lock

HOSTS = ("alpha", "beta", "gamma")


def fleet_campaign(platform: dict, hosts: list[str] | None = None, **extra: object) -> dict:
    # Each run builds nothing but says where it ran; the sleep makes overlaps visible.
    return {
        "name": "f",
        "benchmark": {"type": "command", "build": "echo built > marker", "command": "sleep 0.2; echo value={x}",
                      "metrics": {"value": r"value=(\S+)"}},
        "variables": {"x": [1, 2]},
        "nb_runs": 2,
        "hosts": hosts or list(platform["hosts"]),
        "platform": platform,
        **extra,
    }  # fmt: skip


def offline_platform() -> dict:
    return {
        "type": "ssh",
        "user": "u",
        "hosts": {h: {"host": "127.0.0.1", "port": 2200 + i} for i, h in enumerate(HOSTS)},
    }


# ---- the campaign ------------------------------------------------------------------


def test_a_fleets_records_are_each_hosts_and_build_there(tmp_path):
    c = load_campaign(write_campaign(tmp_path, fleet_campaign(offline_platform(), ["alpha", "gamma"])))
    assert c.variables == ["host", "x"]
    assert [r.path for r in c.records] == ["host-alpha/x-1", "host-alpha/x-2", "host-gamma/x-1", "host-gamma/x-2"]
    ports = {r.values["host"]: c.platform_of(r).port for r in c.records}  # type: ignore[union-attr]
    assert ports == {"alpha": 2200, "gamma": 2202}
    # Each host builds its own: the build directories differ by host, a host's records share one.
    keys = {r.values["host"]: r.build_key for r in c.records}
    assert len({r.build_key for r in c.records}) == 2 and "2202" in keys["gamma"]
    assert c.platform_spec(c.records[-1])["user"] == "u"  # the platform's settings, then the host's


@pytest.mark.parametrize(
    ("change", "key", "problem"),
    [
        ({"platform": {"type": "container", "image": "debian"}}, "hosts", "a fleet runs over ssh or on Slurm nodes"),
        ({"hosts": ["alpha", "delta"]}, "hosts[1]", "'delta' is not in platform.hosts (alpha, beta, gamma)"),
        ({"variables": {"host": [1]}}, "variables.host", "the fleet's own variable"),
        ({"hosts": None}, "hosts", "platform.hosts names a fleet"),
        ({"hosts": []}, "hosts", "empty list of values"),
    ],
)
def test_a_bad_fleet_is_one_line(tmp_path, change, key, problem):
    data = {**fleet_campaign(offline_platform()), **change}
    data = {k: v for k, v in data.items() if v is not None}
    with pytest.raises(CampaignError) as info:
        load_campaign(write_campaign(tmp_path, data))
    assert info.value.key == key and problem in info.value.problem, str(info.value)


def test_a_fleet_without_ssh_is_one_of_slurm_nodes_each_building_its_own(tmp_path):
    c = load_campaign(
        write_campaign(tmp_path, {**fleet_campaign(offline_platform(), ["n1", "n2"]), "platform": {"type": "local"}})
    )
    assert [r.path for r in c.records][:3] == ["host-n1/x-1", "host-n1/x-2", "host-n2/x-1"]
    where = {r.values["host"]: c.platform_of(r) for r in c.records}
    assert {h: p.placement() for h, p in where.items()} == {"n1": "--nodelist=n1", "n2": "--nodelist=n2"}
    assert len({r.build_key for r in c.records}) == 2 and all("slurm-n" in r.build_key for r in c.records)
    # The build job re-creates the node's platform from this spec.
    assert c.platform_spec(c.records[-1]) == {"type": "local", "node": "n2"}


def test_a_fleet_of_slurm_nodes_refuses_to_run_here_in_one_line(tmp_path):
    """Without Slurm's executor the runs would all execute on this machine,
    filed under hosts they never ran on: refused before any job."""
    camp = write_campaign(tmp_path, {**fleet_campaign(offline_platform(), ["n1", "n2"]), "platform": {"type": "local"}})
    proc = snakemake(tmp_path, camp, "--cores", "1", "all", check=False)
    errors = [ln for ln in proc.stderr.splitlines() if "perfsnake: error" in ln]
    assert proc.returncode != 0 and len(errors) == 1, proc.stderr[-3000:]
    assert f"{camp}: hosts: n1, n2 are Slurm nodes" in errors[0] and "--profile profiles/slurm" in errors[0]
    assert not (tmp_path / "results").exists() and not (tmp_path / "resources" / "builds").exists()
    # A dry run plans them (the check is made when jobs are about to start).
    snakemake(tmp_path, camp, "--cores", "1", "--dry-run", "all")


def test_a_fleet_cannot_require_this_machines_state(tmp_path):
    for platform, hosts in ((offline_platform(), None), ({"type": "local"}, ["n1"])):
        data = {**fleet_campaign(offline_platform(), hosts), "platform": platform, "requires": {"aslr": "on"}}
        with pytest.raises(CampaignError) as info:
            load_campaign(write_campaign(tmp_path, data))
        assert info.value.key == "requires" and "a fleet's runs execute on its hosts" in info.value.problem


def test_a_fleet_is_never_batched(tmp_path):
    camp = write_campaign(tmp_path, fleet_campaign(offline_platform(), batch=10))
    proc = snakemake(tmp_path, camp, "--cores", "1", "--dry-run", "all", check=False)
    assert proc.returncode != 0 and "batch: 10: not possible here, a fleet's hosts run in parallel" in proc.stderr
    assert not (tmp_path / "results").exists()


def test_a_fleets_figures_keep_its_hosts_apart(tmp_path):
    plots = [
        {"kind": "line", "x": "x", "y": "value", "name": "coloured"},
        {"kind": "line", "x": "x", "y": "value", "color": "x", "name": "faceted"},
        {"kind": "line", "x": "host", "y": "value", "color": "x", "name": "placed"},
    ]
    c = load_campaign(write_campaign(tmp_path, fleet_campaign(offline_platform(), plots=plots)))
    by = {p["name"]: p for p in c.plots}
    assert by["coloured"]["color"] == "host" and by["faceted"]["column"] == "host"
    assert "column" not in by["placed"] and "row" not in by["placed"]


def test_comparisons_between_hosts_are_marked_as_between_machines():
    import numpy as np

    from perfsnake.contract import CampaignInfo
    from perfsnake.stages.analysis import comparison_rows, significant_document

    rng = np.random.default_rng(5)
    data = [{"variables": {"host": h, "x": x}, "metrics": {"value": float(base + rng.normal(0, 0.1))}, "status": "ok",
             "start_epoch": i, "wall_s": 1.0}
            for i in range(8) for h, shift in (("alpha", 0), ("beta", 5)) for x, step in (("1", 0), ("2", 10))
            for base in [100 + shift + step]]  # fmt: skip
    info = CampaignInfo.from_dict({"name": "f", "variables": ["host", "x"], "hosts": ["alpha", "beta"],
                                   "statistics": {"metrics": ["value"]}})  # fmt: skip
    rows = comparison_rows(data, info)
    assert {(r["variable"], r["between_machines"]) for r in rows} == {("host", True), ("x", False)}
    from perfsnake.pages import markdown

    text = markdown.render(significant_document(rows, "f"))
    assert "- between machines: value: host beta vs alpha (x=1)" in text
    assert "- value: x 2 vs 1 (host=alpha)" in text
    # A campaign that is no fleet has no such column.
    plain = CampaignInfo.from_dict({"name": "f", "variables": ["host", "x"], "statistics": {"metrics": ["value"]}})
    assert all("between_machines" not in r for r in comparison_rows(data, plain))


def test_history_records_each_run_on_the_host_it_ran_on(tmp_path):
    from perfsnake.history.sources import read_campaign

    (tmp_path / "campaign.json").write_text(json.dumps({"name": "f", "variables": ["host", "x"], "metrics": ["value"]}))
    rows = [{"host": h, "x": 1, "run": 1, "value": 1.0, "status": "ok", "start": f"2026-01-01T00:00:0{i}Z",
             "platform.hostname": f"{h}.lab"} for i, h in enumerate(("alpha", "beta"))]  # fmt: skip
    (tmp_path / "f.json").write_text(json.dumps({"metadata": {"hostname": "login"}, "rows": rows}))
    recording = read_campaign(tmp_path)
    assert [r["hostname"] for r in recording.rows] == ["alpha.lab", "beta.lab"]
    assert recording.invocation["hostname"] == "login"  # the invocation is the aggregating machine's


def test_compare_checks_each_hosts_state_between_result_sets():
    import pandas as pd

    from perfsnake.compare import Side, machine_state_differences

    def side(beta_kernel: str) -> Side:
        runs = pd.DataFrame({"host": ["alpha", "beta"], "x": [1, 1], "run": [1, 1], "value": [1.0, 2.0],
                             "platform.uname": ["Linux 6.1", beta_kernel], "platform.cpu_model": ["EPYC", "Xeon"]})  # fmt: skip
        return Side("s", "f", runs, {"cpu_model": "login", "uname": "login"})

    assert machine_state_differences([side("Linux 6.1"), side("Linux 6.1")]) == []
    assert machine_state_differences([side("Linux 6.1"), side("Linux 6.5")]) == ["platform.uname (host beta)"]


# ---- the scheduler -------------------------------------------------------------------


def test_the_scheduler_starts_the_next_run_of_each_host_together():
    """One run per lock at a time, in order within a host; hosts side by side."""
    from snakemake_scheduler_plugin_perfsnake import Scheduler

    class Job:  # what the scheduler reads of a job (hashable, as Snakemake's are)
        def __init__(self, lock: str, order: int) -> None:
            self.scheduler_resources = {lock: 1, "run_order": order, "_cores": 1}
            self.output: list[str] = []
            self.priority = 0

    job = Job

    jobs = [
        job("fleet_alpha", 3),
        job("fleet_alpha", 1),
        job("fleet_beta", 2),
        job("bench_lock", 5),
        job("fleet_beta", 0),
    ]
    available = {"fleet_alpha": 1, "fleet_beta": 1, "bench_lock": 1, "_cores": 3}
    chosen = Scheduler.select_jobs(Scheduler.__new__(Scheduler), jobs, jobs, available, {})
    assert [(next(iter(j.scheduler_resources)), j.scheduler_resources["run_order"]) for j in chosen] == [
        ("fleet_alpha", 1), ("fleet_beta", 0), ("bench_lock", 5)]  # fmt: skip
    # A host whose lock is taken starts nothing; the others still do.
    chosen = Scheduler.select_jobs(Scheduler.__new__(Scheduler), jobs, jobs, {**available, "fleet_alpha": 0}, {})
    assert all("fleet_alpha" not in j.scheduler_resources for j in chosen) and len(chosen) == 2
    assert fleet_lock("db-1.lab") == "fleet_db_1_lab"


# ---- real hosts ----------------------------------------------------------------------


@pytest.fixture
def hosts(tmp_path):
    if not Path(sshd.SSHD).exists():
        pytest.skip("openssh-server is not installed (scripts/setup/apt.sh installs it)")
    servers = {h: sshd.start(tmp_path / f"sshd-{h}") for h in HOSTS}
    yield servers
    for server in servers.values():
        sshd.stop(server)


def fleet_platform(tmp_path: Path, servers: dict[str, sshd.Sshd]) -> dict:
    """One platform, a host per server: its port, key, remote directory and lock."""
    base = next(iter(servers.values())).platform(tmp_path / "unused")
    specs = {}
    for name, server in servers.items():
        own = server.platform(tmp_path / f"remote-{name}")
        specs[name] = {"host": own["host"], "port": own["port"], "identity": own["identity"],
                       "remote_dir": own["remote_dir"], "lock": str(tmp_path / f"{name}.lock")}  # fmt: skip
    return {"type": "ssh", "user": base["user"], "options": base["options"], "hosts": specs}


def intervals(runs: dict[str, dict], host: str) -> list[tuple[float, float]]:
    return sorted((s["start_epoch"], s["end_epoch"]) for k, s in runs.items() if k.startswith(f"host-{host}/"))


@pytest.mark.e2e
def test_a_fleet_runs_on_every_host_one_run_at_a_time_on_each(tmp_path, hosts):
    platform = fleet_platform(tmp_path, hosts)
    camp = write_campaign(tmp_path, fleet_campaign(platform))
    # This machine's benchmark lock is someone else's all along: the hosts take
    # their own (named) locks, so the fleet never waits for this one.
    local = tmp_path / "local.lock"
    with open(local, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = snakemake(tmp_path, camp, "--cores", "3", "all", env={"PERFSNAKE_HOST_LOCK": str(local)})
    assert "another benchmark" not in proc.stderr
    runs = statuses(tmp_path, "f")
    assert len(runs) == 3 * 2 * 2 and {s["status"] for s in runs.values()} == {"ok"}
    for host in HOSTS:
        spans = intervals(runs, host)
        assert len(spans) == 4
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:])), (host, spans)
        # Built on that host (its remote directory), not here.
        (build,) = [b for b in (tmp_path / "resources/builds").rglob("platform.json")
                    if json.loads(b.read_text())["port"] == hosts[host].port]  # fmt: skip
        assert (Path(platform["hosts"][host]["remote_dir"] + str(build.parent)) / "marker").is_file()
    frame = read_csv(tmp_path / "results/f/f.csv")
    assert sorted(frame.groupby("host").size().items()) == [("alpha", 4), ("beta", 4), ("gamma", 4)]
    # Each row says which machine it ran on; the header does not pick one host's facts for all.
    assert {h: set(rows["platform.port"]) for h, rows in frame.groupby("host")} == {
        h: {s.port} for h, s in hosts.items()
    }
    head = (tmp_path / "results/f/f.csv").read_text()
    assert "# platform_hosts: 3" in head and "# platform_port:" not in head
    # A host's runs say which host they ran on (the facts of its platform.json).
    for key in runs:
        facts = json.loads((tmp_path / "results/f/runs" / key / "platform.json").read_text())
        assert facts["port"] == hosts[key.split("/")[0].removeprefix("host-")].port


@pytest.mark.e2e
def test_an_unreachable_host_fails_its_runs_only_and_a_resume_completes_it(tmp_path, hosts):
    platform = fleet_platform(tmp_path, hosts)
    camp = write_campaign(tmp_path, fleet_campaign(platform))
    sshd.stop(hosts["beta"])
    proc = snakemake(tmp_path, camp, "--cores", "3", "all", check=False)
    assert proc.returncode != 0
    assert f"ssh to {platform['user']}@127.0.0.1 port {hosts['beta'].port} failed" in proc.stderr + proc.stdout
    runs = statuses(tmp_path, "f")
    assert sorted({k.split("/")[0] for k in runs}) == ["host-alpha", "host-gamma"] and len(runs) == 8
    assert {s["status"] for s in runs.values()} == {"ok"}
    before = {k: s["start_epoch"] for k, s in runs.items()}
    # The host is back: the resume runs its runs, and only them.
    hosts["beta"] = sshd.start(tmp_path / "sshd-beta", port=hosts["beta"].port)
    snakemake(tmp_path, camp, "--cores", "3", "all")
    runs = statuses(tmp_path, "f")
    assert len(runs) == 12 and {s["status"] for s in runs.values()} == {"ok"}
    assert {k: s["start_epoch"] for k, s in runs.items() if k in before} == before
    assert sorted(read_csv(tmp_path / "results/f/f.csv")["host"].value_counts().items()) == [
        ("alpha", 4), ("beta", 4), ("gamma", 4)]  # fmt: skip


@pytest.mark.e2e
def test_a_normal_users_fleet():
    """A researcher's own account: its keys, its remote directories and lock
    files, its checkout (the servers are root's, as a lab's would be; sshd
    reads a user's authorized keys as that user, so they live where the user
    may read them)."""
    import os
    import pwd
    import shutil
    import tempfile

    from users import checkout_for, ensure_user, give, is_root, run_as, snakemake_argv, user_python

    if not is_root():
        pytest.skip("creates a user: needs root")
    if not Path(sshd.SSHD).exists():
        pytest.skip("openssh-server is not installed (scripts/setup/apt.sh installs it)")
    user = ensure_user("alice").pw_name
    uid = pwd.getpwnam(user).pw_uid
    # useradd leaves the account locked ("!"), which sshd refuses without PAM: no password, not locked.
    subprocess.run(["usermod", "-p", "*", user], check=True)
    base = Path(tempfile.mkdtemp(prefix="perfsnake-fleet-", dir="/var/tmp"))
    base.chmod(0o755)
    servers = {h: sshd.start(base / h) for h in HOSTS}
    try:
        checkout = checkout_for(user, "perfsnake-fleet")
        own = Path(pwd.getpwnam(user).pw_dir) / "fleet"
        shutil.rmtree(own, ignore_errors=True)
        (own / "campaigns").mkdir(parents=True)
        platform = fleet_platform(own, servers)
        platform["user"] = user
        for name, server in servers.items():
            shutil.copy(server.key, own / f"key-{name}")
            platform["hosts"][name]["identity"] = str(own / f"key-{name}")
        camp = own / "campaigns" / "fleet.yaml"
        camp.write_text(json.dumps(fleet_campaign(platform)))
        give(user, own)
        proc = run_as(user, snakemake_argv(user_python(user), camp, "--cores", "3"), cwd=checkout)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
        runs = statuses(checkout, "f")
        assert len(runs) == 12 and {s["status"] for s in runs.values()} == {"ok"}
        for host in HOSTS:
            spans = intervals(runs, host)
            assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:])), (host, spans)
            assert os.stat(platform["hosts"][host]["lock"]).st_uid == uid  # its own lock, taken as itself
    finally:
        for server in servers.values():
            sshd.stop(server)
        shutil.rmtree(base, ignore_errors=True)
