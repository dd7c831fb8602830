"""This machine as the placement policies see it: what each policy needs of
it (and, in one line, what it lacks), and its Topology.

The facts come from perfsnake.machine.capabilities (PMU, perf permission,
NUMA nodes, cache domains, the firmware's distance table).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perfsnake.machine import capabilities
from perfsnake.placement.model import Topology


@dataclass(frozen=True)
class Needs:
    counters: str  # what the PMU must count per thread
    numa: bool = False  # more than one NUMA node
    domains: bool = False  # more than one shared-cache domain


NEEDS = {
    "asymsched": Needs("local and remote DRAM counters, address sampling", numa=True),
    "sam": Needs("remote-cache and DRAM counters", numa=True),
    "sas": Needs("remote-cache address sampling", domains=True),
}


def problem(policy: str) -> str | None:
    """Why this machine cannot run `policy`, in one line (None: it can, or
    the policy needs nothing of it)."""
    needs = NEEDS.get(policy)
    if needs is None:
        return None
    wanted = ["a hardware PMU"]  # (its counters: NEEDS, README)
    lacks = [] if capabilities.hardware_pmu() else ["no hardware PMU"]
    nodes = len(capabilities.numa_nodes())
    domains = len(capabilities.cache_domains())
    if needs.numa:
        wanted.append("more than one NUMA node")
        if nodes < 2:
            lacks.append(f"{nodes} NUMA node")
    if needs.domains:
        wanted.append("more than one shared-cache domain")
        if domains < 2:
            lacks.append(f"{domains} shared-cache domain")
    perf = capabilities.sampling_problem()
    if perf:
        lacks.append(perf)
    if not lacks:
        return None
    return f"placement policy {policy} needs {' and '.join(wanted)}; this machine has {' and '.join(lacks)}"


def topology(bandwidth: Sequence[Sequence[float]] | None = None) -> Topology:
    """This machine's Topology. Link bandwidths: `bandwidth` (GB/s, measured
    by the user, one row per node in node order) or, without it, relative
    figures from the distance table (100 / distance: 10 local, 5 at
    distance 20), which rank links the way the firmware does."""
    nodes = capabilities.numa_nodes()
    ids = sorted(nodes)
    if bandwidth is None:
        distances = capabilities.node_distances()
        matrix = tuple(tuple(100.0 / max(d, 1) for d in distances[i]) for i in ids)
        # The table need not be symmetric; a link's figure is its slower direction.
        matrix = tuple(tuple(min(matrix[a][b], matrix[b][a]) for b in range(len(ids))) for a in range(len(ids)))
    else:
        if len(bandwidth) != len(ids):
            raise ValueError(f"the bandwidth matrix has {len(bandwidth)} rows, this machine {len(ids)} NUMA nodes")
        matrix = tuple(tuple(float(v) for v in row) for row in bandwidth)
    return Topology(tuple(nodes[i] for i in ids), capabilities.cache_domains(), matrix, tuple(ids))
