"""Layout builds and runs of a noise-floor campaign (`noise_floor`; the floor
itself: perfsnake.noise_floor, stages.noise_floor). Imported by the build and run
stages, so nothing heavy here.

A layout build is the benchmark's own build with `cc`, `gcc`, `c++` and
`g++` on PATH wrapped: every compilation gets `-ffunction-sections`, every
link lld with `--shuffle-sections=.text.*=<seed>`, so each seed is another
order of the program's functions (and so other alignments and cache-line
neighbours), whatever build system calls the compiler. Each of its runs gets
an environment variable of seeded random length (`PERFSNAKE_ENV_PAD`),
which moves the initial stack.
"""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path

from perfsnake.escape import value_text

#: the environment variable whose length varies from run to run
PAD_VARIABLE = "PERFSNAKE_ENV_PAD"
#: the compiler drivers a layout build wraps
DRIVERS = {"cc": "gcc", "gcc": "gcc", "c++": "g++", "g++": "g++"}


def build_preamble(seed: object, build_dir: Path) -> str:
    """Shell lines that put the layout's compiler wrappers first on PATH."""
    bin_dir = build_dir / ".layout-bin"
    lines = [f"# layout build {value_text(seed)}: function order shuffled by lld (perfsnake noise_floor)",
             f"mkdir -p {shlex.quote(str(bin_dir))}"]  # fmt: skip
    flags = f"-ffunction-sections -fuse-ld=lld -Wl,--shuffle-sections=.text.*={int(str(seed))}"
    for name, real in DRIVERS.items():
        wrapper = shlex.quote(str(bin_dir / name))
        lines.append(f"printf '#!/bin/sh\\nexec /usr/bin/{real} \"$@\" {flags}\\n' > {wrapper} && chmod +x {wrapper}")
    lines.append(f"export PATH={shlex.quote(str(bin_dir))}:$PATH")
    return "\n".join(lines) + "\n"


def padding(record_path: str, run: int, largest: int) -> str:
    """The run's environment padding: a seeded length from 0 to `largest`."""
    digest = hashlib.sha256(f"{record_path}/{run}".encode()).digest()
    return "x" * (int.from_bytes(digest[:4], "big") % (largest + 1))
