"""Machine-state drift within one campaign: each run records its state's
identity before it starts (kernel, boot id, microcode, governor, turbo, SMT,
huge pages, online CPUs, frequency limits, the perf sample rate, ASLR); a run
measured in another state than the campaign's first run is flagged in its
result.json, the CSV, summary.csv, significant.md and the end-of-invocation
summary; a resume after a reboot says so in one line, and strict mode or
`requires:` refuses to mix the two states unless state_change=accept.

The flags are checked for real twice: a run that changes transparent huge
pages for the next one (root: it writes the kernel's setting, restored in a
finally), and a resume after a reboot, simulated by rewriting the boot id
the kept run recorded (any user)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest
import sshd
from helpers import snakemake, write_campaign
from users import is_root

from perfsnake.campaign_csv import read_results
from perfsnake.instruments import Instruments
from perfsnake.machine import metadata
from perfsnake.machine import state as machine_state
from perfsnake.stages.analysis import state_drift_flags

NOT_STRICT = {"PERFSNAKE_STRICT": "0"}
STRICT = {"PERFSNAKE_STRICT": "1"}
#: the boot id a simulated reboot leaves in the kept runs' files
EARLIER_BOOT = "00000000-0000-4000-8000-000000000000"
RUNS = Path("results/c/runs/x-1")


def campaign(workdir: Path, command: str, **more: object) -> Path:
    data = {"name": "c", "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\d+)"}},
            "variables": {"x": [1]}, "nb_runs": 2, **more}  # fmt: skip
    return write_campaign(workdir, data)


def results(workdir: Path) -> list[dict]:
    """The campaign's result.json files, in start order."""
    found = [json.loads(p.read_text()) for p in (workdir / RUNS).glob("run-*/result.json")]
    return sorted(found, key=lambda r: r["start_epoch"])


def flags(workdir: Path) -> list[str]:
    with (workdir / "results/c/summary.csv").open(newline="") as f:
        return [row["flags"] for row in csv.DictReader(f)]


def assert_flagged(workdir: Path, proc_output: str, key: str, first: object, this: object) -> None:
    """The second run (by start time) carries the change from the first
    run's `first` to its `this` in every place the README names."""
    one, two = results(workdir)
    assert one["state_drift"] == {}, one["state_drift"]
    assert two["state_drift"][key] == {"first": first, "this": this}, two["state_drift"]
    assert two["machine_state"][key] == this and one["machine_state"][key] == first
    change = f"{key}: {first} -> {this}"
    frame = read_results(workdir / "results/c/c.csv")
    by_run = dict(zip(frame["run"], frame["machine.state_drift"].fillna(""), strict=True))
    assert by_run[one["run"]] == "" and change in by_run[two["run"]], by_run
    flag = f"machine state drift in 1 of 2 runs (vs the campaign's first run): {key} {first} -> {this}"
    assert all(flag in f for f in flags(workdir)), flags(workdir)
    significant = (workdir / "results/c/significant.md").read_text()
    assert "## Stability warnings" in significant and flag in significant.split("## Stability warnings")[1]
    assert f"machine state drift: 1 of 2 runs ({key}" in proc_output
    assert "warnings: 1 record(s) flagged in summary.csv" in proc_output


# ---- the diffing -------------------------------------------------------------


def state(**values: object) -> dict[str, object]:
    base: dict[str, object] = {key: "a" for key in machine_state.DRIFT_KEYS}
    return {**base, "hostname": "h1", **values}


def test_drift_names_each_changed_key_with_both_values_and_nothing_else():
    assert machine_state.drift(state(), state()) == {}
    found = machine_state.drift(state(), state(thp="never", kernel="6.2", hostname="h2"))
    # the key order is DRIFT_KEYS', the host name only groups runs
    assert list(found) == ["kernel", "thp"]
    assert found == {"kernel": {"first": "a", "this": "6.2"}, "thp": {"first": "a", "this": "never"}}
    assert machine_state.drift_text(found) == "kernel: a -> 6.2; thp: a -> never"
    # a key only one side recorded (another perfsnake version) is not compared
    older = {k: v for k, v in state().items() if k != "thp_defrag"}
    assert machine_state.drift(older, state(thp_defrag="never")) == {}
    # an absent setting (None: no cpufreq) that appears is a change
    assert machine_state.drift(state(governor=None), state(governor="performance on 0-1")) == {
        "governor": {"first": None, "this": "performance on 0-1"}
    }


