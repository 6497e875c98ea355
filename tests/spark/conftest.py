"""Spark test settings: every test in this directory is marked ``spark`` (deselect them with
``-m "not spark"``), and the tests share ONE local Spark session per test run (starting Spark
takes seconds; see :func:`eowc.executors.spark.session.spark_session`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_HERE = Path(__file__).parent

#: ``$SPARK_HOME`` as the test run found it, before a session chose one.
_SPARK_HOME_GIVEN = os.environ.get("SPARK_HOME")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of this directory ``spark`` (the hook sees every collected item)."""
    for item in items:
        if item.path.is_relative_to(_HERE):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The shared local Spark session (``local[2]``, UTC, RocksDB state store, quiet logs)."""
    from eowc.executors.spark.session import spark_session

    yield spark_session()


@pytest.fixture(scope="session")
def spark_home_given() -> str | None:
    """``$SPARK_HOME`` as it was set when the test run started (None: the session chooses)."""
    return _SPARK_HOME_GIVEN
