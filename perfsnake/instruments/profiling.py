"""perf as command wrappers: `perf stat` metrics and `perf record` profiles.

perf stat writes a `;`-separated file in the run directory (never the
benchmark's own output); each event becomes a metric `perf_stat.<event>`,
its unit recorded beside it. Events the machine cannot count (a VM without a
hardware PMU reads `<not supported>` for cycles, instructions, cache misses)
are refused before any run, or with `unsupported: empty` become empty values
with one warning in the run's perf_stat.log.

perf record writes perf.data in the run directory; the Snakemake rules of
rules/profile.smk turn it into a report, folded stacks and flame graphs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

from perfsnake import layout
from perfsnake.errors import did_you_mean
from perfsnake.instruments.base import Context, text
from perfsnake.instruments.wrappers import Wrapper
from perfsnake.machine import capabilities

DEFAULT_EVENTS = ("task-clock", "context-switches", "cpu-migrations", "page-faults")
STAT_FILE = "perf.stat"
STAT_LOG = "perf_stat.log"
RECORD_FILE = "perf.data"

#: Portable event names -> what perf calls them on a CPU vendor, where known.
PORTABLE_EVENTS: dict[str, dict[str, str]] = {
    "cycles": {"default": "cycles"},
    "instructions": {"default": "instructions"},
    "branch-misses": {"default": "branch-misses"},
    "llc-misses": {"GenuineIntel": "LLC-load-misses", "AuthenticAMD": "cache-misses", "default": "cache-misses"},
    "llc-loads": {"GenuineIntel": "LLC-loads", "AuthenticAMD": "cache-references", "default": "cache-references"},
    "l1d-misses": {"default": "L1-dcache-load-misses"},
    "dtlb-misses": {"default": "dTLB-load-misses"},
    "stalled-cycles": {"GenuineIntel": "cycle_activity.stalls_total", "default": "stalled-cycles-backend"},
}


#: perf's generic hardware and cache event names: known everywhere, but only
#: a machine with a PMU counts them. Elsewhere they are refused, or with
#: `unsupported: empty` left empty with a warning (a campaign portable between
#: both kinds of machine).
GENERIC_EVENTS = frozenset({
    "cycles", "cpu-cycles", "instructions", "cache-references", "cache-misses", "branch-instructions", "branches",
    "branch-misses", "bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend", "ref-cycles",
    *(f"{cache}-{op}{kind}" for cache in ("L1-dcache", "L1-icache", "LLC", "dTLB", "iTLB", "branch", "node")
      for op in ("loads", "stores", "prefetches", "load", "store", "prefetch") for kind in ("", "-misses")),
})  # fmt: skip


@cache
def perf_events() -> frozenset[str]:
    """Event names `perf list` knows on this machine (aliases included)."""
    import subprocess

    try:
        out = subprocess.run(
            ["perf", "list", "--no-desc"], capture_output=True, text=True, timeout=60, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    names: set[str] = set()
    for line in out.splitlines():
        head = line.split("[", 1)[0].strip()
        names.update(n.strip() for n in head.split(" OR ") if n.strip())
    return frozenset(names)


def needs_pmu(name: str) -> bool:
    """A hardware or cache event, or a raw code: counted by the CPU's PMU, not by the kernel."""
    base = re.sub(r":[ukhHGpPS]+$", "", name)
    return base in GENERIC_EVENTS or bool(re.fullmatch(r"r[0-9a-fA-F]+", base)) or base.startswith("cpu/")


def unknown_event(name: str) -> bool:
    """A symbolic event name neither perf's generic ones nor listed here
    (raw codes and PMU/breakpoint syntax are passed through unchecked)."""
    base = re.sub(r":[ukhHGpPS]+$", "", name)
    if "/" in base or re.fullmatch(r"r[0-9a-fA-F]+", base) or base.startswith("mem:"):
        return False
    known = perf_events()
    return bool(known) and base not in known and base not in GENERIC_EVENTS


