"""Transcripts: one verification :class:`~eowc.verify.executors.Case`, with the output it must give,
as a readable YAML file (in the spirit of Apache Beam's trigger transcripts). A folder of them
is a regression suite that ``eowc replay`` runs against any executor.

The format
==========

A transcript is one YAML mapping with these keys (any other key is an error)::

    # comments anywhere (the dumped files say at the top how to replay them)
    name: tumble-bids                  # required, a string
    description: |                     # optional, a string (default: empty)
      What it pins, and where it comes from.
    convention: risingwave             # required: risingwave | spark | flink
    ties: row-id                       # optional: row-id | deterministic (default: the
                                       #   convention's; rows with equal ORDER BY values)
    query: |                           # required: the SQL script, CREATE SOURCE ... + one
      CREATE SOURCE bid (...);         #   query ending in EMIT ON WINDOW CLOSE
      SELECT ... EMIT ON WINDOW CLOSE;
    steps:                             # required, a list (possibly empty)
      - events:                        # rows arriving, in arrival order
          - {table: bid, row: {bidtime: "2020-04-15 08:05:00", price: 4.0, item: C}}
          - {bidtime: "2020-04-15 08:07:00", price: 2.0, item: A}   # short form
      - barrier                        # ends epoch 0
      - expect: []                     # nothing is emitted after epoch 0
      - restart                        # the run restarts from its state after epoch 0
      - crash: {point: mid_batch, batch: data}   # killed in epoch 1, then recovered
      - events:
          - {bidtime: "2020-04-15 08:11:00", price: 3.0, item: B}
      - barrier                        # ends epoch 1
      - expect:
          - {window_start: "2020-04-15 08:00:00", window_end: "2020-04-15 08:10:00",
             total_price: 6.0, bids: 2}

The steps, exactly:

* ``events: [EVENT, ...]`` appends events, in order, to the current epoch (several ``events``
  steps may feed one epoch; the list may be empty). An EVENT is the external JSON form of the
  arrival log (:func:`eowc.semantics.ir.arrival.row_from_json` /
  :func:`~eowc.semantics.ir.arrival.row_to_json`):
  ``{table: NAME, row: {COLUMN: VALUE, ...}}``, or, when the script declares exactly one source,
  just the row ``{COLUMN: VALUE, ...}`` (a mapping whose keys are exactly ``table`` and ``row``
  is always the long form). A column left out is NULL, except the watermark column.
* ``barrier`` ends the current epoch, which is empty if nothing arrived since the previous
  barrier. Epochs are numbered from 0 in the order their barriers come.
* ``expect: [ROW, ...]`` pins the output of the epoch the preceding barrier ended: exactly these
  rows (a multiset; their order does not matter) are emitted after that epoch. A ROW maps every
  output column of the query to its value in external form (TIMESTAMP a string, INTERVAL
  ``[-]HH:MM:SS[.ffffff]``, ``null`` for NULL). ``expect: []`` pins that nothing is emitted.
  As soon as one ``expect`` step is present, every epoch without one pins that nothing is
  emitted after it; with none, the transcript pins no output and only the properties of
  :func:`eowc.verify.properties.check_all` are checked.
* ``restart``: the run stops once the epoch the preceding barrier ended is committed, and starts
  again from its state (``Case.restart_after``).
* ``expect`` and ``restart`` come right after a barrier, each at most once per barrier, in
  either order.
* ``crash: {point: POINT, batch: BATCH}`` (POINT one of ``before_batch``, ``mid_batch``,
  ``after_sink``, default ``mid_batch``; BATCH ``data`` or ``settle``, default ``data``): the
  run is killed at that point of the epoch whose events follow, then recovered
  (:class:`~eowc.verify.executors.Crash`). It starts an epoch: it comes first, or after a barrier
  (and its ``expect``/``restart``), before any ``events`` of that epoch. At most one per
  transcript.
* Steps after the last barrier other than its ``expect``/``restart`` (``events``, a ``crash``)
  form one more epoch, which no ``expect`` can follow (end it with a barrier to pin it). So a
  transcript without any barrier is one epoch, unlike an arrival-log file, where every event
  is then its own epoch.

Scalars are read as in YAML 1.2's core schema: only ``true``/``false`` are booleans, ``010`` is
the integer 10, and timestamps stay strings (``ts: 2024-01-01 10:00:00`` needs no quotes). Only
plain YAML is accepted (no tags), and no key of a mapping is given twice.
:func:`dump_transcript` quotes every string that a YAML 1.1 reader would take for something
else, so the files read the same anywhere.

A transcript is a value: its events carry no line (``Event.line`` is 0), its restarts are
sorted, and its expectations keep only the epochs that emit something, so
``parse_transcript(dump_transcript(t)) == t`` for every transcript ``t``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from eowc.semantics.engines.interpreter import Emission, check_runs_under_eowc, run_eowc, watermark_sequence
from eowc.semantics.errors import EowcError, InputError, SqlError
from eowc.semantics.frontend.sql import Script, parse_script
from eowc.semantics.ir.arrival import ArrivalLog, Event, output_row_from_json, row_from_json, row_to_json
from eowc.semantics.ir.expr import Row, Schema
from eowc.semantics.ir.plan import TIES, Source
from eowc.semantics.ir.values import computing_under, decimal_text, format_timestamp
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cases import CRASH_POINTS, Case, Crash, Executor
from eowc.verify.properties import Violation, _rows, check_all

#: Where a crash happens within its epoch: the data batch (its rows) or the settle batch.
CRASH_BATCHES = ("data", "settle")
#: The violation of a transcript whose pinned expectations the executor does not meet.
EXPECTED = "expected"
#: The violation of a transcript whose pinned expectations the reference itself does not meet:
#: the semantics changed since the transcript was written (or the pin is wrong).
PINNED_VS_REFERENCE = "pinned vs reference"

Expectations = Mapping[int, tuple[Row, ...]]


@dataclass(frozen=True)
class Transcript:
    """A named, described :class:`Case` and, unless ``expect`` is None, the rows it must emit
    after each epoch: ``expect[k]`` is the multiset of rows (internal values, in the query's
    output columns) emitted after epoch ``k``; an epoch absent from ``expect`` emits nothing.

    Normalized on construction (so that equal transcripts are equal values): the case's events
    get line 0, its restarts are sorted and distinct, ``expect`` drops the epochs that emit
    nothing (over an empty log, pinning nothing is ``None``). A ValueError if an expected epoch,
    a restart or the crash is outside the log."""

    name: str
    description: str
    case: Case
    expect: Expectations | None = field(default=None)

    def __post_init__(self) -> None:
        log, epochs = self.case.log, len(self.case.log.epochs)
        if any(event.line for event in log.events) or \
                tuple(sorted(set(self.case.restart_after))) != self.case.restart_after:
            lineless = ArrivalLog(tuple(tuple(Event(e.table, e.row) for e in epoch)
                                        for epoch in log.epochs))
            object.__setattr__(self, "case", replace(
                self.case, log=lineless, restart_after=tuple(sorted(set(self.case.restart_after)))))
        outside = [k for k in self.case.restart_after if not 0 <= k < epochs]
        if outside:
            raise ValueError(f"restart after epoch {outside[0]}, but the log has {epochs} epochs")
        if self.case.crash is not None and self.case.crash.epoch >= epochs:
            raise ValueError(f"crash in epoch {self.case.crash.epoch}, but the log has "
                             f"{epochs} epochs")
        if self.expect is not None:
            expect = {int(k): tuple(tuple(row) for row in rows)
                      for k, rows in sorted(self.expect.items()) if rows}
            outside = [k for k in expect if not 0 <= k < epochs]
            if outside:
                raise ValueError(f"rows expected after epoch {outside[0]}, but the log has "
                                 f"{epochs} epochs")
            object.__setattr__(self, "expect", expect if epochs else None)


def transcript_of(case: Case, name: str, description: str = "") -> Transcript:
    """``case`` with the expectations the reference computes: ``run_eowc`` over its log,
    grouped by emission epoch (in emission order)."""
    expect: dict[int, list[Row]] = {}
    for emission in run_eowc(case.query, case.log, case.convention, ties=case.ties):
        expect.setdefault(emission.epoch, []).append(emission.row)
    return Transcript(name, description, case, {k: tuple(rows) for k, rows in expect.items()})


# ------------------------------------------------------------------------------ YAML dialect

_BOOL, _INT, _FLOAT, _TIMESTAMP = (f"tag:yaml.org,2002:{t}" for t in ("bool", "int", "float",
                                                                       "timestamp"))
_CORE = {
    _BOOL: (re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")),
    _INT: (re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789")),
    _FLOAT: (re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+0123456789.")),
}


def _core_resolvers(cls: Any) -> None:
    """Give a loader or dumper class YAML 1.2 core-schema scalars: the YAML 1.1 booleans,
    numbers and timestamps of PyYAML replaced by the core schema's."""
    cls.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers
                if tag not in (_BOOL, _INT, _FLOAT, _TIMESTAMP)]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    for tag, (regexp, first) in _CORE.items():
        cls.add_implicit_resolver(tag, regexp, first)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with core-schema scalars (decimal integers only)."""


_core_resolvers(_Loader)
_Loader.add_constructor(_INT, lambda loader, node: int(loader.construct_scalar(node)))
_Loader.add_constructor(_FLOAT, lambda loader, node: _number(loader.construct_scalar(node)))


def _number(text: str) -> Decimal | float:
    """A YAML float: a finite one exactly, as a ``Decimal`` (a DECIMAL keeps its scale), NaN
    and the infinities as floats."""
    try:
        value = Decimal(text)
    except ArithmeticError:
        value = Decimal("NaN")
    return value if value.is_finite() else float(text.lower().lstrip("+").replace(".", ""))


class _Literal(str):
    """A string dumped as a literal block (``|``) if YAML allows it, else quoted."""


class _Flow(dict):
    """A mapping dumped on one line, ``{a: 1, b: 2}``."""


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper, resolving scalars as :class:`_Loader` reads them; a list inside a
    mapping is indented under its key."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


_core_resolvers(_Dumper)
_YAML11 = yaml.SafeLoader("")  # resolves plain scalars as a YAML 1.1 reader would
#: Line breaks of YAML 1.1 other than "\n", which PyYAML reads back as "\n" unless escaped.
_FOLDED_BREAKS = ("\x85", "\u2028", "\u2029")


def _represent_str(dumper: yaml.SafeDumper, text: str) -> ScalarNode:
    """A string, double-quoted when a YAML 1.1 reader would take it plain for something else
    (a timestamp, ``yes``, ``1:30``); a :class:`_Literal` with a line break as a block."""
    plain_elsewhere = _YAML11.resolve(ScalarNode, text, (True, False))
    style = '"' if plain_elsewhere != "tag:yaml.org,2002:str" else None
    if any(ch in text for ch in _FOLDED_BREAKS):
        style = '"'  # only double quotes keep them: a block or single quotes read back "\n"
    elif isinstance(text, _Literal) and "\n" in text:
        style = "|"
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(text), style=style)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(_Literal, _represent_str)
_Dumper.add_representer(Decimal, lambda dumper, value: dumper.represent_scalar(
    _FLOAT, decimal_text(value)))  # exactly its digits: 3.30
_Dumper.add_representer(_Flow, lambda dumper, data: dumper.represent_mapping(
    "tag:yaml.org,2002:map", data.items(), flow_style=True))


def _yaml(data: Any) -> str:
    """``data`` as a YAML fragment, without the document end marker that PyYAML writes after
    a block kept with ``|+`` (the key after the fragment ends that block just as well)."""
    text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=10_000,
                     default_flow_style=False)
    return text.removesuffix("...\n")


# ------------------------------------------------------------------------------ dumping

def dump_transcript(transcript: Transcript) -> str:
    """``transcript`` as YAML (the format of this module): a comment saying how to replay it,
    the query as a literal block, one epoch after the other (a comment with its number and the
    watermark after it, its crash, its events one flow mapping per line, its barrier, then its
    ``expect`` and ``restart``). A ValueError if an event's table is not declared."""
    case = transcript.case
    script = case.parsed
    sources = script.sources
    short = len(sources) == 1
    schema = case.query.schema
    watermarks = watermark_sequence(case.query, case.log, case.convention)
    out = [f"# eowc transcript: {len(case.log.epochs)} epochs, {len(case.log.events)} events, "
           f"{case.disruption()}.\n",
           "# Replay: eowc replay THIS_FILE [--executor inprocess|spark|spark-native|reference|"
           "python:MODULE:ATTR] [--executor-cmd 'COMMAND']\n",
           "# (format: docs/transcripts.md)\n",
           _yaml({"name": transcript.name})]
    if transcript.description:
        out.append(_yaml({"description": _Literal(transcript.description)}))
    out.append(_yaml({"convention": case.convention.value}))
    if case.ties is not None:
        out.append(_yaml({"ties": case.ties}))
    out.append(_yaml({"query": _Literal(case.script)}))
    out.append("steps:\n" if case.log.epochs else "steps: []\n")
    for k, epoch in enumerate(case.log.epochs):
        out.append(f"  # epoch {k}: watermark after it {_watermark_text(watermarks[k])}\n")
        if case.crash is not None and case.crash.epoch == k:
            out.append(_step({"crash": _Flow(point=case.crash.point,
                                             batch="settle" if case.crash.settle else "data")}))
        if epoch:
            events = []
            for event in epoch:
                if event.table not in sources:
                    raise ValueError(f"event of table {event.table!r}, which the script does "
                                     f"not declare (declared: {', '.join(sorted(sources))})")
                row = row_to_json(sources[event.table], event.row)
                long = not short or set(row) == {"table", "row"}
                events.append(_Flow(table=event.table, row=_Flow(row)) if long else _Flow(row))
            out.append(_step({"events": events}))
        out.append("  - barrier\n")
        if transcript.expect is not None:
            rows = [_Flow(_external(row, schema)) for row in transcript.expect.get(k, ())]
            out.append(_step({"expect": rows}) if rows else "  - expect: []\n")
        if k in case.restart_after:
            out.append("  - restart\n")
    return "".join(out)


