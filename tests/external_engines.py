"""Engines of the test suite written against eowc's external protocol
(``--executor python:tests.external_engines:ATTR``): they see events and write rows as ``eowc
run`` prints them, nothing internal. ``ReplayingEngine`` is correct; each other one is a
realistic mistake in keeping state, which the checks of a restart or a crash must catch."""

from __future__ import annotations

import json
import os
from typing import Any

from eowc.semantics import Convention, parse_arrival_log, parse_script, run_eowc
from eowc.semantics.ir.values import to_external

#: Not an engine: ``python:tests.external_engines:NOT_AN_ENGINE`` is a usage error.
NOT_AN_ENGINE = 42


class ReplayingEngine:
    """A correct engine: it appends every epoch to a log in ``state_dir`` (committed when
    ``epoch`` returns) and emits what the reference emits after that epoch over the log."""

    def __init__(self, script: str, convention: str, state_dir: str) -> None:
        self.script, self.convention = parse_script(script), Convention(convention)
        self.path = os.path.join(state_dir, "log.jsonl")
        self.lines = self.recovered()

    def recovered(self) -> list[str]:
        if not os.path.exists(self.path):
            return []
        with open(self.path, encoding="utf-8") as handle:
            return handle.read().splitlines()

    def commit(self, lines: list[str]) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write("".join(f"{line}\n" for line in lines))

    def epoch(self, number: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        new = [json.dumps(event) for event in events] + [json.dumps({"barrier": True})]
        self.lines += new
        self.commit(new)
        log = parse_arrival_log(self.lines, self.script.sources).log
        epoch = len(log.epochs) - 1
        schema = self.script.query.schema
        return [{"row": {c.name: to_external(v, c.type) for c, v in zip(schema, e.row, strict=True)}}
                for e in run_eowc(self.script.query, log, self.convention) if e.epoch == epoch]


class ForgetfulEngine(ReplayingEngine):
    """Keeps its log in memory only: a restart starts it from nothing."""

    def recovered(self) -> list[str]:
        return []

    def commit(self, lines: list[str]) -> None:
        pass


class CommitsAtClose(ReplayingEngine):
    """Writes its log only when it is closed: a restart recovers, a crash loses it."""

    def commit(self, lines: list[str]) -> None:
        pass

    def close(self) -> None:
        with open(self.path, "w", encoding="utf-8") as handle:
            handle.write("".join(f"{line}\n" for line in self.lines))


def opens_nothing(script: str, convention: str, state_dir: str) -> object:
    """A function that opens no session: the object it returns has no ``epoch``."""
    return object()


class Raising(ReplayingEngine):
    """Fails on its first epoch, as an engine with a bug that raises."""

    def epoch(self, number: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        raise KeyError("ts")