def test_a_setting_the_campaigns_own_hooks_make_is_not_drift():
    """The governor hook sets the governor before each run and leaves it:
    the next run starts under the previous one's, on purpose. (The hooks as
    a campaign's file makes them, without the check that this user may
    write the governor.)"""
    hooks = [{"type": "cooldown", "seconds": 0}, {"type": "governor", "governor": "performance"}]
    ignore = Instruments.from_campaign({"pre_run_hooks": hooks}, "c.yaml").state_set()
    assert ignore == {"governor"}
    assert Instruments.from_campaign({"post_run_hooks": hooks[:1]}, "c.yaml").state_set() == set()
    first, other = state(governor="powersave on 0-1"), state(governor="performance on 0-1", thp="never")
    assert list(machine_state.drift(first, other, ignore)) == ["thp"]
    runs = [{"start_epoch": 1.0, "machine_state": first}, {"start_epoch": 2.0, "machine_state": other}]
    machine_state.annotate_drift(runs, ignore)
    assert runs[1]["state_drift"] == {"thp": {"first": "a", "this": "never"}}
    assert machine_state.kept_differences([first], other, ignore) == (1, {"thp": {"first": "a", "now": "never"}})


def test_each_run_is_compared_with_the_first_run_by_start_time_on_its_host():
    runs = [
        {"run": 2, "start_epoch": 20.0, "machine_state": state(thp="never")},
        {"run": 1, "start_epoch": 10.0, "machine_state": state()},
        {"run": 3, "start_epoch": 30.0, "machine_state": state(hostname="h2", aslr=0)},
        {"run": 4, "start_epoch": 40.0, "machine_state": state(hostname="h2")},
        {"run": 5, "start_epoch": 50.0},  # recorded no state: not compared
    ]
    machine_state.annotate_drift(runs)
    drift = {r["run"]: r.get("state_drift") for r in runs}
    assert drift == {1: {}, 2: {"thp": {"first": "a", "this": "never"}}, 3: {},
                     4: {"aslr": {"first": 0, "this": "a"}}, 5: None}  # fmt: skip


def test_a_resume_counts_the_kept_runs_of_this_host_measured_in_another_state():
    now = state(boot_id="b2", kernel="6.2")
    kept = [state(boot_id="b1", kernel="6.1"), state(boot_id="b1", kernel="6.1"), now, state(hostname="node7")]
    count, keys = machine_state.kept_differences(kept, now)
    assert count == 2
    assert keys == {"kernel": {"first": "6.1", "now": "6.2"}, "boot_id": {"first": "b1", "now": "b2"}}
    assert machine_state.kept_differences([now], now) == (0, {})


def test_a_records_flag_names_each_change_and_how_many_of_its_runs():
    runs = [{"state_drift": {}}, {"state_drift": {"thp": {"first": "madvise", "this": "never"}}},
            {"state_drift": {"thp": {"first": "madvise", "this": "always"}, "aslr": {"first": 2, "this": 0}}},
            {"wall_s": 1.0}]  # fmt: skip
    assert state_drift_flags(runs) == [
        "machine state drift in 2 of 3 runs (vs the campaign's first run): thp madvise -> never / madvise -> always, aslr 2 -> 0"
    ]
    assert state_drift_flags(runs[:1]) == [] and state_drift_flags([{"wall_s": 1.0}]) == []


