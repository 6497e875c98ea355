"""A pytest plugin (installed with the package): the fixture ``verify_query`` checks every
property of an executor on an EOWC query over Hypothesis-generated cases, in your own tests::

    def test_my_query(verify_query):
        verify_query("queries/q.sql")                       # the in-process executors
        verify_query("queries/q.sql", executor="spark", conventions=["spark"])
        verify_query("queries/q.sql", executor="python:my_engine:Engine")  # your own engine
        verify_query("queries/q.sql", executor_cmd="./my-engine")          # ... as a program

A case is a log (:func:`~eowc.verify.generators.arrival_logs`, or for a join or a union
:func:`~eowc.verify.generators.multi_source_logs`, late rows and rows on the watermark included, at
the query's own time scale: :mod:`eowc.verify.query_scale`), a log with the same INPUT
(:func:`~eowc.verify.generators.same_input_variant`, :func:`~eowc.verify.generators.reordered`) and a
disruption (:func:`~eowc.verify.generators.disruptions`), checked by
:func:`~eowc.verify.properties.check_all`. Hypothesis shrinks a failure to a small case, which is
written as a transcript (``eowc replay`` runs it) and named in the assertion message. Cases
that mostly expect no output fail the test as a *vacuous* verification
(:class:`~eowc.verify.coverage.Coverage`).

Settings profiles: ``eowc-quick`` (25 cases, for local runs; the default) and ``eowc-ci``
(200 cases, derandomized so that a red build reproduces). Choose one with ``pytest
--eowc-profile eowc-ci`` or the environment variable ``EOWC_PROFILE``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eowc.semantics.engines.multi_input import sources_of
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cases import Case, Executor, parsed
from eowc.verify.coverage import Coverage
from eowc.verify.crashes import common_crashes
from eowc.verify.executors import chosen_executor
from eowc.verify.generators import (
    LogShape,
    arrival_logs,
    disruptions,
    multi_source_logs,
    reordered,
    same_input_variant,
)
from eowc.verify.properties import check_all
from eowc.verify.query_scale import GeneratorSettings
from eowc.verify.suite import Target, load_target, nudged_for
from eowc.verify.transcripts import transcript_of, write_transcript

settings.register_profile("eowc-quick", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("eowc-ci", max_examples=200, deadline=None, derandomize=True,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])

VerifyQuery = Callable[..., None]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--eowc-profile", default=None,
                     help="Hypothesis settings profile of verify_query: eowc-quick (default) "
                          "or eowc-ci (also: the environment variable EOWC_PROFILE).")


def verify_query(query: str | os.PathLike[str], executor: str | Executor | None = None,
                 conventions: Sequence[str | Convention] | None = None,
                 crash: bool | None = None, shape: LogShape | GeneratorSettings | None = None,
                 profile: str = "eowc-quick", out: str | os.PathLike[str] = ".",
                 executor_cmd: str | None = None, ties: str | None = None) -> None:
    """Check every property of ``executor`` on the EOWC query in the file ``query`` over
    Hypothesis-generated cases (``profile`` sets how many); an AssertionError with the
    shrunk violation and the path of its transcript (written in ``out``) if one fails, or
    naming the verification vacuous if most cases expect no output.
    ``executor``: a name as ``eowc verify --executor`` takes it (default ``inprocess``;
    ``python:MODULE:ATTR`` for your own engine) or an :class:`Executor`; ``executor_cmd``: a
    program speaking the line protocol instead (:mod:`eowc.verify.external`). ``shape``: the logs'
    (default: the query's own time scale, :mod:`eowc.verify.query_scale`). ``crash``:
    disruptions include crashes (default: on, except on Spark, where each costs two JVM
    starts). ``ties``: the cases' order of rows with equal ORDER BY values (``row-id`` or
    ``deterministic``; default: each convention's)."""
    target = load_target(str(query))
    if executor is None or isinstance(executor, str):
        runner = chosen_executor(executor, executor_cmd)
    elif executor_cmd is not None:
        raise ValueError("executor and executor_cmd name two executors: give one")
    else:
        runner = executor
    chosen = _conventions_run(runner, target, conventions)
    crashes = crash if crash is not None else not runner.name.startswith("spark")
    sources = sources_of(parsed(target.script).query.plan)
    if not isinstance(shape, LogShape):
        shape = (shape or GeneratorSettings()).shape_for(parsed(target.script).query)
    shape = nudged_for(runner, shape)
    coverage = Coverage()

    @settings(settings.get_profile(profile))
    @given(st.data())
    def every_property_holds(data: st.DataObject) -> None:
        convention = data.draw(st.sampled_from(chosen), label="convention")
        if len(sources) == 1:
            log = data.draw(arrival_logs(sources[0], convention, shape), label="log")
            same_input = data.draw(same_input_variant(log, sources[0], convention))
        else:
            log = data.draw(multi_source_logs(sources, convention, shape), label="log")
            same_input = data.draw(reordered(log))
        points = common_crashes(Case(target.script, convention, log), [same_input]) \
            if crashes else []
        restarts, crashed = data.draw(disruptions(log, points), label="disruption")
        case = Case(target.script, convention, log, restarts, crashed, ties)
        coverage.add(case)
        violations = check_all(runner, case, same_input)
        if violations:
            first = violations[0]
            assert first.case is not None
            path = Path(out) / f"{target.name}-counterexample.yaml"
            write_transcript(str(path), transcript_of(first.case, path.stem, str(first)))
            raise AssertionError(f"{first}\n(by {first.executor}; counterexample: {path}; "
                                 f"replay: eowc replay {path})")

    every_property_holds()
    if coverage.vacuous:
        raise AssertionError(f"vacuous verification: {coverage.advice(target.name)}")


def _conventions_run(runner: Executor, target: Target,
                     conventions: Sequence[str | Convention] | None) -> list[Convention]:
    """The conventions of the cases: ``conventions`` (default: all), less those ``runner``
    says it cannot run the query under, with a warning; a ValueError for one asked for by
    name, or if none is left."""
    chosen = [Convention(c) for c in conventions] if conventions else list(Convention)
    refusal = getattr(runner, "refusal", None)
    query = parsed(target.script).query
    refused = {c: why for c in chosen if refusal and (why := refusal(query, c)) is not None}
    for convention, why in refused.items():
        if conventions or len(refused) == len(chosen):
            raise ValueError(f"{runner.name} cannot run {target.name} under the "
                             f"{convention.value} convention: {why}")
        warnings.warn(f"{target.name} is not verified under the {convention.value} convention: "
                      f"{why}", stacklevel=3)
    return [c for c in chosen if c not in refused]


@pytest.fixture(name="verify_query")
def verify_query_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> VerifyQuery:
    """:func:`verify_query` with the profile chosen on the command line (or ``EOWC_PROFILE``),
    query files found next to the test file, and counterexamples in the test's temporary
    directory."""
    profile = request.config.getoption("--eowc-profile") or os.environ.get("EOWC_PROFILE") \
        or "eowc-quick"

    def run(query: str | os.PathLike[str], **options: object) -> None:
        path = Path(query)
        if not path.is_absolute() and not path.exists():
            path = request.path.parent / path
        options.setdefault("profile", profile)
        options.setdefault("out", tmp_path)
        verify_query(path, **options)  # type: ignore[arg-type]
    return run
