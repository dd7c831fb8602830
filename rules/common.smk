# The campaign index of this invocation and the rules' input functions. Each
# function delegates to the stage module of its rule (perfsnake/stages/).
import json
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

# The workflow's own package, wherever the workflow lives (a checkout, a
# Snakemake module, a snakedeploy copy).
sys.path.insert(0, str(Path(workflow.current_basedir).parent))

from perfsnake import layout, planning, run_times, snakemake_internals
from perfsnake.errors import CampaignError
from perfsnake.stages import profile as profile_stage
from perfsnake.stages import run as run_stage
from perfsnake.stages import summary as summary_stage
from perfsnake.stages import validate as validate_stage
from perfsnake.stages import why as why_stage
from perfsnake.script_helpers import flow, run_in_process
from perfsnake.values import config_flag

# The collect and precision stages import numpy, scipy and ruptures (seconds
# of start-up); they are imported when one of their jobs or input functions
# runs, not when the workflow is parsed.

try:
    # `batch: auto` sizes a fresh results directory from the runs the results
    # store measured (perfsnake.planning.Batches).
    INDEX = validate_stage.plan(
        config, run_times=run_times.lookup(config.get("history"))
    )
except CampaignError as exc:
    # One line naming the file, the key and the problem; nothing is written.
    sys.exit(f"perfsnake: error: {exc}")

# A run whose launcher wrote its status before the workflow was killed is
# finished, even though Snakemake had not yet marked its job complete: keep
# it instead of measuring it again (perfsnake.stages.run.keep_finished_runs).
if workflow.is_main_process:
    run_stage.keep_finished_runs(Path.cwd())
    # A run that ended but whose job was then cancelled (Ctrl-C on a cluster)
    # lost its status.json to Snakemake's clean-up: put it back the same way.
    run_stage.restore_deleted_runs(INDEX, Path.cwd())
    # A resume whose kept runs were measured in another machine state (a
    # reboot, another kernel, ...) says so; strict mode or requires: refuse
    # to mix the two states before anything runs.
    _refused = run_stage.check_resumed_state(
        INDEX,
        Path.cwd(),
        summary_stage.strict_mode(config),
        config.get("state_change") == run_stage.ACCEPT_STATE_CHANGE,
    )
    if _refused:
        sys.exit(f"perfsnake: error: {_refused}")

# Runs must never overlap: without the bench_lock resource Snakemake would
# start several at once. Cluster profiles declare it too (one run per node).
if workflow.is_main_process and "bench_lock" not in workflow.global_resources:
    sys.exit(
        "perfsnake: error: bench_lock is not a global resource, so benchmark runs could overlap: "
        "use the workflow profile (profiles/default) or pass --resources bench_lock=1"
    )
# A fleet's hosts each run one benchmark at a time: one lock resource per host
# (Snakemake's own way to add a global resource, as for its pipe groups).
for _lock in map(planning.fleet_lock, INDEX.runs.fleet_hosts()):
    workflow.register_resource(_lock, 1)


# Once the scheduler is built, before the first job: the cyclic garbage
# collector back on (off while planning: see workflow/Snakefile), and no
# local job-rate limit (each scheduling round it triggers walks every waiting
# run job; runs are serialised anyway). Both rely on Snakemake's internals:
# perfsnake/snakemake_internals.py says which and why.
onstart:
    snakemake_internals.resume_garbage_collection()
    snakemake_internals.drop_job_rate_limiter(workflow)
    # A fleet of Slurm nodes needs Slurm's executor (known only now, not when
    # the workflow is parsed) and nodes the cluster has: one line otherwise,
    # before any job.
    _problem = snakemake_internals.cluster_python_problem(
        workflow.executor_plugin.cli_prefix, sys.executable
    )
    if _problem:
        sys.exit(f"perfsnake: error: {_problem}")
    try:
        for _line in INDEX.runs.check_slurm_fleets(
            workflow.executor_plugin.cli_prefix
        ):
            print(f"perfsnake: warning: {_line}", file=sys.stderr)
    except CampaignError as exc:
        sys.exit(f"perfsnake: error: {exc}")


wildcard_constraints:
    **layout.WILDCARDS,


def all_targets(wildcards):
    # An input function: a precision campaign's post-processing waits for
    # its rounds (final_plan below reads their checkpoints).
    return INDEX.targets.all_targets()


