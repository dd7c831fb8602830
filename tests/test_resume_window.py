"""No finished run is ever redone: the workflow's process group is SIGKILLed
at each point of a run's end, then resumed as the README says (`snakemake
--unlock all`, then `snakemake --cores 1 all --rerun-incomplete`), and the
run that had finished must keep its status.json (content and mtime) and not
run again.

The points, in the order they happen for run x-1 (the first of two):
- its benchmark ended, its launcher (psrun) has not written status.json yet
  when the workflow dies. The launcher outlives the kill on purpose and
  writes it afterwards; if the resume decided before that, the run was
  measured again. Held deterministically with the cgroup v2 freezer.
- status.json written, the job still in its body (post-run hooks): the
  existing test_promises.py::test_resume_keeps_a_run_that_finished_before_the_interruption.
- Snakemake's completion of the job, inside Snakemake: before it touches the
  output, after, before its metadata record, with the record's file created
  but empty (killed while writing it), after the record, after the
  "incomplete" mark is gone. Reached by a sitecustomize module (this test's,
  on PYTHONPATH) that wraps those steps of Snakemake 9 and kills the
  process group when they reach x-1's output.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import ROOT, SNAKEMAKE, cgroup2_mount, cgroup_of, jobs_run, snakemake, statuses, write_campaign

pytestmark = pytest.mark.e2e

KEY = "results/p/runs/x-1/run-1/status.json"
KEPT = f"[perfsnake] resume: 1 run(s) that finished before the interruption kept: {KEY}"


def argv(camp: Path, *args: str) -> list[str]:
    return [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
            "--configfile", str(ROOT / "config/config.yaml"), "--quiet", "host", "--cores", "1", "all", *args,
            "--config", f"campaign={camp}"]  # fmt: skip


def campaign(tmp_path: Path, command: str = "echo value={x}") -> Path:
    return write_campaign(
        tmp_path,
        {
            "name": "p",
            "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\S+)"}},
            "variables": {"x": [1, 2]},
            "nb_runs": 1,
        },
    )


def wait_for(condition: Callable[[], object], what: str, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def fingerprint(path: Path) -> tuple[int, bytes]:
    return path.stat().st_mtime_ns, path.read_bytes()


def resume_and_check(tmp_path: Path, camp: Path, before: tuple[int, bytes], kept: bool) -> None:
    """The documented resume: x-1 untouched, only x-2 runs."""
    unlock = snakemake(tmp_path, camp, "--unlock", "all")
    resume = snakemake(tmp_path, camp, "--cores", "1", "all", "--rerun-incomplete")
    said = [ln for p in (unlock, resume) for ln in p.stderr.splitlines() if "finished before the interruption" in ln]
    assert said == ([KEPT] if kept else []), unlock.stderr[-3000:] + resume.stderr[-3000:]
    assert jobs_run(resume, "run") == 1, resume.stderr[-5000:]
    assert fingerprint(tmp_path / KEY) == before
    assert {k: v["status"] for k, v in statuses(tmp_path, "p").items()} == {"x-1/run-1": "ok", "x-2/run-1": "ok"}


# ---- inside Snakemake's completion of the job ---------------------------------------------
#: Test-only: PERFSNAKE_TEST_KILL_AT names the step of Snakemake's completion
#: of the job whose output is PERFSNAKE_TEST_KILL_KEY at which the process
#: group is SIGKILLed (checked on Snakemake 9.27.1, like
#: perfsnake/snakemake_internals.py).
SITECUSTOMIZE = """
import os
import signal
import sys

AT = os.environ.get("PERFSNAKE_TEST_KILL_AT")
KEY = os.environ.get("PERFSNAKE_TEST_KILL_KEY")


def kill(step):
    with open(os.environ["PERFSNAKE_TEST_KILL_LOG"], "a") as log:
        log.write(step + "\\n")
    os.killpg(0, signal.SIGKILL)


