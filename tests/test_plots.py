"""Plots render real marks, whatever the column names look like."""

import re

import pytest

from perfsnake.plots import draw, summarise


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


def test_summary_interval_matches_scipy():
    import pandas as pd
    from scipy import stats

    frame = pd.DataFrame({"k": ["a"] * 5, "y": [1.0, 2.0, 4.0, 3.0, 5.0]})
    s = summarise(frame, ["k"], "y")
    lo, hi = stats.t.interval(0.95, 4, loc=3.0, scale=stats.sem(frame["y"]))
    assert s["lo"][0] == pytest.approx(lo) and s["hi"][0] == pytest.approx(hi)
