"""`make classroom`'s packs, and nbgrader grading a folder of submissions into a CSV.

The grading test hands in chapter 00 (two graded checks, the quickest chapter to run) as six
students would: all right, one answer wrong, a cell that raises, a cell that loops forever, and
the notebook as handed out, and a file that is no notebook. Scores come from nbgrader's own gradebook.
"""

from __future__ import annotations

import copy
import csv
import time
from pathlib import Path

import nbformat
import pytest

from kafkalab.classroom import notebooks
from kafkalab.classroom.grade import grade_folder
from kafkalab.classroom.pack import build_packs, instructor_notebooks

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "00-start-here"
CELL_TIMEOUT_S = 5  # the looping submission's cell is interrupted after this long
GRADING_BUDGET_S = 240  # five submissions of chapter 00, one of them waiting out a timeout

RIGHT = {
    "answer-1": "my_prediction = 20",
    "answer-2": "damaged = bytearray(batch_bytes)\ndamaged[batch_bytes.index(b'21.5C')] ^= 0x01",
}


def _submission(learner: nbformat.NotebookNode, answers: dict[str, str]) -> nbformat.NotebookNode:
    submitted = copy.deepcopy(learner)
    for cell in submitted.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    return submitted


def test_student_pack_holds_no_solution_text(tmp_path: Path) -> None:
    sources = instructor_notebooks(ROOT)
    packs = build_packs(sources, tmp_path / "classroom")
    handed_out = sorted(packs.student.rglob("*.ipynb"))
    assert sorted(p.name for p in handed_out) == sorted(p.name for p in sources)
    text = "\n".join(p.read_text(encoding="utf-8") for p in packs.student.rglob("*") if p.is_file())
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "HIDDEN TESTS", "### BLANK"):
        assert marker not in text
    for source in sources:
        learner = nbformat.read(packs.student / source.parent.parent.name / source.name, as_version=4)
        assert all(not c.get("outputs") for c in learner.cells), "handed out without outputs"
        learner_lines = {line for c in learner.cells for line in c.source.splitlines()}
        for line in notebooks.solution_lines(nbformat.read(source, as_version=4)):
            assert line not in learner_lines, f"{source.name}: {line}"
    instructor = packs.instructor / "source" / CHAPTER / f"{CHAPTER}.ipynb"
    assert "BEGIN HIDDEN TESTS" in instructor.read_text(encoding="utf-8")


@pytest.mark.timeout(GRADING_BUDGET_S + 60)
@pytest.mark.filterwarnings("ignore:Object of type <Submitted")  # nbgrader's own SQLAlchemy use
def test_grading_a_folder_of_submissions(tmp_path: Path) -> None:
    source = ROOT / "book" / "_instructor" / f"{CHAPTER}.ipynb"
    packs = build_packs([source], tmp_path / "classroom", cell_timeout_s=CELL_TIMEOUT_S)
    learner = nbformat.read(packs.student / "book" / f"{CHAPTER}.ipynb", as_version=4)
    handed_in = {
        "ada": RIGHT,
        "bob": {**RIGHT, "answer-1": "my_prediction = 19"},
        "cyd": {**RIGHT, "answer-2": "raise RuntimeError('my cell breaks')"},
        "dan": {**RIGHT, "answer-1": "while True:\n    pass"},
        "eve": {},  # handed back as handed out: every prediction blank
    }
    submissions = tmp_path / "submissions"
    for student, answers in handed_in.items():
        path = submissions / student / f"{CHAPTER}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(_submission(learner, answers), path)
    (submissions / "ada" / "notes.ipynb").write_text("{}")  # not an exercise notebook: skipped
    (submissions / "fay").mkdir()
    (submissions / "fay" / f"{CHAPTER}.ipynb").write_text("not a notebook")  # a broken hand-in

    started_s = time.monotonic()
    grades = grade_folder(submissions, packs.instructor, tmp_path / "grades.csv", CELL_TIMEOUT_S)
    elapsed_s = time.monotonic() - started_s

    assert elapsed_s < GRADING_BUDGET_S
    by_student = {g.student: (g.score, g.max_score, g.failed) for g in grades}
    assert by_student == {
        "ada": (2.0, 2.0, ()),
        "bob": (1.0, 2.0, ("check-1",)),  # one wrong answer loses exactly its own point
        "cyd": (1.0, 2.0, ("check-2",)),
        "dan": (1.0, 2.0, ("check-1",)),  # interrupted after CELL_TIMEOUT_S, then graded
        "eve": (0.0, 2.0, ("check-1", "check-2")),
        "fay": (0.0, 2.0, ("not graded",)),
    }
    with (tmp_path / "grades.csv").open(newline="") as rows:
        table = list(csv.DictReader(rows))
    assert [(r["student"], r["notebook"], r["score"], r["max_score"]) for r in table][:2] == [
        ("ada", CHAPTER, "2.0", "2.0"), ("bob", CHAPTER, "1.0", "2.0")]
    assert (packs.instructor / "gradebook.db").is_file()
