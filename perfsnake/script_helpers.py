"""Helpers for the thin Snakemake `script:` entry points."""

from __future__ import annotations

import contextlib
import runpy
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO


def flow(value: Any) -> str:
    """A rule parameter as one line of YAML flow style: `{kind: bar, x: n}`.
    Snakemake's report shows job parameters as text; this reads as written
    in the campaign (escaped JSON did not), and `unflow` gives it back."""
    import yaml

    return yaml.safe_dump(value, default_flow_style=True, width=2**31, sort_keys=True).strip()


def campaign_of(sm: Any) -> dict[str, Any]:
    """The campaign's info in a script: the campaign.json input of the
    report's rules, else the `campaign` parameter of the others."""
    import json
    from pathlib import Path

    info = getattr(sm.input, "info", None)
    return json.loads(Path(info).read_text() if info else sm.params.campaign)


def unflow(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


class _ThreadStderr:
    """sys.stderr while scripts run in the Snakemake process: each thread
    writes where it was told to (a script's job to its log), every other
    thread (a run job's progress line, Snakemake's own) where stderr went
    before."""

    def __init__(self, default: TextIO) -> None:
        self.default = default
        self.local = threading.local()

    def target(self) -> TextIO:
        return getattr(self.local, "stream", None) or self.default

    def write(self, text: str) -> int:
        return self.target().write(text)

    def flush(self) -> None:
        self.target().flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target(), name)


_STDERR_LOCK = threading.Lock()
#: one script at a time in this process: the scripts' libraries (vl-convert,
#: a database driver, pandas' options) were written for a process of their own
_SCRIPT_LOCK = threading.Lock()


@contextlib.contextmanager
def _stderr_to(stream: TextIO) -> Iterator[None]:
    """This thread's sys.stderr goes to `stream` (other threads' stays)."""
    with _STDERR_LOCK:
        if not isinstance(sys.stderr, _ThreadStderr):
            sys.stderr = _ThreadStderr(sys.stderr)
        proxy = sys.stderr
    assert isinstance(proxy, _ThreadStderr)
    previous = getattr(proxy.local, "stream", None)
    proxy.local.stream = stream
    try:
        yield
    finally:
        proxy.local.stream = previous


def logged(log_path: str, main: Callable[[], None]) -> None:
    """Run `main` with this thread's stderr going to the rule's log, tracebacks included."""
    with open(log_path, "w") as log, _stderr_to(log):
        try:
            main()
        except BaseException:
            traceback.print_exc()
            raise


class ScriptFailed(RuntimeError):
    """A script run in the Snakemake process failed (its log has the traceback)."""


def run_in_process(path: Path, smk: Any) -> None:
    """A rule's Python script run in this process, as Snakemake would run it
    in a Python of its own: its globals hold `snakemake` (the job's inputs,
    outputs, params, log); sys.path as it was afterwards. `sys.exit` in the
    script is its failure (or success, with 0), not this process's end."""
    saved_path = list(sys.path)
    with _SCRIPT_LOCK:
        try:
            runpy.run_path(str(path), init_globals={"snakemake": smk}, run_name="__snakemake_script__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise ScriptFailed(f"{path.name} exited: {exc.code}") from None
        except Exception as exc:
            logs = ", ".join(map(str, smk.log)) or "its stderr"
            raise ScriptFailed(f"{path.name} failed: {type(exc).__name__}: {exc} (traceback in {logs})") from exc
        finally:
            sys.path[:] = saved_path
