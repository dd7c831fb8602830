"""What the catalog's servers share (redis, memcached): each run starts its
own server, loads it with the client, and stops it.

The server lives in a private temporary directory (`$dir`: its data and its
Unix socket, so no port and nothing another user reaches), its output in the
run directory's `server.log`. The run waits until the server answers (the
benchmark's ready command, polled every 10 ms for at most 10 s; a server that
exits first fails the run with its log), runs the client, then stops the
server and removes the directory. The server is a process of the run, so the
launcher's containment covers it: a failed, timed-out or killed run leaves no
server. The client's own figures are the metrics, so the server's start-up
is outside them.
"""

from __future__ import annotations

import shlex

from perfsnake.benchmarks.packaged import PackagedTool

# $1 start, $2 ready, $3 client, $4 stop: shell commands that may use "$dir".
SCRIPT = r"""
dir=$(mktemp -d /tmp/perfsnake-server.XXXXXX) || exit 1
stop() { eval "$stop" >/dev/null 2>&1 || kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$dir"; }
stop=$4
eval "$1" > server.log 2>&1 &
server=$!
tries=0
until eval "$2" >/dev/null 2>&1; do
  if ! kill -0 "$server" 2>/dev/null; then echo "the server exited at start:" >&2; cat server.log >&2; rm -rf "$dir"; exit 1; fi
  tries=$((tries + 1))
  if [ "$tries" -gt 1000 ]; then echo "the server did not answer within 10 s" >&2; stop; exit 1; fi
  sleep 0.01
done
eval "$3"
status=$?
stop
exit $status
"""


def words(*argv: object) -> str:
    """A command line for the script's `eval`: every word quoted, `$dir` left to the shell."""

    def word(text: str) -> str:
        if "$dir" not in text:
            return shlex.quote(text)
        return '"$dir"'.join(shlex.quote(part) if part else "" for part in text.split("$dir"))

    return " ".join(word(str(a)) for a in argv)


class ServerTool(PackagedTool):
    """A packaged client benchmarking a packaged server it starts per run."""

    def server_commands(self, params: dict[str, object]) -> tuple[str, str, str, str]:
        """(start, ready, client, stop) shell commands (override)."""
        raise NotImplementedError

    def server_argv(self, params: dict[str, object]) -> list[str]:
        return ["/bin/sh", "-c", SCRIPT, self.name, *self.server_commands(params)]
