"""Software deployment declarations (--sdm conda / apptainer): neither conda
channels nor apptainer are reachable here, so they are checked, not run."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import yaml
from helpers import ROOT

RULE = re.compile(r"^(?:rule|checkpoint) (\w+):\n(.*?)(?=^\S|\Z)", re.M | re.S)


def rules() -> dict[str, str]:
    out = {}
    for path in sorted((ROOT / "rules").glob("*.smk")):
        for name, body in RULE.findall(path.read_text()):
            out[name] = body
    return out


def test_every_rule_running_software_declares_a_pinned_conda_env():
    found = rules()
    assert {"fetch", "build", "tool", "aggregate", "plot", "flamegraph"} <= set(found)
    for name, body in found.items():
        runs_software = re.search(r"^    (shell|script):", body, re.M)
        # `run:` blocks execute inside the Snakemake process (the lean
        # measurement path); conda: does not apply to them.
        if not runs_software:
            assert re.search(r"^    run:", body, re.M) or "input:" in body, name
            continue
        env = re.search(r'^    conda:\n        "\.\./(envs/[\w.-]+\.yaml)"', body, re.M)
        assert env, f"rule {name} runs software without a conda: environment"
        spec = yaml.safe_load((ROOT / env.group(1)).read_text())
        assert spec["channels"][-1] == "nodefaults"
        for dep in spec["dependencies"]:
            assert re.fullmatch(r"[a-z0-9_.-]+=[0-9][\w.]*", dep), f"{env.group(1)}: {dep!r} is not pinned"


def test_workflow_declares_a_pinned_container_image():
    text = (ROOT / "workflow" / "Snakefile").read_text()
    image = re.search(r'^container: "docker://([^"]+)"', text, re.M)
    assert image and not image.group(1).endswith(":latest") and ":" in image.group(1)


# ---- what a rule's code imports is what its environment provides ---------------
PACKAGE = "perfsnake"
# Snakemake's script preamble puts the running Snakemake's own package
# directory on the script's sys.path (that is how the `snakemake` object
# reaches it), so an environment needs no Snakemake of its own; a second,
# different one could only disagree with the runner.
PROVIDED_BY_RUNNER = {"snakemake"}


def module_file(name: str) -> Path | None:
    """The source of a perfsnake module (None: a name inside a module, not a module)."""
    path = ROOT.joinpath(*name.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _type_checking_only(node: ast.If) -> bool:
    # Imports under `if TYPE_CHECKING:` never run.
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_names(path: Path, module: str) -> set[str]:
    """Every dotted name `path` imports, anywhere in it (a function's lazy
    import counts: the job may call it), relative imports resolved."""
    tree = ast.parse(path.read_text(), str(path))
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _type_checking_only(node)
               for stmt in node.body for n in ast.walk(stmt)}  # fmt: skip
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    names = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            source = ".".join([*base, *([node.module] if node.module else [])])
            # `from perfsnake.stages import build` imports a module: try both readings.
            names |= {source, *(f"{source}.{alias.name}" for alias in node.names)}
    return names


def dynamic_imports(path: Path) -> bool:
    text = path.read_text()
    return "import_module(" in text or "__import__(" in text


def build_spec_classes() -> set[str]:
    """The modules a build job imports by name (perfsnake.stages.build's
    builder_from_spec): those of every benchmark and instrument builder class."""
    import perfsnake.benchmarks
    import perfsnake.instruments.registry  # noqa: F401 (defines the builders)
    from perfsnake.benchmarks.base import Benchmark

    def subclasses(cls: type) -> list[type]:
        return [c for sub in cls.__subclasses__() for c in (sub, *subclasses(sub))]

    return {c.__module__ for c in subclasses(Benchmark) if c.__module__.startswith(PACKAGE + ".")}


#: Modules that import by a computed name, and what those names can be.
DYNAMIC = {"perfsnake.stages.build": build_spec_classes}


def third_party_imports(entry: Path) -> dict[str, str]:
    """Top-level third-party module -> one perfsnake module (or the script)
    that imports it, over everything `entry` reaches through the package."""
    found: dict[str, str] = {}
    seen: set[str] = set()
    todo = [(entry, entry.name)]
    while todo:
        path, module = todo.pop()
        if dynamic_imports(path):
            assert module in DYNAMIC, f"{module} imports by a computed name: say in DYNAMIC what it can import"
            todo += [(module_file(m), m) for m in DYNAMIC[module]() if m not in seen]  # type: ignore[misc]
            seen |= set(DYNAMIC[module]())
        for name in imported_names(path, module):
            parts = name.split(".")
            top = parts[0]
            if top == PACKAGE:
                # Importing a.b.c runs a/__init__.py and a/b/__init__.py too.
                for i in range(1, len(parts) + 1):
                    sub = ".".join(parts[:i])
                    file = module_file(sub)
                    if file is not None and sub not in seen:
                        seen.add(sub)
                        todo.append((file, sub))
            elif top not in sys.stdlib_module_names and top not in PROVIDED_BY_RUNNER and top != "__future__":
                found.setdefault(top, module)
    return found


def canonical(name: str) -> str:
    """A distribution's name as conda-forge spells it (PyYAML: pyyaml)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned_requirements() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep:
            pins[canonical(name)] = version
    return pins


