"""Helpers for the thin Snakemake `script:` entry points."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable


def logged(log_path: str, main: Callable[[], None]) -> None:
    """Run `main` with stderr going to the rule's log, tracebacks included."""
    with open(log_path, "w") as log:
        previous, sys.stderr = sys.stderr, log
        try:
            main()
        except BaseException:
            traceback.print_exc()
            raise
        finally:
            sys.stderr = previous
