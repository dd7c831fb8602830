"""Snakemake entry point of the analyse rule (logic in perfsnake.stages.analysis)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.contract import CampaignInfo  # noqa: E402
from perfsnake.gates import baseline_dirs, history_baselines  # noqa: E402
from perfsnake.noise_floor import read as read_floors  # noqa: E402
from perfsnake.script_helpers import campaign_of, logged  # noqa: E402
from perfsnake.stages.analysis import analyse  # noqa: E402

sm = snakemake  # noqa: F821


def recent_past_or_none(campaign_dir: Path, last: int, metric: str) -> list[dict]:
    """The store's recent past; none (an inconclusive gate, said why) when the store cannot be read."""
    from perfsnake.history.baseline import recent_past
    from perfsnake.history.store import StoreError

    try:
        return recent_past(sm.params.store, campaign_dir, last, metric)
    except StoreError as exc:
        print(f"history gate: no recent past: {exc}", file=sys.stderr)
        return []


def history_state_change(campaign_dir: Path) -> list[str]:
    """The machine-state change that left a history gate without a recent past ([] when none did)."""
    from perfsnake.history.baseline import state_change
    from perfsnake.history.store import StoreError

    try:
        return state_change(sm.params.store, campaign_dir)
    except StoreError:
        return []


def baseline_states(dirs: list[str], csvs: list[str]) -> dict[str, list[str]]:
    """Per earlier directory, what of the machine state differs from this campaign's (compare's check)."""
    from perfsnake.compare import load_side, machine_state_differences

    if not dirs:
        return {}
    this = load_side(Path(csvs[0]).parent)
    return {d: machine_state_differences([load_side(Path(f).parent), this]) for d, f in zip(dirs, csvs[1:])}


def main() -> None:
    results = json.loads(Path(sm.input.results).read_text())
    info = CampaignInfo.from_dict(campaign_of(sm))
    dirs = baseline_dirs(info.references)
    baselines = {d: json.loads(Path(f).read_text()) for d, f in zip(dirs, sm.input.baselines)}
    states = baseline_states(dirs, list(sm.input.baseline_states))
    # History gates: the results store's recent past of this campaign (perfsnake.history.baseline).
    for key, (last, metric) in history_baselines(info.references).items():
        baselines[key] = recent_past_or_none(Path(sm.input.results).parent, last, metric)
        if not baselines[key] and (changed := history_state_change(Path(sm.input.results).parent)):
            states[key] = changed
    floors = read_floors(Path(sm.input.floor[0]), list(info.variables)) if sm.input.floor else None
    analyse(results, info, Path(sm.output.summary), Path(sm.output.comparisons), Path(sm.output.significant),
            Path(sm.output.gates), baselines, floors, Path(sm.output.significant_page), states)  # fmt: skip


logged(sm.log[0], main)
