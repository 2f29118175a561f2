"""Grade a folder of submitted notebooks offline with nbgrader, into a CSV.

Submissions are laid out one folder per student, each notebook under its own name::

    submissions/ada/08-replication.ipynb
    submissions/alan/08-replication.ipynb  submissions/alan/13-delayed-...ipynb

:func:`grade_folder` copies them into the instructor pack (an nbgrader course directory) as
``submitted/<student>/<assignment>/``, lets nbgrader create each assignment from its source
(which records the checks in the gradebook) and autograde every submission, then reads the
scores from the gradebook. nbgrader puts the instructor's check cells, hidden checks included,
back in place of whatever the submission holds, and runs the notebook in a fresh kernel; a
cell that runs longer than ``cell_timeout_s`` is interrupted and counts as an error, so a
submission that loops costs at most that long per looping cell and is graded, not hung.

The CSV has one row per submitted notebook: ``student, notebook, score, max_score, failed``
(the ids of the checks that failed, e.g. ``check-2``, or ``not graded`` for a file nbgrader
could not open, which scores zero).
"""

from __future__ import annotations

import csv
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.classroom.pack import CELL_TIMEOUT_S_DEFAULT

CSV_FIELDS = ("student", "notebook", "score", "max_score", "failed")


@dataclass(frozen=True, slots=True)
class NotebookGrade:
    """One submitted notebook's result."""

    student: str
    notebook: str
    score: float
    max_score: float
    failed: tuple[str, ...]


def grade_folder(submissions: Path, course: Path, csv_path: Path,
                 cell_timeout_s: int = CELL_TIMEOUT_S_DEFAULT) -> list[NotebookGrade]:
    """Autograde every ``submissions/<student>/<notebook>.ipynb`` whose notebook is in
    ``course/source/``; write and return the grades, sorted by student and notebook."""
    course, submissions = course.resolve(), submissions.resolve()
    assignments = {p.name for p in (course / "source").iterdir() if p.is_dir()}
    submitted = _collect(submissions, course, assignments)
    api, gradebook_url = _nbgrader_api(course, cell_timeout_s)
    for assignment in sorted({a for _student, a in submitted}):
        _require(api.generate_assignment(assignment, force=True), f"creating {assignment}")
    unreadable = set()
    for student, assignment in sorted(submitted):
        if not api.autograde(assignment, student, force=True, create=True).get("success"):
            unreadable.add((student, assignment))  # not a notebook nbgrader can open, say
    grades = [_read_grade(gradebook_url, student, a, (student, a) in unreadable)
              for student, a in sorted(submitted)]
    _write_csv(grades, csv_path)
    return grades


def _collect(submissions: Path, course: Path, assignments: set[str]) -> set[tuple[str, str]]:
    """Copy each student's notebooks into ``course/submitted``; return (student, assignment)."""
    shutil.rmtree(course / "submitted", ignore_errors=True)
    found: set[tuple[str, str]] = set()
    for student_dir in sorted(p for p in submissions.iterdir() if p.is_dir()):
        for notebook in sorted(student_dir.glob("*.ipynb")):
            if notebook.stem not in assignments:
                continue  # not an exercise notebook of this course
            target = course / "submitted" / student_dir.name / notebook.stem / notebook.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(notebook, target)
            found.add((student_dir.name, notebook.stem))
    return found


def _nbgrader_api(course: Path, cell_timeout_s: int) -> tuple[Any, str]:  # nbgrader is untyped
    # nbgrader is imported here only: the rest of kafkalab never needs it.
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    os.environ["KAFKALAB_STATIC_WIDGETS"] = "1"  # submissions run headless, like nbval
    # nbgrader runs the `alembic` script to create a new gradebook: find it beside this Python
    # even when its environment is not activated (`.venv/bin/python -m kafkalab.classroom`).
    scripts = str(Path(sys.executable).parent)
    if scripts not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")
    config = Config()
    config.CourseDirectory.root = str(course)
    config.Execute.timeout = cell_timeout_s
    config.Execute.interrupt_on_timeout = True
    gradebook_url = f"sqlite:///{course / 'gradebook.db'}"
    config.CourseDirectory.db_url = gradebook_url
    return NbGraderAPI(config=config), gradebook_url


def _require(result: dict[str, object], what: str) -> None:
    if not result.get("success"):
        raise RuntimeError(f"nbgrader failed {what}: {result.get('error') or result.get('log')}")


def _read_grade(gradebook_url: str, student: str, assignment: str, unreadable: bool) -> NotebookGrade:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(gradebook_url) as gradebook:
        try:
            notebook = gradebook.find_submission_notebook(assignment, assignment, student)
        except MissingEntry:
            unreadable = True
        if unreadable:  # nbgrader could not grade it at all: zero, and say so
            source = gradebook.find_notebook(assignment, assignment)
            return NotebookGrade(student, assignment, 0.0, float(source.max_score), ("not graded",))
        failed = tuple(sorted(g.name for g in notebook.grades if g.score < g.max_score))
        return NotebookGrade(student, assignment, float(notebook.score),
                             float(notebook.max_score), failed)


def _write_csv(grades: list[NotebookGrade], csv_path: Path) -> None:
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    with csv_path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(CSV_FIELDS)
        for g in grades:
            writer.writerow([g.student, g.notebook, g.score, g.max_score, " ".join(g.failed)])
