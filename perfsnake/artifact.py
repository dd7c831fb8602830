"""Packing a finished campaign as a reproducible paper artifact.

    python -m perfsnake artifact [--config campaign=PATH] [--output FILE.zip] [--allow-failed]

One zip holds the campaign file, the configuration and its schemas, the
workflow (an archive of the exact tree, its commit and any uncommitted diff),
the environment files, the metadata, the campaign's results directory, the
Snakemake report and a REPRODUCE.md, with a sha256 MANIFEST. Entries are
sorted and dated 1980-01-01, so two artifacts can be compared with `unzip -l`
or `diff` of their manifests.

    python -m perfsnake compare PACKED/summary.csv NEW/summary.csv

compares a re-run with the packed results (per record and metric).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path, PurePosixPath

from perfsnake import ROOT, layout, safefile
from perfsnake.machine.metadata import host_metadata

#: Fixed entry date: the zip listing of the same content is the same.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
ARCHIVE = "workflow/workflow.tar.gz"
MANIFEST = "MANIFEST.sha256"


class ArtifactError(Exception):
    """A refusal, printed as one line; nothing has been written."""


@dataclass
class WorkflowVersion:
    commit: str | None = None
    #: the working tree differs from the commit (modified or new files; .gitignore respected)
    dirty: bool | None = None
    #: a commit object holding the exact working tree, when dirty
    snapshot: str | None = None
    diff: bytes = b""
    remote: str | None = None
    #: how the workflow archive was made
    method: str = ""
    notes: list[str] = field(default_factory=list)


def config_path() -> Path:
    """The configuration the CLI uses: ./config/config.yaml, else the repository's."""
    local = Path("config/config.yaml")
    return local.resolve() if local.exists() else ROOT / local


def snakemake_command(
    config_file: Path, overrides: list[str], extra: list[str], *args: str, root: Path = ROOT
) -> list[str]:
    """The workflow as the Makefile and the tests run it, plus `args`."""
    cmd = [str(Path(sys.executable).with_name("snakemake")), "-s", str(root / "workflow" / "Snakefile")]
    cmd += ["--workflow-profile", str(root / "profiles" / "default"), "--configfile", str(config_file)]
    cmd += [*args, *extra]
    # --config takes every following word, so it goes last.
    if overrides:
        cmd += ["--config", *overrides]
    return cmd


def _run(
    cmd: list[str], cwd: Path | None = None, env: dict | None = None, timeout: float = 900
) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, timeout=timeout, check=False)


def _git(*args: str, env: dict | None = None, cwd: Path = ROOT) -> str | None:
    try:
        proc = _run(["git", *args], cwd=cwd, env=env, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def _error_line(proc: subprocess.CompletedProcess) -> str:
    """The most telling line of a failed command's output."""
    lines = [
        ln.strip() for ln in (proc.stderr.decode(errors="replace") + proc.stdout.decode(errors="replace")).splitlines()
    ]
    lines = [ln for ln in lines if ln]
    for ln in lines:
        if "Error" in ln and not ln.endswith(":"):
            return ln
    return lines[-1] if lines else f"exit status {proc.returncode}"


# --- the workflow version and archive -------------------------------------------------------------


def workflow_tree(tmp: Path) -> tuple[Path, WorkflowVersion]:
    """A tar.gz of the workflow exactly as it is on disk, and its version.

    In a git checkout: `git archive` of HEAD, or, when the working tree
    differs, of a commit object holding the working tree (made with a
    temporary index; the repository's index and branches are untouched).
    Elsewhere (e.g. a tree unpacked from an artifact): a tar of the workflow files.
    """
    out = tmp / "tree.tar.gz"
    version = WorkflowVersion()
    version.commit = _git("rev-parse", "HEAD")
    if version.commit is None:
        version.method = "tar of the workflow files (not a git checkout)"
        _tar_workflow_files(out)
        return out, version
    top = Path(_git("rev-parse", "--show-toplevel") or ROOT)
    prefix = _git("rev-parse", "--show-prefix") or ""
    version.remote = _git("remote", "get-url", "origin")
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp / "git-index")}
    ref = version.commit
    if (
        _git("read-tree", "HEAD", env=env, cwd=top) is not None
        and _git("add", "-A", env=env, cwd=top) is not None
        and (tree := _git("write-tree", env=env, cwd=top))
    ):
        version.dirty = tree != _git("rev-parse", "HEAD^{tree}")
        if version.dirty:
            date = _git("log", "-1", "--format=%cI", "HEAD")
            who = {"GIT_AUTHOR_NAME": "perfsnake artifact", "GIT_AUTHOR_EMAIL": "perfsnake@localhost"}
            who |= {"GIT_COMMITTER_NAME": who["GIT_AUTHOR_NAME"], "GIT_COMMITTER_EMAIL": who["GIT_AUTHOR_EMAIL"]}
            who |= {"GIT_AUTHOR_DATE": date or "", "GIT_COMMITTER_DATE": date or ""}
            msg = f"perfsnake artifact: working tree of {version.commit}"
            snapshot = _git("commit-tree", tree, "-p", "HEAD", "-m", msg, env={**os.environ, **who})
            if snapshot:
                version.snapshot = ref = snapshot
                diff = _run(["git", "diff", "--binary", "HEAD", snapshot], cwd=top)
                version.diff = diff.stdout
    else:
        version.notes.append("the working tree could not be snapshotted; the archive holds the commit only")
        version.dirty = bool(_git("status", "--porcelain"))
        version.diff = _run(["git", "diff", "--binary", "HEAD"], cwd=top).stdout
    treeish = f"{ref}:{prefix}" if prefix else ref
    proc = _run(["git", "archive", "--format=tar.gz", "-o", str(out), treeish], cwd=top)
    if proc.returncode != 0:
        version.notes.append(f"git archive failed: {_error_line(proc)}")
        version.method = "tar of the workflow files (git archive failed)"
        _tar_workflow_files(out)
        return out, version
    version.method = "git archive"
    return out, version


