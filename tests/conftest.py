"""Test settings: hypothesis runs without deadlines (CI machines are slow and shared) and,
under CI, derandomized so that a red build can be reproduced exactly."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True,
                          print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


#: The test files that run Spark or Flink, the longest of a test run: started first, so that
#: under ``-n 2 --dist loadfile`` (``.ci/run``) the short files fill the workers' ends instead
#: of one worker finishing a long file alone (longest work first).
_ENGINE_DIRS = ("flink", "spark")
_ENGINE_FILES = ("test_spark_engine.py", "test_mutants.py", "test_cluster.py",
                 "test_flink_native.py")


def _engine_rank(item: pytest.Item) -> int:
    parts = item.path.parts
    if item.path.name in _ENGINE_FILES:
        return 0
    return 1 if any(d in parts[-2:-1] for d in _ENGINE_DIRS) else 2


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the engines' test files first (a stable sort: each file keeps its order)."""
    items.sort(key=_engine_rank)
