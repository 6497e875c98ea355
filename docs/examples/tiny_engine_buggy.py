"""tiny_engine.py with a boundary bug (the only difference): a window closes at W >= end - 1 ms,
Flink's rule, under every convention. Under risingwave and spark a window is then emitted an epoch
early (and a row of it refused as late) when the watermark stops a millisecond before its end.
eowc verify docs/examples/tiny_engine.sql --executor-cmd 'python3 docs/examples/tiny_engine_buggy.py'
finds it and shrinks it."""
import json
import os
import sys
from datetime import datetime, timedelta

EPOCH, US = datetime(1970, 1, 1), timedelta(microseconds=1)
SIZE, DELAY, MS = 5_000_000, 2_000_000, 1_000  # microseconds: window, watermark delay, 1 ms


def text(micros):  # a timestamp as eowc run prints it
    moment = EPOCH + micros * US
    return moment.strftime("%Y-%m-%d %H:%M:%S") + (f".{moment.microsecond:06d}" if moment.microsecond else "")


def write(message):
    print(json.dumps(message), flush=True)


header = json.loads(sys.stdin.readline())
convention, path = header["convention"], os.path.join(header["state_dir"], "state.json")
state = {"watermark": -float("inf"), "max": None, "windows": {}}  # window: [auction, start, n, total]
if os.path.exists(path):
    with open(path) as file:
        state = json.load(file)


def closed(start, watermark):  # BUG: Flink's rule W >= end - 1 ms under every convention
    end = start + SIZE
    return watermark >= end - MS


def late(ts, watermark):  # judged on the watermark before the epoch
    return ts < watermark if convention == "risingwave" else closed(ts - ts % SIZE, watermark)


for line in sys.stdin:
    message = json.loads(line)
    if "table" in message:  # an event: late (RisingWave: the row; Spark, Flink: its window), or counted
        row = message["row"]
        ts = (datetime.fromisoformat(row["ts"]) - EPOCH) // US
        if late(ts, state["watermark"]):
            write({"late": message})
            continue
        state["max"] = ts if state["max"] is None else max(state["max"], ts)
        start = ts - ts % SIZE
        window = state["windows"].setdefault(f"{row['auction']} {start}", [row["auction"], start, 0, None])
        window[2] += 1
        if row.get("price") is not None:
            window[3] = (window[3] or 0) + row["price"]
        continue
    if state["max"] is not None:  # a barrier: the watermark moves (Spark's in whole milliseconds)
        top = state["max"] - state["max"] % MS if convention == "spark" else state["max"]
        state["watermark"] = max(state["watermark"], top - DELAY)
    for key in [k for k, w in state["windows"].items() if closed(w[1], state["watermark"])]:
        auction, start, n, total = state["windows"].pop(key)
        write({"row": {"auction": auction, "window_start": text(start), "window_end": text(start + SIZE),
                       "n": n, "total": total}})
    with open(path + ".tmp", "w") as file:
        json.dump(state, file)
    os.replace(path + ".tmp", path)  # committed: a restart resumes from here
    write(message)  # the acknowledgment {"barrier": true, "epoch": k}
