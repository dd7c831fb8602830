"""Variable generators: numeric ranges (geometric, linear) and zipped
variables, expanded as config/README.md documents them, run through
Snakemake, and bad ones refused in one line before anything is written."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import snakemake, write_campaign

from perfsnake.campaign_csv import read_results

pytestmark = pytest.mark.e2e


def _campaign(variables: dict, **extra) -> dict:
    return {
        "name": "gen",
        "benchmark": {"type": "command", "command": "echo value=1", "metrics": {"value": r"value=(\d+)"}},
        "variables": variables,
        "nb_runs": 1,
        **extra,
    }


def test_ranges_and_zipped_variables_run_as_the_records_they_expand_to(tmp_path):
    camp = write_campaign(
        tmp_path,
        _campaign(
            {
                "threads": {"range": [1, 8], "geometric": 2},
                "ratio": {"range": [0.1, 0.3], "step": 0.1},
                "cpus": ["0", "0-1"],
                "label": ["one", "two"],
            },
            zip=[["cpus", "label"]],
        ),
    )
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_results(tmp_path / "results/gen/gen.csv", dtype=str)
    got = sorted(zip(frame["threads"], frame["ratio"], frame["cpus"], frame["label"]))
    # 1, 2, 4, 8 x 0.1, 0.2, 0.3 (exact decimals) x the zipped pairs (not their product)
    want = sorted((t, r, c, lab) for t in ("1", "2", "4", "8") for r in ("0.1", "0.2", "0.3")
                  for c, lab in (("0", "one"), ("0-1", "two")))  # fmt: skip
    assert got == want and set(frame["status"]) == {"ok"}


def test_a_range_that_stops_short_of_its_last_value_and_a_float_ratio():
    from perfsnake.campaign.records import numeric_range

    assert numeric_range({"range": [1, 100], "geometric": 10}, "c.yaml", "variables.n") == [1, 10, 100]
    assert numeric_range({"range": [3, 20], "geometric": 2}, "c.yaml", "variables.n") == [3, 6, 12]
    assert numeric_range({"range": [0, 10], "step": 4}, "c.yaml", "variables.n") == [0, 4, 8]
    assert numeric_range({"range": [1, 3], "geometric": 1.5}, "c.yaml", "variables.n") == [1.0, 1.5, 2.25]
    assert numeric_range({"range": [5, 5], "step": 1}, "c.yaml", "variables.n") == [5]


@pytest.mark.parametrize(
    ("variables", "extra", "says"),
    [
        ({"n": {"range": [8, 1], "geometric": 2}}, {}, "variables.n.range: [8, 1] is empty"),
        ({"n": {"range": [1, 8], "geometric": 1}}, {}, "variables.n.geometric: a ratio of 1 never grows"),
        ({"n": {"range": [0, 8], "geometric": 2}}, {}, "variables.n.range: a geometric range starts above 0"),
        ({"n": {"range": [1, 8], "step": 0}}, {}, "variables.n.step: a step of 0 never reaches 8"),
        ({"n": {"range": [1, 8]}}, {}, "variables.n: a range takes one of geometric"),
        ({"n": {"range": [1, 8], "step": 1, "geometric": 2}}, {}, "variables.n: a range takes one of geometric"),
        ({"n": {"range": [1, 10**9], "step": 1}}, {}, "variables.n: gives 1000000000 values (at most 10000)"),
        ({"a": [1, 2], "b": [1, 2, 3]}, {"zip": [["a", "b"]]}, "zip[0]: zipped variables need as many values each (a has 2, b has 3)"),
        ({"a": [1, 2], "b": [1, 2]}, {"zip": [["a", "c"]]}, "zip[0]: 'c' is not a variable"),
        ({"a": [1], "b": [1], "c": [1]}, {"zip": [["a", "b"], ["b", "c"]]}, "zip[1]: 'b' is also zipped in zip[0]"),
    ],
)  # fmt: skip
def test_bad_generators_are_refused_in_one_line_before_anything_is_written(tmp_path, variables, extra, says):
    camp = write_campaign(tmp_path, _campaign(variables, **extra))
    proc = subprocess.run([sys.executable, "-m", "perfsnake", "validate", str(camp)], cwd=tmp_path,
                          capture_output=True, text=True, check=False)  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and lines == [f"perfsnake: error: {camp}: {says}" + lines[0].split(says, 1)[1]], (
        proc.stderr
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["campaigns"]
