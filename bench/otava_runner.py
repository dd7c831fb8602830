"""Apache Otava's change points for bench/otava_steps.py, run by the Python
of a separate venv that has Otava (it is no dependency of perfsnake):

    python3 -m venv /tmp/otava-venv && /tmp/otava-venv/bin/pip install apache-otava==0.8.0
    /tmp/otava-venv/bin/python bench/otava_runner.py < request.json

Reads one JSON request on stdin, prints one JSON answer on stdout:
- {"mode": "detect", "series": [[float, ...], ...], "options": {...}}
  -> {"change_points": [[index, ...], ...], "otava": version}
  (an index is that of the first point after the change, as perfsnake's
  step "version" is the first invocation after the step);
- {"mode": "time", "series": [float, ...] (k + 1 points), "repetitions": n,
  "options": {...}} -> median seconds of the full analysis of the first k
  points, of all k + 1, and of Otava's incremental append of the last one
  (compute_change_points with new_data and old_weak_cp, what
  AnalyzedSeries.append calls), and whether the append agreed with the
  full analysis.

Only the standard library and Otava: this file runs outside our venv.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from typing import Any

from otava.analysis import compute_change_points
from timing import interleaved_medians


def options(request: dict[str, Any]) -> dict[str, Any]:
    """Otava's keyword arguments: its defaults (window_len 50, max_pvalue
    0.001, min_magnitude 0.0) overridden by the request's."""
    given = request.get("options", {})
    return {
        "window_len": int(given.get("window_len", 50)),
        "max_pvalue": float(given.get("max_pvalue", 0.001)),
        "min_magnitude": float(given.get("min_magnitude", 0.0)),
    }


def detect(series: list[list[float]], opts: dict[str, Any]) -> list[list[int]]:
    # compute_change_points mutates nothing we keep, but give it a list
    # per call as Otava's own Series.analyze does.
    return [[int(cp.index) for cp in compute_change_points(list(s), **opts)[0]] for s in series]


def timing(series: list[float], repetitions: int, opts: dict[str, Any]) -> dict[str, Any]:
    """Full recomputation at k and k + 1 beside the incremental append of
    the (k + 1)th point to the analysis of the first k."""
    head, whole = list(series[:-1]), list(series)
    _, weak = compute_change_points(head, **opts)
    full = [int(c.index) for c in compute_change_points(list(whole), **opts)[0]]
    appended = [int(c.index) for c in compute_change_points(list(whole), **opts, new_data=1, old_weak_cp=weak)[0]]
    medians = interleaved_medians(
        {
            "full_k_s": lambda: compute_change_points(list(head), **opts),
            "full_k_plus_1_s": lambda: compute_change_points(list(whole), **opts),
            # The append's own work only: the first k points' weak change
            # points are what a caller keeps from the previous analysis.
            "append_s": lambda: compute_change_points(list(whole), **opts, new_data=1, old_weak_cp=list(weak)),
        },
        repetitions,
    )
    return {
        "k": len(head),
        **medians,
        "append_agrees_with_full": appended == full,
        "change_points_full": full,
        "change_points_append": appended,
    }


def main() -> None:
    request = json.load(sys.stdin)
    opts = options(request)
    answer: dict[str, Any] = {"otava": version("apache-otava"), "options": opts}
    if request["mode"] == "detect":
        answer["change_points"] = detect(request["series"], opts)
    elif request["mode"] == "time":
        answer |= timing(request["series"], int(request.get("repetitions", 20)), opts)
    else:
        raise SystemExit(f"otava_runner: unknown mode {request['mode']!r}")
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
