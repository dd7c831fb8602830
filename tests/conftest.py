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
# The test session's controller (its workers inherit it): names the session's test users (tests/users.py).
os.environ.setdefault("PERFSNAKE_TEST_SESSION_PID", str(os.getpid()))
import contextlib  # noqa: E402
import fcntl  # noqa: E402
import shutil  # noqa: E402

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
    # a checkout under a path with a space (scripts/suite_under_load.py --clone), the workflow's refusal checked first
    "the Slurm executor cannot start jobs from a Python whose path has a space",
)


#: The suite run by a normal user: the tests that cannot run without root,
#: by test id (parameters aside), with why. Any other skip of a normal
#: user's suite fails under PERFSNAKE_NO_SKIP=1, as root's does.
ROOT_ONLY = {
    "tests/test_nonroot.py::" + t: "creates users (useradd) and runs the workflow as them"
    for t in (
        "test_capability_questions_answer_for_a_normal_user",
        "test_a_normal_users_campaign_gives_what_roots_gives",
        "test_a_normal_users_failing_run_and_rerun_failed",
        "test_a_normal_users_campaign_killed_and_resumed",
        "test_a_root_only_instrument_is_refused_in_one_line",
        "test_two_users_benchmarks_never_overlap",
        "test_the_default_campaigns_as_a_normal_user_match_roots",
    )
} | {
    "tests/test_fleet.py::test_a_normal_users_fleet": "creates a user (useradd) with keys the test's sshd accepts",
    "tests/test_hostlock.py::test_a_lock_someone_else_made_narrower_still_locks_or_says_why": "chowns a lock file to another user",
    "tests/test_drift.py::test_a_run_measured_after_the_machine_state_changed_is_flagged_everywhere": "writes transparent huge pages",
    "tests/test_tune.py::test_tune_show_and_reset_change_this_machine_and_put_it_back": "writes ASLR, THP, the perf sample rate, IRQ affinity",
    "tests/test_tune.py::test_reset_after_a_reboot_writes_the_saved_values_back_but_not_to_an_irq_that_now_serves_another_device": "writes ASLR and IRQ affinity",
    "tests/test_tune.py::test_governor_turbo_and_smt_are_set_and_put_back": "mounts a tmpfs over /sys/devices/system/cpu",
    "tests/test_tune.py::test_a_machine_without_cpufreq_says_so_in_one_line_and_changes_nothing": "mounts a tmpfs over /sys/devices/system/cpu",
    "tests/test_lmbench.py::test_a_killed_lat_sem_leaves_no_semaphore_set": "an IPC namespace of its own (unshare --ipc)",
    "tests/test_sched.py::test_tracepoints_are_found_before_anything_mounted_tracefs": "unmounts and mounts tracefs in a mount namespace",
    "tests/test_launcher.py::test_another_user_is_contained_in_a_delegated_cgroup_or_as_a_subreaper": "makes a cgroup for another user under the cgroup2 mount",
    "tests/test_promises.py::test_perfsnake_cgroup_says_where_run_cgroups_are_made": "makes cgroups anywhere under the cgroup2 mount",
    "tests/test_workloads.py::test_cyclictest_ready_campaign": "cyclictest's real-time priority (CAP_SYS_NICE)",
    "tests/test_workloads.py::test_cyclictest_without_rt_priority_is_a_failed_run_with_the_reason": "drops CAP_SYS_NICE with setpriv",
} | {
    # Their [cgroup] parameters (the [subreaper] ones run as any user).
    "tests/test_launcher.py::" + t: "makes a run cgroup under the cgroup2 mount (root's)"
    for t in (
        "test_setsid_grandchild_ends_with_the_run",
        "test_double_fork_daemon_ends_with_the_run",
        "test_killed_caller_ends_the_run",
        "test_guardian_ends_the_run_of_a_launcher_killed_outright",
        "test_next_attempt_sweeps_what_a_killed_launcher_left",
        "test_serve_contains_each_run",
        "test_serve_guardian_ends_the_run_of_a_launcher_killed_outright",
    )
} | {
    "tests/test_resume_window.py::" + t: "holds the launcher with the cgroup v2 freezer (a cgroup under root's cgroup2 mount)"
    for t in (
        "test_a_launcher_that_records_its_run_after_the_kill_is_waited_for",
        "test_a_batchs_serving_launcher_that_records_its_run_after_the_kill_is_waited_for",
    )
} | {
    "tests/test_slurm.py::test_campaign_through_slurm_matches_local_run": "starts slurmctld, slurmd and munged (slurmd launches jobs as root)",
} | {
    # The matrix is every feature's: drop_caches, attach, the every-CPU
    # recorders (perf_event_paranoid 2) and inferno in resources/ are root's here.
    "tests/test_composition_matrix.py::" + t: "the matrix holds root-only features (drop_caches, attach, every-CPU recording)"
    for t in (
        "test_every_pair_runs_in_a_campaign_or_is_refused_for_a_documented_reason",
        "test_every_covering_campaign_runs_right",
        "test_the_invocation_exits_zero",
    )
} | {
    "tests/test_slurm_fleet.py::" + t: "starts slurmctld, three slurmd and munged (slurmd launches jobs as root)"
    for t in (
        "test_each_node_builds_its_own_and_runs_its_records_alone",
        "test_a_node_that_is_not_the_clusters_is_refused_in_one_line",
        "test_a_down_node_holds_up_only_its_runs_and_the_resume_makes_only_them",
    )
} | {
    "tests/test_promises_display.py::test_the_speedup_stack_of_a_program_a_shell_forks_is_the_programs":
        "sched_timeline records every CPU's scheduler tracepoints (root, or perf_event_paranoid -1 and a readable tracefs)",
}  # fmt: skip


