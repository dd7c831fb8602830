"""Where perfsnake relies on Snakemake's internals, all in one place.

Six things the workflow does go past Snakemake's documented interface, each
for speed, for a resume that keeps finished runs or for a checkout anywhere:
the garbage-collector pause while planning, dropping the local job-rate
limiter, cached input function signatures, forgetting the "incomplete"
marks of runs that finished, the local rules' Python scripts run in the
Snakemake process, and a script job's Python quoted.
Each function says which Snakemake version it was checked on;
tests/test_snakemake_internals.py fails when an upgrade breaks one of them,
so an upgrade starts there.

Nothing here imports Snakemake at import time: the workflow has it loaded
already, and the run stage (perfsnake.stages.run, the lean measurement path)
imports this module for nothing but the standard library.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the Snakemake release these functions were last checked against
CHECKED_ON = "9.27.1"


# ---- the garbage collector while planning ----------------------------------------------
def pause_garbage_collection() -> None:
    """Freeze what is alive and switch the cyclic collector off until onstart.

    Called at the end of workflow/Snakefile: everything parsed so far lives
    until the end, so the collector need not scan it again (seconds when
    planning 10,000 run jobs); nor the DAG Snakemake builds next (its jobs
    live until the end too: 1.2 s of a 10,000-run dry run went to
    collections that freed nothing). Relies on Snakemake calling the
    onstart hook (resume_garbage_collection) once the DAG and the scheduler
    are built and before the first job (Workflow.execute); it does not in a
    dry run or with --no-hooks, which then run without the collector.
    Checked on 9.27.1."""
    gc.freeze()
    gc.disable()


def resume_garbage_collection() -> None:
    """The collector back on (onstart, before the first job): the other half
    of pause_garbage_collection. Checked on 9.27.1."""
    gc.enable()


# ---- the job-rate limiter --------------------------------------------------------------
def drop_job_rate_limiter(workflow: Any) -> bool:
    """Remove the local scheduler's job-rate limit; True when one was removed.

    Snakemake's limit (--max-jobs-per-timespan, default 100/1s) makes every
    scheduling round start a timer that triggers another round a second
    later: with one run at a time, about ten rounds per run, each walking
    every waiting run job's inputs (JobScheduler.update_input_sizes), so a
    run costs 30-40 ms of scheduling with 2,000-3,000 runs waiting against
    ~10 ms with a few hundred. Runs are serialised anyway, so locally there
    is no rate limit (remote executors keep theirs). The option has no "off"
    value and the settings are read when the scheduler is built, so the
    onstart hook (after that, before the first round) sets
    `workflow.scheduler.job_rate_limiter` (a JobRateLimiter) to None, which
    JobScheduler.job_selector reads as "unlimited". Checked on 9.27.1."""
    scheduler = getattr(workflow, "scheduler", None)
    if not workflow.local_exec or scheduler is None or getattr(scheduler, "job_rate_limiter", None) is None:
        return False
    scheduler.job_rate_limiter = None
    return True


# ---- input function signatures ---------------------------------------------------------
#: the attribute snakemake.common.get_function_params reads before inspecting
#: a function (snakemake.common.FUNC_OVERWRITE_PARAMS_ATTR)
OVERWRITE_PARAMS_ATTR = "_overwrite_params"


def cache_signature(func: Callable[..., Any]) -> None:
    """Precompute the parameters Snakemake would inspect on every call of an
    input function (a measurable share of planning 10,000 run jobs).

    Snakemake (snakemake.common.get_function_params, used by
    get_input_function_aux_params whenever an input or params function is
    evaluated) takes a function's parameters from this attribute when it is
    set, instead of inspect.signature(func).parameters. Checked on 9.27.1."""
    import inspect

    setattr(func, OVERWRITE_PARAMS_ATTR, inspect.signature(func).parameters)


# ---- "incomplete" marks ----------------------------------------------------------------
@dataclass(frozen=True)
class IncompleteMark:
    """One of Snakemake's "incomplete" marks: `key` is the output path as
    Snakemake recorded it (relative to the working directory), `path` the
    mark's file."""

    key: str
    path: Path


def incomplete_marks(workdir: Path) -> Iterator[IncompleteMark]:
    """The "incomplete" marks of a working directory: one per output of a job
    that started and did not finish (Snakemake removes them when the job
    completes; `--rerun-incomplete` deletes those outputs and runs the job
    again).

    The file persistence backend (the default) keeps one file per mark
    under .snakemake/incomplete/, named by the URL-safe base64 of the output
    path split into parts of at most NAME_MAX - 1 characters, every part but
    the last prefixed with "@" (FilePersistence._record_path); a file that
    does not decode is skipped. With --persistence-backend db the marks are
    in the database, and none is found. Checked on 9.27.1."""
    import base64

    root = workdir / ".snakemake" / "incomplete"
    if not root.is_dir():
        return
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = Path(dirpath, name)
            try:
                key = base64.urlsafe_b64decode("".join(p.lstrip("@") for p in path.relative_to(root).parts)).decode()
            except ValueError:  # not base64, or not UTF-8 text: not a mark of ours
                continue
            yield IncompleteMark(key, path)


