"""A table of the page model as LaTeX (booktabs), to paste into a paper."""

from __future__ import annotations

from perfsnake.pages.model import Bold, Cell, Code, Link, Table, Text, spans

SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def text(value: object) -> str:
    """Plain text with LaTeX's special characters escaped (± in math mode)."""
    out = "".join(SPECIAL.get(ch, ch) for ch in str(value))
    return out.replace("±", r"$\pm$")


def inline(value: Text | Cell) -> str:
    out = []
    for s in spans(value.text if isinstance(value, Cell) else value):
        if isinstance(s, str):
            out.append(text(s))
        elif isinstance(s, Code):
            out.append(rf"\texttt{{{text(s.text)}}}")
        elif isinstance(s, Bold):
            out.append(rf"\textbf{{{inline(s.parts)}}}")
        elif isinstance(s, Link):
            out.append(text(s.text))
    return "".join(out)


def table(t: Table, caption: str) -> str:
    width = max([len(t.columns or ()), *(len(r) for r in t.rows)])
    spec = "".join("r" if t.alignment(i) == "right" else "l" for i in range(width))
    lines = [
        r"% needs \usepackage{booktabs}",
        r"\begin{table}",
        r"  \centering",
        f"  \\caption{{{text(caption)}}}",
        f"  \\begin{{tabular}}{{{spec}}}",
        r"    \toprule",
        *(
            ["    " + " & ".join(inline(c) for c in t.columns) + r" \\", r"    \midrule"]
            if t.columns is not None
            else []
        ),
        *("    " + " & ".join(inline(c) for c in r) + r" \\" for r in t.rows),
        r"    \bottomrule",
        r"  \end{tabular}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"