def write_transcript(path: str, transcript: Transcript) -> None:
    """Write :func:`dump_transcript` of ``transcript`` to ``path`` (UTF-8)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(dump_transcript(transcript))


def _step(step: dict[str, Any]) -> str:
    """One item of ``steps``, indented under it."""
    return "".join(f"  {line}\n" for line in _yaml([step]).splitlines())


def _watermark_text(watermark: float) -> str:
    if math.isfinite(watermark):
        return format_timestamp(int(watermark))
    return "none yet" if watermark < 0 else "+infinity"


def _external(row: Row, schema: Schema) -> dict[str, Any]:
    """An output row in external form (:func:`row_to_json` over the output columns)."""
    return row_to_json(Source("output", schema), row)


# ------------------------------------------------------------------------------ parsing

_PLAIN_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null",
                                                            "seq", "map"))
_STEPS = "barrier, restart, or one of events: [...], expect: [...], crash: {...}"


class _Parser:
    """Reads one transcript from its composed YAML nodes; every error is an InputError naming
    the file and the line of the node at fault."""

    def __init__(self, text: str, path: str) -> None:
        self.path = path
        self.loader = _Loader(text)

    def fail(self, node: Node | None, message: str) -> InputError:
        return InputError(self.path, node.start_mark.line + 1 if node is not None else None,
                          message)

    def value(self, node: Node) -> Any:
        return self.loader.construct_object(node, deep=True)

    def mapping(self, node: Node, what: str) -> Iterator[tuple[str, Node, Node]]:
        """The (key, key node, value node) of a mapping node with string keys, none twice."""
        if not isinstance(node, MappingNode):
            raise self.fail(node, f"expected {what} to be a mapping, got {_kind(node)}")
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = self.value(key_node)
            if not isinstance(key, str):
                raise self.fail(key_node, f"expected the keys of {what} to be names, got {key!r}")
            if key in seen:
                raise self.fail(key_node, f"{key!r} is given twice in {what}")
            seen.add(key)
            yield key, key_node, value_node

    def string(self, node: Node, key: str) -> str:
        value = self.value(node)
        if not isinstance(node, ScalarNode) or not isinstance(value, str):
            raise self.fail(node, f"expected {key} to be a string, got {_kind(node, value)}")
        return value

    def sequence(self, node: Node, what: str) -> list[Node]:
        if isinstance(node, ScalarNode) and self.value(node) is None:
            return []
        if not isinstance(node, SequenceNode):
            raise self.fail(node, f"expected {what} to be a list, got {_kind(node)}")
        return list(node.value)

    def parse(self) -> Transcript:
        try:
            root = self.loader.get_single_node()
            if root is None:
                raise self.fail(None, "the file is empty: expected a mapping with name, "
                                      "convention, query and steps")
            self.check_tags(root)
            return self.transcript(root)
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            raise InputError(self.path, mark.line + 1 if mark else None,
                             f"not valid YAML: {error.problem or error.context}") from None
        except yaml.YAMLError as error:
            raise InputError(self.path, None, f"not valid YAML: {error}") from None
        finally:
            self.loader.dispose()

    def check_tags(self, root: Node) -> None:
        """Only plain YAML: strings, numbers, booleans, null, lists and mappings."""
        pending, seen = [root], set()
        while pending:
            node = pending.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if node.tag not in _PLAIN_TAGS:
                raise self.fail(node, f"unsupported YAML tag {node.tag}: a transcript holds only "
                                      "strings, numbers, booleans, null, lists and mappings")
            if isinstance(node, SequenceNode):
                pending.extend(node.value)
            elif isinstance(node, MappingNode):
                pending.extend(n for pair in node.value for n in pair)

    def transcript(self, root: Node) -> Transcript:
        fields: dict[str, tuple[Node, Node]] = {}
        for key, key_node, value_node in self.mapping(root, "a transcript"):
            if key not in ("name", "description", "convention", "ties", "query", "steps"):
                raise self.fail(key_node, f"unknown key {key!r}: expected name, description, "
                                          "convention, ties, query, steps")
            fields[key] = (key_node, value_node)
        for key in ("name", "convention", "query", "steps"):
            if key not in fields:
                raise self.fail(root, f"missing key {key!r} (a transcript has name, "
                                      "description, convention, query, steps)")
        name = self.string(fields["name"][1], "name")
        description = self.string(fields["description"][1], "description") \
            if "description" in fields else ""
        convention_node = fields["convention"][1]
        convention_name = self.value(convention_node)
        if convention_name not in [c.value for c in Convention]:
            raise self.fail(convention_node, f"unknown convention {convention_name!r}: expected "
                                             "risingwave, spark or flink")
        convention = Convention(convention_name)
        ties = self.value(fields["ties"][1]) if "ties" in fields else None
        if ties is not None and ties not in TIES:
            raise self.fail(fields["ties"][1], f"unknown tie order {ties!r}: expected "
                                               f"{' or '.join(TIES)}")
        query_node = fields["query"][1]
        text = self.string(query_node, "query")
        script = self.script(query_node, text, convention)
        with computing_under(convention.values):  # the events' computed columns
            transcript = self.steps(fields["steps"][1], name, description, convention, text,
                                    script)
        return replace(transcript, case=replace(transcript.case, ties=ties))

    def script(self, node: Node, text: str, convention: Convention) -> Script:
        """The parsed script, which must hold an EOWC query valid under ``convention``."""
        try:
            script = parse_script(text)
        except EowcError as error:
            fragment = error.fragment if isinstance(error, SqlError) else None
            raise InputError(self.path, self.query_line(node, text, fragment),
                             f"the query cannot be parsed: {error}") from None
        if not script.query.emit_on_window_close:
            raise self.fail(node, "the query is not EOWC: a transcript pins EMIT ON WINDOW CLOSE "
                                  "output, end the query with EMIT ON WINDOW CLOSE")
        try:
            check_runs_under_eowc(script.query, convention)
        except EowcError as error:
            raise self.fail(node, f"the query cannot run under EMIT ON WINDOW CLOSE: "
                                  f"{error}") from None
        return script

    def query_line(self, node: Node, text: str, fragment: str | None) -> int:
        """The line of ``fragment`` in a literal-block query, else the query's own line."""
        line = node.start_mark.line + 1
        if isinstance(node, ScalarNode) and node.style == "|":
            found = text.find(fragment.strip()) if fragment else -1
            return line + 1 + (text.count("\n", 0, found) if found >= 0 else 0)
        return line

    def steps(self, node: Node, name: str, description: str, convention: Convention,
              text: str, script: Script) -> Transcript:
        epochs: list[tuple[Event, ...]] = []
        current: list[Event] = []
        since_barrier: list[str] = []  # the kinds of step since the last barrier
        barrier_seen = False
        restarts: list[int] = []
        crash: Crash | None = None
        crash_node: Node | None = None
        expect: dict[int, tuple[Row, ...]] | None = None
        for step in self.sequence(node, "steps"):
            kind, body = self.step(step)
            if kind == "barrier":
                epochs.append(tuple(current))
                current, since_barrier, barrier_seen = [], [], True
                continue
            if kind in ("expect", "restart"):
                if not barrier_seen or set(since_barrier) - {"expect", "restart"}:
                    raise self.fail(step, f"{kind} must come right after a barrier (or after "
                                          f"its {'restart' if kind == 'expect' else 'expect'}): "
                                          f"it is about the epoch that barrier ends")
                if kind in since_barrier:
                    raise self.fail(step, f"a second {kind} after the same barrier")
                epoch = len(epochs) - 1
                if kind == "restart":
                    restarts.append(epoch)
                else:
                    assert body is not None
                    expect = expect if expect is not None else {}
                    expect[epoch] = self.expected_rows(body, script)
            elif kind == "crash":
                assert body is not None
                if crash_node is not None:
                    raise self.fail(step, f"a second crash (the first is at line "
                                          f"{crash_node.start_mark.line + 1}): a transcript holds "
                                          "at most one")
                if "events" in since_barrier:
                    raise self.fail(step, "crash must start an epoch: put it after the barrier, "
                                          "before the events of the epoch it kills")
                crash, crash_node = self.crash(body, len(epochs)), step
            else:
                assert body is not None
                current.extend(self.events(body, script))
            since_barrier.append(kind)
        if set(since_barrier) - {"expect", "restart"}:  # events or a crash after the last barrier
            epochs.append(tuple(current))
        case = Case(text, convention, ArrivalLog(tuple(epochs)), tuple(restarts), crash)
        return Transcript(name, description, case, expect)

    def step(self, node: Node) -> tuple[str, Node | None]:
        """A step's kind and, for events/expect/crash, the node of its value."""
        if isinstance(node, ScalarNode):
            word = self.value(node)
            if word in ("barrier", "restart"):
                return word, None
            raise self.fail(node, f"unknown step {word!r}: expected {_STEPS}")
        if not isinstance(node, MappingNode) or len(node.value) != 1:
            raise self.fail(node, f"expected a step ({_STEPS}), got {_kind(node)}"
                                  + (f" with {len(node.value)} keys" if isinstance(node, MappingNode)
                                     else ""))
        (key, key_node, value), = self.mapping(node, "a step")
        if key not in ("events", "expect", "crash"):
            raise self.fail(key_node, f"unknown step {key!r}: expected {_STEPS}")
        return key, value

    def events(self, node: Node, script: Script) -> list[Event]:
        sources = script.sources
        only = next(iter(sources.values())) if len(sources) == 1 else None
        events = []
        for item in self.sequence(node, "events"):
            parts = {key: value for key, _, value in self.mapping(item, "an event")}
            if set(parts) == {"table", "row"}:
                table = self.value(parts["table"])
                if not isinstance(table, str) or table not in sources:
                    raise self.fail(item, f"unknown table {table!r} (declared: "
                                          f"{', '.join(sorted(sources))})")
                source, row_node = sources[table], parts["row"]
                if isinstance(row_node, MappingNode):
                    for _ in self.mapping(row_node, f"a row of {table}"):
                        pass  # column names are strings, none twice
                raw = self.value(row_node)
            elif only is not None:
                source, raw = only, self.value(item)
            else:
                raise self.fail(item, f"expected an event {{table: ..., row: {{...}}}}: the script "
                                      f"declares {len(sources)} sources ({', '.join(sorted(sources))})"
                                      ", so the short form (just the row) is not allowed")
            try:
                events.append(Event(source.name, row_from_json(source, raw)))
            except ValueError as error:
                raise self.fail(item, f"bad row for table {source.name}: {error}") from None
        return events

    def expected_rows(self, node: Node, script: Script) -> tuple[Row, ...]:
        """The rows of an ``expect`` step, each naming every output column of the query."""
        rows = []
        for item in self.sequence(node, "expect"):
            for _ in self.mapping(item, "an expected row"):
                pass  # column names are strings, none twice
            try:
                rows.append(output_row_from_json(script.query.schema, self.value(item)))
            except ValueError as error:
                raise self.fail(item, f"bad expected row: {error}") from None
        return tuple(rows)

    def crash(self, node: Node, epoch: int) -> Crash:
        point, batch = "mid_batch", "data"
        for key, key_node, value_node in self.mapping(node, "crash"):
            value = self.value(value_node)
            if key == "point":
                if value not in CRASH_POINTS:
                    raise self.fail(value_node, f"unknown crash point {value!r}: expected one of "
                                                f"{', '.join(CRASH_POINTS)}")
                point = value
            elif key == "batch":
                if value not in CRASH_BATCHES:
                    raise self.fail(value_node, f"unknown crash batch {value!r}: expected data "
                                                "or settle")
                batch = value
            else:
                raise self.fail(key_node, f"unknown key {key!r} of crash: expected point, batch")
        return Crash(epoch, point, batch == "settle")


