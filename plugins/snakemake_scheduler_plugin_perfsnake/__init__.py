"""Snakemake scheduler plugin `perfsnake`: benchmark runs in a chosen order.

Snakemake does not order independent jobs, so a campaign's runs would be
executed in whatever order its scheduler happens to pick. Each run job
carries a `run_order` resource (computed by the workflow from the campaign's
`order`: interleaved, grouped or random with a seed); among the selectable
jobs holding the benchmark lock, this scheduler starts the one with the
lowest run_order, and fills the remaining capacity with other jobs (builds,
analysis) by priority, like Snakemake's greedy scheduler.

Installed into the virtual environment by `make setup` (a .pth file), used
with `--scheduler perfsnake` (set in profiles/default).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from snakemake_interface_scheduler_plugins.base import SchedulerBase
from snakemake_interface_scheduler_plugins.interfaces.jobs import JobSchedulerInterface

LOCK = "bench_lock"
ORDER = "run_order"


def _fits(job: JobSchedulerInterface, available: Mapping[str, int | str]) -> bool:
    for name, value in job.scheduler_resources.items():
        if name in available and isinstance(value, int) and isinstance(available[name], int) and value > available[name]:
            return False
    return True


def _take(job: JobSchedulerInterface, available: dict[str, int | str]) -> None:
    for name, value in job.scheduler_resources.items():
        if name in available and isinstance(value, int) and isinstance(available[name], int):
            available[name] = available[name] - value  # type: ignore[operator]


class Scheduler(SchedulerBase):
    def select_jobs(
        self,
        selectable_jobs: Sequence[JobSchedulerInterface],
        remaining_jobs: Sequence[JobSchedulerInterface],
        available_resources: Mapping[str, int | str],
        input_sizes: dict,
    ) -> Sequence[JobSchedulerInterface] | None:
        available = dict(available_resources)
        runs = [j for j in selectable_jobs if int(j.scheduler_resources.get(LOCK, 0) or 0) > 0]
        others = [j for j in selectable_jobs if int(j.scheduler_resources.get(LOCK, 0) or 0) == 0]
        selected: list[JobSchedulerInterface] = []
        if runs:
            # Only the next run in order may start; a later one never overtakes it.
            first = min(runs, key=lambda j: (int(j.scheduler_resources.get(ORDER, 0) or 0), -j.priority))
            if _fits(first, available):
                selected.append(first)
                _take(first, available)
        for job in sorted(others, key=lambda j: -j.priority):
            if _fits(job, available):
                selected.append(job)
                _take(job, available)
        return selected
