"""The reference semantics of EMIT ON WINDOW CLOSE: plan, SQL front end, trigger conditions
and the reference interpreter of ``Q'(INPUT, W)``."""

from eowc.semantics.engines.interpreter import (
    Change,
    Emission,
    LateRow,
    run_eowc,
    run_update,
    watermark_sequence,
)
from eowc.semantics.errors import EowcError, InputError, PlanError, SqlError
from eowc.semantics.frontend.sql import parse_query, parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event, load_arrival_log, parse_arrival_log
from eowc.semantics.ir.plan import (
    AggCall,
    Aggregate,
    Filter,
    Project,
    Query,
    Scan,
    Source,
    WatermarkDecl,
    WindowTVF,
)
from eowc.semantics.rules.triggers import Convention

__all__ = [
    "AggCall", "Aggregate", "ArrivalLog", "Change", "Convention", "Emission", "EowcError",
    "Event", "Filter", "InputError", "LateRow", "PlanError", "Project", "Query", "Scan",
    "Source", "SqlError", "WatermarkDecl", "WindowTVF", "load_arrival_log", "parse_arrival_log",
    "parse_query", "parse_script", "run_eowc", "run_update", "watermark_sequence",
]
