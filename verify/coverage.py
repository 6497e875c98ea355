"""What a verification exercised: per target, how many cases expected output, how many rows,
how many results came out exactly at a boundary instant, how many late rows, ties, restarts and
crashes the executor met. A pass means something only if these are not zero.

A target whose cases mostly expect nothing is a **vacuous** verification: an executor that
emits nothing would pass it. :attr:`Coverage.vacuous` says so and :meth:`Coverage.advice` says
what to change.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from eowc.semantics.analysis.completion import watermark_columns, window_of_row
from eowc.semantics.analysis.operator_inputs import output_over_input
from eowc.semantics.engines.interpreter import Emission, top_operator, watermark_sequence
from eowc.semantics.engines.multi_input import sources_of
from eowc.semantics.ir.expr import Row
from eowc.semantics.rules.triggers import Watermark, time_is_complete, window_closes
from eowc.verify.cases import Case, reference_run


@dataclass
class Coverage:
    """What the cases of one target exercised (counts over every case)."""

    cases: int = 0
    #: Cases whose reference output is not empty.
    with_output: int = 0
    #: Rows the reference emits, over every case.
    expected_rows: int = 0
    #: Expected rows emitted in an epoch whose watermark completes them exactly: one
    #: microsecond less and they would not have been emitted yet.
    at_boundary: int = 0
    #: Rows left out of INPUT as late.
    late_rows: int = 0
    #: Rows of INPUT sharing their event time with another row of their source.
    ties: int = 0
    #: Restarts (a crash counted too: it restarts from the epoch before) and crashes.
    restarts: int = 0
    crashes: int = 0

    @property
    def vacuous(self) -> bool:
        """Most cases expect no output (or there were none): a run that emits nothing passes."""
        return 2 * self.with_output <= self.cases

    def advice(self, name: str) -> str:
        """What to change so that the cases of ``name`` expect output."""
        return (f"{name}: only {self.with_output} of {self.cases} cases expect any output, so an "
                f"executor that emits nothing passes most of them; give the cases more event "
                f"time or rows (--span, --rows) so that the watermark passes several windows, or "
                f"a query whose windows close within the span")

    def add(self, case: Case) -> None:
        """Count what ``case`` exercises, by the reference's run of its log."""
        run = reference_run(case)
        reference, late = list(run.emissions), run.late
        self.cases += 1
        self.with_output += bool(reference)
        self.expected_rows += len(reference)
        self.at_boundary += at_boundary(case, reference)
        self.late_rows += len(late)
        self.ties += tied_rows(case, {(r.epoch, r.event) for r in late})
        self.restarts += len(case.restarts())
        self.crashes += case.crash is not None

    def as_dict(self) -> dict[str, int | bool]:
        return {"cases": self.cases, "cases_with_output": self.with_output,
                "expected_rows": self.expected_rows, "at_boundary": self.at_boundary,
                "late_rows": self.late_rows, "ties": self.ties, "restarts": self.restarts,
                "crashes": self.crashes, "vacuous": self.vacuous}


def at_boundary(case: Case, reference: list[Emission]) -> int:
    """How many of ``reference``'s rows are emitted in an epoch whose watermark completes them
    exactly: the output column that carries the watermark (a window column, else the event
    time) is complete at the watermark after the epoch and would not be had the source
    watermarks been a microsecond lower (over a derived input, a cascade's or a join's, the
    boundary is the sources': a 10-minute window over 5-minute results closes exactly when the
    source watermark lands on the end of its last 5-minute window). A query whose output keeps
    no such column (a MATCH_RECOGNIZE) counts none."""
    convention = case.convention
    columns = watermark_columns(output_over_input(case.query, top_operator(case.query, convention)))
    if columns.has_window_column:
        window_of = window_of_row(columns)
        i = next(iter(columns.positions.values()))

        def complete(row: Row, mark: Watermark) -> bool:  # NULL: an outer join's padded side
            return row[i] is not None and window_closes(window_of(row), mark, convention)
    elif columns.event_time is not None:
        i = columns.event_time

        def complete(row: Row, mark: Watermark) -> bool:
            return row[i] is not None and time_is_complete(row[i], mark, convention)
    else:
        return 0
    if not reference:
        return 0
    after = watermark_sequence(case.query, case.log, convention)
    below = watermark_sequence(case.query, case.log, convention, lowered=1)
    return sum(1 for e in reference if e.epoch < len(after) and math.isfinite(after[e.epoch])
               and complete(e.row, after[e.epoch]) and not complete(e.row, below[e.epoch]))


def tied_rows(case: Case, late: set) -> int:
    """Rows of INPUT (``late`` left out: ``(epoch, event)`` pairs) whose event time another row
    of their source shares."""
    times: Counter = Counter()
    for source in sources_of(case.query.plan):
        index = source.event_time_index
        if index is None:
            continue
        times.update((source.name, event.row[index])
                     for k, epoch in enumerate(case.log.epochs) for event in epoch
                     if event.table == source.name and (k, event) not in late)
    return sum(n for n in times.values() if n > 1)
