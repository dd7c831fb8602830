"""A campaign's `requires:`: met, it runs; unmet, `perfsnake validate` and the
workflow refuse to start, one line per item naming the fix, and nothing is
written; `on_unmet: warn` says the same and runs; an unknown key or value is
refused in one line. Checked against this machine's real ASLR setting."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import ROOT, snakemake, write_campaign

from perfsnake.campaign import load_campaign
from perfsnake.errors import CampaignError
from perfsnake.machine import metadata
from perfsnake.machine.requirements import requirement_metadata


@pytest.fixture
def aslr() -> Iterator[tuple[str, str, int]]:
    """(ASLR now, the other setting, randomize_va_space), steady while the test
    runs (no test changing the machine's settings runs beside it: tests/conftest.py)."""
    value = metadata.randomize_va_space()
    assert value is not None
    now = "off" if value == 0 else "on"
    yield now, "on" if now == "off" else "off", value


def campaign(tmp_path: Path, requires: dict, **more: object) -> Path:
    data = {"name": "c", "benchmark": {"type": "command", "command": "true"}, "nb_runs": 1, "requires": requires}
    return write_campaign(tmp_path, {**data, **more})


def validate(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfsnake", "validate", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def test_a_campaign_requiring_the_machines_state_runs(tmp_path, aslr):
    now, _other, _value = aslr
    path = campaign(tmp_path, {"aslr": now})
    proc = validate(path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert snakemake(tmp_path, path, "-n").returncode == 0


def test_an_unmet_requirement_stops_validate_and_the_workflow_in_one_line_naming_the_fix(tmp_path, aslr):
    now, other, value = aslr
    path = campaign(tmp_path, {"aslr": other})
    expected = f"{path}: requires.aslr: ASLR is {now} (randomize_va_space={value}); perfsnake tune --aslr {other}"
    proc = validate(path)
    assert proc.returncode == 1 and proc.stderr.splitlines() == [f"perfsnake: error: {expected}"]
    run = snakemake(tmp_path, path, "-n", check=False)
    assert run.returncode != 0
    assert [line for line in run.stderr.splitlines() if "requires." in line] == [f"perfsnake: error: {expected}"]
    assert not (tmp_path / "results").exists()


def test_several_unmet_items_are_one_line_each(tmp_path, aslr):
    _now, other, _value = aslr
    thp = metadata.transparent_hugepages()
    other_thp = "madvise" if thp == "never" else "never"
    path = campaign(tmp_path, {"aslr": other, "thp": other_thp})
    lines = validate(path).stderr.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"perfsnake: error: {path}: requires.aslr: ") and lines[0].endswith(f"perfsnake tune --aslr {other}")  # fmt: skip
    assert lines[1] == f"{path}: requires.thp: transparent huge pages are {thp}; perfsnake tune --thp {other_thp}"


def test_on_unmet_warn_says_so_per_item_and_runs(tmp_path, aslr):
    now, other, value = aslr
    path = campaign(tmp_path, {"aslr": other}, on_unmet="warn")
    warning = (
        f"perfsnake: warning: {path}: requires.aslr: ASLR is {now} (randomize_va_space={value}); "
        f"perfsnake tune --aslr {other} (on_unmet: warn, running anyway)"
    )
    proc = validate(path)
    assert proc.returncode == 0 and proc.stderr.splitlines() == [warning]
    run = snakemake(tmp_path, path, "-n")
    assert warning in run.stderr.splitlines()


def test_the_results_record_the_requirement_and_what_was_unmet(aslr):
    now, other, value = aslr
    assert requirement_metadata({"aslr": now}) == {"requires": f"aslr={now}", "requires_unmet": "none"}
    # YAML's unquoted on/off are booleans: read as on/off.
    assert requirement_metadata({"aslr": other == "on"}) == {
        "requires": f"aslr={other}",
        "requires_unmet": f"aslr: ASLR is {now} (randomize_va_space={value})",
    }
    assert requirement_metadata({}) == {}


def test_a_governor_asked_of_a_machine_without_cpufreq_is_unmet(tmp_path):
    by_cpu = metadata.governor_by_cpu()
    # On a machine with cpufreq, a governor none of its CPUs runs stands in.
    wanted = "performance" if not by_cpu else next(g for g in ("userspace", "conservative", "powersave", "performance") if g not in by_cpu.values())  # fmt: skip
    path = campaign(tmp_path, {"governor": wanted})
    with pytest.raises(CampaignError) as err:
        load_campaign(path)
    message = str(err.value)
    if by_cpu:
        assert message.endswith(f"; perfsnake tune --governor {wanted}")
    else:
        assert message == f"{path}: requires.governor: no cpufreq on this machine (a VM, or no cpufreq driver); no governor to set"  # fmt: skip
    # Commands that only read results load it without looking at the machine.
    assert load_campaign(path, check_machine=False).data["requires"] == {"governor": wanted}


@pytest.mark.parametrize(
    "requires, more, expected",
    [
        ({"aslrr": "off"}, {}, "requires.aslrr: unknown key (did you mean 'aslr'?)"),
        ({"thp": "nevr"}, {}, "requires.thp: 'nevr' is not one of never, madvise, always (did you mean 'never'?)"),
        ({"governor": "perfomance"}, {}, "requires.governor: 'perfomance' is not one of performance, powersave, schedutil, ondemand, conservative, userspace (did you mean 'performance'?)"),
        ({"aslr": "of"}, {}, "requires.aslr: 'of' is not one of on, off, True, False (did you mean 'off'?)"),
        ({"isolated": "two"}, {}, "requires.isolated: 'two' does not match the pattern"),
        ({"isolated": "3-2"}, {}, "requires.isolated: '3-2' names no CPU (a range is low-high)"),
        ({"aslr": "off"}, {"on_unmet": "warning"}, "on_unmet: 'warning' is not one of refuse, warn (did you mean 'warn'?)"),
        ({"aslr": "off"}, {"platform": {"type": "ssh", "host": "bench1"}},
         "requires: checks this machine, but the runs execute on bench1 (platform ssh)"),
    ],
)  # fmt: skip
def test_unknown_keys_and_values_are_refused_in_one_line(tmp_path, requires, more, expected):
    path = campaign(tmp_path, requires, **more)
    proc = validate(path)
    assert proc.returncode == 1
    assert len(proc.stderr.splitlines()) == 1 and f"perfsnake: error: {path}: {expected}" in proc.stderr, proc.stderr


def test_the_results_csv_records_the_requirement_and_reading_commands_are_not_refused(tmp_path, aslr):
    """A campaign run under on_unmet: warn carries `requires` and `requires_unmet`
    in its CSV's metadata; summary and check only read results, so an unmet
    requirement does not stop them (run it with warn, then read it strictly)."""
    from perfsnake.campaign_csv import read_metadata

    now, other, _value = aslr
    data = {"name": "c", "benchmark": {"type": "command", "command": "echo value=1", "metrics": {"value": r"value=(\d+)"}},
            "nb_runs": 1, "requires": {"aslr": other}}  # fmt: skip
    snakemake(tmp_path, write_campaign(tmp_path, {**data, "on_unmet": "warn"}))
    meta = read_metadata(tmp_path / "results/c/c.csv")
    assert meta["requires"] == f"aslr={other}" and meta["requires_unmet"].startswith(f"aslr: ASLR is {now}")
    strict = write_campaign(tmp_path, data)
    for command in (["summary"], ["check"], ["failed"]):
        proc = subprocess.run([sys.executable, "-m", "perfsnake", *command, "--config", f"campaign={strict}"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert proc.returncode == 0 and "requires" not in proc.stderr, (command, proc.stderr)
