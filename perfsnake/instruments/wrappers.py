"""Command wrappers: tools that compose around the benchmark's command.

Wrappers compose in declared order, the first listed outermost. Each one
turns the record's variables into an argv prefix (empty when the record
asks for nothing, e.g. an empty cpu_list) and may parse the files it left in
the run directory into metrics, prefixed with its name.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
from functools import cache
from pathlib import Path

from perfsnake.escape import value_text
from perfsnake.instruments.base import Context, Instrument, text
from perfsnake.machine.sysinfo import find_program, online_cpus, online_nodes, parse_cpu_list


class Wrapper(Instrument):
    #: traces with ptrace: a process has one tracer, so one such wrapper per campaign
    ptrace = False

    def prefix(self, ctx: Context) -> list[str]:
        raise NotImplementedError

    def cannot_start(self, argv: list[str]) -> str | None:
        """Why this wrapper cannot start `argv` (the next wrapper's prefix), or None."""
        return None


def _cpu_list(value: str) -> list[int]:
    try:
        return parse_cpu_list(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a CPU list such as 0-3,8") from None


class Taskset(Wrapper):
    """Pins the benchmark to `cpu_list` (kernel list syntax); empty means no pinning."""

    kind = "taskset"
    options = {"variable": "cpu_list"}

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        self.require_tool("taskset", "util-linux")
        var = str(self.spec["variable"])
        online = online_cpus()
        for record in records:
            value = text(record, var)
            if not value:
                continue
            try:
                cpus = _cpu_list(value)
            except ValueError as exc:
                raise self.fail(str(exc), f"variables.{var}") from None
            bad = [c for c in cpus if c not in online]
            if bad:
                raise self.fail(f"CPU {bad[0]} in {value!r} is not online (online: {','.join(map(str, online))})")

    def prefix(self, ctx: Context) -> list[str]:
        value = text(ctx.params, str(self.spec["variable"]))
        return ["taskset", "-c", value] if value else []


class Numactl(Wrapper):
    """numactl with physcpubind / membind / interleave / localalloc from the record."""

    kind = "numactl"
    variables = ("physcpubind", "membind", "interleave", "localalloc")

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        self.require_tool("numactl", "numactl")
        cpus, nodes = online_cpus(), online_nodes()
        for record in records:
            policies = [v for v in ("membind", "interleave") if text(record, v)]
            if record.get("localalloc") in (True, "true", "yes", 1):
                policies.append("localalloc")
            if len(policies) > 1:
                raise self.fail(f"numactl takes one memory policy, the record sets {' and '.join(policies)}")
            for var, valid, label in (
                ("physcpubind", cpus, "CPU"),
                ("membind", nodes, "NUMA node"),
                ("interleave", nodes, "NUMA node"),
            ):
                value = text(record, var)
                if not value or value == "all":
                    continue
                try:
                    listed = _cpu_list(value)
                except ValueError as exc:
                    raise self.fail(str(exc), f"variables.{var}") from None
                bad = [c for c in listed if c not in valid]
                if bad:
                    raise self.fail(
                        f"{label} {bad[0]} in {var}={value!r} is not online (online: {','.join(map(str, valid))})"
                    )

    def prefix(self, ctx: Context) -> list[str]:
        args = []
        for var in ("physcpubind", "membind", "interleave"):
            value = text(ctx.params, var)
            if value:
                args.append(f"--{var}={value}")
        if ctx.params.get("localalloc") in (True, "true", "yes", 1):
            args.append("--localalloc")
        return ["numactl", *args] if args else []


class Env(Wrapper):
    """Sets environment variables: record variables by name, and constants."""

    kind = "env"
    options: dict[str, object] = {"variables": [], "set": {}}

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        names = self.spec["variables"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise self.fail("expected a list of variable names", "variables")
        for name in names:
            if name not in variables:
                raise self.fail(
                    f"{name!r} is not a campaign variable (variables: {', '.join(variables) or 'none'})", "variables"
                )
        if not isinstance(self.spec["set"], dict):
            raise self.fail("expected a mapping of NAME: value", "set")
        for name in [*names, *self.spec["set"]]:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(name)):
                raise self.fail(f"{name!r} is not a valid environment variable name")

    def prefix(self, ctx: Context) -> list[str]:
        pairs = [f"{k}={value_text(v)}" for k, v in dict(self.spec["set"]).items()]  # type: ignore[call-overload]
        pairs += [f"{n}={value_text(ctx.params[n])}" for n in self.spec["variables"]]  # type: ignore[attr-defined]
        return ["env", *pairs] if pairs else []


class Nice(Wrapper):
    """Runs the benchmark at the niceness of the `nice` variable."""

    kind = "nice"
    options = {"variable": "nice"}

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        var = str(self.spec["variable"])
        for record in records:
            value = record.get(var)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not -20 <= value <= 19):
                raise self.fail(f"{value_text(value)!r} is not a niceness between -20 and 19", f"variables.{var}")

    def prefix(self, ctx: Context) -> list[str]:
        value = text(ctx.params, str(self.spec["variable"]))
        return ["nice", "-n", value] if value is not None else []


class Time(Wrapper):
    """GNU time -v: maximum RSS, context switches, CPU times."""

    kind = "time"
    observer = True
    OUT = "time.txt"
    FIELDS = {
        "Maximum resident set size (kbytes)": "max_rss_kb",
        "Voluntary context switches": "voluntary_ctx_switches",
        "Involuntary context switches": "involuntary_ctx_switches",
        "User time (seconds)": "user_s",
        "System time (seconds)": "system_s",
        "Major (requiring I/O) page faults": "major_faults",
        "Minor (reclaiming a frame) page faults": "minor_faults",
    }

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        if not Path("/usr/bin/time").exists():
            raise self.fail("/usr/bin/time is not installed (Debian package time)")

    def prefix(self, ctx: Context) -> list[str]:
        return ["/usr/bin/time", "-v", "-o", self.OUT]

    def declared_metrics(self) -> list[str]:
        return [f"time.{name}" for name in self.FIELDS.values()]

    def metrics(self, run_dir: Path) -> dict[str, object]:
        out: dict[str, object] = {f"time.{name}": None for name in self.FIELDS.values()}
        path = run_dir / self.OUT
        if path.exists():
            for line in path.read_text(errors="replace").splitlines():
                label, _, value = line.strip().rpartition(": ")
                if label in self.FIELDS:
                    out[f"time.{self.FIELDS[label]}"] = float(value) if "." in value else int(value)
        return out


def parse_strace_summary(text_out: str) -> dict[str, object]:
    """strace -c's table: per-syscall calls and errors, and the totals."""
    metrics: dict[str, object] = {}
    for line in text_out.splitlines():
        parts = line.split()
        if len(parts) < 5 or not re.fullmatch(r"[0-9.]+", parts[0]):
            continue
        # % time, seconds, usecs/call, calls, [errors], syscall
        name = parts[-1]
        calls = int(parts[3])
        errors = int(parts[4]) if len(parts) == 6 else 0
        if name == "total":
            metrics["strace.total_calls"] = calls
            metrics["strace.total_errors"] = errors
            metrics["strace.total_seconds"] = float(parts[1])
        else:
            metrics[f"strace.calls.{name}"] = calls
    return metrics


class Strace(Wrapper):
    """strace -c -f: the system-call summary becomes metrics."""

    kind = "strace"
    observer = True
    ptrace = True
    OUT = "strace.txt"

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        self.require_tool("strace", "strace")

    def prefix(self, ctx: Context) -> list[str]:
        return ["strace", "-c", "-f", "-o", self.OUT]

    def declared_metrics(self) -> list[str]:
        return ["strace.total_calls", "strace.total_errors", "strace.total_seconds"]

    def metrics(self, run_dir: Path) -> dict[str, object]:
        path = run_dir / self.OUT
        found = parse_strace_summary(path.read_text(errors="replace")) if path.exists() else {}
        return {"strace.total_calls": None, "strace.total_errors": None, "strace.total_seconds": None, **found}


class Ltrace(Wrapper):
    """ltrace -c -f: library-call counts."""

    kind = "ltrace"
    observer = True
    ptrace = True
    OUT = "ltrace.txt"

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        self.require_tool("ltrace", "ltrace")

    def prefix(self, ctx: Context) -> list[str]:
        return ["ltrace", "-c", "-f", "-o", self.OUT]

    #: profilers whose own library calls ltrace -f would trace (a run slows by orders of magnitude)
    PROFILERS = ("perf", "valgrind")

    def cannot_start(self, argv: list[str]) -> str | None:
        if Path(argv[0]).name == "valgrind":  # and valgrind cannot start ltrace either (Valgrind.cannot_start)
            return (
                "ltrace -f would count valgrind's own library calls, and under valgrind ltrace fails: keep one of them"
            )
        if Path(argv[0]).name in self.PROFILERS:
            return f"ltrace -f would count {Path(argv[0]).name}'s own library calls, not only the benchmark's"
        # ltrace reads the program's ELF symbols before it starts it.
        path = find_program(argv[0])
        if path is None:
            return None
        with open(path, "rb") as f:
            if f.read(4) == b"\x7fELF":
                return None
        return f"{path} is a script and ltrace starts only ELF programs"

    def declared_metrics(self) -> list[str]:
        return ["ltrace.total_calls"]

    def metrics(self, run_dir: Path) -> dict[str, object]:
        path = run_dir / self.OUT
        metrics: dict[str, object] = {"ltrace.total_calls": None}
        if path.exists():
            for line in path.read_text(errors="replace").splitlines():
                parts = line.split()
                if len(parts) >= 4 and re.fullmatch(r"[0-9.]+", parts[0]):
                    if parts[-1] == "total":  # no usecs/call column on this line
                        metrics["ltrace.total_calls"] = int(parts[-2])
                    else:
                        metrics[f"ltrace.calls.{parts[-1]}"] = int(parts[3])
        return metrics


class Valgrind(Wrapper):
    """valgrind --tool=cachegrind --cache-sim=yes: the instruction count (Ir),
    simulated I1/D1/LL misses and a cycle estimate made from them, counted
    over every process of the run, stable under noise.

    Cachegrind rather than callgrind: one pass gives the instructions and the
    simulated cache misses, without callgrind's call-graph bookkeeping, so a
    run is cheaper; Ir is the same count either way.
    """

    kind = "valgrind"
    observer = True
    #: one file per process (`--trace-children=yes`): %p is its pid
    OUT = "cachegrind.%p.out"
    GLOB = "cachegrind.*.out"
    #: a fixed cache geometry, so that a count does not change with the machine
    #: (cachegrind otherwise reads the host's, which a VM may report wrongly:
    #: 512 MiB 2-way LL on this project's EPYC VM); `host_caches: true` takes the host's
    CACHES = {"I1": "32768,8,64", "D1": "32768,8,64", "LL": "8388608,16,64"}
    options = {"host_caches": False}
    #: the cycle estimate's weights: an L1 hit costs 1, an LL hit 5, a RAM access 35
    LL_HIT_CYCLES = 5
    RAM_CYCLES = 35
    METRICS = ("instructions", "data_refs", "i1_misses", "d1_misses", "ll_misses", "cycles_estimate", "processes")

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        path = self.require_tool("valgrind", "valgrind")
        if not isinstance(self.spec["host_caches"], bool):
            raise self.fail("expected true or false", "host_caches")
        problem = valgrind_problem(path, tuple(self.tool_options()))
        if problem:
            raise self.fail(f"valgrind cannot run a program on this machine: {problem}")

    def tool_options(self) -> list[str]:
        caches = [] if self.spec["host_caches"] else [f"--{name}={geometry}" for name, geometry in self.CACHES.items()]
        return ["--tool=cachegrind", "--cache-sim=yes", *caches]

    def prefix(self, ctx: Context) -> list[str]:
        # --trace-children: the command runs as `/bin/sh -c ...`, and without
        # it only the shell is counted, while the program it starts runs natively.
        # The run directory's absolute path: a traced child resolves a relative
        # name in its own working directory (`cd x && ./prog` would write in x);
        # valgrind reads % in it as a format, %% as a literal %.
        out = str(ctx.run_dir.absolute()).replace("%", "%%") + "/" + self.OUT
        return ["valgrind", *self.tool_options(), "--trace-children=yes", f"--cachegrind-out-file={out}", "--quiet"]

    def cannot_start(self, argv: list[str]) -> str | None:
        name = Path(argv[0]).name
        if name == "ltrace":
            return ("under valgrind --trace-children=yes ltrace reads valgrind's tool as its child's ELF file "
                    "(/proc/PID/exe) and fails, and ltrace refuses to start valgrind: keep one of them")  # fmt: skip
        path = find_program(argv[0])
        return setuid_problem(path) if path else None

    def declared_metrics(self) -> list[str]:
        return [f"valgrind.{m}" for m in self.METRICS]

    def metrics(self, run_dir: Path) -> dict[str, object]:
        return {f"valgrind.{m}": v for m, v in cachegrind_metrics(self.summaries(run_dir)).items()}

    def summaries(self, run_dir: Path) -> list[dict[str, int]]:
        """Each process's counts by event name, from this attempt's files: one
        older than command.sh (written before every launch) is an earlier
        attempt's, left in the run directory, and is not counted again."""
        from perfsnake.platforms.base import COMMAND_FILE

        command = run_dir / COMMAND_FILE
        since = command.stat().st_mtime_ns if command.exists() else 0
        found = []
        for path in sorted(run_dir.glob(self.GLOB)):
            if path.stat().st_mtime_ns >= since and (counts := parse_cachegrind(path.read_text(errors="replace"))):
                found.append(counts)
        return found


def parse_cachegrind(text_out: str) -> dict[str, int]:
    """A cachegrind output file's `summary:` counts, by the names of its
    `events:` line (not by position: the events depend on the options);
    {} for a file without both (a process killed before it wrote them)."""
    events: list[str] = []
    for line in text_out.splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:") and events:
            values = line.split()[1:]
            if len(values) == len(events) and all(v.isdigit() for v in values):
                return dict(zip(events, map(int, values), strict=True))
    return {}


def cachegrind_metrics(processes: list[dict[str, int]]) -> dict[str, int | None]:
    """The counts summed over the run's processes, and the cycle estimate
    (the model of iai and "cachegrind as a benchmark"): every access of L1
    (instruction fetches and data reads and writes) that hits costs 1 cycle,
    one that misses L1 and hits LL costs 5, one that misses LL (goes to
    RAM) 35. None where a count is missing (no file, no cache simulation)."""
    names = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")
    out: dict[str, int | None] = {m: None for m in Valgrind.METRICS}
    out["processes"] = len(processes)
    if not processes:
        return out
    total = {n: sum(p[n] for p in processes) if all(n in p for p in processes) else None for n in names}
    out["instructions"] = total["Ir"]
    if any(v is None for v in total.values()):
        return out
    t: dict[str, int] = {n: int(v) for n, v in total.items() if v is not None}
    l1_accesses = t["Ir"] + t["Dr"] + t["Dw"]
    l1_misses = t["I1mr"] + t["D1mr"] + t["D1mw"]
    ram = t["ILmr"] + t["DLmr"] + t["DLmw"]
    ll_hits = l1_misses - ram
    out.update(
        data_refs=t["Dr"] + t["Dw"],
        i1_misses=t["I1mr"],
        d1_misses=t["D1mr"] + t["D1mw"],
        ll_misses=ram,
        cycles_estimate=(l1_accesses - l1_misses) + Valgrind.LL_HIT_CYCLES * ll_hits + Valgrind.RAM_CYCLES * ram,
    )
    return out


def setuid_problem(path: str) -> str | None:
    """Why valgrind cannot run the program at `path`: set-user-ID, set-group-ID
    or with file capabilities, which valgrind refuses to execute (it would run
    the program without the privileges the kernel grants it)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if mode & (stat.S_ISUID | stat.S_ISGID):
        return f"{path} is set-{'user' if mode & stat.S_ISUID else 'group'}-ID, and valgrind does not run such programs"
    try:
        os.getxattr(path, "security.capability")
    except OSError:
        return None
    return f"{path} has file capabilities, and valgrind does not run such programs"


@cache
def valgrind_problem(valgrind: str, options: tuple[str, ...]) -> str | None:
    """Why valgrind, with these tool options, cannot run /bin/true here (a
    kernel or libc it does not support, a missing tool), in a line; None when
    it can. Once per process: about 0.2 s."""
    argv = [valgrind, *options, "--cachegrind-out-file=/dev/null", "--quiet", "/bin/true"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{shlex.join(argv)} did not run ({exc})"
    if proc.returncode == 0:
        return None
    # valgrind's own lines, without its ==PID== / --PID-- prefixes or its host-cache warnings
    said = [re.sub(r"^(==|--)\d+(==|--) ?", "", line).strip() for line in proc.stderr.splitlines()]
    said = [line for line in said if line and not line.startswith("warning:")]
    return f"{shlex.join(argv)} exited {proc.returncode}: {said[0] if said else 'without a message'}"
