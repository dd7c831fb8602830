"""MariaDB (Debian 10.11): a private server per run loaded by sysbench's OLTP scripts.

Each run (perfsnake.benchmarks.server) creates a data directory
(`mariadb-install-db`, about half a second), starts `mariadbd` without
networking on a Unix socket there, waits until `mariadb-admin ping` answers,
creates sysbench's tables (`prepare`), runs the script for the campaign's
duration and shuts the server down. `--no-defaults` everywhere: nothing of
the machine's own MariaDB configuration leaks in.

Variables: `script` (sysbench's `oltp_read_write`, `oltp_read_only`,
`oltp_point_select`, `oltp_write_only`, `oltp_update_index`), `threads` (1),
`tables` (2), `table_size` (10000 rows), `time_s` (the campaign's
duration_s, whole seconds), server `buffer_pool` (InnoDB's buffer pool,
`128M`). Metrics: `tps`, `qps`, sysbench's `total_events`, `total_time_s`
and latency `latency_min_ms`, `_avg_ms`, `_p95_ms`, `_max_ms`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from perfsnake.benchmarks.server import ServerTool, words
from perfsnake.benchmarks.sysbench import _FIELDS
from perfsnake.escape import value_text

SCRIPTS = ("oltp_read_write", "oltp_read_only", "oltp_point_select", "oltp_write_only", "oltp_update_index")
_SIZE = re.compile(r"^[0-9]+[KMG]?$")
_RATES = {
    "tps": re.compile(r"^\s*transactions:\s+\d+\s+\(([0-9.]+) per sec\.\)$", re.M),
    "qps": re.compile(r"^\s*queries:\s+\d+\s+\(([0-9.]+) per sec\.\)$", re.M),
}


class MariadbBenchmark(ServerTool):
    name = "mariadb"
    executable = "sysbench"
    package = "sysbench"
    run_defaults = {"script": "oltp_read_write", "threads": 1, "tables": 2, "table_size": 10000, "buffer_pool": "128M"}
    server_variables = ("buffer_pool",)
    kinds = {"script": SCRIPTS, "threads": "int", "tables": "int", "table_size": "int", "time_s": "int"}
    metrics = ("tps", "qps", "total_events", "total_time_s", "latency_min_ms", "latency_avg_ms", "latency_p95_ms",
               "latency_max_ms")  # fmt: skip
    declared_units = {"tps": "transactions/s", "qps": "queries/s"}

    def binary(self) -> str:
        for tool in ("mariadbd", "mariadb-install-db", "mariadb-admin", "mariadb"):  # the server first
            self.require(tool, "mariadb-server")
        return super().binary()

    def check_record(self, p: Mapping[str, object]) -> None:
        if not _SIZE.match(value_text(p["buffer_pool"])):
            raise self.fail("variables.buffer_pool", f"{value_text(p['buffer_pool'])!r} is not a size such as 128M")

    def server_commands(self, p: dict[str, object]) -> tuple[str, str, str, str]:
        sock = "$dir/mariadb.sock"
        me = ' --user="$(id -un)"'  # as root, mariadbd must be told it may stay root
        start = (words("mariadb-install-db", "--no-defaults", "--datadir=$dir/data", "--auth-root-authentication-method=normal",
                       "--skip-test-db") + me + " >mariadb-install.log 2>&1 && exec "
                 + words("mariadbd", "--no-defaults", "--datadir=$dir/data", f"--socket={sock}", "--skip-networking",
                         f"--innodb-buffer-pool-size={value_text(p['buffer_pool'])}") + me)  # fmt: skip
        admin = ("--no-defaults", "-S", sock, "-u", "root")
        sysbench = words("sysbench", str(p["script"]), "--db-driver=mysql", f"--mysql-socket={sock}", "--mysql-user=root",
                         f"--tables={value_text(p['tables'])}", f"--table-size={value_text(p['table_size'])}")  # fmt: skip
        client = (words("mariadb", *admin, "-e", "DROP DATABASE IF EXISTS sbtest; CREATE DATABASE sbtest") + " && " + sysbench
                  + " prepare >sysbench-prepare.log 2>&1 && " + sysbench
                  + " " + words(f"--threads={value_text(p['threads'])}", f"--time={value_text(p['time_s'])}",
                                "--percentile=95", "run"))  # fmt: skip
        return start, words("mariadb-admin", *admin, "ping"), client, words("mariadb-admin", *admin, "shutdown")

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        if "General statistics:" not in stdout:
            raise ValueError("no 'General statistics:' section in sysbench's output")
        out: dict[str, object] = {}
        for name, pattern in {**_RATES, **_FIELDS}.items():
            match = pattern.search(stdout)
            if match is None:
                raise ValueError(f"sysbench's output has no {name} line")
            out[name] = int(match.group(1)) if name == "total_events" else float(match.group(1))
        return out
