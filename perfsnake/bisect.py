"""Bisection over a commit range: which commit changed the metric.

`bisect: {metric: M, threshold: 5%}` on a campaign whose only varying
variable is a commit range. Step 1 measures the range's two ends. If they do
not differ (Welch's test on subsession means at the campaign's alpha, and a
relative difference of at least the threshold), the answer is "no change";
while their difference is as large as the threshold but not yet significant,
up to END_ROUNDS rounds of the ends come first.
Otherwise each further step measures the middle commit of the interval still
in doubt, its runs interleaved with as many new runs of both ends (so drift
of the machine hits all three alike), and tells whether the middle is like
the old end or like the new one: the side its mean is closer to, when the
difference to the other side is significant (Holm over the step's two
tests); a step where neither or both are is marked ambiguous and the closer
side decides. It stops when the old-like and new-like commits are adjacent:
the new-like one is the first commit that changed the metric. At most
ceil(log2(N - 1)) + END_ROUNDS steps for N commits.

This module is the decision only (values in, next plan out); the checkpoint
loop around it is perfsnake.stages.bisect and rules/bisect.smk.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from perfsnake.statistics.tests import adjust, welch_on_subsessions
from perfsnake.values import number

#: Rounds of the ends alone while their difference is large but not yet
#: significant (a noisy machine, few runs), before "no change" is said.
END_ROUNDS = 3


def max_steps(n_versions: int) -> int:
    return math.ceil(math.log2(max(n_versions - 1, 1))) + END_ROUNDS


def step_runs(step: int, nb_runs: int) -> list[int]:
    """The run numbers of a step: 1..n for step 1, then the next n, and so on."""
    return list(range((step - 1) * nb_runs + 1, step * nb_runs + 1))


def compare(a: Sequence[float], b: Sequence[float], threshold: float, alpha: float) -> dict[str, object]:
    """b against a: relative difference, its interval, the p-value, and whether it is a change."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    mean_a, mean_b = float(x.mean()), float(y.mean())
    rel = (mean_b - mean_a) / abs(mean_a) if mean_a else math.inf
    if x.std() == 0 and y.std() == 0:  # a deterministic metric: equal or not
        p, low, high = (1.0 if mean_a == mean_b else 0.0), mean_b - mean_a, mean_b - mean_a
    else:
        comp, _ = welch_on_subsessions(x, y, 1 - alpha, alpha)
        p, low, high = comp.p_value, comp.diff_ci_low, comp.diff_ci_high
    return {"mean_a": mean_a, "mean_b": mean_b, "relative": rel, "diff_ci_low": low, "diff_ci_high": high,
            "p_value": p, "changed": bool(p < alpha and abs(rel) >= threshold)}  # fmt: skip


def decide(
    versions: Sequence[str],
    state: Mapping[str, object] | None,
    values: Mapping[str, Sequence[float]],
    step: int,
    nb_runs: int,
    threshold: float,
    alpha: float,
) -> dict[str, object]:
    """One step's decision: the state after it and the runs of the next step.

    `state` is the previous step's decision (None at step 1); `values` every
    ok run of the metric measured so far, per version."""
    old, new = versions[0], versions[-1]
    history: list[dict[str, object]] = list(state["steps"]) if state else []  # type: ignore[call-overload]
    if state is None or state.get("phase") == "ends":
        ends = compare(values[old], values[new], threshold, alpha)
        history.append({"step": step, "measured": [old, new], "ends": ends})
        if not ends["changed"]:
            if abs(number(ends["relative"])) >= threshold and step < END_ROUNDS:
                runs = step_runs(step + 1, nb_runs)  # large but not significant yet: more runs of the ends
                return {"done": False, "phase": "ends", "steps": history, "next": {old: runs, new: runs}}
            return {"done": True, "verdict": "no change", "lo": 0, "hi": len(versions) - 1, "steps": history,
                    "next": {}}  # fmt: skip
        lo, hi = 0, len(versions) - 1
    else:
        assert state is not None
        lo, hi = int(state["lo"]), int(state["hi"])  # type: ignore[call-overload]
        mid = (lo + hi) // 2
        to_old = compare(values[old], values[versions[mid]], threshold, alpha)
        to_new = compare(values[versions[mid]], values[new], threshold, alpha)
        adjusted = adjust([number(to_old["p_value"]), number(to_new["p_value"])], "holm")
        differs_old = bool(adjusted[0] < alpha) and abs(number(to_old["relative"])) >= threshold / 2
        differs_new = bool(adjusted[1] < alpha) and abs(number(to_new["relative"])) >= threshold / 2
        closer_new = abs(number(to_new["relative"])) < abs(number(to_old["relative"]))
        like_new = differs_old and not differs_new or (differs_old == differs_new and closer_new)
        history.append({"step": step, "measured": [old, versions[mid], new], "version": versions[mid],
                        "like": "new" if like_new else "old", "ambiguous": differs_old == differs_new,
                        "vs_old": to_old, "vs_new": to_new})  # fmt: skip
        lo, hi = (lo, mid) if like_new else (mid, hi)
    if hi - lo <= 1:
        return {"done": True, "verdict": "changed", "first": versions[hi], "previous": versions[lo], "lo": lo,
                "hi": hi, "steps": history, "next": {}}  # fmt: skip
    runs = step_runs(step + 1, nb_runs)
    nxt = {old: runs, versions[(lo + hi) // 2]: runs, new: runs}
    return {"done": False, "phase": "middles", "lo": lo, "hi": hi, "steps": history, "next": nxt}