SKIP_TOP = {".git", ".venv", ".snakemake", *layout.generated_dirs(), "report.html", ".pytest_cache", ".ruff_cache"}


def _tar_workflow_files(out: Path) -> None:
    """A tar.gz of the workflow files under ROOT (no results, no venv, no caches)."""

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = PurePosixPath(info.name).parts
        if (parts and parts[0] in SKIP_TOP) or "__pycache__" in parts or info.issym() or info.islnk():
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        return info

    with tarfile.open(out, "w:gz") as tar:
        for entry in sorted(os.listdir(ROOT)):
            if entry not in SKIP_TOP:
                tar.add(ROOT / entry, arcname=entry, filter=keep)


def snakemake_archive(
    tree: Path, campaign_file: Path, config_file: Path, overrides: list[str], tmp: Path, force: bool = False
) -> tuple[Path | None, str]:
    """Try the real `snakemake --archive` on a git repository holding the tree.

    The archive needs the workflow in a git repository that is also the
    working directory, so the tree is unpacked into a scratch repository
    together with the campaign file. Returns (archive, "") or (None, reason).
    """
    if not force and not (shutil.which("conda") or os.environ.get("CONDA_EXE")):
        # Checked with Snakemake 9.27.1: --archive first creates every rule's
        # conda environment (our rules declare `conda:`), whatever --sdm says.
        return None, "it creates the conda environment of every rule and conda is not installed (not attempted)"
    staging = tmp / "staging"
    staging.mkdir()
    with tarfile.open(tree) as tar:
        safefile.extract_tar(tar, staging)
    (staging / "artifact-campaign").mkdir()
    shutil.copy2(campaign_file, staging / "artifact-campaign" / campaign_file.name)
    (staging / "config").mkdir(exist_ok=True)
    shutil.copy2(config_file, staging / "config" / "config.yaml")
    who = ["-c", "user.name=perfsnake artifact", "-c", "user.email=perfsnake@localhost"]
    for cmd in (["init", "-q"], ["add", "-A"], [*who, "commit", "-q", "-m", "artifact staging"]):
        if _git(*cmd, cwd=staging) is None:
            return None, f"could not make a git repository for it (git {cmd[-1]})"
    out = tmp / "snakemake-archive.tar.gz"
    overrides = [o for o in overrides if not o.startswith("campaign=")]
    overrides.append(f"campaign=artifact-campaign/{campaign_file.name}")
    cmd = snakemake_command(
        staging / "config" / "config.yaml", overrides, [], "--archive", str(out), "all", root=staging
    )
    try:
        proc = _run(cmd, cwd=staging)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    if proc.returncode != 0 or not out.exists():
        return None, _error_line(proc)
    return out, ""


