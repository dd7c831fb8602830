# Validation of the configuration and campaigns, lookups and input functions.
import json
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

sys.path.insert(0, str(Path(workflow.basedir).parent))

from perfsnake import workflow_support as ws
from perfsnake.errors import CampaignError

try:
    PLAN = ws.plan_from_config(config)
except CampaignError as exc:
    # One line naming the file, the key and the problem; nothing is written.
    sys.exit(f"perfsnake: error: {exc}")


wildcard_constraints:
    campaign=ws.CAMPAIGN_RE,
    record=ws.RECORD_RE,
    run=r"[1-9][0-9]*",
    bench=r"[A-Za-z0-9_.-]+",
    bkey=r"[^/]+",
    source=r"[^/.][^/]*",
    plot=r"[A-Za-z0-9][A-Za-z0-9_.-]*",


def all_targets():
    return PLAN.all_targets()


def build_input(wildcards):
    return PLAN.build_inputs(wildcards.bench, wildcards.bkey)


def build_params(wildcards):
    return PLAN.build_spec(wildcards.bench, wildcards.bkey)


def build_platform(wildcards):
    return PLAN.build_platform(wildcards.bench, wildcards.bkey)


def run_launcher(wildcards):
    return PLAN.launcher(wildcards.campaign)


def fetch_params(wildcards):
    return PLAN.source_spec(wildcards.source)


def run_build_input(wildcards):
    return PLAN.run_build_input(wildcards.campaign, wildcards.record)


def run_params(wildcards):
    return PLAN.run_spec(wildcards.campaign, wildcards.record)


def run_runtime(wildcards):
    return PLAN.run_runtime(wildcards.campaign)


def run_order(wildcards):
    return PLAN.run_order(wildcards.campaign, wildcards.record, int(wildcards.run))


def do_run(wildcards, output):
    PLAN.execute_run(
        wildcards.campaign, wildcards.record, int(wildcards.run), output[0]
    )


def _precision_decisions(campaign, upto=None):
    """The decisions of the precision rounds so far (a checkpoint each):
    (last plan, path of the last decision), stopping at the final round."""
    plan = PLAN.first_plan(campaign)
    round_number, decision_file = 1, None
    while upto is None or round_number < upto:
        decision_file = checkpoints.precision_round.get(
            campaign=campaign, round=round_number
        ).output[0]
        with open(decision_file) as f:
            decision = json.load(f)
        plan = ws.precision.next_plan(decision)
        if decision["done"]:
            break
        round_number += 1
    return plan, decision_file


def collect_input(wildcards):
    if PLAN.campaigns[wildcards.campaign].precision is None:
        return PLAN.run_targets(wildcards.campaign)
    plan, _ = _precision_decisions(wildcards.campaign)
    return PLAN.plan_targets(wildcards.campaign, plan)


def precision_final(wildcards):
    if PLAN.campaigns[wildcards.campaign].precision is None:
        return []
    return [_precision_decisions(wildcards.campaign)[1]]


def precision_round_input(wildcards):
    """A round's runs: the first nb_runs, then what earlier rounds added."""
    round_number = int(wildcards.round)
    if round_number == 1:
        return PLAN.run_targets(wildcards.campaign)
    plan, _ = _precision_decisions(wildcards.campaign, upto=round_number)
    return PLAN.plan_targets(wildcards.campaign, plan)


def plot_spec(wildcards):
    return PLAN.plot_spec(wildcards.campaign, wildcards.plot)


# Snakemake inspects an input function's signature on every call; with one
# job per run that is a measurable share of planning 10,000 runs, so the
# (unchanging) signatures are computed once.
for _func in (
    run_build_input,
    run_params,
    run_order,
    run_runtime,
    build_input,
    build_params,
    build_platform,
    run_launcher,
    fetch_params,
):
    ws.cache_signature(_func)
