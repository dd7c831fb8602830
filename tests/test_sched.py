"""The scheduler timeline (sched_timeline): real `perf record` of the
scheduler's tracepoints around a two-thread program, the threads' placement
read back from the recording, the Gantt chart, the sched.* metrics."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import processes_under, snakemake, write_campaign

from perfsnake.campaign_csv import read_csv
from perfsnake.instruments import sched
from perfsnake.machine import capabilities

pytestmark = pytest.mark.skipif(
    shutil.which("perf") is None or capabilities.missing_tracepoint(sched.EVENTS) is not None,
    reason="needs perf and sched tracepoints",
)


def build(tmp_path: Path, name: str, source: str, *flags: str) -> Path:
    """A test program compiled from `source` into tmp_path/name."""
    (tmp_path / f"{name}.c").write_text(source)
    subprocess.run(["cc", "-O2", *flags, "-o", str(tmp_path / name), str(tmp_path / f"{name}.c")], check=True)
    return tmp_path / name


TWO_THREADS = r"""
#include <pthread.h>
#include <stdio.h>
static void *spin(void *a) { volatile unsigned long x = 0; for (unsigned long i = 0; i < 30000000UL; i++) x += i; return a; }
int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, spin, 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    puts("done=1");
    return 0;
}
"""


# Two busy threads that work until the program has run on every CPU it may
# use (the kernel's doing: it only looks, with sched_getcpu, every million
# additions), at least 10^8 additions each and at most 3 x 10^10 (an ending,
# should the kernel keep them on one CPU); it prints the CPUs it saw.
SPREADING = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
static cpu_set_t allowed;
static volatile int seen[CPU_SETSIZE];
static int everywhere(void) {
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed) && !seen[c]) return 0;
    return 1;
}
static void *spin(void *a) {
    volatile unsigned long x = 0;
    for (unsigned long chunk = 1; chunk <= 30000; chunk++) {
        for (unsigned long i = 0; i < 1000000UL; i++) x += i;
        int c = sched_getcpu();
        if (c >= 0) seen[c] = 1;
        if (chunk >= 100 && everywhere()) break;
    }
    return a;
}
int main(void) {
    pthread_t t[2];
    sched_getaffinity(0, sizeof(allowed), &allowed);
    int c = sched_getcpu();
    if (c >= 0) seen[c] = 1;
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, spin, 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    printf("seen=");
    for (int c = 0; c < CPU_SETSIZE; c++) if (seen[c]) printf("%d,", c);
    puts("\ndone=1");
    return 0;
}
"""


