"""The benchmark catalog: built-in benchmarks and the generic command one."""

from __future__ import annotations

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


def make_benchmark(spec: str | dict, source: str) -> Benchmark:
    """Instantiate the benchmark a campaign names (already schema-checked)."""
    if isinstance(spec, str):
        return BUILTINS[spec]({"type": spec}, source)
    if spec["type"] == "command":
        return CommandBenchmark(spec, source)
    if spec["type"] == "imported":
        return ImportedBenchmark(spec, source)
    kind = BUILTINS[spec["type"]]
    if "server" in spec and not issubclass(kind, ServerTool):
        servers = ", ".join(n for n, k in BUILTINS.items() if issubclass(k, ServerTool))
        raise CampaignError(source, "benchmark.server", f"{spec['type']} starts no server (the servers: {servers})")
    return kind(spec, source)
