"""`perfsnake tune`: this machine set up for steady measurements, its state
shown, and what was changed put back (pyperf's `system tune`, further).

    perfsnake tune                 the profile: governor performance, turbo off, ASLR off, THP never
    perfsnake tune --aslr off ...  only what the options name (--governor, --turbo, --smt, --aslr,
                                   --thp, --perf-sample-rate, --cpus: IRQs away from those CPUs)
    perfsnake tune --show          the state, for any user
    perfsnake tune --reset         put back what tune changed

Every file tune writes is recorded first, with the value it held, in a state
file (/var/lib/perfsnake/tune-state.json, or --state); --reset writes those values back, after a
reboot too (the values live in the file), and removes the file. Nothing is
written without root. Every change and every refusal is one line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from perfsnake.machine.metadata import (
    ASLR,
    IRQ_DIR,
    PERF_SAMPLE_RATE,
    SMT_CONTROL,
    THP,
    boot_id,
    governor_by_cpu,
    governor_files,
    irqs,
    isolated_cpus,
    nohz_full_cpus,
    perf_sample_rate,
    randomize_va_space,
    rcu_nocbs_cpus,
    selected,
    smt_state,
    transparent_hugepages,
    turbo,
    turbo_files,
)
from perfsnake.machine.sysinfo import cpu_ranges, online_cpus, parse_cpu_list
from perfsnake.safefile import write_text

#: Where root's tune keeps the values it replaced (--state to choose another).
STATE_FILE = Path("/var/lib/perfsnake/tune-state.json")
#: What `perfsnake tune` sets when no option names a setting.
PROFILE = {"governor": "performance", "turbo": "off", "aslr": "off", "thp": "never"}
#: The settings, in the order tune applies them (reset goes backwards): SMT
#: first, since switching it takes CPUs (and their governor files) away.
ORDER = ("smt", "governor", "turbo", "aslr", "thp", "perf_sample_rate", "irq", "irq_default")
TITLES = {
    "smt": "smt",
    "governor": "governor",
    "turbo": "turbo",
    "aslr": "aslr",
    "thp": "transparent huge pages",
    "perf_sample_rate": "kernel.perf_event_max_sample_rate",
    "irq": "irq affinity",
    "irq_default": "irq default affinity (new IRQs)",
}
DEFAULT_AFFINITY = f"{IRQ_DIR}/default_smp_affinity"
NO_CPUFREQ = "no cpufreq on this machine (a VM, or no cpufreq driver)"
NO_TURBO_SWITCH = "no turbo/boost switch on this machine (no intel_pstate/no_turbo, cpufreq/boost or cpb)"
KERNEL_CMDLINE = "kernel command line only: a reboot, not settable at run time"


def _mask_cpus(mask: str) -> set[int]:
    """The CPUs of a hexadecimal mask as /proc/irq/default_smp_affinity writes it ("00000000,0000000f")."""
    value = int(mask.replace(",", "") or "0", 16)
    return {i for i in range(value.bit_length()) if value >> i & 1}


def _mask(cpus: set[int]) -> str:
    return format(sum(1 << c for c in cpus), "x")


@dataclass
class Step:
    """One file to set: its setting, which CPU, policy or IRQ (unit and number), the value wanted."""

    what: str
    path: str
    value: str
    unit: str = ""
    number: int | None = None
    names: str = ""  # an IRQ's handlers: to recognise it after a reboot


@dataclass
class Change:
    """One file tune wrote, as the state file keeps it."""

    what: str
    path: str
    before: str
    after: str
    unit: str = ""
    number: int | None = None
    names: str = ""
    boot_id: str = ""


@dataclass
class Outcome:
    what: str
    path: str
    status: str  # changed, already, refused, left
    before: str
    after: str
    unit: str = ""
    number: int | None = None
    names: str = ""
    detail: str = ""
    expected: bool = False  # a refusal the machine always gives (a managed IRQ): not a failure


def _current(path: str) -> str | None:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return selected(text) or text  # THP's `always [madvise] never` reads as its choice


def _same(path: str, a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a == b
    if path.endswith("default_smp_affinity"):
        return _mask_cpus(a) == _mask_cpus(b)  # the kernel pads masks to its CPU count
    return a == b


def _write(path: str, value: str) -> str | None:
    """Write a sysfs or procfs value; None when it took, else why not."""
    try:
        # No O_CREAT: a file the kernel does not offer is never made.
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        os.write(fd, f"{value}\n".encode())
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        os.close(fd)
    now = _current(path)
    return None if _same(path, now, value) else f"wrote {value}, reads back {now}"


# ---- what to set -----------------------------------------------------------


def wanted(args: argparse.Namespace) -> dict[str, object]:
    """The settings asked for: the options given, else the profile."""
    given = {k: getattr(args, k) for k in ("governor", "turbo", "smt", "aslr", "thp", "perf_sample_rate", "cpus")}
    given = {k: v for k, v in given.items() if v is not None}
    return given or dict(PROFILE)


def plan(settings: dict[str, object], notes: list[str]) -> list[Step]:
    """The files to write for `settings` in the machine's present state;
    `notes` gets one line per setting this machine cannot take."""
    steps: list[Step] = []
    if "smt" in settings:
        control, _active = smt_state()
        if control is None:
            notes.append("smt: no SMT control on this machine (/sys/devices/system/cpu/smt): nothing to set")
        elif control in ("notsupported", "notimplemented"):
            notes.append(f"smt: this CPU has no SMT to switch (smt/control: {control}): nothing to set")
        elif control == "forceoff":
            notes.append(
                "smt: forced off (nosmt=force on the kernel command line): only a reboot without it changes that"
            )
        else:
            steps.append(Step("smt", SMT_CONTROL, str(settings["smt"])))
    if "governor" in settings:
        files = governor_files()
        if not files:
            notes.append(f"governor: {NO_CPUFREQ}: nothing to set")
        steps += [Step("governor", f, str(settings["governor"]), "CPU", c) for c, f in files.items()]
    if "turbo" in settings:
        switches = turbo_files()
        if not switches:
            notes.append(f"turbo: {NO_TURBO_SWITCH}: nothing to set")
        for path, off in switches:
            value = off if settings["turbo"] == "off" else str(1 - int(off))
            found = re.search(r"/(cpu|policy)(\d+)/", path)
            unit, number = (
                ("CPU" if found.group(1) == "cpu" else "policy", int(found.group(2))) if found else ("", None)
            )
            steps.append(Step("turbo", path, value, unit, number))
    if "aslr" in settings:
        steps.append(Step("aslr", ASLR, "0" if settings["aslr"] == "off" else "2"))
    if "thp" in settings:
        if transparent_hugepages() is None:
            notes.append("transparent huge pages: not in this kernel: nothing to set")
        else:
            steps.append(Step("thp", THP, str(settings["thp"])))
    if "perf_sample_rate" in settings:
        steps.append(Step("perf_sample_rate", PERF_SAMPLE_RATE, str(settings["perf_sample_rate"])))
    if "cpus" in settings:
        steps += _irq_steps(set(parse_cpu_list(str(settings["cpus"]))))
    return steps


def _irq_steps(away: set[int]) -> list[Step]:
    """Every IRQ allowed on a CPU of `away` allowed on the others only (on
    all the others when it was allowed on none of them)."""
    rest = set(online_cpus()) - away
    steps = []
    for number, names, affinity in irqs():
        allowed = set(parse_cpu_list(affinity))
        steps.append(
            Step(
                "irq", f"{IRQ_DIR}/{number}/smp_affinity_list", cpu_ranges(allowed - away or rest), "IRQ", number, names
            )
        )
    default = _current(DEFAULT_AFFINITY)
    if default is not None:
        steps.append(Step("irq_default", DEFAULT_AFFINITY, _mask(_mask_cpus(default) - away or rest)))
    return steps


def isolation_line(cpus: set[int] | None) -> str:
    """What only the kernel command line sets: isolcpus, nohz_full, rcu_nocbs."""
    found = {"isolcpus": isolated_cpus(), "nohz_full": nohz_full_cpus(), "rcu_nocbs": rcu_nocbs_cpus()}
    now = ", ".join(f"{k} {cpu_ranges(v) or 'none'}" for k, v in found.items())
    if not cpus:
        return f"isolation: {now}: {KERNEL_CMDLINE}"
    missing = [k for k, v in found.items() if not cpus <= set(v)]
    which = f"CPU{'s' if len(cpus) > 1 else ''} {cpu_ranges(cpus)}"
    if not missing:
        return f"isolation: {which} in {', '.join(found)} ({now})"
    add = " ".join(f"{k}={cpu_ranges(cpus)}" for k in missing)
    return f"isolation: {which} not in {', '.join(missing)} ({now}): add {add} to the kernel command line and reboot (not settable at run time)"


# ---- applying, and how it reads --------------------------------------------


def _refusal(step_what: str, error: str) -> tuple[str, bool]:
    if step_what == "irq" and ("not permitted" in error or "Input/output" in error):
        return f"{error}: the kernel or the driver manages this IRQ's affinity", True
    return error, False


def apply(step: Step, before: str | None) -> Outcome:
    """Write one step's value over `before` (what the file held)."""
    out = Outcome(step.what, step.path, "changed", before or "?", step.value, step.unit, step.number, step.names)
    if before is None:
        out.status, out.detail = "refused", f"cannot read {step.path}"
    elif _same(step.path, before, step.value):
        out.status = "already"
    elif error := _write(step.path, step.value):
        out.status = "refused"
        out.detail, out.expected = _refusal(step.what, error)
    return out