# --- results ---------------------------------------------------------------------------------------


def results_files(results_dir: Path, arc_prefix: str, exclude: list[Path]) -> tuple[dict[str, Path], list[str]]:
    """arcname -> file for everything under results_dir, without following symlinks out of it.

    A symlink to a regular file inside the directory is packed as that file;
    every other symlink (and any special file) is listed as skipped.
    """
    base = results_dir.resolve()
    excluded = {p.resolve() for p in exclude}
    files: dict[str, Path] = {}
    skipped: list[str] = []
    for dirpath, dirnames, filenames in os.walk(results_dir, followlinks=False):
        here = Path(dirpath)
        for d in sorted(dirnames):
            path = here / d
            if path.is_symlink():
                skipped.append(
                    f"{arc_prefix}/{path.relative_to(results_dir).as_posix()} -> {os.readlink(path)} (directory symlink, not followed)"
                )
                dirnames.remove(d)
            elif path.resolve() in excluded:
                dirnames.remove(d)
        for f in filenames:
            path = here / f
            rel = f"{arc_prefix}/{path.relative_to(results_dir).as_posix()}"
            if path.resolve() in excluded:
                continue
            if path.is_symlink():
                target = path.resolve()
                if target.is_file() and base in target.parents:
                    files[rel] = target
                else:
                    skipped.append(f"{rel} -> {os.readlink(path)} (leaves {arc_prefix} or is not a file, not followed)")
            elif stat.S_ISREG(path.lstat().st_mode):
                files[rel] = path
            else:
                skipped.append(f"{rel} (not a regular file)")
    return files, sorted(skipped)


def csv_metadata(csv: Path) -> list[str]:
    """The `#` lines of the aggregated CSV (top and bottom)."""
    return [ln for ln in csv.read_text().splitlines() if ln.startswith("#")]


def python_packages() -> str:
    names = {f"{d.metadata['Name']}=={d.version}" for d in importlib_metadata.distributions() if d.metadata["Name"]}
    return "\n".join(sorted(names, key=str.lower)) + "\n"


# --- the zip ---------------------------------------------------------------------------------------


def _safe_arcname(name: str) -> str:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts or name != path.as_posix():
        raise ValueError(f"unsafe path in the artifact: {name!r}")
    return name


def _sha256(source: Path | bytes) -> str:
    if isinstance(source, bytes):
        return hashlib.sha256(source).hexdigest()
    h = hashlib.sha256()
    with open(source, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_zip(out: Path, top: str, entries: dict[str, Path | bytes]) -> None:
    """Write `entries` (plus MANIFEST.sha256) under `top/`, sorted, with fixed dates.

    Written to a temporary file next to `out`, then renamed: a failure leaves nothing.
    """
    entries = dict(entries)
    manifest = "".join(f"{_sha256(entries[name])}  {name}\n" for name in sorted(entries))
    entries[MANIFEST] = manifest.encode()
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp_name, "w", zipfile.ZIP_DEFLATED) as zf:
            for name in sorted(entries):
                source = entries[name]
                info = zipfile.ZipInfo(f"{top}/{_safe_arcname(name)}", date_time=ZIP_DATE)
                executable = not isinstance(source, bytes) and os.access(source, os.X_OK)
                info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                with zf.open(info, "w") as dst:
                    if isinstance(source, bytes):
                        dst.write(source)
                    else:
                        with open(source, "rb") as src:
                            shutil.copyfileobj(src, dst, 1 << 20)
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, out)
    except BaseException:
        os.unlink(tmp_name)
        raise


# --- REPRODUCE.md ----------------------------------------------------------------------------------


