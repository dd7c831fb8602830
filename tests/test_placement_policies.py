"""Placement policies of prior work (perfsnake.placement): AsymSched, SAM and
SAS decide right on traces whose right answer the test builds; the daemon's
input reading (perf's text, /proc) and decision applying (sched_setaffinity)
work on real processes; this machine's refusal is one line, and the ready
scheduler campaigns skip those records in one line instead of failing."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from helpers import ROOT, snakemake, write_campaign

from perfsnake.campaign import load_campaign
from perfsnake.errors import CampaignError
from perfsnake.instruments.base import Context
from perfsnake.instruments.hooks import Placement
from perfsnake.layout import c_source
from perfsnake.machine import capabilities
from perfsnake.machine.sysinfo import online_cpus
from perfsnake.placement import daemon, host
from perfsnake.placement.model import ThreadSample, Thresholds, Topology
from perfsnake.placement.policies import POLICIES, asymsched, capacities, clusters_by_signature, sam, sas

HEAVY = 5e8  # DRAM accesses per second: bandwidth-bound
LIGHT = 1e5
SHARING = 1e6  # remote cache accesses per second: sharing across domains


def two_nodes(cpus_per_node: int = 2) -> Topology:
    """Two nodes, each its own cache domain (a two-socket machine)."""
    nodes = tuple(tuple(range(i * cpus_per_node, (i + 1) * cpus_per_node)) for i in range(2))
    return Topology(nodes, nodes, ((10.0, 5.0), (5.0, 10.0)))


def asymmetric_four() -> Topology:
    """Four nodes of two CPUs; nodes 0-1 joined by a wide link (10 GB/s), 2-3 by
    a narrower one (4), every other pair by a narrow one (2); one hop each."""
    bw = [[10.0, 10.0, 2.0, 2.0], [10.0, 10.0, 2.0, 2.0], [2.0, 2.0, 10.0, 4.0], [2.0, 2.0, 4.0, 10.0]]
    nodes = tuple((2 * i, 2 * i + 1) for i in range(4))
    return Topology(nodes, nodes, tuple(tuple(r) for r in bw))


def thread(tid: int, cpu: int, pid: int = 1, dram: float = LIGHT, sharing: float = 0.0, regions=()) -> ThreadSample:
    return ThreadSample(tid, pid, cpu, local_dram=dram / 2, remote_dram=dram / 2, remote_cache=sharing,
                        signature={r: 100.0 for r in regions})  # fmt: skip


def node_of(topology: Topology, decision, tid: int) -> int:
    (node,) = {topology.node_of(c) for c in decision.cpus[tid]}
    return node


# ---- the policies on traces with a known answer -------------------------------------------------


def test_sam_co_locates_each_process_s_sharing_pair_and_separates_the_pairs():
    topo = two_nodes()
    # Each pair is split across the nodes now: tids 1, 2 of process 10; 3, 4 of process 20.
    samples = [thread(1, 0, 10, sharing=SHARING), thread(2, 2, 10, sharing=SHARING),
               thread(3, 1, 20, sharing=SHARING), thread(4, 3, 20, sharing=SHARING)]  # fmt: skip
    decision = sam(topo, samples)
    assert node_of(topo, decision, 1) == node_of(topo, decision, 2)
    assert node_of(topo, decision, 3) == node_of(topo, decision, 4)
    assert node_of(topo, decision, 1) != node_of(topo, decision, 3)
    assert decision.cpus[1] == frozenset(topo.nodes[node_of(topo, decision, 1)])  # the node's CPUs
    assert sorted(decision.groups) == [(1, 2), (3, 4)] and decision.reason.startswith("sam: 4 sharing threads")


def test_sam_spreads_bandwidth_heavy_threads_that_do_not_share():
    topo = two_nodes()
    samples = [thread(1, 0, dram=HEAVY), thread(2, 1, dram=HEAVY), thread(3, 0), thread(4, 1)]
    decision = sam(topo, samples)
    assert node_of(topo, decision, 1) != node_of(topo, decision, 2)
    assert Counter(node_of(topo, decision, t) for t in (1, 2, 3, 4)) == {0: 2, 1: 2}  # the rest balance the load
    assert decision.groups == ()  # nothing shares


def test_sas_clusters_by_signature_onto_one_cache_domain_each():
    topo = two_nodes()
    # One process; pair (1, 3) shares regions 100-103, pair (2, 4) regions 200-203;
    # thread 5 shares little: left to the scheduler on every CPU.
    samples = [thread(1, 0, sharing=SHARING, regions=range(100, 104)), thread(2, 1, sharing=SHARING, regions=range(200, 204)),
               thread(3, 2, sharing=SHARING, regions=range(101, 105)), thread(4, 3, sharing=SHARING, regions=range(200, 203)),
               thread(5, 0)]  # fmt: skip
    decision = sas(topo, samples)
    domain = {t: topo.domain_of(min(decision.cpus[t])) for t in (1, 2, 3, 4)}
    assert decision.cpus[1] == frozenset(topo.domains[domain[1]])
    assert domain[1] == domain[3] and domain[2] == domain[4] and domain[1] != domain[2]
    assert decision.cpus[5] == frozenset(topo.cpus)
    assert sorted(decision.groups) == [(1, 3), (2, 4)]


def test_asymsched_gives_the_heavy_cluster_the_well_connected_nodes():
    topo = asymmetric_four()
    heavy = [thread(t, 4 + t % 4, dram=HEAVY, regions=range(10, 14)) for t in range(1, 5)]  # now on nodes 2-3
    light = [thread(t, t % 4, dram=1e7, regions=range(50, 54)) for t in range(5, 9)]  # now on nodes 0-1
    decision = asymsched(topo, heavy + light)
    assert {node_of(topo, decision, t) for t in range(1, 5)} == {0, 1}  # the 10 GB/s link
    assert {node_of(topo, decision, t) for t in range(5, 9)} == {2, 3}
    assert Counter(node_of(topo, decision, t) for t in range(1, 9)) == {0: 2, 1: 2, 2: 2, 3: 2}
    assert "on nodes 0,1 (30 GB/s)" in decision.reason and "on nodes 2,3 (24 GB/s)" in decision.reason
    # Swap the links' widths: the heavy cluster follows the wide link.
    swapped = Topology(topo.nodes, topo.domains, tuple(tuple(row[::-1]) for row in topo.bandwidth[::-1]))
    decision = asymsched(swapped, heavy + light)
    assert {node_of(swapped, decision, t) for t in range(1, 5)} == {2, 3}


def test_asymsched_spreads_bandwidth_heavy_threads_over_the_nodes():
    topo = two_nodes()
    samples = [thread(1, 0, dram=HEAVY), thread(2, 1, dram=HEAVY)]  # both on node 0, sharing nothing
    decision = asymsched(topo, samples)
    assert {node_of(topo, decision, 1), node_of(topo, decision, 2)} == {0, 1}
    # Five independent threads on two nodes: the heavy ones end up apart.
    samples = [thread(1, 0, dram=HEAVY), thread(2, 0, dram=HEAVY), thread(3, 0), thread(4, 0), thread(5, 0)]
    decision = asymsched(topo, samples)
    assert node_of(topo, decision, 1) != node_of(topo, decision, 2)


def test_asymsched_spreads_one_heavy_cluster_over_both_nodes():
    topo = two_nodes()
    samples = [thread(1, 2, dram=HEAVY, regions=[1]), thread(2, 3, dram=HEAVY, regions=[1])]  # one cluster
    decision = asymsched(topo, samples)
    # A cluster of two on two nodes of two CPUs: it takes both nodes (more bandwidth), one thread each.
    assert {node_of(topo, decision, 1), node_of(topo, decision, 2)} == {0, 1}
    assert decision.groups == ((1, 2),)


def test_asymsched_keeps_threads_where_they_are_when_nothing_is_gained():
    topo = two_nodes()
    samples = [thread(1, 3, dram=0.0), thread(2, 0, dram=0.0)]  # no traffic: every placement scores 0
    decision = asymsched(topo, samples)
    assert node_of(topo, decision, 1) == 1 and node_of(topo, decision, 2) == 0


def test_asymsched_beyond_eight_nodes_is_greedy_and_still_follows_the_wide_link():
    n = 10
    bw = [[10.0 if i == j else 2.0 for j in range(n)] for i in range(n)]
    bw[6][7] = bw[7][6] = 12.0  # the one wide link
    nodes = tuple((2 * i, 2 * i + 1) for i in range(n))
    topo = Topology(nodes, nodes, tuple(tuple(r) for r in bw))
    heavy = [thread(t, 0, dram=HEAVY, regions=[1]) for t in range(4)]  # needs two nodes
    light = [thread(t, 0, dram=LIGHT) for t in range(4, 8)]
    decision = asymsched(topo, heavy + light)
    assert {node_of(topo, decision, t) for t in range(4)} >= {6, 7}  # (with a node left over: nodes add bandwidth)
    assert len({node_of(topo, decision, t) for t in range(4, 8)} & {6, 7}) == 0


def test_the_thresholds_the_readme_states():
    assert (Thresholds().similarity, Thresholds().sharing_rate, Thresholds().bandwidth_rate) == (0.5, 1e5, 1e7)


# ---- edge cases -----------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_more_threads_than_cpus_every_thread_placed_and_the_load_balanced(policy):
    topo = two_nodes()
    # Twelve threads on four CPUs: six sharing pairs (a process and a region each), every third bandwidth-heavy.
    samples = [thread(t, t % 4, pid=t // 2, dram=HEAVY if t % 3 == 0 else LIGHT, sharing=SHARING, regions=[t // 2])
               for t in range(12)]  # fmt: skip
    decision = POLICIES[policy](topo, samples, Thresholds())
    assert sorted(decision.cpus) == list(range(12))
    assert all(cpus <= set(topo.cpus) and cpus for cpus in decision.cpus.values())
    load = Counter(node_of(topo, decision, t) for t in range(12))
    assert load == {0: 6, 1: 6}, load  # 12 threads x 2 CPUs / 4 CPUs a node
    assert all(node_of(topo, decision, 2 * p) == node_of(topo, decision, 2 * p + 1) for p in range(6))


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_one_node_everything_on_it_and_no_threads_no_decision(policy):
    cpus = (0, 1, 2, 3)
    topo = Topology((cpus,), (cpus,), ((10.0,),))
    samples = [thread(1, 0, dram=HEAVY, sharing=SHARING, regions=[1]), thread(2, 3, sharing=SHARING, regions=[1])]
    decision = POLICIES[policy](topo, samples, Thresholds())
    assert decision.cpus == {1: frozenset(cpus), 2: frozenset(cpus)}
    empty = POLICIES[policy](topo, [], Thresholds())
    assert empty.cpus == {} and empty.reason == f"{policy}: no threads"


def test_decisions_are_deterministic_and_capacities_scale():
    topo = asymmetric_four()
    samples = [thread(t, t % 8, pid=t % 3, dram=t * 1e6, sharing=SHARING * (t % 2), regions=[t % 3]) for t in range(12)]
    for policy in POLICIES.values():
        assert policy(topo, samples, Thresholds()) == policy(topo, list(reversed(samples)), Thresholds())
    assert capacities([2, 2], 3) == [2, 2] and capacities([2, 2], 10) == [5, 5] and capacities([4, 2], 9) == [6, 3]


def test_signature_clusters_join_by_similarity():
    a = thread(1, 0, regions=[1, 2, 3])
    b = thread(2, 0, regions=[2, 3, 4])  # cosine 2/3 with a
    c = thread(3, 0, regions=[9])
    d = thread(4, 0)  # no signature: alone
    clusters = clusters_by_signature([a, b, c, d], similarity=0.5)
    assert [[s.tid for s in g] for g in clusters] == [[1, 2], [3], [4]]
    assert len(clusters_by_signature([a, b], similarity=0.9)) == 2


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"nodes": ()}, "at least one node"),
        ({"domains": ((0, 1),)}, "cache domains must hold every CPU"),
        ({"bandwidth": ((10.0, 5.0), (4.0, 10.0))}, "bandwidth[0][1] must be"),
        ({"bandwidth": ((10.0,),)}, "must be 2 x 2"),
    ],
)
def test_a_topology_that_cannot_be_is_refused(kwargs, problem):
    base = {"nodes": ((0, 1), (2, 3)), "domains": ((0, 1), (2, 3)), "bandwidth": ((10.0, 5.0), (5.0, 10.0))}
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        Topology(**{**base, **kwargs})


# ---- the daemon's parts ---------------------------------------------------------------------------

#: perf stat --per-thread -x, as perf 6.1 prints it (the command name may hold dashes and commas).
PERF_STAT = """\
db_bench-4242,123456,,mem_load_l3_miss_retired.local_dram,1000000,100.00,,
db_bench-4242,789,,mem_load_l3_miss_retired.remote_dram,1000000,100.00,,
my-tool,x-4243,5000,,mem_load_l3_miss_retired.remote_hitm,1000000,100.00,,
db_bench-4244,<not counted>,,mem_load_l3_miss_retired.local_dram,0,100.00,,
"""


def test_perf_stat_per_thread_is_read_by_role():
    counts = daemon.parse_perf_stat(PERF_STAT, daemon.EVENT_SETS[0])
    assert counts == {4242: {"local_dram": 123456.0, "remote_dram": 789.0}, 4243: {"remote_cache": 5000.0}}
    samples = daemon.samples_of({4242: 1, 4243: 1, 4244: 1, 4245: 1}, counts, {4243: {7: 3.0}},
                                {4242: 0, 4243: 1, 4244: 1, 4245: None}, seconds=0.5)  # fmt: skip
    assert [s.tid for s in samples] == [4242, 4243, 4244]  # 4245 ended
    assert (
        samples[0].dram == (123456 + 789) * 2 and samples[1].remote_cache == 10000 and samples[1].signature == {7: 3.0}
    )
    assert samples[2].dram == 0


def test_perf_script_addresses_become_signatures():
    text = "   4242     7ff5681a8000\n   4242     7ff5681a8fc0\n   4243     7ff5681a9000\n   4243     0\nnoise\n"
    assert daemon.parse_perf_script(text, 12) == {4242: {0x7FF5681A8: 2.0}, 4243: {0x7FF5681A9: 1.0}}


def test_events_are_the_campaign_s_or_the_first_set_perf_knows():
    assert daemon.choose_events(lambda e: True, {"local_dram": "x"}) == {"local_dram": "x"}
    amd = daemon.EVENT_SETS[1]
    assert daemon.choose_events(lambda e: e in amd.values()) == amd
    assert daemon.choose_events(lambda e: False) is None


SPIN = """
import threading, time, mmap
stop = time.monotonic() + 30
def work():
    while time.monotonic() < stop:
        m = mmap.mmap(-1, 1 << 18)
        for i in range(0, 1 << 18, 4096):
            m[i] = 1
        m.close()
