"""Figures over several campaigns (`figures:` of the configuration), and the
lock library's counters proving that a store's mutexes are the ones swept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from helpers import snakemake, write_campaign

from perfsnake.campaign import load_campaign
from perfsnake.campaign_csv import read_csv
from perfsnake.errors import CampaignError
from perfsnake.figures import parse_figures

LOCK = [{"type": "lock", "stats": True}]


def stores(tmp_path: Path) -> list[Path]:
    """Tiny lock sweeps on the two packaged stores of the paper's lock figure."""
    kc = write_campaign(tmp_path, {
        "name": "locks_kc", "benchmark": "kyotocabinet",
        "variables": {"lock": ["pthread", "mcs"], "nb_threads": [2], "db": ["cache"], "mode": ["order"], "rnum": [5000]},
        "nb_runs": 1, "timeout_s": 120, "shared_libs": LOCK,
    }, name="kc.yaml")  # fmt: skip
    rocks = write_campaign(tmp_path, {
        "name": "locks_rocks", "benchmark": "rocksdb",
        "variables": {
            "lock": ["pthread", "mcs"], "nb_threads": [2], "num": [5000], "reads": [5000],
            "bench_name": ["readrandomwriterandom"],
        },
        "nb_runs": 1, "timeout_s": 120, "shared_libs": LOCK,
    }, name="rocks.yaml")  # fmt: skip
    return [kc, rocks]


def figure_config(tmp_path: Path, campaigns: list[Path], **figure: object) -> Path:
    entry = {
        "name": "locks", "kind": "line", "x": "nb_threads", "y": "ops_per_s", "color": "lock",
        "facet": "campaign", "pretty": {"campaign": {"locks_kc": "Kyoto Cabinet", "locks_rocks": "RocksDB"}},
        **figure,
    }  # fmt: skip
    path = tmp_path / "figures.yaml"
    path.write_text(yaml.safe_dump({"campaigns": [str(c) for c in campaigns], "figures": [entry]}))
    return path


@pytest.mark.e2e
def test_a_figure_facets_campaigns_and_the_lock_library_counts_their_mutexes(tmp_path):
    config = figure_config(tmp_path, stores(tmp_path))
    snakemake(tmp_path, None, "--cores", "1", "all", "--configfile", str(config))
    for name, per_op in (("locks_kc", 3 * 2 * 5000), ("locks_rocks", 2 * 5000)):
        frame = read_csv(tmp_path / f"results/{name}/{name}.csv")
        assert (frame["status"] == "ok").all()
        mcs = frame[frame["lock"] == "mcs"]
        # Each operation of these stores takes a mutex at least once: counted
        # by the preloaded algorithm, so the sweep really swaps the store's locks.
        assert (mcs["lock.acquisitions"] >= per_op).all(), (name, mcs["lock.acquisitions"].tolist())
        assert frame[frame["lock"] == "pthread"]["lock.acquisitions"].isna().all()
    figures = tmp_path / "results/figures"
    assert (figures / "locks.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (figures / "locks.pdf").read_bytes()[:5] == b"%PDF-"
    svg = (figures / "locks.svg").read_text()
    # One panel per store, titled with its pretty name.
    assert "Kyoto Cabinet" in svg and "RocksDB" in svg
    # Editing the figure redraws it alone: no run, no collect.
    proc = snakemake(
        tmp_path, None, "--cores", "1", "all", "--configfile",
        str(figure_config(tmp_path, stores(tmp_path), title="Locks on two stores")),
    )  # fmt: skip
    text = proc.stdout + proc.stderr
    assert "localrule figure:" in text and "rule run:" not in text and "localrule collect:" not in text


def campaigns_of(tmp_path: Path) -> dict:
    return {c.name: c for c in (load_campaign(p) for p in stores(tmp_path))}


@pytest.mark.parametrize(
    ("entry", "key", "problem"),
    [
        ({"campaigns": ["locks_kc", "locks_rock"]}, "figures[0].campaigns[1]", "did you mean 'locks_rocks'"),
        ({"kind": "pie"}, "figures[0].kind", "'pie' is not one of"),
        ({"y": "opps"}, "figures[0].y", "'opps' is not a metric"),
        ({"facet": None, "color": "lock"}, "figures[0]", "'campaign' varies but is not mapped"),
        ({"color": "nb_threads"}, "figures[0]", "'lock' varies but is not mapped"),
    ],
)
def test_bad_figures_are_refused_in_one_line(tmp_path, entry, key, problem):
    base = {"name": "f", "kind": "line", "x": "nb_threads", "y": "ops_per_s", "color": "lock", "facet": "campaign"}
    spec = {k: v for k, v in {**base, **entry}.items() if v is not None}
    with pytest.raises(CampaignError) as info:
        parse_figures([spec], campaigns_of(tmp_path))
    assert info.value.key == key and problem in info.value.problem, str(info.value)
    assert "\n" not in str(info.value)


def test_variables_fixed_within_each_campaign_need_no_mapping(tmp_path):
    # db and mode exist only in the Kyoto Cabinet campaign, fixed there: the
    # campaign facet already separates them.
    spec = {"name": "f", "kind": "line", "x": "nb_threads", "y": "ops_per_s", "color": "lock", "facet": "campaign"}
    (figure,) = parse_figures([spec], campaigns_of(tmp_path))
    assert figure.campaigns == ["locks_kc", "locks_rocks"]
    assert json.loads(json.dumps(figure.spec))["facet"] == "campaign"


@pytest.mark.parametrize("name", ["locks", "schedulers"])
def test_shipped_figure_configurations_are_valid(name):
    from helpers import ROOT

    from perfsnake.planning import index_from_config

    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    config.update(yaml.safe_load((ROOT / "config/figures" / f"{name}.yaml").read_text()))
    config["campaigns"] = [str(ROOT / c) for c in config["campaigns"]]
    index = index_from_config(config)
    (figure,) = index.figures.values()
    assert len(figure.campaigns) == 3 and f"results/figures/{figure.name}.png" in index.all_targets()
