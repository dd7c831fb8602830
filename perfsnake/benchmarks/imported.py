"""Results another tool measured (hyperfine, Google Benchmark, Criterion,
pyperf), brought into a campaign: `benchmark: {type: imported, tool: ...,
files: [...]}`.

Nothing is built or run. The records and the runs come from the files
(`perfsnake.importers`); collect turns each measurement into a run's result,
so aggregation, statistics, comparisons, plots, the report and `perfsnake
compare` treat them as perfsnake's own. `perfsnake import` writes such a
campaign and makes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from perfsnake.benchmarks.base import Benchmark
from perfsnake.importers import Imported, read


class ImportedBenchmark(Benchmark):
    name = "imported"

    def __init__(self, spec: Mapping[str, object], origin: str) -> None:
        super().__init__(spec, origin)
        self.tool = str(spec["tool"])
        self.files = [Path(str(f)) for f in spec["files"]]  # type: ignore[attr-defined]
        # Parsed once, when the campaign is loaded: a bad file is refused
        # before anything runs, and the files are small.
        self.imported: Imported = read(self.tool, self.files, origin)
        self.metrics = tuple(self.imported.metrics)
        self.declared_units = dict(self.imported.units)

    @property
    def key(self) -> str:
        return f"imported-{self.tool}"

    def given_records(self) -> list[tuple[dict[str, object], int]]:
        """The records the files hold, in their order, each with its number of runs."""
        seen: dict[tuple, tuple[dict[str, object], int]] = {}
        for row in self.imported.rows:
            key = tuple(str(row.record[v]) for v in self.imported.variables)
            record, runs = seen.get(key, (row.record, 0))
            seen[key] = (record, runs + 1)
        return list(seen.values())

    def needs_build(self) -> bool:
        return False

    def input_files(self) -> list[str]:
        """What collect reads (editing a file re-imports it)."""
        from perfsnake.importers.criterion import sample_files

        if self.tool != "criterion":
            return [str(f) for f in self.files]
        return [str(s) for f in self.files for s in sample_files(f)] + [
            str(s.with_name("benchmark.json")) for f in self.files for s in sample_files(f)
        ]
