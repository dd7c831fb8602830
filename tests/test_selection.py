"""Runs chosen from the command line (perfsnake.campaign.selection): only the
matching records run, the others' runs are kept, the aggregate says which."""

import json

import pytest
from helpers import snakemake, write_campaign

from perfsnake.campaign_csv import read_csv, read_results_metadata


def campaign(name, **extra):
    return {
        "name": name,
        "benchmark": {"type": "command", "command": "echo value={x}", "metrics": {"value": r"value=(\S+)"}},
        "variables": {"x": [1, 2, 3], "y": ["a", "b"]},
        "nb_runs": 2,
        **extra,
    }


def invoke(tmp_path, camp, *config, check=True):
    return snakemake(tmp_path, None, "--cores", "1", "all", "--config", f"campaign={camp}", *config, check=check)


def starts(tmp_path, name):
    """Run directory -> its recorded start: a run measured again gets another."""
    return {p.parent.relative_to(tmp_path).as_posix(): json.loads(p.read_text())["start_epoch"]
            for p in (tmp_path / "results" / name / "runs").rglob("status.json")}  # fmt: skip


@pytest.mark.e2e
def test_only_runs_its_records_and_keeps_the_others(tmp_path):
    camp = write_campaign(tmp_path, campaign("sel"))
    proc = invoke(tmp_path, camp, "only=x=1")
    assert "only=x=1: sel: runs 2 of 6 records; 0 kept as measured before, 4 left for another invocation" in proc.stderr
    frame = read_csv(tmp_path / "results/sel/sel.csv")
    assert sorted(set(zip(frame["x"], frame["y"], strict=True))) == [(1, "a"), (1, "b")] and len(frame) == 4
    meta = read_results_metadata(tmp_path / "results/sel/sel.csv")
    assert meta["selection"] == ("only=x=1: 2 records selected (run now); 0 kept as measured before; "
                                 "4 not in this aggregate (not measured yet)")  # fmt: skip
    first = starts(tmp_path, "sel")
    assert len(first) == 4

    # Everything: the four runs made are kept, eight more are measured; no selection line.
    invoke(tmp_path, camp)
    everything = starts(tmp_path, "sel")
    assert len(everything) == 12 and all(everything[k] == v for k, v in first.items())
    assert "selection" not in read_results_metadata(tmp_path / "results/sel/sel.csv")

    # A selection of complete records measures nothing again, and the aggregate keeps every record.
    proc = invoke(tmp_path, camp, "only=y=b,x=2|3")
    assert starts(tmp_path, "sel") == everything
    frame = read_csv(tmp_path / "results/sel/sel.csv")
    assert len(frame) == 12
    assert read_results_metadata(tmp_path / "results/sel/sel.csv")["selection"].startswith(
        "only=y=b,x=2|3: 2 records selected (run now); 4 kept as measured before; 0 not in this aggregate"
    )


@pytest.mark.e2e
def test_tags_choose_campaigns(tmp_path):
    nightly = write_campaign(tmp_path, campaign("night", tags=["nightly"], variables={"x": [1]}), "n.yaml")
    other = write_campaign(tmp_path, campaign("day", variables={"x": [1]}), "d.yaml")
    config = tmp_path / "two.yaml"
    config.write_text(json.dumps({"campaigns": [str(nightly), str(other)]}))
    snakemake(tmp_path, None, "--cores", "1", "all", "--configfile", str(config), "--config", "tags=nightly")
    assert (tmp_path / "results/night/night.csv").exists()
    assert not (tmp_path / "results/day").exists()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("only=z=1", "config: only: no campaign has a variable 'z' (variables: x, y)"),
        ("only=x=9", "config: only: x=9 matches no record of the campaigns (sel)"),
        ("only=x", "config: only: 'x' is not variable=pattern (for example threads=1|2)"),
        ("only=x=1,x=2", "config: only: x is named twice: give its values as one pattern list (a|b)"),
        ("tags=nightly", "config: tags: no campaign has the tag 'nightly' (tags: none)"),
    ],
)
def test_bad_selection_is_one_line_before_anything_runs(tmp_path, config, message):
    camp = write_campaign(tmp_path, campaign("sel"))
    proc = invoke(tmp_path, camp, config, check=False)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if "perfsnake: error" in line]
    assert errors == [f"perfsnake: error: {message}"], proc.stderr[-2000:]
    assert not (tmp_path / "results").exists()


def test_only_refuses_part_of_a_precision_campaign(tmp_path):
    precision = {"metric": "value", "target_rel_ci": 0.05, "min_runs": 2, "max_runs": 4}
    data = campaign("prec", precision=precision)
    del data["nb_runs"]
    camp = write_campaign(tmp_path, data)
    proc = invoke(tmp_path, camp, "only=x=1", check=False)
    errors = [line for line in proc.stderr.splitlines() if "perfsnake: error" in line]
    assert len(errors) == 1 and errors[0].endswith(
        "only: x=1 picks 2 of its 6 records, but precision rounds decide its runs: select them in the campaign file instead"
    ), proc.stderr[-2000:]
    assert not (tmp_path / "results").exists()
