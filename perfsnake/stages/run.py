"""One benchmark run: write command.sh, hand it to the C launcher, report progress.

This code runs inside the Snakemake process (the run rule's `run:` block with
threads), before and after the launcher. The launcher alone spans the timed
interval, so nothing here is measured.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from perfsnake import layout, safefile, snakemake_internals
from perfsnake.benchmarks.base import RunContext, source_key
from perfsnake.escape import value_text
from perfsnake.hostlock import host_lock
from perfsnake.instruments.base import Context
from perfsnake.machine import state as machine_state
from perfsnake.platforms import Local
from perfsnake.platforms import local as local_platform
from perfsnake.platforms.base import COMMAND_FILE, write_command
from perfsnake.stages import layout_builds, servers

if TYPE_CHECKING:
    from perfsnake.campaign import Campaign
    from perfsnake.planning import CampaignIndex

STATUS_FILE = "status.json"
#: The launcher's second name for status.json (psrun.c, write_status): what a
#: resume restores when Snakemake deleted the output of a run that had ended
#: (a cluster job cancelled after its run).
STATUS_COPY = ".status.final"


def command_text(
    run_dir: Path,
    body: str,
    env: dict[str, object] | None = None,
    header: dict[str, object] | None = None,
) -> str:
    """A self-contained script that re-runs the benchmark by hand.

    Extra environment variables are exported, so the inherited environment
    (PATH, HOME, ...) stays and is only extended.
    """
    lines = ["#!/bin/sh", "# perfsnake run; re-run it by hand with: sh command.sh"]
    for key, value in (header or {}).items():
        # One line per key; newlines in values must not break the comment.
        lines.append(f"# {key}: {' '.join(value_text(value).split())}")
    lines.append(f"cd {shlex.quote(str(run_dir))} || exit 125")
    for key, value in (env or {}).items():
        lines.append(f"export {key}={shlex.quote(value_text(value))}")
    lines.append(body)
    return "\n".join(lines) + "\n"


@dataclass
class Progress:
    """k/N and an ETA from the measured durations of the runs done so far."""

    total: int
    done: int = 0
    seconds: float = 0.0
    measured: int = 0
    #: the rounds of a precision or decide loop set the number of runs: total is only a cap
    adaptive: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: runs started, done or not: a fleet's hosts run side by side, each its own k
    started: int = -1

    def __post_init__(self) -> None:
        self.started = max(self.started, self.done)

    def start(self, campaign: str, label: str) -> tuple[str, int]:
        """The progress line of a run that starts, and its k."""
        if self.adaptive:
            with self.lock:
                self.started += 1
                k = self.started
            return f"[perfsnake] {campaign}: run {k} {label} (at most {self.total}: the rounds decide how many)", k
        with self.lock:
            self.started += 1
            k = min(self.started, self.total)
            remaining = self.total - self.done
            if self.measured:
                eta = self.seconds / self.measured * remaining
                eta_text = time.strftime("%H:%M:%S", time.gmtime(eta))
            else:
                eta_text = "unknown"
        return f"[perfsnake] {campaign}: run {k}/{self.total} {label} (ETA {eta_text})", k

    def finished(self, seconds: float) -> None:
        with self.lock:
            self.done += 1
            self.seconds += seconds
            self.measured += 1


_PROGRESS: dict[str, Progress] = {}
_PROGRESS_LOCK = threading.Lock()


def progress_for(campaign: str, total: int, existing: int, adaptive: bool = False) -> Progress:
    """The campaign's progress tracker, created on its first run of this invocation."""
    with _PROGRESS_LOCK:
        progress = _PROGRESS.get(campaign)
        if progress is None or progress.total != total:
            progress = Progress(total=total, done=existing, adaptive=adaptive)
            _PROGRESS[campaign] = progress
        return progress


#: Snakemake's logger, by name (this module imports no Snakemake)
SNAKEMAKE_LOGGER = "snakemake.logging"
#: the LogRecord attribute that carries a line's structured fields, for the
#: perfsnake logger plugin (plugins/snakemake_logger_plugin_perfsnake)
FIELDS = "perfsnake"


def say(line: str, fields: dict[str, object], level: int = logging.INFO) -> None:
    """One [perfsnake] line. Inside Snakemake it goes through Snakemake's
    logger, so its log file has it and a logger plugin reads `fields` instead
    of parsing the text (Snakemake's default logger prints the line as it is);
    elsewhere (no handler there) it is printed on stderr."""
    logger = logging.getLogger(SNAKEMAKE_LOGGER)
    if logger.handlers:
        logger.log(level, line, extra={FIELDS: fields})
    else:
        print(line, file=sys.stderr, flush=True)


