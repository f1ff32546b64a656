"""MkDocs hooks (mkdocs.yml `hooks:`): the op table of docs/api/ops.md, made from the registry.

nbflow's ops are `nbflow.Op` instances declared by decorators, not functions, so mkdocstrings
cannot list them; this hook replaces the marker `<!-- nbflow:ops -->` with one row per op of
`nbflow.ops.REGISTRY`: its call, outputs, attrs, dtypes, gradient and docstring's first line.
"""

from __future__ import annotations

MARKER = "<!-- nbflow:ops -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def _summary(doc: str | None) -> str:
    paragraph = (doc or "").strip().split("\n\n")[0]
    return _cell(" ".join(line.strip() for line in paragraph.splitlines()))


def ops_table() -> str:
    """The markdown table of every registered op, by name."""
    import nbflow

    rows = [
        "| op | inputs → outputs | attrs | dtypes | gradient | what it does |",
        "|---|---|---|---|---|---|",
    ]
    for name, op in sorted(nbflow.ops.REGISTRY.items()):
        attrs = ", ".join(
            attr  # a required attr (its default is a bare sentinel object)
            if type(spec.default) is object
            else f"{attr}={spec.default!r}"
            for attr, spec in op.attrs.items()
        )
        dtypes = ", ".join(str(d) for d in op.dtypes)
        grad = "yes" if op.grad is not None else ("no" if not op.differentiable else "-")
        call = f"`{name}({', '.join(op.inputs)})` → {', '.join(op.outputs)}"
        rows.append(
            f"| `{name}` | {_cell(call)} | {_cell(attrs)} | {dtypes} | {grad} | "
            f"{_summary(op.doc)} |"
        )
    return "\n".join(rows)


def on_page_markdown(markdown, page, config, files):  # MkDocs calls it with these names
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, ops_table())
    return markdown
