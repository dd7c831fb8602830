"""CI's own rules for the suite (tests/conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from helpers import ROOT


def test_a_skip_for_something_setup_installs_fails_in_ci(tmp_path):
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_skips.py").write_text(
        "import pytest\n"
        "def test_tool_missing():\n    pytest.skip('bpftrace is not installed')\n"
        "def test_machine_kind():\n    pytest.skip('this machine counts hardware events')\n"
    )
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(tmp_path)]
    strict = subprocess.run(
        argv, capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PERFSNAKE_NO_SKIP": "1"}
    )
    assert strict.returncode == 1, strict.stdout
    assert "1 failed, 1 skipped" in strict.stdout
    assert "skipped where CI expects" in strict.stdout and "bpftrace is not installed" in strict.stdout
    lenient = subprocess.run(
        argv, capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PERFSNAKE_NO_SKIP": ""}
    )
    assert lenient.returncode == 0 and "2 skipped" in lenient.stdout
