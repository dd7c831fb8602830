import os
from pathlib import Path

import pytest
from helpers import write_campaign

from perfsnake.campaign import load_campaign
from perfsnake.escape import escape_component, key_component, record_path, unescape_component, value_text

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


# Realistic CFLAGS-like build values: each about 110 characters, ~130 escaped.
LONG_FLAGS = {
    "cflags": "-O2 -march=native -fno-omit-frame-pointer -funroll-loops -fstack-protector-strong -D_FORTIFY_SOURCE=2 -pipe -g3",
    "ldflags": "-Wl,-O1 -Wl,--as-needed -Wl,-z,relro -Wl,-z,now -Wl,--hash-style=gnu -Wl,--build-id=sha1 -L/opt/local/lib64 -lm",
    "defines": "-DNDEBUG -DUSE_SNAPPY=1 -DLEVELDB_PLATFORM_POSIX -DOS_LINUX -DHAVE_FDATASYNC=1 -DHAVE_O_CLOEXEC=1 -DLOCKS=mcs",
}


def test_a_build_key_of_long_values_is_one_file_name_stable_and_distinct():
    order = list(LONG_FLAGS)
    key = key_component(LONG_FLAGS, order)
    # The build directory and its log (<key>.log) are each one file name.
    assert len(f"{key}.log".encode()) <= 255 and "/" not in key
    assert key == key_component(dict(LONG_FLAGS), order)
    other = {**LONG_FLAGS, "defines": LONG_FLAGS["defines"] + " -DEXTRA"}
    assert key_component(other, order) != key
    # Short keys keep the names existing builds already have.
    assert key_component({"flag": "a", "opt": "-O2"}, ["flag", "opt"]) == "flag-a,opt--O2"
    assert key_component({}, []) == "default"


def test_a_campaigns_build_keys_of_long_values_fit_a_file_name(tmp_path):
    path = write_campaign(tmp_path, {
        "name": "long", "variables": {k: [v] for k, v in LONG_FLAGS.items()},
        "benchmark": {"type": "command", "build": "true", "build_variables": list(LONG_FLAGS), "command": "true"},
    })  # fmt: skip
    (record,) = load_campaign(path).records
    assert len(f"{record.build_key}.log".encode()) <= 255
