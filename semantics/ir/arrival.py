"""The arrival log: epochs of rows from named sources, and its JSON Lines form.

A line is an event ``{"table": "bids", "row": {...}}`` or an epoch boundary
``{"barrier": true}``. With no barrier line at all, every event is its own epoch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, NamedTuple

from eowc.semantics.errors import InputError
from eowc.semantics.ir.expr import Row, Schema, sql_of
from eowc.semantics.ir.plan import Filter, Plan, Scan, Source, WindowTVF, walk
from eowc.semantics.ir.values import (
    SqlType,
    declared_decimal_value,
    format_interval,
    format_timestamp,
    from_external,
    from_output_external,
    json_text,
    parse_json,
    to_external,
    value_rules,
)
from eowc.semantics.ir.windows import FIRST_TIMESTAMP, LAST_TIMESTAMP


class Event(NamedTuple):
    """One row of one source, as it arrived; ``line`` is its line in the log file (or 0)."""

    table: str
    row: Row
    line: int = 0


Epoch = tuple[Event, ...]


@dataclass(frozen=True)
class ArrivalLog:
    """Epochs of events, in arrival order."""

    epochs: tuple[Epoch, ...]

    @classmethod
    def one_event_per_epoch(cls, events: Iterable[Event]) -> ArrivalLog:
        return cls(tuple((e,) for e in events))

    @property
    def events(self) -> list[Event]:
        return [e for epoch in self.epochs for e in epoch]


@dataclass(frozen=True)
class RejectedRow:
    """A line that could not become a row (only kept with ``keep_going``)."""

    line: int
    table: str | None
    row: Any
    reason: str


@dataclass(frozen=True)
class LoadedLog:
    log: ArrivalLog
    rejected: tuple[RejectedRow, ...] = field(default=())


def row_to_json(source: Source, row: Row) -> dict[str, Any]:
    """A row of ``source`` as the JSON object of an event: its carried columns (the inverse of
    :func:`row_from_json`, which computes the rest; NULL columns are written as ``null``)."""
    carried = source.carried
    return {c.name: to_external(v, c.type) for c, v in zip(carried, row[:len(carried)], strict=True)}


def log_lines(log: ArrivalLog, sources: Mapping[str, Source]) -> list[str]:
    """The JSON Lines form of ``log``: its events, each epoch ended by ``{"barrier": true}``;
    :func:`parse_arrival_log` reads it back as the same epochs and rows."""
    lines = []
    for epoch in log.epochs:
        for event in epoch:
            lines.append(json_text({"table": event.table,
                                     "row": row_to_json(sources[event.table], event.row)}))
        lines.append(json.dumps({"barrier": True}))
    return lines


def declared_name(name: str, declared: Iterable[str]) -> str | None:
    """The declared table or column an event's ``name`` means: the one spelled the same, else
    the only one spelled the same but for case (RisingWave folds unquoted names to lower case,
    so ``CREATE TABLE LeftTable`` declares ``lefttable``, which an event may call
    ``LeftTable``); None if there is no such one."""
    names = list(declared)
    if name in names:
        return name
    folded = [n for n in names if n.casefold() == name.casefold()]
    return folded[0] if len(folded) == 1 else None


def _named_as_declared(source: Source, values: dict[str, Any], known: list[str]
                       ) -> dict[str, Any]:
    """An event's columns under their declared names (:func:`declared_name`); ValueError for
    a computed column the event gives, or a name no column has."""
    computed = {name: sql_of(expr) for name, expr in source.computed} | \
        dict.fromkeys(source.processing_time, "PROCTIME()")
    names = [*known, *computed]
    values = {declared_name(name, names) or name: value for name, value in values.items()}
    given = [name for name in computed if name in values]
    if given:
        raise ValueError(f"{', '.join(f'{n} AS {computed[n]}' for n in given)}: computed "
                         f"column{'s' if len(given) > 1 else ''} of table {source.name}, which "
                         f"an event does not give (it gives {', '.join(known)})")
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"unknown column(s) {', '.join(unknown)} for table {source.name} "
                         f"(columns: {', '.join(known)})")
    return values


def row_from_json(source: Source, values: Any) -> Row:
    """A JSON object of the carried columns of ``source`` to its row, the computed columns
    computed (:meth:`Source.arrived`, under the value rules in force, which also fit a DECIMAL
    to its declared precision and scale: :func:`~eowc.semantics.ir.values.declared_decimal_value`);
    ValueError says which column is wrong and why.

    Columns missing from the object are NULL, except the watermark column, which must be
    present and not NULL; a computed watermark column must not compute to NULL. An event
    gives no computed column.
    """
    if not isinstance(values, dict):
        raise ValueError(f"expected \"row\" to be a JSON object, got {values!r}")
    carried = source.carried
    known = [c.name for c in carried]
    if not set(values) <= set(known):  # the common case, every name as declared, skips this
        values = _named_as_declared(source, values, known)
    row = []
    rules = value_rules()
    for column in carried:
        try:
            value = from_external(values.get(column.name), column.type)
            if column.type is SqlType.DECIMAL:
                value = declared_decimal_value(value, column.decimal_shape, rules)
        except ValueError as error:
            raise ValueError(f"column {source.name}.{column.name}: {error}") from None
        row.append(value)
    time_index = source.event_time_index
    if time_index is not None and time_index < len(carried) and row[time_index] is None:
        column = carried[time_index].name
        what = "is missing" if column not in values else "is NULL"
        raise ValueError(f"event-time column {source.name}.{column} {what}")
    whole = source.arrived(tuple(row))
    if time_index is not None and whole[time_index] is None:
        name = source.columns[time_index].name
        raise ValueError(f"event-time column {source.name}.{name} (computed as "
                         f"{sql_of(dict(source.computed)[name])}) is NULL")
    return whole


def output_row_from_json(schema: Schema, values: Any) -> Row:
    """A row of a query's output as ``eowc run --format jsonl`` prints it (every output column
    by name, values as :func:`~eowc.semantics.ir.values.to_external` writes them) to its internal form,
    in the columns' order; ValueError names the unknown, missing or badly typed column."""
    if not isinstance(values, dict):
        raise ValueError(f"expected a row: a JSON object of the output columns, got {values!r}")
    names = [c.name for c in schema]
    unknown, missing = sorted(set(values) - set(names)), [n for n in names if n not in values]
    if unknown or missing:
        raise ValueError("; ".join(([f"unknown column(s) {', '.join(unknown)}"] if unknown else [])
                                   + ([f"missing column(s) {', '.join(missing)}"] if missing else []))
                         + f" (the query's output columns: {', '.join(names)})")
    row = []
    for column in schema:
        try:
            row.append(from_output_external(values[column.name], column.type))
        except ValueError as error:
            raise ValueError(f"column {column.name}: {error}") from None
    return tuple(row)


