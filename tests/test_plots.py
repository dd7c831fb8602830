"""Figures: the Vega-Lite specification each plot entry becomes (encodings,
orders, scales, domains, seeded jitter), and real SVG/PNG/PDF files."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from perfsnake.campaign import load_campaign
from perfsnake.contract import CampaignInfo
from perfsnake.errors import CampaignError
from perfsnake.stages.plots import METRIC, VALUE, chart, draw, parse_units, summarise

LOCKS = ["pthread", "cas", "mcs"]  # campaign order, not alphabetical
INFO = CampaignInfo.from_dict(
    {
        "name": "locks",
        "variables": ["lock", "nb_threads"],
        "pretty": {"lock": {"pthread": "glibc"}},
        "values": {"lock": LOCKS, "nb_threads": ["1", "2", "4"]},
        "statistics": {"confidence": 0.95, "statistic": "mean"},
    }
)


def lock_rows(runs: int = 4, seed: int = 3) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for lock, speed in zip(LOCKS, (1e6, 8e5, 1.2e6), strict=True):
        for t in (1, 2, 4):
            for run in range(1, runs + 1):
                v = speed * t**0.7
                out.append({"lock": lock, "nb_threads": t, "run": run, "start": run, "status": "ok",
                            "ops_per_s": v * rng.normal(1, 0.05), "perf_stat.cache-misses": v * 30 * rng.normal(1, 0.1)})  # fmt: skip
    out.append({"lock": "cas", "nb_threads": 1, "run": runs + 1, "status": "failed", "ops_per_s": None})
    return out


def spec_of(spec: dict, rows: list[dict] | None = None, units: dict | None = None) -> dict:
    frame = pd.DataFrame(lock_rows() if rows is None else rows)
    return chart(frame, spec, INFO.pretty, 0.95, "mean", INFO.values, units).to_dict()


def layers(d: dict) -> list[dict]:
    inner = d.get("spec", d)
    return inner.get("layer", [inner])


def data_of(d: dict) -> list[dict]:
    return next(iter(d["datasets"].values()))


LINE = {"kind": "line", "x": "nb_threads", "y": "ops_per_s", "color": "lock"}
BAR = {"kind": "bar", "x": "lock", "y": "ops_per_s", "color": "nb_threads"}


def test_axis_titles_from_labels_and_units_with_si_ticks():
    d = spec_of(
        {**LINE, "labels": {"ops_per_s": "Throughput", "nb_threads": "Threads", "lock": "Lock"}},
        units={"ops_per_s": "ops/s"},
    )
    enc = layers(d)[0]["encoding"]
    assert enc["y"]["title"] == "Throughput (ops/s)"
    assert enc["x"]["title"] == "Threads" and enc["color"]["title"] == "Lock"
    assert "~s" in enc["y"]["axis"]["labelExpr"]
    assert d["title"]["text"] == "Throughput by Threads"


def test_units_parsed_from_the_rows_metadata():
    assert parse_units({"metric_units": "a=ms, b.c=ops/s"}) == {"a": "ms", "b.c": "ops/s"}
    assert parse_units({}) == {}


def test_numeric_x_ticks_at_the_data_values_with_log_base_and_fitted_domain():
    d = spec_of({**LINE, "log_x": 2})
    x = layers(d)[0]["encoding"]["x"]
    assert x["axis"]["values"] == [1, 2, 4]
    assert x["scale"]["type"] == "log" and x["scale"]["base"] == 2
    assert x["scale"]["domain"] == [1, 4] and x["scale"]["nice"] is False
    linear = layers(spec_of(LINE))[0]["encoding"]["x"]
    assert linear["scale"]["type"] == "linear" and linear["axis"]["values"] == [1, 2, 4]


def test_categories_in_campaign_order_with_pretty_labels():
    d = spec_of(BAR)
    enc = layers(d)[0]["encoding"]
    assert enc["x"]["sort"] == ["glibc", "cas", "mcs"]
    assert enc["color"]["sort"] == ["1", "2", "4"] and enc["xOffset"]["sort"] == ["1", "2", "4"]
    assert {r["lock"] for r in data_of(d)} == {"glibc", "cas", "mcs"}
    assert enc["x"]["axis"]["labelAngle"] == 0  # short labels fit horizontally


def test_error_bars_dark_caps_narrower_than_bars_and_dodged():
    d = spec_of(BAR)
    bar, rule, lo, hi = layers(d)
    assert bar["mark"]["type"] == "bar" and rule["mark"]["type"] == "rule"
    assert rule["mark"]["color"] == lo["mark"]["color"] == "#222222"
    band = d["spec"]["width"] if "spec" in d else d["width"]
    bar_width = band / 3 * 0.8 / 3  # three locks, three thread counts
    assert lo["mark"]["size"] < bar_width and hi["mark"]["size"] == lo["mark"]["size"]
    assert rule["encoding"]["xOffset"]["field"] == "nb_threads"  # each interval over its own bar
    line = spec_of(LINE)
    rows = data_of(line)
    at_two = {r["lock"]: r["xpos"] for r in rows if r["nb_threads"] == 2}
    assert len(set(at_two.values())) == 3 and all(abs(x - 2) < 0.2 for x in at_two.values())


def test_interval_in_title_only_when_there_is_one_and_never_below_zero():
    d = spec_of(BAR)
    assert "mean, 95 % CI" in d["title"]["subtitle"] and "n = 4 per point" in d["title"]["subtitle"]
    one = spec_of(BAR, rows=lock_rows(runs=1))
    assert "CI" not in one["title"]["subtitle"] and len(layers(one)) == 1
    wide = [{"k": "a", "run": i, "start": i, "status": "ok", "y": v} for i, v in enumerate((0.1, 5.0, 0.2))]
    rows = data_of(chart(pd.DataFrame(wide), {"kind": "bar", "x": "k", "y": "y"}, {}, 0.95, "mean").to_dict())
    assert rows[0]["lo"] == 0.0 and rows[0]["hi"] > 0


def test_strip_jitter_seeded_narrower_than_band_with_median():
    spec = {"kind": "strip", "x": "lock", "y": "ops_per_s", "color": "nb_threads"}
    a, b = spec_of(spec), spec_of(spec)
    assert a == b and "random()" not in json.dumps(a)
    rows = data_of(a)
    runs = [r for r in rows if r["layer"] == "run"]
    medians = [r for r in rows if r["layer"] == "median"]
    assert len(runs) == 36 and len(medians) == 9
    for r in runs:  # within its colour's slot of the band, never in the next
        slot = ["1", "2", "4"].index(r["nb_threads"])
        assert abs(r["offset"] - (slot - 1) / 3) < 0.5 / 3
    dots, marker = layers(a)
    assert dots["encoding"]["xOffset"]["scale"]["domain"] == [-0.5, 0.5]
    assert marker["mark"]["type"] == "tick"
    glibc_1 = [r[VALUE] for r in runs if r["lock"] == "glibc" and r["nb_threads"] == "1"]
    assert [m[VALUE] for m in medians if m["lock"] == "glibc" and m["nb_threads"] == "1"] == [
        pytest.approx(np.median(glibc_1))
    ]


def test_box_plots_dodged_by_colour():
    d = spec_of({"kind": "box", "x": "lock", "y": "ops_per_s", "color": "nb_threads"})
    enc = layers(d)[0]["encoding"]
    assert d.get("mark", {}).get("type") == "boxplot" or layers(d)[0]["mark"]["type"] == "boxplot"
    assert enc["xOffset"]["field"] == "nb_threads"


def test_row_and_column_facets_with_headers_and_independent_y():
    d = spec_of({"kind": "bar", "x": "lock", "y": "ops_per_s", "row": "nb_threads", "resolve_y": "independent"})
    assert d["facet"]["row"]["field"] == "nb_threads" and d["facet"]["row"]["sort"] == ["1", "2", "4"]
    assert d["facet"]["row"]["header"]["labelExpr"] == "'nb_threads = ' + datum.value"
    assert d["resolve"]["scale"]["y"] == "independent"
    c = spec_of({**LINE, "column": "lock", "color": None})
    assert c["facet"]["column"]["sort"] == ["glibc", "cas", "mcs"]


def test_several_metrics_give_one_panel_each():
    d = spec_of(
        {"kind": "bar", "x": "lock", "y": ["ops_per_s", "perf_stat.cache-misses"], "column": "nb_threads"},
        units={"ops_per_s": "ops/s"},
    )
    assert d["facet"]["row"]["field"] == METRIC
    assert d["facet"]["row"]["sort"] == ["ops_per_s (ops/s)", "perf_stat.cache-misses"]
    assert d["resolve"]["scale"]["y"] == "independent"
    assert {r[METRIC] for r in data_of(d)} == {"ops_per_s (ops/s)", "perf_stat.cache-misses"}


def test_print_style_uses_markers_and_dashes():
    enc = layers(spec_of({**LINE, "style": "print"}))[0]["encoding"]
    assert enc["shape"]["field"] == enc["strokeDash"]["field"] == "lock"
    assert enc["color"]["scale"]["range"][0] == "#000000"


def test_bar_with_log_y_starts_at_the_fitted_domain():
    d = spec_of({**BAR, "log_y": True})
    bar = layers(d)[0]
    scale = bar["encoding"]["y"]["scale"]
    assert scale["type"] == "log" and scale["nice"] is False
    lo = min(r["lo"] for r in data_of(d))
    assert lo / 1.2 < scale["domain"][0] < lo and bar["encoding"]["y2"]["datum"] == scale["domain"][0]


def test_size_options_and_readable_default():
    assert spec_of(BAR)["width"] == 240
    d = spec_of({**BAR, "width": 400, "height": 120})
    assert (d["width"], d["height"]) == (400, 120)


def test_error_bars_use_the_campaign_statistic():
    from scipy import stats

    from perfsnake.statistics.summaries import summarise as summary_csv_statistics

    y = list(np.random.default_rng(1).normal(5, 1, 30))  # independent: no merging
    frame = pd.DataFrame({"k": ["a"] * len(y), "y": y, "start": range(len(y))})
    s = summarise(frame, ["k"], "y", 0.9, "mean")
    ref = summary_csv_statistics(np.asarray(y), 0.9)
    assert s["y"][0] == pytest.approx(np.mean(y)) and (s["lo"][0], s["hi"][0]) == pytest.approx(
        (ref.mean_ci_low, ref.mean_ci_high)
    )
    # close to the plain t-interval (the residual-autocorrelation correction is small on independent data)
    lo, hi = stats.t.interval(0.9, len(y) - 1, loc=np.mean(y), scale=stats.sem(y))
    assert (s["lo"][0], s["hi"][0]) == pytest.approx((lo, hi), rel=0.05)
    m = summarise(frame, ["k"], "y", 0.9, "median")
    assert m["y"][0] == pytest.approx(np.median(y)) and m["lo"][0] <= np.median(y) <= m["hi"][0]


def test_every_kind_renders_svg_png_and_pdf(tmp_path):
    kinds = {"bar": "mark-rect", "line": "mark-line", "strip": "mark-symbol", "box": "mark-rect"}
    for kind, mark in kinds.items():
        spec = {"kind": kind, "x": "lock", "y": "perf_stat.cache-misses", "color": "nb_threads", "row": "nb_threads"}
        outs = [tmp_path / f"{kind}.{ext}" for ext in ("svg", "png", "pdf")]
        draw(lock_rows(), spec, INFO, outs, {"metric_units": "perf_stat.cache-misses=count"})
        svg = outs[0].read_text()
        ET.fromstring(svg)
        group = re.search(rf'class="{mark} role-mark[^"]*"[^>]*>(.*?)</g>', svg, re.S)
        assert group and "<path" in group.group(1), kind
        assert "glibc" in svg and "perf_stat.cache-misses (count)" in svg and "nb_threads = 1" in svg
        assert outs[1].read_bytes()[:4] == b"\x89PNG" and outs[2].read_bytes()[:5] == b"%PDF-"


def write(tmp_path, plots: str):
    path = tmp_path / "c.yaml"
    path.write_text(
        f"name: t\nbenchmark: {{type: command, command: 'echo v={{x}}', metrics: {{v: 'v=(\\S+)', w: 'w=(\\S+)'}}}}\nvariables: {{x: [1, 2], y: [a, b], z: [0]}}\nplots: {plots}\n"
    )
    return path


@pytest.mark.parametrize("plots,key,problem", [
    ("[{kind: bar, x: x, y: v}]", "plots[0]", "'y' varies but is not mapped"),
    ("[{kind: bar, x: x, y: [v, w], color: y, row: y, column: x}]", "plots[0].y", "several metrics"),
    ("[{kind: bar, x: x, y: v, color: y, labels: {q: Q}}]", "plots[0].labels.q", "not a variable"),
    ("[{kind: bar, x: x, y: v, row: nope}]", "plots[0].row", "not a variable or metric"),
    ("[{kind: bar, x: x, y: v, color: y, log_y: 1}]", "plots[0].log_y", ""),
])  # fmt: skip
def test_bad_plots_refused_in_one_line_at_load(tmp_path, plots, key, problem):
    path = write(tmp_path, plots)
    with pytest.raises(CampaignError) as info:
        load_campaign(path)
    assert "\n" not in str(info.value) and info.value.key.startswith(key) and problem in info.value.problem, str(
        info.value
    )


def test_mapped_plots_load_with_their_names(tmp_path):
    c = load_campaign(
        write(
            tmp_path,
            "[{kind: bar, x: x, y: [v, w], row: y}, {kind: line, x: x, y: v, color: y, log_x: 2, style: print}]",
        )
    )
    assert [p["name"] for p in c.plots] == ["bar-v-w-by-x", "line-v-by-x"]
