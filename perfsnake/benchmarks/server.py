"""What the catalog's servers share (redis, memcached, postgresql, mariadb).

A server lives in a private directory (`$dir`: its data and its Unix socket,
so no port and nothing another user reaches). Two lifetimes, the benchmark's
`server:` key:

- `campaign` (the default on the local platform): one server per campaign
  and setting of its server variables (`server_variables`), started before
  the first run that needs it and stopped after the last one by the run
  stage (perfsnake.stages.servers); each run is the client alone. The
  server's start-up (initdb, loading) is paid once, and runs meet a warm
  server, as a long-lived production server would be.
- `run`: each run starts its own server, loads it with the client and stops
  it (SCRIPT below): every run meets a cold server, and the server is a
  process of the run, so the launcher's containment covers it. Other
  platforms (ssh, container) always use this, since the server must live
  where the client runs.

Either way the client's own figures are the metrics, so the server's start-up
is outside them, and the client commands are idempotent (a database is
dropped and re-created) so that they can meet a server that served earlier
runs.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping

from perfsnake.benchmarks.base import RunContext
from perfsnake.benchmarks.packaged import PackagedTool
from perfsnake.escape import value_text

#: the benchmark's `server:` choices
SCOPES = ("campaign", "run")

# $1 start, $2 ready, $3 client, $4 stop: shell commands that may use "$dir".
# A stopped run (time-out, killed workflow: the launcher sends SIGTERM to the
# whole process group, and SIGKILL soon after) removes the directory first,
# then stops its server (its data is thrown away anyway).
SCRIPT = r"""
dir=$(mktemp -d /tmp/perfsnake-server.XXXXXX) || exit 1
stop() { eval "$stop" >/dev/null 2>&1 || kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$dir"; }
stop=$4
trap 'rm -rf "$dir"; stop; exit 143' TERM INT HUP
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

# A campaign's server: $1 its directory (made here, private), $2 the start
# command. Stopped by SIGTERM to its process group (the launcher's), it
# removes the directory at once (a dead workflow's launcher gives half a
# second before SIGKILL), then waits for the server. A server killed by a
# signal is reported as such (the shell dies of it too).
SERVE = r"""
mkdir -m 700 "$1" || exit 1
dir=$1
trap 'rm -rf "$dir"; kill "$server" 2>/dev/null; wait "$server"; exit 143' TERM INT HUP
eval "$2" &
server=$!
wait "$server"
status=$?
rm -rf "$dir"
if [ "$status" -gt 128 ]; then trap - TERM INT HUP; kill -s "$(kill -l "$status")" $$; fi
exit $status
"""
# A command against a running server: $1 its directory, $2 the command.
AGAINST = 'dir=$1; eval "$2"'


def words(*argv: object) -> str:
    """A command line for the script's `eval`: every word quoted, `$dir` left to the shell."""

    def word(text: str) -> str:
        if "$dir" not in text:
            return shlex.quote(text)
        return '"$dir"'.join(shlex.quote(part) if part else "" for part in text.split("$dir"))

    return " ".join(word(str(a)) for a in argv)


class ServerTool(PackagedTool):
    """A packaged client benchmarking a packaged server."""

    #: the variables the server (not the client) reads: runs that agree on
    #: them share a campaign-scoped server
    server_variables: tuple[str, ...] = ()

    def server_commands(self, params: dict[str, object]) -> tuple[str, str, str, str]:
        """(start, ready, client, stop) shell commands using "$dir" (override)."""
        raise NotImplementedError

    def scope(self) -> str:
        return str(self.spec.get("server", "campaign"))

    def server_key(self, params: Mapping[str, object]) -> str:
        """Which server a run needs: the benchmark and its server variables."""
        p = self.params(params)
        blob = json.dumps([self.name, {v: value_text(p[v]) for v in self.server_variables}], sort_keys=True)
        return f"{self.name}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"

    def command_params(self, params: Mapping[str, object], duration_s: float) -> dict[str, object]:
        """The values the commands read: the record over the defaults, and
        the campaign's duration in whole seconds (`time_s`) unless set."""
        return {"time_s": max(1, round(duration_s)), **self.params(params)}

    def run_command(self, ctx: RunContext) -> list[str]:
        return self.server_argv(self.command_params(ctx.params, ctx.duration_s), ctx.server)

    def server_argv(self, params: dict[str, object], shared: str | None = None) -> list[str]:
        """The run's command: the whole lifecycle, or (a campaign's server
        running in directory `shared`) the client alone."""
        start, ready, client, stop = self.server_commands(params)
        if shared is not None:
            return ["/bin/sh", "-c", AGAINST, self.name, shared, client]
        return ["/bin/sh", "-c", SCRIPT, self.name, start, ready, client, stop]

    def serve_argv(self, params: Mapping[str, object], directory: str) -> list[str]:
        """A campaign's server in the foreground, in a fresh `directory`."""
        return ["/bin/sh", "-c", SERVE, self.name, directory, self.server_commands(self.command_params(params, 1))[0]]

    def ready_argv(self, params: Mapping[str, object], directory: str) -> list[str]:
        """One readiness check of the server in `directory` (exit status 0: ready)."""
        return ["/bin/sh", "-c", AGAINST, self.name, directory, self.server_commands(self.command_params(params, 1))[1]]