_EVENT, _BARRIER = '{"table": ..., "row": {...}}', '{"barrier": true}'
_LINE_SHAPES = f"expected {_EVENT} or {_BARRIER}"


def line_shape_error(item: dict[str, Any], text: str) -> str | None:
    """None if ``item`` (the JSON object of the line ``text``) is an event or a barrier; else
    which key is wrong, unknown or missing, at which column of the line, and what was
    expected."""
    if "barrier" in item:
        if item["barrier"] is not True:
            return (f"\"barrier\" is {json.dumps(item['barrier'])} at column "
                    f"{key_column(text, 'barrier')}: a barrier is exactly {_BARRIER}")
        extra = sorted(set(item) - {"barrier"})
        if extra:
            return (f"unknown key \"{extra[0]}\" at column {key_column(text, extra[0])} in a "
                    f"barrier: a barrier is exactly {_BARRIER}")
        return None
    unknown = sorted(set(item) - {"table", "row"})
    if unknown:
        return (f"unknown key \"{unknown[0]}\" at column {key_column(text, unknown[0])}: "
                f"{_LINE_SHAPES}")
    missing = [key for key in ("table", "row") if key not in item]
    if missing:
        return f"missing key \"{missing[0]}\": {_LINE_SHAPES}"
    return None


def key_column(text: str, key: str) -> int:
    """The column (from 1) where the top-level key ``key`` of the JSON object ``text`` starts
    (its opening quote); 1 if it cannot be found."""
    depth, i = 0, 0
    expecting_key = False
    while i < len(text):
        char = text[i]
        if char == '"':
            value, end = json.decoder.scanstring(text, i + 1)
            if depth == 1 and expecting_key and value == key:
                return i + 1
            expecting_key = False
            i = end
            continue
        if char in "{[":
            depth += 1
            expecting_key = char == "{" and depth == 1
        elif char in "}]":
            depth -= 1
        elif char == "," and depth == 1:
            expecting_key = True
        i += 1
    return 1


class BadLine(ValueError):
    """A line of an arrival log that is not an event or a barrier: why, and as much of it as
    was read (its table and its ``row`` value, where it got that far)."""

    def __init__(self, reason: str, table: str | None = None, raw: Any = None) -> None:
        super().__init__(reason)
        self.table, self.raw = table, raw