def reproduce_md(
    name: str,
    campaign_arc: str,
    campaign_origin: str,
    campaign_sha: str,
    version: WorkflowVersion,
    run_meta: dict[str, str],
    host: dict[str, object],
    results: list[str],
    failed: int,
    skipped: list[str],
) -> str:
    commit = version.commit or run_meta.get("perfsnake_commit") or "unknown"
    state = (
        "clean"
        if version.dirty is False
        else "with uncommitted changes: workflow/uncommitted.diff"
        if version.dirty
        else "unknown"
    )
    camp = f"../{campaign_arc}"
    lines = [
        f"# Reproducing the perfsnake campaign `{name}`",
        "",
        f"Packed by `python -m perfsnake artifact` at {host.get('utc_time')} on `{host.get('hostname')}`.",
        "",
        "## Versions",
        "",
        "| | |",
        "|---|---|",
        f"| workflow commit | `{commit}` ({state}) |",
    ]
    if version.snapshot:
        lines.append(
            f"| exact tree (commit + uncommitted changes) | `{version.snapshot}` (a local commit object, not on any branch) |"
        )
    if version.remote:
        lines.append(f"| repository | {version.remote} |")
    lines.append(f"| workflow archive | `{ARCHIVE}`, made by {version.method} |")
    ran = run_meta.get("perfsnake_commit")
    if ran and ran != commit:
        lines.append(
            f"| **commit the runs were made with** | `{ran}` ({run_meta.get('perfsnake_tree', '?')}) - differs from the packed tree |"
        )
    for key, label in (
        ("python", "Python"),
        ("snakemake", "Snakemake"),
        ("pandas", "pandas"),
        ("compiler", "compiler"),
    ):
        lines.append(f"| {label} | {run_meta.get(key) or host.get(key)} |")
    for key, label in (
        ("hostname", "ran on host"),
        ("utc_time", "ran at (UTC)"),
        ("os_release", "OS"),
        ("uname", "kernel"),
        ("cpu_model", "CPU"),
        ("online_cpus", "online CPUs"),
        ("memory", "memory"),
    ):
        lines.append(f"| {label} | {run_meta.get(key, '?')} |")
    lines += [
        "",
        "Every Python package of the environment that ran the workflow is listed in",
        "`metadata/python-packages.txt`; the full run metadata (the `#` lines of the",
        "CSV) is in `metadata/run-metadata.txt`, this host's in `metadata/host.json`.",
        "",
        "## Contents",
        "",
        f"- `{campaign_arc}`: the campaign file (was `{campaign_origin}`, sha256 `{campaign_sha}`)",
        "- `config/config.yaml`, `config/schemas/`: the workflow configuration and its schemas",
        f"- `{ARCHIVE}`: the workflow (Snakefile, rules, scripts, the `perfsnake` package, profiles, sources); `workflow/VERSION.txt` says how it was made",
        "- `envs/*.yaml`, `requirements.txt`: the software environments",
        "- `metadata/`: run metadata, host metadata, Python packages, skipped symlinks",
    ]
    lines += [
        f"- `{r}/`: the results: CSV (with `#` metadata lines), JSON, `summary.csv`, `comparisons.csv`, `significant.md`, plots, logs, every run's directory"
        for r in results
    ]
    lines += [
        f"- `report/{name}-report.zip`: Snakemake's report (unzip it and open `report.html`)",
        f"- `{MANIFEST}`: the sha256 of every other file",
        "",
    ]
    if failed:
        lines += [
            f"**Note:** packed with `--allow-failed`: {failed} run(s) failed or timed out (see their `status.json`).",
            "",
        ]
    if skipped:
        lines += [
            f"**Note:** {len(skipped)} symlink(s) or special file(s) in the results were not packed (`metadata/skipped.txt`).",
            "",
        ]
    lines += [
        "## Re-run",
        "",
        "From the directory this file is in:",
        "",
        "```sh",
        f"sha256sum -c {MANIFEST}                      # 1. the artifact is intact",
        f"mkdir perfsnake && tar -xzf {ARCHIVE} -C perfsnake && cd perfsnake   # 2. the workflow",
        "make setup                                       # 3. Debian packages, .venv with requirements.txt (Debian 12, root or sudo)",
        f"make run CAMPAIGN={camp}          # 4. the campaign",
        f"make report CAMPAIGN={camp}       #    optional: report.html",
        "```",
        "",
        "Step 4 is the same as",
        "",
        "```sh",
        f".venv/bin/snakemake --cores 1 all --config campaign={camp}",
        "```",
        "",
    ]
    if version.commit:
        where = version.remote or "<repository>"
        lines += [
            "Instead of step 2, from the repository:",
            "",
            "```sh",
            f"git clone {where} perfsnake && cd perfsnake && git checkout {version.commit}",
        ]
        if version.dirty:
            lines.append(
                "git apply ../workflow/uncommitted.diff   # the uncommitted changes the campaign was packed with"
            )
        lines += ["```", ""]
    lines += [
        "## Compare with the packed results",
        "",
        f"The re-run writes `{layout.campaign_dir('<campaign>')}/` inside `perfsnake/`. Per record and",
        "metric, compare the new means with the packed ones and their 95 % intervals:",
        "",
        "```sh",
        f".venv/bin/python -m perfsnake compare ../{layout.summary(name)} {layout.summary(name)}",
        "```",
        "",
        "It prints one CSV line per record and metric: packed and new n and mean, the",
        "relative difference, and whether the new mean lies inside the packed interval.",
        "`comparisons.csv` and `significant.md` hold the Welch tests between records;",
        f"`diff ../{layout.significant(name)} {layout.significant(name)}` shows",
        "whether the same differences are significant. The machine matters: compare",
        "`metadata/run-metadata.txt` with the new CSV's `#` lines (CPU, kernel,",
        "governor, SMT, ...).",
        "",
    ]
    return "\n".join(lines)


