"""The package's import graph: no cycles, and imports point down the layers.

    python -m perfsnake.devtools.imports      # prints problems, exits 1 if any

Every `import`/`from ... import` of a perfsnake module counts, deferred ones
(inside functions) included; imports under `if TYPE_CHECKING:` do not, since
they never run. Layers, lowest first: a module may import from its own layer
and the ones below it, never from a higher one.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent

#: module prefix -> layer (lowest first); the longest matching prefix wins.
LAYERS: dict[str, int] = {
    "perfsnake": 0,  # __init__: ROOT only
    "perfsnake.errors": 0,
    "perfsnake.escape": 0,
    "perfsnake.pages": 0,  # the page model and its renderers (Markdown, HTML with Jinja2 templates, LaTeX, Org)
    "perfsnake.snakemake_internals": 0,  # what relies on Snakemake's internals (no perfsnake imports)
    "perfsnake.shell_template": 1,
    "perfsnake.layout": 1,
    "perfsnake.store_location": 1,  # where the results store is (no SQLAlchemy): the store's and run_times
    "perfsnake.campaign_csv": 1,
    "perfsnake.schema": 1,
    "perfsnake.machine": 1,
    "perfsnake.machine.tune": 1,  # `perfsnake tune`: writes what machine.metadata reads
    "perfsnake.machine.requirements": 1,  # a campaign's `requires:` against machine.metadata's facts
    "perfsnake.statistics": 1,  # every estimator and test (numpy, scipy, ruptures)
    "perfsnake.importers": 1,  # other tools' files, parsed
    "perfsnake.contract": 2,  # what a stage knows of its campaign (CampaignInfo): planning -> stages
    "perfsnake.precision": 2,
    "perfsnake.noise_floor": 2,
    "perfsnake.bisect": 2,
    "perfsnake.versions": 2,
    "perfsnake.benchmarks": 2,
    "perfsnake.placement": 2,  # placement policies of prior work, their inputs from machine.capabilities, their daemon
    "perfsnake.instruments": 3,
    "perfsnake.platforms": 3,
    "perfsnake.gates": 3,
    "perfsnake.campaign": 4,  # the package and its modules, all on one layer
    "perfsnake.campaign.yamlfile": 4,
    "perfsnake.campaign.model": 4,
    "perfsnake.campaign.records": 4,
    "perfsnake.campaign.checks": 4,
    "perfsnake.campaign.stopping": 4,
    "perfsnake.campaign.derived": 4,
    "perfsnake.campaign.load": 4,
    "perfsnake.figures": 4,
    "perfsnake.planning": 5,
    "perfsnake.failed_runs": 6,
    "perfsnake.ci_outputs": 6,  # the gates' verdicts for CI systems (JUnit, Markdown, a verdict file)
    "perfsnake.script_helpers": 6,
    "perfsnake.stages": 6,
    "perfsnake.artifact": 7,
    "perfsnake.compare": 7,
    "perfsnake.run_times": 7,  # measured run times from the store, handed to planning by the workflow
    "perfsnake.history": 7,  # the results store, its views (the regression view's step finder) and the history rule
    "perfsnake.importers.command": 7,  # `perfsnake import`: writes a campaign, runs the workflow
    "perfsnake.cli": 8,
    "perfsnake.__main__": 9,
    "perfsnake.devtools": 9,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(module: str) -> int:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best]


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    return skip


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The perfsnake modules a file imports (resolved to existing modules)."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_nodes(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name.startswith("perfsnake"):
                found.add(name)
    return found


def graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(files)
    out = {}
    for name, path in files.items():
        # A package's __init__ is not a dependency of its own submodules' imports.
        out[name] = {m for m in imports_of(path, modules) if m != name and not name.startswith(m + ".")}
    return out


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def upward(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, deps in g.items() for b in deps if layer(b) > layer(a))


def problems() -> list[str]:
    g = graph()
    out = [f"import cycle: {' <-> '.join(c)}" for c in cycles(g)]
    out += [f"upward import: {a} (layer {layer(a)}) imports {b} (layer {layer(b)})" for a, b in upward(g)]
    return out


def main() -> int:
    found = problems()
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