def test_the_identity_is_this_machines_state_read_now():
    found = machine_state.identity()
    assert list(found) == ["hostname", *machine_state.DRIFT_KEYS]
    assert found["boot_id"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert found["kernel"] == os.uname().release and found["hostname"] == os.uname().nodename
    assert found["thp"] == metadata.transparent_hugepages() and found["aslr"] == metadata.randomize_va_space()
    assert found["online_cpus"] == Path("/sys/devices/system/cpu/online").read_text().strip()
    assert found["perf_event_max_sample_rate"] == metadata.perf_sample_rate()
    if not metadata.governor_files():  # a VM without cpufreq: recorded as absent
        assert found["governor"] is None and found["frequency_limits"] is None
    json.dumps(found)  # machine.json keeps it as it is
    real = [ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("microcode")]
    assert found["microcode"] == (real[0].split(":", 1)[1].strip() if real else None)


def test_the_microcode_is_the_first_cpus_read_from_the_files_head(tmp_path):
    block = (
        "processor\t: {0}\nvendor_id\t: GenuineIntel\nmicrocode\t: 0x{1:x}\n" + "flags\t\t: fpu" + " x" * 600 + "\n\n"
    )
    many = tmp_path / "cpuinfo"
    many.write_text("".join(block.format(cpu, 0x2B000600 + cpu) for cpu in range(256)))
    assert metadata.microcode(str(many)) == "0x2b000600"
    (tmp_path / "none").write_text(block.replace("microcode", "model").format(0, 0))
    assert metadata.microcode(str(tmp_path / "none")) is None  # an Arm machine has no such line
    assert metadata.microcode(str(tmp_path / "missing")) is None


# ---- through Snakemake ---------------------------------------------------------


@pytest.mark.machine_settings  # it writes THP: no other test runs meanwhile (tests/conftest.py)
@pytest.mark.skipif(not is_root(), reason="changes transparent huge pages between two runs: needs root")
def test_a_run_measured_after_the_machine_state_changed_is_flagged_everywhere(tmp_path):
    before = metadata.transparent_hugepages()
    assert before is not None, "this kernel has no transparent huge pages"
    other = "never" if before != "never" else "madvise"
    marker = tmp_path / "changed"
    # The first run to start changes the setting; the next one is measured under it.
    command = f"if [ ! -e {marker} ]; then touch {marker}; echo {other} > {metadata.THP}; fi; echo value=1"
    try:
        proc = snakemake(tmp_path, campaign(tmp_path, command), env=NOT_STRICT)
    finally:
        Path(metadata.THP).write_text(f"{before}\n")
    assert metadata.transparent_hugepages() == before
    assert_flagged(tmp_path, proc.stdout + proc.stderr, "thp", before, other)


def said(proc: subprocess.CompletedProcess, prefix: str, suffix: str) -> None:
    """The invocation printed one line about the kept runs, with this start
    and end (between them, any other setting that changed meanwhile: the
    kernel lowers the perf sample rate by itself under a heavy perf load)."""
    lines = [x for x in proc.stderr.splitlines() if "run(s) kept" in x]
    assert len(lines) == 1 and lines[0].startswith(prefix) and lines[0].endswith(suffix), proc.stderr[-3000:]


def test_a_resume_after_a_reboot_says_so_and_strict_mode_refuses_to_mix_the_states(tmp_path):
    # No test changing the machine's settings runs meanwhile (tests/conftest.py's machine lock).
    resume_after_a_reboot(tmp_path)


def resume_after_a_reboot(tmp_path: Path) -> None:
    path = campaign(tmp_path, "echo value=1")
    # Half the campaign, then a "reboot": the kept run recorded another boot id.
    snakemake(tmp_path, path, "--cores", "1", str(RUNS / "run-1/status.json"), env=NOT_STRICT)
    recorded = tmp_path / RUNS / "run-1" / machine_state.STATE_FILE
    data = json.loads(recorded.read_text())
    now = data["state"]["boot_id"]
    assert now == metadata.boot_id()
    data["state"]["boot_id"] = EARLIER_BOOT
    recorded.write_text(json.dumps(data))
    kept = (tmp_path / RUNS / "run-1/status.json").stat().st_mtime_ns
    line = f"c: 1 run(s) kept were measured under another boot (boot id {EARLIER_BOOT}, now {now})"
    fix = ("does not mix machine states in one campaign: re-run it from scratch (remove results/c/runs) "
           "or accept the change with --config state_change=accept")  # fmt: skip

    def refused(proc: subprocess.CompletedProcess, why: str) -> None:
        assert proc.returncode != 0
        said(proc, f"perfsnake: error: {line}", f": {why} {fix}")
        # nothing ran: no new run directory, the kept run untouched
        assert sorted(p.name for p in (tmp_path / RUNS).iterdir()) == ["run-1"]
        assert (tmp_path / RUNS / "run-1/status.json").stat().st_mtime_ns == kept

    refused(snakemake(tmp_path, path, env=STRICT, check=False), "strict mode")
    aslr = "off" if metadata.randomize_va_space() == 0 else "on"  # steady: the caller holds the settings
    requiring = campaign(tmp_path, "echo value=1", requires={"aslr": aslr})
    refused(snakemake(tmp_path, requiring, env=NOT_STRICT, check=False), "its requires:")
    path = campaign(tmp_path, "echo value=1")

    accepted = snakemake(tmp_path, None, "-n", "--config", f"campaign={path}", "state_change=accept", env=STRICT)
    said(accepted, f"perfsnake: {line}", " (strict mode, state_change=accept: resuming anyway)")

    proc = snakemake(tmp_path, path, env=NOT_STRICT)
    said(proc, f"perfsnake: {line}", " (resuming: its new runs are flagged)")
    assert sorted(p.name for p in (tmp_path / RUNS).iterdir()) == ["run-1", "run-2"]
    assert (tmp_path / RUNS / "run-1/status.json").stat().st_mtime_ns == kept
    assert_flagged(tmp_path, proc.stdout + proc.stderr, "boot_id", EARLIER_BOOT, now)
    # Complete now: nothing resumes, nothing is said.
    again = snakemake(tmp_path, path, "-n", env=STRICT)
    assert "run(s) kept" not in again.stderr


def test_runs_on_another_machine_record_no_state_of_this_one(tmp_path):
    """Platform ssh: the runs execute there, so this machine's state is not
    theirs: no machine_state, no state_drift, no column (and so no resume
    check)."""
    if not Path(sshd.SSHD).exists():
        pytest.skip("openssh-server is not installed (scripts/setup/apt.sh installs it)")
    server = sshd.start(tmp_path / "sshd")
    try:
        snakemake(
            tmp_path, campaign(tmp_path, "echo value=1", platform=server.platform(tmp_path / "remote")), env=NOT_STRICT
        )
    finally:
        sshd.stop(server)
    found = results(tmp_path)
    assert [r["status"] for r in found] == ["ok", "ok"]
    assert not any("machine_state" in r or "state_drift" in r for r in found)
    assert "machine.state_drift" not in read_results(tmp_path / "results/c/c.csv").columns


def test_the_boot_is_read_once_per_process(monkeypatch):
    # No process outlives its boot: a batch's runs read the boot id and the
    # kernel once, and every other key of the identity before each run.
    calls = []
    monkeypatch.setattr(machine_state, "_this_boot", None)
    monkeypatch.setattr(metadata, "boot_id", lambda: calls.append(1) or "b00t")
    thp = []
    monkeypatch.setattr(metadata, "transparent_hugepages", lambda: thp.append(1) or "never")
    for _ in range(3):
        found = machine_state.identity()
        assert found["boot_id"] == "b00t" and found["kernel"] == os.uname().release and found["thp"] == "never"
    assert len(calls) == 1 and len(thp) == 3
    monkeypatch.setattr(machine_state, "_this_boot", (-1, "old", "other"))  # another process's (a fork)
    assert machine_state.identity()["boot_id"] == "b00t" and len(calls) == 2


def test_collect_reads_the_launchers_snapshots_and_an_earlier_versions_machine_json(tmp_path):
    """The load and other processes' CPU come from status.json's `machine`
    (psrun, around its clock); a run recorded before psrun took them has
    them in machine.json, still read. The identity is machine.json's either way."""
    from perfsnake.benchmarks.command import CommandBenchmark
    from perfsnake.stages.collect import collect_run

    identity = {"hostname": "h", "kernel": "k"}
    status = {"status": "ok", "exit_code": 0, "wall_s": 1.0, "start": "s", "end": "e", "start_epoch": 1.0,
              "end_epoch": 2.0, "utime_s": 0.5, "stime_s": 0.1}  # fmt: skip
    now = {"before": {"load1": 0.5, "busy_s": 10.0, "mem_available_mb": 900.0, "cpu_mhz": None},
           "after": {"load1": 0.6, "busy_s": 11.0, "mem_available_mb": 890.0, "cpu_mhz": None}}  # fmt: skip
    earlier = {"before": {**now["before"], "load1": 3.0}, "after": {**now["after"], "busy_s": 13.0}}
    bench = CommandBenchmark({"type": "command", "command": "true"}, "c.yaml")
    got = {}
    for way, (in_status, in_file) in {"now": (now, {}), "earlier": (None, earlier)}.items():
        rdir = tmp_path / way
        rdir.mkdir()
        (rdir / "status.json").write_text(json.dumps({**status, **({"machine": in_status} if in_status else {})}))
        (rdir / "stdout.txt").write_text("")
        (rdir / machine_state.STATE_FILE).write_text(json.dumps({**in_file, machine_state.IDENTITY: identity}))
        got[way] = collect_run(rdir, bench, {}, {}, "c", 1)
    assert got["now"]["machine"]["load1"] == 0.5
    assert got["now"]["machine"]["other_cpu_s"] == pytest.approx(0.4)  # 1.0 s busy - the run's 0.6
    assert got["earlier"]["machine"]["load1"] == 3.0
    assert got["earlier"]["machine"]["other_cpu_s"] == pytest.approx(2.4)
    assert got["now"]["machine_state"] == got["earlier"]["machine_state"] == identity