def forget_incomplete_mark(mark: IncompleteMark) -> None:
    """Remove one mark, as Snakemake does when the job completes
    (FilePersistence._unmark_incomplete); only before the DAG is built,
    since Snakemake caches the marks it has read. Checked on 9.27.1.
    A mark already gone is fine: another invocation in the same directory
    completed that job meanwhile (it removed its own mark)."""
    mark.path.unlink(missing_ok=True)


# ---- local Python scripts in this process ---------------------------------------------
#: a rule's run function's positional arguments, in the order Snakemake's
#: run_wrapper (snakemake.executors.local) passes them
RUN_ARGS = ("input", "output", "params", "wildcards", "threads", "resources", "log", "rule", "conda_env",
            "container_img", "singularity_args", "use_singularity", "env_modules", "bench_record", "jobid",
            "is_shell", "bench_iteration", "cleanup_scripts", "shadow_dir", "edit_notebook", "conda_base_path",
            "basedir", "sourcecache_path", "runtime_sourcecache_path", "runtime_paths")  # fmt: skip


def scripts_in_process(workflow: Any, run_script: Callable[[Path, Any], None]) -> None:
    """Make the local rules' Python `script:` jobs run in this process.

    A `script:` job starts a new Python, which unpickles the job and imports
    pandas (and scipy, altair, a database driver) again: 0.6-1.5 s a job,
    against 0.05-0.3 s of work for a campaign's aggregate, analysis, tables,
    pages and history. Only rules declared `localrule: True` (short, reading
    a whole campaign), not builds and fetches. Snakemake compiles `script:`
    into the rule's `run_func`, which the local executor's run_wrapper calls
    with RUN_ARGS in a thread of this process (a script job always, with or
    without `force-use-threads`); the wrapper here calls
    `run_script(path, snakemake_object)` instead, with the object Snakemake
    would have pickled for the script (snakemake.iocontainers.Snakemake).
    Snakemake's own path stays for what it must isolate: a job with a conda
    environment, a container or environment modules (`--sdm`), a benchmark
    record, or a shadow directory. Checked on 9.27.1."""
    from snakemake.exceptions import WorkflowError
    from snakemake.iocontainers import Snakemake

    for rule in workflow.rules:
        script = getattr(rule, "script", None)
        # Declared local rules only (workflow._localrules): builds and fetches stay processes of their own.
        if not script or not str(script).endswith(".py") or rule.name not in workflow._localrules or rule.shadow_depth:
            continue
        original = rule.run_func

        def run(*args: Any, _original: Callable[..., Any] = original, _script: str = str(script)) -> Any:
            job = dict(zip(RUN_ARGS, args, strict=False))
            if job["conda_env"] or job["container_img"] or job["env_modules"] or job["bench_record"] is not None \
                    or job["shadow_dir"]:  # fmt: skip
                return _original(*args)
            path = Path(job["basedir"].get_path_or_uri(secret_free=True)) / _script
            smk = Snakemake(job["input"], job["output"], job["params"], job["wildcards"], job["threads"],
                            job["resources"], job["log"], workflow.config, job["rule"], job["bench_iteration"],
                            str(path.parent))  # fmt: skip
            try:
                run_script(path, smk)
            except Exception as exc:  # as Snakemake reports a script that failed: one message, no traceback here
                raise WorkflowError(str(exc)) from None

        rule.run_func = run


# ---- a job's Python, quoted ----------------------------------------------------


def quote_job_python() -> None:
    """Quote the Python a job starts. Snakemake formats a `script:` job's
    command as `{py_exec} {fname:q}` with `py_exec` = sys.executable
    unquoted, so a virtual environment under a path with a space (a checkout
    in `~/My Projects/`) fails every build job with "No such file or
    directory". PythonScript._execute_cmd gets `py_exec` as a keyword;
    quoted there, the shell sees one word. The local executor's command for
    a `run:` job it spawns (without --force-use-threads: perfsnake used as a
    module, without our workflow profile) starts `sys.executable -m
    snakemake` unquoted too: LocalExecutor.get_python_executable, quoted.
    Checked on 9.27.1."""
    import shlex

    from snakemake.executors.local import Executor as LocalExecutor
    from snakemake.script import PythonScript

    spawner = LocalExecutor.get_python_executable
    if not getattr(spawner, "quotes_python", False):

        def quoted_python(self: Any) -> str:
            return shlex.quote(spawner(self))

        quoted_python.quotes_python = True  # type: ignore[attr-defined]
        LocalExecutor.get_python_executable = quoted_python

    original = PythonScript._execute_cmd
    if getattr(original, "quotes_python", False):
        return

    def execute(self: Any, cmd: str, **kwargs: Any) -> Any:
        if "py_exec" in kwargs:
            kwargs["py_exec"] = shlex.quote(str(kwargs["py_exec"]))
        return original(self, cmd, **kwargs)

    execute.quotes_python = True  # type: ignore[attr-defined]
    PythonScript._execute_cmd = execute


def cluster_python_problem(executor: str, python: str) -> str | None:
    """Why a cluster executor cannot start this workflow's jobs (None: it
    can). Slurm's executor (2.8.0) and its job step (0.6.1) put the Python's
    path unquoted into the job script and srun's command: one under a path
    with a space fails every job on the node. Checked on 9.27.1."""
    if executor.startswith("slurm") and any(c.isspace() for c in python):
        return (
            f"the Slurm executor cannot start jobs from a Python whose path has a space ({python}): "
            "put the checkout and its .venv under a path without one"
        )
    return None