@pytest.mark.e2e
def test_timeline_shows_where_threads_ran(tmp_path):
    prog = build(tmp_path, "two", SPREADING, "-pthread")
    camp = write_campaign(tmp_path, {
        "name": "st",
        "benchmark": {"type": "command", "command": str(prog), "metrics": {"done": r"done=(\d)"}},
        "variables": {"cpu_list": ["0", "0-1"]},
        "nb_runs": 1,
        "wrappers": ["sched_timeline", "taskset"],
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/st/st.csv")
    assert (frame["status"] == "ok").all()
    # The program's three threads, and the shells that started it.
    assert set(sched.METRICS) <= set(frame.columns) and (frame["sched.threads"] >= 3).all()
    assert (frame["sched.runtime_ms"] > 0).all()
    runs = tmp_path / "results/st/runs"
    pinned = json.loads((runs / "cpu_list-0/run-1/sched.json").read_text())
    program = [t for t in pinned["threads"] if t["name"] == "two"]
    # Under taskset -c 0 the program's threads (named as the kernel names
    # them) ran on CPU 0 only and never migrated.
    assert len(program) == 3 and all(t["cpus"] == [0] and t["migrations"] == 0 for t in program), pinned["threads"]
    ids = {t["tid"] for t in program}
    assert {s["cpu"] for s in pinned["slices"] if s["tid"] in ids} == {0}
    # Unpinned (taskset -c 0-1), the same threads spread over both CPUs. Not
    # by a guarantee, but certain in practice: the kernel places a new thread
    # on the idlest CPU, and its load balancer moves busy threads off a CPU
    # with more to run than another, every few milliseconds; even when other
    # work keeps both CPUs busy, two busy threads do not stay on one CPU for
    # long, and the program works until it saw itself on both (up to 3 x 10^10
    # additions per thread: seconds). The timeline shows what the program saw.
    spread = json.loads((runs / "cpu_list-0-1/run-1/sched.json").read_text())
    program = [t for t in spread["threads"] if t["name"] == "two"]
    assert len(program) == 3 and set().union(*(t["cpus"] for t in program)) == {0, 1}, spread["threads"]
    for record, cpus in (("cpu_list-0", "0,"), ("cpu_list-0-1", "0,1,")):
        assert (runs / record / "run-1/stdout.txt").read_text().startswith(f"seen={cpus}\n")
    for record in ("cpu_list-0", "cpu_list-0-1"):
        assert (runs / record / "run-1/sched_gantt.png").read_bytes()[:4] == b"\x89PNG"
        assert "migrations (red)" in (runs / record / "run-1/sched_gantt.svg").read_text()
    # No tracer outlives its run.
    assert not processes_under(tmp_path, "perf record")


def test_a_missing_tracepoint_is_named():
    assert capabilities.missing_tracepoint(("sched:sched_switch",)) is None
    assert capabilities.missing_tracepoint(("sched:sched_switch", "sched:no_such_event")) == "sched:no_such_event"


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="mounts tracefs: needs root")
def test_tracepoints_are_found_before_anything_mounted_tracefs():
    # A fresh boot has no tracefs until perf mounts it; unmounted in a private
    # mount namespace, so the rest of the machine keeps its mount.
    script = (
        "umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null; "
        "test ! -d /sys/kernel/tracing/events || exit 3; "
        f"{shlex.quote(sys.executable)} -c 'from perfsnake.machine import capabilities as c; "
        'print(c.missing_tracepoint(("sched:sched_switch",)))\''
    )
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "None"


# A thread preempted by another, woken after sleeping, migrated once.
EVENTS = [
    ("a", 10, 0, 1.000, "sched:sched_switch", {"prev_pid": "0", "prev_state": "R", "next_comm": "a", "next_pid": "10"}),
    ("a", 10, 0, 1.001, "sched:sched_process_fork", {"pid": "10", "child_pid": "11", "child_comm": "a"}),
    ("a", 10, 0, 1.002, "sched:sched_switch", {"prev_comm": "a", "prev_pid": "10", "prev_state": "R", "next_comm": "a", "next_pid": "11"}),
    ("a", 11, 0, 1.004, "sched:sched_switch", {"prev_comm": "a", "prev_pid": "11", "prev_state": "S", "next_comm": "a", "next_pid": "10"}),
    ("a", 10, 0, 1.005, "sched:sched_waking", {"pid": "11", "target_cpu": "1"}),
    ("a", 10, 0, 1.005, "sched:sched_migrate_task", {"pid": "11", "orig_cpu": "0", "dest_cpu": "1"}),
    ("x", 0, 1, 1.006, "sched:sched_switch", {"prev_pid": "0", "prev_state": "R", "next_comm": "a", "next_pid": "11"}),
    ("a", 11, 1, 1.008, "sched:sched_switch", {"prev_comm": "a", "prev_pid": "11", "prev_state": "X", "next_pid": "0"}),
    ("a", 10, 0, 1.010, "sched:sched_switch", {"prev_comm": "a", "prev_pid": "10", "prev_state": "X", "next_pid": "0"}),
]  # fmt: skip


EXEC_EVENT = (
    "a",
    11,
    1,
    1.007,
    "sched:sched_process_exec",
    {"filename": "/bin/prog", "pid": "11", "old_pid": "11"},
)


def test_analysis_of_a_recorded_event_stream():
    ev = EVENTS
    t = sched.analyse(ev, 10)
    by = {x["tid"]: x for x in t["threads"]}
    assert by[10]["runtime_ms"] == pytest.approx(2 + 6) and by[10]["wait_ms"] == pytest.approx(
        2
    )  # preempted 1.002-1.004
    assert by[11]["runtime_ms"] == pytest.approx(2 + 2) and by[11]["blocked_ms"] == pytest.approx(1)
    assert by[11]["delay_ms"] == pytest.approx(1 + 1)  # forked 1.001 -> ran 1.002; woken 1.005 -> ran 1.006
    assert by[11]["cpus"] == [0, 1] and by[11]["migrations"] == 1 and t["totals"]["sched.cpus_used"] == 2
    # The same thread having exec'd a program once it ran on CPU 1 (taskset
    # pinning itself, then becoming the benchmark): placement counts from there.
    t = sched.analyse([*ev[:7], EXEC_EVENT, *ev[7:]], 10)
    by = {x["tid"]: x for x in t["threads"]}
    assert by[11]["cpus"] == [1] and by[11]["migrations"] == 0 and by[11]["runtime_ms"] == pytest.approx(2 + 2)
    assert by[11]["exec_ms"] == pytest.approx(7) and "exec_ms" not in by[10]


# A shell that ran longer than either of the two threads of the program it forked.
SHELL_EVENTS = [
    ("sh", 10, 0, 1.000, "sched:sched_switch", {"prev_pid": "0", "prev_state": "R", "next_comm": "sh", "next_pid": "10"}),
    ("sh", 10, 0, 1.001, "sched:sched_process_fork", {"pid": "10", "child_pid": "11", "child_comm": "sh"}),
    ("sh", 10, 0, 1.008, "sched:sched_switch", {"prev_comm": "sh", "prev_pid": "10", "prev_state": "S", "next_comm": "prog", "next_pid": "11"}),
    ("prog", 11, 0, 1.009, "sched:sched_process_fork", {"pid": "11", "child_pid": "12", "child_comm": "prog"}),
    ("x", 0, 1, 1.009, "sched:sched_switch", {"prev_pid": "0", "prev_state": "R", "next_comm": "prog", "next_pid": "12"}),
    ("prog", 11, 0, 1.011, "sched:sched_switch", {"prev_comm": "prog", "prev_pid": "11", "prev_state": "X", "next_pid": "0"}),
    ("prog", 12, 1, 1.012, "sched:sched_switch", {"prev_comm": "prog", "prev_pid": "12", "prev_state": "X", "next_pid": "0"}),
]  # fmt: skip


def test_the_application_is_the_program_not_the_shell_that_forked_it():
    """The shell's one thread ran 8 ms, each of the program's two only 3: the
    program is still the application (the speedup stack's region needs it)."""
    t = sched.analyse(SHELL_EVENTS, 10)
    assert t["app"] == "prog" and t["totals"]["sched.app.threads"] == 2
    assert t["totals"]["sched.app.runtime_ms"] == pytest.approx(3 + 3)


def test_the_gantt_greys_what_ran_before_the_programs_exec(tmp_path):
    timeline = sched.analyse([*EVENTS[:7], EXEC_EVENT, *EVENTS[7:]], 10)
    (tmp_path / sched.JSON_FILE).write_text(json.dumps(timeline))
    from perfsnake.stages.sched import draw_gantt

    draw_gantt(tmp_path, [tmp_path / "g.svg"], "t")
    svg = (tmp_path / "g.svg").read_text()
    # thread 11's slice on CPU 0 came before its exec; its move to CPU 1 is not drawn
    assert "before exec" in svg and "grey: before the program" in svg and "#c7c7c7" in svg
    assert svg.count('stroke="#d62728"') == 0


@pytest.mark.e2e
def test_timeline_tells_the_placement_daemons_pins_from_the_schedulers_moves(tmp_path):
    prog = build(tmp_path, "two", TWO_THREADS, "-pthread")
    camp = write_campaign(tmp_path, {
        "name": "pl",
        "benchmark": {"type": "command", "command": str(prog), "metrics": {"done": r"done=(\d)"}},
        "variables": {"placement": ["close", "normal"]},
        "nb_runs": 1,
        "pre_run_hooks": ["placement"],
        "wrappers": ["sched_timeline"],
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    runs = tmp_path / "results/pl/runs"
    close = json.loads((runs / "placement-close/run-1/sched.json").read_text())
    program = [t for t in close["threads"] if t["name"] == "two"]
    pinned = [t for t in program if "pinned_cpu" in t]
    # The daemon pinned the program's threads (the main thread at least: it
    # lives until the others end); from its pin on, each ran on that CPU
    # only and the scheduler never moved it.
    assert pinned and any(t["tid"] == min(x["tid"] for x in program) for t in pinned), close["threads"]
    log = (runs / "placement-close/run-1/daemon-placement/stdout.txt").read_text()
    for t in pinned:
        assert (
            f"tid {t['tid']} " in log
            and f" cpu {t['pinned_cpu']} " in log.split(f"tid {t['tid']} ", 1)[1].split("\n")[0]
        )
        assert t["cpus_after_pin"] in ([], [t["pinned_cpu"]]) and t["migrations_after_pin"] == 0, t
    normal = json.loads((runs / "placement-normal/run-1/sched.json").read_text())
    assert not any("pinned_cpu" in t for t in normal["threads"])


SLEEPY = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
__attribute__((noinline)) static void nap(void) { struct timespec t = {0, 1000000}; nanosleep(&t, 0); }
__attribute__((noinline)) void sleepy_unique_function(int n) { for (int i = 0; i < n; i++) nap(); }
int main(int argc, char **argv) { sleepy_unique_function(atoi(argv[1])); puts("slept=1"); return 0; }
"""


@pytest.mark.e2e
def test_off_cpu_flame_graphs_name_where_threads_block(tmp_path):
    prog = build(tmp_path, "sleepy", SLEEPY, "-fno-omit-frame-pointer")
    camp = write_campaign(tmp_path, {
        "name": "oc",
        # On the last CPU: on some VMs the only one whose idle-context events perf records is the first.
        "benchmark": {"type": "command", "command": f"taskset -c {max(os.sched_getaffinity(0))} {prog} {{naps}}",
                      "metrics": {"slept": r"slept=(\d)"}},
        "variables": {"naps": [10, 30]},
        "nb_runs": 1,
        "wrappers": ["offcpu"],
        "flamegraph_pairs": [{"a": {"naps": 10}, "b": {"naps": 30}}],
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    runs = tmp_path / "results/oc/runs"
    folded = (runs / "naps-30/run-1/offcpu.folded").read_text()
    mine = [line for line in folded.splitlines() if "sleepy_unique_function" in line]
    lost = json.loads((runs / "naps-30/run-1/result.json").read_text())["metrics"]["offcpu.lost_events"]
    # Blocked in the uniquely named function, for 30 naps of 1 ms (at least the sleep asked for each),
    # but those perf lost (a busy machine can fill even the larger buffers), which the run reports:
    # a lost event hides one nap at most.
    blocked = sum(int(line.rsplit(" ", 1)[1]) for line in mine)
    assert isinstance(lost, int) and lost >= 0
    assert mine and blocked >= max(0, 30 - lost) * 1000, (lost, folded[:2000])
    assert "sleepy_unique_function" in (runs / "naps-30/run-1/offcpu.svg").read_text()
    assert "sleepy_unique_function" in (tmp_path / "results/oc/offcpu/naps-10~vs~naps-30.svg").read_text()
    assert not processes_under(tmp_path, "perf record")


def test_folding_weighs_stacks_by_blocked_time():
    from perfsnake.instruments.offcpu import fold

    text = "\n".join([
        "a 10 [000] 1.000000: sched:sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0 next_prio=120",
        "\tffff01 __schedule ([kernel.kallsyms])",
        "\t1234 waiter (/bin/a)",
        "\t5678 main (/bin/a)",
        "",
        "x 0 [001] 1.004000: sched:sched_waking: comm=a pid=10 prio=120 target_cpu=000",
        "",
        "a 99 [000] 1.005000: sched:sched_switch: prev_comm=b prev_pid=99 prev_prio=120 prev_state=S ==> next_comm=x next_pid=0 next_prio=120",
        "",
    ])  # fmt: skip
    assert fold(text, 10) == {"a;main;waiter;__schedule": 4000}


def test_folding_ends_a_sleep_without_a_recorded_wake_up_at_the_threads_next_event():
    from perfsnake.instruments.offcpu import fold

    # An idle CPU's events (the timer's wake-up, the switch-in) missing: the
    # next switch-out, in the thread's own context, proves it ran again.
    switch_out = "a 10 [001] {t}: sched:sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120"
    text = "\n".join([switch_out.format(t="1.000000"), "\t1234 nap (/bin/a)", "", switch_out.format(t="1.001050"),
                      "\t1234 nap (/bin/a)", "", "a 10 [001] 1.001100: sched:sched_process_exit: comm=a pid=10", ""])  # fmt: skip
    assert fold(text, 10) == {"a;nap": 1050 + 50}


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("bpftrace") is None, reason="needs bpftrace")
def test_attachments_record_for_the_run_only(tmp_path):
    camp = write_campaign(tmp_path, {
        "name": "at",
        "benchmark": {"type": "command", "command": "for i in 1 2 3 4 5; do sleep 0.01; done; echo ok=1", "metrics": {"ok": r"ok=(\d)"}},
        "variables": {"x": [1]},
        "nb_runs": 2,
        "pre_run_hooks": [{"type": "attach", "program": "runqlat"}, {"type": "attach", "program": "syscalls"}],
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/at/at.csv")
    assert (frame["status"] == "ok").all()
    # The benchmark's own sleeps are wake-ups and system calls the tracers saw.
    assert (frame["attach.runqlat.runqlat.count"] >= 5).all() and (frame["attach.runqlat.runqlat_us.p99"] >= 0).all()
    assert (frame["attach.syscalls.syscalls"] > 0).all()
    assert (frame["attach.runqlat.cpu_s"] >= 0).all() and (frame["attach.syscalls.cpu_s"] >= 0).all()
    out = (tmp_path / "results/at/runs/x-1/run-1/attach-syscalls.txt").read_text()
    assert "@syscalls_by_thread[sleep," in out
    assert not processes_under(tmp_path, "bpftrace")


CONTENDED = r"""
#include <pthread.h>
#include <stdio.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long c;
static void *w(void *a) { for (int i = 0; i < 200000; i++) { pthread_mutex_lock(&m); for (int k = 0; k < 50; k++) c++; pthread_mutex_unlock(&m); } return a; }
int main(void) { pthread_t t[4]; for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, w, 0); for (int i = 0; i < 4; i++) pthread_join(t[i], 0); printf("c=%ld\n", c); return 0; }
"""


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("bpftrace") is None, reason="needs bpftrace")
def test_contention_attachment_sees_a_contended_mutex(tmp_path):
    prog = build(tmp_path, "contended", CONTENDED, "-pthread")
    camp = write_campaign(tmp_path, {
        "name": "ct",
        "benchmark": {"type": "command", "command": str(prog), "metrics": {"c": r"c=(\d+)"}},
        "variables": {"x": [1]},
        "nb_runs": 1,
        "pre_run_hooks": [{"type": "attach", "program": "contention"}],
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/ct/ct.csv")
    assert (frame["status"] == "ok").all() and (frame["c"] == 40_000_000).all()
    # 800,000 lock operations by 4 threads: some of them slept in futex(2), attributed to the program.
    assert (frame["attach.contention.futex_wait.count"] > 0).all()
    out = (tmp_path / "results/ct/runs/x-1/run-1/attach-contention.txt").read_text()
    assert "@futex_wait_us_by_comm[contended]:" in out


SCALING = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long c;
static void *w(void *a) { for (int i = 0; i < 100000; i++) { pthread_mutex_lock(&m); for (int k = 0; k < 50; k++) c++; pthread_mutex_unlock(&m); } return a; }
int main(int argc, char **argv) { int n = atoi(argv[1]); pthread_t t[64]; for (int i = 0; i < n; i++) pthread_create(&t[i], 0, w, 0); for (int i = 0; i < n; i++) pthread_join(t[i], 0); printf("c=%ld\n", c); return 0; }
"""


@pytest.mark.e2e
def test_scalability_breakdown_stacks_where_the_threads_time_went(tmp_path):
    prog = tmp_path / "scaling"
    (tmp_path / "scaling.c").write_text(SCALING)
    subprocess.run(
        ["cc", "-O2", "-fno-omit-frame-pointer", "-pthread", "-o", str(prog), str(tmp_path / "scaling.c")], check=True
    )
    parts = ["running_ms", "spinning_ms", "sched.app.wait_ms", "sched.app.blocked_ms"]
    camp = write_campaign(tmp_path, {
        "name": "sb",
        "benchmark": {"type": "command", "command": f"{prog} {{threads}}", "metrics": {"c": r"c=(\d+)"}},
        "variables": {"threads": [1, 2, 4]},
        "nb_runs": 1,
        "wrappers": ["sched_timeline", {"type": "perf_record", "spin": "lll_lock|mutex_lock|futex"}],
        "derived": {"running_ms": "sched.app.runtime_ms * (1 - perf_record.spin_share)",
                    "spinning_ms": "sched.app.runtime_ms * perf_record.spin_share"},
        "plots": [{"kind": "breakdown", "x": "threads", "y": parts, "name": "breakdown"}],
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/sb/sb.csv")
    assert (frame["status"] == "ok").all() and list(frame.sort_values("threads")["c"]) == [
        5_000_000,
        10_000_000,
        20_000_000,
    ]
    assert frame["perf_record.spin_share"].between(0, 1).all()
    for part in parts:
        assert (frame[part] >= 0).all(), part
    # One thread cannot wait for the lock; four on two CPUs do (runnable or asleep in futex).
    four = frame[frame["threads"] == 4].iloc[0]
    assert four["sched.app.wait_ms"] + four["sched.app.blocked_ms"] > 0
    # The application's threads: the program's main thread and its workers.
    assert list(frame.sort_values("threads")["sched.app.threads"]) == [2, 3, 5]
    svg = (tmp_path / "results/sb/plots/breakdown.svg").read_text()
    assert "ideal speedup" in svg and "spinning_ms" in svg


def test_a_breakdown_needs_stacked_metrics_and_a_thread_count(tmp_path):
    from perfsnake.campaign import load_campaign
    from perfsnake.errors import CampaignError

    base = {"name": "b", "benchmark": {"type": "command", "command": "echo v={t}", "metrics": {"v": r"v=(\d+)"}},
            "variables": {"t": [1, 2]}}  # fmt: skip
    bad = [({"kind": "breakdown", "x": "t", "y": "v"}, "stacks two or more y metrics"),
           ({"kind": "breakdown", "x": "v", "y": ["v", "wall_s"]}, "must be a variable")]  # fmt: skip
    for plot, problem in bad:
        path = write_campaign(tmp_path, {**base, "plots": [plot]})
        with pytest.raises(CampaignError, match=problem):
            load_campaign(path)
    path = write_campaign(
        tmp_path,
        {**base, "variables": {"t": ["a", "b"]}, "plots": [{"kind": "breakdown", "x": "t", "y": ["v", "wall_s"]}]},
    )
    with pytest.raises(CampaignError, match="positive thread count"):
        load_campaign(path)


def test_attachment_programs_are_checked_before_any_run(tmp_path):
    from perfsnake.campaign import load_campaign
    from perfsnake.errors import CampaignError

    kprobe = tmp_path / "k.bt"
    kprobe.write_text("kprobe:do_nanosleep { @n = count(); }\n")
    missing = tmp_path / "m.bt"
    missing.write_text("tracepoint:sched:no_such_event { @n = count(); }\n")
    cases = [("nosuch", "is neither a ready program"), (str(missing), "no sched:no_such_event tracepoint")]
    if not Path("/sys/bus/event_source/devices/kprobe").exists():
        cases.append((str(kprobe), "does not offer"))
    for program, problem in cases:
        data = {"name": "c", "benchmark": {"type": "command", "command": "true"}, "variables": {"x": [1]},
                "pre_run_hooks": [{"type": "attach", "program": program}]}  # fmt: skip
        with pytest.raises(CampaignError) as info:
            load_campaign(write_campaign(tmp_path, data))
        assert info.value.key == "pre_run_hooks[0].program" and problem in info.value.problem, str(info.value)


def test_bpftrace_maps_become_metrics():
    from perfsnake.instruments.attach import parse_output

    text = "Attaching 4 probes...\n\n@runqlat: count 10, average 7, total 70\n\n@runqlat_max: 90\n@runqlat_us: \n[1]  1 |@ |\n[2, 4)   2 |@@ |\n[4, 8)   6 |@@@@@@ |\n[1K, 2K)  1 |@ |\n\n"
    m = parse_output(text)
    assert m["runqlat.count"] == 10 and m["runqlat.average"] == 7 and m["runqlat_max"] == 90
    assert m["runqlat_us.p50"] == 8 and m["runqlat_us.p99"] == 2048


def test_a_million_slices_are_drawn_as_a_few_thousand_bars():
    import pandas as pd

    from perfsnake.stages.sched import MAX_BARS, merge_slices

    # Two threads preempted every 10 us for 1 s (a queue lock on more threads than CPUs).
    n = 100_000
    starts = [i * 0.01 for i in range(n)]
    frame = pd.DataFrame({"tid": [1 + i % 2 for i in range(n)], "cpu": [i % 2 for i in range(n)],
                          "start": starts, "end": [s + 0.008 for s in starts]})  # fmt: skip
    bars, gap = merge_slices(frame)
    assert len(bars) <= MAX_BARS and gap > 0
    for tid in (1, 2):  # each thread's bars still cover its span, on its CPU
        mine = bars[bars["tid"] == tid]
        assert set(mine["cpu"]) == {tid - 1}
        assert mine["start"].min() == frame[frame["tid"] == tid]["start"].min()
        assert mine["end"].max() == frame[frame["tid"] == tid]["end"].max()
    small = frame.head(10)
    assert merge_slices(small)[0] is small and merge_slices(small)[1] == 0.0


def _switch(cpu: int, t: float, prev: int, state: str, nxt: int) -> tuple:
    fields = {
        "prev_comm": "prog",
        "prev_pid": str(prev),
        "prev_state": state,
        "next_comm": "prog",
        "next_pid": str(nxt),
    }
    return ("prog", prev, cpu, t, "sched:sched_switch", fields)


def _constructed_timeline() -> list[tuple]:
    """Main (100) creates 101-103 at 10 ms and works beside them until 90 ms, then joins
    until 110 ms; 101 runs 10-110 ms, 102 runs 10-50, sleeps on a lock until 101 wakes
    it at 70 and runs to 110; 103 finishes early, at 60 ms. Four CPUs: nobody waits for one."""
    ev: list[tuple] = [_switch(0, 0.0, 0, "R", 100)]
    for child, cpu in ((101, 1), (102, 2), (103, 3)):
        ev.append(("prog", 100, 0, 0.010, "sched:sched_process_fork", {"pid": "100", "child_pid": str(child)}))
        ev.append(("prog", 100, 0, 0.010, "sched:sched_wakeup_new", {"pid": str(child), "target_cpu": str(cpu)}))
    ev += [_switch(1, 0.010, 0, "R", 101), _switch(2, 0.010, 0, "R", 102), _switch(3, 0.010, 0, "R", 103)]
    ev.append(_switch(2, 0.050, 102, "S", 0))
    ev.append(_switch(3, 0.060, 103, "X", 0))
    ev.append(("prog", 101, 1, 0.070, "sched:sched_waking", {"pid": "102", "target_cpu": "2"}))
    ev.append(_switch(2, 0.070, 0, "R", 102))
    ev.append(_switch(0, 0.090, 100, "S", 0))  # main: pthread_join
    ev.append(_switch(2, 0.110, 102, "X", 0))
    ev.append(("prog", 101, 1, 0.110, "sched:sched_waking", {"pid": "100", "target_cpu": "0"}))  # 101's exit
    ev.append(_switch(1, 0.110, 101, "X", 0))
    ev.append(_switch(0, 0.110, 0, "R", 100))
    ev.append(_switch(0, 0.112, 100, "X", 0))
    return ev


def test_the_parallel_region_splits_each_threads_time_into_its_causes():
    region = sched.analyse(_constructed_timeline(), 100)["region"]
    assert region["participants"] == [100, 101, 102, 103]  # main worked beside them: it takes part
    assert region["region_ms"] == pytest.approx(100)  # first creation (10 ms) to the last slice's end (110 ms)
    assert region["running_ms"] == pytest.approx(100 + 80 + 50 + 80)  # 101, 102, 103, main from 10 to 90
    assert region["blocked_ms"] == pytest.approx(20)  # 102 on the lock, not main's join
    assert region["join_wait_ms"] == pytest.approx(20)  # main, 90 to 110 ms, until 101 exits
    assert region["imbalance_ms"] == pytest.approx(50 + 20)  # 103's idle tail and main's join wait
    assert region["wait_ms"] == pytest.approx(0)
    parts = ("running_ms", "wait_ms", "blocked_ms", "imbalance_ms")
    assert sum(region[p] for p in parts) == pytest.approx(4 * region["region_ms"])  # every thread's T_p, once


def test_a_creator_whose_last_slice_a_loaded_vm_stretched_only_waited():
    """Main (100) creates 101 at 10 ms; its slice before pthread_join ends 3.2 ms
    later (a loaded VM's steal, as CI saw), more than 5 % of the region but a
    fraction of the worker's 14 ms: it did not work beside it."""
    ev: list[tuple] = [_switch(0, 0.0, 0, "R", 100)]
    ev.append(("prog", 100, 0, 0.010, "sched:sched_process_fork", {"pid": "100", "child_pid": "101"}))
    ev.append(("prog", 100, 0, 0.010, "sched:sched_wakeup_new", {"pid": "101", "target_cpu": "1"}))
    ev.append(_switch(1, 0.010, 0, "R", 101))
    ev.append(_switch(0, 0.0132, 100, "S", 0))  # main: pthread_join
    ev.append(("prog", 101, 1, 0.024, "sched:sched_waking", {"pid": "100", "target_cpu": "0"}))
    ev.append(_switch(1, 0.024, 101, "X", 0))
    ev.append(_switch(0, 0.024, 0, "R", 100))
    ev.append(_switch(0, 0.025, 100, "X", 0))
    region = sched.analyse(ev, 100)["region"]
    assert region["participants"] == [101] and region["threads"] == 1
    assert region["region_ms"] == pytest.approx(14) and region["running_ms"] == pytest.approx(14)


@pytest.mark.parametrize(("other_cpu_switch", "ran", "blocked"), [(0.003, 7, 1), (0.0005, 8, 0)])
def test_a_thread_is_never_in_two_states_at_once_when_events_were_lost(other_cpu_switch, ran, blocked):
    """Asleep on CPU 0 at 2 ms; its wake-up and its switch-in on CPU 1 lost (as
    under load); preempted there at 6 ms, back on CPU 0 from 8 to 10 ms. The
    slice on CPU 1 began at CPU 1's last switch, but not before the thread's
    own switch-out; the sleep ends where that slice begins. Its time adds up
    to its lifetime, as the speedup stack assumes (CI once found 70.5 ms of
    parts in 2 x 34.5 ms)."""
    ev = [
        _switch(0, 0.000, 0, "R", 100),
        _switch(1, other_cpu_switch, 0, "R", 7),  # another program's thread on CPU 1
        _switch(0, 0.002, 100, "S", 0),
        _switch(1, 0.006, 100, "R", 7),
        _switch(0, 0.008, 0, "R", 100),
        _switch(0, 0.010, 100, "X", 0),
    ]
    t = sched.analyse(ev, 100)
    (thread,) = t["threads"]
    assert thread["runtime_ms"] == pytest.approx(ran) and thread["blocked_ms"] == pytest.approx(blocked)
    assert thread["wait_ms"] == pytest.approx(2)  # preempted 6 to 8 ms
    region = t["region"]
    assert region["region_ms"] == pytest.approx(10)
    parts = ("running_ms", "wait_ms", "blocked_ms", "imbalance_ms")
    assert sum(region[p] for p in parts) == pytest.approx(10)


def test_the_parts_of_a_threads_time_never_count_an_instant_twice():
    """Overlapping intervals (a recording's artefact) are counted once, in order of precedence."""
    runs, waits, sleeps = [(0.0, 4.0), (3.0, 5.0)], [(4.5, 7.0)], [(6.0, 9.0), (20.0, 30.0)]
    assert sched._partition((runs, waits, sleeps), 1.0, 10.0) == pytest.approx([4.0, 2.0, 2.0])


def test_a_speedup_stack_adds_up_to_n_with_its_remainder():
    from perfsnake.statistics.speedup import CAUSES, UNEXPLAINED, RunTimes, speedups, stack

    region = sched.analyse(_constructed_timeline(), 100)["region"]
    times = {k: float(region[k]) for k in ("region_ms", "running_ms", "wait_ms", "blocked_ms", "imbalance_ms")}
    one = [RunTimes(metric=1000.0, region_ms=200.0, running_ms=200.0, wait_ms=0, blocked_ms=0, imbalance_ms=0,
                    spin_share=0.0)]  # fmt: skip
    four = [RunTimes(metric=2500.0, spin_share=0.1, **times), RunTimes(metric=2700.0, spin_share=0.1, **times)]
    bar = stack(4, four, one, "higher")
    assert bar.speedup == pytest.approx(2.6)  # the median of 2.5 and 2.7 (ops/s over one thread's)
    assert bar.parts["spinning"] == pytest.approx(0.1 * 310 / 100)
    assert bar.parts["blocked"] == pytest.approx(0.2) and bar.parts["runnable"] == pytest.approx(0)
    assert bar.parts["imbalance"] == pytest.approx(0.7)  # 103's tail and main's join wait, over T_p
    # Useful running 0.9 x 310 ms in 100 ms, beyond the one-thread run's useful share of the same work (2.6 x 1).
    assert bar.parts["overhead"] == pytest.approx(0.9 * 3.1 - 2.6)
    assert list(bar.parts) == [*CAUSES, UNEXPLAINED]
    assert bar.parts[UNEXPLAINED] == pytest.approx(4 - 2.6 - (0.31 + 0.2 + 0.7 + 0.9 * 3.1 - 2.6))
    assert bar.speedup + sum(bar.parts.values()) == pytest.approx(4, abs=1e-12)  # base + parts = N, exactly
    assert speedups([50.0], [100.0], "lower") == [2.0]  # a time: the one-thread time over the N-thread one


def test_a_speedup_stack_names_its_metric_and_direction(tmp_path):
    from perfsnake.campaign import load_campaign
    from perfsnake.errors import CampaignError

    base = {"name": "s", "benchmark": {"type": "command", "command": "echo v={t}", "metrics": {"v": r"v=(\d+)"}},
            "variables": {"t": [1, 2]}, "wrappers": ["sched_timeline"]}  # fmt: skip
    bad = [
        ({"speedup_of": {"metric": "v", "better": "faster"}}, "plots[0].speedup_of.better", "not one of higher, lower"),
        ({"speedup_of": {"metric": "w", "better": "higher"}}, "plots[0].speedup_of.metric", "'w' is not a metric"),
        ({}, "plots[0]", "'speedup_of' is a required property"),
        ({"speedup_of": {"metric": "v", "better": "higher"}, "y": "v"}, "plots[0]", "drop y"),
    ]
    for extra, key, problem in bad:
        path = write_campaign(tmp_path, {**base, "plots": [{"kind": "speedup_stack", "x": "t", **extra}]})
        with pytest.raises(CampaignError) as info:
            load_campaign(path)
        assert info.value.key == key and problem in info.value.problem, str(info.value)
    plot = {"kind": "speedup_stack", "x": "t", "speedup_of": {"metric": "v", "better": "higher"}}
    with pytest.raises(CampaignError, match="needs the sched_timeline wrapper"):
        load_campaign(write_campaign(tmp_path, {**base, "wrappers": [], "plots": [plot]}))
    with pytest.raises(CampaignError, match="with 1 among its values"):
        load_campaign(write_campaign(tmp_path, {**base, "variables": {"t": [2, 4]}, "plots": [plot]}))


@pytest.mark.e2e
def test_a_speedup_stack_is_drawn_from_the_runs_timelines(tmp_path):
    if problem := capabilities.recording_problem(sched.EVENTS):
        pytest.skip(problem)
    prog = tmp_path / "scaling"
    (tmp_path / "scaling.c").write_text(SCALING)
    subprocess.run(["cc", "-O2", "-pthread", "-o", str(prog), str(tmp_path / "scaling.c")], check=True)
    camp = write_campaign(tmp_path, {
        "name": "ss",
        # exec: the program is the run's root process (through a shell that forks it, the
        # application is sometimes taken to be the shell: noted in docs/instruments.md)
        "benchmark": {"type": "command", "command": f"exec {prog} {{threads}}", "metrics": {"c": r"c=(\d+)"}},
        "variables": {"threads": [1, 2]},
        "nb_runs": 1,
        "wrappers": ["sched_timeline"],
        "plots": [{"kind": "speedup_stack", "x": "threads", "speedup_of": {"metric": "wall_s", "better": "lower"},
                   "name": "stack"}],
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/ss/ss.csv")
    assert (frame["status"] == "ok").all()
    # The workers are the program's threads; main only created and joined them.
    assert list(frame.sort_values("threads")["sched.par.threads"]) == [1, 2]
    two = frame[frame["threads"] == 2].iloc[0]
    parts = ("running_ms", "wait_ms", "blocked_ms", "imbalance_ms")
    assert sum(two[f"sched.par.{p}"] for p in parts) <= 2 * two["sched.par.region_ms"] * 1.001
    assert two["sched.par.join_wait_ms"] > 0  # main waited in pthread_join
    svg = (tmp_path / "results/ss/plots/stack.svg").read_text()
    assert "unexplained (remainder)" in svg and ("no PMU" in svg or "PMU counters" in svg)
    assert "stroke-dasharray" in svg  # the remainder outlined, whatever its sign
    from perfsnake.campaign import load_campaign
    from perfsnake.stages.tables import plot_caption

    campaign = load_campaign(camp)
    assert "by threads (x): per thread count N, a bar of height N" in plot_caption(campaign, campaign.plots[0])