def count_done(status_paths: list[str]) -> int:
    return sum(1 for p in status_paths if os.path.exists(p))


HOOKS_FILE = "hooks.json"


def _hook_entry(hook: object, phase: str, outcome: dict[str, object]) -> dict[str, object]:
    public = {k: v for k, v in outcome.items() if not k.startswith("_")}
    return {"hook": getattr(hook, "key", ""), "type": getattr(hook, "kind", ""), "phase": phase, **public}


Launch = Callable[[Path, str, "float | None"], int]
#: a process the run depends on: (its description, the process, its launcher's status file)
Watched = tuple[str, subprocess.Popen, Path]


def execute(
    launch: Launch,
    run_dir: Path,
    script: str,
    timeout_s: float | None,
    progress: Progress | None = None,
    campaign: str = "",
    label: str = "",
    hooks: tuple[list, list, object] | None = None,
    server: servers.Server | None = None,
    on_lock: Callable[[], None] | None = None,
    local_lock: bool = True,
) -> int:
    """Run one benchmark through the platform's launcher; returns its exit code.

    The host's benchmark lock is held from before the pre-run hooks (and the
    start of the campaign's server, if it needs one) to after the post-run
    hooks, so no other invocation's run overlaps any of it. `on_lock` is
    called first once it is held. Without `local_lock` the platform's
    launcher takes the lock of the host it runs on (ssh to another machine).
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    # An earlier measurement's copy is no longer this run's record.
    (run_dir / STATUS_COPY).unlink(missing_ok=True)
    write_command(run_dir, script)  # before the hooks: a run they stop has it too
    with host_lock() if local_lock else contextlib.nullcontext(-1):
        if on_lock is not None:
            on_lock()
        if server is not None:
            problem = server.ensure()
            if problem:
                # The client would run against nothing: the run is data with the reason.
                _announce(progress, campaign, label)
                write_hook_failed(run_dir, problem)
                return 0
            server.serve(run_dir)
        watched = [server.watched()] if server is not None else []
        code = _execute_locked(launch, run_dir, script, timeout_s, progress, campaign, label, hooks, watched)
        if server is not None and read_status(run_dir).get("status") not in ("ok", "hook_failed"):
            # The client may have failed because the server died under it.
            lost = server.lost()
            if lost:
                write_hook_failed(run_dir, lost)
        return code


def read_status(run_dir: Path) -> dict:
    """The launcher's status.json of a run ({} while there is none)."""
    try:
        return json.loads((run_dir / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return {}


def _execute_locked(
    launch: Launch,
    run_dir: Path,
    script: str,
    timeout_s: float | None,
    progress: Progress | None,
    campaign: str,
    label: str,
    hooks: tuple[list, list, object] | None,
    watched: list[Watched] | None = None,
) -> int:
    """Pre-run hooks run before the launcher starts, teardown and post-run hooks
    after it returned, whatever happened; what each did goes to hooks.json.
    `watched`: what the run depends on besides the hooks' daemons (the
    campaign's server)."""
    pre, post, ctx = hooks or ([], [], None)
    watched = list(watched or [])
    if not pre and not post:
        return _launch_watched(launch, run_dir, script, timeout_s, progress, campaign, label, watched)
    report: list[dict[str, object]] = []
    started: list[tuple[object, dict[str, object]]] = []
    try:
        for hook in pre:
            state = hook.apply(ctx, "pre")
            started.append((hook, state))
            report.append(_hook_entry(hook, "pre", state))
            if state.get("failed"):
                # The benchmark would run against nothing until its timeout:
                # the run ends here, recorded as data with the hook's reason.
                _announce(progress, campaign, label)
                write_hook_failed(run_dir, str(state["failed"]))
                return 0
        for hook, state in started:
            proc = state.get("_proc")
            if isinstance(proc, subprocess.Popen):
                name = getattr(hook, "spec", {}).get("name", "daemon")
                watched.append((f"the {name} daemon", proc, run_dir / f"daemon-{name}" / STATUS_FILE))
        return _launch_watched(launch, run_dir, script, timeout_s, progress, campaign, label, watched)
    finally:
        for hook, state in reversed(started):
            done = hook.teardown(ctx, state)  # type: ignore[attr-defined]
            if done:
                report.append(_hook_entry(hook, "teardown", done))
        for hook in post:
            report.append(_hook_entry(hook, "post", hook.apply(ctx, "post")))
        safefile.write_text(run_dir / HOOKS_FILE, json.dumps(report, indent=1, default=str) + "\n")


def _launch_watched(launch: Launch, run_dir: Path, script: str, timeout_s: float | None, progress: Progress | None,
                    campaign: str, label: str, watched: list[Watched]) -> int:  # fmt: skip
    """The launch, stopped early should a daemon or server it depends on die."""
    if not watched:
        return _launch(launch, run_dir, script, timeout_s, progress, campaign, label)
    watcher = DaemonWatcher(run_dir, watched)
    with watcher:
        try:
            code = _launch(launch, run_dir, script, timeout_s, progress, campaign, label)
        except RuntimeError:
            if watcher.died is None:
                raise
    # A daemon the run depends on died while it ran (the launcher was stopped,
    # or the benchmark ended first, its client having lost the server): the
    # run is data with the reason.
    died = watcher.died or watcher.check()
    if died is None:
        return code
    write_hook_failed(run_dir, died)
    return 0


class DaemonWatcher:
    """Watches the run's daemons (and the campaign's server) while the
    benchmark runs; when one exits, it stops the benchmark's launcher at once
    (SIGTERM: the launcher then stops every process of the run), instead of
    letting the benchmark run against nothing until its timeout."""

    def __init__(self, run_dir: Path, daemons: list[Watched]) -> None:
        self.run_dir = run_dir
        self.daemons = daemons
        self.died: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> DaemonWatcher:
        if self.daemons:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            self.died = self.check()
            if self.died:
                self._stop_launcher()
                return

    def check(self) -> str | None:
        """Why the run cannot be trusted: a daemon it depends on has exited."""
        for what, proc, status in self.daemons:
            if proc.poll() is not None:
                return f"{what} {servers.how_it_exited(status)} during the run"
        return None

    def _stop_launcher(self) -> None:
        """SIGTERM to this run's launcher, found from its state file (and only
        if that process really is a psrun of this machine)."""
        try:
            lines = (self.run_dir / ".psrun.state").read_text().splitlines()
            pid = int(next(line.split()[1] for line in lines if line.startswith("pid ")))
            if b"psrun" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError, StopIteration):
            pass


def write_hook_failed(run_dir: Path, reason: str) -> None:
    """status.json of a run that a pre-run hook stopped before it started, or
    whose daemon died under it (what the launcher recorded stays)."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"
    status = {"status": "hook_failed", "exit_code": None, "signal": 0, "reason": reason, "wall_s": 0.0,
              "start": stamp, "end": stamp, "start_epoch": now, "end_epoch": now}  # fmt: skip
    recorded = read_status(run_dir)
    if recorded:
        status = {**recorded, "status": "hook_failed", "reason": reason}
    safefile.write_text(run_dir / STATUS_FILE, json.dumps(status, indent=1) + "\n")


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now: the run's {free_port}."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: in a batch job, a run that starts this soon after the batch's last progress
#: line is counted in the next line instead of a line of its own
BATCH_LINE_INTERVAL_S = 0.2


@dataclass
class BatchLines:
    """A batch job's progress lines: at most one every BATCH_LINE_INTERVAL_S
    (100,000 runs of `true` would write 100,000 lines to the terminal and
    Snakemake's log, each a write and a flush), plus its first and last run's
    and the campaign's last. A line counts the runs started since the one
    before (`skipped`), all ended by then since a batch runs one at a time."""

    last: float = -math.inf
    skipped: int = 0
    #: the batch's last run: its line is written whatever the interval
    final: bool = False
    clock: Callable[[], float] = time.monotonic

    def due(self, k: int, total: int) -> int | None:
        """For run k of `total`: None when it goes without a line, else how
        many runs before it went without one since the last line."""
        now = self.clock()
        if self.final or k >= total or now - self.last >= BATCH_LINE_INTERVAL_S:
            self.last = now
            skipped, self.skipped = self.skipped, 0
            return skipped
        self.skipped += 1
        return None


#: this thread's batch job (execute_batch), whose runs' lines BatchLines spaces out
_batch = threading.local()


def _announce(progress: Progress | None, campaign: str, label: str) -> None:
    """The progress line `run k/N <record> (ETA ...)` as a run starts (in a
    batch, spaced out: BatchLines); the invocation's first also carries every
    campaign's plan (for an ETA over all of them)."""
    global _PLAN
    if progress is None:
        return
    line, k = progress.start(campaign, label)
    lines: BatchLines | None = getattr(_batch, "lines", None)
    skipped = lines.due(k, progress.total) if lines is not None else 0
    if skipped is None:
        return
    fields: dict[str, object] = {"kind": "run", "campaign": campaign, "label": label, "k": k,
                                 "total": progress.total, "adaptive": progress.adaptive}  # fmt: skip
    if skipped:
        fields["skipped"] = skipped
    with _PROGRESS_LOCK:
        plan, _PLAN = _PLAN, None
    if plan:
        fields["plan"] = plan
    say(line, fields)


def _launch(
    launch: Launch,
    run_dir: Path,
    script: str,
    timeout_s: float | None,
    progress: Progress | None,
    campaign: str,
    label: str,
) -> int:
    _announce(progress, campaign, label)
    started = time.monotonic()
    code = launch(run_dir, script, timeout_s)
    if progress is not None:
        progress.finished(time.monotonic() - started)
    if code != 0:
        raise RuntimeError(f"launcher exited with {code} for {run_dir} (run aborted, not recorded)")
    return code


# ---- the run rule's job body ------------------------------------------------------
_DONE_BEFORE: dict[str, int] = {}
#: every campaign's runs, made at the invocation's first run and sent with its progress line
_PLAN: dict[str, dict[str, object]] | None = None


def _adaptive(c: Campaign) -> bool:
    """Its rounds, steps or picked pairs decide how many runs: the total is a cap."""
    return c.precision is not None or bool(c.bisect) or c.why_of is not None


def _plan(index: CampaignIndex) -> None:
    """Every campaign of the invocation that runs: how many runs it may have
    and how many had a status before this invocation's first run (one stat
    per possible run, as each campaign's first run counted them anyway)."""
    global _PLAN
    plan: dict[str, dict[str, object]] = {}
    for name, c in index.campaigns.items():
        if c.imported:
            continue
        if name not in _DONE_BEFORE:
            _DONE_BEFORE[name] = count_done(index.possible_run_targets(name))
        plan[name] = {"total": len(c.records) * c.max_runs, "done": _DONE_BEFORE[name], "adaptive": _adaptive(c)}
    with _PROGRESS_LOCK:
        _PLAN = plan


def run_script(index: CampaignIndex, name: str, record_path: str, run: int, workdir: Path,
               extra: dict[str, object] | None = None, server: servers.Server | None = None,
               spec: str | None = None) -> tuple[Path, str]:  # fmt: skip
    """The run directory and the text of its command.sh (absolute paths,
    re-runnable by hand); `spec`: a batched run's stamp, in its header."""
    c = index.campaigns[name]
    record = c.by_path[record_path]
    bench = c.benchmark
    rdir = layout.here(layout.run_dir(name, record_path, run), workdir)
    build_dir = layout.here(layout.build_dir(bench.key, record.build_key), workdir) if bench.needs_build() else None
    params = {**c.run_params(record), **(extra or {})}
    source = bench.source_for(params)
    src_dir = layout.here(layout.source_dir(source_key(source)), workdir) if source else None
    ctx = RunContext(params, build_dir, rdir, c.duration_s, src_dir, str(server.directory) if server else None)
    header: dict[str, object] = {"campaign": name, "record": record_path, "run": run}
    if spec is not None:
        header[SPEC_KEY] = spec
    body = c.instruments.compose(Context(params, rdir, workdir), bench.run_command(ctx))
    env: dict[str, object] = {}
    if c.floor_of:  # a layout build's run: the initial stack moves with the environment's size
        largest = int(index.campaigns[c.floor_of].data["noise_floor"]["max_padding"])
        env[layout_builds.PAD_VARIABLE] = layout_builds.padding(record_path, run, largest)
    return rdir, command_text(rdir, body, env, header=header)


def execute_run(index: CampaignIndex, name: str, record_path: str, run: int, spec: str | None = None) -> None:
    """One run job: hooks, the launcher (the timed part), progress on stderr.
    `spec`: a run of a batch job, measured under this spec stamp (run_stamp),
    which its command.sh records; its status.json the batch makes durable
    once, before its marker (see execute_batch), not one fsync a run."""
    workdir = Path.cwd()
    c = index.campaigns[name]
    # A port the run's daemon and benchmark may share ({free_port}).
    extra: dict[str, object] = {"free_port": free_port()}
    server = servers.for_run(index, name, record_path, workdir)
    rdir, script = run_script(index, name, record_path, run, workdir, extra, server, spec)
    if not _DONE_BEFORE:
        _plan(index)
    if name not in _DONE_BEFORE:
        _DONE_BEFORE[name] = count_done(index.possible_run_targets(name))
    progress = progress_for(name, len(c.records) * c.max_runs, _DONE_BEFORE[name], _adaptive(c))
    params = {**c.run_params(c.by_path[record_path]), **extra}
    ctx = Context(params, rdir, workdir)

    where = c.platform_of(c.by_path[record_path])

    if spec is not None and isinstance(where, Local):
        # Atomic but not fsynced one by one: the batch syncs once before its marker.
        where = dataclasses.replace(where, durable_status=False)

    def launch(run_dir: Path, text: str, timeout_s: float | None) -> int:
        return where.launch(workdir, run_dir, text, timeout_s, params)

    def record_state() -> None:
        """The state's identity, once the host is ours and before the hooks
        (whose settings are the campaign's, not drift); written at once, so a
        run whose workflow is killed still has it for a resume's check. (The
        load, busy time and memory around the run are the launcher's, in
        status.json: taken where the run executes, right around it.)"""
        state = {machine_state.IDENTITY: machine_state.identity()}
        safefile.write_text(rdir / machine_state.STATE_FILE, json.dumps(state) + "\n")

    # Over ssh the runs execute on another machine: this one's state says nothing of them.
    on_lock = record_state if where.kind != "ssh" else None
    # A host that takes its own benchmark lock (another machine, or a named
    # lock) does not need this one's: a fleet's hosts run side by side.
    local_lock = not where.own_lock(workdir)
    local_platform.ended_as()  # nothing an earlier run of this thread left
    execute(launch, rdir, script, c.timeout_s, progress, name, f"{record_path}/run-{run}",
            hooks=(c.instruments.pre, c.instruments.post, ctx), server=server, on_lock=on_lock,
            local_lock=local_lock)  # fmt: skip
    if server is not None:
        servers.after_run(server)
    # A batch's plain run that its launcher says went well needs no read of
    # its status.json (hooks and servers may record a failure after it).
    plain = server is None and not c.instruments.pre and not c.instruments.post
    if local_platform.ended_as() == "ok" and plain:
        return
    line = failure_line(name, f"{record_path}/run-{run}", rdir)
    if line:
        say(line, {"kind": "failed", "campaign": name, "label": f"{record_path}/run-{run}"}, logging.WARNING)


#: command.sh's header key of a batched run: what it was measured under (its
#: spec and builds, hashed: run_stamp), written before it starts
SPEC_KEY = "spec"
#: where perfsnake before 2026-11-28 kept that stamp (a results directory it made keeps its runs)
SPEC_STAMP = ".run-spec"


def sync_results(directory: Path) -> None:
    """What a batch's runs wrote, on disk: one syncfs of the file system
    holding `directory` (os.sync where libc has none). A machine that
    crashes before it may lose or truncate the status.json of runs since the
    batch started; the batch has no marker yet, so the next invocation runs
    it again, and measures again each run without a status that parses."""
    import ctypes

    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        os.sync()
        return
    try:
        syncfs = getattr(ctypes.CDLL(None, use_errno=True), "syncfs", None)
        if syncfs is None or syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def run_stamp(index: CampaignIndex, name: str, record_path: str, workdir: Path) -> str:
    """What a batched run was measured under: its spec (what re-runs a run job)
    and the identity of its builds (their Snakemake timestamps), hashed."""
    import hashlib

    parts = [index.runs.run_spec(name, record_path)]
    for need in index.builds.run_inputs(name, record_path):
        path = workdir / need
        stamp = path / ".snakemake_timestamp"  # a directory output's time, as Snakemake reads it
        try:
            parts.append(f"{need}:{(stamp if stamp.exists() else path).stat().st_mtime_ns}")
        except OSError:
            parts.append(f"{need}:missing")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _recorded_spec(rdir: Path) -> str | None:
    """The spec stamp a batched run's command.sh names in its header (or an
    earlier version's .run-spec file); None when there is none."""
    prefix = f"# {SPEC_KEY}: "
    try:
        with (rdir / COMMAND_FILE).open(errors="replace") as f:
            for line in f:
                if not line.startswith("#"):
                    break  # the header ends where the script starts
                if line.startswith(prefix):
                    return line[len(prefix) :].strip()
    except OSError:
        pass
    try:
        return (rdir / SPEC_STAMP).read_text().strip()
    except OSError:
        return None


def _finished_under(rdir: Path, stamp: str) -> bool:
    """The run ended (its launcher recorded how) under this stamp: a batch
    that runs again keeps it. A launcher still finishing after an
    interruption is waited for, as keep_finished_runs does."""
    if _recorded_spec(rdir) != stamp:
        return False
    status = rdir / STATUS_FILE
    if not _recorded(status):
        _wait_for_launcher(rdir, LAUNCHER_WAIT_S)
    return _recorded(status)


def _execute_runs(index: CampaignIndex, name: str, runs: list[tuple[str, int]], stamps: dict[str, str],
                  workdir: Path, kept: list[str], measured: list[str], aborted: list[str]) -> None:  # fmt: skip
    """A batch's runs, one after the other: kept, measured or aborted."""
    todo: list[tuple[str, int, Path, str]] = []
    for record_path, run in runs:
        rdir = layout.here(layout.run_dir(name, record_path, run), workdir)
        if record_path not in stamps:
            stamps[record_path] = run_stamp(index, name, record_path, workdir)
        label = f"{record_path}/run-{run}"
        if _finished_under(rdir, stamps[record_path]):
            kept.append(label)
        else:
            todo.append((record_path, run, rdir, label))
    for i, (record_path, run, rdir, label) in enumerate(todo):
        _batch.lines.final = i == len(todo) - 1  # its progress line counts the runs before it
        # What Snakemake deletes before a run job runs again (an earlier
        # attempt set aside by rerun-failed, under previous/, stays).
        for stale in (STATUS_FILE, "stderr.txt"):
            (rdir / stale).unlink(missing_ok=True)
        try:
            execute_run(index, name, record_path, run, spec=stamps[record_path])
        except Exception as exc:  # noqa: BLE001 - one aborted run does not stop its batch
            aborted.append(f"{label}: {exc}")
            say(f"[perfsnake] {name}: run {label} ABORTED: {exc}",
                {"kind": "failed", "campaign": name, "label": label}, logging.WARNING)  # fmt: skip
            continue
        measured.append(label)


def execute_batch(index: CampaignIndex, name: str, round_number: int, k: int,
                  added: dict[str, list[int]] | None, marker: str, log_file: str) -> None:  # fmt: skip
    """A batch job: each of its runs that has not finished under its current
    spec runs (execute_run: its own host lock, hooks, progress line), in the
    campaign's order; finished ones are kept. A run whose launcher aborts
    does not stop the others; the job then fails (no marker), so the next
    invocation runs only what is missing. The marker lists the batch's runs."""
    workdir = Path.cwd()
    runs = index.batches.runs_of(name, round_number, k, added)
    kept: list[str] = []
    measured: list[str] = []
    aborted: list[str] = []
    # `batch: auto`'s choice stays this results directory's (Batches._auto_size).
    size_file = layout.here(layout.batch_size(name), workdir)
    if index.batches.reason(name) and not size_file.exists():
        size_file.parent.mkdir(parents=True, exist_ok=True)
        safefile.write_text(size_file, json.dumps({"size": index.batches.size(name),
                                                   "reason": index.batches.reason(name)}) + "\n")  # fmt: skip
    stamps: dict[str, str] = {}  # a record's runs share their spec and builds: hashed once per batch
    _batch.lines = BatchLines()
    try:
        with local_platform.serving():  # one launcher for the batch's local runs
            _execute_runs(index, name, runs, stamps, workdir, kept, measured, aborted)
    finally:
        _batch.lines = None
    # The runs' status.json (renamed into place without an fsync each) on
    # disk before the marker says the batch is done.
    if measured or aborted:
        sync_results(layout.here(layout.campaign_dir(name), workdir))
    Path(log_file).parent.mkdir(parents=True, exist_ok=True)
    Path(log_file).write_text(
        f"{len(measured)} run(s) measured, {len(kept)} kept (finished before), {len(aborted)} aborted\n"
        + "".join(f"aborted {a}\n" for a in aborted)
    )
    if aborted:
        raise RuntimeError(f"{name}: {len(aborted)} of {len(runs)} run(s) of batch r{round_number}-b{k} aborted "
                           f"(the others are kept; the next invocation runs only these): {aborted[0]}")  # fmt: skip
    data = {"campaign": name, "round": round_number, "batch": k, "kept": len(kept),
            "runs": [layout.status_file(name, p, i) for p, i in runs]}  # fmt: skip
    safefile.write_text(Path(marker), json.dumps(data, indent=1) + "\n")


def last_line(path: Path, tail: int = 64 * 1024) -> str:
    """The last non-empty line of a file: where a program that fails says why
    (warnings and notes come before it; a Python traceback ends with it)."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, f.seek(0, 2) - tail))
            lines = [line.strip() for line in f.read().decode(errors="replace").splitlines() if line.strip()]
    except FileNotFoundError:
        return ""
    return lines[-1][:200] if lines else ""


def failure_line(campaign: str, label: str, rdir: Path) -> str | None:
    """One loud line for a run that failed or timed out (None when it went well)."""
    status = read_status(rdir)
    state = status.get("status")
    if state in ("ok", None):
        return None
    if state == "timeout":
        how = f"timed out after {status.get('wall_s', 0):.1f} s"
    elif state == "hook_failed":
        return f"[perfsnake] {campaign}: run {label} HOOK_FAILED: {status.get('reason', '')}"
    elif status.get("signal"):
        how = f"killed by signal {status['signal']}"
    else:
        how = f"exit code {status.get('exit_code')}"
    err = last_line(rdir / "stderr.txt")
    return f"[perfsnake] {campaign}: run {label} {state.upper()}: {how}" + (f": {err}" if err else "")


#: the launcher's state file in a run directory while it runs ("pid N", ...; psrun.c)
LAUNCHER_STATE = ".psrun.state"
#: how long a resume waits for a launcher that outlived the interrupted workflow
LAUNCHER_WAIT_S = 120.0


def keep_finished_runs(workdir: Path, wait_s: float = LAUNCHER_WAIT_S) -> list[str]:
    """Forget Snakemake's "incomplete" mark on runs that finished.

    psrun writes status.json (atomically) once the run ended; Snakemake marks
    the job complete a few milliseconds later. A workflow killed in between
    leaves the mark, and `--rerun-incomplete` would delete the finished run
    and measure it again. Before the DAG is built, marks whose status.json
    exists and parses are removed (how Snakemake keeps its marks:
    perfsnake.snakemake_internals.incomplete_marks). Returns the runs kept.

    The launcher outlives a killed workflow on purpose (it leaves the
    workflow's process group to stop the benchmark cleanly), and when the
    benchmark had ended before the kill it still writes status.json, later:
    after an fsync on a loaded disk, or a time-out's grace period, the resume
    may already be here. Deciding then would leave the mark, and the run
    that finished would be measured again; so a marked run without a status
    whose launcher still runs is waited for (at most `wait_s`), then judged."""
    kept: list[str] = []
    for mark in snakemake_internals.incomplete_marks(workdir):
        key = mark.key
        if not (key.startswith(f"{layout.RESULTS}/") and "/runs/" in key and key.endswith(f"/{STATUS_FILE}")):
            continue
        status = workdir / key
        if not _recorded(status):
            _wait_for_launcher(status.parent, wait_s)
            if not _recorded(status) and not _restored(status):
                continue
        snakemake_internals.forget_incomplete_mark(mark)
        kept.append(key)
    if kept:
        print(f"[perfsnake] resume: {len(kept)} run(s) that finished before the interruption kept: "
              + " ".join(sorted(kept)[:5]) + (" ..." if len(kept) > 5 else ""), file=sys.stderr, flush=True)  # fmt: skip
    return kept


#: `--config state_change=accept`: a resume in another machine state runs even where it would be refused
ACCEPT_STATE_CHANGE = "accept"


def check_resumed_state(index: CampaignIndex, workdir: Path, strict: bool, accept: bool) -> str | None:
    """Before anything runs: per campaign that resumes (it keeps runs and
    lacks some of its first plan's, or an adaptive one lacks its results),
    one line when runs it keeps were measured in another machine state than
    this one now (another boot, kernel, huge pages, ...). In strict mode or
    for a campaign with `requires:` that mixing is refused: the refusal's
    line is returned (None when nothing is refused); `accept`
    (--config state_change=accept) lets it run."""
    now = machine_state.identity()
    refusals = []
    for name, c in index.campaigns.items():
        if c.imported or c.platform.kind == "ssh":
            continue
        kept = [workdir / p for p in index.possible_run_targets(name) if (workdir / p).exists()]
        if not kept:
            continue
        incomplete = not all((workdir / p).exists() for p in index.run_targets(name))
        if not incomplete and not (_adaptive(c) and not (workdir / layout.results_json(name)).exists()):
            continue  # nothing of it runs again
        count, keys = machine_state.kept_differences(_kept_states(kept), now, c.instruments.state_set())
        if not count:
            continue
        boot = keys.pop("boot_id", None)
        how = f"under another boot (boot id {boot['first']}, now {boot['now']})" if boot else "in another machine state"
        rest = machine_state.drift_text(keys, "now")
        line = f"{name}: {count} run(s) kept were measured {how}" + (f"; {rest}" if rest else "")
        why = "strict mode" if strict else "its requires:" if c.data.get("requires") else ""
        if why and not accept:
            refusals.append(f"{line}: {why} does not mix machine states in one campaign: re-run it from scratch "
                            f"(remove {layout.RESULTS}/{name}/runs) or accept the change with --config state_change=accept")  # fmt: skip
            continue
        note = f" ({why}, state_change=accept: resuming anyway)" if why else " (resuming: its new runs are flagged)"
        print(f"perfsnake: {line}{note}", file=sys.stderr, flush=True)
    return "\nperfsnake: error: ".join(refusals) or None


def _kept_states(status_files: list[Path]) -> list[dict]:
    """The machine states the kept runs recorded, earliest run first (runs
    from before states were recorded have none)."""
    found = []
    for status in status_files:
        try:
            state = json.loads((status.parent / machine_state.STATE_FILE).read_text())[machine_state.IDENTITY]
            start = float(json.loads(status.read_text()).get("start_epoch") or 0.0)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if isinstance(state, dict):
            found.append((start, state))
    return [state for _start, state in sorted(found, key=lambda pair: pair[0])]


def restore_deleted_runs(index: CampaignIndex, workdir: Path) -> list[str]:
    """Put back the status.json of runs that ended but whose job Snakemake
    then counted as failed, deleting the output with its mark (a Slurm job
    cancelled by Ctrl-C after its run ended, before Snakemake polled it), or
    that Snakemake deleted as their job was about to measure them again
    (--forcerun) when the workflow died: the launcher's copy is the run's
    latest finished measurement (a run that starts measuring removes it
    first, in execute). Runs of batches are kept by their batch
    (execute_batch) instead. One stat per possible run, as the DAG makes
    anyway; returns the runs restored."""
    restored: list[str] = []
    for name, c in index.campaigns.items():
        if c.imported or index.batches.batched(name):
            continue
        for target in index.possible_run_targets(name):
            status = workdir / target
            if not status.exists() and _restored(status):
                restored.append(target)
    if restored:
        print(f"[perfsnake] resume: {len(restored)} run(s) that finished before the interruption restored "
              "(Snakemake had deleted their status.json): " + " ".join(sorted(restored)[:5])
              + (" ..." if len(restored) > 5 else ""), file=sys.stderr, flush=True)  # fmt: skip
    return restored


def _restored(status: Path) -> bool:
    """status.json put back from the launcher's copy: Snakemake deletes the
    output of a job it counts as failed, also one whose run had ended (a
    cluster job cancelled while its Snakemake was finishing)."""
    copy = status.with_name(STATUS_COPY)
    if not _recorded(copy):
        return False
    tmp = status.with_name(f".{STATUS_FILE}.restore")
    tmp.unlink(missing_ok=True)
    os.link(copy, tmp)
    tmp.replace(status)
    return True


def _recorded(status: Path) -> bool:
    """A status.json that parses and says how the run went."""
    try:
        json.loads(status.read_text())["status"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return True


def _live_launcher(run_dir: Path) -> int | None:
    """The pid of the run's launcher while it still runs: its state file
    names it, and that process is a psrun working on this run directory (a
    reused pid is not), or a batch's serving psrun (whose runs only the state
    file names: a pid reused by another batch's makes the wait longer, no
    more)."""
    try:
        lines = (run_dir / LAUNCHER_STATE).read_text().splitlines()
        pid = int(next(line.split()[1] for line in lines if line.startswith("pid ")))
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        target = str(run_dir) if b"--serve" in args else os.fsdecode(args[args.index(b"--dir") + 1])
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    if state == "Z" or b"psrun" not in args[0] or os.path.realpath(target) != os.path.realpath(run_dir):
        return None
    return pid


def _wait_for_launcher(run_dir: Path, wait_s: float) -> None:
    pid = _live_launcher(run_dir)
    if pid is None:
        return
    print(f"[perfsnake] resume: waiting for the launcher of {run_dir} (pid {pid}), "
          "still finishing after the interruption", file=sys.stderr, flush=True)  # fmt: skip
    deadline = time.monotonic() + wait_s
    while _live_launcher(run_dir) == pid and time.monotonic() < deadline:
        time.sleep(0.05)
