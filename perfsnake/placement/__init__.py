"""Thread placement from prior work: AsymSched, SAM and SAS.

    model     the inputs (Topology, ThreadSample) and the output (Decision), typed
    policies  each policy's decision rule, a pure function of its inputs
    needs     what each policy needs of the machine, and why this one cannot run it
    daemon    the runtime: per-thread counters sampled with perf, the policy applied
              with sched_setaffinity, every decision logged in the run directory

The Placement hook (perfsnake.instruments.hooks) runs psplace for the simple
policies (normal, close, far, round_robin) and the daemon for these three.
"""

#: Process names of a run's own tools (the wrappers and tracers that start or
#: watch its program) and of the shells that start it: never the
#: application's threads. Placement (psplace, the daemon) leaves them where
#: they are and gives them no slot; the scheduler breakdown leaves them out
#: of the application (perfsnake.instruments.sched).
RUN_TOOLS = frozenset({"perf", "perf-exec", "psrun", "psplace", "strace", "ltrace", "valgrind", "bpftrace", "taskset",
                       "numactl", "nice", "env", "time"})  # fmt: skip
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
OBSERVERS = RUN_TOOLS | SHELLS
