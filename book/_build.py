"""Build the book's chapter notebooks from their plain-text sources and store their outputs.

Each chapter is written as a Python file in ``book/_src/`` using the "percent" cell format
that JupyterLab, VS Code and jupytext all understand::

    # %% [markdown]
    # # 03 Segments and rolling
    # Prose in Markdown, one comment line per line.

    # %%
    from kafkalab.book import check_version
    check_version("0.1.0")

    # %% tags=["nbval-ignore-output"]
    print("a cell whose output nbval does not compare")

This script turns ``book/_src/NN-title.py`` into ``book/NN-title.ipynb`` (nbformat 4), runs it
top to bottom with ``KAFKALAB_STATIC_WIDGETS=1`` (so widgets are stored as static figures and
nbval can compare outputs), and writes the notebook with its outputs. Sources diff well and
review well; notebooks are what learners open.

A source with exercise cells (tagged ``answer`` and ``check``; the convention is described in
``kafkalab/classroom/__init__.py``) is the instructor's: it holds the answers and the hidden
checks. It is run answered and stored as ``_instructor/NN-title.ipynb`` (what nbval runs), and
the learner's ``NN-title.ipynb`` is derived from it: blank predictions, public checks only, no
outputs in exercise cells (nbval skips it; see ``conftest.py``).

``--keep-unchanged-outputs`` keeps the stored outputs of every cell whose code did not change
(a chapter that prints measured timings then changes only where its code did).

Usage (from the repository root)::

    .venv/bin/python book/_build.py            # every chapter that has a source
    .venv/bin/python book/_build.py 03 04      # chapters whose names start with 03 or 04
    .venv/bin/python book/_build.py --no-execute 05   # write cells only, no outputs
    .venv/bin/python book/_build.py --keep-unchanged-outputs 13
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ExecutePreprocessor

from kafkalab.classroom import notebooks as classroom

BOOK_DIR = Path(__file__).resolve().parent
SOURCE_DIR = BOOK_DIR / "_src"
INSTRUCTOR_DIRNAME = "_instructor"  # answered notebooks with hidden checks, beside the learner's
CELL_TIMEOUT_S = 120  # one cell of a chapter runs in seconds; two minutes means something hung
_CELL_MARKER = re.compile(r"^# %%(?P<markdown> \[markdown\])?(?: tags=(?P<tags>\[.*\]))?\s*$")


@dataclass(frozen=True, slots=True)
class SourceCell:
    """One cell parsed from a percent-format source."""

    kind: str  # "code" or "markdown"
    text: str
    tags: tuple[str, ...]


def parse_cells(source: str) -> list[SourceCell]:
    """Split a percent-format file into cells; text before the first marker is ignored."""
    cells: list[SourceCell] = []
    kind: str | None = None
    tags: tuple[str, ...] = ()
    lines: list[str] = []

    def flush() -> None:
        if kind is not None:
            cells.append(SourceCell(kind, _cell_text(kind, lines), tags))

    for line in source.splitlines():
        marker = _CELL_MARKER.match(line)
        if marker is None:
            lines.append(line)
            continue
        flush()
        kind = "markdown" if marker.group("markdown") else "code"
        tags = tuple(json.loads(marker.group("tags"))) if marker.group("tags") else ()
        lines = []
    flush()
    return [cell for cell in cells if cell.text]


def _cell_text(kind: str, lines: list[str]) -> str:
    if kind == "markdown":
        lines = [line[2:] if line.startswith("# ") else line.lstrip("#") for line in lines]
    return "\n".join(lines).strip("\n")


def to_notebook(cells: list[SourceCell]) -> nbformat.NotebookNode:
    """A fresh nbformat-4 notebook for the kafkalab kernel."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    }
    notebook.metadata["language_info"] = {"name": "python"}
    for number, cell in enumerate(cells):
        make = nbformat.v4.new_markdown_cell if cell.kind == "markdown" else nbformat.v4.new_code_cell
        node = make(cell.text)
        node["id"] = f"cell-{number:03d}"  # stable ids keep rebuilt notebooks diff-friendly
        if cell.tags:
            node.metadata["tags"] = list(cell.tags)
        notebook.cells.append(node)
    return notebook


def execute(notebook: nbformat.NotebookNode) -> None:
    """Run every cell in ``book/`` with static widgets; raise on the first error."""
    os.environ["KAFKALAB_STATIC_WIDGETS"] = "1"
    processor = ExecutePreprocessor(timeout=CELL_TIMEOUT_S, kernel_name="python3")
    processor.preprocess(notebook, {"metadata": {"path": str(BOOK_DIR)}})
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)  # wall-clock timestamps would churn every rebuild


def build(source: Path, run: bool, keep_unchanged_outputs: bool = False) -> Path:
    target = BOOK_DIR / (source.stem + ".ipynb")
    notebook = to_notebook(parse_cells(source.read_text(encoding="utf-8")))
    graded = classroom.is_graded(notebook)
    stored = BOOK_DIR / INSTRUCTOR_DIRNAME / target.name if graded else target
    if graded:
        classroom.add_grading_metadata(notebook)
    if run:
        execute(notebook)
        previous = stored if stored.exists() else target  # a chapter graded for the first time
        if keep_unchanged_outputs and previous.exists():
            _keep_unchanged_outputs(notebook, nbformat.read(previous, as_version=4))
    nbformat.validate(notebook)
    if graded:
        stored.parent.mkdir(exist_ok=True)
        nbformat.write(notebook, stored)
        notebook = classroom.learner_notebook(notebook)
    nbformat.write(notebook, target)
    return target


def _keep_unchanged_outputs(notebook: nbformat.NotebookNode, old: nbformat.NotebookNode) -> None:
    """Copy the old outputs of each code cell whose source is unchanged, matched in order."""
    old_cells = [c for c in old.cells if c.cell_type == "code"]
    for cell in (c for c in notebook.cells if c.cell_type == "code"):
        match = next((c for c in old_cells if c.source == cell.source), None)
        if match is not None:
            old_cells = old_cells[old_cells.index(match) + 1 :]
            cell.outputs, cell.execution_count = match.outputs, match.execution_count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build book chapters from book/_src/*.py.")
    parser.add_argument("chapters", nargs="*", help="chapter name prefixes, e.g. 03 (default: all)")
    parser.add_argument("--no-execute", action="store_true", help="write cells without outputs")
    parser.add_argument("--keep-unchanged-outputs", action="store_true",
                        help="keep the stored outputs of cells whose code did not change")
    args = parser.parse_args(argv)
    sources = sorted(SOURCE_DIR.glob("[0-9][0-9]-*.py"))
    if args.chapters:
        sources = [s for s in sources if any(s.name.startswith(p) for p in args.chapters)]
    if not sources:
        print("no chapter sources matched", file=sys.stderr)
        return 1
    for source in sources:
        started_s = time.monotonic()
        target = build(source, run=not args.no_execute,
                       keep_unchanged_outputs=args.keep_unchanged_outputs)
        print(f"{target.relative_to(BOOK_DIR.parent)}: {time.monotonic() - started_s:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
