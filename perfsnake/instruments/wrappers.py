"""Command wrappers: tools that compose around the benchmark's command.

Wrappers compose in declared order, the first listed outermost. Each one
turns the record's variables into an argv prefix (empty when the record
asks for nothing, e.g. an empty cpu_list) and may parse the files it left in
the run directory into metrics, prefixed with its name.
"""

from __future__ import annotations

import re
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
    """valgrind --tool=callgrind: the instruction count (Ir), stable under noise."""

    kind = "valgrind"
    observer = True
    OUT = "callgrind.out"

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        self.require_tool("valgrind", "valgrind")

    def prefix(self, ctx: Context) -> list[str]:
        return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.OUT}", "--quiet"]

    def declared_metrics(self) -> list[str]:
        return ["valgrind.instructions"]

    def metrics(self, run_dir: Path) -> dict[str, object]:
        path = run_dir / self.OUT
        if path.exists():
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith(("summary:", "totals:")):
                    return {"valgrind.instructions": int(line.split()[1])}
        return {"valgrind.instructions": None}
