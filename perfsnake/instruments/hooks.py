"""Pre-run and post-run hooks: preparing and tearing down a run's context.

Hooks run outside the timed interval. Each reports what it actually did in
the run's hooks.json (a hook that cannot apply its setting says so instead
of silently doing nothing) and may add metrics to the result.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from perfsnake import layout, safefile
from perfsnake.benchmarks.base import number as metric_value
from perfsnake.errors import did_you_mean
from perfsnake.escape import value_text
from perfsnake.hostlock import launcher_args
from perfsnake.instruments.base import Context, Instrument, text
from perfsnake.machine.sysinfo import online_cpus
from perfsnake.shell_template import placeholders, render
from perfsnake.values import number

#: Seconds between SIGTERM and SIGKILL when a daemon is stopped.
DAEMON_GRACE_S = 2.0


class Hook(Instrument):
    """apply() runs before the benchmark (pre-run) or after it (post-run).

    teardown() runs after the run, whatever its outcome, for pre-run hooks
    that leave something behind (a daemon).
    """

    phases: tuple[str, ...] = ("pre", "post")
    #: keys of the machine's state (perfsnake.machine.state.DRIFT_KEYS) the
    #: hook sets on purpose: a change of them between runs is not drift
    sets_state: tuple[str, ...] = ()

    def apply(self, ctx: Context, phase: str) -> dict[str, object]:
        raise NotImplementedError

    def teardown(self, ctx: Context, state: dict[str, object]) -> dict[str, object]:
        return {}


def _check_template(hook: Hook, template: object, variables: list[str], field: str = "command") -> str:
    if not isinstance(template, str) or not template.strip():
        raise hook.fail("needs a shell command", field)
    try:
        used = placeholders(template)
    except ValueError as exc:
        raise hook.fail(str(exc), field) from None
    known = set(variables) | {"run_dir", "free_port"}
    unknown = sorted(used - known)
    if unknown:
        hint = did_you_mean(unknown[0], sorted(known))
        raise hook.fail(f"unknown placeholder {{{unknown[0]}}}{hint} (known: {', '.join(sorted(known))})", field)
    return template


def _containment(out_dir: Path) -> str | None:
    """How the launcher contains a daemon (from its state file while it runs)."""
    try:
        text = (out_dir / ".psrun.state").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("containment "):
            return line.split(" ", 1)[1]
    return None


def _kill_cgroup(containment: str | None) -> None:
    """Last resort when a daemon's launcher did not end: its cgroup's kill switch."""
    if containment and containment.startswith("cgroup2:"):
        with contextlib.suppress(OSError):
            Path(containment.split(":", 1)[1], "cgroup.kill").write_text("1")


def wait_ready(proc: subprocess.Popen, ready: Callable[[], bool], timeout_s: float, interval_s: float) -> str | None:
    """Poll `ready` until it holds (None), the launched process ends first
    ("exited") or `timeout_s` passes ("timeout")."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            return "exited"
        if ready():
            return None
        if time.monotonic() > deadline:
            return "timeout"
        time.sleep(interval_s)


def stop_launched(proc: subprocess.Popen, out_dir: Path, grace_s: float) -> None:
    """Stop what a launcher runs: SIGTERM to the launcher, which stops every
    process of it (SIGKILL after its grace period); should the launcher not
    end, SIGKILL to it and its cgroup's kill switch."""
    containment = _containment(out_dir)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s + 10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        _kill_cgroup(containment)


def _is_ready(ready: dict, ctx: Context) -> bool:
    """One check of a daemon's `ready:` condition."""
    if "tcp" in ready:
        port = int(_render(str(ready["tcp"]), ctx).strip("'\""))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                pass
        except OSError:
            return False
    if "file" in ready and not Path(_render(str(ready["file"]), ctx).strip("'\"")).exists():
        return False
    if "command" in ready:
        done = subprocess.run(["/bin/sh", "-c", _render(str(ready["command"]), ctx)], cwd=ctx.run_dir,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)  # fmt: skip
        if done.returncode != 0:
            return False
    return True


def _render(template: str, ctx: Context) -> str:
    return render(template, {**ctx.params, "run_dir": ctx.run_dir})


