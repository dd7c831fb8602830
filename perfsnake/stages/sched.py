"""Scheduler timeline stage (rules/sched.smk): the Gantt chart of a run's
threads from its sched_timeline recording (perfsnake.instruments.sched)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import altair as alt
import pandas as pd

from perfsnake.instruments.sched import load

ROW_PX = 18
#: At most this many bars: a run with a million context switches (a queue
#: lock on more threads than CPUs) would exhaust the renderer's memory, and a
#: 560-pixel-wide chart cannot show more anyway.
MAX_BARS = 5000
MAX_POINTS = 2000
PRE_EXEC = -1
BEFORE_EXEC = "before exec"
#: category10 without red (the migration ticks) and grey ("before exec"): the CPUs
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")


def merge_slices(slices: pd.DataFrame, limit: int = MAX_BARS) -> tuple[pd.DataFrame, float]:
    """Adjacent slices of a thread on one CPU, closer than a gap that grows
    until at most `limit` bars remain, merged into one bar. Returns the bars
    and the gap used (0: nothing merged)."""
    if len(slices) <= limit:
        return slices, 0.0
    span = float(slices["end"].max() - slices["start"].min()) or 1.0
    ordered = slices.sort_values(["tid", "start"]).reset_index(drop=True)
    gap = span / 4000
    while True:
        previous_end = ordered.groupby("tid")["end"].shift()
        previous_cpu = ordered.groupby("tid")["cpu"].shift()
        new_bar = previous_end.isna() | (ordered["cpu"] != previous_cpu) | (ordered["start"] - previous_end > gap)
        bars = ordered.groupby(new_bar.cumsum()).agg(tid=("tid", "first"), cpu=("cpu", "first"), start=("start", "min"),
                                                     end=("end", "max"))  # fmt: skip
        if len(bars) <= limit or gap >= span:
            return bars.reset_index(drop=True), gap
        gap *= 2


def thin(events: pd.DataFrame, limit: int = MAX_POINTS) -> pd.DataFrame:
    """Every k-th event when there are more than `limit` (for drawing only)."""
    return events if len(events) <= limit else events.iloc[:: -(-len(events) // limit)]


def draw_gantt(run_dir: Path, outputs: Sequence[Path], title: str) -> None:
    """One row per thread (name[tid]), a bar per run slice coloured by CPU;
    migrations as red ticks, wake-ups as small dots. A run without a
    recording (it failed first) gets a figure that says so."""
    timeline = load(run_dir)
    if not timeline or not timeline["slices"]:
        chart = alt.Chart(pd.DataFrame({"text": ["no scheduler recording: the run failed before perf wrote it"]}))
        figure = chart.mark_text().encode(text="text:N").properties(width=400, height=40, title=title)
    else:
        label = {t["tid"]: f"{t['name']}[{t['tid']}]" for t in timeline["threads"]}
        order = [label[t["tid"]] for t in timeline["threads"]]
        # Before its last exec a thread was the wrapper that started the
        # program (taskset pinning itself, a shell): grey, and its moves are
        # not the program's (the counts leave them out too).
        execs = {t["tid"]: float(t["exec_ms"]) for t in timeline["threads"] if "exec_ms" in t}
        frame = pd.DataFrame(timeline["slices"])
        frame.loc[frame["end"] <= frame["tid"].map(execs).fillna(-math.inf), "cpu"] = PRE_EXEC
        slices, merged = merge_slices(frame)
        slices["thread"] = slices["tid"].map(label)
        cpus = sorted(c for c in slices["cpu"].unique() if c != PRE_EXEC)
        slices["cpu"] = slices["cpu"].map(lambda c: BEFORE_EXEC if c == PRE_EXEC else f"CPU {c}")
        domain = [f"CPU {c}" for c in cpus] + ([BEFORE_EXEC] if (slices["cpu"] == BEFORE_EXEC).any() else [])
        palette = [PALETTE[i % len(PALETTE)] for i in range(len(cpus))] + ["#c7c7c7"] * (len(domain) - len(cpus))
        y = alt.Y("thread:N", sort=order, title=None)
        bars = alt.Chart(slices).mark_bar(height=ROW_PX * 0.7).encode(
            x=alt.X("start:Q", title="time since the first slice (ms)"), x2="end:Q", y=y,
            color=alt.Color("cpu:N", title="CPU", scale=alt.Scale(domain=domain, range=palette), sort=domain),
            tooltip=["thread", "cpu", "start", "end"],
        )  # fmt: skip
        layers: list[alt.Chart] = [bars]
        marks = (("migrations", "#d62728", "tick"), ("wakeups", "#222222", "point"))
        for key, colour, kind in marks:
            # (before the first slice: the recording's start, not the run's threads at work)
            events = [e for e in timeline[key] if e["tid"] in label and float(e["t"]) >= 0]
            if key == "migrations":
                events = [e for e in events if float(e["t"]) > execs.get(e["tid"], -math.inf)]
            frame = thin(pd.DataFrame(events))
            if len(frame):
                frame["thread"] = frame["tid"].map(label)
                mark = alt.Chart(frame).mark_tick(color=colour, thickness=2, size=ROW_PX) if kind == "tick" else \
                    alt.Chart(frame).mark_point(color=colour, size=12, filled=True)  # fmt: skip
                layers.append(mark.encode(x="t:Q", y=y, tooltip=["thread", "t"]))
        # (a thread pinned before the recording's first slice: at its start)
        pins = pd.DataFrame([{"thread": label[t["tid"]], "t": max(0.0, t["pinned_at_ms"]), "cpu": f"CPU {t['pinned_cpu']}"}
                             for t in timeline["threads"] if "pinned_at_ms" in t])  # fmt: skip
        if len(pins):  # the placement daemon's pins: what follows them is its doing, not the scheduler's
            layers.append(alt.Chart(pins).mark_point(shape="triangle-right", size=40, color="#222222", filled=True)
                          .encode(x="t:Q", y=y, tooltip=["thread", "t", "cpu"]))  # fmt: skip
        totals = timeline["totals"]
        subtitle = (f"{totals['sched.threads']} threads, {totals['sched.migrations']} migrations (red), "
                    f"{totals['sched.cpus_used']} CPUs; dots: wake-ups" + ("; triangles: pinned by the placement daemon" if len(pins) else "")
                    + ("; grey: before the program's exec" if BEFORE_EXEC in domain else "")
                    + (f"; {len(timeline['slices']):,} slices drawn as {len(slices):,} bars (gaps under {merged:.3g} ms merged)" if merged else ""))  # fmt: skip
        figure = alt.layer(*layers).properties(
            width=560, height=max(60, ROW_PX * len(order)), title=alt.TitleParams(title, subtitle=subtitle)
        )
    for out in outputs:
        figure.save(str(out), scale_factor=2) if Path(out).suffix == ".png" else figure.save(str(out))
