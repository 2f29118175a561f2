"""Build the student pack and the instructor pack from the answered instructor notebooks.

::

    dist/classroom/
      student/book/NN-title.ipynb        learner notebooks: blanks, public checks, no outputs
      student/labs/NN-title.ipynb
      instructor/source/NN-title/NN-title.ipynb   an nbgrader course: answers, hidden checks
      instructor/nbgrader_config.py

The instructor pack is an nbgrader course directory; :mod:`kafkalab.classroom.grade` runs
nbgrader's autograder in it and keeps its gradebook (``gradebook.db``) there.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

from kafkalab.classroom import notebooks

INSTRUCTOR_DIRNAME = "_instructor"  # where book/_build.py stores the answered notebooks
NBGRADER_CONFIG = '''\
# nbgrader configuration of a kafkalab instructor pack (an nbgrader course directory).
c = get_config()  # noqa: F821 -- nbgrader provides it
c.CourseDirectory.root = __file__.rsplit("/", 1)[0]
c.Execute.timeout = {cell_timeout_s}  # seconds per cell: a looping cell is interrupted, not hung
c.Execute.interrupt_on_timeout = True
'''
CELL_TIMEOUT_S_DEFAULT = 120  # as book/_build.py: a chapter's slowest cell runs in seconds


@dataclass(frozen=True, slots=True)
class Packs:
    """Where :func:`build_packs` wrote the two packs."""

    student: Path
    instructor: Path


def instructor_notebooks(repo_root: Path) -> list[Path]:
    """Every answered notebook of the book and the labs, in reading order."""
    found: list[Path] = []
    for part in ("book", "labs"):
        found += sorted((repo_root / part / INSTRUCTOR_DIRNAME).glob("[0-9][0-9]-*.ipynb"))
    return found


def build_packs(sources: list[Path], out_dir: Path,
                cell_timeout_s: int = CELL_TIMEOUT_S_DEFAULT) -> Packs:
    """Write both packs under ``out_dir`` (replacing earlier ones) from answered notebooks."""
    student, instructor = out_dir / "student", out_dir / "instructor"
    for directory in (student, instructor):
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
    for source in sources:
        answered = nbformat.read(source, as_version=4)
        part = source.parent.parent.name  # book or labs
        learner = notebooks.without_outputs(notebooks.learner_notebook(answered))
        _write(learner, student / part / source.name)
        _write(notebooks.without_outputs(answered), instructor / "source" / source.stem / source.name)
    (instructor / "nbgrader_config.py").write_text(
        NBGRADER_CONFIG.format(cell_timeout_s=cell_timeout_s), encoding="utf-8")
    return Packs(student, instructor)


def _write(notebook: nbformat.NotebookNode, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
