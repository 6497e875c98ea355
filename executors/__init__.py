"""EOWC executors (SortBuffer, Sort, GroupAgg, SortAgg) for PySpark streaming jobs.

The public API (:mod:`eowc.executors.spark.api`), importable from here::

    from executors import eowc_group_agg, eowc_query, eowc_sort, tumble, hop, cumulate
    from executors import results, side_output, write_eowc

Importing :mod:`executors` does not import PySpark; the API does, on first use.
"""

from __future__ import annotations

from typing import Any

_API = ("cumulate", "eowc_group_agg", "eowc_query", "eowc_sort", "hop", "results", "side_output",
        "tumble", "write_eowc")


def __getattr__(name: str) -> Any:
    if name in _API:
        from eowc.executors.spark import api
        return getattr(api, name)
    raise AttributeError(f"module 'executors' has no attribute {name!r}")


__all__ = list(_API)
