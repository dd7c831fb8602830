"""Derived metrics' safe evaluator and metrics read from files."""

from __future__ import annotations

import json

import pytest

from perfsnake import expressions, file_metrics


def test_arithmetic_over_names():
    tree = expressions.parse("events / total_time_s + max(a, 2) ** 2 - -1")
    assert expressions.names(tree) == {"events", "total_time_s", "a"}
    assert expressions.evaluate(tree, {"events": 10, "total_time_s": 4, "a": 3}) == pytest.approx(2.5 + 9 + 1)


def test_dotted_metric_names_are_names():
    tree = expressions.parse("sched.runtime_ms * (1 - perf_record.spin_share)")
    assert expressions.names(tree) == {"sched.runtime_ms", "perf_record.spin_share"}
    values = {"sched.runtime_ms": 10, "perf_record.spin_share": 0.25}
    assert expressions.evaluate(tree, values) == pytest.approx(7.5)
    assert expressions.evaluate(tree, {"sched.runtime_ms": 10}) is None


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('x')",
        "a.b()",
        "(1).real",
        "open('f')",
        "a if b else c",
        "[1]",
        "'s'",
        "lambda: 1",
        "a < b",
        "True",
    ],
)
def test_anything_but_arithmetic_is_refused(text):
    with pytest.raises(expressions.ExpressionError):
        expressions.parse(text)


def test_missing_values_and_undefined_arithmetic_give_no_value():
    tree = expressions.parse("a / b")
    assert expressions.evaluate(tree, {"a": 1, "b": 0}) is None
    assert expressions.evaluate(tree, {"a": 1}) is None
    assert expressions.evaluate(tree, {"a": 1, "b": "x"}) is None
    assert expressions.evaluate(expressions.parse("log(a)"), {"a": -1}) is None


def test_fields_from_json_yaml_and_csv(tmp_path):
    (tmp_path / "fio.json").write_text(
        json.dumps({"jobs": [{"read": {"iops": 1234.5, "lat_ns": {"percentile": {"99.000000": 800}}}}]})
    )
    (tmp_path / "s.yaml").write_text("metrics:\n  - stressor: cpu\n    bogo-ops-per-second-real-time: 4567.8\n")
    (tmp_path / "t.csv").write_text("step,ms\n1,5\n2,7\n")
    specs = [
        {"file": "fio.json", "format": "json", "fields": {"iops": "jobs.0.read.iops", "missing": "jobs.1.read.iops"}},
        {"file": "s.yaml", "format": "yaml", "fields": {"bogo": "metrics.0.bogo-ops-per-second-real-time"}},
        {"file": "t.csv", "format": "csv", "fields": {"last_ms": "-1.ms", "first_ms": "0.ms"}},
        {"file": "absent.json", "fields": {"gone": "x"}},
    ]
    got, problems = file_metrics.metrics_from(tmp_path, specs)
    assert got == {"iops": 1234.5, "missing": None, "bogo": 4567.8, "last_ms": 7, "first_ms": 5, "gone": None}
    assert len(problems) == 2 and any("absent.json" in p for p in problems)