# --- the command -----------------------------------------------------------------------------------


def build(config: dict, overrides: list[str], output: str | None, allow_failed: bool, extra: list[str]) -> Path:
    """Pack the one campaign the configuration names. Raises ArtifactError before writing anything."""
    from perfsnake.failed_runs import failed_runs
    from perfsnake.planning import index_from_config

    plan = index_from_config(config, measuring=False)
    mains = [c for c in plan.campaigns.values() if not c.control_of and not c.why_of]
    if len(mains) != 1:
        names = ", ".join(c.name for c in mains)
        raise ArtifactError(
            f"the configuration names {len(mains)} campaigns ({names}); choose one with --config campaign=PATH"
        )
    main = mains[0]
    campaigns = [main, *[plan.campaigns[n] for n in plan.controls(main.name)]]
    for c in campaigns:
        csv = Path(layout.csv(c.name))
        if not csv.exists():
            raise ArtifactError(
                f"campaign {c.name} is not finished: {csv} is missing (run it first: make run CAMPAIGN={main.file})"
            )
    failed = failed_runs(plan)
    if failed and not allow_failed:
        raise ArtifactError(
            f"campaign {main.name} has {len(failed)} failed or timed-out run(s) (listed by python -m perfsnake failed); "
            f"re-run them with python -m perfsnake rerun-failed --config campaign={main.file}, or pack anyway with --allow-failed"
        )
    out = Path(output) if output else Path(layout.artifact_zip(main.name))
    if out.suffix != ".zip":
        raise ArtifactError(f"the output must be a .zip file: {out}")
    config_file = config_path()

    entries: dict[str, Path | bytes] = {}
    campaign_arc = f"campaign/{main.file.name}"
    entries[campaign_arc] = main.file
    entries["config/config.yaml"] = config_file
    for schema in sorted((ROOT / "config" / "schemas").glob("*")):
        if schema.is_file():
            entries[f"config/schemas/{schema.name}"] = schema
    for env in sorted((ROOT / "envs").glob("*.yaml")):
        entries[f"envs/{env.name}"] = env
    if (ROOT / "requirements.txt").exists():
        entries["requirements.txt"] = ROOT / "requirements.txt"

    skipped: list[str] = []
    results = []
    for c in campaigns:
        rdir = Path(layout.campaign_dir(c.name))
        files, skip = results_files(rdir, layout.campaign_dir(c.name), [out, rdir / "artifact"])
        entries.update(files)
        skipped += skip
        results.append(layout.campaign_dir(c.name))
    csv = Path(layout.csv(main.name))
    meta_lines = csv_metadata(csv)
    from perfsnake.campaign_csv import read_metadata

    run_meta = read_metadata(csv)
    host = host_metadata()
    entries["metadata/run-metadata.txt"] = ("\n".join(meta_lines) + "\n").encode()
    entries["metadata/host.json"] = (json.dumps(host, indent=2, sort_keys=True, default=str) + "\n").encode()
    entries["metadata/python-packages.txt"] = python_packages().encode()
    if skipped:
        entries["metadata/skipped.txt"] = ("\n".join(skipped) + "\n").encode()

    with tempfile.TemporaryDirectory(prefix="perfsnake-artifact-") as tmpdir:
        tmp = Path(tmpdir)
        report = tmp / f"{main.name}-report.zip"
        proc = _run(snakemake_command(config_file, overrides, extra, "--report", str(report), "all"))
        if proc.returncode != 0 or not report.exists():
            raise ArtifactError(f"snakemake --report failed: {_error_line(proc)}")
        entries[f"report/{main.name}-report.zip"] = report

        tree, version = workflow_tree(tmp)
        archive, reason = snakemake_archive(tree, main.file, config_file, overrides, tmp)
        if archive is not None:
            version.method = "snakemake --archive (in a scratch git repository holding the tree and the campaign)"
            entries[ARCHIVE] = archive
        else:
            version.notes.append(f"snakemake --archive was not used ({reason}); {version.method} instead")
            entries[ARCHIVE] = tree
        if version.diff:
            entries["workflow/uncommitted.diff"] = version.diff
        info = {
            "commit": version.commit,
            "dirty": version.dirty,
            "snapshot_commit": version.snapshot,
            "remote": version.remote,
            "archive": ARCHIVE,
            "method": version.method,
            "notes": version.notes,
            "run_commit": run_meta.get("perfsnake_commit"),
            "run_tree": run_meta.get("perfsnake_tree"),
        }
        entries["workflow/VERSION.txt"] = "".join(f"{k}: {json.dumps(v)}\n" for k, v in info.items()).encode()
        entries["REPRODUCE.md"] = reproduce_md(
            main.name, campaign_arc, main.origin, main.sha256, version, run_meta, host, results, len(failed), skipped
        ).encode()
        write_zip(out, f"{main.name}-artifact", entries)
    for note in version.notes:
        print(f"perfsnake: artifact: note: {note}", file=sys.stderr)
    return out


