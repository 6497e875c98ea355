"""The ``verify_query`` fixture of the pytest plugin: it passes on a correct executor, and on a
mutant it fails with the shrunk violation and a transcript that replays it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

from eowc.verify.generators import MIN_ROWS
from eowc.verify.pytest_plugin import verify_query as verify_query_function
from eowc.verify.transcripts import load_transcript, replay
from tests.mutants import DropsEqualTimestamps

pytest_plugins = ["pytester"]


def test_the_fixture_passes_on_the_in_process_executors(verify_query) -> None:
    verify_query("queries/tumble_agg.sql")  # found next to this file


def test_a_failure_is_shrunk_and_written_as_a_transcript(tmp_path: Path) -> None:
    query = Path(__file__).parent / "queries" / "sort_last_ts.sql"
    with pytest.raises(AssertionError) as failure:
        # eowc-ci is derandomized: the same cases every run (25 random ones can miss the mutant)
        verify_query_function(query, executor=DropsEqualTimestamps, out=tmp_path,
                              profile="eowc-ci")
    message = str(failure.value)
    assert message.startswith("exact and timely after epoch")
    path = re.search(r"counterexample: (\S+);", message).group(1)
    transcript = load_transcript(path)
    # Shrunk to the smallest failure among logs of MIN_ROWS rows: rows with one event time
    # (at least two: a tie), one that completes it.
    assert len(transcript.case.log.events) == MIN_ROWS
    assert len({e.row[-1] for e in transcript.case.log.events}) == 2
    assert replay(transcript, DropsEqualTimestamps)


def test_the_profile_comes_from_the_command_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".sql", q=(Path(__file__).parent / "queries" / "tumble_agg.sql").read_text())
    pytester.makepyfile("""
        from hypothesis import settings
        def test_q(verify_query, monkeypatch):
            seen = []
            import eowc.verify.pytest_plugin as plugin
            original = plugin.verify_query
            monkeypatch.setattr(plugin, "verify_query",
                                lambda path, **o: seen.append(o["profile"]) or original(path, **o))
            verify_query("q.sql")
            assert seen == ["eowc-ci"]
    """)
    result = pytester.runpytest("--eowc-profile", "eowc-ci", "-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


class EmitsNothing:
    """An executor that never emits a row: it must fail every verification."""

    name = "emits-nothing"

    def emissions(self, case):  # noqa: ANN001, ANN201
        return []

    def variant(self):  # noqa: ANN201
        return self


SUITE = Path(__file__).parent.parent / "verify" / "suite"


@pytest.mark.parametrize("name", ["interval_join", "union", "window_join_aggregates"])
def test_the_fixture_runs_joins_and_unions(name: str, tmp_path: Path) -> None:
    verify_query_function(SUITE / f"{name}.sql", out=tmp_path)


#: The plugin's default number of cases, not shrunk (shrinking a failure of every target is slow).
settings.register_profile("unshrunk", max_examples=25, deadline=None, database=None,
                          phases=[Phase.explicit, Phase.generate],
                          suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("path", sorted(SUITE.glob("*.sql")), ids=lambda p: p.stem)
def test_an_executor_that_emits_nothing_fails_every_builtin_target(path: Path, tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="exact and timely.*missing"):
        verify_query_function(path, executor=EmitsNothing(), out=tmp_path, profile="unshrunk")
