"""hyperfine's `--export-json`: one result per command, with every run's time.

Records are the commands, or the parameters when every command came from a
parameter scan (`-P`, `-L`), so that a native campaign over the same
variables compares with it. Each run's time is its wall-clock time, perfsnake's
`wall_s` (what the launcher measures for a native run, so the two compare);
where hyperfine recorded it (1.19 and later), `memory_bytes` is each run's
peak resident set. A run with a non-zero exit code (kept by hyperfine `-i`)
is a failed run.
"""

from __future__ import annotations

from pathlib import Path

from perfsnake.importers import Imported, ImportFormatError, Row, load_json, need, numbers


def parse(path: Path) -> Imported:
    data = load_json(path)
    results = need(data, "results", list, path)
    if not results:
        raise ImportFormatError(str(path), "results", "empty (hyperfine ran no command?)")
    params = [r.get("parameters") if isinstance(r, dict) else None for r in results]
    scanned = all(isinstance(p, dict) and p for p in params) and len({tuple(p) for p in params}) == 1  # type: ignore[arg-type]
    variables = list(params[0]) if scanned else ["command"]  # type: ignore[arg-type]
    rows: list[Row] = []
    for i, result in enumerate(results):
        where = f"results[{i}]"
        command = need(result, "command", str, path, where)
        if "times" not in result:
            raise ImportFormatError(
                str(path), f"{where}.times", "missing: per-run times are needed (hyperfine >= 1.6 writes them)"
            )
        times = numbers(result["times"], path, f"{where}.times")
        codes = result.get("exit_codes") or [0] * len(times)
        if not isinstance(codes, list) or len(codes) != len(times):
            raise ImportFormatError(str(path), f"{where}.exit_codes", f"expected {len(times)} exit codes")
        memory = result.get("memory_usage_byte")
        if memory is not None:
            memory = numbers(memory, path, f"{where}.memory_usage_byte")
            if len(memory) != len(times):
                raise ImportFormatError(str(path), f"{where}.memory_usage_byte", f"expected {len(times)} values")
        record = dict(result["parameters"]) if scanned else {"command": command}
        for k, (t, code) in enumerate(zip(times, codes, strict=True)):
            code = int(code) if isinstance(code, int) else -1
            ok = code == 0
            values: dict[str, float | None] = {"memory_bytes": memory[k]} if memory else {}
            reason = "" if ok else f"exit code {code}"
            rows.append(Row(record, values, "ok" if ok else "failed", code, reason, wall_s=t))
    metrics = ["memory_bytes"] if any(r.metrics for r in rows) else []
    return Imported("hyperfine", variables, metrics, {"memory_bytes": "B"} if metrics else {}, rows)
