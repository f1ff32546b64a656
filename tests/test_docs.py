"""The documentation's code runs: every ```python block in docs/**/*.md and README.md runs.

A page's blocks run in order in one namespace (a page reads as one session), in a fresh
temporary folder, so files a block writes go there. A block that truly cannot run in CI (it
needs mpiexec or a GPU) is marked ```python title="no-run: REASON"; the title shows the reason
on the page. Tracebacks point at the page's own lines.
"""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
RUN = [*PAGES, ROOT / "README.md"]  # the front page's taste runs too
NO_RUN = re.compile(r'^python\s+title="no-run: (?P<reason>[^"]+)"\s*$')
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>.*)$")


def code_blocks(path: pathlib.Path):
    """(first line number, info string, source) of each fenced block of a markdown file."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, info = len(match["indent"]), match["fence"], match["info"].strip()
        body, i = [], i + 1
        start = i + 1  # 1-based number of the block's first line
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{path}:{start - 1}: unclosed code fence")
        i += 1
        yield start, info, "\n".join(body) + "\n"


def python_blocks(path):
    """The page's python blocks: (line, source, reason not to run or None)."""
    for line, info, source in code_blocks(path):
        if info.split(" ")[0] not in ("python", "py"):
            continue
        no_run = NO_RUN.match(info)
        if info not in ("python", "py") and not no_run:
            raise AssertionError(f"{path}:{line}: a python block is ```python or no-run: {info}")
        yield line, source, no_run["reason"] if no_run else None


@pytest.mark.parametrize("page", RUN, ids=[str(p.relative_to(ROOT)) for p in RUN])
def test_page_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    for line, source, reason in python_blocks(page):
        if reason is not None:
            continue
        # pad with blank lines so the compiled code's line numbers are the page's
        code = compile("\n" * (line - 1) + source, str(page), "exec")
        exec(code, namespace)


def test_pages_are_in_the_nav():
    """Every page is reachable from mkdocs.yml's nav, and every nav entry exists."""
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())

    def entries(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from entries(item)
        elif isinstance(node, dict):
            for value in node.values():
                yield from entries(value)

    nav = set(entries(config["nav"]))
    pages = {str(p.relative_to(DOCS)) for p in PAGES}
    assert pages - nav == set(), "pages missing from mkdocs.yml's nav"
    assert nav - pages == set(), "nav entries without a page"


def test_api_pages_name_importable_modules():
    """Each API reference page documents a module that imports."""
    import importlib

    for page in sorted((DOCS / "api").glob("*.md")):
        for name in re.findall(r"^::: ([\w.]+)", page.read_text(), flags=re.M):
            importlib.import_module(name)


def test_no_run_blocks_say_why():
    for page in RUN:
        for line, _source, reason in python_blocks(page):
            assert reason is None or len(reason.split()) >= 2, f"{page}:{line}: say why"


def test_the_op_table_lists_every_op():
    """docs/api/ops.md's table (tools/docs_hooks.py) has a row for each registered op."""
    import importlib.util

    import nbflow

    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "tools" / "docs_hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    page = (DOCS / "api" / "ops.md").read_text()
    assert hooks.MARKER in page
    table = hooks.on_page_markdown(page, None, None, None)
    for name in nbflow.ops.REGISTRY:
        assert f"| `{name}` |" in table, name
