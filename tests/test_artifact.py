"""`python -m perfsnake artifact`: a finished campaign packed as one zip, re-runnable."""

import hashlib
import io
import json
import subprocess
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

import pytest
from helpers import ROOT, SNAKEMAKE, env_without_snakemake, snakemake, write_campaign

from perfsnake.campaign_csv import read_csv
from perfsnake.safefile import extract_tar

pytestmark = pytest.mark.e2e

PYTHON = str(Path(SNAKEMAKE).with_name("python"))
TOP = "c-artifact"


def campaign(command="echo value={x}", variables=None, **extra):
    data = {
        "name": "c",
        "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\S+)"}},
        "variables": variables if variables is not None else {"x": [1, 2]},
        "nb_runs": 2,
        "plots": [{"kind": "bar", "x": "x", "y": "value", "name": "values"}],
    }
    data.update(extra)
    return data


def artifact(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**env_without_snakemake(), "PYTHONPATH": str(ROOT)}
    cmd = [PYTHON, "-m", "perfsnake", "artifact", *args]
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, env=env, timeout=300, check=False)


def read_zip(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert names == sorted(names)
        for name in names:
            pure = PurePosixPath(name)
            assert not pure.is_absolute() and ".." not in pure.parts and pure.parts[0] == TOP, name
        return {name[len(TOP) + 1 :]: zf.read(name) for name in names}


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    """A finished campaign (2 records x 2 runs, one plot) and its artifact."""
    work = tmp_path_factory.mktemp("artifact")
    camp = write_campaign(work, campaign())
    snakemake(work, camp, "--cores", "1", "all")
    proc = artifact(work, "--config", f"campaign={camp}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = work / "results" / "c" / "artifact" / "c-artifact.zip"
    assert proc.stdout.strip() == str(out.relative_to(work))
    return work, camp, out, read_zip(out)


def test_zip_holds_campaign_config_envs_results_metadata(packed):
    work, camp, _, files = packed
    assert files["campaign/c.yaml"] == camp.read_bytes()
    # The configuration and environments as they were when packed (the same as in the workflow
    # archive; this tree is shared, so not compared with the files on disk now).
    with tarfile.open(fileobj=io.BytesIO(files["workflow/workflow.tar.gz"])) as tar:
        packed_tree = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    envs = {n for n in packed_tree if n.startswith("envs/") and n.endswith(".yaml")}
    assert envs and envs == {n for n in files if n.startswith("envs/")}
    schemas = {n for n in packed_tree if n.startswith("config/schemas/")}
    assert "config/schemas/campaign.schema.yaml" in schemas and schemas == {
        n for n in files if n.startswith("config/schemas/")
    }
    for name in (*envs, *schemas, "config/config.yaml", "requirements.txt"):
        assert files[name] == packed_tree[name], name
    # The results directory, byte for byte, with the CSV's metadata lines.
    base = work / "results" / "c"
    on_disk = {
        f"results/c/{p.relative_to(base).as_posix()}"
        for p in base.rglob("*")
        if p.is_file() and "artifact" not in p.relative_to(base).parts
    }
    assert on_disk == {n for n in files if n.startswith("results/")}
    for name in ("c.csv", "c.json", "summary.csv", "comparisons.csv", "significant.md", "plots/values.svg", "plots/values.png",
                 "runs/x-1/run-1/status.json", "runs/x-2/run-2/result.json", "runs/x-2/run-2/stdout.txt", "runs/x-1/run-2/command.sh"):  # fmt: skip
        assert files[f"results/c/{name}"] == (base / name).read_bytes(), name
    csv = files["results/c/c.csv"].decode()
    assert "# hostname: " in csv and "# runs_ok: 4" in csv
    frame = read_csv(io.StringIO(csv))
    assert sorted(frame["value"]) == [1, 1, 2, 2]
    meta = files["metadata/run-metadata.txt"].decode().splitlines()
    assert meta and all(ln.startswith("#") for ln in meta) and "# runs_ok: 4" in meta
    host = json.loads(files["metadata/host.json"])
    assert host["snakemake"] and host["cpu_model"] is not None and "perfsnake_commit" in host
    assert "snakemake==" in files["metadata/python-packages.txt"].decode().lower()
    # The artifact is not inside itself, and nothing Snakemake tracks was touched.
    assert not any(n.startswith("results/c/artifact") for n in files)
    assert (base / "c.csv").stat().st_mtime_ns <= packed[2].stat().st_mtime_ns


def test_manifest_hashes_match(packed):
    files = packed[3]
    listed = {}
    for line in files["MANIFEST.sha256"].decode().splitlines():
        digest, name = line.split("  ", 1)
        listed[name] = digest
    assert set(listed) == set(files) - {"MANIFEST.sha256"}
    for name, digest in listed.items():
        assert hashlib.sha256(files[name]).hexdigest() == digest, name
    # sha256sum -c works inside the unpacked artifact.
    out = packed[0] / "unpacked-manifest"
    zipfile.ZipFile(packed[2]).extractall(out)
    subprocess.run(["sha256sum", "--quiet", "-c", "MANIFEST.sha256"], cwd=out / TOP, check=True)


def test_report_is_a_zip_with_the_html_and_plot(packed):
    with zipfile.ZipFile(io.BytesIO(packed[3]["report/c-report.zip"])) as zf:
        assert zf.testzip() is None
        names = zf.namelist()
        html = zf.read(next(n for n in names if n.endswith("report.html"))).decode()
    assert any(n.endswith("values.svg") for n in names), names
    assert "<html" in html.lower() and "values" in html


def test_workflow_version_archive_and_instructions(packed):
    files = packed[3]
    version = {
        k: json.loads(v)
        for k, _, v in (ln.partition(": ") for ln in files["workflow/VERSION.txt"].decode().splitlines())
    }
    commit = version["commit"]
    # HEAD when packed (others may commit in this tree meanwhile).
    subprocess.run(["git", "merge-base", "--is-ancestor", commit, "HEAD"], cwd=ROOT, check=True)
    assert version["method"].startswith(("snakemake --archive", "git archive"))
    if version["method"].startswith("git archive"):
        # The fallback says why snakemake --archive was not used.
        assert any("snakemake --archive was not used" in n for n in version["notes"]), version
    if version["dirty"]:
        assert files["workflow/uncommitted.diff"].startswith(b"diff --git")
    else:
        assert "workflow/uncommitted.diff" not in files
    with tarfile.open(fileobj=io.BytesIO(files["workflow/workflow.tar.gz"])) as tar:
        names = set(tar.getnames())
        snakefile = tar.extractfile("workflow/Snakefile").read()
    exact = version["snapshot_commit"] or commit
    assert (
        snakefile
        == subprocess.run(
            ["git", "show", f"{exact}:workflow/Snakefile"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    )
    assert {
        "rules/report.smk",
        "rules/run.smk",
        "perfsnake/cli.py",
        "perfsnake/artifact.py",
        "profiles/default/config.yaml",
        "Makefile",
    } <= names
    assert not any(n.startswith(("results/", ".venv/", ".git/")) for n in names)
    text = files["REPRODUCE.md"].decode()
    assert commit in text
    assert "make setup" in text and "make run CAMPAIGN=../campaign/c.yaml" in text
    assert "tar -xzf workflow/workflow.tar.gz" in text and "sha256sum -c MANIFEST.sha256" in text
    host = json.loads(files["metadata/host.json"])
    assert host["snakemake"] in text and host["python"] in text


def test_rerun_from_the_artifact_matches(packed, tmp_path):
    """Unpack the artifact and its workflow, run the campaign with it, compare with the packed results."""
    zipfile.ZipFile(packed[2]).extractall(tmp_path)
    top = tmp_path / TOP
    wf = top / "perfsnake"
    wf.mkdir()
    with tarfile.open(top / "workflow" / "workflow.tar.gz") as tar:
        extract_tar(tar, wf)
    cmd = [SNAKEMAKE, "-s", str(wf / "workflow/Snakefile"), "--workflow-profile", str(wf / "profiles/default"),
           "--configfile", str(wf / "config/config.yaml"), "--cores", "1", "all", "--config", "campaign=../campaign/c.yaml"]  # fmt: skip
    proc = subprocess.run(
        cmd, cwd=wf, capture_output=True, text=True, env=env_without_snakemake(), timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(read_csv(wf / "results/c/c.csv")["value"]) == [1, 1, 2, 2]
    # The unpacked workflow is as portable as a checkout: its next run plans nothing.
    again = subprocess.run([*cmd, "-n"], cwd=wf, capture_output=True, text=True, env=env_without_snakemake(),
                           timeout=300, check=False)  # fmt: skip
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stdout[-3000:]
    # The comparison REPRODUCE.md describes, with the unpacked workflow's code.
    cmp = subprocess.run(
        [PYTHON, "-m", "perfsnake", "compare", "../results/c/summary.csv", "results/c/summary.csv"],
        cwd=wf, capture_output=True, text=True, env={**env_without_snakemake(), "PYTHONPATH": str(wf)}, timeout=60, check=True,
    )  # fmt: skip
    rows = list(csv_rows(cmp.stdout))
    value = {r["x"]: r for r in rows if r["metric"] == "value"}
    assert set(value) == {"1", "2"}
    assert all(r["in_packed_ci"] == "yes" and float(r["rel_diff"]) == 0 for r in value.values()), rows


def csv_rows(text):
    import csv

    return csv.DictReader(io.StringIO(text))


def test_same_campaign_packs_the_same_listing_and_symlinks_stay_inside(packed, tmp_path):
    work, camp, first, files = packed
    runs = work / "results" / "c" / "runs" / "x-1" / "run-1"
    (runs / "outside-file").symlink_to("/etc/passwd")
    (runs / "outside-dir").symlink_to(tmp_path)
    (tmp_path / "secret.txt").write_text("secret")
    (runs / "inside").symlink_to("stdout.txt")
    try:
        out = tmp_path / "again.zip"
        proc = artifact(work, "--config", f"campaign={camp}", "--output", str(out))
        assert proc.returncode == 0, proc.stderr[-3000:]
        again = read_zip(out)
    finally:
        for name in ("outside-file", "outside-dir", "inside"):
            (runs / name).unlink()
    # Same entries in the same (sorted) order; the same bytes for the campaign, its results and
    # metadata. (The workflow parts follow this shared tree, which others may edit meanwhile.)
    diff = "workflow/uncommitted.diff"
    assert set(again) - {diff} == (set(files) - {diff}) | {"results/c/runs/x-1/run-1/inside", "metadata/skipped.txt"}
    for name in files:
        if name.startswith(("results/", "campaign/", "metadata/run-metadata.txt")):
            assert again[name] == files[name], name
    assert again["results/c/runs/x-1/run-1/inside"] == (runs / "stdout.txt").read_bytes()
    skipped = again["metadata/skipped.txt"].decode()
    assert "outside-file -> /etc/passwd" in skipped and "outside-dir" in skipped
    assert not any(v == b"secret" or v == Path("/etc/passwd").read_bytes() for v in again.values())


def test_unfinished_campaign_is_refused_with_one_line(tmp_path):
    camp = write_campaign(tmp_path, campaign())
    proc = artifact(tmp_path, "--config", f"campaign={camp}")
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "not finished" in lines[0] and "results/c/c.csv" in lines[0], proc.stderr
    assert not (tmp_path / "results").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["campaigns"]


def test_campaign_with_failed_runs_is_refused_unless_allowed(tmp_path):
    command = "if [ {x} = bad ]; then echo broken >&2; exit 3; fi; echo value=1"
    camp = write_campaign(tmp_path, campaign(command=command, variables={"x": ["good", "bad"]}, nb_runs=1, plots=[]))
    snakemake(tmp_path, camp, "--cores", "1", "all")
    before = sorted(p for p in tmp_path.rglob("*"))
    proc = artifact(tmp_path, "--config", f"campaign={camp}")
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "1 failed" in lines[0] and "python -m perfsnake rerun-failed" in lines[0] and "--allow-failed" in lines[0]
    assert sorted(p for p in tmp_path.rglob("*")) == before
    out = tmp_path / "packed" / "with-failures.zip"
    proc = artifact(tmp_path, "--config", f"campaign={camp}", "--output", str(out), "--allow-failed")
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = read_zip(out)
    assert json.loads(files["results/c/runs/x-bad/run-1/status.json"])["status"] == "failed"
    assert "1 run(s) failed" in files["REPRODUCE.md"].decode()


def test_make_artifact_target():
    proc = subprocess.run(
        ["make", "-n", "artifact", "CAMPAIGN=x.yaml", "OUTPUT=y.zip"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "-m perfsnake artifact --config campaign=x.yaml --output y.zip" in proc.stdout, proc.stdout


def test_snakemake_archive_is_really_tried(packed, tmp_path):
    """The real `snakemake --archive`, in a scratch git repository holding the tree and the campaign:
    it either archives the workflow or fails for want of conda (it creates every rule's environment)."""
    from perfsnake.artifact import snakemake_archive, workflow_tree

    tree, version = workflow_tree(tmp_path)
    assert version.commit and version.method == "git archive"
    archive, reason = snakemake_archive(tree, packed[1], ROOT / "config" / "config.yaml", [], tmp_path, force=True)
    if archive is None:
        assert "conda" in reason, reason
    else:
        with tarfile.open(archive) as tar:
            names = set(tar.getnames())
        assert {"workflow/Snakefile", "rules/run.smk", "artifact-campaign/c.yaml"} <= names