def final_plan(campaign):
    """A precision campaign's runs once its rounds decided."""
    from perfsnake.stages import precision as precision_stage

    return precision_stage.decisions(INDEX, decision_file, campaign)[0]


INDEX.targets.final_plan = final_plan


def build_input(wildcards):
    return INDEX.builds.build_inputs(wildcards.bench, wildcards.bkey)


def build_params(wildcards):
    return INDEX.builds.build_spec(wildcards.bench, wildcards.bkey)


def fetch_params(wildcards):
    return INDEX.builds.source_spec(wildcards.source)


def run_inputs(wildcards):
    # ancient: the marker orders runs after every build of the campaign, but
    # its age never re-runs a measurement (the run's own build still does).
    return [
        *INDEX.builds.run_inputs(wildcards.campaign, wildcards.record),
        ancient(INDEX.builds.ready_flag(wildcards.campaign, wildcards.record)),
    ]


def collect_params(wildcards):
    return INDEX.runs.collect_spec(wildcards.campaign)


def campaign_builds(wildcards):
    return INDEX.builds.campaign_builds(wildcards.campaign)


def host_builds(wildcards):
    return INDEX.builds.host_builds(wildcards.campaign, wildcards.host)


def run_params(wildcards):
    return INDEX.runs.run_spec(wildcards.campaign, wildcards.record)


# The perfsnake scheduler plugin starts runs in the campaign's order; it asks
# this index for the position of each run job (by its output path).
try:
    import snakemake_scheduler_plugin_perfsnake as _scheduler
except ImportError:  # another scheduler: runs still never overlap
    pass
else:
    _scheduler.ORDER_OF_OUTPUT = INDEX.order_of_output


def batch_round(wildcards):
    """(round, place) of the batch a run_batch job executes (r<round>-b<place>)."""
    round_text, k = wildcards.batch[1:].split("-b")
    return int(round_text), int(k)


def batch_added(campaign, round_number):
    """The runs the previous round added (round > 1), and its decision file."""
    if round_number == 1:
        return None, []
    path = decision_file(campaign, round_number - 1)
    added = {
        p: r["add"] for p, r in json.loads(Path(path).read_text())["records"].items()
    }
    return added, [path]


def batch_inputs(wildcards):
    round_number, k = batch_round(wildcards)
    added, decision = batch_added(wildcards.campaign, round_number)
    records = INDEX.batches.records_of(wildcards.campaign, round_number, k, added)
    needs = {
        p: None for r in records for p in INDEX.builds.run_inputs(wildcards.campaign, r)
    }
    return [
        *needs,
        *decision,
        ancient(INDEX.builds.ready_flag(wildcards.campaign)),
    ]


def batch_params(wildcards):
    return INDEX.batches.spec(wildcards.campaign)


def do_batch(wildcards, input, output, log):
    round_number, k = batch_round(wildcards)
    added, _ = batch_added(wildcards.campaign, round_number)
    run_stage.execute_batch(
        INDEX, wildcards.campaign, round_number, k, added, output[0], log[0]
    )


def run_files(campaign):
    """The status files of the runs a campaign's collect reads (in its plan's order)."""
    if INDEX.campaigns[campaign].bisect:
        from perfsnake.stages import bisect as bisect_stage

        return bisect_stage.collect_inputs(INDEX, step_file, campaign)
    if INDEX.campaigns[campaign].precision is None:
        return INDEX.rounds.run_targets(campaign)
    from perfsnake.stages import precision as precision_stage

    return precision_stage.collect_inputs(INDEX, decision_file, campaign)


def do_run(wildcards):
    run_stage.execute_run(
        INDEX, wildcards.campaign, wildcards.record, int(wildcards.run)
    )


def decision_file(campaign, round_number):
    return checkpoints.precision_round.get(
        campaign=campaign, round=round_number
    ).output[0]


def step_file(campaign, step):
    return checkpoints.bisect_step.get(campaign=campaign, step=step).output[0]


def collect_input(wildcards):
    if INDEX.campaigns[wildcards.campaign].imported:
        return INDEX.runs.imported_files(wildcards.campaign)
    if INDEX.batches.batched(wildcards.campaign):
        # The batches' markers; the job reads their runs' files (run_files).
        from perfsnake.stages import precision as precision_stage

        return precision_stage.batch_markers(INDEX, decision_file, wildcards.campaign)
    return run_files(wildcards.campaign)