def _kind(node: Node, value: Any = None) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    return repr(value) if value is not None else f"the scalar {node.value!r}"


def parse_transcript(text: str, path: str = "<transcript>") -> Transcript:
    """Read a transcript (the format of this module) from ``text``. Every error is an
    :class:`~eowc.semantics.errors.InputError` naming ``path``, the line, and what was expected."""
    return _Parser(text, path).parse()


def load_transcript(path: str) -> Transcript:
    """Read the transcript in the file ``path`` (UTF-8); see :func:`parse_transcript`."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as error:
        raise InputError(path, None, f"cannot read the file: {error.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(path, raw.count(b"\n", 0, error.start) + 1,
                         f"not UTF-8 text (byte {raw[error.start]:#04x})") from None
    return parse_transcript(text, path)


# ------------------------------------------------------------------------------ replay

def _by_epoch(rows: Sequence[tuple[int, Row]]) -> dict[int, Counter]:
    found: dict[int, Counter] = {}
    for epoch, row in rows:
        found.setdefault(epoch, Counter())[row] += 1
    return found


def _first_difference(got: dict[int, Counter], want: dict[int, Counter]
                      ) -> tuple[int, Counter, Counter] | None:
    """The first epoch whose rows differ: the epoch, the rows wanted and not got, the rows got
    and not wanted."""
    for epoch in sorted({*got, *want}):
        have, need = got.get(epoch, Counter()), want.get(epoch, Counter())
        if have != need:
            return epoch, need - have, have - need
    return None


def _shown(rows: Counter, schema: Schema) -> str:
    """Rows for a message, as tuples of their external values (:func:`_rows`)."""
    return _rows(rows, schema)


class _Recorded:
    """An executor whose run of one case was already made: that run is handed back once (the
    next asks run again), so :func:`check_all` makes as many independent runs as it would."""

    def __init__(self, executor: Executor, case: Case, emissions: list[Emission]) -> None:
        self.executor, self.name = executor, executor.name
        self.recorded: dict[Case, list[Emission]] = {case: emissions}

    def emissions(self, case: Case) -> list[Emission]:
        if case in self.recorded:
            return self.recorded.pop(case)
        return self.executor.emissions(case)

    def variant(self) -> Executor:
        again = self.executor.variant()
        return self if again is self.executor else again


def replay(transcript: Transcript, executor: Executor) -> list[Violation]:
    """Every violation of ``transcript`` by ``executor``, in this order:

    * ``pinned vs reference``: the pinned expectations are not what the reference emits (the
      semantics changed since the transcript was written, or the pin is wrong), at the first
      epoch that differs;
    * ``expected``: the executor's emissions of the case (with its restarts and crash) are not
      the pinned ones, at the first epoch that differs, with the rows missing and extra;
    * the properties of :func:`~eowc.verify.properties.check_all` on the case.

    The run made for the expectations is reused by ``check_all`` (not made twice). Exceptions
    of the executor (an EowcError when it cannot run the query) propagate."""
    case = transcript.case
    schema = case.query.schema
    found: list[Violation] = []
    output = executor.emissions(case)
    if transcript.expect is not None:
        pinned = _by_epoch([(k, row) for k, rows in transcript.expect.items() for row in rows])
        reference = _by_epoch(list(run_eowc(case.query, case.log, case.convention,
                                            ties=case.ties)))
        drift = _first_difference(reference, pinned)
        if drift is not None:
            epoch, unsupported, unpinned = drift
            parts = ([f"pinned, not emitted by the reference: {_shown(unsupported, schema)}"]
                     if unsupported else []) + \
                ([f"emitted by the reference, not pinned: {_shown(unpinned, schema)}"]
                 if unpinned else [])
            found.append(Violation(PINNED_VS_REFERENCE, epoch,
                                   "the transcript pins what the reference does not emit (the "
                                   "semantics changed, or the pin is wrong): " + "; ".join(parts),
                                   case, "reference", PINNED_VS_REFERENCE))
        differs = _first_difference(_by_epoch(output), pinned)
        if differs is not None:
            epoch, missing, extra = differs
            parts = ([f"missing (pinned, not emitted): {_shown(missing, schema)}"] if missing
                     else []) + \
                ([f"extra (emitted, not pinned): {_shown(extra, schema)}"] if extra else [])
            found.append(Violation(EXPECTED, epoch, f"{executor.name}, {case.disruption()}: "
                                   + "; ".join(parts), case, executor.name, EXPECTED))
    found.extend(check_all(_Recorded(executor, case, output), case))
    return found