def parse_line(text: str, number: int, sources: Mapping[str, Source]) -> Event | None:
    """The event of one non-blank line of an arrival log (``number``: its line), or None for a
    barrier; :class:`BadLine` says what is wrong with it."""
    try:
        item = parse_json(text.rstrip("\r\n"))
    except json.JSONDecodeError as error:
        raise BadLine(f"malformed JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(item, dict):
        raise BadLine("expected a JSON object: an event or {\"barrier\": true}")
    wrong_shape = line_shape_error(item, text)
    if wrong_shape:
        raise BadLine(wrong_shape)
    if "barrier" in item:
        return None
    table, raw = declared_name(item["table"], sources) or item["table"], item["row"]
    if table not in sources:
        raise BadLine(f"unknown table {table!r} (declared: {', '.join(sorted(sources))})", table, raw)
    try:
        return Event(table, row_from_json(sources[table], raw), number)
    except ValueError as error:
        raise BadLine(str(error), table, raw) from None


def parse_arrival_log(lines: Iterable[str], sources: Mapping[str, Source], path: str = "<events>",
                      keep_going: bool = False) -> LoadedLog:
    """Read an arrival log. A bad line raises :class:`InputError` naming ``path`` and the line,
    unless ``keep_going``, in which case it is returned in ``rejected`` with its reason."""
    epochs: list[Epoch] = []
    current: list[Event] = []
    saw_barrier = False
    rejected: list[RejectedRow] = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            event = parse_line(text, number, sources)
        except BadLine as error:
            if not keep_going:
                raise InputError(path, number, str(error)) from None
            rejected.append(RejectedRow(number, error.table,
                                        error.raw if error.raw is not None else text.strip(),
                                        str(error)))
            continue
        if event is None:
            saw_barrier = True
            epochs.append(tuple(current))
            current = []
        else:
            current.append(event)
    if not saw_barrier:
        epochs = [(event,) for event in current]
    elif current:
        epochs.append(tuple(current))
    return LoadedLog(ArrivalLog(tuple(epochs)), tuple(rejected))


def _utf8_lines(handle: IO[bytes], path: str) -> Iterator[str]:
    """The lines of a file opened in binary mode, decoded; a line that is not UTF-8 raises
    :class:`InputError` naming the file and the line (also under ``keep_going``)."""
    for number, raw in enumerate(handle, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(path, number, f"not UTF-8 text (byte {raw[error.start]:#04x} at "
                                           f"column {error.start + 1})") from None


def load_arrival_log(path: str, sources: Mapping[str, Source],
                     keep_going: bool = False) -> LoadedLog:
    try:
        with open(path, "rb") as handle:
            return parse_arrival_log(_utf8_lines(handle, path), sources, path, keep_going)
    except OSError as error:
        raise InputError(path, None, f"cannot read the file: {error.strerror}") from None


def scan_arrival_log(path: str, sources: Mapping[str, Source]) -> Iterator[Event | None]:
    """The events of the arrival log at ``path``, each line checked as :func:`load_arrival_log`
    checks it, one at a time (None: a barrier), for a reader that keeps them elsewhere than in
    memory. A bad line raises :class:`InputError` (the file and the line)."""
    try:
        with open(path, "rb") as handle:
            for number, text in enumerate(_utf8_lines(handle, path), start=1):
                if not text.strip():
                    continue
                try:
                    yield parse_line(text, number, sources)
                except BadLine as error:
                    raise InputError(path, number, str(error)) from None
    except OSError as error:
        raise InputError(path, None, f"cannot read the file: {error.strerror}") from None


def check_window_range(plan: Plan, log: ArrivalLog, path: str) -> None:
    """Raise :class:`InputError` at the first event of ``log`` that falls in a window (of a
    window TVF reading its source directly) starting before the first TIMESTAMP,
    0001-01-01 00:00:00, or ending after the last, 9999-12-31 23:59:59.999999: that window's
    bounds are no TIMESTAMPs, in eowc or in the engines."""
    for node in walk(plan):
        if not isinstance(node, WindowTVF):
            continue
        source = _scanned_source(node.input)
        names = [c.name for c in source.columns] if source is not None else []
        if source is None or node.time_column not in names:
            continue
        index = names.index(node.time_column)
        for event in log.events:
            t = event.row[index] if event.table == source.name else None
            window = node.spec.window_out_of_range(t) if t is not None else None
            if window is None:
                continue
            early = window.start < FIRST_TIMESTAMP
            named = (f"ending {format_timestamp(window.end)}, which starts before "
                     f"{format_timestamp(FIRST_TIMESTAMP)}, the first TIMESTAMP" if early else
                     f"starting {format_timestamp(window.start)}, which ends after "
                     f"{format_timestamp(LAST_TIMESTAMP)}, the last TIMESTAMP")
            raise InputError(path, event.line, (
                f"{source.name}.{node.time_column} {format_timestamp(t)} falls in the "
                f"{node.spec.kind.value} window of {format_interval(node.spec.size)} {named}"))


def _scanned_source(plan: Plan) -> Source | None:
    """The source ``plan`` reads directly (through filters only), or None."""
    while isinstance(plan, Filter):
        plan = plan.input
    return plan.source if isinstance(plan, Scan) else None
