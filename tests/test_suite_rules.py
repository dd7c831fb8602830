"""The suite's own rules (tests/conftest.py), checked against the suite: the
root-only list names tests that exist, and the machine lock excludes."""

from __future__ import annotations

import ast
import fcntl
import os
import subprocess
import sys
from pathlib import Path

import conftest
from helpers import ROOT


def _functions(path: Path) -> set[str]:
    return {n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}


def test_every_root_only_entry_names_a_test_of_the_suite():
    missing = []
    for test_id in conftest.ROOT_ONLY:
        file, function = test_id.split("::")
        if not (ROOT / file).is_file() or function not in _functions(ROOT / file):
            missing.append(test_id)
    assert missing == [], f"tests/conftest.py ROOT_ONLY lists tests that do not exist: {missing}"


def test_every_test_that_writes_the_machines_settings_is_marked():
    """The files that change ASLR, THP, the sample rate or IRQ affinity for
    real carry the machine_settings mark on what writes them."""
    tune = (ROOT / "tests/test_tune.py").read_text()
    assert "pytestmark = pytest.mark.machine_settings" in tune
    drift = (ROOT / "tests/test_drift.py").read_text()
    head = drift.split("def test_a_run_measured_after_the_machine_state_changed_is_flagged_everywhere")[0]
    assert head.rstrip().splitlines()[-2].startswith("@pytest.mark.machine_settings")


def test_a_test_holds_the_machine_lock_shared_so_a_settings_test_waits(tmp_path):
    """This test holds it shared (the hook in tests/conftest.py): another
    process cannot take it alone, but can share it."""
    code = (
        "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDONLY)\n"
        "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); print('exclusive')\n"
        "except BlockingIOError:\n    print('blocked')\n"
        "fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB); print('shared')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, conftest.MACHINE_LOCK], capture_output=True, text=True)
    assert proc.stdout.split() == ["blocked", "shared"], proc.stderr
    # And nothing else in this process holds it exclusively (flock is per open file).
    fd = os.open(conftest.MACHINE_LOCK, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_a_test_waiting_to_hold_the_machine_alone_is_not_starved_by_new_shared_holders():
    """Once a machine_settings test waits (this test holds the lock shared),
    a new test's shared request waits behind it at the turnstile."""
    writer = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys\n"
         "t = os.open(sys.argv[1] + '.turnstile', os.O_RDONLY); fcntl.flock(t, fcntl.LOCK_EX)\n"
         "print('turnstile', flush=True)\n"
         "m = os.open(sys.argv[1], os.O_RDONLY); fcntl.flock(m, fcntl.LOCK_EX); print('alone', flush=True)\n",
         conftest.MACHINE_LOCK],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert writer.stdout.readline().strip() == "turnstile"  # it waits for this test's shared hold now
        fd = os.open(conftest.MACHINE_LOCK + ".turnstile", os.O_RDONLY)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                admitted = True
            except BlockingIOError:
                admitted = False
        finally:
            os.close(fd)
        assert not admitted, "a new shared holder got past a waiting exclusive one"
    finally:
        writer.kill()
        writer.wait()
