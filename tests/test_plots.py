"""Plots render real marks, whatever the column names look like."""

import re

import numpy as np
import pytest

from perfsnake.stages.report import draw, summarise


def rows():
    out = []
    for x in ("a", "b"):
        for run, v in enumerate((10.0, 12.0, 11.0), 1):
            out.append({"x": x, "run": run, "perf_stat.task-clock": v * (2 if x == "b" else 1), "status": "ok"})
    out.append({"x": "a", "run": 4, "perf_stat.task-clock": None, "status": "failed"})
    return out


@pytest.mark.parametrize("kind,mark", [("bar", "mark-rect"), ("line", "mark-line"), ("strip", "mark-symbol"), ("box", "mark-rect")])
def test_every_kind_draws_marks_for_dotted_metric_names(tmp_path, kind, mark):
    spec = {"kind": kind, "x": "x", "y": "perf_stat.task-clock", "name": "p"}
    draw(rows(), spec, {"x": {"a": "Alpha"}}, tmp_path / "p.svg", tmp_path / "p.png")
    svg = (tmp_path / "p.svg").read_text()
    group = re.search(rf'class="{mark} role-mark[^"]*"[^>]*>(.*?)</g>', svg, re.S)
    assert group and "<path" in group.group(1), kind
    assert "Alpha" in svg and "perf_stat.task-clock" in svg  # pretty label and real name shown
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_error_bars_use_the_campaign_statistic():
    import pandas as pd
    from scipy import stats

    from perfsnake.stats import summarise as summary_csv_statistics

    y = list(np.random.default_rng(1).normal(5, 1, 30))  # independent: no merging
    frame = pd.DataFrame({"k": ["a"] * len(y), "y": y, "start": range(len(y))})
    s = summarise(frame, ["k"], "y", 0.9, "mean")
    ref = summary_csv_statistics(np.asarray(y), 0.9)
    assert s["y"][0] == pytest.approx(np.mean(y)) and (s["lo"][0], s["hi"][0]) == pytest.approx((ref.mean_ci_low, ref.mean_ci_high))
    # close to the plain t-interval (the residual-autocorrelation correction is small on independent data)
    lo, hi = stats.t.interval(0.9, len(y) - 1, loc=np.mean(y), scale=stats.sem(y))
    assert (s["lo"][0], s["hi"][0]) == pytest.approx((lo, hi), rel=0.05)
    m = summarise(frame, ["k"], "y", 0.9, "median")
    assert m["y"][0] == pytest.approx(np.median(y)) and m["lo"][0] <= np.median(y) <= m["hi"][0]
