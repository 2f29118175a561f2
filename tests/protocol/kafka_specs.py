"""Kafka's JSON message specs, from kafka-python when it ships them, else from the Kafka mirror.

kafka-python 3.0 ships most of ``clients/src/main/resources/common/message/*.json`` but not the
KIP-848 APIs (ConsumerGroupHeartbeat, ConsumerGroupDescribe). For those the spec is read from
the Apache Kafka checkout at the 3.9 branch -- the release Kafka's Java client 3.9.1 was cut
from -- and kafka-python's generic codec is built over it, so the byte-for-byte comparison still
runs against an implementation kafkalab did not write. Without the mirror those cases skip.
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.schemas.load_json import load_json

MIRROR = Path("/work/.mirror/apache+kafka/repo")
MIRROR_REF = "3.9"
SPEC_DIR = "clients/src/main/resources/common/message"
_PACKAGE = "kafkalab_mirror_specs"
_package_dir: Path | None = None


def _mirror_text(name: str) -> str:
    if not MIRROR.exists():
        pytest.skip(f"kafka-python lacks {name}.json and there is no Apache Kafka mirror")
    done = subprocess.run(["git", "-C", str(MIRROR), "show", f"{MIRROR_REF}:{SPEC_DIR}/{name}.json"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"{name}.json is in neither kafka-python nor the mirror's {MIRROR_REF}: {done.stderr[-200:]}")
    return done.stdout


def _mirror_package() -> Path:
    global _package_dir
    if _package_dir is None:
        root = Path(tempfile.mkdtemp(prefix="kafka-specs-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)  # the run leaves nothing in /tmp
        (root / _PACKAGE).mkdir()
        (root / _PACKAGE / "__init__.py").write_text("")
        sys.path.insert(0, str(root))
        _package_dir = root / _PACKAGE
    return _package_dir


def kafka_spec(name: str) -> dict[str, Any]:
    """The spec as kafka-python's loader returns it (common structs inlined, comments dropped)."""
    try:
        return load_json(name)
    except FileNotFoundError:
        pass
    path = _mirror_package() / f"{name}.json"
    if not path.exists():
        path.write_text(_mirror_text(name))
    return load_json(name, package=_PACKAGE)


def kafka_python_class_from_mirror(name: str) -> Any:
    """kafka-python's generic ``ApiMessage`` codec over the mirror's spec for ``name``."""
    import importlib

    from kafka.protocol.api_message import ApiMessage

    kafka_spec(name)  # writes the file into the package
    package = importlib.import_module(_PACKAGE)
    return type(ApiMessage)(name, (ApiMessage,), {}, load_json=package)


__all__ = ["kafka_python_class_from_mirror", "kafka_spec"]
