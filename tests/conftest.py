import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# The host's benchmark lock (perfsnake.hostlock) of this test session: tests
# do not wait for a campaign (or another test session) running on the machine.
# One per xdist worker: a test of one worker does not wait minutes for another
# worker's long campaign (a 120 s deadline did, in CI); tests measure behaviour,
# not speed, so their runs may overlap.
import os  # noqa: E402
import tempfile  # noqa: E402

if "PERFSNAKE_HOST_LOCK" not in os.environ or "PERFSNAKE_TEST_LOCK_DIR" in os.environ:
    _locks = os.environ.setdefault("PERFSNAKE_TEST_LOCK_DIR", tempfile.mkdtemp(prefix="perfsnake-test-lock-"))
    _worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    os.environ["PERFSNAKE_HOST_LOCK"] = os.path.join(_locks, f"bench-{_worker}.lock")
import pytest  # noqa: E402

# The results store of this test session: never the user's own history.
os.environ.setdefault(
    "PERFSNAKE_HISTORY",
    "sqlite:///" + os.path.join(tempfile.mkdtemp(prefix="perfsnake-test-history-"), "history.sqlite"),
)


@pytest.fixture(autouse=True)
def _own_results_store(tmp_path_factory, monkeypatch):
    """A results store per test: what one test measured must not size
    another's batches (`batch: auto` reads measured run times from it)."""
    store = tmp_path_factory.mktemp("history") / "history.sqlite"
    monkeypatch.setenv("PERFSNAKE_HISTORY", f"sqlite:///{store}")


# CI's rule (PERFSNAKE_NO_SKIP=1, set by .ci/run): a test may skip only for
# what this kind of machine legitimately lacks or has; a skip because a tool or
# capability that `make setup` installs is missing would pass CI silently, so
# it fails instead. Each allowed reason names a property of the machine, not
# of its setup.
ALLOWED_SKIPS = (
    "this machine counts hardware events",  # a machine with a PMU: the no-PMU path cannot run
    "needs a hardware PMU",  # a machine without one (these VMs)
)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or os.environ.get("PERFSNAKE_NO_SKIP") != "1" or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if any(allowed in reason for allowed in ALLOWED_SKIPS):
        return
    if os.geteuid() != 0 and "root" in reason:
        return  # the suite run by a normal user: the root-only tests cannot run
    report.outcome = "failed"
    report.longrepr = f"skipped where CI expects everything setup installs (PERFSNAKE_NO_SKIP=1): {reason}"


# The long lane (`make long`, CI's second step): files whose every test builds
# or runs real programs for minutes (lmbench's 35 programs, the stores, kills
# and cgroups, the platforms' servers). `make test` leaves them out so that it
# stays under 15 minutes on two workers; CI runs both.
LONG_FILES = frozenset({
    "test_lmbench.py", "test_workloads.py", "test_containment.py", "test_author_loop.py", "test_locks.py",
    "test_sched.py", "test_versions.py", "test_platforms.py", "test_batch.py", "test_slurm_fleet.py",
})  # fmt: skip


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in LONG_FILES:
            item.add_marker(pytest.mark.long)
