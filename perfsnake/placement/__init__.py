"""Thread placement from prior work: AsymSched, SAM and SAS.

    model     the inputs (Topology, ThreadSample) and the output (Decision), typed
    policies  each policy's decision rule, a pure function of its inputs
    needs     what each policy needs of the machine, and why this one cannot run it
    daemon    the runtime: per-thread counters sampled with perf, the policy applied
              with sched_setaffinity, every decision logged in the run directory

The Placement hook (perfsnake.instruments.hooks) runs psplace for the simple
policies (normal, close, far, round_robin) and the daemon for these three.
"""