def why_report_inputs(wildcards):
    """The pairs the why_pairs checkpoint picked, their graphs and tables."""
    pairs = checkpoints.why_pairs.get(campaign=wildcards.campaign).output[0]
    return [pairs, *why_stage.report_inputs(wildcards.campaign, pairs)]


def precision_final(wildcards):
    if INDEX.campaigns[wildcards.campaign].precision is None:
        return []
    from perfsnake.stages import precision as precision_stage

    return precision_stage.final_decision(INDEX, decision_file, wildcards.campaign)


def bisect_step_input(wildcards):
    from perfsnake.stages import bisect as bisect_stage

    return bisect_stage.step_inputs(
        INDEX, step_file, wildcards.campaign, int(wildcards.step)
    )


def bisect_final(wildcards):
    from perfsnake.stages import bisect as bisect_stage

    return bisect_stage.final_step(INDEX, step_file, wildcards.campaign)


def do_bisect_step(wildcards, input, output, log):
    from perfsnake.stages import bisect as bisect_stage

    bisect_stage.decide_step(
        INDEX, wildcards.campaign, int(wildcards.step), list(input), output[0], log[0]
    )


def do_bisect_report(wildcards, input, output, log):
    from perfsnake.stages import bisect as bisect_stage

    bisect_stage.write_report(INDEX, wildcards.campaign, input.final[0], output[0])
    Path(log[0]).write_text("bisect.md written\n")


def precision_round_input(wildcards):
    from perfsnake.stages import precision as precision_stage

    if INDEX.batches.batched(wildcards.campaign):
        return precision_stage.batch_markers(
            INDEX, decision_file, wildcards.campaign, int(wildcards.round)
        )
    return precision_stage.round_inputs(
        INDEX, decision_file, wildcards.campaign, int(wildcards.round)
    )


def mark_builds_ready(input, output, log):
    from perfsnake.stages import build as build_stage

    build_stage.mark_ready(list(input), output[0])
    Path(log[0]).write_text(f"{len(input)} builds ready\n")


def do_collect(wildcards, input, output, log):
    from perfsnake.stages import collect as collect_stage

    runs = input.runs
    if INDEX.batches.batched(wildcards.campaign):
        runs = run_files(wildcards.campaign)
    collect_stage.collect_campaign(
        INDEX, wildcards.campaign, runs, output[0], log[0], *input.decision
    )


def do_precision_round(wildcards, input, output, log):
    from perfsnake.stages import precision as precision_stage

    runs = list(input)
    if INDEX.batches.batched(wildcards.campaign):
        runs = precision_stage.round_inputs(
            INDEX, decision_file, wildcards.campaign, int(wildcards.round)
        )
    precision_stage.decide_round(
        INDEX, wildcards.campaign, int(wildcards.round), runs, output[0], log[0]
    )


def do_decisions(wildcards, input, output, log):
    from perfsnake.stages import precision as precision_stage

    precision_stage.write_decisions(
        INDEX, wildcards.campaign, input[0], output.csv, output.md, log[0], output.page
    )


def campaign_info(wildcards):
    return INDEX.reports.campaign_info(wildcards.campaign)


def do_campaign_info(params, output, log):
    Path(output[0]).write_text(json.dumps(json.loads(params.info), indent=1) + "\n")
    Path(log[0]).write_text(f"wrote {output[0]}\n")


def control_variants(wildcards):
    return json.dumps(INDEX.derived.control_variants(wildcards.campaign))


def plot_spec(wildcards):
    return flow(json.loads(INDEX.reports.plot_spec(wildcards.campaign, wildcards.plot)))


def figure_rows(wildcards):
    return INDEX.reports.figure_rows(wildcards.figure)


def figure_spec(wildcards):
    return flow(json.loads(INDEX.reports.figure_spec(wildcards.figure)))


def flame_tool(which):
    return profile_stage.flame_tool(INDEX, which)


def flame_options(wildcards):
    return profile_stage.flame_options(INDEX, wildcards.campaign)


def folded_inputs(wildcards):
    return profile_stage.folded_inputs(INDEX, wildcards.campaign, wildcards.flat)


# Snakemake inspects an input function's signature on every call; with one
# job per run that is a measurable share of planning 10,000 runs, so the
# (unchanging) signatures are computed once (snakemake_internals.cache_signature).
for _func in (
    run_inputs,
    run_params,
    batch_params,
    build_input,
    build_params,
    fetch_params,
    campaign_builds,
):
    snakemake_internals.cache_signature(_func)
