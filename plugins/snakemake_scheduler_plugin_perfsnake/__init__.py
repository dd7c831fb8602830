"""Snakemake scheduler plugin `perfsnake`: benchmark runs in a chosen order.

Snakemake does not order independent jobs, so a campaign's runs would be
executed in whatever order its scheduler happens to pick. The workflow sets
ORDER_OF_OUTPUT, which gives a run job's position from its output path
(computed from the campaign's `order`: interleaved, grouped or random with a
seed); among the selectable jobs holding the benchmark lock, this scheduler
starts the one with the lowest position, and fills the remaining capacity
with other jobs (builds, analysis) by priority, like Snakemake's greedy
scheduler. A job's position is looked up once and cached, so choosing among
N waiting runs costs one dictionary look-up each.

Installed into the virtual environment by `make setup` (a .pth file), used
with `--scheduler perfsnake` (set in profiles/default).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from snakemake_interface_scheduler_plugins.base import SchedulerBase
from snakemake_interface_scheduler_plugins.interfaces.jobs import JobSchedulerInterface

LOCK = "bench_lock"
#: a fleet host's lock resources: fleet_<host> (perfsnake.planning.fleet_lock)
FLEET_LOCK = "fleet_"
ORDER = "run_order"  # a resource, for workflows that set one instead

#: set by the workflow (rules/common.smk): output path of a run job -> its position
ORDER_OF_OUTPUT: Callable[[str], int] | None = None


def _fits(job: JobSchedulerInterface, available: Mapping[str, int | str]) -> bool:
    for name, value in job.scheduler_resources.items():
        have = available.get(name)
        if isinstance(value, int) and isinstance(have, int) and value > have:
            return False
    return True


def _take(job: JobSchedulerInterface, available: dict[str, int | str]) -> None:
    for name, value in job.scheduler_resources.items():
        if name in available and isinstance(value, int) and isinstance(available[name], int):
            available[name] = available[name] - value  # type: ignore[operator]


def _position(job: JobSchedulerInterface) -> int:
    output = getattr(job, "output", None)
    if ORDER_OF_OUTPUT is not None and output:
        try:
            return ORDER_OF_OUTPUT(str(next(iter(output))))
        except (KeyError, ValueError, IndexError):
            pass
    return int(job.scheduler_resources.get(ORDER, 0) or 0)


def _lock(job: JobSchedulerInterface) -> str:
    """The benchmark lock a job holds: bench_lock, a fleet host's, or none ("")."""
    for name, value in job.scheduler_resources.items():
        if (name == LOCK or name.startswith(FLEET_LOCK)) and isinstance(value, int) and value > 0:
            return name
    return ""


class Scheduler(SchedulerBase):
    #: job -> (the benchmark lock it holds or "", position): jobs live as long as the DAG
    _keys: dict[JobSchedulerInterface, tuple[str, int]] = {}

    def _key(self, job: JobSchedulerInterface) -> tuple[str, int]:
        key = self._keys.get(job)
        if key is None:
            lock = _lock(job)
            key = self._keys[job] = (lock, _position(job) if lock else 0)
        return key

    def select_jobs(
        self,
        selectable_jobs: Sequence[JobSchedulerInterface],
        remaining_jobs: Sequence[JobSchedulerInterface],
        available_resources: Mapping[str, int | str],
        input_sizes: dict,
    ) -> Sequence[JobSchedulerInterface] | None:
        available = dict(available_resources)
        runs: dict[str, list[JobSchedulerInterface]] = {}  # lock -> the runs that need it
        others: list[JobSchedulerInterface] = []
        for job in selectable_jobs:
            lock = self._key(job)[0]
            if lock:
                runs.setdefault(lock, []).append(job)
            else:
                others.append(job)
        selected: list[JobSchedulerInterface] = []
        for waiting in runs.values():
            # Per lock (this machine's, or each host's of a fleet) only the
            # next run in order may start; a later one never overtakes it.
            first = min(waiting, key=lambda j: (self._key(j)[1], -j.priority))
            if _fits(first, available):
                selected.append(first)
                _take(first, available)
        for job in sorted(others, key=lambda j: -j.priority):
            if _fits(job, available):
                selected.append(job)
                _take(job, available)
        return selected
