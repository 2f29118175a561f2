"""Helpers the book's notebooks call in their first and last cells.

Every chapter starts with::

    from kafkalab.book import check_version
    check_version("0.1.0")

so a learner whose installed kafkalab differs from the one the chapter was written for is told
what to do, instead of meeting a confusing error ten cells later.

Chapters and labs that write logs take their directories from :func:`scratch_dir` and end with a
cell calling :func:`remove_scratch_dirs`, so running the book (by hand or under nbval, which
kills the kernel without running exit handlers) leaves nothing in the system temp directory.
A kernel that stops before the last cell still removes them when it exits normally.

A live widget may still need its data after the last cell has run: a reader who runs every cell
and then scrolls back to play with the widget. Such a widget calls :func:`keep_for_widgets` on
the directory it reads; :func:`remove_scratch_dirs` then leaves that scratch directory for the
kernel's exit to remove. Static figures (nbval, CI) hold nothing, so those runs still leave the
temp directory clean.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import kafkalab

_scratch_dirs: list[Path] = []  # this kernel's scratch directories, oldest first
_kept: set[Path] = set()  # scratch directories a live widget still reads


def scratch_dir(prefix: str = "kafkalab-") -> Path:
    """A new, empty directory ``<prefix>XXXXXXXX`` in the system temp directory, removed by
    :func:`remove_scratch_dirs` or, failing that, when the Python process exits."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    if not _scratch_dirs and not _kept:
        atexit.register(_remove_all_at_exit)
    _scratch_dirs.append(path)
    return path


def keep_for_widgets(path: str | Path) -> None:
    """Keep the scratch directory holding ``path`` until the process exits (a live widget reads
    it); a path outside every scratch directory is ignored."""
    resolved = Path(path).resolve()
    for scratch in _scratch_dirs:
        if resolved == scratch.resolve() or scratch.resolve() in resolved.parents:
            _kept.add(scratch)


def remove_scratch_dirs() -> None:
    """Delete every directory :func:`scratch_dir` made in this process (a notebook's last cell),
    except those a live widget still reads, which go when the process exits."""
    remaining = [path for path in _scratch_dirs if path in _kept]
    for path in _scratch_dirs:
        if path not in _kept:
            shutil.rmtree(path, ignore_errors=True)
    _scratch_dirs[:] = remaining


def _remove_all_at_exit() -> None:
    _kept.clear()
    remove_scratch_dirs()


class BookVersionMismatch(RuntimeError):
    """The installed kafkalab is not the version this chapter was written for."""


def check_version(expected: str) -> str:
    """Return a one-line confirmation, or raise with instructions if versions differ."""
    installed = kafkalab.__version__
    if installed != expected:
        raise BookVersionMismatch(
            f"this chapter was written for kafkalab {expected}, but kafkalab {installed} is "
            "installed. Run `make lab` from the repository root (it reinstalls the package "
            "into .venv), then restart the kernel (Kernel > Restart Kernel)."
        )
    return f"kafkalab {installed} ready."


class NotAnswered(AssertionError):
    """An exercise's check ran while its prediction was still blank."""


class WrongPrediction(AssertionError):
    """An exercise's prediction differs from the engine's answer."""


def check_prediction(
    prediction: object, actual: object, *, hint: str, right: str = "", tolerance: float = 0.0
) -> None:
    """The check cell of a "predict, then check" exercise.

    Refuses a blank prediction (``None`` or ``...``) with :class:`NotAnswered` and a wrong one
    with :class:`WrongPrediction` carrying ``hint``, which must help without giving the answer
    away. Passes only when ``prediction`` equals the engine's ``actual`` (numbers: within
    ``tolerance``; ``True`` is not taken for 1), and then prints ``Right:`` and ``right``.
    Both errors are ``AssertionError``s, so an autograder counts them as a failed check.
    """
    if prediction is None or prediction is ...:
        raise NotAnswered(
            "not answered yet: replace the blank in the cell above with your prediction, "
            "run that cell, then run this one again"
        )
    if not _same_answer(prediction, actual, tolerance):
        raise WrongPrediction(f"Not quite: {prediction!r} is not the engine's answer. Hint: {hint}")
    print(f"Right: {right}" if right else f"Right: {actual!r}")


def _same_answer(prediction: object, actual: object, tolerance: float) -> bool:
    numbers = (int, float)
    if isinstance(actual, numbers) and not isinstance(actual, bool):
        if isinstance(prediction, bool) or not isinstance(prediction, numbers):
            return False
        return abs(prediction - actual) <= tolerance
    if isinstance(actual, (list, tuple)) and isinstance(prediction, (list, tuple)):
        return list(prediction) == list(actual)  # (2, 3) and [2, 3] are the same answer
    return prediction == actual


def kafkalab_command(*args: str) -> None:
    """Run a ``kafkalab`` tool in this process as a shell would run it, printing the command line
    first, then what the tool prints, and its exit status when not 0. The tools talk to a server
    over the wire exactly as from a shell, without a new Python per command."""
    import contextlib
    import io
    import shlex

    from kafkalab.tools.cli import main

    print("$ kafkalab " + " ".join(shlex.quote(a) for a in args))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            status = main(list(args))
        except SystemExit as exit_:  # argparse's usage errors exit, as from a shell
            status = int(exit_.code or 0)
    print(out.getvalue().rstrip())
    if status:
        print(f"(exit status {status})")