threads = [threading.Thread(target=work) for _ in range(2)]
for t in threads:
    t.start()
print("started", flush=True)
for t in threads:
    t.join()
"""


@pytest.fixture
def busy_run(tmp_path):
    """A process with two working threads whose working directory is a run directory."""
    proc = subprocess.Popen([sys.executable, "-c", SPIN], cwd=tmp_path, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline() == "started\n"
    yield tmp_path, proc
    proc.kill()
    proc.wait()


def test_the_run_s_threads_are_found_and_sampled_with_perf(busy_run):
    run_dir, proc = busy_run
    threads = daemon.run_threads(run_dir)
    assert set(threads.values()) == {proc.pid} and len(threads) == 3  # main + two workers
    assert all(daemon.last_cpu(t) in online_cpus() for t in threads)
    if capabilities.sampling_problem():
        pytest.skip(capabilities.sampling_problem())
    # The real perf path, with software events in the roles (this machine has no PMU).
    sampler = daemon.Sampler({"local_dram": "page-faults", "remote_cache": "task-clock", "address": "page-faults"},
                             period=1)  # fmt: skip
    counts, signatures = sampler.sample(list(threads.values()), 0.3)
    workers = [t for t in threads if t != proc.pid]
    assert all(counts[t]["local_dram"] > 0 and counts[t]["remote_cache"] > 0 for t in workers), counts
    assert any(signatures.get(t) for t in workers), signatures
    samples = daemon.samples_of(threads, counts, signatures, {t: daemon.last_cpu(t) for t in threads}, 0.3)
    assert {s.tid for s in samples} == set(threads) and all(s.local_dram > 0 for s in samples if s.tid in workers)


def test_decisions_are_applied_with_sched_setaffinity_and_logged():
    ready, done = threading.Event(), threading.Event()
    tids: list[int] = []

    def park() -> None:
        tids.append(threading.get_native_id())
        ready.set()
        done.wait(60)

    worker = threading.Thread(target=park)
    worker.start()
    try:
        assert ready.wait(30)
        tid = tids[0]
        cpu = online_cpus()[-1]
        topo = Topology(((cpu,),), ((cpu,),), ((10.0,),))
        pinned: dict[int, frozenset[int]] = {}
        sample = ThreadSample(tid, os.getpid(), online_cpus()[0], remote_cache=SHARING, signature={1: 5.0})
        lines = daemon.step("sas", topo, [sample], pinned, 1)
        assert (
            lines[0]
            == "decision 1 sas: 1 sharing threads in clusters of 1 over 1 cache domains; 0 left to the scheduler"
        )
        assert lines[1].startswith(f"tid {tid} policy sas cpus {cpu} at ")
        assert os.sched_getaffinity(tid) == {cpu} and pinned == {tid: frozenset({cpu})}
        assert daemon.step("sas", topo, [sample], pinned, 2)[1:] == []  # unchanged: nothing set again
        gone = ThreadSample(2**22 + 7, 1, cpu, remote_cache=SHARING, signature={1: 1.0})  # no such thread
        (line,) = daemon.step("sas", topo, [gone], pinned, 3)[1:]
        assert line == f"tid {2**22 + 7} policy sas cpus {cpu} error No such process"
    finally:
        done.set()
        worker.join()
    assert daemon.cpu_list(frozenset({0, 1, 2, 5, 7, 8})) == "0-2,5,7-8"


def test_the_daemon_refuses_in_one_line_where_the_machine_lacks_what_the_policy_needs(tmp_path):
    for policy in ("asymsched", "sam", "sas"):
        problem = host.problem(policy)
        if problem is None:
            continue  # this machine can run it
        proc = subprocess.run([sys.executable, "-m", "perfsnake.placement.daemon", "--policy", policy, "--dir", str(tmp_path)],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)  # fmt: skip
        assert proc.returncode == 2 and proc.stderr == f"psplace: {problem}\n"


def test_the_hook_starts_the_daemon_for_the_run(tmp_path, monkeypatch):
    """The hook's command for a counted policy is the daemon's, launched like
    any daemon; here the daemon itself refuses (the test process pretends to
    have a PMU and NUMA so the record loads; the daemon reads the machine)."""
    # The launcher the hook starts daemons with, built here as the workflow's tool rule builds it.
    launcher = tmp_path / "resources/bin/psrun"
    launcher.parent.mkdir(parents=True)
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(launcher), str(c_source("psrun", "psrun.c"))],
                   check=True, timeout=120)  # fmt: skip
    _numa_with_pmu(monkeypatch)
    c = load_campaign(_campaign(tmp_path, variables={"placement": ["sam"]},
                                pre_run_hooks=[{"type": "placement", "sample_ms": 200, "bandwidth": [[10, 5], [5, 10]]}]))  # fmt: skip
    hook = c.instruments.pre[0]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    state = hook.apply(Context({"placement": "sam"}, run_dir, tmp_path), "pre")
    try:
        out = run_dir / "daemon-placement"
        command = (out / "command.sh").read_text()
        assert "-m perfsnake.placement.daemon --policy sam --dir" in command and "--interval-ms 200" in command
        assert "--bandwidth '[[10, 5], [5, 10]]'" in command and state["policy"] == "sam"
        problem = host.problem("sam")
        if problem:
            deadline = time.monotonic() + 60
            while "psplace:" not in ((out / "stderr.txt").read_text() if (out / "stderr.txt").exists() else ""):
                assert time.monotonic() < deadline, "the daemon said nothing"
                time.sleep(0.05)
            assert (out / "stderr.txt").read_text() == f"psplace: {problem}\n"
    finally:
        hook.teardown(Context({"placement": "sam"}, run_dir, tmp_path), state)


# ---- what this machine lacks: one line ----------------------------------------------------------


def _campaign(tmp_path: Path, **extra) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "c", "benchmark": "heater", "pre_run_hooks": ["placement"], **extra}))
    return path


def _no_numa_no_pmu(monkeypatch) -> None:
    monkeypatch.setattr(capabilities, "hardware_pmu", lambda: False)
    monkeypatch.setattr(capabilities, "numa_nodes", lambda: {0: (0, 1)})
    monkeypatch.setattr(capabilities, "cache_domains", lambda: ((0, 1),))


def _numa_with_pmu(monkeypatch) -> None:
    monkeypatch.setattr(capabilities, "hardware_pmu", lambda: True)
    monkeypatch.setattr(capabilities, "numa_nodes", lambda: {0: (0, 1), 1: (2, 3)})
    monkeypatch.setattr(capabilities, "cache_domains", lambda: ((0, 1), (2, 3)))
    monkeypatch.setattr(capabilities, "sampling_problem", lambda: None)


def test_capabilities_prints_the_nodes_and_cache_domains():
    proc = subprocess.run([sys.executable, "-m", "perfsnake", "capabilities"], capture_output=True, text=True, cwd=ROOT,
                          check=True, timeout=120)  # fmt: skip
    assert f"numa_nodes: {len(capabilities.numa_nodes())}\n" in proc.stdout
    assert f"cache_domains: {len(capabilities.cache_domains())}\n" in proc.stdout
    assert all(set(d) <= set(online_cpus()) for d in capabilities.cache_domains())


def test_the_placement_hook_knows_seven_policies():
    assert Placement.POLICIES == ("normal", "close", "far", "round_robin", "asymsched", "sam", "sas")
    assert set(Placement.COUNTED) == set(POLICIES) == set(host.NEEDS)


@pytest.mark.parametrize(
    ("policy", "lacks"),
    [
        ("asymsched", "needs a hardware PMU and more than one NUMA node; this machine has no hardware PMU and 1 NUMA node"),
        ("sam", "needs a hardware PMU and more than one NUMA node; this machine has no hardware PMU and 1 NUMA node"),
        ("sas", "needs a hardware PMU and more than one shared-cache domain; this machine has no hardware PMU and 1 shared-cache domain"),
    ],
)  # fmt: skip
def test_a_policy_this_machine_cannot_run_is_refused_in_one_line(tmp_path, monkeypatch, policy, lacks):
    _no_numa_no_pmu(monkeypatch)
    path = _campaign(tmp_path, pre_run_hooks=[{"type": "placement", "policy": policy}])
    with pytest.raises(CampaignError) as err:
        load_campaign(path)
    assert str(err.value) == f"{path}: pre_run_hooks[0].policy: placement policy {policy} {lacks}"
    # Swept alone, the same refusal (never another policy instead).
    path = _campaign(tmp_path, variables={"placement": [policy]})
    with pytest.raises(CampaignError, match=f"^{path}: pre_run_hooks\\[0\\]: placement policy {policy} needs"):
        load_campaign(path)
    _numa_with_pmu(monkeypatch)  # a machine that has it: no refusal
    assert len(load_campaign(path).records) == 1


@pytest.mark.parametrize("policy", ["asymsched", "sam", "sas"])
def test_perfsnake_validate_here(tmp_path, policy):
    path = _campaign(tmp_path, pre_run_hooks=[{"type": "placement", "policy": policy}])
    proc = subprocess.run([sys.executable, "-m", "perfsnake", "validate", str(path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)  # fmt: skip
    problem = host.problem(policy)
    if problem is None:  # a machine with a PMU and NUMA
        assert proc.returncode == 0, proc.stderr
        return
    assert proc.returncode == 1 and proc.stderr == f"perfsnake: error: {path}: pre_run_hooks[0].policy: {problem}\n"
    assert f"placement policy {policy} needs" in problem and "this machine has" in problem


def test_records_of_a_policy_this_machine_cannot_run_are_skipped_in_one_line(tmp_path, monkeypatch, capsys):
    _no_numa_no_pmu(monkeypatch)
    path = _campaign(tmp_path, variables={"placement": ["normal", "asymsched", "sam", "sas", "far"], "cpu": [0, 1]})
    c = load_campaign(path)
    assert sorted(r.values["placement"] for r in c.records) == ["far", "far", "normal", "normal"]
    assert sorted(c.skipped) == sorted(f"cpu={n}, placement={p}" for p in ("asymsched", "sam", "sas") for n in (0, 1))
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"perfsnake: warning: {path}: pre_run_hooks[0]: 6 of 10 records skipped on this machine: ")
    for policy in ("asymsched", "sam", "sas"):
        assert f"placement policy {policy} needs" in line
    # A command that only reads results skips them too, without a word.
    assert len(load_campaign(path, check_machine=False).records) == 4 and capsys.readouterr().err == ""
    _numa_with_pmu(monkeypatch)
    assert len(load_campaign(path).records) == 10 and capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("option", "problem"),
    [
        ({"bandwidth": [[10, 5], [4, 10]]}, "bandwidth: expected a symmetric square list"),
        ({"bandwidth": [[10, 5]]}, "bandwidth: expected a symmetric square list"),
        ({"events": {"dram": "x"}}, "events: expected a mapping of perf events by role"),
        ({"sample_ms": 1}, "sample_ms: expected an integer >= 10"),
    ],
)
def test_bad_placement_options_are_refused(tmp_path, option, problem):
    path = _campaign(tmp_path, variables={"placement": ["normal"]}, pre_run_hooks=[{"type": "placement", **option}])
    with pytest.raises(CampaignError, match=problem):
        load_campaign(path)


def test_the_ready_scheduler_campaigns_and_figure_4_list_the_three(capsys):
    figure = yaml.safe_load((ROOT / "config/figures/schedulers.yaml").read_text())
    assert set(figure["figures"][0]["pretty"]["placement"]) >= {"asymsched", "sam", "sas"}
    for file in figure["campaigns"]:
        data = yaml.safe_load((ROOT / file).read_text())
        assert data["variables"]["placement"] == list(Placement.POLICIES), file
        campaign = load_campaign(ROOT / file)
        runnable = [p for p in Placement.POLICIES if host.problem(p) is None]
        assert sorted({str(r.values["placement"]) for r in campaign.records}) == sorted(runnable)
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == (0 if len(runnable) == 7 else 1), lines
        if len(runnable) == 4:  # this kind of VM
            assert "pre_run_hooks[0]: 9 of 21 records skipped on this machine: placement policy asymsched" in lines[0]


@pytest.mark.e2e
def test_the_workflow_runs_the_other_records_and_says_which_it_skipped(tmp_path):
    camp = write_campaign(tmp_path, {
        "name": "placed",
        "benchmark": {"type": "command", "command": "echo value=1", "metrics": {"value": r"value=(\S+)"}},
        "variables": {"placement": ["normal", "sam"]},
        "pre_run_hooks": ["placement"], "nb_runs": 1, "timeout_s": 30,
    })  # fmt: skip
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    runs = tmp_path / "results/placed/runs"
    if host.problem("sam") is None:
        pytest.skip("this machine runs sam: nothing is skipped")
    assert (runs / "placement-normal/run-1/status.json").exists() and not (runs / "placement-sam").exists()
    warnings = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "records skipped on this machine" in ln]
    assert warnings and all("1 of 2 records skipped on this machine: placement policy sam needs" in w for w in warnings)
    assert "normal" in (tmp_path / "results/placed/placed.csv").read_text()
