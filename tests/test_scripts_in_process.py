"""The local rules' Python scripts run in the Snakemake process
(perfsnake.snakemake_internals.scripts_in_process, script_helpers.run_in_process):
in a real Snakemake with a probe workflow, and in the real workflow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import ROOT, SNAKEMAKE, snakemake, write_campaign

# Four local scripts (one writes stderr, one fails, one exits 0, one exits 3),
# one script of a rule that is not local, and the Snakemake process's pid.
PROBE = """
import os, sys
sys.path.insert(0, {root!r})
from perfsnake import snakemake_internals
from perfsnake.script_helpers import run_in_process

# As workflow/Snakefile does: a Python under a path with a space (a clone in
# "a clone/") starts the scripts that do not run in this process.
snakemake_internals.quote_job_python()

localrules: talks, fails, exits_0, exits_3

rule all:
    input: "talks.txt", "exits_0.txt", "remote.txt", "pid.txt"

rule pid:
    output: "pid.txt"
    localrule: True
    run:
        open(output[0], "w").write(str(os.getpid()))

rule talks:
    output: "talks.txt"
    log: "logs/talks.log"
    script: "scripts/talks.py"

rule fails:
    output: "fails.txt"
    log: "logs/fails.log"
    script: "scripts/fails.py"

rule exits_0:
    output: "exits_0.txt"
    script: "scripts/exits_0.py"

rule exits_3:
    output: "exits_3.txt"
    script: "scripts/exits_3.py"

rule remote:
    output: "remote.txt"
    log: "logs/remote.log"
    script: "scripts/talks.py"

if config.get("in_process", True):
    snakemake_internals.scripts_in_process(workflow, run_in_process)
"""

SCRIPTS = {
    "talks.py": """
        import os, sys
        from perfsnake.script_helpers import logged
        def main():
            print("to the log", file=sys.stderr)
            open(snakemake.output[0], "w").write(str(os.getpid()) + " " + snakemake.rule)
        if snakemake.log:
            logged(snakemake.log[0], main)
        else:
            main()
    """,
    "fails.py": """
        from perfsnake.script_helpers import logged
        def main():
            raise ValueError("a bad value in the input")
        logged(snakemake.log[0], main)
    """,
    "exits_0.py": """
        import sys
        open(snakemake.output[0], "w").write("done")
        sys.exit(0)
    """,
    "exits_3.py": """
        import sys
        sys.exit(3)
    """,
}


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("probe")
    (workdir / "Snakefile").write_text(PROBE.format(root=str(ROOT)))
    (workdir / "scripts").mkdir()
    for name, text in SCRIPTS.items():
        (workdir / "scripts" / name).write_text(textwrap.dedent(text))
    return workdir


def run_probe(workdir: Path, *targets: str, in_process: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [SNAKEMAKE, "--cores", "1", "--force-use-threads", "--keep-going", "--config", f"in_process={in_process}",
         "--forceall", *targets],
        cwd=workdir, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def test_local_scripts_run_in_the_snakemake_process_with_their_stderr_in_their_log(probe):
    proc = run_probe(probe, "all")
    assert proc.returncode == 0, proc.stderr[-3000:]
    snakemake_pid = (probe / "pid.txt").read_text()
    pid, rule = (probe / "talks.txt").read_text().split()
    assert pid == snakemake_pid and rule == "talks"
    # A rule not declared local keeps a Python of its own.
    assert (probe / "remote.txt").read_text().split()[0] != snakemake_pid
    assert (probe / "logs/talks.log").read_text() == (probe / "logs/remote.log").read_text() == "to the log\n"
    assert "to the log" not in proc.stderr
    # Without it, every script has its own process again.
    proc = run_probe(probe, "all", in_process=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (probe / "talks.txt").read_text().split()[0] != (probe / "pid.txt").read_text()
    assert (probe / "logs/talks.log").read_text() == "to the log\n"


def test_a_failing_script_fails_its_job_in_one_message_and_the_workflow_goes_on(probe):
    proc = run_probe(probe, "fails.txt", "exits_3.txt", "exits_0.txt", "talks.txt")
    assert proc.returncode != 0
    # The others ran (keep-going), the failure is Snakemake's usual error block with our one line.
    assert (probe / "exits_0.txt").read_text() == "done" and (probe / "talks.txt").exists()
    assert "fails.py failed: ValueError: a bad value in the input (traceback in logs/fails.log)" in proc.stderr
    assert "exits_3.py exited: 3" in proc.stderr
    assert "Error in rule fails" in proc.stderr and "Error in rule exits_3" in proc.stderr
    log = (probe / "logs/fails.log").read_text()
    assert "Traceback" in log and "ValueError: a bad value in the input" in log
    assert not (probe / "fails.txt").exists() and not (probe / "exits_3.txt").exists()


def test_another_threads_stderr_is_not_a_scripts_log(tmp_path):
    """While one thread's script writes its log, another thread's stderr (a
    run job's progress line) still reaches the terminal, in a fresh process."""
    code = textwrap.dedent(f"""
        import sys, threading
        sys.path.insert(0, {str(ROOT)!r})
        from perfsnake.script_helpers import logged
        inside, written = threading.Event(), threading.Event()
        def main():
            inside.set()
            print("script line", file=sys.stderr)
            written.wait(10)
        def other():
            inside.wait(10)
            print("progress line", file=sys.stderr)
            written.set()
        t = threading.Thread(target=other)
        t.start()
        logged({str(tmp_path / "job.log")!r}, main)
        t.join()
        print("after", file=sys.stderr)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stderr == "progress line\nafter\n"
    assert (tmp_path / "job.log").read_text() == "script line\n"


def test_the_workflows_local_scripts_start_no_python(tmp_path):
    """The real workflow: no script file for a new Python is written
    (Snakemake writes one per script job to .snakemake/scripts), the same
    results with every script in its own Python."""
    camp = write_campaign(tmp_path, {"name": "c", "benchmark": {"type": "command", "command": "echo value={x}",
                                     "metrics": {"value": r"value=(\S+)"}}, "variables": {"x": [1, 2]}, "nb_runs": 2})  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all", "--skip-script-cleanup")
    scripts = tmp_path / ".snakemake" / "scripts"
    assert not list(scripts.glob("*.py")) if scripts.exists() else True
    first = json.loads((tmp_path / "results/c/c.json").read_text())
    assert (tmp_path / "results/c/summary.md").exists() and (tmp_path / "results/c/history.json").exists()
    # --config takes every following word, and a second --config replaces the first: one, last.
    snakemake(tmp_path, None, "--cores", "1", "all", "--skip-script-cleanup", "--forcerun", "aggregate",
              "--config", f"campaign={camp}", "scripts_in_process=false")  # fmt: skip
    names = sorted(p.name.split(".", 1)[1] for p in scripts.glob("*.py"))
    assert {"aggregate.py", "history.py", "report_pages.py"} <= set(names), names  # what the new c.json re-made
    again = json.loads((tmp_path / "results/c/c.json").read_text())
    # The same rows and metadata fields (the metadata's values include when and under which load).
    assert again.keys() == first.keys() and again["metadata"].keys() == first["metadata"].keys()
    assert {k: v for k, v in again.items() if k != "metadata"} == {k: v for k, v in first.items() if k != "metadata"}