def _inferno_absent() -> bool:
    """No inferno in this account: neither the one `make setup` installs
    with cargo (resources/tools/bin) nor one on PATH."""
    root = Path(__file__).resolve().parent.parent
    return not (root / "resources/tools/bin/inferno-flamegraph").exists() and shutil.which("inferno-flamegraph") is None


#: What a normal user's account may legitimately lack although `make setup`
#: ran there: inferno (flame graphs) is installed with cargo, and `make setup`
#: says, without failing, that an account without a Rust toolchain has none.
#: absence -> (is it really absent here?, {test id: why the test needs it}).
#: A listed test's skip passes for a normal user only while the absence is
#: real (asked of the machine, never read from the skip's words); root's
#: suite, and an account that has the tool, must run them.
NORMAL_USER_ABSENT = {
    "inferno": (_inferno_absent, {
        "tests/test_profiling.py::test_heater_flame_graphs_and_differential": "draws flame graphs and a differential one",
        "tests/test_why.py::test_a_planted_loop_is_named_at_the_top_of_its_differential_profile": "profiles both sides with perf_record (flame graphs)",
        "tests/test_composition_profiles.py::test_a_record_whose_name_ends_in_tilde_gets_its_flame_graphs": "draws flame graphs",
        "tests/test_composition_profiles.py::test_why_md_links_resolve_for_values_escaped_in_file_names": "profile_differences profiles with perf_record (flame graphs)",
        "tests/test_composition_profiles.py::test_precision_rounds_profile_every_run_they_add": "profiles every run with perf_record (flame graphs)",
    }),
}  # fmt: skip


def _absent_for_this_user(test_id: str) -> bool:
    return any(test_id in tests and absent() for absent, tests in NORMAL_USER_ABSENT.values())


def _test_id(nodeid: str) -> str:
    return nodeid.split("[", 1)[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or os.environ.get("PERFSNAKE_NO_SKIP") != "1" or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if any(allowed in reason for allowed in ALLOWED_SKIPS):
        return
    if os.geteuid() != 0 and _test_id(item.nodeid) in ROOT_ONLY:
        return  # the suite run by a normal user: a listed root-only test
    if os.geteuid() != 0 and _absent_for_this_user(_test_id(item.nodeid)):
        return  # the suite run by a normal user: a tool this account really lacks
    report.outcome = "failed"
    report.longrepr = f"skipped where CI expects everything setup installs (PERFSNAKE_NO_SKIP=1): {reason}"


# ---- the machine's settings ---------------------------------------------------------------------

#: Every test session of this machine: a test marked machine_settings (it
#: writes ASLR, THP, the perf sample rate or IRQ affinity) holds it alone,
#: every other test holds it shared; so no test runs while another changes
#: what runs measure and what history gates filter on, whichever worker or
#: lane it belongs to.
MACHINE_LOCK = "/tmp/perfsnake-test-machine.lock"


def _open_shared(path: str) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.fchmod(fd, 0o644)  # any user's suite may flock it read-only
        except PermissionError:
            pass
        return fd


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """The machine lock around a test's whole protocol (its module fixtures'
    setup and teardown included); a machine_settings test also holds the
    machine's real benchmark lock, so it never changes the settings under a
    campaign someone runs on this machine."""
    # A normal user's suite writes none of the machine's settings (those tests
    # skip: ROOT_ONLY), so its machine_settings tests hold the lock shared: an
    # exclusive request waits for every other session's tests to end, and on
    # a machine shared with busy sessions it waited for many minutes.
    exclusive = item.get_closest_marker("machine_settings") is not None and os.geteuid() == 0
    # A turnstile first, so that a test waiting to hold the lock alone is not
    # starved by other sessions' tests taking it shared one after another
    # (flock prefers nobody): once it waits, new shared holders wait behind it.
    turnstile = _open_shared(MACHINE_LOCK + ".turnstile")
    fds = [_open_shared(MACHINE_LOCK)]
    try:
        fcntl.flock(turnstile, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        fcntl.flock(fds[0], fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    finally:
        os.close(turnstile)
    try:
        with contextlib.ExitStack() as machine:
            if exclusive:
                from perfsnake import hostlock

                try:
                    machine.enter_context(hostlock.host_lock(hostlock.default_path()))
                except OSError:
                    pass  # a lock this user may not open: no campaign of theirs to disturb
            yield
    finally:
        for fd in reversed(fds):
            os.close(fd)


# ---- the session's test users -------------------------------------------------------------------


def _controller(config) -> bool:
    return not hasattr(config, "workerinput")


def _users():
    """tests/users.py, or None where this conftest serves another tree (tests/test_ci_rules.py copies it)."""
    try:
        import users
    except ModuleNotFoundError:
        return None
    return users


def pytest_sessionstart(session):
    users = _users()
    if users and _controller(session.config) and os.geteuid() == 0:
        users.remove_users(only_dead=True)  # a session that died left its users
        shutil.rmtree("/var/tmp/perfsnake-test-users", ignore_errors=True)  # the shared venv of earlier versions


def pytest_sessionfinish(session, exitstatus):
    users = _users()
    if users and _controller(session.config) and os.geteuid() == 0:
        users.remove_users(only_dead=False)


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
