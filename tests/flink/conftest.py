"""Flink test settings: every test here is marked ``flink`` (deselect with ``-m "not
flink"``) and runs Apache Flink for real, in the Flink environment flink-native finds
($EOWC_FLINK_ENV, or ~/.cache/eowc/engines/flink-*). Without one, the first test makes it
(``eowc engine env flink 2.3.0``: a virtual environment with eowc and apache-flink, a few
minutes once)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from eowc.verify.flink import flink_environment

_HERE = Path(__file__).parent
#: The release the tests make an environment for when none is there.
RELEASE = "2.3.0"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(_HERE):
            item.add_marker(pytest.mark.flink)


@pytest.fixture(scope="session")
def flink_env() -> Path:
    """The Flink environment (made if there is none)."""
    found = flink_environment()
    if found is None:
        subprocess.run([sys.executable, "-m", "eowc.verify.cli.main", "engine", "env", "flink",
                        RELEASE], check=True)
        found = flink_environment()
    assert found is not None and (found / "bin" / "eowc").exists(), found
    return found
