"""Snakemake logger plugin `perfsnake`: one live progress line instead of
Snakemake's per-job lines.

In a terminal, the bottom line is redrawn in place: per campaign, runs done
of total and failures, the builds left, an ETA for the whole invocation (its
builds and every campaign's remaining runs, from the run and build times
measured so far), what runs now and Snakemake's job count. Everything loud
scrolls above it and stays: perfsnake's lines for failed, timed-out and
unparsed runs, Snakemake's warnings and errors (any record at WARNING or
above, whatever `quiet` says), and Snakemake's other messages as its own
logger shows them. The per-job blocks ("rule run: ..."), "Select jobs to
execute...", "Finished jobid" and "k of N steps" are left out, unless the
quiet settings ask for them (`--quiet host` brings them back).

Not a terminal (CI logs, `| tee`): plain lines, each campaign's progress line
`[perfsnake] <campaign>: run k/N <record> (ETA ...)` at most once per
`--logger-perfsnake-interval` seconds (and its last run's), plus every loud
line. `--logger-perfsnake-display` chooses: auto (live in a terminal, plain
otherwise), live, plain, or snakemake (exactly Snakemake's default output).

How it learns a run's progress: Snakemake's job events (JOB_INFO carries the
rule and the wildcards, JOB_FINISHED and JOB_ERROR the end, RUN_INFO the
plan's job counts), and the fields perfsnake's run stage attaches to the
records it logs through Snakemake's logger (attribute `perfsnake`, a dict;
perfsnake.stages.run.say): `kind: run` with the run's campaign, record and
k/N (and, with the invocation's first run, every campaign's total and the
runs done before; in a batch job, which sends at most a few a second, how
many runs started since its previous one: `skipped`), `kind: failed` for a
failed run. Text that Python code of
the Snakemake process prints to stdout or stderr is kept clear of the live
line (terminal.Through).

Importable from the repository's plugins/ directory (`make setup` writes a
.pth file for it and the scheduler plugin); selected with `--logger
perfsnake`, which profiles/default sets.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_interface_logger_plugins.settings import LogHandlerSettingsBase

from .progress import Progress
from .terminal import LiveLine, Through

#: the LogRecord attribute of perfsnake's structured fields (perfsnake.stages.run.FIELDS)
FIELDS = "perfsnake"
DISPLAYS = ("auto", "live", "plain", "snakemake")
#: Snakemake's lines about single jobs, left out unless the quiet settings ask for them
PER_JOB = frozenset(
    {
        LogEvent.JOB_INFO,
        LogEvent.GROUP_INFO,
        LogEvent.JOB_STARTED,
        LogEvent.JOB_FINISHED,
        LogEvent.PROGRESS,
        LogEvent.SHELLCMD,
    }
)
#: logged before each scheduling round, without an event of its own
SELECTING = "Select jobs to execute..."
#: how often the live line is redrawn (its ETA counts down) and due plain lines are written
TICK_S = 0.5
REPAIR_TICKS = 4


@dataclass
class LogHandlerSettings(LogHandlerSettingsBase):
    # Explicit types: with postponed annotations a field's type is a string,
    # which the plugin interface would hand to argparse as the converter.
    display: str = field(
        default="auto",
        metadata={
            "help": "auto: a live progress line in a terminal, plain lines otherwise; live; plain; "
            "snakemake: Snakemake's default output",
            "choices": DISPLAYS,
            "type": str,
            "env_var": True,
        },
    )
    interval: float = field(
        default=1.0,
        metadata={"help": "Plain lines: at most one progress line per campaign per this many seconds", "type": float},
    )


class LogHandler(LogHandlerBase):
    def __post_init__(self) -> None:
        from snakemake.logging import ColorizingTextHandler, DefaultFilter, DefaultFormatter
        from snakemake.settings.enums import Quietness

        settings = self.settings if isinstance(self.settings, LogHandlerSettings) else LogHandlerSettings()
        common = self.common_settings
        quiet = set(common.quiet or ())
        self.out: TextIO = sys.stdout if common.stdout else sys.stderr
        self.texts = DefaultFormatter(common.quiet, common.show_failed_logs)
        self.shown = DefaultFilter(common.quiet, common.debug_dag, common.verbose, common.dryrun, common.printshellcmds)
        # Snakemake's own stream handler: the "snakemake" display, and the
        # colours of loud lines in a terminal.
        self.snakemake = ColorizingTextHandler(nocolor=common.nocolor, stream=self.out)
        self.snakemake.setFormatter(self.texts)
        self.snakemake.addFilter(self.shown)
        self.jobs_shown = Quietness.RULES not in quiet and Quietness.ALL not in quiet
        self.silent = Quietness.ALL in quiet and not common.dryrun
        display = settings.display if settings.display in DISPLAYS else "auto"
        if common.dryrun:  # a dry run's job list is its output
            display = "snakemake"
        if display == "auto":
            display = "live" if _is_terminal(self.out) else "plain"
        self.display = display
        self.interval = max(float(settings.interval), 0.0)
        self.progress = Progress()
        self.guard = threading.RLock()
        self.live = LiveLine(self.out, self.guard)
        self.last_was_job_info = False
        #: plain lines: campaign -> when its last progress line was written, and the one waiting
        self.written: dict[str, float] = {}
        self.waiting: dict[str, dict[str, Any]] = {}
        self.redirected: list[tuple[str, Through]] = []
        self.closed = False
        self.stop = threading.Event()
        self.ticker: threading.Thread | None = None
        if display == "live":
            self._redirect()
        if display in ("live", "plain"):
            self.ticker = threading.Thread(target=self._tick, name="perfsnake-progress", daemon=True)
            self.ticker.start()

    # ---- the plugin interface --------------------------------------------------------
    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        # Every record is needed for the progress, those the quiet settings hide too.
        return True

    @property
    def has_formatter(self) -> bool:
        return True

    @property
    def needs_rulegraph(self) -> bool:
        return False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.display == "snakemake":
                self.snakemake.handle(record)
                return
            with self.guard:
                self._learn(record)
                self._show(record)
        except Exception:
            self.handleError(record)

    def flush(self) -> None:
        with self.guard:
            self.out.flush()

    def close(self) -> None:
        with self.guard:
            if self.closed:
                super().close()
                return
            self.closed = True
        self.stop.set()
        if self.ticker is not None and self.ticker is not threading.current_thread():
            self.ticker.join()
        with self.guard:
            for campaign in list(self.waiting):
                self._write_progress(campaign)
            for name, through in self.redirected:
                through.drain()
                if getattr(sys, name) is through:
                    setattr(sys, name, through.real)
            self.live.close()
        super().close()

    # ---- what the records say --------------------------------------------------------
    def _learn(self, record: logging.LogRecord) -> None:
        # Snakemake's event fields are the record's attributes (its `extra`).
        info: dict[str, Any] = record.__dict__
        event = info.get("event")
        when = record.created
        p = self.progress
        if event == LogEvent.JOB_INFO:
            wildcards = info.get("wildcards")
            p.job_started(
                int(info["jobid"]), str(info["rule_name"]), wildcards if isinstance(wildcards, dict) else {}, when
            )
        elif event == LogEvent.JOB_FINISHED:
            p.job_ended(int(info["job_id"]), when, ok=True)
        elif event == LogEvent.JOB_ERROR:
            p.job_ended(int(info["jobid"]), when, ok=False)
        elif event == LogEvent.PROGRESS:
            p.stepped(int(info["done"]), int(info["total"]))
        elif event == LogEvent.RUN_INFO and isinstance(info.get("stats"), dict):
            p.planned(info["stats"])
        fields = info.get(FIELDS)
        if isinstance(fields, dict):
            if isinstance(fields.get("plan"), dict):
                p.plan(fields["plan"])
            if fields.get("kind") == "failed" and fields.get("campaign"):
                p.run_failed(str(fields["campaign"]))
            if fields.get("kind") == "run" and fields.get("campaign"):
                skipped = fields.get("skipped")
                p.batched_run(str(fields["campaign"]), str(fields.get("label", "")), when,
                              skipped if isinstance(skipped, int) else 0)  # fmt: skip

    def _show(self, record: logging.LogRecord) -> None:
        if self.silent:
            return
        event = getattr(record, "event", None)
        fields = getattr(record, FIELDS, None)
        if isinstance(fields, dict) and fields.get("kind") == "run":
            self._run_started(fields)
            return
        loud = record.levelno >= logging.WARNING or isinstance(fields, dict)
        if not loud:
            per_job = event in PER_JOB or record.getMessage() == SELECTING
            if (per_job and not self.jobs_shown) or not self.shown.filter(record):
                self._refresh()
                return
        text = self.texts.format(record)
        if not text or text == "None":
            self._refresh()
            return
        if event == LogEvent.JOB_INFO and not self.last_was_job_info:
            text = "\n" + text  # a blank line before a run of job blocks, as Snakemake does
        self.last_was_job_info = event == LogEvent.JOB_INFO
        if record.levelno >= logging.WARNING:
            text = self.snakemake.decorate(record, text)  # colours only where Snakemake's would
        if self.display == "live":
            self.live.above(text)
            self._refresh()
        else:
            self.out.write(text + "\n")
            self.out.flush()

    # ---- the live line ---------------------------------------------------------------
    def _refresh(self, again: bool = False) -> None:
        if self.display != "live" or self.closed:
            return
        p = self.progress
        if not (p.campaigns or p.jobs or p.steps):
            return  # nothing started yet: Snakemake's start-up lines alone
        self.live.show(p.line(time.time(), self.live.width()), again)

    def _redirect(self) -> None:
        """Python's stdout and stderr through the live line (those that are
        this terminal): perfsnake's prints, the summary."""
        for name in ("stderr", "stdout"):
            stream = getattr(sys, name)
            if isinstance(stream, Through) or not (stream is self.out or _is_terminal(stream)):
                continue
            through = Through(stream, self.live)
            setattr(sys, name, through)
            self.redirected.append((name, through))

    def _tick(self) -> None:
        ticks = 0
        while not self.stop.wait(TICK_S):
            ticks += 1
            with self.guard:
                if self.closed:
                    return
                if self.display == "live":
                    # The ETA counts down; every few ticks the line is drawn
                    # again even if unchanged, in case a subprocess wrote over it.
                    self._refresh(again=ticks % REPAIR_TICKS == 0)
                else:
                    now = time.monotonic()
                    for campaign in list(self.waiting):
                        if now - self.written.get(campaign, 0.0) >= self.interval:
                            self._write_progress(campaign)

    # ---- plain progress lines --------------------------------------------------------
    def _run_started(self, fields: dict[str, Any]) -> None:
        if self.display == "live":
            self._refresh()
            return
        campaign = str(fields.get("campaign", ""))
        self.waiting[campaign] = fields
        k, total = fields.get("k"), fields.get("total")
        last = isinstance(k, int) and isinstance(total, int) and k >= total and not fields.get("adaptive")
        written = self.written.get(campaign)
        if written is None or last or time.monotonic() - written >= self.interval:
            self._write_progress(campaign)

    def _write_progress(self, campaign: str) -> None:
        fields = self.waiting.pop(campaign, None)
        if fields is None:
            return
        self.written[campaign] = time.monotonic()
        k, total, label = fields.get("k"), fields.get("total"), fields.get("label", "")
        c = self.progress.campaigns.get(campaign)
        notes = [f"{c.failed} failed" if c is not None and c.failed else "", self.progress.eta_text(time.time())]
        if fields.get("adaptive"):
            notes.insert(0, f"at most {total}: the rounds decide how many")
            text = f"[perfsnake] {campaign}: run {k} {label}"
        else:
            text = f"[perfsnake] {campaign}: run {k}/{total} {label}"
        notes = [n for n in notes if n]
        if notes:
            text += f" ({', '.join(notes)})"
        self.out.write(text + "\n")
        self.out.flush()


def _is_terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"
    except ValueError:  # a closed stream
        return False


__all__ = ["LogHandler", "LogHandlerSettings"]