SHELL_PYTHON = re.compile(r"\bpython3?\s+(?:-m\s+([\w.]+)|(\S+\.py))")


def rule_code(name: str, body: str) -> list[Path]:
    """The Python files a rule's job runs: its script:, or what its shell:
    starts with python (-m module or a .py file); none for other programs."""
    script = re.search(r'^    script:\n        "([^"]+)"', body, re.M)
    if script:
        path = (ROOT / "rules" / script.group(1)).resolve()
        assert path.suffix == ".py" and path.is_file(), f"rule {name}: script {script.group(1)}"
        return [path]
    shell = re.search(r"^    shell:\n(.*)", body, re.M | re.S)
    assert shell, f"rule {name} has neither script: nor shell:"
    code = []
    for module, file in SHELL_PYTHON.findall(shell.group(1)):
        path = module_file(module) if module else ROOT / file
        assert path is not None and path.is_file(), f"rule {name} runs Python this test cannot find: {module or file}"
        code.append(path)
    return code


def test_every_import_of_a_rules_code_is_in_its_conda_env_at_the_pinned_version():
    dists = importlib.metadata.packages_distributions()
    pins = pinned_requirements()
    python = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["python_version"]
    problems, checked = set(), set()
    for name, body in rules().items():
        env = re.search(r'^    conda:\n        "\.\./(envs/[\w.-]+\.yaml)"', body, re.M)
        if not env:
            continue
        deps = dict(d.split("=", 1) for d in yaml.safe_load((ROOT / env.group(1)).read_text())["dependencies"])
        code = rule_code(name, body)
        if code and deps.get("python") != python:
            problems.add(f"{env.group(1)}: rule {name} runs Python, needs python={python}")
        for path in code:
            for module, importer in third_party_imports(path).items():
                assert module in dists, f"{importer} imports {module}, which no installed distribution provides"
                for dist in map(canonical, dists[module]):
                    assert dist in pins, f"{importer} imports {module} ({dist}), not pinned in requirements.txt"
                    checked.add(dist)
                    if deps.get(dist) != pins[dist]:
                        problems.add(
                            f"{env.group(1)}: rule {name} ({path.name}, through {importer}) imports {module}: "
                            f"needs {dist}={pins[dist]}, has {dist}={deps.get(dist)}"
                        )
    # What an environment pins beyond that is the venv's version too: a job
    # runs the same software as the tests (altair's vl-convert, say).
    for path in sorted((ROOT / "envs").glob("*.yaml")):
        for dep in yaml.safe_load(path.read_text())["dependencies"]:
            dist, _, version = dep.partition("=")
            if dist in pins and version != pins[dist]:
                problems.add(f"envs/{path.name}: {dist}={version}, requirements.txt pins {pins[dist]}")
    assert not problems, "\n".join(sorted(problems))
    # The walk found the imports at all (an empty result would pass vacuously).
    assert {"pandas", "numpy", "scipy", "altair", "statsmodels", "ruptures", "pyyaml"} <= checked
