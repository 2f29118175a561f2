"""environment.yml (for conda users) must list exactly the dependencies pyproject.toml declares."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _pyproject_requirements() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        requirements += [r for r in extra if not r.startswith("kafkalab[")]
    return {_normalise(r) for r in requirements}


def _environment_requirements() -> set[str]:
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_sections = [d["pip"] for d in environment["dependencies"] if isinstance(d, dict)]
    assert len(pip_sections) == 1, "environment.yml should have exactly one pip section"
    return {_normalise(r) for r in pip_sections[0] if not r.startswith("-e ")}


def _normalise(requirement: str) -> str:
    name, _, rest = re.match(r"([A-Za-z0-9_.\-]+(\[[^\]]*\])?)(.*)", requirement.strip()).groups()
    return name.lower().replace("_", "-") + rest.replace(" ", "")


def test_environment_yml_mirrors_pyproject() -> None:
    in_pyproject = _pyproject_requirements()
    in_environment = _environment_requirements()
    assert in_pyproject - in_environment == set(), "missing from environment.yml"
    assert in_environment - in_pyproject == set(), "in environment.yml but not in pyproject.toml"


def test_environment_installs_kafkalab_itself() -> None:
    assert "-e ." in (ROOT / "environment.yml").read_text()


def test_python_floor_agrees() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11"
    assert "python>=3.11" in (ROOT / "environment.yml").read_text()
