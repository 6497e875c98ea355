"""The ``verify_query`` fixture of the pytest plugin: it passes on a correct executor, and on a
mutant it fails with the shrunk violation and a transcript that replays it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.mutants import DropsEqualTimestamps
from verify.pytest_plugin import verify_query as verify_query_function
from verify.transcripts import load_transcript, replay

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
    # Shrunk to the smallest failure: two rows with one event time, one that completes it.
    assert len(transcript.case.log.events) == 3
    assert len({e.row[-1] for e in transcript.case.log.events}) == 2
    assert replay(transcript, DropsEqualTimestamps)


def test_the_profile_comes_from_the_command_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".sql", q=(Path(__file__).parent / "queries" / "tumble_agg.sql").read_text())
    pytester.makepyfile("""
        from hypothesis import settings
        def test_q(verify_query, monkeypatch):
            seen = []
            import verify.pytest_plugin as plugin
            original = plugin.verify_query
            monkeypatch.setattr(plugin, "verify_query",
                                lambda path, **o: seen.append(o["profile"]) or original(path, **o))
            verify_query("q.sql")
            assert seen == ["eowc-ci"]
    """)
    result = pytester.runpytest("--eowc-profile", "eowc-ci", "-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