def _shown(what: str, path: str, raw: str) -> str:
    """A value as a person reads it: on/off for switches, CPU lists for masks."""
    if what == "turbo":
        return "off" if raw == ("1" if path.endswith("no_turbo") else "0") else "on"
    if what == "aslr":
        return "off" if raw == "0" else "on"
    if what == "irq_default" and raw != "?":
        return cpu_ranges(_mask_cpus(raw))
    return raw


def _file_note(what: str, path: str, before: str, after: str) -> str:
    """The file's own values where on/off hides them (ASLR's 2, no_turbo's inversion)."""
    if what in ("turbo", "aslr"):
        return f"{Path(path).name} {before} -> {after}"
    return ""


def lines(outcomes: list[Outcome]) -> list[str]:
    """One line per change, refusal or kind of "already", the CPUs or IRQs
    that share it gathered into one list."""
    groups: dict[tuple, list[Outcome]] = {}
    for o in outcomes:
        # turbo and ASLR lines name their file's values: one group per file
        key = (o.what, o.path if o.what in ("turbo", "aslr") else "", o.status, o.unit, o.before, o.after, o.detail)
        groups.setdefault(key, []).append(o)
    out = []
    for (what, path, status, unit, before, after, detail), members in groups.items():
        numbers = [m.number for m in members if m.number is not None]
        where = ""
        if numbers:
            noun = "policies" if unit == "policy" and len(numbers) > 1 else unit + ("s" if len(numbers) > 1 else "")
            where = f"{noun} {cpu_ranges(numbers)}"
        names = sorted({n for m in members for n in m.names.split(",") if n})
        if names and status == "refused":
            where += f": {', '.join(names[:6])}{', ...' if len(names) > 6 else ''}"
        b, a = _shown(what, path, before), _shown(what, path, after)
        note = "; ".join(p for p in (_file_note(what, path, before, after), where) if p)
        note = f" ({note})" if note else ""
        title = TITLES[what]
        if status == "changed":
            out.append(f"{title}: {b} -> {a}{note}")
        elif status == "already":
            out.append(f"{title}: already {a}{f' ({where})' if where else ''}")
        elif status == "left":
            out.append(f"{title}{f' ({where})' if where else ''}: left as is: {detail}")
        else:
            out.append(f"{title}: {b} -> {a} refused{note}: {detail}")
    return out


