"""Where a campaign's builds and runs execute: here, in a container, over ssh.

Each platform hands one run to a launcher (perfsnake/csrc/psrun) that spans the timed
interval on the machine that runs the benchmark, so starting a container or
an ssh connection is never part of what is measured. Across a container
engine or ssh the launcher's parent is not the workflow, so it watches its
standard input instead: the workflow holds the other end of that pipe, and a
killed workflow or a dropped connection stops the benchmark.

One module per platform (local, container, ssh), each implementing
`base.PlatformProtocol`; this package is their catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from perfsnake.platforms.base import BACKSTOP_S, PLATFORM_FILE, PlatformError, PlatformProtocol, render_plain
from perfsnake.platforms.container import Container, make_container
from perfsnake.platforms.local import Local, make_local
from perfsnake.platforms.ssh import LAUNCHER_SOURCE, Ssh, make_ssh

__all__ = [
    "BACKSTOP_S",
    "LAUNCHER_SOURCE",
    "PLATFORMS",
    "PLATFORM_FILE",
    "Container",
    "Local",
    "Platform",
    "PlatformError",
    "PlatformProtocol",
    "Ssh",
    "make_platform",
    "render_plain",
]

Platform = Local | Container | Ssh

#: The platform catalog: `platform.type` -> factory (the schema's name list is
#: checked against it by tests/test_registries.py).
PLATFORMS: dict[str, Callable[[Mapping[str, object], list[str], str], Platform]] = {
    "local": make_local,
    "container": make_container,
    "ssh": make_ssh,
}


def make_platform(spec: Mapping[str, object], variables: list[str], origin: str) -> Platform:
    """The platform of a campaign (already schema-checked), or a CampaignError."""
    return PLATFORMS[str(spec.get("type", "local"))](spec, variables, origin)
