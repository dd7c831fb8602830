"""The `perfsnake` command (also `python -m perfsnake`), around the workflow.

    perfsnake validate FILE...                 check campaign files, write nothing
    perfsnake failed [--config campaign=PATH]  list runs that failed or timed out
    perfsnake rerun-failed [--config ...] [-- SNAKEMAKE ARGS]
                                               set failed runs aside and re-run only them
    perfsnake summary [--config ...] [--strict]
                                               per campaign: counts, files, top differences
    perfsnake check [--config ...] [--inconclusive fail|pass] [--junit F] [--markdown F] [--verdict F]
                                               exit 1 when a reference gate failed (for CI)
    perfsnake compare PACKED.csv NEW.csv       a re-run's summary.csv against a packed one
    perfsnake artifact [--config ...] [--output FILE.zip] [--allow-failed]
                                               pack a finished campaign as a reproducible artifact
    perfsnake history import|export|show|publish ...
                                               the results store: every invocation's runs over time
    perfsnake tune [--show | --reset] [--governor NAME --turbo on|off --aslr on|off --cpus LIST ...]
                                               set this machine up for steady runs (root), show it, put it back
    perfsnake import TOOL FILE... --campaign NAME [--no-run]
                                               hyperfine, Google Benchmark, Criterion or pyperf results
                                               as a campaign (written to config/campaigns/NAME.yaml, then made)

Run it from the workflow's working directory; `--config` takes the same
KEY=VALUE pairs as Snakemake's (campaign=PATH selects one campaign file).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import yaml

from perfsnake import ROOT
from perfsnake.errors import CampaignError
from perfsnake.failed_runs import failed_runs, set_aside
from perfsnake.planning import campaign_files, index_from_config


def _config(overrides: list[str]) -> dict:
    local = Path("config/config.yaml")
    config = yaml.safe_load((local if local.exists() else ROOT / local).read_text()) or {}
    for item in overrides:
        key, _, value = item.partition("=")
        config[key] = value
    return config


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perfsnake", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    val = sub.add_parser(
        "validate", help="check campaign files before anything runs (one line per problem); writes nothing"
    )
    val.add_argument("files", nargs="+", metavar="FILE", help="campaign YAML files")

    def config_option(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE",
                       help="as Snakemake's --config: campaign=PATH picks one campaign file (default: config/config.yaml's list)")  # fmt: skip

    failed = sub.add_parser("failed", help="list the run directories whose run failed or timed out")
    config_option(failed)
    rerun = sub.add_parser(
        "rerun-failed", help="set failed attempts aside (previous/attempt-K) and re-run only those runs"
    )
    config_option(rerun)
    rerun.add_argument("snakemake_args", nargs=argparse.REMAINDER, help="after --: extra arguments for snakemake")
    summary = sub.add_parser(
        "summary", help="per campaign: ok / failed / timeout / unparsed counts, files, top differences"
    )
    config_option(summary)
    summary.add_argument(
        "--strict",
        action="store_true",
        help="exit with status 1 when any run failed, timed out or did not parse (for CI)",
    )
    check = sub.add_parser(
        "check", help="the campaigns' reference gates: one line per gate not passed; exit 1 on a failure"
    )
    config_option(check)
    check.add_argument(
        "--inconclusive", choices=["fail", "pass"], default="pass",
        help="how an inconclusive gate (interval straddling its bound) counts (default: pass, reported)",
    )  # fmt: skip
    check.add_argument("--junit", metavar="FILE", type=Path,
                       help="also write the gates as JUnit XML: a test suite per campaign, a test case per gate")  # fmt: skip
    check.add_argument("--markdown", metavar="FILE", type=Path,
                       help="also write a Markdown summary (also appended to $GITHUB_STEP_SUMMARY when it is set)")  # fmt: skip
    check.add_argument("--verdict", metavar="FILE", type=Path,
                       help="also write the verdict as JSON (format perfsnake-verdict, version 1) with the exit status")  # fmt: skip
    cmp = sub.add_parser(
        "compare",
        help="one campaign's results from several dates or hosts (result directories or artifact zips): "
        "each side's statistic, ratio to the first with its interval, Holm-adjusted p, and what differs in the metadata",
    )
    cmp.add_argument("sides", nargs="+", metavar="DIR_OR_ZIP",
                     help="results/<campaign>/ directories or artifact zips (two summary.csv files: the artifact check)")  # fmt: skip
    cmp.add_argument("--output", metavar="DIR", help="also write compare.csv, compare.md, metadata_differences.csv")
    sub.add_parser(
        "capabilities", help="what this machine lets instruments observe (hardware PMU, kprobes, uprobes, BTF, ...)"
    )
    from perfsnake.importers import TOOLS

    imp = sub.add_parser(
        "import",
        help="another tool's results as a campaign: per-run rows, intervals, corrected comparisons, plots, report",
        description="Tools and what they read: " + "; ".join(f"{k}: {v}" for k, v in TOOLS.items()),
    )
    imp.add_argument("tool", choices=list(TOOLS), help="the tool that measured")
    imp.add_argument("files", nargs="+", metavar="FILE", help="its JSON files (criterion: target/criterion)")
    imp.add_argument("--campaign", required=True, metavar="NAME", help="the campaign (and results/NAME/) to create")
    imp.add_argument("--output", metavar="FILE.yaml", type=Path, help="default: config/campaigns/NAME.yaml")
    imp.add_argument("--force", action="store_true", help="replace an existing campaign file")
    imp.add_argument("--no-run", action="store_true", help="only write the campaign file")
    from perfsnake.history.cli import add_parser as add_history

    add_history(sub)
    from perfsnake.machine.tune import add_parser as add_tune

    add_tune(sub)
    art = sub.add_parser("artifact", help="pack a finished campaign (zip: campaign, config, workflow, results, report)")
    config_option(art)
    art.add_argument(
        "--output", metavar="FILE.zip", help="default: results/<campaign>/artifact/<campaign>-artifact.zip"
    )
    art.add_argument("--allow-failed", action="store_true", help="pack even if some runs failed or timed out")
    art.add_argument(
        "snakemake_args", nargs=argparse.REMAINDER, help="after --: extra arguments for snakemake --report"
    )
    return parser


def _batches_of(run_dirs: list[Path]) -> list[Path]:
    """The markers of the batches these runs belong to (each marker lists its runs' status files)."""
    from perfsnake import layout

    wanted = {str(rdir / "status.json") for rdir in run_dirs}
    found = []
    for name in dict.fromkeys(rdir.parts[1] for rdir in run_dirs):
        for marker in sorted(Path(layout.batch_marker(name, 1, 1)).parent.glob("*.json")):
            try:
                runs = json.loads(marker.read_text())["runs"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if wanted.intersection(runs):
                found.append(marker)
    return found


def _validate(files: list[str]) -> int:
    """Each file planned as the workflow plans it (stages.validate.plan): a campaign
    with this directory's config/config.yaml, as `--config campaign=FILE`;
    a workflow configuration (`campaigns:`, `figures:`) as `--configfile`."""
    from perfsnake.stages.validate import plan

    for file in files:
        try:
            data = yaml.safe_load(Path(file).read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise CampaignError(file, "", f"cannot read it: {exc}") from None
        workflow_config = isinstance(data, dict) and ("campaigns" in data or "figures" in data)
        config = {**_config([]), **data} if workflow_config else {**_config([]), "campaign": file}
        index = plan(config)
        for c in index.campaigns.values():
            if c.why_of or c.floor_of or c.control_of:
                continue  # derived from a campaign of the file: planned with it
            print(f"{c.origin}: ok ({len(c.records)} records x {c.nb_runs} runs)")
        if index.figures:
            print(f"{file}: ok ({len(index.figures)} figures)")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "validate":
            return _validate(args.files)
        if args.command == "history":
            from perfsnake.history.cli import main as history_main

            return history_main(args)
        if args.command == "tune":
            from perfsnake.machine.tune import main as tune_main

            return tune_main(args)
        if args.command == "capabilities":
            from perfsnake.machine import capabilities

            for key, value in capabilities.describe().items():
                print(f"{key}: {value}")
            problem = capabilities.tracefs_problem()
            if problem:
                print(f"tracefs_problem: {problem}")  # why the tracepoint answers are "no"
            return 0
        if args.command == "compare":
            if len(args.sides) == 2 and all(p.endswith(".csv") for p in args.sides):
                from perfsnake.artifact import main as artifact_main  # a re-run against its artifact's summary

                return artifact_main(["compare", *args.sides])
            from perfsnake.compare import CompareError
            from perfsnake.compare import main as compare_main

            try:
                return compare_main(args.sides, args.output)
            except CompareError as exc:
                print(f"perfsnake: compare: {exc}", file=sys.stderr)
                return 2
        if args.command == "import":
            from perfsnake.importers import command as import_command

            written = import_command.write(args.tool, args.files, args.campaign, args.output, args.force)
            print(f"wrote {written}")
            return 0 if args.no_run else import_command.make(written, [])
        config = _config(args.config)
        campaign_files(config)
        if args.command == "artifact":
            from perfsnake.artifact import ArtifactError, build

            try:
                out = build(
                    config, args.config, args.output, args.allow_failed, [a for a in args.snakemake_args if a != "--"]
                )
            except ArtifactError as exc:
                print(f"perfsnake: artifact: {exc}", file=sys.stderr)
                return 1
            print(out)
            return 0
        # failed, rerun-failed, summary, check: rerun-failed measures (through Snakemake, which checks again).
        plan = index_from_config(config, measuring=args.command == "rerun-failed")
    except CampaignError as exc:
        print(f"perfsnake: error: {exc}", file=sys.stderr)
        return 1
    if args.command == "summary":
        from perfsnake.stages.summary import report

        return report(plan, {**config, "strict": args.strict or config.get("strict", False)}, succeeded=True)
    if args.command == "check":
        from perfsnake import ci_outputs
        from perfsnake.stages.summary import check_gates

        outputs = ci_outputs.requested(args.junit, args.markdown, args.verdict, os.environ)
        problem = ci_outputs.unwritable(outputs)
        if problem:  # before any verdict is printed or written: a typo in CI leaves nothing half-done
            print(f"perfsnake: check: {problem}", file=sys.stderr)
            return 2
        found: dict[str, list[dict[str, str]] | None] = {}
        status = check_gates(plan, args.inconclusive, found)
        try:
            ci_outputs.write(outputs, ci_outputs.Report.of(found, args.inconclusive, status))
        except OSError as exc:
            print(f"perfsnake: check: cannot write the CI outputs: {exc}", file=sys.stderr)
            return 2
        return status
    failed = failed_runs(plan)
    if args.command == "failed":
        for rdir in failed:
            print(rdir)
        if not failed:
            print("no failed runs")
        return 0
    for rdir in failed:
        print(f"re-running {rdir} (previous attempt kept in {set_aside(rdir)})")
    if not failed:
        print("no failed runs")
    extra = [a for a in args.snakemake_args if a != "--"]
    # Snakemake does not rebuild missing intermediate files of an up-to-date
    # CSV by itself, so the set-aside runs are requested explicitly; a
    # batched run through its batch, whose marker goes (the batch job then
    # runs only its runs without a status: these).
    # `-m`: an environment need not have the snakemake script beside python.
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "all"]
    batched = {name for name in plan.campaigns if plan.batches.batched(name)}
    cmd += [str(rdir / "status.json") for rdir in failed if rdir.parts[1] not in batched]
    for marker in _batches_of([rdir for rdir in failed if rdir.parts[1] in batched]):
        marker.unlink()
        cmd.append(str(marker))
    if args.config:
        cmd += ["--config", *args.config]
    cmd += extra
    os.execv(cmd[0], cmd)
    return 0