@cache
def cpu_vendor() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("vendor_id"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def resolve_event(name: str, vendor: str | None = None) -> str:
    """The perf name of a (possibly portable) event on this CPU."""
    table = PORTABLE_EVENTS.get(name.lower())
    if table is None:
        return name
    return table.get(vendor or cpu_vendor(), table["default"])


SPIN_SHARE = "perf_record.spin_share"
_SELF = re.compile(r"^\s*([0-9.]+)%\s+\[[^\]]+\]\s+(.+?)\s*$", re.M)


def spin_share(data: Path, pattern: str) -> float | None:
    """Share of a recording's samples whose own function (not its callers) matches `pattern`."""
    import subprocess

    proc = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort", "sym", "-g", "none",
                           "-q", "--percent-limit", "0"], capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    rows = _SELF.findall(proc.stdout)
    if proc.returncode != 0 or not rows:
        return None
    spin = re.compile(pattern)
    return sum(float(p) for p, sym in rows if spin.search(sym)) / 100


def _number(value: str) -> float | int | None:
    """A perf stat value, whatever the locale's decimal separator."""
    if value.startswith("<"):  # <not supported>, <not counted>
        return None
    value = value.replace(",", ".")
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return None


def parse_perf_stat(content: str) -> tuple[dict[str, object], dict[str, str], list[str]]:
    """(values, units, unsupported events) from `perf stat -x ';'` output."""
    values: dict[str, object] = {}
    units: dict[str, str] = {}
    unsupported: list[str] = []
    for line in content.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(";")
        if len(fields) < 3:
            continue
        raw, unit, event = fields[0].strip(), fields[1].strip(), fields[2].strip()
        event = re.sub(r":[ukhHG]+$", "", event)  # modifiers such as cycles:u
        value = _number(raw)
        values[f"perf_stat.{event}"] = value
        if unit:
            units[f"perf_stat.{event}"] = unit
        if value is None:
            unsupported.append(event)
    return values, units, unsupported


def _require_perf(instrument: Wrapper) -> None:
    # At perf_event_paranoid 3 (Debian's default) a normal user may not open
    # any perf event: every run would fail, so refuse before the first.
    problem = capabilities.sampling_problem()
    if problem:
        raise instrument.fail(f"perf cannot count or sample for this user: {problem}")


class PerfStat(Wrapper):
    """perf stat -x ';' with the campaign's events (software events by default)."""

    kind = "perf_stat"
    observer = True
    options: dict[str, object] = {"events": list(DEFAULT_EVENTS), "unsupported": "refuse"}
    UNSUPPORTED = ("refuse", "empty")

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        self.require_tool("perf", "linux-perf")
        _require_perf(self)
        events = self.spec["events"]
        if (
            not isinstance(events, list)
            or not events
            or not all(isinstance(e, str) and re.fullmatch(r"[A-Za-z0-9_.:/,=-]+", e) for e in events)
        ):
            raise self.fail("expected a non-empty list of event names", "events")
        if self.spec["unsupported"] not in self.UNSUPPORTED:
            raise self.fail(f"expected one of {', '.join(self.UNSUPPORTED)}", "unsupported")
        self.events = [resolve_event(e) for e in events]
        hardware = [e for e in self.events if needs_pmu(e)]
        if hardware and self.spec["unsupported"] == "refuse" and not capabilities.hardware_pmu():
            raise self.fail(
                f"{hardware[0]!r} needs a hardware PMU, which this machine lacks (a VM without PMU passthrough); "
                "software events and tracepoints work, or set unsupported: empty to keep the campaign portable",
                "events",
            )
        for event in self.events:
            if unknown_event(event):
                choices = sorted(perf_events() | GENERIC_EVENTS)
                raise self.fail(
                    f"perf does not know the event {event!r} on this machine{did_you_mean(event, choices)} (`perf list` shows them)",
                    "events",
                )

    def prefix(self, ctx: Context) -> list[str]:
        return ["perf", "stat", "-x", ";", "-o", STAT_FILE, "-e", ",".join(self.events), "--"]

    def declared_metrics(self) -> list[str]:
        return [f"perf_stat.{e}" for e in self.events]

    def units(self, run_dir: Path) -> dict[str, str]:
        path = run_dir / STAT_FILE
        return parse_perf_stat(path.read_text(errors="replace"))[1] if path.exists() else {}

    def metrics(self, run_dir: Path) -> dict[str, object]:
        out: dict[str, object] = {f"perf_stat.{e}": None for e in self.events}
        path = run_dir / STAT_FILE
        if not path.exists():
            return out
        values, _units, unsupported = parse_perf_stat(path.read_text(errors="replace"))
        out.update(values)
        log = run_dir / STAT_LOG
        if unsupported and not log.exists():
            log.write_text(
                f"warning: perf stat could not count on this machine: {', '.join(unsupported)} (left empty)\n"
            )
        return out