def _print(outcomes: list[Outcome]) -> None:
    for line in lines(outcomes):
        print(line)


# ---- the state file ----------------------------------------------------------


def load_state(path: Path) -> list[Change]:
    """The changes a previous tune recorded (none when there is no file)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise TuneError(f"cannot read the tune state {path}: {exc}") from None
    return [Change(**c) for c in data.get("changes", [])]


def save_state(path: Path, changes: list[Change]) -> None:
    if not changes:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    data = {
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "note": "values perfsnake tune replaced; `perfsnake tune --reset` writes them back",
        "changes": [asdict(c) for c in changes],
    }
    write_text(path, json.dumps(data, indent=1) + "\n")


def _record(state: list[Change], steps: list[Step], befores: dict[str, str]) -> tuple[list[Change], set[str]]:
    """The state with the steps about to change a file, and the files new to
    it: a file already there keeps the value it had before the first tune
    (an IRQ only if it still serves the same handlers)."""
    known = {c.path: c for c in state}
    added = set()
    boot = boot_id()
    for step in steps:
        before = befores.get(step.path)
        if before is None or _same(step.path, before, step.value):
            continue
        old = known.get(step.path)
        if old is not None and (old.what != "irq" or old.names == step.names):
            old.after = step.value
            continue
        change = Change(step.what, step.path, before, step.value, step.unit, step.number, step.names, boot)
        if old is not None:
            state = [c for c in state if c.path != step.path]
        state.append(change)
        known[step.path] = change
        added.add(step.path)
    return state, added


class TuneError(Exception):
    """A problem with the whole command (its state file, its options): one line."""


# ---- the commands --------------------------------------------------------------


def tune(settings: dict[str, object], state_path: Path) -> int:
    notes: list[str] = []
    first = plan({k: v for k, v in settings.items() if k == "smt"}, notes)
    if os.geteuid() != 0:
        rest = plan({k: v for k, v in settings.items() if k != "smt"}, [])
        pending = [s for s in first + rest if not _same(s.path, _current(s.path), s.value)]
        if not pending:
            print("perfsnake tune: everything asked is set already: nothing to change")
            return 0
        what = ", ".join(dict.fromkeys(TITLES[s.what] for s in pending))
        print(f"perfsnake tune: setting {what} needs root: nothing changed (perfsnake tune --show works for anyone)", file=sys.stderr)  # fmt: skip
        return 1
    state = load_state(state_path)
    outcomes: list[Outcome] = []
    for phase in ("smt", "rest"):
        if phase == "rest":
            online_cpus.cache_clear()  # SMT may have taken CPUs away (or brought them back)
            steps = plan({k: v for k, v in settings.items() if k != "smt"}, notes)
        else:
            steps = first
        befores = {s.path: v for s in steps if (v := _current(s.path)) is not None}
        # Recorded before writing: a tune killed halfway is still put back.
        state, added = _record(state, steps, befores)
        save_state(state_path, state)
        done = [apply(s, befores.get(s.path)) for s in steps]
        refused = {o.path for o in done if o.status == "refused"}
        state = [c for c in state if not (c.path in refused and c.path in added)]
        save_state(state_path, state)
        outcomes += done
    for note in notes:  # the settings this machine lacks, first as they come first
        print(note)
    _print(outcomes)
    cpus = set(parse_cpu_list(str(settings["cpus"]))) if "cpus" in settings else None
    print(isolation_line(cpus))
    if state:
        print(f"saved the values replaced in {state_path}: perfsnake tune --reset puts them back")
    else:
        print("nothing changed")
    return 1 if any(o.status == "refused" and not o.expected for o in outcomes) else 0


def reset(state_path: Path) -> int:
    state = load_state(state_path)
    if not state:
        print(f"nothing to put back: no tune state in {state_path} (perfsnake tune writes it)")
        return 0
    if os.geteuid() != 0:
        what = ", ".join(dict.fromkeys(TITLES[c.what] for c in state))
        print(f"perfsnake tune --reset: putting back {what} needs root: nothing changed", file=sys.stderr)
        return 1
    boot = boot_id()
    if any(c.boot_id != boot for c in state):
        print("the machine rebooted since tune: writing back the values recorded before it")
    names = {f"{IRQ_DIR}/{n}/smp_affinity_list": handlers for n, handlers, _ in irqs()}
    keep, outcomes = [], []
    for c in sorted(state, key=lambda c: ORDER.index(c.what), reverse=True):
        if c.what == "irq" and c.boot_id != boot and names.get(c.path) != c.names:
            # Another boot numbers IRQs anew: this number may serve another device now.
            now = names.get(c.path)
            detail = (
                f"serves {now or 'nothing named'} now, not {c.names or 'nothing named'}"
                if c.path in names
                else "gone since"
            )
            outcomes.append(Outcome(c.what, c.path, "left", "", "", c.unit, c.number, detail=detail))
            continue
        done = apply(Step(c.what, c.path, c.before, c.unit, c.number, c.names), _current(c.path))
        if done.status == "refused" and not done.expected:
            keep.append(c)
        outcomes.append(done)
    _print(outcomes)
    save_state(state_path, keep)
    if keep:
        print(f"{len(keep)} values could not be put back: kept in {state_path} (perfsnake tune --reset again)")
        return 1
    print(f"removed {state_path}")
    return 0


def show(state_path: Path) -> int:
    """The machine's state as tune sees it, for any user."""
    by_cpu = governor_by_cpu()
    if by_cpu:
        groups: dict[str, list[int]] = {}
        for cpu, gov in by_cpu.items():
            groups.setdefault(gov, []).append(cpu)
        print("governor: " + ", ".join(f"{g} (CPUs {cpu_ranges(c)})" for g, c in groups.items()))
    else:
        print(f"governor: {NO_CPUFREQ}")
    state = turbo()
    files = turbo_files()
    if state is None:
        print(f"turbo: {NO_TURBO_SWITCH}")
    else:
        shown = ", ".join(f"{Path(p).parent.name}/{Path(p).name}={_current(p)}" for p, _ in files[:4])
        print(f"turbo: {state} ({shown}{', ...' if len(files) > 4 else ''})")
    control, active = smt_state()
    print(f"smt: {control} (active {active})" if control else "smt: no SMT control on this machine")
    aslr = randomize_va_space()
    print(f"aslr: {'off' if aslr == 0 else 'on'} (randomize_va_space={aslr})" if aslr is not None else "aslr: unknown")
    print(f"transparent huge pages: {transparent_hugepages() or 'not in this kernel'}")
    print(f"kernel.perf_event_max_sample_rate: {perf_sample_rate()}")
    allowed: dict[str, list[int]] = {}
    for number, _names, affinity in irqs():
        allowed.setdefault(affinity, []).append(number)
    default = _current(DEFAULT_AFFINITY)
    spread = "; ".join(f"{a} (IRQ{'s' if len(n) > 1 else ''} {cpu_ranges(n)})" for a, n in allowed.items())
    print(f"irq affinity: {spread or 'no IRQs'}; new IRQs: {cpu_ranges(_mask_cpus(default)) if default else '?'}")
    print(isolation_line(None))
    try:
        saved = load_state(state_path)
    except TuneError as exc:
        print(f"tune state: {exc}")
        return 0
    if saved:
        what = ", ".join(dict.fromkeys(TITLES[c.what] for c in saved))
        print(
            f"tune state: {len(saved)} values changed ({what}) in {state_path}: perfsnake tune --reset puts them back"
        )
    else:
        print(f"tune state: nothing changed by perfsnake tune ({state_path})")
    return 0


