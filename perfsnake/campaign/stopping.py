"""How many runs a record gets: `nb_runs`; or runs added until the interval
is narrow enough (`precision`); or as a sequential design decides
(`statistics.decide`); or as a bisection over a commit range asks (`bisect`).
At most one of them, each checked before any run."""

from __future__ import annotations

from perfsnake.benchmarks.base import Benchmark
from perfsnake.errors import CampaignError
from perfsnake.escape import value_text


def _stopping(
    data: dict, raw: dict, order: list[str], recs: list[dict], metrics: list[str], benchmark: Benchmark, origin: str
) -> tuple[dict | None, dict | None]:
    """The campaign's precision spec (statistics.decide's too, which the
    precision loop runs) and its bisect spec, or None for each."""
    precision = None
    if "precision" in data:
        precision = dict(data["precision"])  # defaults filled from the schema
        if precision["metric"] not in [*metrics, "wall_s"]:
            raise CampaignError(
                origin,
                "precision.metric",
                f"{precision['metric']!r} is not a metric (metrics: {', '.join([*benchmark.metrics, 'wall_s'])})",
            )
        if precision["min_runs"] > precision["max_runs"]:
            raise CampaignError(origin, "precision.min_runs", "is larger than max_runs")
        if "nb_runs" in raw:
            raise CampaignError(origin, "nb_runs", "conflicts with precision (which sets min_runs and max_runs)")
    bisect = _bisect(data, order, recs, metrics, origin)
    if bisect and precision:
        raise CampaignError(origin, "bisect", "conflicts with precision (bisection decides which runs to add)")
    if "decide" in data["statistics"]:
        for other, given in (("precision", precision), ("bisect", bisect), ("nb_runs", "nb_runs" in raw)):
            if given:
                raise CampaignError(
                    origin, "statistics.decide", f"conflicts with {other} (the design decides how many runs)"
                )
        precision = _decide(data, recs, order, metrics, origin)
    return precision, bisect


def _decide(data: dict, recs: list[dict], order: list[str], metrics: list[str], origin: str) -> dict[str, object]:
    """statistics.decide, checked, as the precision loop's spec (mode "decide")."""
    from perfsnake.statistics import decide

    spec = data["statistics"]["decide"]  # defaults filled from the schema
    metric = spec.get("metric") or (data["statistics"].get("metrics") or metrics or ["wall_s"])[0]
    if metric not in [*metrics, "wall_s"]:
        raise CampaignError(
            origin, "statistics.decide.metric", f"{metric!r} is not a metric (metrics: {', '.join(metrics)})"
        )
    effect = spec["min_effect"]
    effect = float(effect.rstrip("%")) / 100 if isinstance(effect, str) else float(effect)
    if not 0 < effect < 1:
        raise CampaignError(
            origin, "statistics.decide.min_effect", f"{spec['min_effect']!r} is not between 0 and 100 %"
        )
    if spec["alpha"] != decide.ALPHA:
        raise CampaignError(
            origin,
            "statistics.decide.alpha",
            f"the design is calibrated for {decide.ALPHA} only, not {spec['alpha']!r}",
        )
    if spec["power"] not in decide.POWERS:
        powers = ", ".join(str(p) for p in decide.POWERS)
        raise CampaignError(
            origin, "statistics.decide.power", f"the design is calibrated for {powers} only, not {spec['power']!r}"
        )
    compared = data["statistics"].get("test_variables") or order
    if not any(
        sum(a[v] != b[v] for v in order) == 1 and any(a[v] != b[v] for v in compared)
        for i, a in enumerate(recs)
        for b in recs[i + 1 :]
    ):
        raise CampaignError(origin, "statistics.decide", "needs records one variable apart to compare")
    if data.get("order", "interleaved") != "interleaved":
        # A pair is run i of each record; only interleaving makes them neighbours in time.
        raise CampaignError(
            origin, "order", f"is {data['order']!r}: statistics.decide pairs runs, so it needs interleaved"
        )
    first = decide.Spec(effect, spec["variance"], spec["power"]).first_look
    if spec["max_runs"] < first:
        raise CampaignError(origin, "statistics.decide.max_runs", f"is below the design's first look ({first} runs)")
    return {"mode": "decide", "metric": metric, "min_effect": effect, "variance": spec["variance"], "power": spec["power"],
            "budget_s": spec.get("budget_s"), "min_runs": first, "max_runs": spec["max_runs"]}  # fmt: skip


def _bisect(data: dict, order: list[str], recs: list[dict], metrics: list[str], origin: str) -> dict | None:
    """The bisect section, checked: a metric, a relative threshold, the commit-range variable."""
    if "bisect" not in data:
        return None
    spec = dict(data["bisect"])
    ranges = [v for v, values in data["variables"].items() if isinstance(values, dict)]
    var = spec.get("variable") or (ranges[0] if len(ranges) == 1 else None)
    if var not in ranges:
        raise CampaignError(origin, "bisect.variable", "bisection needs a variable whose values are a commit range "
                            f"(variables with a range: {', '.join(ranges) or 'none'})")  # fmt: skip
    varying = [v for v in order if len({value_text(r[v]) for r in recs}) > 1 and v != var]
    if varying:
        raise CampaignError(
            origin, "bisect", f"{varying[0]!r} varies too: bisection needs {var!r} to be the only variable that varies"
        )
    if spec["metric"] not in [*metrics, "wall_s"]:
        raise CampaignError(
            origin, "bisect.metric", f"{spec['metric']!r} is not a metric (metrics: {', '.join([*metrics, 'wall_s'])})"
        )
    threshold = spec["threshold"]
    if isinstance(threshold, str):
        threshold = float(threshold.rstrip("%")) / 100
    if not 0 < float(threshold) < 1:
        raise CampaignError(
            origin, "bisect.threshold", f"{spec['threshold']!r} is not a relative change between 0 and 100 %"
        )
    return {"metric": spec["metric"], "threshold": float(threshold), "variable": var}
