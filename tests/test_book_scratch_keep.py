"""Scratch directories a live widget reads outlive the chapter's last cell, not the process."""

from __future__ import annotations

from pathlib import Path

from kafkalab import book


def test_a_kept_directory_survives_the_last_cell_and_goes_at_exit() -> None:
    plain, kept = book.scratch_dir("test-plain-"), book.scratch_dir("test-kept-")
    (kept / "orders-0").mkdir()
    book.keep_for_widgets(kept / "orders-0")
    book.keep_for_widgets(Path("/somewhere/else"))  # outside every scratch directory: ignored
    book.remove_scratch_dirs()
    assert not plain.exists() and kept.exists()
    book._remove_all_at_exit()
    assert not kept.exists()