# ---- the command line ------------------------------------------------------------


def _cpu_list(text: str) -> str:
    try:
        cpus = parse_cpu_list(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a CPU list such as 1 or 2-3,6") from None
    if not cpus:
        raise argparse.ArgumentTypeError("an empty CPU list")
    return cpu_ranges(cpus)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune",
        help="set this machine up for steady measurements (root), show its state (--show) or put it back (--reset)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--show", action="store_true", help="print the state (any user); changes nothing")
    mode.add_argument("--reset", action="store_true", help="write back every value tune replaced (from the state file)")
    p.add_argument("--governor", metavar="NAME", help="cpufreq governor of every online CPU (profile: performance)")
    p.add_argument(
        "--turbo", choices=["on", "off"], help="frequency boost: no_turbo, cpufreq boost or cpb (profile: off)"
    )
    p.add_argument(
        "--smt", choices=["on", "off"], help="simultaneous multithreading (not in the profile: it takes CPUs away)"
    )
    p.add_argument("--aslr", choices=["on", "off"], help="address-space layout randomisation (profile: off)")
    p.add_argument("--thp", choices=["never", "madvise", "always"], help="transparent huge pages (profile: never)")
    p.add_argument("--perf-sample-rate", type=_positive, metavar="N",
                   help="kernel.perf_event_max_sample_rate (not in the profile: perf record -F needs it above its frequency)")  # fmt: skip
    p.add_argument("--cpus", type=_cpu_list, metavar="LIST",
                   help="the benchmark's CPUs: every IRQ that allows it moves to the other CPUs (not in the profile)")  # fmt: skip
    p.add_argument(
        "--state", type=Path, default=STATE_FILE, metavar="FILE", help=f"the state file (default {STATE_FILE})"
    )


def main(args: argparse.Namespace) -> int:
    try:
        if args.show:
            return show(args.state)
        if args.reset:
            return reset(args.state)
        settings = wanted(args)
        if "cpus" in settings and not set(online_cpus()) - set(parse_cpu_list(str(settings["cpus"]))):
            raise TuneError(f"--cpus {settings['cpus']} leaves no online CPU for the IRQs")
        return tune(settings, args.state)
    except TuneError as exc:
        print(f"perfsnake tune: {exc}", file=sys.stderr)
        return 1