class PerfRecord(Wrapper):
    """perf record at a sampling frequency, with fp or dwarf call graphs.

    Record variables `perf_frequency` and `perf_call_graph` override the
    options, so both can be swept.
    """

    kind = "perf_record"
    observer = True
    options: dict[str, object] = {"frequency": 999, "call_graph": "fp", "spin": None, "event": None}
    MODES = ("fp", "dwarf", "lbr", "none")

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        self.require_tool("perf", "linux-perf")
        _require_perf(self)
        event = self.spec["event"]
        if event is not None:
            if not isinstance(event, str) or not re.fullmatch(r"[A-Za-z0-9_.:/,=-]+", event):
                raise self.fail(f"expected an event name, got {event!r}", "event")
            if needs_pmu(resolve_event(event)) and not capabilities.hardware_pmu():
                raise self.fail(f"{event!r} needs a hardware PMU, which this machine lacks (sample on cpu-clock or "
                                "task-clock instead)", "event")  # fmt: skip
            if unknown_event(resolve_event(event)):
                raise self.fail(
                    f"perf does not know the event {event!r} on this machine (`perf list` shows them)", "event"
                )
        spin = self.spec["spin"]
        if spin is not None:
            try:
                re.compile(str(spin))
            except re.error as exc:
                raise self.fail(f"not a regular expression: {exc}", "spin") from None
        for record in [*records, {}]:
            freq = record.get("perf_frequency", self.spec["frequency"])
            mode = record.get("perf_call_graph", self.spec["call_graph"])
            if isinstance(freq, bool) or not isinstance(freq, int) or not 1 <= freq <= 100000:
                raise self.fail(f"frequency {freq!r} is not an integer in 1..100000", "frequency")
            if mode not in self.MODES:
                raise self.fail(f"call graph mode {mode!r} (choose from {', '.join(self.MODES)})", "call_graph")

    def needs_flame_tools(self) -> bool:
        return True

    def declared_metrics(self) -> list[str]:
        return [SPIN_SHARE] if self.spec["spin"] is not None else []

    def metrics(self, run_dir: Path) -> dict[str, object]:
        """With `spin:`, the share of the run's samples in functions it matches
        (lock spinning, for a scalability breakdown's spinning part)."""
        if self.spec["spin"] is None:
            return {}
        data = run_dir / RECORD_FILE
        return {SPIN_SHARE: spin_share(data, str(self.spec["spin"])) if data.exists() else None}

    def targets(self, campaign: str, plan: Mapping[str, Sequence[int]], pairs: list[tuple[str, str]]) -> list[str]:
        """perf report and a flame graph per run, folded stacks per record, declared diffs."""
        out: list[str] = []
        for record, runs in plan.items():
            for i in runs:
                rdir = layout.run_dir(campaign, record, i)
                out += [f"{rdir}/perf.report", f"{rdir}/flamegraph.svg"]
            out.append(layout.folded(campaign, layout.flat(record)))
        out += [layout.diff_flamegraph(campaign, layout.flat(a), layout.flat(b)) for a, b in pairs]
        return out

    def prefix(self, ctx: Context) -> list[str]:
        freq = text(ctx.params, "perf_frequency", self.spec["frequency"])
        mode = text(ctx.params, "perf_call_graph", self.spec["call_graph"])
        argv = ["perf", "record", "-F", str(freq), "-o", RECORD_FILE, "--quiet"]
        if self.spec["event"] is not None:
            argv += ["-e", resolve_event(str(self.spec["event"]))]
        if mode != "none":
            argv += ["--call-graph", str(mode)]
        return [*argv, "--"]
