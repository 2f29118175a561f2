from __future__ import annotations

import subprocess
import sys

import pytest

from kafkalab.tools import cli


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in cli.SUBCOMMANDS:
        assert name in out


def test_unknown_subcommand_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["no-such-tool"])
    assert exit_info.value.code == 2
    assert "unknown command" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(cli.SUBCOMMANDS))
def test_every_subcommand_has_help(name: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kafkalab", name, "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "usage: kafkalab " + name in result.stdout