def patch():
    import snakemake.api  # noqa: F401  (the import order Snakemake uses: dag before persistence)
    import snakemake.dag as dag
    import snakemake.jobs as jobs
    import snakemake.persistence.file as file

    remove = jobs.Job.remove_existing_output

    async def remove_existing_output(self):
        await remove(self)
        if AT == "output removed" and bool(self.output) and str(self.output[0]) == KEY:
            kill(AT)  # a run measured again, interrupted before its job began

    jobs.Job.remove_existing_output = remove_existing_output

    touch = dag.DAG.check_and_touch_output

    async def check_and_touch_output(self, job, *args, **kwargs):
        ours = bool(job.output) and str(job.output[0]) == KEY
        if ours and AT == "before the touch":
            kill(AT)
        if ours and AT == "output deleted":  # what Snakemake does to a job it counts as failed
            os.unlink(KEY)
            kill(AT)
        result = await touch(self, job, *args, **kwargs)
        if ours and AT == "after the touch":
            kill(AT)
        return result

    dag.DAG.check_and_touch_output = check_and_touch_output
    write = file.FilePersistence._write_record

    def write_record(self, key, record):
        if key == KEY and AT == "before the metadata":
            kill(AT)
        if key == KEY and AT == "in the metadata":
            path = self._record_path(self._metadata_path, key)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").close()  # opened for writing, nothing written yet
            kill(AT)
        write(self, key, record)
        if key == KEY and AT == "after the metadata":
            kill(AT)

    file.FilePersistence._write_record = write_record
    unmark = file.FilePersistence._unmark_incomplete

    def unmark_incomplete(self, key):
        unmark(self, key)
        if key == KEY and AT == "after the mark is gone":
            kill(AT)

    file.FilePersistence._unmark_incomplete = unmark_incomplete


if AT and KEY and os.path.basename(sys.argv[0]) == "snakemake":
    patch()
