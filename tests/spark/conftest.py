from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    import kafkalab.spark

    from kafkalab.spark.session import remove_scratch_dir

    session = kafkalab.spark.session(app_name="kafkalab-tests")
    yield session
    session.stop()  # the JVM first, so nothing writes into its scratch directory after removal
    remove_scratch_dir()
