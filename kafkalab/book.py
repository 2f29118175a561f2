"""Helpers the book's notebooks call in their first cell.

Every chapter starts with::

    from kafkalab.book import check_version
    check_version("0.1.0")

so a learner whose installed kafkalab differs from the one the chapter was written for is told
what to do, instead of meeting a confusing error ten cells later.
"""

from __future__ import annotations

import kafkalab


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
