"""Noise floor stage (rules/noise_floor.smk): each selected record's floor from
the runs of its layout builds (perfsnake.statistics.noise_floor; how they are
built and run: stages.layout_builds)."""

from __future__ import annotations

from pathlib import Path

from perfsnake import layout
from perfsnake.contract import CampaignInfo
from perfsnake.statistics.noise_floor import layout_floor
from perfsnake.statistics.records import numeric_metrics, record_row, samples_by_record, stat_column, write_csv

FIRST = ["metric", "layouts", "runs", "mean", "floor", "floor_low", "floor_high"]


def floor_rows(results: list[dict], info: CampaignInfo) -> list[dict[str, object]]:
    """Per selected record and metric: its floor over the layouts, with the
    variance components behind it."""
    variables = list(info.variables)
    confidence = float(info.statistics.confidence)
    rows = []
    for metric in numeric_metrics(results):
        groups: dict[tuple[str, ...], list] = {}
        by_layout = samples_by_record(results, [*variables, layout.FLOOR_VARIABLE], metric)
        for key in sorted(by_layout, key=lambda k: (k[:-1], int(k[-1]))):
            groups.setdefault(key[:-1], []).append(by_layout[key])
        for record, samples in groups.items():
            found = layout_floor(samples, confidence)
            if found is None:
                continue
            rows.append(record_row(dict(zip(variables, record, strict=True)), {
                "metric": metric, "layouts": found.layouts,
                "runs": found.runs, "mean": found.mean, "floor": found.floor, "floor_low": found.low,
                "floor_high": found.high, "between_sd": found.between_sd, "within_sd": found.within_sd,
                "f_statistic": found.f_statistic, "confidence": confidence,
                "layout_means": " ".join(f"{m:.6g}" for m in found.layout_means),
            }))  # fmt: skip
    return rows


def write(results: list[dict], info: CampaignInfo, out: Path) -> None:
    write_csv(out, floor_rows(results, info), [*info.variables, *(stat_column(c, info.variables) for c in FIRST)])
