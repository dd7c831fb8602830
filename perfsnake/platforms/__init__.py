"""Where a campaign's builds and runs execute: here, in a container, over ssh.

Each platform hands one run to a launcher (perfsnake/csrc/psrun) that spans the timed
interval on the machine that runs the benchmark, so starting a container or
an ssh connection is never part of what is measured. Across a container
engine or ssh the launcher's parent is not the workflow, so it watches its
standard input instead: the workflow holds the other end of that pipe, and a
killed workflow or a dropped connection stops the benchmark.

One module per platform (local, container, ssh), each a class implementing
`base.PlatformProtocol`. This package is their catalog, with the face of the
others (perfsnake.benchmarks, perfsnake.instruments, perfsnake.importers):
`CATALOG`, `names()` and `create(spec, origin, key)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from perfsnake.platforms.base import BACKSTOP_S, PLATFORM_FILE, PlatformError, PlatformProtocol, render_plain
from perfsnake.platforms.container import Container
from perfsnake.platforms.local import Local
from perfsnake.platforms.ssh import LAUNCHER_SOURCE, Ssh

__all__ = [
    "BACKSTOP_S",
    "CATALOG",
    "LAUNCHER_SOURCE",
    "PLATFORMS",
    "PLATFORM_FILE",
    "Container",
    "Local",
    "Platform",
    "PlatformError",
    "PlatformProtocol",
    "Ssh",
    "create",
    "make_platform",
    "names",
    "render_plain",
]

Platform = Local | Container | Ssh

#: The platform catalog: `platform.type` -> its class (the schema's name list
#: and the docs are checked against it by tests/test_registries.py).
CATALOG: dict[str, type[Platform]] = {
    "local": Local,
    "container": Container,
    "ssh": Ssh,
}
#: The catalog under the name perfsnake.campaign imports.
PLATFORMS = CATALOG


def names() -> list[str]:
    """Every platform type, in the catalog's order."""
    return list(CATALOG)


def create(spec: Mapping[str, object], origin: str, key: str = "platform", variables: Sequence[str] = ()) -> Platform:
    """The platform of a campaign (already schema-checked; no type is local), or a CampaignError.
    `variables` are the campaign's, which a platform's options may name."""
    return CATALOG[str(spec.get("type", "local"))].from_spec(spec, origin, key, variables)


def make_platform(spec: Mapping[str, object], variables: list[str], origin: str) -> Platform:
    """`create` under the name and argument order perfsnake.campaign and the build stage use."""
    return create(spec, origin, "platform", variables)
