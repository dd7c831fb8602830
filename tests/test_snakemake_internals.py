"""perfsnake.snakemake_internals against the installed Snakemake: one test per
internal, each failing when an upgrade changes what it relies on."""

import gc
import inspect
import json
import subprocess
from pathlib import Path

import pytest
import snakemake.api  # first: snakemake.workflow cannot be imported on its own
import snakemake.common
from helpers import ROOT, SNAKEMAKE
from snakemake.persistence.file import FilePersistence
from snakemake.scheduling.job_scheduler import JobScheduler
from snakemake.workflow import Workflow

from perfsnake import snakemake_internals as internals

# A workflow of three local jobs that records, through the module's own
# functions, what the hooks saw: the collector paused while planning and back
# on in onstart, a rate limiter to drop, and jobs that then still run.
PROBE = """
import gc, json, sys
sys.path.insert(0, {root!r})
from perfsnake import snakemake_internals

seen = {{}}

rule all:
    input: expand("out/{{i}}.txt", i=range(3))

rule one:
    output: "out/{{i}}.txt"
    run:
        seen.setdefault("gc_in_jobs", []).append(gc.isenabled())
        with open(output[0], "w") as f:
            f.write("ok")

onstart:
    seen["gc_at_onstart"] = gc.isenabled()
    seen["scheduler_built"] = getattr(workflow, "scheduler", None) is not None
    snakemake_internals.resume_garbage_collection()
    seen["dropped"] = snakemake_internals.drop_job_rate_limiter(workflow)
    seen["limiter_after"] = repr(workflow.scheduler.job_rate_limiter)

onsuccess:
    with open("seen.json", "w") as f:
        json.dump(seen, f)

snakemake_internals.pause_garbage_collection()
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    """What the hooks saw in one real local Snakemake invocation, with the
    profile's threads (profiles/default: `run:` jobs in the main process)."""
    workdir = tmp_path_factory.mktemp("probe")
    (workdir / "Snakefile").write_text(PROBE.format(root=str(ROOT)))
    proc = subprocess.run([SNAKEMAKE, "--cores", "1", "--force-use-threads", "--quiet", "all"], cwd=workdir, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads((workdir / "seen.json").read_text())


def test_every_function_names_the_snakemake_version_it_was_checked_on():
    import importlib.metadata

    functions = [f for f in vars(internals).values() if inspect.isfunction(f) and f.__module__ == internals.__name__]
    assert len(functions) >= 6
    for function in functions:
        assert f"Checked on {internals.CHECKED_ON}." in (function.__doc__ or ""), function.__name__
    # An upgrade is checked by this file; then CHECKED_ON and the docstrings move with it.
    assert importlib.metadata.version("snakemake").split(".")[0] == internals.CHECKED_ON.split(".")[0]


def test_onstart_comes_after_planning_and_before_the_first_job(probe):
    """The collector is still paused when onstart runs (the DAG is built by
    then: the scheduler exists) and back on in every job."""
    assert probe["gc_at_onstart"] is False and probe["scheduler_built"] is True
    assert probe["gc_in_jobs"] == [True, True, True]
    assert gc.isenabled()  # this process's collector was never touched


def test_the_job_rate_limiter_is_dropped_and_jobs_still_run(probe):
    """onstart finds the default limiter (100 jobs/s) where the module looks
    for it; with None the scheduler runs every job (it asserts its job-count
    resource is then unlimited)."""
    assert probe["dropped"] is True and probe["limiter_after"] == "None"
    assert probe["gc_in_jobs"] == [True, True, True]
    source = inspect.getsource(JobScheduler)
    assert "self.job_rate_limiter = (" in source and "if self.job_rate_limiter is None:" in source
    assert isinstance(inspect.getattr_static(Workflow, "local_exec"), property)


def test_a_remote_or_unscheduled_workflow_keeps_its_limiter():
    class Scheduler:
        job_rate_limiter = object()

    class Flow:
        local_exec = False
        scheduler = Scheduler()

    flow = Flow()
    assert internals.drop_job_rate_limiter(flow) is False and flow.scheduler.job_rate_limiter is not None
    flow.local_exec = True
    flow.scheduler = None  # not built yet
    assert internals.drop_job_rate_limiter(flow) is False


def test_a_cached_signature_is_what_snakemake_reads(monkeypatch):
    """Snakemake reads the attribute the module sets, and no longer inspects
    the function (inspect.signature would fail here)."""

    def run_inputs(wildcards, attempt):
        return []

    assert snakemake.common.FUNC_OVERWRITE_PARAMS_ATTR == internals.OVERWRITE_PARAMS_ATTR
    internals.cache_signature(run_inputs)
    monkeypatch.setattr(inspect, "signature", lambda *_: pytest.fail("the signature was inspected again"))
    assert list(snakemake.common.get_function_params(run_inputs)) == ["wildcards", "attempt"]
    aux = snakemake.common.get_input_function_aux_params(run_inputs, {"wildcards": 1, "attempt": 2, "threads": 3})
    assert aux == {"wildcards": 1, "attempt": 2}
    # ... and input and params functions are called through it.
    assert "get_input_function_aux_params(" in inspect.getsource(snakemake.rules)


@pytest.mark.parametrize("key", [
    "results/c/runs/x-1/run-1/status.json",
    # longer than a file name may be: Snakemake splits the mark into "@" parts
    "results/" + "long-campaign-name/" * 20 + "runs/x-1/run-1/status.json",
])  # fmt: skip
def test_incomplete_marks_round_trip_with_snakemake(tmp_path, monkeypatch, key):
    """A mark written by Snakemake's own persistence is found with its key,
    and once forgotten, Snakemake no longer sees it; another mark stays."""
    monkeypatch.chdir(tmp_path)  # where Snakemake keeps .snakemake by default
    other = "results/c/c.csv"
    persistence = FilePersistence()
    persistence._mark_incomplete(key, None)
    persistence._mark_incomplete(other, None)
    marks = {m.key: m for m in internals.incomplete_marks(tmp_path)}
    assert set(marks) == {key, other}
    assert marks[key].path == Path(persistence._record_path(persistence._incomplete_path, key))
    parts = marks[key].path.relative_to(tmp_path / ".snakemake" / "incomplete").parts
    assert (len(parts) > 1) == (len(key) > 200) and all(p.startswith("@") for p in parts[:-1])
    internals.forget_incomplete_mark(marks[key])
    assert FilePersistence()._filter_incomplete_keys([key, other]) == {other}
    assert [m.key for m in internals.incomplete_marks(tmp_path)] == [other]


def test_a_mark_another_invocation_removed_first_is_forgotten_quietly(tmp_path, monkeypatch):
    """Two invocations in one directory: the other one completed the job and
    removed its mark between our listing and our forgetting it (seen in a
    loaded suite as FileNotFoundError at start-up)."""
    monkeypatch.chdir(tmp_path)
    key = "results/a/runs/x-1/run-1/status.json"
    FilePersistence()._mark_incomplete(key, None)
    (mark,) = internals.incomplete_marks(tmp_path)
    FilePersistence()._unmark_incomplete(key)  # the other invocation's completion
    internals.forget_incomplete_mark(mark)
    assert list(internals.incomplete_marks(tmp_path)) == []


def test_no_marks_and_files_that_are_no_marks(tmp_path):
    """No .snakemake: no marks. A file whose name is not base64 (Snakemake's
    migration_underway) or not of UTF-8 text is skipped."""
    assert list(internals.incomplete_marks(tmp_path)) == []
    root = tmp_path / ".snakemake" / "incomplete"
    root.mkdir(parents=True)
    (root / "migration_underway").write_text("")
    (root / "gA==").write_text("")  # base64 of the byte 0x80
    assert list(internals.incomplete_marks(tmp_path)) == []


def test_slurm_from_a_python_under_a_path_with_a_space_is_refused_in_one_line():
    problem = internals.cluster_python_problem("slurm", "/home/a b/perfsnake/.venv/bin/python")
    assert problem and "(/home/a b/perfsnake/.venv/bin/python)" in problem and "\n" not in problem
    assert internals.cluster_python_problem("slurm", "/home/ab/.venv/bin/python") is None
    assert internals.cluster_python_problem("local", "/home/a b/.venv/bin/python") is None
