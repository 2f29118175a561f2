"""The classroom convention: one instructor source, an answered notebook, a learner's notebook.

The stored learner notebooks must be exactly what the build derives from the stored answered
ones, every prediction must start blank, and no solution or hidden check may reach a learner.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from kafkalab.book import NotAnswered, WrongPrediction, check_prediction
from kafkalab.classroom import notebooks
from kafkalab.classroom.pack import instructor_notebooks

ROOT = Path(__file__).resolve().parents[2]
ANSWERED = instructor_notebooks(ROOT)


def _cell(source: str, tag: str | None) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    if tag:
        cell.metadata["tags"] = [tag]
    return cell


def _exercise() -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        _cell("x = 1", None),
        _cell("### BEGIN SOLUTION\n### BLANK my_prediction = None  # <- yours\nmy_prediction = 3\n"
              "### END SOLUTION", "answer"),
        _cell("check_prediction(my_prediction, 3, hint='h')\n### BEGIN HIDDEN TESTS\n"
              "assert my_prediction == 3\n### END HIDDEN TESTS", "check"),
    ]
    notebooks.add_grading_metadata(notebook)
    return notebook


def test_learner_gets_the_blank_and_the_public_check_only() -> None:
    learner = notebooks.learner_notebook(_exercise())
    assert learner.cells[1].source == "my_prediction = None  # <- yours"
    assert learner.cells[2].source == "check_prediction(my_prediction, 3, hint='h')"
    assert learner.cells[2].metadata["nbgrader"]["grade_id"] == "check-1"
    assert learner.cells[2].metadata["nbgrader"]["points"] == 1
    assert learner.cells[1].metadata["nbgrader"] == {
        "grade": False, "solution": True, "locked": False, "grade_id": "answer-1", "schema_version": 3}
    assert notebooks.solution_lines(_exercise()) == ["my_prediction = 3", "assert my_prediction == 3"]


@pytest.mark.parametrize("source", [
    "### BEGIN SOLUTION\nmy_prediction = 3\n### END SOLUTION",  # no BLANK: the learner gets nothing
    "### BEGIN SOLUTION\n### BLANK x = None\nx = 3",  # never ends
    "### END SOLUTION",
])
def test_malformed_answer_cells_are_refused(source: str) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [_cell(source, "answer")]
    with pytest.raises(notebooks.ExerciseSourceError):
        notebooks.add_grading_metadata(notebook)


def test_markers_outside_an_exercise_cell_are_refused() -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [_cell("### BEGIN HIDDEN TESTS\nassert True\n### END HIDDEN TESTS", None)]
    with pytest.raises(notebooks.ExerciseSourceError):
        notebooks.add_grading_metadata(notebook)


def test_check_prediction_refuses_blank_and_wrong_without_giving_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    for blank in (None, ...):
        with pytest.raises(NotAnswered):
            check_prediction(blank, 2300, hint="h")
    with pytest.raises(WrongPrediction, match="Hint: compare") as wrong:
        check_prediction(2600, 2300, hint="compare with the previous fetch")
    assert "2300" not in str(wrong.value)
    with pytest.raises(WrongPrediction):
        check_prediction(True, 1, hint="h")  # True is not the number 1
    with pytest.raises(WrongPrediction):
        check_prediction(0.9, 0.875, hint="h", tolerance=0.02)
    check_prediction(0.88, 0.875, hint="h", tolerance=0.02)
    check_prediction([0, 11], (0, 11), hint="h", right="deleted")
    assert capsys.readouterr().out.splitlines() == ["Right: 0.875", "Right: deleted"]


def test_every_chapter_and_lab_is_graded() -> None:
    """Every source in book/_src and labs/_src has graded exercises, so an answered notebook."""
    names = {(p.parent.parent.name, p.stem) for p in ANSWERED}
    root = Path(__file__).resolve().parents[2]
    for folder in ("book", "labs"):
        for source in sorted((root / folder / "_src").glob("[0-9][0-9]-*.py")):
            assert (folder, source.stem) in names, f"{folder}/{source.stem} has no graded exercises"


@pytest.mark.parametrize("answered", ANSWERED, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_stored_learner_notebook_is_derived_from_the_answered_one(answered: Path) -> None:
    instructor = nbformat.read(answered, as_version=4)
    stored = nbformat.read(answered.parent.parent / answered.name, as_version=4)
    derived = notebooks.learner_notebook(instructor)
    assert [(c.source, c.get("outputs")) for c in stored.cells] == \
        [(c.source, c.get("outputs")) for c in derived.cells], "rebuild with book/_build.py or labs/_build.py"


@pytest.mark.parametrize("answered", ANSWERED, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_every_answer_is_checked_and_starts_blank(answered: Path) -> None:
    instructor = nbformat.read(answered, as_version=4)
    learner = notebooks.learner_notebook(instructor)
    kinds = [c.metadata.get("nbgrader", {}) for c in instructor.cells]
    answers = [i for i, k in enumerate(kinds) if k.get("solution")]
    checks = [i for i, k in enumerate(kinds) if k.get("grade")]
    assert answers and len(answers) == len(checks)
    # Each answer is graded by a check after it: right after, or (when a lab asks its predictions
    # up front, before any figure could give them away) where the engine's answer is computed.
    assert all(a < c for a, c in zip(answers, sorted(checks))), "each answer cell is followed by its check"
    for i in answers:
        text = learner.cells[i].source
        assert "= None" in text or "= ..." in text or "your change here" in text, text
    learner_text = "\n".join(c.source for c in learner.cells)
    for line in notebooks.solution_lines(instructor):
        assert line not in learner_text.splitlines(), f"solution line reaches the learner: {line}"
