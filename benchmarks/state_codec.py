"""The cost of typed state (eowc.executors.spark.typed_state) against pickle, its peer, measured in
the same run on the same values:

* ``groups (walked)``: a group aggregate's state, a dict of N groups (auction, window start,
  window end) -> the aggregate states of count, sum, avg, min, max, stddev (Welford) and a
  decimal sum (a decimal and tuples among the states: the tape walks it node by node);
* ``groups (table)``: the same groups -> count and sum, the benchmark query's state (keys and
  values of one shape each: kept as a table, column by column, kind ``M``);
* ``sort run``: a sort buffer's run of N rows, ``((event time, n), (auction, price, ts))``
  (a table, kind ``R``);
* ``dedup partitions``: a deduplication's shard, N partitions (auction,) -> None once sealed
  (every 50th still open, its ``TopRows``): keys of one shape, values not (kind ``K``: the keys
  a table, the values walked);
* ``open sessions``: a session window's partition, its open sessions of 1 to 5 rows
  ``(auction, price, ts)``, N rows in all (a list of lists of one shape of rows: kind ``J``,
  the lengths, then the rows as one table).

Prints microseconds per encode and decode, the ratios to pickle, and the sizes; and a grouping
key's.

    python benchmarks/state_codec.py [--groups 1000] [--rounds 200]
"""

from __future__ import annotations

import argparse
import pickle
import random
import timeit
from decimal import Decimal
from typing import Any

from eowc.executors.spark.typed_state import tape_row, tape_value, value_of_text, value_text
from eowc.executors.top_n import TopRows


def group_states(groups: int, seed: int = 0) -> dict[tuple, list[Any]]:
    """A realistic EowcGroupAgg shard: ``groups`` groups of one window, each with its
    aggregates' fold states."""
    rng = random.Random(seed)
    start, end = 1_700_000_000_000_000, 1_700_000_010_000_000
    return {(auction, start, end): [rng.randint(1, 500), rng.randint(1, 10**6),
                                    (float(rng.randint(1, 10**6)), rng.randint(1, 500)),
                                    rng.random() * 100, rng.random() * 100,
                                    (rng.randint(1, 500), rng.random(), rng.random() * 10),
                                    Decimal(rng.randint(1, 10**8)) / 100]
            for auction in range(groups)}


def per_call_us(function: Any, rounds: int) -> float:
    return min(timeit.repeat(function, number=rounds, repeat=5)) / rounds * 1e6


def counted_groups(groups: int, seed: int = 0) -> dict[tuple, list[int]]:
    """The groups of :func:`group_states` with count and sum only."""
    rng = random.Random(seed)
    return {key: [rng.randint(1, 500), rng.randint(1, 10**6)] for key in group_states(groups)}


def sort_run(rows: int, seed: int = 0) -> list[tuple[tuple[int, int], tuple[int, int, int]]]:
    """A sort buffer's run: ``rows`` bids in (event time, insertion) order."""
    rng = random.Random(seed)
    start = 1_700_000_000_000_000
    return [((start + 2_000 * n, n), (rng.randint(1, 100), rng.randint(1, 10**6), start + 2_000 * n))
            for n in range(rows)]


def dedup_partitions(partitions: int) -> dict[tuple[int], TopRows | None]:
    """A deduplication's shard (EowcTopN): each auction's partition, sealed (None) once its
    first bid was emitted; every 50th still waits for the watermark with its first bid."""
    start = 1_700_000_000_000_000
    return {(auction,): None if auction % 50 else TopRows(
                rows=[(start + auction, auction, 7)], keys=[((start + auction,), auction)], ranks=[1])
            for auction in range(partitions)}


def open_sessions(rows: int, seed: int = 0) -> dict[tuple[int], list[list[tuple[int, int, int]]]]:
    """A session window's shard at 100 keys (EowcSession): one partition, its open sessions
    of 1 to 5 bids each, ``rows`` bids in all, in time order."""
    rng = random.Random(seed)
    start, sessions = 1_700_000_000_000_000, []
    while rows > 0:
        size = min(rows, rng.randint(1, 5))
        sessions.append([(17, rng.randint(1, 10**6), start + 2_000 * n) for n in range(size)])
        start, rows = start + 400_000, rows - size
    return {(17,): sessions}


def codec_figures(value: Any, rounds: int) -> dict[str, tuple[float, float]]:
    """Microseconds to encode and to decode ``value``: the tape's, and pickle's."""
    tape = tape_row(value)  # what Spark keeps: kinds and three JSON arrays of leaves
    blob = pickle.dumps(value, protocol=5)
    assert tape_value(tape) == value == pickle.loads(blob)
    return {
        "encode": (per_call_us(lambda: tape_row(value), rounds),
                   per_call_us(lambda: pickle.dumps(value, protocol=5), rounds)),
        "decode": (per_call_us(lambda: tape_value(tape), rounds),
                   per_call_us(lambda: pickle.loads(blob), rounds)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=1000, help="groups, and rows of the run")
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    values = {"groups (walked)": group_states(args.groups),
              "groups (table)": counted_groups(args.groups), "sort run": sort_run(args.groups),
              "dedup partitions": dedup_partitions(args.groups),
              "open sessions": open_sessions(args.groups)}
    print(f"{args.groups} groups or rows; microseconds per call, and per group or row")
    print(f"{'':28} {'typed us':>10} {'pickle us':>10} {'ratio':>7} {'typed us/row':>13} "
          f"{'kinds':>6} {'tape B':>8} {'pickle B':>9}")
    for name, value in values.items():
        tape = tape_row(value)
        tape_bytes = sum(len(column.encode()) for column in tape)
        blob_bytes = len(pickle.dumps(value, protocol=5))
        for part, (typed, peer) in codec_figures(value, args.rounds).items():
            print(f"{name + ': ' + part:28} {typed:10.1f} {peer:10.1f} {typed / peer:6.1f}x "
                  f"{typed / args.groups:13.2f} {len(tape[0]):6} {tape_bytes:8} {blob_bytes:9}")
    key = ((1_700_000_000_000_000, 1_700_000_010_000_000),)
    text = value_text(key)
    key_blob = pickle.dumps(key, protocol=5)
    key_figures = {
        "key encode": (per_call_us(lambda: value_text(key), 20 * args.rounds),
                       per_call_us(lambda: pickle.dumps(key, protocol=5), 20 * args.rounds)),
        "key decode": (per_call_us(lambda: value_of_text(text), 20 * args.rounds),
                       per_call_us(lambda: pickle.loads(key_blob), 20 * args.rounds))}
    for name, (typed, peer) in key_figures.items():
        print(f"{name:28} {typed:10.1f} {peer:10.1f} {typed / peer:6.1f}x")


if __name__ == "__main__":
    main()
