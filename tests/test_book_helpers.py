from __future__ import annotations

import pytest

import kafkalab
from kafkalab.book import BookVersionMismatch, check_version


def test_check_version_accepts_the_installed_version() -> None:
    assert kafkalab.__version__ in check_version(kafkalab.__version__)


def test_check_version_says_what_to_do() -> None:
    with pytest.raises(BookVersionMismatch, match="make lab"):
        check_version("0.0.0-not-this-one")


def test_static_widget_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalab.viz import static_widgets

    monkeypatch.setenv("KAFKALAB_STATIC_WIDGETS", "1")
    assert static_widgets()
    monkeypatch.setenv("KAFKALAB_STATIC_WIDGETS", "0")
    assert not static_widgets()
    monkeypatch.delenv("KAFKALAB_STATIC_WIDGETS")
    assert not static_widgets()


def test_import_kafkalab_stays_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, kafkalab, kafkalab.tools.cli;"
        "heavy = [m for m in ('pyspark', 'matplotlib', 'ipywidgets', 'jupyterlab') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_kafkalab_command_prints_the_command_line_the_output_and_a_failure(capsys) -> None:
    from kafkalab.book import kafkalab_command

    kafkalab_command("consumer-groups", "--bootstrap-server", "127.0.0.1:1", "--list", "--describe")
    printed = capsys.readouterr().out
    assert printed.startswith("$ kafkalab consumer-groups --bootstrap-server 127.0.0.1:1 --list --describe\n")
    assert "(exit status" in printed
