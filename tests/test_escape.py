import os
from pathlib import Path

import pytest

from perfsnake.escape import escape_component, record_path, unescape_component, value_text

NASTY = [
    "a/b",
    "../..",
    "..",
    ".",
    ".hidden",
    "a b",
    "$(touch x)",
    "`id`",
    "a;b|c&d",
    "é∂😀",
    "",
    "%",
    "%2F",
    "{x}",
    "a\nb",
    "*?[]",
]


@pytest.mark.parametrize("value", NASTY)
def test_escaped_value_is_one_safe_component(value):
    comp = escape_component(value)
    assert "/" not in comp and comp not in (".", "..") and not comp.startswith(".")
    assert comp.isascii() and all(c.isalnum() or c in "_+-.%" for c in comp)
    assert unescape_component(comp) == value


def test_encoding_is_injective():
    encoded = [escape_component(v) for v in NASTY]
    assert len(set(encoded)) == len(NASTY)


def test_record_path_stays_under_base(tmp_path):
    record = {"x": "../../../etc", "y": "/abs/path"}
    rel = record_path(record, ["x", "y"])
    assert rel.count("/") == 1
    full = (tmp_path / rel).resolve()
    assert full.is_relative_to(tmp_path)
    assert os.path.commonpath([full, tmp_path]) == str(tmp_path)


def test_record_path_follows_variable_order():
    assert record_path({"b": 1, "a": 2}, ["b", "a"]) == "b-1/a-2"
    assert record_path({"b": 1, "a": 2}, ["a", "b"]) == "a-2/b-1"
    assert record_path({}, []) == "default"


def test_value_text_of_yaml_scalars():
    assert value_text(True) == "true"
    assert value_text(4) == "4"
    assert value_text(0.5) == "0.5"
    assert Path(escape_component(value_text(False))).name == "false"
