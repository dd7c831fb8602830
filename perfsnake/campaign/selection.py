"""Runs chosen from the command line: `--config only=...` and `--config tags=...`.

`tags` keeps the campaigns carrying one of the tags; `only` keeps, within
the campaigns that have its variables, the records whose values match.
What is not chosen is left as it is on disk: a chosen campaign's other
records whose runs are all there stay in its aggregate (kept, not
measured again), the others wait for an invocation that chooses them, and
a campaign not chosen does not run at all. The aggregate's `# selection`
line says which records this invocation ran.

A campaign whose runs a procedure decides (precision rounds, bisection) or
that derives campaigns from its records (controls, profile differences,
noise floor) is chosen whole or not at all: `only` refuses it in one line.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import sys
from pathlib import Path

from perfsnake import layout
from perfsnake.campaign.model import Campaign
from perfsnake.errors import CampaignError
from perfsnake.escape import value_text

Condition = tuple[str, list[str]]  # variable, its patterns (any one matches)


def parse_only(text: str) -> list[Condition]:
    """`var=pat|pat,var=pat` -> conditions; one-line errors on the config key."""
    conditions: list[Condition] = []
    for part in str(text).split(","):
        var, sep, patterns = part.partition("=")
        var = var.strip()
        if not sep or not var or not patterns.strip():
            raise CampaignError("config", "only", f"{part.strip()!r} is not variable=pattern (for example threads=1|2)")
        if any(v == var for v, _ in conditions):
            raise CampaignError("config", "only", f"{var} is named twice: give its values as one pattern list (a|b)")
        conditions.append((var, [p.strip() for p in patterns.split("|")]))
    return conditions


def _matches(values: dict[str, object], conditions: list[Condition]) -> bool:
    return all(any(fnmatch.fnmatchcase(value_text(values[v]), p) for p in pats) for v, pats in conditions)


def _whole_only(c: Campaign) -> str | None:
    """Why `only` cannot pick some of this campaign's records, or None."""
    if c.precision:
        return "precision rounds decide its runs"
    if c.bisect:
        return "bisection decides its runs"
    if c.data.get("control"):
        return "its control campaigns run every record"
    if c.data.get("profile_differences") or c.data.get("noise_floor"):
        return "it derives a campaign from every record"
    return None


def _complete(c: Campaign, path: str, workdir: Path) -> bool:
    return all((workdir / layout.status_file(c.name, path, i)).exists() for i in range(1, c.nb_runs + 1))


def select(campaigns: dict[str, Campaign], config: dict, workdir: Path, loud: bool) -> dict[str, Campaign]:
    """The campaigns and records this invocation runs (all, with neither key set)."""
    only, tags = config.get("only"), config.get("tags")
    if not only and not tags:
        return campaigns
    chosen = dict(campaigns)
    if tags:
        wanted = {t.strip() for t in str(tags).split(",") if t.strip()}
        known = {t for c in campaigns.values() for t in c.data.get("tags") or []}
        unknown = sorted(wanted - known)
        if unknown:
            raise CampaignError("config", "tags", f"no campaign has the tag {unknown[0]!r} (tags: {', '.join(sorted(known)) or 'none'})")  # fmt: skip
        roots = {n for n, c in campaigns.items() if wanted & set(c.data.get("tags") or [])}
        chosen = {n: c for n, c in chosen.items() if c.root in roots}
    if not only:
        return chosen
    conditions = parse_only(str(only))
    names = {v for v, _ in conditions}
    known_vars = {v for c in chosen.values() for v in c.variables}
    missing = sorted(names - known_vars)
    if missing:
        raise CampaignError("config", "only", f"no campaign has a variable {missing[0]!r} (variables: {', '.join(sorted(known_vars))})")  # fmt: skip
    out: dict[str, Campaign] = {}
    for name, c in chosen.items():
        if c.root != name:
            continue  # a derived campaign follows its campaign, below
        if not names <= set(c.variables):
            continue
        picked = {r.path for r in c.records if _matches(r.values, conditions)}
        if not picked:
            continue
        if len(picked) < len(c.records) and (why := _whole_only(c)):
            raise CampaignError(c.origin, "only", f"{only} picks {len(picked)} of its {len(c.records)} records, but {why}: select them in the campaign file instead")  # fmt: skip
        kept = {r.path for r in c.records if r.path not in picked and _complete(c, r.path, workdir)}
        left_out = len(c.records) - len(picked) - len(kept)
        paths = picked | kept
        records = [r for r in c.records if r.path in paths]
        selection = {"only": str(only), "selected": len(picked), "kept": len(kept), "left_out": left_out}
        out[name] = dataclasses.replace(
            c, records=records, by_path={r.path: r for r in records}, selection=selection,
            flamegraph_pairs=[(a, b) for a, b in c.flamegraph_pairs if a in paths and b in paths],
        )  # fmt: skip
        if loud:
            print(f"perfsnake: only={only}: {name}: runs {len(picked)} of {len(c.records)} records; {len(kept)} kept "
                  f"as measured before, {left_out} left for another invocation", file=sys.stderr)  # fmt: skip
    if not out:
        raise CampaignError("config", "only", f"{only} matches no record of the campaigns ({', '.join(chosen)})")
    out |= {n: c for n, c in chosen.items() if c.root != n and c.root in out}
    return out


def selection_line(selection: dict[str, object]) -> str:
    """The aggregate's `# selection` value."""
    return (f"only={selection['only']}: {selection['selected']} records selected (run now); {selection['kept']} kept "
            f"as measured before; {selection['left_out']} not in this aggregate (not measured yet)")  # fmt: skip
