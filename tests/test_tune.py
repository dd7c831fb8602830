"""`perfsnake tune`, `--show` and `--reset` on this machine's real files (ASLR,
transparent huge pages, the perf sample rate, IRQ affinity), each changed
for a moment and restored by the test's own finally; the cpufreq and SMT
files in a tree the test builds in a private mount namespace (this VM has no
cpufreq, and switching SMT for real would take CPUs from everyone)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from helpers import ROOT
from users import checkout_for, ensure_user, is_root, run_as, user_python

from perfsnake.machine import metadata
from perfsnake.machine.sysinfo import online_cpus, parse_cpu_list
from perfsnake.machine.tune import DEFAULT_AFFINITY

needs_root = pytest.mark.skipif(not is_root(), reason="writes the kernel's settings: needs root")
#: Every test here reads or changes the machine's settings: none runs beside
#: another test of any session on this machine (tests/conftest.py).
pytestmark = pytest.mark.machine_settings
CPU = "/sys/devices/system/cpu"


def tune(*args: str, python: str = sys.executable, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*prefix, python, "-m", "perfsnake", "tune", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def as_nobody(*args: str) -> subprocess.CompletedProcess:
    """`perfsnake tune ARGS` as a normal user (this one when the suite is not
    root; else the session's test user, from their own checkout and setup)."""
    if not is_root():
        return tune(*args)
    user = ensure_user("alice").pw_name
    argv = [str(user_python(user)), "-m", "perfsnake", "tune", *args]
    return run_as(user, argv, cwd=checkout_for(user), timeout=120)


def read(path: str) -> str:
    return Path(path).read_text().strip()


def write(path: str, value: str) -> None:
    try:
        Path(path).write_text(f"{value}\n")
    except OSError:
        pass  # an IRQ gone meanwhile, or one the kernel manages (never changed)


class Originals:
    """This machine's settings as the test found them, written back by restore()."""

    def __init__(self) -> None:
        self.files = {metadata.ASLR: read(metadata.ASLR), metadata.PERF_SAMPLE_RATE: read(metadata.PERF_SAMPLE_RATE)}
        self.thp = metadata.transparent_hugepages()
        self.irqs = {n: affinity for n, _names, affinity in metadata.irqs()}
        self.default = read(DEFAULT_AFFINITY)

    def restore(self) -> None:
        for path, value in self.files.items():
            if read(path) != value:
                write(path, value)
        if self.thp and metadata.transparent_hugepages() != self.thp:
            write(metadata.THP, self.thp)
        for number, affinity in self.irqs.items():
            path = f"/proc/irq/{number}/smp_affinity_list"
            if Path(path).exists() and read(path) != affinity:
                write(path, affinity)
        if read(DEFAULT_AFFINITY) != self.default:
            write(DEFAULT_AFFINITY, self.default)

    def differences(self, irqs: Iterable[int] = ()) -> dict[str, tuple[str, str]]:
        """What differs now from these originals, of what tune may write:
        ASLR, THP, the sample rate, the default IRQ affinity, and the IRQs
        `irqs` (the ones a tune changed: the kernel moves others on its own)."""
        now = Originals()
        before = {**self.files, "thp": self.thp, "default affinity": self.default}
        after = {**now.files, "thp": now.thp, "default affinity": now.default}
        for number in irqs:
            if number in self.irqs and number in now.irqs:
                before[f"irq {number}"], after[f"irq {number}"] = self.irqs[number], now.irqs[number]
        return {k: (before[k] or "", after[k] or "") for k in before if before[k] != after[k]}


@pytest.fixture
def machine(request) -> Iterator[Originals]:
    # No other test runs meanwhile (the machine_settings marker's lock): a
    # test tuning in parallel would make its tuned values our originals.
    assert request.node.get_closest_marker("machine_settings"), "a test changing the machine's settings needs the mark"
    before = Originals()
    try:
        yield before
    finally:
        before.restore()


def test_show_works_for_anyone_and_says_what_this_machine_has(machine):
    root_view = tune("--show")
    assert root_view.returncode == 0, root_view.stderr
    lines = root_view.stdout.splitlines()
    keys = [line.split(":")[0] for line in lines]
    assert keys == ["governor", "turbo", "smt", "aslr", "transparent huge pages",
                    "kernel.perf_event_max_sample_rate", "irq affinity", "isolation", "tune state"]  # fmt: skip
    by_key = dict(zip(keys, lines, strict=True))
    aslr = int(read(metadata.ASLR))
    assert by_key["aslr"] == f"aslr: {'off' if aslr == 0 else 'on'} (randomize_va_space={aslr})"
    assert by_key["transparent huge pages"].endswith(f": {metadata.transparent_hugepages()}")
    assert by_key["kernel.perf_event_max_sample_rate"].endswith(f": {read(metadata.PERF_SAMPLE_RATE)}")
    if not metadata.governor_files():
        assert by_key["governor"] == "governor: no cpufreq on this machine (a VM, or no cpufreq driver)"
    control = metadata.smt_state()[0]
    assert by_key["smt"].startswith(f"smt: {control} (active" if control else "smt: no SMT control")
    assert "kernel command line" in by_key["isolation"]
    user_view = as_nobody("--show")
    assert user_view.returncode == 0, user_view.stderr
    assert [line.split(":")[0] for line in user_view.stdout.splitlines()] == keys


def test_a_normal_user_changes_nothing_and_is_told_root_in_one_line(machine):
    before = machine
    aslr = "off" if before.files[metadata.ASLR] != "0" else "on"
    proc = as_nobody("--aslr", aslr, "--thp", "never", *(["--cpus", "0"] if len(online_cpus()) > 1 else []))
    assert proc.returncode == 1 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "needs root" in proc.stderr and "aslr" in proc.stderr and "nothing changed" in proc.stderr
    assert before.differences() == {}


@needs_root
def test_tune_show_and_reset_change_this_machine_and_put_it_back(tmp_path, machine):
    state = tmp_path / "tune-state.json"
    before = machine
    aslr = "on" if before.files[metadata.ASLR] == "0" else "off"
    thp = "madvise" if before.thp == "never" else "never"
    rate = max(1, int(before.files[metadata.PERF_SAMPLE_RATE]) // 2)
    cpu = online_cpus()[-1] if len(online_cpus()) > 1 else None
    args = ["--state", str(state), "--aslr", aslr, "--thp", thp, "--perf-sample-rate", str(rate)]
    args += ["--cpus", str(cpu)] if cpu is not None else []
    try:
        proc = tune(*args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out = proc.stdout.splitlines()
        # What this machine lets change changed, each said once.
        assert read(metadata.ASLR) == ("0" if aslr == "off" else "2")
        assert metadata.transparent_hugepages() == thp
        assert read(metadata.PERF_SAMPLE_RATE) == str(rate)
        assert sum(line.startswith("aslr: ") for line in out) == 1
        assert f"transparent huge pages: {before.thp} -> {thp}" in out
        assert f"kernel.perf_event_max_sample_rate: {before.files[metadata.PERF_SAMPLE_RATE]} -> {rate}" in out
        if cpu is not None:
            refused = {n for line in out if line.startswith("irq affinity:") and " refused " in line
                       for n in parse_cpu_list(re.search(r"\(IRQs? ([0-9,-]+)", line).group(1))}  # fmt: skip
            for number, _names, affinity in metadata.irqs():
                assert cpu not in parse_cpu_list(affinity) or number in refused, (number, affinity, out)
            assert cpu not in mask_cpus(read(DEFAULT_AFFINITY))
            assert any(line.startswith("isolation: CPU ") and "kernel command line" in line for line in out)
        assert out[-1] == f"saved the values replaced in {state}: perfsnake tune --reset puts them back"
        saved = json.loads(state.read_text())["changes"]
        assert {c["path"]: c["before"] for c in saved}[metadata.ASLR] == before.files[metadata.ASLR]
        shown = tune("--show", "--state", str(state)).stdout
        assert f"aslr: {aslr} (" in shown and f"tune state: {len(saved)} values changed" in shown
        # Tuning again keeps the values from before the first tune.
        again = tune(*args)
        assert again.returncode == 0 and f"transparent huge pages: already {thp}" in again.stdout.splitlines()
        assert json.loads(state.read_text())["changes"] == saved
        back = tune("--reset", "--state", str(state))
        assert back.returncode == 0, back.stdout + back.stderr
        assert back.stdout.splitlines()[-1] == f"removed {state}" and not state.exists()
        assert f"transparent huge pages: {thp} -> {before.thp}" in back.stdout.splitlines()
        changed = [c["number"] for c in saved if c["what"] == "irq"]
        assert before.differences(changed) == {}, back.stdout
        nothing = tune("--reset", "--state", str(state))
        assert nothing.returncode == 0 and nothing.stdout.startswith("nothing to put back")
    finally:
        before.restore()


def mask_cpus(mask: str) -> set[int]:
    value = int(mask.replace(",", ""), 16)
    return {i for i in range(value.bit_length()) if value >> i & 1}


@needs_root
def test_reset_after_a_reboot_writes_the_saved_values_back_but_not_to_an_irq_that_now_serves_another_device(
    tmp_path, machine
):
    state = tmp_path / "tune-state.json"
    before = machine
    aslr = "on" if before.files[metadata.ASLR] == "0" else "off"
    movable = [(n, names, a) for n, names, a in metadata.irqs() if len(parse_cpu_list(a)) > 1]
    try:
        proc = tune("--state", str(state), "--aslr", aslr, *(["--cpus", str(online_cpus()[-1])] if movable else []))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        data = json.loads(state.read_text())
        irq_changes = [c for c in data["changes"] if c["what"] == "irq"]
        for c in data["changes"]:
            c["boot_id"] = "an-earlier-boot"
        if irq_changes:
            irq_changes[0]["names"] = "a-device-of-the-earlier-boot"
        state.write_text(json.dumps(data))
        back = tune("--reset", "--state", str(state))
        out = back.stdout.splitlines()
        assert (
            back.returncode == 0
            and out[0] == "the machine rebooted since tune: writing back the values recorded before it"
        )
        assert read(metadata.ASLR) == before.files[metadata.ASLR]
        if irq_changes:
            number = irq_changes[0]["number"]
            left = [line for line in out if "left as is" in line]
            assert len(left) == 1 and f"IRQ {number}" in left[0] and "a-device-of-the-earlier-boot" in left[0], out
            assert read(f"/proc/irq/{number}/smp_affinity_list") == irq_changes[0]["after"]  # not written back
    finally:
        before.restore()


# ---- cpufreq and SMT, in a tree of our own -----------------------------------------


def in_private_sysfs(
    tmp_path: Path, tree: dict[str, str], *commands: list[str]
) -> list[tuple[subprocess.CompletedProcess, dict[str, str]]]:
    """Each `perfsnake tune` command run in a mount namespace where a tmpfs
    holding `tree` (path under /sys/devices/system/cpu -> content) hides the
    real directory; with what each left in every file of the tree."""
    results = []
    setup = [f"mount -t tmpfs perfsnake-test {CPU}"]
    for rel, content in tree.items():
        setup.append(f"mkdir -p {CPU}/{Path(rel).parent} && printf '%s\\n' '{content}' > {CPU}/{rel}")
    steps = []
    for i, argv in enumerate(commands):
        steps.append(f"{shlex.quote(sys.executable)} -m perfsnake tune {' '.join(argv)} > {tmp_path}/out{i} 2> {tmp_path}/err{i}; "
                     f"echo $? > {tmp_path}/rc{i}; grep -r . {CPU} > {tmp_path}/files{i}")  # fmt: skip
    script = " && ".join(setup) + "\n" + "\n".join(steps)
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for i, argv in enumerate(commands):
        run = subprocess.CompletedProcess(argv, int((tmp_path / f"rc{i}").read_text()),
                                          (tmp_path / f"out{i}").read_text(), (tmp_path / f"err{i}").read_text())  # fmt: skip
        files = dict(
            line.removeprefix(CPU + "/").split(":", 1) for line in (tmp_path / f"files{i}").read_text().splitlines()
        )
        results.append((run, files))
    return results


def cpu_tree(turbo: dict[str, str]) -> dict[str, str]:
    """Four online CPUs with cpufreq (CPU 3 already at performance), SMT on, and `turbo`'s switch files."""
    tree = {"online": "0-3", "smt/control": "on", "smt/active": "1", **turbo}
    for cpu in range(4):
        tree[f"cpu{cpu}/cpufreq/scaling_governor"] = "performance" if cpu == 3 else "powersave"
        tree[f"cpu{cpu}/cpufreq/scaling_available_governors"] = "performance powersave"
    return tree


@needs_root
@pytest.mark.parametrize(
    "turbo, off",
    [
        ({"intel_pstate/no_turbo": "0"}, {"intel_pstate/no_turbo": "1"}),
        ({"cpufreq/boost": "1"}, {"cpufreq/boost": "0"}),  # acpi-cpufreq, amd-pstate
        ({f"cpu{c}/cpufreq/cpb": "1" for c in range(4)}, {f"cpu{c}/cpufreq/cpb": "0" for c in range(4)}),  # older AMD
    ],
    ids=["intel_pstate", "cpufreq-boost", "cpb"],
)
def test_governor_turbo_and_smt_are_set_and_put_back(tmp_path, turbo, off):
    state = tmp_path / "state.json"
    tree = cpu_tree(turbo)
    (tuned, after), (shown, _), (reset, restored) = in_private_sysfs(
        tmp_path, tree,
        ["--state", str(state), "--governor", "performance", "--turbo", "off", "--smt", "off"],
        ["--show", "--state", str(state)],
        ["--reset", "--state", str(state)],
    )  # fmt: skip
    assert tuned.returncode == 0, tuned.stdout + tuned.stderr
    lines = tuned.stdout.splitlines()
    assert lines[:3] == ["smt: on -> off", "governor: powersave -> performance (CPUs 0-2)", "governor: already performance (CPU 3)"]  # fmt: skip
    assert lines[3].startswith("turbo: on -> off (")
    assert all(after[f"cpu{c}/cpufreq/scaling_governor"] == "performance" for c in range(4))
    assert all(after[path] == value for path, value in off.items()) and after["smt/control"] == "off"
    assert "governor: performance (CPUs 0-3)" in shown.stdout and "turbo: off (" in shown.stdout
    assert "smt: off (" in shown.stdout
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert reset.stdout.splitlines()[-2:] == ["smt: off -> on", f"removed {state}"]
    assert restored == tree  # every file as it was: CPU 3 stays at performance, as found
    assert not state.exists()


@needs_root
def test_a_machine_without_cpufreq_says_so_in_one_line_and_changes_nothing(tmp_path):
    state = tmp_path / "state.json"
    tree = {"online": "0-1", "smt/control": "notsupported", "smt/active": "0", "cpu1/online": "1"}
    [(tuned, after)] = in_private_sysfs(tmp_path, tree, ["--state", str(state), "--governor", "performance", "--turbo", "off", "--smt", "off"])  # fmt: skip
    assert tuned.returncode == 0, tuned.stderr
    lines = tuned.stdout.splitlines()
    assert lines[:3] == [
        "smt: this CPU has no SMT to switch (smt/control: notsupported): nothing to set",
        "governor: no cpufreq on this machine (a VM, or no cpufreq driver): nothing to set",
        "turbo: no turbo/boost switch on this machine (no intel_pstate/no_turbo, cpufreq/boost or cpb): nothing to set",
    ]
    assert lines[3].startswith("isolation: ") and lines[4:] == ["nothing changed"]
    assert after == tree and not state.exists()