class Daemon(Hook):
    """A background command alive for exactly the duration of the run.

    It is started through the launcher (its own process group, output in
    daemon-<name>/ of the run directory), which also stops it if the
    workflow dies; after the run it gets SIGTERM, then SIGKILL, on its whole
    process group, whatever the run's outcome.
    """

    kind = "daemon"
    phases = ("pre",)
    #: seconds between SIGTERM and SIGKILL when it is stopped
    grace_s = DAEMON_GRACE_S
    options = {"command": None, "name": "daemon", "startup_s": 0.0, "ready": None}
    READY_KEYS = ("tcp", "file", "command", "timeout_s")

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        _check_template(self, self.spec["command"], variables)
        ready = self.spec.get("ready")
        if ready is not None:
            if (
                not isinstance(ready, dict)
                or not ready
                or set(ready) - set(self.READY_KEYS)
                or not set(ready) & {"tcp", "file", "command"}
            ):
                raise self.fail(
                    "expected a mapping with tcp (a port), file (a path) or command, and optionally timeout_s", "ready"
                )
            for key in ("tcp", "file", "command"):
                if key in ready:
                    _check_template(self, str(ready[key]), variables, f"ready.{key}")
            limit = ready.get("timeout_s", 30)
            if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 0 < limit <= 3600:
                raise self.fail("expected a number of seconds from 0 to 3600", "ready.timeout_s")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", str(self.spec["name"])):
            raise self.fail("must be a simple name", "name")
        startup = self.spec["startup_s"]
        if isinstance(startup, bool) or not isinstance(startup, (int, float)) or not 0 <= startup <= 3600:
            raise self.fail("expected a number of seconds from 0 to 3600", "startup_s")

    def apply(self, ctx: Context, phase: str) -> dict[str, object]:
        out_dir = ctx.run_dir / f"daemon-{self.spec['name']}"
        safefile.fresh_dir(out_dir)
        command = _render(str(self.spec["command"]), ctx)
        safefile.write_text(out_dir / "command.sh", f"#!/bin/sh\ncd {ctx.run_dir!s} || exit 125\n{command}\n")
        launcher = layout.here(layout.tool("psrun"), ctx.workdir)
        # The launcher contains the daemon (its own cgroup, or as a subreaper)
        # and holds the host's benchmark lock while anything of it is alive.
        lock_args, lock_fds = launcher_args()
        # The launcher's own words (its normal teardown by SIGTERM included)
        # go to a file, not to the terminal, where they would look alarming.
        with os.fdopen(safefile.create(out_dir / "launcher.log"), "w") as log:
            proc = subprocess.Popen(
                [
                    str(launcher),
                    "--dir",
                    str(out_dir),
                    "--grace",
                    str(self.grace_s),
                    *lock_args,
                    "--",
                    "/bin/sh",
                    str(out_dir / "command.sh"),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                pass_fds=lock_fds,
            )
        state: dict[str, object] = {"applied": True, "pid": proc.pid, "command": command, "_proc": proc}
        try:
            if number(self.spec.get("startup_s") or 0):
                time.sleep(number(self.spec["startup_s"]))
            problem = self._wait_ready(ctx, proc) if self.spec.get("ready") else None
        except BaseException:
            # Never leave a started daemon behind (it holds the host lock).
            self.teardown(ctx, state)
            raise
        if problem is None and proc.poll() is not None:
            problem = f"the daemon exited with status {proc.returncode} before the run"
        if problem:
            state["failed"] = problem
        return state

    def _wait_ready(self, ctx: Context, proc: subprocess.Popen) -> str | None:
        """Poll the `ready:` condition until it holds (None), the daemon exits or
        the deadline passes (the problem, in words)."""
        ready: dict = self.spec["ready"]  # type: ignore[assignment]
        limit = float(ready.get("timeout_s", 30))
        outcome = wait_ready(proc, lambda: _is_ready(ready, ctx), limit, 0.05)
        if outcome == "exited":
            return f"the daemon exited with status {proc.returncode} before it was ready"
        if outcome == "timeout":
            return (
                f"not ready after {limit:g} s ({', '.join(f'{k}: {v}' for k, v in ready.items() if k != 'timeout_s')})"
            )
        return None

    def teardown(self, ctx: Context, state: dict[str, object]) -> dict[str, object]:
        proc = state.get("_proc")
        if not isinstance(proc, subprocess.Popen):
            return {}
        out_dir = ctx.run_dir / f"daemon-{self.spec['name']}"
        containment = _containment(out_dir)
        early_exit = proc.poll()
        if early_exit is None:
            # Every process of the daemon goes, detached ones included.
            stop_launched(proc, out_dir, self.grace_s)
        status_file = out_dir / "status.json"
        if status_file.exists():
            containment = json.loads(status_file.read_text()).get("containment", containment)
        note = (
            "stopped after the run"
            if early_exit is None and not status_file.exists()
            else "exited before the run ended"
        )
        return {"stopped": True, "note": note, "containment": containment}


class Placement(Daemon):
    """Thread placement with a policy per record.

    The policy comes from the `policy` option or the record's `placement`
    variable (option `variable`). normal, close, far and round_robin are
    our daemon psplace's (perfsnake/csrc/psplace); asymsched, sam and sas
    (prior work's, perfsnake.placement) sample per-thread hardware counters
    and are run by perfsnake.placement.daemon, where the machine has what
    they need: elsewhere their records are skipped in one line, and a
    campaign of nothing but them is refused. Every decision is logged in
    daemon-placement/stdout.txt.
    """

    kind = "placement"
    SIMPLE = ("normal", "close", "far", "round_robin")
    COUNTED = ("asymsched", "sam", "sas")
    POLICIES = SIMPLE + COUNTED
    options = {"policy": None, "variable": "placement", "interval_ms": 5, "sample_ms": 1000, "bandwidth": None,
               "events": None}  # fmt: skip
    tool = "psplace"

    def reads_variable(self) -> str | None:
        return None if self.spec["policy"] else str(self.spec["variable"])

    def _policy(self, params: Mapping[str, object]) -> str:
        return str(self.spec["policy"] or value_text(params[str(self.spec["variable"])]))

    def unavailable(self, params: Mapping[str, object]) -> str | None:
        from perfsnake.placement import host

        return host.problem(self._policy(params))

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        var = str(self.spec["variable"])
        if self.spec["policy"] is None and var not in variables:
            raise self.fail(f"set `policy:` or sweep a {var!r} variable ({', '.join(self.POLICIES)})")
        for record in records:
            policy = self._policy(record)
            if policy not in self.POLICIES:
                raise self.fail(
                    f"unknown placement policy {policy!r} (choose from {', '.join(self.POLICIES)})",
                    f"variables.{var}" if not self.spec["policy"] else "policy",
                )
        self.spec["name"] = "placement"
        self.spec["startup_s"] = 0.05
        for key, least in (("interval_ms", 1), ("sample_ms", 10)):
            value = self.spec[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise self.fail(f"expected an integer >= {least}", key)
        self._check_bandwidth()
        events = self.spec["events"]
        roles = ("local_dram", "remote_dram", "remote_cache", "address")
        if events is not None and (
            not isinstance(events, dict)
            or set(events) - set(roles)
            or not all(isinstance(v, str) and re.fullmatch(r"[\w.:/=,-]+", v) for v in events.values())
        ):
            raise self.fail(f"expected a mapping of perf events by role ({', '.join(roles)})", "events")
        # A policy this machine cannot run, fixed for every record: refused here, in one line.
        if self.spec["policy"] and (why := self.unavailable({})):
            raise self.fail(why, "policy")

    @staticmethod
    def _observers() -> str:
        """The processes placement leaves alone: the run's tools and shells,
        and the command file a launcher executes (named after it)."""
        from perfsnake.placement import OBSERVERS
        from perfsnake.platforms.base import COMMAND_FILE

        return ",".join(sorted(OBSERVERS | {COMMAND_FILE}))

    def _check_bandwidth(self) -> None:
        matrix = self.spec["bandwidth"]
        if matrix is None:
            return
        rows = matrix if isinstance(matrix, list) else []
        square = bool(rows) and all(isinstance(row, list) and len(row) == len(rows) for row in rows)
        numbers = square and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for row in rows for v in row
        )
        if not numbers or any(rows[i][j] != rows[j][i] for i in range(len(rows)) for j in range(i)):
            raise self.fail("expected a symmetric square list of rows of GB/s >= 0, one row per NUMA node", "bandwidth")

    def apply(self, ctx: Context, phase: str) -> dict[str, object]:
        policy = self._policy(ctx.params)
        if policy in self.COUNTED:
            import shlex
            import sys

            from perfsnake import ROOT

            argv = [sys.executable, "-m", "perfsnake.placement.daemon", "--policy", policy, "--dir", str(ctx.run_dir),
                    "--interval-ms", str(self.spec["sample_ms"]), "--observers", self._observers()]  # fmt: skip
            if self.spec["bandwidth"] is not None:
                argv += ["--bandwidth", json.dumps(self.spec["bandwidth"])]
            if self.spec["events"]:
                argv += ["--events", ",".join(f"{k}={v}" for k, v in self.spec["events"].items())]  # type: ignore[attr-defined]
            self.spec["command"] = f"cd {shlex.quote(str(ROOT))} && exec {shlex.join(argv)}"
        else:
            binary = layout.here(layout.tool(self.tool), ctx.workdir)
            self.spec["command"] = (
                f"exec {binary} --policy {policy} --dir {{run_dir}} --interval-ms {self.spec['interval_ms']} "
                f"--observers {self._observers()}"
            )
        state = super().apply(ctx, phase)
        state["policy"] = policy
        return state


class Monitor(Daemon):
    """Bottleneck monitor for the duration of the run (perfsnake.machine.monitor).

    Samples per-CPU utilisation, memory, disk busy time and network
    throughput every `interval_ms`; after the run, components above 80 %
    that are not `under_test` (prefixes: cpu, memory, disk, net) are listed
    in the result's `bottlenecks`, and the monitor's own CPU share is
    reported as `monitor.own_cpu_fraction`.
    """

    kind = "monitor"
    observer = True
    options = {"interval_ms": 100, "under_test": ["cpu"]}

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        interval = self.spec["interval_ms"]
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 10:
            raise self.fail("expected an integer >= 10", "interval_ms")
        under = self.spec["under_test"]
        if not isinstance(under, list) or not all(u in ("cpu", "memory", "disk", "net") for u in under):
            raise self.fail("expected a list of cpu, memory, disk, net", "under_test")
        self.spec["name"] = "monitor"
        self.spec["startup_s"] = 0.3  # the interpreter starts before the benchmark does

    def apply(self, ctx: Context, phase: str) -> dict[str, object]:
        import shlex
        import sys

        from perfsnake import ROOT

        out = ctx.run_dir / "monitor.csv"
        interval = int(self.spec["interval_ms"]) / 1000  # type: ignore[call-overload]
        argv = [sys.executable, "-m", "perfsnake.machine.monitor", "--out", str(out), "--interval", str(interval)]
        self.spec["command"] = f"cd {shlex.quote(str(ROOT))} && exec {shlex.join(argv)}"
        return super().apply(ctx, phase)

    def declared_metrics(self) -> list[str]:
        return ["monitor.cpu_util_max", "monitor.cpu_util_mean", "monitor.memory_used", "monitor.disk_util_max",
                "monitor.net_bytes_per_s", "monitor.own_cpu_fraction"]  # fmt: skip

    def teardown(self, ctx: Context, state: dict[str, object]) -> dict[str, object]:
        from perfsnake.machine.monitor import summarise

        done = super().teardown(ctx, state)
        out = ctx.run_dir / "monitor.csv"
        if not out.exists():
            return {**done, "applied": False, "note": "the monitor wrote nothing"}
        metrics, flagged = summarise(out, list(self.spec["under_test"]))  # type: ignore[call-overload]
        return {**done, "metrics": metrics, "bottlenecks": flagged}


class DropCaches(Hook):
    """sync, then drop the page cache, dentries and inodes (needs root)."""

    kind = "drop_caches"
    PATH = Path("/proc/sys/vm/drop_caches")

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        # Refused before anything runs: a run with warm caches would otherwise
        # pass for one with cold caches, noted only in hooks.json.
        if not os.access(self.PATH, os.W_OK):
            raise self.fail(f"dropping the page cache needs root ({self.PATH} is not writable by this user)")
        super().check(records, variables)

    def apply(self, ctx: Context, phase: str) -> dict[str, object]:
        os.sync()
        try:
            self.PATH.write_text("3\n")
        except OSError as exc:
            return {"applied": False, "note": f"cannot drop caches: {exc.strerror}"}
        return {"applied": True}


class Governor(Hook):
    """Sets the cpufreq governor of every online CPU; records what is in force."""

    kind = "governor"
    options = {"governor": None, "variable": "governor"}
    sets_state = ("governor",)  # and leaves it set: the next run starts with it

    def reads_variable(self) -> str | None:
        return None if self.spec["governor"] else str(self.spec["variable"])

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        if self.spec["governor"] is None and str(self.spec["variable"]) not in variables:
            raise self.fail(f"set `governor:` or sweep a {self.spec['variable']!r} variable")
        locked = [f for f in _governor_files() if f.exists() and not os.access(f, os.W_OK)]
        if locked:
            # Without cpufreq the hook records "no cpufreq" (a VM); with it, a
            # governor this user cannot set would make every run a silent no-op.
            raise self.fail(f"setting the CPU frequency governor needs root ({locked[0]} is not writable by this user)")
        super().check(records, variables)

    def apply(self, ctx: Context, phase: str) -> dict[str, object]:
        wanted = self.spec["governor"] or text(ctx.params, str(self.spec["variable"]))
        files = _governor_files()
        if not any(f.exists() for f in files):
            return {"applied": False, "requested": wanted, "in_force": None, "note": "no cpufreq on this machine"}
        errors = []
        for f in files:
            try:
                f.write_text(f"{wanted}\n")
            except OSError as exc:
                errors.append(f"{f.parent.parent.name}: {exc.strerror}")
        in_force = sorted({f.read_text().strip() for f in files if f.exists()})
        applied = in_force == [wanted]
        result: dict[str, object] = {"applied": applied, "requested": wanted, "in_force": ",".join(in_force)}
        if errors:
            result["note"] = "; ".join(errors)
        return result


def _governor_files() -> list[Path]:
    return [Path(f"/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor") for c in online_cpus()]


class Cooldown(Hook):
    """Waits a fixed time (e.g. after the run, so heat does not carry over)."""

    kind = "cooldown"
    options = {"seconds": 1.0}

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        seconds = self.spec["seconds"]
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise self.fail("expected a non-negative number", "seconds")

    def apply(self, ctx: Context, phase: str) -> dict[str, object]:
        time.sleep(number(self.spec["seconds"]))
        return {"applied": True, "seconds": self.spec["seconds"]}


class Command(Hook):
    """Any shell command (a template over the record's variables), in the run directory.

    Its exit status is recorded; `metrics` (name: regex with one group) parse
    its output into result metrics.
    """

    kind = "command"
    options = {"command": None, "name": "command", "metrics": {}}

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        _check_template(self, self.spec["command"], variables)
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", str(self.spec["name"])):
            raise self.fail("must be a simple name", "name")
        metrics = self.spec["metrics"]
        if not isinstance(metrics, dict):
            raise self.fail("expected a mapping of name: regex", "metrics")
        self.patterns = {}
        for name, regex in metrics.items():
            try:
                pattern = re.compile(str(regex), re.M)
            except re.error as exc:
                raise self.fail(f"invalid regex: {exc}", f"metrics.{name}") from None
            if pattern.groups != 1:
                raise self.fail("regex must have exactly one group", f"metrics.{name}")
            self.patterns[name] = pattern

    def declared_metrics(self) -> list[str]:
        return [f"hook.{self.spec['name']}.{name}" for name in self.spec["metrics"]]  # type: ignore[attr-defined]

    def apply(self, ctx: Context, phase: str) -> dict[str, object]:
        command = _render(str(self.spec["command"]), ctx)
        log = ctx.run_dir / f"hook-{self.spec['name']}-{phase}.log"
        with os.fdopen(safefile.create(log), "w") as out:
            proc = subprocess.run(
                ["/bin/sh", "-c", command], cwd=ctx.run_dir, stdout=out, stderr=subprocess.STDOUT, check=False
            )
        result: dict[str, object] = {"applied": proc.returncode == 0, "exit_code": proc.returncode}
        if proc.returncode != 0 and phase == "pre":
            # A failed preparation ends the run at once (status hook_failed).
            result["failed"] = f"the {self.spec['name']} hook exited with {proc.returncode} (see {log.name})"
        output = log.read_text(errors="replace")
        values = {}
        for name, pattern in self.patterns.items():
            match = pattern.search(output)
            # A number as a benchmark's metric is (int, float, else the text),
            # so the statistics, comparisons and gates see it.
            values[f"hook.{self.spec['name']}.{name}"] = metric_value(match.group(1)) if match else None
        if values:
            result["metrics"] = values
        if proc.returncode != 0:
            result["note"] = f"exited with {proc.returncode} (see {log.name})"
        return result
