"""Build the Spark labs' notebooks from their percent-format sources in ``labs/_src/``.

The same cell format and builder as the book (``book/_build.py``): ``labs/_src/NN-title.py``
becomes ``labs/NN-title.ipynb``, run top to bottom with static widgets and stored with its
outputs, so nbval can compare them. Usage: ``.venv/bin/python labs/_build.py 03 04``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

LABS_DIR = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("book_build", LABS_DIR.parent / "book" / "_build.py")
assert _spec is not None and _spec.loader is not None
book_build = importlib.util.module_from_spec(_spec)
sys.modules["book_build"] = book_build  # dataclasses look their module up while it loads
_spec.loader.exec_module(book_build)


def main(argv: list[str]) -> int:
    book_build.BOOK_DIR = LABS_DIR  # execute() runs notebooks in this directory
    sources = sorted((LABS_DIR / "_src").glob("[0-9][0-9]-*.py"))
    chosen = [s for s in sources if not argv or any(s.name.startswith(a) for a in argv)]
    for source in chosen:
        print(book_build.build(source, run=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
