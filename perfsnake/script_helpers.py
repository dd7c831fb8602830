"""Helpers for the thin Snakemake `script:` entry points."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any


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
