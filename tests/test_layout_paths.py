"""perfsnake.layout is the one module that spells results/ and resources/:
every other module asks it for a path, so the tree can move in one place.

The scan reads each module's string constants (f-strings' literal parts
included): a constant naming a path under either directory (`results/...`,
`../resources/...`), or the bare directory name where a path is made of it
(`x / "results"`, `Path("resources")`, a comparison with a path part). Prose in
docstrings and comments may name the directories; a dictionary key
`"results"` (hyperfine's JSON, a table column) is no path.
"""

from __future__ import annotations

import ast
import re

from helpers import ROOT

from perfsnake import layout

OWNER = "perfsnake/layout.py"
#: the directories' names, as layout spells them
DIRECTORIES = (layout.RESULTS, layout.RESOURCES)
#: a path under one of the directories, wherever it starts in the text
UNDER = re.compile(rf"(?<![\w.-])(?:{'|'.join(map(re.escape, DIRECTORIES))})/")
#: calls whose first arguments are path components
PATH_CALLS = {"Path", "PurePath", "PurePosixPath", "join"}

#: Spellings left in modules this change does not own, each the exact constant,
#: until their owners ask layout (issue 34); remove an entry with its spelling.
PENDING: dict[str, set[str]] = {
    "perfsnake/campaign/checks.py": {".csv (not a results/<campaign>/ directory)"},
    "perfsnake/cli.py": {
        "results/<campaign>/ directories or artifact zips (two summary.csv files: the artifact check)",
        "the campaign (and results/NAME/) to create",
        "default: results/<campaign>/artifact/<campaign>-artifact.zip",
    },
    "perfsnake/compare.py": {
        " (expected a results/<campaign>/ directory)",
        ": no results/<campaign>/<campaign>.csv in this zip",
    },
    "perfsnake/stages/tables.py": {"</details>\n<h4>Files (under <tt>results/"},
}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that stand alone as statements (docstrings, attribute notes)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _makes_a_path(node: ast.Constant, parent: ast.AST | None) -> bool:
    """Whether a bare directory name is used as a path component there."""
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Div):
        return True
    if isinstance(parent, ast.Call) and node in parent.args and _callee(parent) in PATH_CALLS:
        return True
    # a path's parts compared with the name, or a set of names to skip
    return isinstance(parent, ast.Compare | ast.Set)


def spellings(source: str) -> list[tuple[int, str]]:
    """(line, constant) of each spelling of results/ or resources/ in a module's source."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in skip:
            continue
        text = node.value
        if UNDER.search(text) or (text in DIRECTORIES and _makes_a_path(node, parents.get(id(node)))):
            found.append((node.lineno, text))
    return sorted(found)


def test_only_layout_spells_results_and_resources():
    problems = []
    for path in sorted((ROOT / "perfsnake").rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        if module == OWNER:
            continue
        for line, text in spellings(path.read_text()):
            if text not in PENDING.get(module, set()):
                problems.append(f"{module}:{line}: {text!r} (ask perfsnake.layout for the path)")
    assert not problems, "\n".join(problems)


def test_the_scan_finds_spellings_and_spares_prose():
    source = '''"""Writes results/<campaign>/ (a docstring may say so)."""
from pathlib import Path


def f(wd, name, data):
    """Under resources/bin."""
    # results/ in a comment
    a = wd / "resources" / "bin"
    b = f"results/{name}/x.csv"
    c = Path("results")
    d = data["results"], {"results": 1}
    e = "the packed results", "perfsnake.campaign_csv", "results.json"
    g = f"<tt>results/{name}</tt>", "cp ../resources/bin/x ."
    h = name == "resources"
'''
    assert [line for line, _ in spellings(source)] == [8, 9, 10, 13, 13, 14]