"""

STEPS = ["before the touch", "after the touch", "before the metadata", "in the metadata", "after the metadata",
         "after the mark is gone"]  # fmt: skip


def killed_at(tmp_path: Path, camp: Path, step: str, *args: str) -> None:
    """The workflow run with the test's sitecustomize, SIGKILLed at `step` of x-1's job."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(textwrap.dedent(SITECUSTOMIZE))
    log = tmp_path / "killed-at"
    env = {**os.environ, "PYTHONPATH": str(site), "PERFSNAKE_TEST_KILL_AT": step, "PERFSNAKE_TEST_KILL_KEY": KEY,
           "PERFSNAKE_TEST_KILL_LOG": str(log)}  # fmt: skip
    killed = subprocess.run(argv(camp, *args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
                            start_new_session=True)  # fmt: skip
    assert killed.returncode == -signal.SIGKILL and log.read_text() == f"{step}\n", killed.stderr[-3000:]


@pytest.mark.parametrize("step", STEPS)
def test_a_kill_inside_snakemakes_completion_of_the_run_redoes_nothing(tmp_path, step):
    camp = campaign(tmp_path)
    killed_at(tmp_path, camp, step)
    # What the kill left: x-1 measured, x-2 not started; its mark still there until Snakemake's last step.
    assert list(statuses(tmp_path, "p")) == ["x-1/run-1"]
    marked = any(p.is_file() for p in (tmp_path / ".snakemake/incomplete").rglob("*"))
    assert marked == (step != "after the mark is gone")
    resume_and_check(tmp_path, camp, fingerprint(tmp_path / KEY), kept=marked)


def test_a_run_whose_output_snakemake_deleted_after_it_ended_is_restored(tmp_path):
    """A cluster job cancelled after its run ended (Ctrl-C before Snakemake
    saw it finish) is a failed job to Snakemake, which deletes its output:
    the launcher's second name for the record brings it back on resume."""
    camp = campaign(tmp_path)
    killed_at(tmp_path, camp, "output deleted")
    copy = (tmp_path / KEY).with_name(".status.final")
    assert not (tmp_path / KEY).exists() and copy.exists()
    resume_and_check(tmp_path, camp, fingerprint(copy), kept=True)


def test_a_run_measured_again_and_interrupted_before_its_job_began_keeps_its_record(tmp_path):
    """`--forcerun run` (every night measures again): Snakemake deletes x-1's
    status.json, then the workflow dies before x-1's job begins. Nothing
    measured x-1 again, so its earlier record is still its latest finished
    measurement: the resume restores it (as it keeps the runs the forced
    invocation had not reached) and measures nothing again, neither x-1 nor
    x-2 (which a resume that now chose to batch the campaign would have)."""
    camp = campaign(tmp_path)
    snakemake(tmp_path, camp, "--cores", "1", "all")
    copy = (tmp_path / KEY).with_name(".status.final")
    other = tmp_path / KEY.replace("x-1", "x-2")
    before, before_other = fingerprint(copy), fingerprint(other)
    killed_at(tmp_path, camp, "output removed", "--forcerun", "run")
    assert not (tmp_path / KEY).exists() and fingerprint(copy) == before
    unlock = snakemake(tmp_path, camp, "--unlock", "all")
    resume = snakemake(tmp_path, camp, "--cores", "1", "all", "--rerun-incomplete")
    said = unlock.stderr + resume.stderr
    restored = f"finished before the interruption restored (Snakemake had deleted their status.json): {KEY}"
    assert restored in said, said[-3000:]
    assert jobs_run(resume, "run") + jobs_run(resume, "run_batch") == 0, resume.stderr[-5000:]
    assert fingerprint(tmp_path / KEY)[1] == before[1] and fingerprint(other) == before_other
    assert not (tmp_path / "results/p/batch-size.json").exists()


# ---- the launcher, still finishing when the resume starts -------------------------------


@contextmanager
def frozen(pid: int) -> Iterator[Callable[[], None]]:
    """`pid` held still by the cgroup v2 freezer (not SIGSTOP: the kernel
    continues the stopped members of a process group orphaned by the kill);
    yields the thaw, which the block may call early."""
    mount = cgroup2_mount()
    assert mount is not None
    home = Path(mount + cgroup_of(pid))
    hold = Path(mount) / f"perfsnake-test-resume-{pid}"
    hold.mkdir()
    thawed = False

    def thaw() -> None:
        nonlocal thawed
        if thawed:
            return
        thawed = True
        (hold / "cgroup.freeze").write_text("0")
        try:
            (home / "cgroup.procs").write_text(str(pid))
        except ProcessLookupError:
            pass  # it ended meanwhile

    try:
        (hold / "cgroup.procs").write_text(str(pid))
        (hold / "cgroup.freeze").write_text("1")
        wait_for(lambda: "frozen 1" in (hold / "cgroup.events").read_text().splitlines(), "the freeze", 60)
        yield thaw
    finally:
        thaw()
        deadline = time.monotonic() + 60
        while True:  # an exiting process keeps its cgroup busy a moment
            try:
                hold.rmdir()
                break
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


def state_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


@dataclass
class Held:
    """A workflow killed while x-1's launcher, held still, had not yet
    recorded the run whose benchmark had ended."""

    camp: Path
    run_dir: Path
    launcher: int
    bench: int
    thaw: Callable[[], None]


@contextmanager
def killed_with_the_launcher_held(tmp_path: Path, batch: int | None = None) -> Iterator[Held]:
    go = tmp_path / "go"
    # x-1's benchmark prints its value and ends once the test says so.
    camp = campaign(
        tmp_path,
        f"echo $$ > bench.pid; echo value={{x}}; if [ {{x}} = 1 ]; then while [ ! -e {go} ]; do sleep 0.05; done; fi",
    )
    if batch:
        camp.write_text(camp.read_text() + f"batch: {batch}\n")
    proc = subprocess.Popen(argv(camp), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    run_dir = tmp_path / KEY.rsplit("/", 1)[0]
    try:
        wait_for(lambda: (run_dir / "bench.pid").exists() and (run_dir / ".psrun.state").exists(), "x-1 to start")
        state = dict(line.split(" ", 1) for line in (run_dir / ".psrun.state").read_text().splitlines())
        launcher, bench = int(state["pid"]), int((run_dir / "bench.pid").read_text())
        with frozen(launcher) as thaw:
            # The benchmark ends (a zombie: its launcher, held, cannot reap it), then the workflow is killed.
            go.touch()
            wait_for(lambda: state_of(bench) in ("Z", "gone"), "the benchmark to end")
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            assert not (tmp_path / KEY).exists()  # not recorded yet: its launcher is still finishing
            yield Held(camp, run_dir, launcher, bench, thaw)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        go.touch()  # nothing of this test outlives it


def waits_for_the_held_launcher(cmd: list[str], cwd: Path, err: Path, waiting_for: str, held: Held) -> None:
    """A resume's step, run in the background: it says it waits for the held
    launcher and records nothing, the launcher is let go, the step ends well."""
    with err.open("w") as sink:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "waiting for the launcher of" in err.read_text(), waiting_for)
        assert proc.poll() is None and not (cwd / KEY).exists()
        held.thaw()  # the launcher writes status.json only now
        assert proc.wait(timeout=300) == 0, err.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


NEEDS_FREEZER = pytest.mark.skipif(
    not os.access(cgroup2_mount() or "/nonexistent", os.W_OK),
    reason="holds the run's launcher with the cgroup v2 freezer: needs a writable cgroup v2",
)


@NEEDS_FREEZER
def test_a_launcher_that_records_its_run_after_the_kill_is_waited_for(tmp_path):
    with killed_with_the_launcher_held(tmp_path) as held:
        # The resume begins (its first step, --unlock, decides which runs finished) ...
        err = tmp_path / "unlock.err"
        waits_for_the_held_launcher([*argv(held.camp, "--unlock")], tmp_path, err, "the resume to wait", held)
    said = err.read_text()
    assert f"[perfsnake] resume: waiting for the launcher of {held.run_dir} (pid {held.launcher})" in said, said
    assert KEPT in said, said
    recorded = json.loads((tmp_path / KEY).read_text())
    assert recorded["status"] == "ok" and (held.run_dir / "stdout.txt").read_text().startswith("value=1")
    before = fingerprint(tmp_path / KEY)
    resume = snakemake(tmp_path, held.camp, "--cores", "1", "all", "--rerun-incomplete")
    assert jobs_run(resume, "run") == 1, resume.stderr[-5000:]
    assert fingerprint(tmp_path / KEY) == before
    assert {k: v["status"] for k, v in statuses(tmp_path, "p").items()} == {"x-1/run-1": "ok", "x-2/run-1": "ok"}


@NEEDS_FREEZER
def test_a_batchs_serving_launcher_that_records_its_run_after_the_kill_is_waited_for(tmp_path):
    # The same window for a batch (one `psrun --serve` for both runs): the
    # resume's batch job waits for the launcher and keeps the run.
    with killed_with_the_launcher_held(tmp_path, batch=2) as held:
        assert b"--serve" in Path(f"/proc/{held.launcher}/cmdline").read_bytes()
        assert snakemake(tmp_path, held.camp, "--unlock", "all").returncode == 0
        err = tmp_path / "resume.err"
        waits_for_the_held_launcher([*argv(held.camp, "--rerun-incomplete")], tmp_path, err, "the batch to wait", held)
    said = err.read_text()
    assert f"[perfsnake] resume: waiting for the launcher of {held.run_dir} (pid {held.launcher})" in said, said
    # x-1 ran once (its benchmark's pid is the first attempt's), x-2 once.
    assert int((held.run_dir / "bench.pid").read_text()) == held.bench
    assert json.loads((tmp_path / KEY).read_text())["status"] == "ok"
    assert {k: v["status"] for k, v in statuses(tmp_path, "p").items()} == {"x-1/run-1": "ok", "x-2/run-1": "ok"}
