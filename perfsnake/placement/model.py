"""What a placement policy reads (the machine's topology, per-thread counter
samples) and what it decides (a CPU set per thread), as typed values.

Rates are per second of the sampling interval, so samples of intervals of
different lengths compare.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Topology:
    """NUMA nodes, shared-cache domains and the interconnect's bandwidths.

    `nodes[i]` are the CPUs of the i-th node (`node_ids[i]` is the kernel's
    number for it); `domains` are the sets of CPUs that share a last-level
    cache (a chip, a CCX); `bandwidth[i][j]` (GB/s) is the link between
    nodes i and j (0: no direct link) and `bandwidth[i][i]` node i's own
    memory controller.
    """

    nodes: tuple[tuple[int, ...], ...]
    domains: tuple[tuple[int, ...], ...]
    bandwidth: tuple[tuple[float, ...], ...]
    node_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.nodes or any(not cpus for cpus in self.nodes):
            raise ValueError("a topology needs at least one node, each with CPUs")
        cpus = [c for node in self.nodes for c in node]
        if len(cpus) != len(set(cpus)):
            raise ValueError("a CPU belongs to two nodes")
        domain_cpus = [c for domain in self.domains for c in domain]
        if sorted(domain_cpus) != sorted(cpus) or any(not d for d in self.domains):
            raise ValueError("the cache domains must hold every CPU of the nodes exactly once")
        n = len(self.nodes)
        if len(self.bandwidth) != n or any(len(row) != n for row in self.bandwidth):
            raise ValueError(f"the bandwidth matrix must be {n} x {n} (one row and column per node)")
        for i in range(n):
            for j in range(n):
                value = self.bandwidth[i][j]
                if not math.isfinite(value) or value < 0 or value != self.bandwidth[j][i]:
                    raise ValueError(f"bandwidth[{i}][{j}] must be a finite number >= 0 equal to bandwidth[{j}][{i}]")
        if self.node_ids and len(self.node_ids) != n:
            raise ValueError(f"node_ids names {len(self.node_ids)} nodes, the topology has {n}")
        if not self.node_ids:
            object.__setattr__(self, "node_ids", tuple(range(n)))

    @property
    def cpus(self) -> tuple[int, ...]:
        return tuple(sorted(c for node in self.nodes for c in node))

    def node_of(self, cpu: int) -> int | None:
        """The position in `nodes` of the node holding `cpu` (None: no such CPU)."""
        return next((i for i, node in enumerate(self.nodes) if cpu in node), None)

    def domain_of(self, cpu: int) -> int | None:
        return next((i for i, domain in enumerate(self.domains) if cpu in domain), None)


@dataclass(frozen=True)
class ThreadSample:
    """One thread's counters over one sampling interval.

    `local_dram` / `remote_dram`: its loads served by the DRAM of its own
    node / of another node; `remote_cache`: its loads served by a cache of
    another domain (coherence traffic: the line was modified or held there);
    `signature`: sampled remote-cache accesses per memory region (the
    sampled data address divided by the region size), which tells with whom
    a thread shares.
    """

    tid: int
    pid: int
    cpu: int
    local_dram: float = 0.0
    remote_dram: float = 0.0
    remote_cache: float = 0.0
    signature: Mapping[int, float] = field(default_factory=dict)

    @property
    def dram(self) -> float:
        """Its memory traffic: DRAM accesses per second wherever served."""
        return self.local_dram + self.remote_dram


@dataclass(frozen=True)
class Thresholds:
    """The rules' knobs (ours: the papers tune theirs per machine)."""

    #: cosine of two signatures (or a signature and a cluster's) above which two threads share
    similarity: float = 0.5
    #: remote-cache accesses per second above which a thread shares data across domains
    sharing_rate: float = 1e5
    #: DRAM accesses per second above which a thread contends for memory bandwidth (1e7 lines = 640 MB/s)
    bandwidth_rate: float = 1e7


@dataclass(frozen=True)
class Decision:
    """A policy's answer: the CPUs each thread may run on, the groups of
    threads it keeps together, and one line saying why."""

    policy: str
    cpus: Mapping[int, frozenset[int]]
    groups: tuple[tuple[int, ...], ...]
    reason: str


#: The knobs' defaults (one shared value: Thresholds is frozen).
DEFAULT_THRESHOLDS = Thresholds()
