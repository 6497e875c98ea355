"""Your own engine, verified from the command line (verify/external.py): the tiny engine of
docs/examples passes ``eowc verify`` under every convention with real restarts and SIGKILL
crashes, its buggy twin fails with a shrunk transcript that ``eowc replay --executor-cmd``
replays; a Python engine (``python:MODULE:ATTR``) passes through verify, replay and the pytest
plugin, and engines that keep their state wrongly are caught; bad engines exit 2 naming what
was wrong, in the protocol's words."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import Phase, settings

from eowc.semantics.engines.interpreter import run_eowc
from eowc.semantics.ir.arrival import ArrivalLog, Event
from eowc.semantics.ir.values import parse_timestamp
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.main import main
from eowc.verify.executors import Case, Crash, command_executor, executor_named
from eowc.verify.external import ExecutorFailed, ExternalExecutor
from eowc.verify.generators import LogShape
from eowc.verify.pytest_plugin import verify_query
from eowc.verify.suite import generate_case, load_target
from eowc.verify.transcripts import load_transcript

ROOT = Path(__file__).resolve().parent.parent
QUERY = ROOT / "docs" / "examples" / "tiny_engine.sql"
TINY = f"{sys.executable} {ROOT / 'docs' / 'examples' / 'tiny_engine.py'}"
BUGGY = f"{sys.executable} {ROOT / 'docs' / 'examples' / 'tiny_engine_buggy.py'}"
SCRIPT = QUERY.read_text(encoding="utf-8")
#: The plugin's quick profile, derandomized: the same cases every run.
DERANDOMIZED = "eowc-quick-derandomized"
settings.register_profile(DERANDOMIZED, settings.get_profile("eowc-quick"), derandomize=True)
#: Without shrinking: Hypothesis shrinks a forgetful engine's failure for minutes (its limit is
#: 300 s), and the shrinking is checked on its own (tests/test_pytest_plugin.py).
UNSHRUNK = "eowc-quick-derandomized-unshrunk"
settings.register_profile(UNSHRUNK, settings.get_profile(DERANDOMIZED),
                          phases=[Phase.explicit, Phase.generate])


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def verify(tmp_path: Path, *args: str) -> tuple[int, str, str, dict]:
    report = tmp_path / "report.json"
    code, out, err = invoke("verify", str(QUERY), "--report", str(report),
                            "--out", str(tmp_path / "cx"), *args)
    return code, out, err, json.loads(report.read_text()) if report.exists() else {}


def tallies(report: dict) -> dict[str, tuple[int, int]]:
    return {r["property"]: (r["tried"], r["failed"]) for r in report["results"]}


def case(events: list[list[tuple[int, float, str]]], convention: Convention = Convention.SPARK,
         restarts: tuple[int, ...] = (), crash: Crash | None = None) -> Case:
    log = ArrivalLog(tuple(tuple(Event("bids", (a, p, parse_timestamp(t))) for a, p, t in epoch)
                           for epoch in events))
    return Case(SCRIPT, convention, log, restarts, crash)


# ------------------------------------------------------------------------------ the tiny engine

def test_the_cases_emit_rows_so_a_pass_means_something() -> None:
    """The generated cases of the tiny engine's query emit rows on today's generator, under
    every convention, and the tiny engine emits exactly them, epoch by epoch."""
    target, engine = load_target(str(QUERY)), command_executor(TINY)
    for convention in Convention:
        emitted = 0
        for seed in range(4):
            plain = generate_case(target, convention, seed, LogShape(late=2), crash=False)[0]
            reference = list(run_eowc(plain.query, plain.log, convention))
            assert Counter(engine.emissions(plain.uninterrupted())) == Counter(reference)
            emitted += len(reference)
        assert emitted >= 20


@pytest.mark.parametrize("disruption", ["restart", "crash"])
def test_the_tiny_engine_passes_with_real_restarts_and_crashes(tmp_path: Path,
                                                                disruption: str) -> None:
    code, _, err, report = verify(tmp_path, "--executor-cmd", TINY, "--cases", "12",
                                  *(["--crash"] if disruption == "crash" else []))
    assert code == 0, err
    assert "every property held (12 cases;" in err
    assert tallies(report)["consistent after recovery"] == (12, 0)
    assert tallies(report)["exact and timely"] == (12, 0)
    # every case's challenger is disrupted once; blaming and shrinking add none (nothing failed)
    assert report["exercised"]["restarts" if disruption == "restart" else "crashes"] == 12
    assert report["conventions"] == ["risingwave", "spark", "flink"]


def test_the_buggy_engine_fails_with_a_shrunk_transcript_that_replays(tmp_path: Path) -> None:
    code, _, err, report = verify(tmp_path, "--executor-cmd", BUGGY, "--cases", "30")
    assert code == 1, err
    assert tallies(report)["exact and timely"][1] > 0
    failed = next(r for r in report["results"] if r["property"] == "exact and timely")
    path = failed["counterexamples"][0]
    transcript = load_transcript(path)
    assert transcript.case.convention is not Convention.FLINK  # the bug is Flink's rule
    assert len(transcript.case.log.events) <= 4
    assert "--executor-cmd" in transcript.description
    again = invoke("replay", path, "--executor-cmd", BUGGY)
    assert again[0] == 1 and "exact and timely" in again[1]
    assert invoke("replay", path, "--executor-cmd", TINY)[0] == 0
    # The in-process executors: the pin is the reference's; a transcript whose watermark falls
    # between two milliseconds (risingwave's microsecond nudges) they refuse, never differ from.
    code, _, err = invoke("replay", path)
    assert code == 0 or (code == 2 and "is not a whole millisecond" in err), err
    # Under flink the boundary it uses is the right one
    assert verify(tmp_path, "--executor-cmd", BUGGY, "--cases", "10", "--convention",
                  "flink")[0] == 0


def test_the_shipped_boundary_transcript_tells_them_apart() -> None:
    shipped = str(ROOT / "verify" / "transcripts" / "tiny-engine-spark.yaml")
    assert invoke("replay", shipped, "--executor-cmd", TINY)[0] == 0
    code, out, _ = invoke("replay", shipped, "--executor-cmd", BUGGY)
    assert code == 1 and "extra (emitted, not pinned)" in out


def test_a_crash_is_a_sigkill_and_the_rows_of_the_killed_epoch_are_discarded(tmp_path: Path
                                                                              ) -> None:
    """An engine that emits a row for each event as soon as it reads it, before the barrier:
    killed in epoch 1, what it wrote for epoch 1 is discarded and the epoch is sent again."""
    program = tmp_path / "eager.py"
    program.write_text(textwrap.dedent("""
        import json, sys
        json.loads(sys.stdin.readline())
        for line in sys.stdin:
            m = json.loads(line)
            if "table" in m:
                r = m["row"]
                out = {"auction": r["auction"], "window_start": r["ts"], "window_end": r["ts"],
                       "n": 1, "total": r["price"]}
                print(json.dumps({"row": out}), flush=True)
            else:
                print(line, end="", flush=True)
    """))
    engine = command_executor(f"{sys.executable} {program}")
    events = [[(1, 1.0, "2024-01-01 00:00:01")],
              [(2, 2.0, "2024-01-01 00:00:02"), (3, 3.0, "2024-01-01 00:00:03")],
              [(4, 4.0, "2024-01-01 00:00:04")]]
    plain = engine.emissions(case(events))
    assert [(e.epoch, e.row[0]) for e in plain] == [(0, 1), (1, 2), (1, 3), (2, 4)]
    for point in ("before_batch", "mid_batch", "after_sink"):
        crashed = engine.emissions(case(events, crash=Crash(1, point)))
        assert crashed == plain, point
    assert isinstance(engine, ExternalExecutor) and engine.exercised["crash"] == 3


def test_the_sigkill_lands_while_the_epoch_is_processed(tmp_path: Path) -> None:
    """A realistic mutant of the tiny engine, which saves its state after every event instead of
    at the barrier: restarts (after an acknowledgment) cannot tell, a SIGKILL in the middle of an
    epoch (once the program has read what was sent) counts its events twice."""
    source = (ROOT / "docs" / "examples" / "tiny_engine.py").read_text(encoding="utf-8")
    counted = '            window[3] = (window[3] or 0) + row["price"]\n'
    assert counted in source
    saved = ('        with open(path + ".tmp", "w") as file:  # at once, not at the barrier\n'
             '            json.dump(state, file)\n'
             '        os.replace(path + ".tmp", path)\n')
    mutant = tmp_path / "per_event.py"
    mutant.write_text(source.replace(counted, counted + saved), encoding="utf-8")
    command = f"{sys.executable} {mutant}"
    assert verify(tmp_path, "--executor-cmd", command, "--cases", "6")[0] == 0
    code, _, err, report = verify(tmp_path, "--executor-cmd", command, "--cases", "12", "--crash")
    assert code == 1, err
    assert tallies(report)["consistent after recovery"][1] > 0
    assert tallies(report)["exact and timely"] == (12, 0)


# ------------------------------------------------------------------------------ Python engines

def test_a_python_engine_passes_verify_replay_and_the_plugin(tmp_path: Path) -> None:
    spec = "python:tests.external_engines:ReplayingEngine"
    code, _, err, report = verify(tmp_path, "--executor", spec, "--cases", "9", "--crash")
    assert code == 0, err
    assert report["exercised"]["crashes"] == 9
    shipped = str(ROOT / "verify" / "transcripts")
    code, out, _ = invoke("replay", shipped, "--executor", spec)
    assert code == 0, out
    verify_query(QUERY, executor=spec, out=tmp_path)
    verify_query(QUERY, executor_cmd=TINY, out=tmp_path)
    with pytest.raises(AssertionError, match="consistent after recovery"):
        verify_query(QUERY, executor="python:tests.external_engines:ForgetfulEngine", out=tmp_path,
                     profile=UNSHRUNK)


@pytest.mark.parametrize(("engine", "flag", "caught"), [
    ("ForgetfulEngine", None, "consistent after recovery"),   # restarts from nothing
    ("CommitsAtClose", "--crash", "consistent after recovery"),  # a crash loses its state
])
def test_engines_that_keep_state_wrongly_are_caught(tmp_path: Path, engine: str, flag: str | None,
                                                    caught: str) -> None:
    code, _, err, report = verify(tmp_path, "--executor", f"python:tests.external_engines:{engine}",
                                  "--cases", "6", *([flag] if flag else []))
    assert code == 1, err
    assert tallies(report)[caught][1] > 0
    assert tallies(report)["exact and timely"] == (6, 0)  # the uninterrupted runs are right


def test_commits_at_close_recovers_from_a_restart(tmp_path: Path) -> None:
    code, _, err, _ = verify(tmp_path, "--executor", "python:tests.external_engines:CommitsAtClose",
                             "--cases", "6")
    assert code == 0, err


def test_no_disruptions_says_recovery_was_not_checked(tmp_path: Path) -> None:
    code, out, err, report = verify(tmp_path, "--executor",
                                    "python:tests.external_engines:ForgetfulEngine",
                                    "--no-disruptions", "--cases", "6")
    assert code == 4, err
    assert "consistent after recovery" in report["not_checked"]
    assert "consistent after recovery" not in tallies(report)
    assert "not checked" in out and "NOT CHECKED: consistent after recovery" in err
    assert "every property held (6 cases; the engine restarted 0 times and crashed 0 times), but the "\
        "verification is not complete" in err
    assert report["exercised"] == {"restarts": 0, "crashes": 0}
    assert invoke("verify", str(QUERY), "--no-disruptions", "--crash")[0] == 2


# ------------------------------------------------------------------------------ bad engines

@pytest.mark.parametrize(("executor", "message"), [
    ("python:no_such_module:Engine", "cannot import no_such_module: ModuleNotFoundError"),
    ("python:tests.external_engines:Missing", "has no attribute 'Missing' (it has:"),
    ("python:tests.external_engines:NOT_AN_ENGINE", "is not an engine: expected a class"),
    ("python:nothing", "expected python:MODULE:ATTR"),
    ("python:tests/no_such_file.py:Engine", "cannot import tests/no_such_file.py"),
])
def test_a_python_engine_that_cannot_be_loaded_is_a_usage_error(executor: str, message: str
                                                                 ) -> None:
    for command in ("verify", "replay"):
        target = str(QUERY) if command == "verify" else str(ROOT / "verify" / "transcripts")
        code, _, err = invoke(command, target, "--executor", executor)
        assert code == 2 and message in err and "Traceback" not in err, err
        assert f"cannot load the executor {executor}" in err


def test_an_unknown_executor_name_says_what_is_accepted() -> None:
    code, _, err = invoke("verify", str(QUERY), "--executor", "flinky")
    assert code == 2 and "python:MODULE:ATTR" in err and "--executor-cmd" in err
    code, _, err = invoke("verify", str(QUERY), "--executor", "inprocess", "--executor-cmd", TINY)
    assert code == 2 and "give one" in err


def program(tmp_path: Path, on_barrier: str) -> str:
    """A program that reads the header and the events, and at each barrier (``m``) runs
    ``on_barrier``, then acknowledges it."""
    path = tmp_path / "engine.py"
    path.write_text("import json, sys, time\njson.loads(sys.stdin.readline())\n"
                    "for line in sys.stdin:\n    m = json.loads(line)\n"
                    "    if 'barrier' in m:\n"
                    + textwrap.indent(textwrap.dedent(on_barrier), "        ")
                    + "        print(line, end='', flush=True)\n")
    return f"{sys.executable} {path}"


ROW = ('{"auction": 1, "window_start": "2023-11-14 22:13:20", "window_end": '
       '"2023-11-14 22:13:25", "n": 1, "total": 1.0')


@pytest.mark.parametrize(("on_barrier", "message"), [
    ('print("hello", flush=True)\n', "a line that is not JSON (Expecting value at column 1): hello"),
    ('print(json.dumps({"row": ' + ROW + ', "colour": 1}}), flush=True)\n',
     "unknown column(s) colour (the query's output columns: auction, window_start, window_end, "
     "n, total)"),
    ('print(json.dumps({"row": ' + ROW.replace("22:13:20", "noon") + '}}), flush=True)\n',
     "column window_start: expected a timestamp YYYY-MM-DD HH:MM:SS[.ffffff], got '2023-11-14 noon'"),
    ('print(json.dumps({"barrier": True, "epoch": m["epoch"] + 1}), flush=True)\n',
     "acknowledged epoch 1 where eowc waits for epoch 0"),
    ('print(json.dumps({"emit": 1}), flush=True)\n', 'expected {"row": {...}} (a row it emits)'),
    ('sys.stderr.write("boom: no state\\n")\nsys.exit(3)\n',
     "exited with status 3 before acknowledging epoch 0 (the rows it wrote for it are "
     "discarded); its stderr ends:\n  | boom: no state"),
    ('time.sleep(30)\n', "did not acknowledge epoch 0 within 1 s (killed)"),
])
def test_a_program_that_breaks_the_protocol_is_named_with_its_line(tmp_path: Path, on_barrier: str,
                                                                   message: str) -> None:
    command = program(tmp_path, on_barrier)
    code, _, err, _ = verify(tmp_path, "--executor-cmd", command, "--cases", "1",
                             "--epoch-timeout", "1s")
    assert code == 2, err
    assert message in err and "Traceback" not in err, err
    assert "tiny_engine, case 1 (seed 0)" in err


def test_a_command_that_does_not_exist_is_named_with_the_shell_s_words(tmp_path: Path) -> None:
    code, _, err, _ = verify(tmp_path, "--executor-cmd", "no-such-engine --fast", "--cases", "1")
    assert code == 2 and "'no-such-engine --fast' exited with status 127" in err, err
    assert "no-such-engine: not found" in err and "Traceback" not in err


def test_a_program_that_does_not_read_its_input_is_killed_after_the_timeout(tmp_path: Path
                                                                          ) -> None:
    asleep = tmp_path / "asleep.py"
    asleep.write_text("import time\ntime.sleep(30)\n")
    many = [[(1, 1.0, f"2024-01-01 00:{i // 60:02d}:{i % 60:02d}") for i in range(3000)]]
    with pytest.raises(ExecutorFailed, match=re.escape("did not read epoch 0 within 1 s (killed)")):
        command_executor(f"{sys.executable} {asleep}", 1.0).emissions(case(many))


def test_a_program_that_exits_non_zero_or_writes_after_its_input_ended(tmp_path: Path) -> None:
    command = program(tmp_path, "")
    plain = case([[(1, 1.0, "2024-01-01 00:00:01")]], restarts=(0,))
    assert command_executor(command).emissions(plain) == []
    with pytest.raises(ExecutorFailed, match=re.escape(
            'wrote after its last acknowledgment, once its input ended: {"row": 1}')):
        command_executor(command + """; echo '{"row": 1}'""").emissions(plain)
    with pytest.raises(ExecutorFailed, match=re.escape(
            "exited with status 4 at the end of its input (expected 0)")):
        command_executor(command + "; exit 4").emissions(plain)


def test_a_python_engine_that_raises_is_named_with_its_traceback() -> None:
    plain = case([[(1, 1.0, "2024-01-01 00:00:01")]])
    with pytest.raises(ExecutorFailed, match=r"python:tests.external_engines:Raising raised in "
                                             r"epoch 0: (.|\n)*KeyError: 'ts'"):
        executor_named("python:tests.external_engines:Raising").emissions(plain)
    with pytest.raises(ExecutorFailed, match="which has no method epoch"):
        executor_named("python:tests.external_engines:opens_nothing").emissions(plain)


def test_an_engine_that_refuses_a_query_has_it_reported_not_run_and_the_others_verified(
        tmp_path: Path) -> None:
    """An engine without an operator answers the header with {"refused": why} and ends; verify
    names the query as not run, with the engine's words, verifies the rest, and exits 4
    (incomplete), not 2."""
    refusing = tmp_path / "refusing.py"
    refusing.write_text(textwrap.dedent(f"""\
        import json, subprocess, sys
        header = sys.stdin.readline()
        if "HOP(" in json.loads(header)["script"]:
            print(json.dumps({{"refused": "this engine has no HOP windows"}}), flush=True)
            sys.exit(0)
        tiny = subprocess.Popen({TINY.split()!r}, stdin=subprocess.PIPE, text=True)
        tiny.stdin.write(header)
        for line in sys.stdin:
            tiny.stdin.write(line)
            tiny.stdin.flush()
        tiny.stdin.close()
        sys.exit(tiny.wait())
        """))
    hop = tmp_path / "hop.sql"
    hop.write_text(SCRIPT.replace("TUMBLE(bids, ts, INTERVAL '5' SECOND)",
                                  "HOP(bids, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)"))
    assert "HOP(" in hop.read_text()
    report = tmp_path / "report.json"
    code, _, err = invoke("verify", str(hop), str(QUERY), "--executor-cmd",
                          f"{sys.executable} {refusing}", "--cases", "2", "--report", str(report),
                          "--out", str(tmp_path / "cx"))
    assert code == 4, err
    assert "NOT RUN: hop: --executor-cmd" in err and "refused it: this engine has no HOP windows" in err
    assert "Traceback" not in err
    results = json.loads(report.read_text())["results"]
    assert {r["query"] for r in results} == {"tiny_engine"}  # the other query, in full
    assert all((r["tried"], r["failed"]) == (2, 0) for r in results), results
