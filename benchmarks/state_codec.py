"""The cost of typed state (eowc.executors.spark.typed_state) against pickle, its peer, measured in
the same run on the same value: a group aggregate's state, a dict of N groups (auction, window
start, window end) -> the aggregate states of count, sum, avg, min, max, stddev (Welford) and a
decimal sum. Prints microseconds per encode and decode, the ratios, and the sizes.

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    value = group_states(args.groups)
    tape = tape_row(value)  # what Spark keeps: kinds and three JSON arrays of leaves
    blob = pickle.dumps(value, protocol=5)
    assert tape_value(tape) == value == pickle.loads(blob)
    figures = {
        "encode": (per_call_us(lambda: tape_row(value), args.rounds),
                   per_call_us(lambda: pickle.dumps(value, protocol=5), args.rounds)),
        "decode": (per_call_us(lambda: tape_value(tape), args.rounds),
                   per_call_us(lambda: pickle.loads(blob), args.rounds)),
    }
    key = ((1_700_000_000_000_000, 1_700_000_010_000_000),)
    text = value_text(key)
    key_blob = pickle.dumps(key, protocol=5)
    figures["key encode"] = (per_call_us(lambda: value_text(key), 20 * args.rounds),
                             per_call_us(lambda: pickle.dumps(key, protocol=5), 20 * args.rounds))
    figures["key decode"] = (per_call_us(lambda: value_of_text(text), 20 * args.rounds),
                             per_call_us(lambda: pickle.loads(key_blob), 20 * args.rounds))
    print(f"state: a dict of {args.groups} groups -> 7 aggregate states "
          f"({len(tape[0])} tape nodes)")
    print(f"{'':12} {'typed us':>10} {'pickle us':>10} {'ratio':>7}")
    for name, (typed, peer) in figures.items():
        print(f"{name:12} {typed:10.1f} {peer:10.1f} {typed / peer:6.1f}x")
    tape_bytes = sum(len(column.encode()) for column in tape)
    print(f"size: tape {tape_bytes} bytes (kinds and the leaves' JSON texts), "
          f"pickle {len(blob)} bytes")


if __name__ == "__main__":
    main()
