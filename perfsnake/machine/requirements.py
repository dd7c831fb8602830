"""A campaign's `requires:`: the machine state it needs, checked against
this machine. Each unmet item is one phrase saying what the machine has and
the command that fixes it (`perfsnake tune ...`), or that only the kernel
command line can.

The keys and their values are the schema's (config/schemas/campaign.schema.yaml,
`requires`); the facts are read by perfsnake.machine.metadata, as the
results' metadata reads them.
"""

from __future__ import annotations

from collections.abc import Callable

from perfsnake.machine.metadata import (
    governor_by_cpu,
    irqs,
    isolated_cpus,
    nohz_full_cpus,
    perf_sample_rate,
    randomize_va_space,
    rcu_nocbs_cpus,
    smt_state,
    transparent_hugepages,
    turbo,
)
from perfsnake.machine.sysinfo import cpu_ranges, online_cpus, parse_cpu_list
from perfsnake.machine.tune import NO_CPUFREQ, NO_TURBO_SWITCH


def switch(value: object) -> str:
    """on/off as written: YAML reads an unquoted on or off as a boolean."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


#: What a check finds unmet: what the machine has, and what fixes it.
Unmet = tuple[str, str]


def _governor(value: object) -> Unmet | None:
    want = str(value)
    by_cpu = governor_by_cpu()
    if not by_cpu:
        return NO_CPUFREQ, "no governor to set"
    other = {c: g for c, g in by_cpu.items() if g != want}
    if not other:
        return None
    groups: dict[str, list[int]] = {}
    for cpu, gov in other.items():
        groups.setdefault(gov, []).append(cpu)
    now = ", ".join(f"{g} on CPU{'s' if len(c) > 1 else ''} {cpu_ranges(c)}" for g, c in groups.items())
    return f"the governor is {now}", f"perfsnake tune --governor {want}"


def _turbo(value: object) -> Unmet | None:
    want, now = switch(value), turbo()
    if now is None:
        return NO_TURBO_SWITCH, "nothing to set (a VM's host decides)"
    return None if now == want else (f"turbo is {now}", f"perfsnake tune --turbo {want}")


def _smt(value: object) -> Unmet | None:
    want = switch(value)
    control, active = smt_state()
    if control is None:
        return "no SMT control on this machine (/sys/devices/system/cpu/smt)", "cannot tell"
    if active == ("1" if want == "on" else "0"):
        return None
    if control in ("notsupported", "notimplemented"):
        return f"this CPU has no SMT (smt/control: {control})", "it cannot be on"
    if control == "forceoff":
        return "SMT is forced off (nosmt=force on the kernel command line)", "reboot without it"
    return f"SMT is {'on' if active == '1' else 'off'} (smt/control: {control})", f"perfsnake tune --smt {want}"


def _aslr(value: object) -> Unmet | None:
    want, number = switch(value), randomize_va_space()
    if number is None:
        return "cannot read /proc/sys/kernel/randomize_va_space", "cannot tell"
    now = "off" if number == 0 else "on"
    return None if now == want else (f"ASLR is {now} (randomize_va_space={number})", f"perfsnake tune --aslr {want}")


def _thp(value: object) -> Unmet | None:
    want, now = str(value), transparent_hugepages()
    if now is None:
        return "no transparent huge pages in this kernel", "cannot tell"
    return None if now == want else (f"transparent huge pages are {now}", f"perfsnake tune --thp {want}")


def _perf_sample_rate(value: object) -> Unmet | None:
    now = perf_sample_rate()
    if now == value:
        return None
    return f"kernel.perf_event_max_sample_rate is {now}", f"perfsnake tune --perf-sample-rate {value}"


def _boot_cpus(name: str, have: list[int], param: str, value: object) -> Unmet | None:
    """The CPUs wanted are among the ones the kernel command line gave `name`."""
    cpus = set(parse_cpu_list(str(value)))
    if cpus <= set(have):
        return None
    absent = cpus - set(online_cpus())
    gone = f" (CPU{'s' if len(absent) > 1 else ''} {cpu_ranges(absent)} not online here)" if absent else ""
    return (
        f"{name} CPUs are {cpu_ranges(have) or 'none'}, not {value}{gone}",
        f"boot with {param}={value} on the kernel command line (not settable at run time)",
    )


def _irqs_away_from(value: object) -> Unmet | None:
    cpus = set(parse_cpu_list(str(value)))
    near = [n for n, _names, affinity in irqs() if cpus & set(parse_cpu_list(affinity))]
    if not near:
        return None
    return (
        f"{len(near)} IRQ{'s' if len(near) > 1 else ''} ({cpu_ranges(near)}) may run on CPU {cpu_ranges(cpus)}",
        f"perfsnake tune --cpus {value} (an IRQ its driver manages stays)",
    )


#: requires: key -> its check (the value as the campaign writes it).
CHECKS: dict[str, Callable[[object], Unmet | None]] = {
    "governor": _governor,
    "turbo": _turbo,
    "smt": _smt,
    "aslr": _aslr,
    "thp": _thp,
    "perf_sample_rate": _perf_sample_rate,
    "isolated": lambda v: _boot_cpus("isolated", isolated_cpus(), "isolcpus", v),
    "nohz_full": lambda v: _boot_cpus("nohz_full", nohz_full_cpus(), "nohz_full", v),
    "rcu_nocbs": lambda v: _boot_cpus("rcu_nocbs", rcu_nocbs_cpus(), "rcu_nocbs", v),
    "irqs_away_from": _irqs_away_from,
}


def unmet(requires: dict[str, object]) -> list[tuple[str, Unmet]]:
    """(key, (what the machine has, the fix)) for every requirement this
    machine does not meet, in the order the campaign writes them."""
    out = []
    for key, value in requires.items():
        found = CHECKS[key](value)
        if found:
            out.append((key, found))
    return out


def describe(requires: dict[str, object]) -> str:
    """The requirement as one metadata value: `aslr=off, governor=performance`."""
    return ", ".join(f"{k}={switch(v)}" for k, v in requires.items())


def requirement_metadata(requires: dict[str, object] | None) -> dict[str, object]:
    """What the results record of a campaign's `requires:`: the requirement
    and, checked when this is called, what of it this machine did not meet
    (`none` when all of it)."""
    if not requires:
        return {}
    missing = unmet(requires)
    return {
        "requires": describe(requires),
        "requires_unmet": "; ".join(f"{k}: {state}" for k, (state, _fix) in missing) or "none",
    }
