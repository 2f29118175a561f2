"""nbval runs the answered notebooks: a learner's notebook with an instructor twin is skipped.

``book/NN-title.ipynb`` of a chapter with graded exercises has blank predictions, so its checks
refuse to pass; ``book/_instructor/NN-title.ipynb`` is the same chapter answered, with stored
outputs, and is what nbval compares (the same holds under ``labs/``). Chapters without graded
exercises have no twin and are run as they are.
"""

from __future__ import annotations

from pathlib import Path

INSTRUCTOR_DIRNAME = "_instructor"  # book/_build.py writes the answered notebooks there


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    if collection_path.suffix != ".ipynb" or collection_path.parent.name == INSTRUCTOR_DIRNAME:
        return None
    if (collection_path.parent / INSTRUCTOR_DIRNAME / collection_path.name).exists():
        return True
    return None
