"""Tracepoint attachments: a bpftrace program alive for exactly one run.

`attach` is a pre-run hook built on the daemon hook: the program runs under
the launcher (its own cgroup, the host lock held while it lives, stopped with
the run, or with the workflow if that dies), starts before the benchmark (the
hook waits until bpftrace says it attached its probes) and gets SIGTERM after
it, on which bpftrace prints its maps into attach-<name>.txt of the run
directory. Every map becomes metrics of the run: a scalar `@x: 5` is
`attach.<name>.x`; `stats()` gives `.x.count`, `.x.average`, `.x.total`; a
`hist()` gives `.x.p50` and `.x.p99` (upper bound of the bucket holding that
quantile). Its own CPU cost (user + system time of the tracer, from its
launcher) is `attach.<name>.cpu_s`.

Ready programs (perfsnake/csrc/bpftrace/): `runqlat` (run-queue latency histogram of
the machine), `syscalls` (system calls per process and thread). A program of
one's own is a path to a .bt file. Kprobe-based programs are refused on a
kernel without kprobes, and programs naming a tracepoint the kernel lacks.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from perfsnake.instruments.hooks import Daemon
from perfsnake.layout import c_source
from perfsnake.machine import capabilities

PROGRAMS = {p.stem: p for p in sorted((c_source("bpftrace")).glob("*.bt"))}
READY_MARKER = "perfsnake: attached"
_TRACEPOINT = re.compile(r"\btracepoint:(\w+):(\w+)")
_SCALAR = re.compile(r"^@(\w+): (-?\d+)$", re.M)
_STATS = re.compile(r"^@(\w+): count (\d+), average (-?\d+), total (-?\d+)$", re.M)
_HIST = re.compile(r"^@(\w+): \n((?:[\[(].*\n?)+)", re.M)
_BUCKET = re.compile(r"^[\[(](-?[\d.]+[KMGT]?)(?:, (-?[\d.]+[KMGT]?))?[\])]\s+(\d+)", re.M)
_SUFFIX = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _number(text: str) -> float:
    return float(text[:-1]) * _SUFFIX[text[-1]] if text[-1] in _SUFFIX else float(text)


def _minutes_seconds(text: str) -> float:
    """`times`' 0m0.50s (or 0.50) as seconds."""
    m = re.fullmatch(r"(?:(\d+)m)?([\d.]+)s?", text.strip())
    return float(m.group(1) or 0) * 60 + float(m.group(2)) if m else 0.0


def parse_output(text: str) -> dict[str, float]:
    """bpftrace's printed maps as flat metrics (without the attach.<name>. prefix)."""
    out: dict[str, float] = {}
    for name, count, average, total in _STATS.findall(text):
        out.update({f"{name}.count": float(count), f"{name}.average": float(average), f"{name}.total": float(total)})
    for name, value in _SCALAR.findall(text):
        out[name] = float(value)
    for name, body in _HIST.findall(text):
        buckets = [(_number(hi or lo), int(n)) for lo, hi, n in _BUCKET.findall(body)]
        total = sum(n for _, n in buckets)
        for q in (0.5, 0.99):
            seen = 0
            for upper, n in buckets:
                seen += n
                if total and seen >= q * total:
                    out[f"{name}.p{int(q * 100)}"] = upper
                    break
    return out


class Attach(Daemon):
    kind = "attach"
    observer = True  # it watches the run: control runs drop it and measure its cost
    # bpftrace prints its maps and detaches on SIGTERM: seconds on a loaded machine.
    grace_s = 20.0
    options = {"program": None, "name": None, "timeout_s": 60}

    def __init__(self, spec: Mapping[str, object], origin: str, key: str) -> None:
        super().__init__(spec, origin, key)
        program = str(self.spec.get("program") or "")
        self.program = PROGRAMS.get(program) or Path(program)
        self.spec["name"] = str(self.spec.get("name") or (program if program in PROGRAMS else self.program.stem))
        out = f"{{run_dir}}/{self.output_name()}"
        quoted = shlex.quote(str(self.program.resolve())).replace("{", "{{").replace("}", "}}")
        cpu = f"{{run_dir}}/attach-{self.spec['name']}.cpu"
        pid = f"{{run_dir}}/attach-{self.spec['name']}.pid"
        # The shell outlives bpftrace (SIGTERM: bpftrace prints its maps and
        # exits) to write the tracer's CPU time (`times`: its children's).
        self.spec["command"] = (
            f"bpftrace -B line {quoted} > {out} 2>&1 & p=$!; echo $p > {pid}; trap : TERM; while kill -0 $p 2>/dev/null; do wait $p; done; times > {cpu}"
        )
        # Ready once attached: the ready programs print a marker from BEGIN,
        # which runs after every probe is attached; bpftrace's own "Attaching
        # N probes" comes before the attachment is complete.
        text = self.program.read_text() if self.program.is_file() else ""
        marker = READY_MARKER if READY_MARKER in text else "Attaching"
        # ...and once bpftrace waits in its event loop (epoll) with its SIGTERM
        # handler installed: a signal earlier ends it without its maps.
        caught = (
            f"m=$(awk '/^SigCgt/ {{{{print $2}}}}' /proc/$(cat {pid})/status) && [ $((0x$m & 0x4000)) -ne 0 ]"
            f" && grep -q epoll /proc/$(cat {pid})/wchan"
        )
        self.spec["ready"] = {"command": f"grep -q '^{marker}' {out} && {caught}", "timeout_s": self.spec["timeout_s"]}
        self.spec["startup_s"] = 0.0

    def output_name(self) -> str:
        return f"attach-{self.spec['name']}.txt"

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        if not self.spec.get("program"):
            raise self.fail(f"set program: one of {', '.join(PROGRAMS)}, or a .bt file", "program")
        if not self.program.is_file():
            raise self.fail(
                f"{self.spec['program']!r} is neither a ready program ({', '.join(PROGRAMS)}) nor a file", "program"
            )
        self.require_tool("bpftrace", "bpftrace")
        source = self.program.read_text()
        if re.search(r"\bk(ret)?probe:", source) and not capabilities.kprobes():
            raise self.fail(
                "the program uses kprobes, which this kernel does not offer (tracepoints and uprobes only)", "program"
            )
        events = tuple(f"{group}:{name}" for group, name in _TRACEPOINT.findall(source))
        problem = capabilities.tracepoint_problem(events) if events else None
        if problem:
            raise self.fail(problem, "program")
        super().check(records, variables)

    def metrics(self, run_dir: Path) -> dict[str, object]:
        prefix = f"attach.{self.spec['name']}"
        out_file = run_dir / self.output_name()
        metrics: dict[str, object] = {}
        if out_file.exists():
            metrics = {f"{prefix}.{k}": v for k, v in parse_output(out_file.read_text()).items()}
        cpu = run_dir / f"attach-{self.spec['name']}.cpu"
        if cpu.exists():
            lines = cpu.read_text().split("\n")
            if len(lines) > 1:
                metrics[f"{prefix}.cpu_s"] = sum(_minutes_seconds(t) for t in lines[1].split())
        return metrics
