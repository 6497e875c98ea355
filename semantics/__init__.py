"""The reference semantics of EMIT ON WINDOW CLOSE: plan, SQL front end, trigger conditions
and the reference interpreter of ``Q'(INPUT, W)``.

The names below are importable from here; each is imported on first use, so a module that needs
one part of the semantics (a trigger rule, the plan) does not load the interpreter with it.
"""

from __future__ import annotations

import importlib
from typing import Any

#: The package's names, each with the module that defines it.
_HOME = {
    **dict.fromkeys(("Change", "Emission", "LateRow", "run_eowc", "run_update",
                     "watermark_sequence"), "eowc.semantics.engines.interpreter"),
    **dict.fromkeys(("EowcError", "InputError", "PlanError", "SqlError"), "eowc.semantics.errors"),
    **dict.fromkeys(("parse_query", "parse_script"), "eowc.semantics.frontend.sql"),
    **dict.fromkeys(("ArrivalLog", "Event", "load_arrival_log", "parse_arrival_log"),
                    "eowc.semantics.ir.arrival"),
    **dict.fromkeys(("AggCall", "Aggregate", "Filter", "Project", "Query", "Scan", "Source",
                     "WatermarkDecl", "WindowTVF"), "eowc.semantics.ir.plan"),
    "Convention": "eowc.semantics.rules.triggers",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'eowc.semantics' has no attribute {name!r}")


__all__ = sorted(_HOME)
