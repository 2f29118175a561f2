"""The instructor's notebook and the learner's notebook, made from one instructor source.

A cell tagged ``answer`` or ``check`` becomes an nbgrader cell: answers are "solution" cells
(``answer-1``, ``answer-2``, ... in reading order), checks are locked, autograded test cells
(``check-1``, ...) worth one point each. The learner's notebook keeps that metadata, so nbgrader
can grade it when it comes back, and loses the solutions, the hidden checks and the outputs of
exercise cells. Example, an answer cell of the instructor's source and of the learner's::

    ### BEGIN SOLUTION                            my_prediction = None  # <- your answer
    ### BLANK my_prediction = None  # <- your answer
    my_prediction = 3
    ### END SOLUTION
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

import nbformat

ANSWER_TAG = "answer"
CHECK_TAG = "check"
BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
BLANK_PREFIX = "### BLANK"
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"
CHECK_POINTS = 1  # every check is worth the same: a wrong answer loses exactly its own point
NBGRADER_SCHEMA_VERSION = 3  # nbgrader 0.9's cell metadata schema


class ExerciseSourceError(ValueError):
    """An exercise cell in an instructor source breaks the classroom convention."""


def is_graded(notebook: nbformat.NotebookNode) -> bool:
    """Whether any cell of ``notebook`` is an exercise cell (tagged ``answer`` or ``check``)."""
    return any(_tags(cell) & {ANSWER_TAG, CHECK_TAG} for cell in notebook.cells)


def add_grading_metadata(notebook: nbformat.NotebookNode) -> None:
    """Give every exercise cell its nbgrader metadata, and check the convention on the way."""
    answers = checks = 0
    for cell in notebook.cells:
        tags = _tags(cell)
        if ANSWER_TAG in tags:
            answers += 1
            _learner_text(cell.source)  # raises if the solution regions are malformed
            cell.metadata["nbgrader"] = _metadata(f"answer-{answers}", solution=True)
        elif CHECK_TAG in tags:
            checks += 1
            _without_hidden(cell.source)
            cell.metadata["nbgrader"] = _metadata(f"check-{checks}", grade=True)
        elif BEGIN_SOLUTION in cell.source or BEGIN_HIDDEN in cell.source:
            raise ExerciseSourceError(f"cell {cell.get('id')} has markers but no answer/check tag")


def _metadata(grade_id: str, *, solution: bool = False, grade: bool = False) -> dict[str, object]:
    metadata: dict[str, object] = {
        "grade": grade, "solution": solution, "locked": grade,
        "grade_id": grade_id, "schema_version": NBGRADER_SCHEMA_VERSION,
    }
    if grade:
        metadata["points"] = CHECK_POINTS
    return metadata


def learner_notebook(instructor: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The learner's copy: blanks for solutions, no hidden checks, no outputs from the first
    exercise on (a cell after an exercise may print its answer).

    Cells before the exercises keep their stored outputs, so the chapter reads as it ran."""
    learner = copy.deepcopy(instructor)
    in_exercises = False
    for cell in learner.cells:
        tags = _tags(cell)
        if ANSWER_TAG in tags:
            cell.source = _learner_text(cell.source)
            in_exercises = True
        elif CHECK_TAG in tags:
            cell.source = _without_hidden(cell.source)
            cell.metadata["editable"] = False  # JupyterLab honours these: checks stay as written
            cell.metadata["deletable"] = False
        if in_exercises and cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return learner


def without_outputs(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy with every code cell's outputs and execution count cleared."""
    bare = copy.deepcopy(notebook)
    for cell in bare.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return bare


def solution_lines(notebook: nbformat.NotebookNode) -> list[str]:
    """Every non-blank line a learner must not see: solution lines and hidden-check lines."""
    lines: list[str] = []
    for cell in notebook.cells:
        tags = _tags(cell)
        if ANSWER_TAG in tags:
            lines += _region_lines(cell.source, BEGIN_SOLUTION, END_SOLUTION, skip=BLANK_PREFIX)
        elif CHECK_TAG in tags:
            lines += _region_lines(cell.source, BEGIN_HIDDEN, END_HIDDEN, skip=None)
    return [line for line in lines if line.strip() and not line.strip().startswith("#")]


def _learner_text(source: str) -> str:
    out: list[str] = []
    in_solution = False
    blanks = 0
    for number, line in enumerate(source.splitlines(), 1):
        stripped = line.strip()
        if stripped == BEGIN_SOLUTION:
            _expect(not in_solution, number, "nested BEGIN SOLUTION")
            in_solution, blanks = True, 0
        elif stripped == END_SOLUTION:
            _expect(in_solution and blanks > 0, number, "END SOLUTION without a BLANK line before")
            in_solution = False
        elif in_solution and stripped.startswith(BLANK_PREFIX):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + stripped[len(BLANK_PREFIX):].removeprefix(" "))
            blanks += 1
        elif not in_solution:
            out.append(line)
    _expect(not in_solution, 0, "BEGIN SOLUTION never ended")
    return "\n".join(out)


def _without_hidden(source: str) -> str:
    out: list[str] = []
    in_hidden = False
    for number, line in enumerate(source.splitlines(), 1):
        stripped = line.strip()
        if stripped == BEGIN_HIDDEN:
            _expect(not in_hidden, number, "nested BEGIN HIDDEN TESTS")
            in_hidden = True
        elif stripped == END_HIDDEN:
            _expect(in_hidden, number, "END HIDDEN TESTS without a BEGIN")
            in_hidden = False
        elif not in_hidden:
            out.append(line)
    _expect(not in_hidden, 0, "BEGIN HIDDEN TESTS never ended")
    return "\n".join(out).rstrip("\n")


def _region_lines(source: str, begin: str, end: str, skip: str | None) -> list[str]:
    lines: list[str] = []
    inside = False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == begin:
            inside = True
        elif stripped == end:
            inside = False
        elif inside and not (skip and stripped.startswith(skip)):
            lines.append(line)
    return lines


def _expect(condition: bool, line_number: int, what: str) -> None:
    if not condition:
        raise ExerciseSourceError(f"exercise cell, line {line_number}: {what}")


def _tags(cell: nbformat.NotebookNode) -> set[str]:
    tags: Iterable[str] = cell.get("metadata", {}).get("tags", [])
    return set(tags)