# --- comparing a re-run with the packed results ----------------------------------------------------


def compare_summaries(packed: Path, new: Path) -> list[dict[str, object]]:
    """Per record and metric: packed and new n and mean, relative difference, new mean in the packed CI."""
    import pandas as pd

    from perfsnake.campaign_csv import read_results
    from perfsnake.statistics.records import STAT_PREFIX

    old_frame = read_results(packed, dtype=str)
    new_frame = read_results(new, dtype=str)
    # A statistics column named like a variable is prefixed in summary.csv (stat_column).
    metric, n, mean, ci_low, ci_high = (
        STAT_PREFIX + c if STAT_PREFIX + c in old_frame else c
        for c in ("metric", "n", "mean", "mean_ci_low", "mean_ci_high")
    )
    keys = list(old_frame.columns[: list(old_frame.columns).index(metric) + 1])
    merged = old_frame.merge(new_frame, on=keys, how="outer", suffixes=("_packed", "_new"), indicator=True)
    rows = []
    for _, r in merged.iterrows():
        row: dict[str, object] = {k: r[k] for k in keys}
        old_mean, new_mean = pd.to_numeric(r.get(f"{mean}_packed")), pd.to_numeric(r.get(f"{mean}_new"))
        low, high = pd.to_numeric(r.get(f"{ci_low}_packed")), pd.to_numeric(r.get(f"{ci_high}_packed"))
        row |= {
            "n_packed": r.get(f"{n}_packed"),
            "mean_packed": old_mean,
            "n_new": r.get(f"{n}_new"),
            "mean_new": new_mean,
        }
        row["rel_diff"] = (
            (new_mean - old_mean) / abs(old_mean)
            if pd.notna(old_mean) and pd.notna(new_mean) and old_mean
            else float("nan")
        )
        if r["_merge"] != "both":
            row["in_packed_ci"] = "only in packed" if r["_merge"] == "left_only" else "only in new"
        elif pd.isna(low) or pd.isna(high) or pd.isna(new_mean):
            row["in_packed_ci"] = "n/a"
        else:
            row["in_packed_ci"] = "yes" if low <= new_mean <= high else "no"
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    import argparse
    import csv as csv_module

    parser = argparse.ArgumentParser(prog="python -m perfsnake.artifact")
    sub = parser.add_subparsers(dest="command", required=True)
    cmp = sub.add_parser("compare", help="compare a re-run's summary.csv with the packed one")
    cmp.add_argument("packed")
    cmp.add_argument("new")
    args = parser.parse_args(argv)
    rows = compare_summaries(Path(args.packed), Path(args.new))
    buf = io.StringIO()
    if rows:
        writer = csv_module.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    sys.stdout.write(buf.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
