"""The decision rules of three placement policies from prior work, each a
pure function from a Topology and one interval's ThreadSamples to a Decision.

- AsymSched (Lepers, Quema, Fedorova, USENIX ATC 2015): threads that share
  data form clusters; clusters are placed on sets of NUMA nodes so that the
  bandwidth they get (their nodes' memory controllers and the links among
  those nodes), weighted by each cluster's memory traffic, is the largest:
  on an asymmetric interconnect the heavy cluster gets the well-connected
  nodes, whatever the hop count.
- SAM (Srikanthan, Dwarkadas, Shen, USENIX ATC 2015): counters tell data
  sharing (coherence traffic: loads served by another socket's cache) from
  resource contention (memory bandwidth); a process's sharing threads are
  consolidated on one node, bandwidth-heavy threads are spread so the nodes'
  memory traffic is balanced, the rest balance the load.
- SAS, thread clustering (Tam, Azimi, Stumm, EuroSys 2007): each thread's
  sampled remote-cache accesses per memory region are its sharing signature;
  threads with similar signatures form a cluster and each cluster moves to
  one shared-cache domain (chip); threads that share little are left to the
  scheduler.

What is simplified against the papers is in docs/instruments.md (placement).
Each function runs on any topology: whether this machine can feed it is
perfsnake.placement.needs's question.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence

from perfsnake.placement.model import DEFAULT_THRESHOLDS, Decision, ThreadSample, Thresholds, Topology

#: Enumerating every split of the nodes among the clusters (AsymSched's
#: exhaustive search) is cheap up to this many nodes; beyond, a greedy one.
EXHAUSTIVE_NODES = 8


# ---- shared pieces ------------------------------------------------------------------------------


def capacities(sizes: Sequence[int], threads: int) -> list[int]:
    """Threads each unit (node, domain) of `sizes` CPUs may take: its CPUs,
    or, with more threads than CPUs, its share of the threads rounded up."""
    total = sum(sizes)
    if threads <= total:
        return list(sizes)
    return [math.ceil(threads * size / total) for size in sizes]


def cosine(a: dict[int, float] | Counter[int], b: dict[int, float] | Counter[int]) -> float:
    dot = sum(v * b.get(k, 0.0) for k, v in a.items())
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


def clusters_by_signature(samples: Sequence[ThreadSample], similarity: float) -> list[list[ThreadSample]]:
    """One pass, as Tam et al.: threads in order of decreasing sampled
    sharing join the first cluster whose summed signature is similar enough
    (cosine >= similarity), else start one. Threads without a signature are
    clusters of their own."""
    clusters: list[tuple[list[ThreadSample], Counter[int]]] = []
    alone: list[list[ThreadSample]] = []
    for sample in sorted(samples, key=lambda s: (-sum(s.signature.values()), s.tid)):
        if not any(sample.signature.values()):
            alone.append([sample])
            continue
        for members, centroid in clusters:
            if cosine(dict(sample.signature), centroid) >= similarity:
                members.append(sample)
                centroid.update(dict(sample.signature))
                break
        else:
            clusters.append(([sample], Counter(dict(sample.signature))))
    return [members for members, _ in clusters] + alone


def _fill(
    groups: Sequence[Sequence[ThreadSample]],
    units: Sequence[Sequence[int]],
    unit_of: Callable[[int], int | None],
    cap: list[int],
) -> dict[int, int]:
    """Each group whole onto the unit (node or domain) with the most free
    room, largest group first; a group larger than the room left is split
    over the fewest units. Ties: the unit where most of the group runs now,
    then the lowest. Returns thread -> unit."""
    free = list(cap)
    where: dict[int, int] = {}
    for group in sorted(groups, key=lambda g: (-len(g), min(s.tid for s in g))):
        left = sorted(group, key=lambda s: s.tid)
        while left:
            now = Counter(unit_of(s.cpu) for s in left)
            unit = max(range(len(units)), key=lambda u: (free[u] > 0, free[u], now[u], -u))
            take = left[: max(free[unit], 1)] if free[unit] > 0 else left
            for sample in take:
                where[sample.tid] = unit
            free[unit] -= len(take)
            left = left[len(take) :]
    return where


def _decision(
    policy: str, units: Sequence[Sequence[int]], where: dict[int, int], groups: Sequence[Sequence[ThreadSample]],
    reason: str, everywhere: Sequence[int] = (), all_cpus: Sequence[int] = (),
) -> Decision:  # fmt: skip
    cpus = {tid: frozenset(units[unit]) for tid, unit in where.items()}
    cpus.update({tid: frozenset(all_cpus) for tid in everywhere})
    return Decision(policy, cpus, tuple(sorted(tuple(sorted(s.tid for s in g)) for g in groups)), reason)


def _rate(value: float) -> str:
    return f"{value:.3g}/s"


# ---- AsymSched ----------------------------------------------------------------------------------


def set_bandwidth(topology: Topology, nodes: Sequence[int]) -> float:
    """What a cluster on these nodes can draw: their memory controllers and
    the links among them (its memory is spread over them with it)."""
    bw = topology.bandwidth
    return sum(bw[i][i] for i in nodes) + sum(bw[i][j] for k, i in enumerate(nodes) for j in nodes[k + 1 :])


def _surjections(n: int, k: int) -> Iterator[tuple[int, ...]]:
    """Every map of n nodes onto k groups (each group gets a node)."""

    def extend(prefix: list[int], used: int) -> Iterator[tuple[int, ...]]:
        left = n - len(prefix)
        if left == 0:
            if used == (1 << k) - 1:
                yield tuple(prefix)
            return
        if bin(used).count("1") + left < k:
            return
        for g in range(k):
            prefix.append(g)
            yield from extend(prefix, used | (1 << g))
            prefix.pop()

    yield from extend([], 0)


def _bins(clusters: list[list[ThreadSample]], n: int, room: int) -> list[list[ThreadSample]]:
    """At most n groups: with more clusters than nodes, the clusters, heaviest
    first, join the group with the least memory traffic so far (and the
    fewest threads) that still fits a node (`room` threads), so
    bandwidth-heavy clusters end up apart."""
    if len(clusters) <= n:
        return clusters
    groups: list[list[ThreadSample]] = [[] for _ in range(n)]
    for cluster in sorted(clusters, key=lambda c: (-sum(s.dram for s in c), -len(c), min(s.tid for s in c))):
        fits = [g for g in range(n) if len(groups[g]) + len(cluster) <= room] or list(range(n))
        target = min(fits, key=lambda g: (sum(s.dram for s in groups[g]), len(groups[g]), g))
        groups[target].extend(cluster)
    return [g for g in groups if g]


def _greedy_sets(topology: Topology, groups: list[list[ThreadSample]], cap: list[int]) -> list[list[int]]:
    """Beyond EXHAUSTIVE_NODES: the heaviest group first takes as many free
    nodes as its threads need (leaving one for each group after it),
    starting from the free pair (or node) with the most bandwidth and adding
    the free node best linked to its set; nodes left over then join the
    groups, heaviest first, each the free node best linked to its set."""
    bw = topology.bandwidth
    free = set(range(len(topology.nodes)))
    order = sorted(range(len(groups)), key=lambda g: (-sum(s.dram for s in groups[g]), g))
    sets: list[list[int]] = [[] for _ in groups]
    room = max(cap)

    def grow(g: int) -> None:
        pick = max(free, key=lambda i: (bw[i][i] + sum(bw[i][j] for j in sets[g]), -i))
        sets[g].append(pick)
        free.discard(pick)

    for rank, g in enumerate(order):
        need = min(max(1, math.ceil(len(groups[g]) / room)), len(free) - (len(order) - rank - 1))
        if need >= 2:
            pair = max(((i, j) for i in free for j in free if i < j),
                       key=lambda p: (set_bandwidth(topology, list(p)), -p[0], -p[1]))  # fmt: skip
            sets[g] += list(pair)
            free.difference_update(pair)
        while len(sets[g]) < need:
            grow(g)
    for k in range(len(free)):
        grow(order[k % len(order)])
    return [sorted(s) for s in sets]


def asymsched(
    topology: Topology, samples: Sequence[ThreadSample], thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> Decision:
    """Clusters of sharing threads on the node sets that maximise the
    bandwidth each gets weighted by its memory traffic."""
    if not samples:
        return Decision("asymsched", {}, (), "asymsched: no threads")
    n = len(topology.nodes)
    cap = capacities([len(node) for node in topology.nodes], len(samples))
    groups = _bins(clusters_by_signature(samples, thresholds.similarity), n, max(cap))
    traffic = [sum(s.dram for s in g) for g in groups]
    now = [Counter(topology.node_of(s.cpu) for s in g) for g in groups]

    def key(sets: list[list[int]]) -> tuple[int, float, int]:
        # Threads beyond their nodes' room first (fewest), then the score,
        # then, of equal ones, the placement that moves the fewest threads.
        over = sum(max(0, len(g) - sum(cap[i] for i in nodes)) for g, nodes in zip(groups, sets))
        score = sum(t * set_bandwidth(topology, nodes) for t, nodes in zip(traffic, sets))
        stay = sum(now[g][i] for g, nodes in enumerate(sets) for i in nodes)
        return -over, score, stay

    best: list[list[int]] | None = None
    if n <= EXHAUSTIVE_NODES:
        best_key: tuple[int, float, int] | None = None
        for mapping in _surjections(n, len(groups)):
            sets = [[i for i in range(n) if mapping[i] == g] for g in range(len(groups))]
            k = key(sets)
            if best_key is None or k > best_key:
                best, best_key = sets, k
    if best is None:
        best = _greedy_sets(topology, groups, cap)
    # Within its set, a group's threads, heaviest first, each to its least
    # loaded node: a cluster spread over nodes spreads its traffic.
    where: dict[int, int] = {}
    load = [0] * n
    for group, nodes in zip(groups, best):
        ring = sorted(nodes, key=lambda i: (-topology.bandwidth[i][i], i))
        for sample in sorted(group, key=lambda s: (-s.dram, s.tid)):
            node = min(ring, key=lambda i: (load[i] >= cap[i], load[i], ring.index(i)))
            where[sample.tid] = node
            load[node] += 1
    parts = [
        f"{len(g)} threads ({_rate(t)} DRAM) on node{'s' if len(s) > 1 else ''} "
        f"{','.join(str(topology.node_ids[i]) for i in s)} ({set_bandwidth(topology, s):g} GB/s)"
        for g, t, s in zip(groups, traffic, best)
    ]
    return _decision("asymsched", topology.nodes, where, groups, "asymsched: " + "; ".join(parts))


# ---- SAM ----------------------------------------------------------------------------------------


def sam(topology: Topology, samples: Sequence[ThreadSample], thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Decision:
    """Sharing threads of a process together on one node; bandwidth-heavy
    threads spread by memory traffic; the rest balance the load."""
    if not samples:
        return Decision("sam", {}, (), "sam: no threads")
    n = len(topology.nodes)
    cap = capacities([len(node) for node in topology.nodes], len(samples))
    sharing = [s for s in samples if s.remote_cache >= thresholds.sharing_rate]
    contending = [
        s for s in samples if s.remote_cache < thresholds.sharing_rate and s.dram >= thresholds.bandwidth_rate
    ]
    placed = {s.tid for s in sharing + contending}
    rest = [s for s in samples if s.tid not in placed]
    by_process: dict[int, list[ThreadSample]] = {}
    for s in sharing:
        by_process.setdefault(s.pid, []).append(s)
    groups = list(by_process.values())
    where = _fill(groups, topology.nodes, topology.node_of, cap)
    load = Counter(where.values())
    traffic = [sum(s.dram for s in samples if where.get(s.tid) == i) for i in range(n)]
    for sample in sorted(contending, key=lambda s: (-s.dram, s.tid)):
        here = topology.node_of(sample.cpu)
        node = min(range(n), key=lambda i: (load[i] >= cap[i], traffic[i], load[i], i != here, i))
        where[sample.tid] = node
        load[node] += 1
        traffic[node] += sample.dram
    for sample in sorted(rest, key=lambda s: s.tid):
        here = topology.node_of(sample.cpu)
        node = max(range(n), key=lambda i: (cap[i] - load[i], i == here, -i))
        where[sample.tid] = node
        load[node] += 1
    reason = (
        f"sam: {len(sharing)} sharing threads in {len(groups)} process group(s) consolidated, "
        f"{len(contending)} bandwidth-heavy spread (node DRAM {', '.join(_rate(t) for t in traffic)}), "
        f"{len(rest)} others balanced"
    )
    return _decision("sam", topology.nodes, where, groups, reason)


# ---- SAS (thread clustering) --------------------------------------------------------------------


def sas(topology: Topology, samples: Sequence[ThreadSample], thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Decision:
    """Clusters of similar sharing signatures, each onto one cache domain;
    threads that share little stay on every CPU (the scheduler's)."""
    if not samples:
        return Decision("sas", {}, (), "sas: no threads")
    active = [s for s in samples if s.remote_cache >= thresholds.sharing_rate and any(s.signature.values())]
    idle = sorted({s.tid for s in samples} - {s.tid for s in active})
    clusters = clusters_by_signature(active, thresholds.similarity)
    cap = capacities([len(d) for d in topology.domains], len(active))
    where = _fill(clusters, topology.domains, topology.domain_of, cap)
    sizes = ", ".join(str(len(c)) for c in clusters) or "none"
    reason = f"sas: {len(active)} sharing threads in clusters of {sizes} over {len(topology.domains)} cache domains; {len(idle)} left to the scheduler"  # fmt: skip
    return _decision("sas", topology.domains, where, clusters, reason, idle, topology.cpus)


#: The policies by the name a campaign's `placement` variable gives them.
POLICIES: dict[str, Callable[[Topology, Sequence[ThreadSample], Thresholds], Decision]] = {
    "asymsched": asymsched,
    "sam": sam,
    "sas": sas,
}
