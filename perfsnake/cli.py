"""Command line helpers around the workflow.

    python -m perfsnake validate FILE...     check campaign files, write nothing
    python -m perfsnake failed [--config campaign=PATH]
                                             list runs that failed or timed out
    python -m perfsnake rerun-failed [--config campaign=PATH] [-- SNAKEMAKE ARGS]
                                             set failed runs aside and re-run only them
    python -m perfsnake artifact [--config campaign=PATH] [--output FILE.zip] [--allow-failed]
                                             pack a finished campaign as a reproducible artifact
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from perfsnake import ROOT
from perfsnake.errors import CampaignError
from perfsnake.outcomes import failed_runs, set_aside
from perfsnake.planning import campaign_files, index_from_config

def _config(overrides: list[str]) -> dict:
    local = Path("config/config.yaml")
    config = yaml.safe_load((local if local.exists() else ROOT / local).read_text()) or {}
    for item in overrides:
        key, _, value = item.partition("=")
        config[key] = value
    return config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="perfsnake", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    val = sub.add_parser("validate", help="check campaign files")
    val.add_argument("files", nargs="+")
    for name in ("failed", "rerun-failed"):
        p = sub.add_parser(name)
        p.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE")
        p.add_argument("snakemake_args", nargs=argparse.REMAINDER)
    art = sub.add_parser("artifact", help="pack a finished campaign (zip: campaign, config, workflow, results, report)")
    art.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE")
    art.add_argument("--output", metavar="FILE.zip", help="default: results/<campaign>/artifact/<campaign>-artifact.zip")
    art.add_argument("--allow-failed", action="store_true", help="pack even if some runs failed or timed out")
    art.add_argument("snakemake_args", nargs=argparse.REMAINDER, help="after --: extra arguments for snakemake --report")
    args = parser.parse_args(argv)
    try:
        if args.command == "validate":
            from perfsnake.campaign import load_campaigns

            for c in load_campaigns(args.files):
                print(f"{c.origin}: ok ({len(c.records)} records x {c.nb_runs} runs)")
            return 0
        config = _config(args.config)
        campaign_files(config)
        if args.command == "artifact":
            from perfsnake.artifact import ArtifactError, build

            try:
                out = build(config, args.config, args.output, args.allow_failed, [a for a in args.snakemake_args if a != "--"])
            except ArtifactError as exc:
                print(f"perfsnake: artifact: {exc}", file=sys.stderr)
                return 1
            print(out)
            return 0
        plan = index_from_config(config)
    except CampaignError as exc:
        print(f"perfsnake: error: {exc}", file=sys.stderr)
        return 1
    failed = failed_runs(plan)
    if args.command == "failed":
        for rdir in failed:
            print(rdir)
        return 0
    for rdir in failed:
        print(f"re-running {rdir} (previous attempt kept in {set_aside(rdir)})")
    if not failed:
        print("no failed runs")
    extra = [a for a in args.snakemake_args if a != "--"]
    # Snakemake does not rebuild missing intermediate files of an up-to-date
    # CSV by itself, so the set-aside runs are requested explicitly.
    cmd = [str(Path(sys.executable).with_name("snakemake")), "--cores", "1", "all"]
    cmd += [str(rdir / "status.json") for rdir in failed]
    if args.config:
        cmd += ["--config", *args.config]
    cmd += extra
    os.execv(cmd[0], cmd)
    return 0
