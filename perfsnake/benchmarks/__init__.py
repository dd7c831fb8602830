"""The benchmark catalog: every benchmark kind, registered once.

Every catalog has the same face (benchmarks, instruments, platforms,
importers): `CATALOG`, name -> what makes one; `names()`; and
`create(spec, origin, key)`, one made from a campaign's already
schema-checked entry, a CampaignError naming `origin` and `key` otherwise.
A new benchmark is a module here and one line in `BUILTINS` (or, when a
campaign defines it inline, in `CATALOG`); tests/test_registries.py checks the
schema's and the docs' name lists against them.
"""

from __future__ import annotations

from collections.abc import Mapping

from perfsnake.benchmarks.base import Benchmark
from perfsnake.benchmarks.command import CommandBenchmark
from perfsnake.benchmarks.cyclictest import CyclictestBenchmark
from perfsnake.benchmarks.fio import FioBenchmark
from perfsnake.benchmarks.heater import HeaterBenchmark
from perfsnake.benchmarks.imported import ImportedBenchmark
from perfsnake.benchmarks.kyotocabinet import KyotoCabinetBenchmark
from perfsnake.benchmarks.leveldb import LevelDBBenchmark
from perfsnake.benchmarks.lmbench import LmbenchBenchmark
from perfsnake.benchmarks.mariadb import MariadbBenchmark
from perfsnake.benchmarks.memcached import MemcachedBenchmark
from perfsnake.benchmarks.postgresql import PostgresqlBenchmark
from perfsnake.benchmarks.redis import RedisBenchmark
from perfsnake.benchmarks.rocksdb import RocksDBBenchmark
from perfsnake.benchmarks.server import ServerTool
from perfsnake.benchmarks.stress_ng import StressNgBenchmark
from perfsnake.benchmarks.sysbench import SysbenchBenchmark
from perfsnake.errors import CampaignError

#: The built-in benchmarks: a campaign may name one alone (`benchmark: heater`).
BUILTINS: dict[str, type[Benchmark]] = {
    "cyclictest": CyclictestBenchmark,
    "fio": FioBenchmark,
    "heater": HeaterBenchmark,
    "kyotocabinet": KyotoCabinetBenchmark,
    "leveldb": LevelDBBenchmark,
    "lmbench": LmbenchBenchmark,
    "mariadb": MariadbBenchmark,
    "memcached": MemcachedBenchmark,
    "postgresql": PostgresqlBenchmark,
    "redis": RedisBenchmark,
    "rocksdb": RocksDBBenchmark,
    "stress_ng": StressNgBenchmark,
    "sysbench": SysbenchBenchmark,
}

#: The benchmark catalog: every `benchmark.type`, the built-ins and those a
#: campaign defines inline.
CATALOG: dict[str, type[Benchmark]] = {**BUILTINS, "command": CommandBenchmark, "imported": ImportedBenchmark}


def names() -> list[str]:
    """Every benchmark type, in the catalog's order."""
    return list(CATALOG)


def create(spec: str | Mapping[str, object], origin: str, key: str = "benchmark") -> Benchmark:
    """The benchmark a campaign names (already schema-checked): a built-in's name, or a mapping with a type."""
    if isinstance(spec, str):
        return BUILTINS[spec]({"type": spec}, origin)
    kind = CATALOG[str(spec["type"])]
    if "server" in spec and not issubclass(kind, ServerTool):
        servers = ", ".join(n for n, k in BUILTINS.items() if issubclass(k, ServerTool))
        raise CampaignError(origin, f"{key}.server", f"{spec['type']} starts no server (the servers: {servers})")
    return kind(spec, origin)


def make_benchmark(spec: str | Mapping[str, object], source: str) -> Benchmark:
    """`create` under the name perfsnake.campaign imports."""
    return create(spec, source)
