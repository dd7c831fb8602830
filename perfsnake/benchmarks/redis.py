"""Redis (Debian 7.0): `redis-server` loaded by `redis-benchmark`.

Each run starts its own server (perfsnake.benchmarks.server): no
persistence, listening only on a Unix socket in a private directory; ready
when it answers PING; shut down after the client.

Variables: `tests` (redis-benchmark `-t`, e.g. `set,get`), `clients` (`-c`),
`requests` (`-n`), `pipeline` (`-P`), `data_size` (`-d`, bytes), and the
server's `io_threads` and `maxmemory` (e.g. `256mb`; empty: no limit).
Metrics per test (lower case): `<test>_rps` (requests/s) and
`<test>_avg_ms`, `_p50_ms`, `_p95_ms`, `_p99_ms`, `_max_ms` (latency).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping

from perfsnake.benchmarks.server import ServerTool, words
from perfsnake.escape import value_text

#: The tests redis-benchmark knows (`-t`).
TESTS = ("ping_inline", "ping_mbulk", "set", "get", "incr", "lpush", "rpush", "lpop", "rpop", "sadd", "hset",
         "spop", "zadd", "zpopmin", "lrange_100", "lrange_300", "lrange_500", "lrange_600", "mset")  # fmt: skip
_COLUMNS = {"rps": "rps", "avg_latency_ms": "avg_ms", "p50_latency_ms": "p50_ms", "p95_latency_ms": "p95_ms",
            "p99_latency_ms": "p99_ms", "max_latency_ms": "max_ms"}  # fmt: skip
_MAXMEMORY = re.compile(r"^([0-9]+(?:[kmg]b?)?)?$", re.I)


class RedisBenchmark(ServerTool):
    name = "redis"
    executable = "redis-benchmark"
    package = "redis-tools"
    run_defaults = {"tests": "set,get", "clients": 50, "requests": 100000, "pipeline": 1, "data_size": 64,
                    "io_threads": 1, "maxmemory": ""}  # fmt: skip
    server_variables = ("io_threads", "maxmemory")
    kinds = {"clients": "int", "requests": "int", "pipeline": "int", "data_size": "int", "io_threads": "int"}
    metrics = tuple(f"{t}_{m}" for t in ("set", "get") for m in _COLUMNS.values())
    declared_units = {f"{t}_rps": "requests/s" for t in TESTS}

    def check_record(self, p: Mapping[str, object]) -> None:
        self.require("redis-server", "redis-server")
        self.require("redis-cli", "redis-tools")
        tests = [t.strip() for t in value_text(p["tests"]).split(",")]
        unknown = [t for t in tests if t not in TESTS]
        if unknown or not tests:
            raise self.fail("variables.tests", f"{unknown[0] if unknown else ''!r} is not a redis-benchmark test "
                                               f"(tests: {', '.join(TESTS)})")  # fmt: skip
        if not _MAXMEMORY.match(value_text(p["maxmemory"])):
            raise self.fail("variables.maxmemory", f"{value_text(p['maxmemory'])!r} is not a size such as 256mb")

    def server_commands(self, p: dict[str, object]) -> tuple[str, str, str, str]:
        sock = "$dir/redis.sock"
        limit = ["--maxmemory", value_text(p["maxmemory"])] if value_text(p["maxmemory"]) else []
        start = words("redis-server", "--port", 0, "--unixsocket", sock, "--unixsocketperm", 700, "--dir", "$dir",
                      "--save", "", "--appendonly", "no", "--io-threads", value_text(p["io_threads"]), *limit)  # fmt: skip
        ready = words("redis-cli", "-s", sock, "ping") + " | grep -q PONG"
        client = words("redis-benchmark", "-s", sock, "-t", value_text(p["tests"]), "-c", value_text(p["clients"]),
                       "-n", value_text(p["requests"]), "-P", value_text(p["pipeline"]), "-d", value_text(p["data_size"]),
                       "--csv")  # fmt: skip
        return start, ready, client, words("redis-cli", "-s", sock, "shutdown", "nosave")

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        rows = list(csv.DictReader(io.StringIO(stdout[stdout.find('"test"') :]))) if '"test"' in stdout else []
        if not rows:
            raise ValueError('no CSV table from redis-benchmark (its header line "test","rps",... is missing)')
        out: dict[str, object] = {}
        for row in rows:
            test = re.sub(r"\W+", "_", row["test"].split()[0]).lower()
            for column, suffix in _COLUMNS.items():
                try:
                    out[f"{test}_{suffix}"] = float(row[column])
                except (KeyError, TypeError, ValueError):
                    raise ValueError(f"redis-benchmark's row {row['test']!r} has no number in {column!r}") from None
        return out
