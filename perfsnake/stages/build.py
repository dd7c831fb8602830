"""Build stage (rules/build.smk): a benchmark's build script run into its build directory."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from perfsnake import layout
from perfsnake.benchmarks.base import BUILD_THREADS, Benchmark, BuildContext, source_key
from perfsnake.platforms import Local, PlatformError, make_platform
from perfsnake.stages import layout_builds


class BuildError(RuntimeError):
    pass


def build(script: str, build_dir: Path, log_file: Path, platform: str = "", inputs: list[str] | None = None) -> None:
    """Run `script` with bash -e in `build_dir` on the campaign's platform
    (JSON of its spec; empty: here); its output goes to the log."""
    build_dir.mkdir(parents=True, exist_ok=True)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    script_file = build_dir / "build.sh"
    script_file.write_text("#!/bin/bash\nset -euo pipefail\n" + script + "\n")
    where = make_platform(json.loads(platform), [], "build") if platform else Local()
    try:
        code = where.build(script_file, build_dir, log_file, [Path(p).resolve() for p in inputs or []])
    except PlatformError as e:  # an unreachable host: one line, not a traceback
        raise BuildError(f"build in {build_dir} not made: {e}") from None
    if code != 0:
        tail = Path(log_file).read_text(errors="replace").strip().splitlines()[-5:]
        raise BuildError(
            f"build in {build_dir} failed with exit code {code}; last lines of {log_file}:\n" + "\n".join(tail)
        )


def builder_from_spec(spec: dict) -> Benchmark:
    """The benchmark (or instrument builder) a build spec names, re-created in
    the job: the spec holds no path, only what defines the build."""
    module, _, qualname = str(spec["class"]).partition(":")
    cls = getattr(importlib.import_module(module), qualname)
    return cls(spec["spec"], "build")


def build_from_spec(spec_json: str, output: str, log_file: str, inputs: list[str], threads: int) -> None:
    """The build rule's job body: the build script, with this working
    directory's absolute paths, run on the campaign's platform."""
    spec = json.loads(spec_json)
    if spec["platform"] and json.loads(spec["platform"]).get("type") == "ssh":
        threads = max(threads, BUILD_THREADS)
    bench = builder_from_spec(spec)
    build_dir = Path(output).resolve()
    params = dict(spec["params"])
    # A noise-floor campaign's layout build: the benchmark's own build, with
    # the function order shuffled by the linker (perfsnake.stages.layout_builds).
    seed = params.pop(layout.FLOOR_VARIABLE, None)
    source = bench.source_for(params)
    src_dir = layout.here(layout.source_dir(source_key(source))).resolve() if source else None
    script = bench.build_script(BuildContext(params, build_dir, src_dir, threads))
    if seed is not None:
        script = layout_builds.build_preamble(seed, build_dir) + script
    build(script, build_dir, Path(log_file), spec["platform"], inputs)


def mark_ready(builds: list[str], output: str) -> None:
    """The builds_ready rule's job body: a list of what was built, written
    once every build of the campaign exists."""
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    Path(output).write_text("".join(f"{b}\n" for b in builds))
