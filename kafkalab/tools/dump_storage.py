"""Dumpers for the storage engine's files: ``.index``, ``.timeindex``, ``.txnindex``, ``.snapshot``.

``kafkalab dump-log`` chooses a dumper by file suffix; ``.log`` is handled in
:mod:`kafkalab.tools.dump_log`, and the suffixes below are merged into its registry.
A dumper has the signature ``dump(path: Path, args: argparse.Namespace, out: TextIO) -> None``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

Dumper = Callable[[Path, argparse.Namespace, TextIO], None]

DUMPERS: dict[str, Dumper] = {}
