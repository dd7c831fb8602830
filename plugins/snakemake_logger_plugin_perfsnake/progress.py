"""What the live line knows: per campaign, runs done of total, failures and the
run in progress, and an ETA for the whole invocation.

Fed from two sources: Snakemake's job events (which job of which rule starts
and ends, with its wildcards, and the job counts of the plan) and the
structured fields perfsnake's run stage attaches to its own log records (the
campaigns' run totals, failed runs). Pure bookkeeping: no output, no clock of
its own (every call passes the time), so it is tested without a terminal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

#: rules that prepare runs (sources, builds, perfsnake's own tools): the ETA counts them
BUILD_RULES = frozenset({"fetch", "build", "tool", "static_tool"})
RUN_RULE = "run"
#: a job executing several runs (a campaign's `batch`): its runs are counted from perfsnake's run lines
BATCH_RULE = "run_batch"


@dataclass
class Campaign:
    total: int | None = None
    #: runs with a status before this invocation's first run
    done_before: int = 0
    #: precision, bisection, profiled pairs: the total is only a cap
    adaptive: bool = False
    #: run jobs of this invocation that ended (whatever the benchmark did)
    finished: int = 0
    failed: int = 0
    seconds: float = 0.0
    measured: int = 0

    @property
    def done(self) -> int:
        return self.done_before + self.finished

    def remaining(self) -> int | None:
        return None if self.total is None else max(self.total - self.done, 0)

    def mean(self) -> float | None:
        return self.seconds / self.measured if self.measured else None


@dataclass
class Job:
    rule: str
    started: float
    campaign: str | None = None
    #: what the line says the job is doing: a run's record, a build's benchmark
    what: str = ""
    #: a batch job: when the run it executes now started (its run line)
    run_since: float | None = None


@dataclass
class Estimate:
    seconds: float
    #: some remaining work has no measured time yet: it takes longer than this
    partial: bool = False
    #: an adaptive campaign stops when its rounds decide: this is a bound
    bound: bool = False


def clock(seconds: float) -> str:
    """H:MM:SS, hours unbounded (long campaigns run for days)."""
    s = max(int(round(seconds)), 0)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


@dataclass
class Progress:
    campaigns: dict[str, Campaign] = field(default_factory=dict)
    jobs: dict[int, Job] = field(default_factory=dict)
    #: job counts of Snakemake's plan (its job stats)
    builds_total: int = 0
    runs_planned: int | None = None
    builds_done: int = 0
    build_seconds: float = 0.0
    runs_finished: int = 0
    #: Snakemake's "k of N steps"
    steps: tuple[int, int] | None = None
    #: the job the line names (the latest one started that is still running)
    current: int | None = None

    def campaign(self, name: str) -> Campaign:
        return self.campaigns.setdefault(name, Campaign())

    # ---- Snakemake's events ----------------------------------------------------------
    def planned(self, stats: Mapping[str, object]) -> None:
        """The job stats of the plan (rule name -> count, and "total")."""
        counts = {str(k): v for k, v in stats.items() if isinstance(v, int)}
        self.builds_total = sum(counts.get(rule, 0) for rule in BUILD_RULES)
        self.runs_planned = counts.get(RUN_RULE)

    def job_started(self, jobid: int, rule: str, wildcards: Mapping[str, object], when: float) -> None:
        job = Job(rule, when)
        if rule == RUN_RULE and "campaign" in wildcards:
            job.campaign = str(wildcards["campaign"])
            job.what = f"{wildcards.get('record', '')}/run-{wildcards.get('run', '')}"
            self.campaign(job.campaign)
        elif rule == BATCH_RULE and "campaign" in wildcards:
            job.campaign = str(wildcards["campaign"])
            job.what = f"batch {wildcards.get('batch', '')}"
            self.campaign(job.campaign)
        else:
            job.what = " ".join(str(v) for v in wildcards.values())
        self.jobs[jobid] = job
        self.current = jobid

    def job_ended(self, jobid: int, when: float, ok: bool) -> None:
        job = self.jobs.pop(jobid, None)
        if self.current == jobid:
            # Another job still running (parallel builds, analysis) takes its place.
            self.current = max(self.jobs, key=lambda j: self.jobs[j].started) if self.jobs else None
        if job is None:
            return
        if job.rule == RUN_RULE and job.campaign is not None:
            c = self.campaign(job.campaign)
            if ok:
                c.finished += 1
                c.seconds += when - job.started
                c.measured += 1
                self.runs_finished += 1
            else:  # an aborted run job (the launcher failed): no status, not done
                c.failed += 1
        elif job.rule == BATCH_RULE and job.campaign is not None and job.run_since is not None and ok:
            self._run_done(job.campaign, when - job.run_since)  # its last run
        elif job.rule in BUILD_RULES and ok:
            self.builds_done += 1
            self.build_seconds += when - job.started

    def _run_done(self, campaign: str, seconds: float, runs: int = 1) -> None:
        c = self.campaign(campaign)
        c.finished += runs
        c.seconds += seconds
        c.measured += runs
        self.runs_finished += runs

    def batched_run(self, campaign: str, label: str, when: float, skipped: int = 0) -> None:
        """perfsnake's line of a run that starts: inside a batch job (one job,
        many runs), the batch's previous run has ended, and so have the
        `skipped` runs started since the line before (a batch writes at most a
        few lines a second). A run job's line changes nothing (its job's
        events count it)."""
        job = next((j for j in self.jobs.values() if j.rule == BATCH_RULE and j.campaign == campaign), None)
        if job is None:
            return
        if job.run_since is not None:
            self._run_done(campaign, when - job.run_since, 1 + skipped)
        job.run_since = when
        job.what = label

    def stepped(self, done: int, total: int) -> None:
        self.steps = (done, total)

    # ---- perfsnake's fields ----------------------------------------------------------
    def plan(self, campaigns: Mapping[str, Mapping[str, object]]) -> None:
        """Every campaign of the invocation, sent with its first run: how many
        runs it may have and how many were done before."""
        for name, info in campaigns.items():
            c = self.campaign(name)
            c.total = _int(info.get("total"), c.total)
            c.done_before = _int(info.get("done"), 0) or 0
            c.adaptive = bool(info.get("adaptive", False))

    def run_failed(self, campaign: str) -> None:
        self.campaign(campaign).failed += 1

    # ---- what it adds up to ----------------------------------------------------------
    def estimate(self, now: float) -> Estimate | None:
        """Time left for the remaining builds and runs of every campaign, from
        the mean wall time of the builds and of each campaign's run jobs
        measured in this invocation (a campaign without a measured run: the
        mean of all runs), less what the running ones have done. None while
        there is work left and none of it has a measured time."""
        left = 0.0
        partial = bound = known = False
        builds = max(self.builds_total - self.builds_done, 0)
        if builds and self.builds_done:
            build_mean = self.build_seconds / self.builds_done
            running = [j for j in self.jobs.values() if j.rule in BUILD_RULES]
            left += builds * build_mean - sum(min(now - j.started, build_mean) for j in running)
            known = True
        elif builds:
            partial = True
        all_runs = sum(c.measured for c in self.campaigns.values())
        overall = sum(c.seconds for c in self.campaigns.values()) / all_runs if all_runs else None
        totals = [c for c in self.campaigns.values() if c.total is not None]
        # Before the first run has said each campaign's total (or without
        # perfsnake's fields): the plan's run jobs at the mean of all runs.
        pending = [(r, overall, False) for r in [(self.runs_planned or 0) - self.runs_finished] if not totals]
        pending += [(c.remaining() or 0, c.mean() or overall, c.adaptive) for c in totals]
        for remaining, mean, adaptive in pending:
            if remaining <= 0:
                continue
            if mean is None:
                partial = True
                continue
            left += remaining * mean
            known = True
            bound = bound or adaptive
        for j in self.jobs.values():
            since = j.started if j.rule == RUN_RULE else j.run_since if j.rule == BATCH_RULE else None
            if since is not None and j.campaign is not None:
                run_mean = self.campaigns[j.campaign].mean() or overall
                if run_mean is not None:
                    left -= min(now - since, run_mean)
        if not known:
            return None if partial else Estimate(0.0)
        return Estimate(max(left, 0.0), partial, bound)

    def eta_text(self, now: float) -> str:
        """ "ETA H:MM:SS" ("+": some of the work is not measured yet; "at most":
        adaptive campaigns), "ETA unknown" before anything is measured, ""
        when no build or run is left."""
        est = self.estimate(now)
        if est is None:
            return "ETA unknown"
        if (
            not est.seconds
            and not est.partial
            and not any(j.rule in (RUN_RULE, BATCH_RULE) for j in self.jobs.values())
        ):
            return ""
        text = clock(est.seconds)
        if est.partial:
            return f"ETA {text}+"
        return f"ETA at most {text}" if est.bound else f"ETA {text}"

    def campaign_text(self, name: str) -> str:
        c = self.campaigns[name]
        if c.total is None:
            text = f"{name}: {c.done} runs"
        elif c.adaptive:
            text = f"{name}: {c.done} runs (at most {c.total})"
        else:
            text = f"{name}: {c.done} of {c.total} runs"
        return text + (f", {c.failed} failed" if c.failed else "")

    def doing(self) -> str:
        job = self.jobs.get(self.current) if self.current is not None else None
        if job is None:
            return ""
        if job.rule in (RUN_RULE, BATCH_RULE) and job.campaign is not None:
            return f"now {job.campaign} {job.what}"
        return f"now {job.rule} {job.what}".rstrip()

    def line(self, now: float, width: int) -> str:
        """The live line, at most `width` characters: every campaign, the
        builds left, the ETA, what runs now and Snakemake's job count. When
        that is too wide, the campaigns but the current one are summed up."""
        job = self.jobs.get(self.current) if self.current is not None else None
        here = job.campaign if job is not None else None
        tail = [self.eta_text(now)]
        if self.builds_total and self.builds_done < self.builds_total:
            tail.insert(0, f"builds {self.builds_done} of {self.builds_total}")
        doing = self.doing()
        if doing:
            tail.append(doing)
        if self.steps:
            tail.append(f"{self.steps[0]} of {self.steps[1]} jobs")
        names = list(self.campaigns)
        if not any(self.campaigns[n].total is not None for n in names) and self.runs_planned:
            # Before the first run has said how many each campaign has: the plan's count.
            tail.insert(0, f"{self.runs_planned - self.runs_finished} runs to do")
            names = []
        text = _join([self.campaign_text(n) for n in names] + tail)
        if len(text) > width and len(names) > 2:
            others = [self.campaigns[n] for n in names if n != here]
            done = sum(c.done for c in others)
            total = sum(c.total or 0 for c in others)
            failed = sum(c.failed for c in others)
            summary = f"{len(others)} other campaigns: {done} of {total} runs" + (
                f", {failed} failed" if failed else ""
            )
            text = _join(([self.campaign_text(here)] if here else []) + [summary] + tail)
        if len(text) > width:
            text = text[: max(width - 3, 0)] + "..."
        return text


def _join(parts: list[str]) -> str:
    return "[perfsnake] " + " | ".join(p for p in parts if p)


def _int(value: object, default: int | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
