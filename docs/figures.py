"""Draw every picture of docs/ into docs/figures/*.png by running the reference interpreter.

Usage: ``python3 docs/figures.py`` (from anywhere). Nothing below is a hard-coded result: each
figure parses an example script of docs/examples/, loads its arrival log, and asks the
interpreter (:mod:`eowc.semantics.engines.interpreter`, :mod:`eowc.semantics.engines.dataflow`) for the
watermark after each epoch, the late rows, the rows that reach the stateful operator, and the
emissions.

How to read a figure (one panel per convention):

* x is the epoch. Epoch ``e`` spans ``[e - 0.5, e + 0.5)``; its rows are drawn inside it in
  arrival order; the barrier that ends it is the dotted line at ``e + 0.5``.
* The watermark is the step line: inside epoch ``e`` it is the watermark in force *before*
  ``e`` (the one a row of ``e`` is judged against); it steps at each barrier.
* y is event time (HH:MM:SS). Blue dots are rows of INPUT, red crosses are late rows.
* A window is a band from its first row's epoch to its emission. A star marks each emitted
  result row, at the barrier after which it is first emitted. Dashed bands are windows that
  are still open after the last epoch.
* With ``--close`` an extra column ``close`` follows the last epoch; its results are emitted
  when the watermark moves to +infinity.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402
from matplotlib.ticker import FuncFormatter, MultipleLocator  # noqa: E402

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))

from eowc.semantics.analysis.completion import watermark_columns  # noqa: E402
from eowc.semantics.engines.dataflow import compile_dataflow  # noqa: E402
from eowc.semantics.engines.inputs import input_epochs, source_watermarks  # noqa: E402
from eowc.semantics.engines.interpreter import LateRow, run_eowc, watermark_sequence  # noqa: E402
from eowc.semantics.engines.multi_input import sources_of  # noqa: E402
from eowc.semantics.frontend.sql import parse_script  # noqa: E402
from eowc.semantics.ir.arrival import ArrivalLog, Event, load_arrival_log  # noqa: E402
from eowc.semantics.ir.expr import Row  # noqa: E402
from eowc.semantics.ir.plan import Aggregate, Query, TopN, walk  # noqa: E402
from eowc.semantics.ir.values import MICROS_PER_SECOND, format_timestamp, to_external  # noqa: E402
from eowc.semantics.ir.windows import Window  # noqa: E402
from eowc.semantics.rules.triggers import CLOSED_WATERMARK, Convention, window_closes  # noqa: E402

ALL = (Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK)
WINDOW_COLOURS = ("tab:green", "tab:orange", "tab:purple", "tab:brown", "tab:olive", "tab:cyan",
                  "tab:pink")


@dataclass(frozen=True)
class Figure:
    """One picture: an example script and log, the conventions to draw side by side, and the
    output columns that place each emitted row (``time``: its watermark column; ``start``:
    ``window_start`` if the result is a window)."""

    name: str
    example: str
    conventions: tuple[Convention, ...]
    label: str
    time: str
    start: str | None = None
    close: bool = False
    events: str | None = None


FIGURES = (
    Figure("tumble", "tumble", (Convention.RISINGWAVE,), "item", "window_end", "window_start",
           events="bids"),
    Figure("hop", "hop", ALL, "item", "window_end", "window_start", events="bids"),
    Figure("cumulate", "cumulate", (Convention.RISINGWAVE,), "item", "window_end", "window_start",
           events="bids"),
    Figure("sort_agg", "sort_agg", (Convention.RISINGWAVE,), "item", "window_end", "window_start",
           events="bids"),
    Figure("sort", "sort", ALL, "sensor", "ts"),
    Figure("group_by_ts", "group_by_ts", ALL, "sensor", "ts", close=True),
    Figure("on_watermark", "on_watermark", ALL, "sensor", "ts"),
    Figure("window_end", "window_end", ALL, "sensor", "window_end", "window_start"),
    Figure("hop_late", "hop_late", ALL, "sensor", "window_end", "window_start"),
    Figure("over_window", "over_window", (Convention.RISINGWAVE, Convention.SPARK), "pk", "ts",
           close=True),
    Figure("window_top_n", "window_top_n", (Convention.RISINGWAVE,), "item", "window_end",
           "window_start", close=True, events="bids"),
    Figure("dedup", "dedup", (Convention.RISINGWAVE,), "item", "bidtime", close=True,
           events="bids"),
    Figure("session", "session", (Convention.RISINGWAVE,), "item", "window_end",
           "window_start", close=True, events="bids"),
    Figure("interval_join", "analysis/interval_join", (Convention.RISINGWAVE,), "page,ad",
           "click_ts", close=True, events="interval_join"),
    Figure("count_window", "count_window", (Convention.RISINGWAVE,), "item", "window_end",
           "window_start", close=True, events="bids"),
    Figure("pattern", "pattern", (Convention.RISINGWAVE, Convention.SPARK), "price", "end_ts",
           "start_ts", close=True, events="ticks"),
    Figure("seed004_job", "seed004_job_fixed", ALL, "item_id", "window_end", "window_start",
           events="seed004_orders"),
    Figure("cascade", "composed/cascade", (Convention.RISINGWAVE,), "item", "window_end",
           "window_start", close=True),
    Figure("top_n_over_aggregate", "composed/top_n_over_aggregate", (Convention.RISINGWAVE,), "item",
           "window_end", "window_start", close=True, events="composed/item_bids"),
    Figure("dedup_over_aggregate", "composed/dedup_over_aggregate", (Convention.RISINGWAVE,), "item",
           "window_end", "window_start", close=True, events="composed/item_bids"),
)


@dataclass
class Run:
    """What the interpreter says about one example under one convention."""

    epochs: list[list[tuple[int, Any, int]]]  # per epoch: (event time, label, line)
    watermarks: list[float]  # after each epoch
    late_lines: set[int]
    emissions: list[tuple[int, dict[str, Any], dict[str, Any]]]  # (epoch, internal, external)
    windows: dict[Window, int]  # every window that received a row -> first epoch it did
    closed_at_end: set[Window]


def run(figure: Figure, convention: Convention) -> tuple[Run, Any]:
    """Run the interpreter on the figure's example under ``convention``."""
    script = parse_script((DOCS / "examples" / f"{figure.example}.sql").read_text())
    events = DOCS / "examples" / f"{figure.events or figure.example}.jsonl"
    log = load_arrival_log(str(events), script.sources).log
    query = script.query
    sources = {s.name: s for s in sources_of(query.plan)}  # a join or a union reads several

    def point(event: Event) -> tuple[int, Any, int]:
        """A row as (event time, label, line): the first of ``figure.label``'s comma-separated
        columns that its source has."""
        source = sources[event.table]
        names = [c.name for c in source.columns]
        label = next(n for n in figure.label.split(",") if n in names)
        assert source.event_time_index is not None
        return event.row[source.event_time_index], event.row[names.index(label)], event.line
    epochs = [[point(e) for e in epoch if e.table in sources] for epoch in log.epochs]
    late: list[LateRow] = []
    schema = query.schema
    emissions = []
    for emission in run_eowc(query, log, convention, figure.close, late.append):
        internal = {c.name: v for c, v in zip(schema, emission.row, strict=True)}
        external = {c.name: to_external(v, c.type) for c, v in zip(schema, emission.row, strict=True)}
        emissions.append((emission.epoch, internal, external))
    windows: dict[Window, int] = {}
    aggregates = [n for n in walk(query.plan) if isinstance(n, Aggregate | TopN)]
    if len(aggregates) > 1:  # a composed plan: the dataflow interpreter's windows
        (source,) = sources.values()
        marks = source_watermarks(source, log, convention)
        if figure.start is not None:
            windows = emitted_windows(figure, emissions, epochs, {r.event.line for r in late})
    else:
        marks = watermark_sequence(query, log, convention)
    if len(aggregates) == 1 and figure.start is not None:
        columns = watermark_columns(aggregates[0].input)
        start, end = columns.window_start, columns.window_end
        admitted = operator_rows(query, log, convention)
        if start is None:  # sessions: a row's window is known only once its session is
            time_index = query.source.event_time_index
            first_epoch = {row[time_index]: epoch for epoch, rows in reversed(admitted)
                           for row in rows}
            for _epoch, internal, _external in emissions:
                window = Window(internal[figure.start], internal[figure.time])
                windows[window] = first_epoch[window.start]
        for epoch, rows in admitted if start is not None else ():
            for row in rows:
                windows.setdefault(Window(row[start], row[end]), epoch)
    final = CLOSED_WATERMARK if figure.close else (marks[-1] if marks else -math.inf)
    closed = {w for w in windows if window_closes(w, final, convention)}
    return Run(epochs, marks, {r.event.line for r in late}, emissions, windows, closed), script


def operator_rows(query: Query, log: ArrivalLog, convention: Convention) -> list[tuple[int, list[Row]]]:
    """Per epoch, the rows of INPUT that reach the stateful operator over the query's one
    source: through the stateless steps under it, a window TVF giving a row the windows that
    still accept it (the stage the dataflow's input loop applies)."""
    flow = compile_dataflow(query, convention, eowc=True)
    (source,) = flow.sources
    return [(step.epoch, step.rows[source.name])
            for step in input_epochs(flow.sources, log, convention, None, flow.checks, flow.stages)]


def emitted_windows(figure: Figure, emissions: list[tuple[int, dict[str, Any], dict[str, Any]]],
                    epochs: list[list[tuple[int, Any, int]]], late_lines: set[int]) -> dict[Window, int]:
    """The windows of a composed plan's result rows (the operators between source and result
    are not drawn), each from the first epoch that brought a row of INPUT inside it."""
    windows: dict[Window, int] = {}
    for _epoch, internal, _external in emissions:
        window = Window(internal[figure.start], internal[figure.time])
        windows[window] = min(e for e, rows in enumerate(epochs) for t, _label, line in rows
                              if window.start <= t < window.end and line not in late_lines)
    return windows


def clock(micros: float) -> str:
    """HH:MM:SS of a time, with .fff (or .ffffff) only when it is not on a whole second."""
    text = format_timestamp(int(round(micros)))[11:]
    return text[:12] if text.endswith("000") else text


def time_formatter() -> FuncFormatter:
    """Tick labels HH:MM:SS."""
    return FuncFormatter(lambda value, _position: clock(value))


def tick_step(span: float) -> int:
    """A round tick spacing (microseconds) giving at most about 12 ticks over ``span``."""
    for seconds in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600):
        if span / (seconds * MICROS_PER_SECOND) <= 12:
            return seconds * MICROS_PER_SECOND
    return 7200 * MICROS_PER_SECOND


def describe(external: dict[str, Any], figure: Figure) -> str:
    """An emitted row as ``name=value`` pairs, without the columns the picture already shows."""
    shown = {figure.start, figure.time} if figure.start else {figure.time}
    return ", ".join(f"{k}={v}" for k, v in external.items() if k not in shown)


def draw_panel(ax: Any, figure: Figure, convention: Convention, result: Run) -> tuple[float, float]:
    """Draw one convention's panel; return the event-time range it used."""
    n = len(result.epochs)
    right = n + (1.0 if figure.close else 0.0) - 0.5
    times = [t for epoch in result.epochs for t, _, _ in epoch]
    times += [t for w in result.windows for t in w]
    low, high = min(times), max(times)

    # epochs and barriers
    for e in range(n + (1 if figure.close else 0)):
        if e % 2 == 0:
            ax.axvspan(e - 0.5, e + 0.5, color="0.95", zorder=0)
    for e in range(n):
        ax.axvline(e + 0.5, color="0.6", linestyle=":", linewidth=0.8, zorder=1)

    # windows as bands, from the epoch of their first row to their emission
    emitted_window: dict[Window, int] = {}
    if figure.start is not None:
        for epoch, internal, _ in result.emissions:
            emitted_window[Window(internal[figure.start], internal[figure.time])] = epoch
    for i, (window, first) in enumerate(sorted(result.windows.items())):
        colour = WINDOW_COLOURS[i % len(WINDOW_COLOURS)]
        if window in emitted_window:
            x1, style, hatch = emitted_window[window] + 0.5, "-", None
        elif window in result.closed_at_end:  # closed, but no result row (e.g. HAVING)
            x1, style, hatch = right, "-", "xx"
        else:
            x1, style, hatch = right + 0.3, "--", "//"
        ax.add_patch(Rectangle((first - 0.45, window.start), x1 - first + 0.45,
                               window.end - window.start, facecolor=colour, alpha=0.18,
                               edgecolor=colour, linestyle=style, linewidth=1.2, hatch=hatch,
                               zorder=2))
        ax.text(first - 0.42, window.end, f"[{clock(window.start)}, {clock(window.end)})",
                fontsize=6.5, color=colour, va="top", ha="left", zorder=6)

    # the watermark in force before each epoch, stepping at barriers
    xs = [-0.5] + [e + 0.5 for e in range(n)]
    before = [-math.inf] + result.watermarks
    ys = [w if math.isfinite(w) else math.nan for w in before]
    end = n + 0.5 if figure.close else right + 0.5
    ax.step(xs + [end], ys + [ys[-1]], where="post", color="black", linewidth=1.6,
            zorder=4)
    for e, w in enumerate(result.watermarks):  # the value of each new watermark
        if math.isfinite(w) and (e == 0 or w != result.watermarks[e - 1]):
            ax.annotate(f"W={clock(w)}", (e + 0.5, w), xytext=(3, 2), textcoords="offset points",
                        fontsize=6.5, fontweight="bold", zorder=8)
    if figure.close:
        ax.annotate("", xy=(n + 0.5, high + (high - low) * 0.12), xytext=(n + 0.5, ys[-1]),
                    arrowprops={"arrowstyle": "->", "color": "black", "linewidth": 1.4}, zorder=4)
        ax.text(n + 0.45, high + (high - low) * 0.1, "W=+inf", fontsize=7, ha="right")

    # rows, in arrival order inside their epoch
    for e, events in enumerate(result.epochs):
        for k, (t, label, line) in enumerate(events):
            x = e - 0.3 + 0.6 * (k + 0.5) / len(events)
            late = line in result.late_lines
            ax.plot(x, t, marker="X" if late else "o", color="tab:red" if late else "tab:blue",
                    markersize=8 if late else 6, linestyle="none", zorder=5)
            ax.annotate(str(label), (x, t), xytext=(6, 3), textcoords="offset points",
                        fontsize=7, color="tab:red" if late else "tab:blue", zorder=8)

    # emissions: a star at the barrier after which each result row is first emitted
    stacked: dict[tuple[float, Any], int] = {}
    for epoch, internal, external in result.emissions:
        x, t = epoch + 0.5, internal[figure.time]
        depth = stacked[x, t] = stacked.get((x, t), -1) + 1  # rows emitted at the same point
        if figure.start is None:  # a point result: link it to the first row of its time
            firsts = [e - 0.3 + 0.6 * (k + 0.5) / len(events)
                      for e, events in enumerate(result.epochs)
                      for k, (rt, _, line) in enumerate(events)
                      if rt == t and line not in result.late_lines]
            if firsts:
                ax.plot([min(firsts), x], [t, t], color="goldenrod", linewidth=1, linestyle="-",
                        zorder=3)
        ax.plot(x, t, marker="*", color="goldenrod", markeredgecolor="black", markersize=13,
                linestyle="none", zorder=7)
        ax.annotate(describe(external, figure), (x, t), xytext=(6, -9 - 9 * depth),
                    textcoords="offset points",
                    fontsize=6.5, zorder=7,
                    bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "alpha": 0.8,
                          "edgecolor": "none"})

    labels = [str(e) for e in range(n)] + (["close"] if figure.close else [])
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlim(-0.5, right + 1.6)
    ax.set_xlabel("epoch (dotted line: barrier ending it)")
    ax.set_title(f"--convention {convention.value}", fontsize=10)
    ax.grid(axis="y", color="0.85", linewidth=0.6, zorder=0)
    return low, high


def legend_handles(windows: bool) -> list[Any]:
    """The legend; the window entries only for figures of window results."""
    handles: list[Any] = [
        Line2D([], [], marker="o", color="tab:blue", linestyle="none", label="row of INPUT"),
        Line2D([], [], marker="X", color="tab:red", linestyle="none", markersize=8,
               label="late row (not in INPUT)"),
        Line2D([], [], color="black", linewidth=1.6, label="watermark W in force"),
        Line2D([], [], marker="*", color="goldenrod", markeredgecolor="black", markersize=13,
               linestyle="none", label="result row emitted"),
    ]
    if not windows:
        return handles
    return handles + [
        Patch(facecolor="tab:green", alpha=0.25, edgecolor="tab:green", label="window (emitted)"),
        Patch(facecolor="tab:green", alpha=0.25, edgecolor="tab:green", linestyle="--",
              hatch="//", label="window still open"),
    ]


def draw(figure: Figure) -> Path:
    """Draw ``figure`` into docs/figures/<name>.png and return the path."""
    panels = len(figure.conventions)
    fig, axes = plt.subplots(1, panels, figsize=(6.2 * panels + 1.4, 5.8), sharey=True,
                             squeeze=False)
    low, high = math.inf, -math.inf
    script = None
    for ax, convention in zip(axes[0], figure.conventions, strict=True):
        result, script = run(figure, convention)
        lo, hi = draw_panel(ax, figure, convention, result)
        low, high = min(low, lo), max(high, hi)
    assert script is not None
    margin = max((high - low) * 0.08, MICROS_PER_SECOND)
    top = high + margin * (2.5 if figure.close else 1)
    axes[0][0].set_ylim(low - margin, top)
    axes[0][0].yaxis.set_major_locator(MultipleLocator(tick_step(top - low + margin)))
    axes[0][0].yaxis.set_major_formatter(time_formatter())
    day = format_timestamp(int(low))[:10]
    axes[0][0].set_ylabel(f"event time (HH:MM:SS on {day})")
    close = " --close" if figure.close else ""
    events = figure.events or figure.example
    fig.suptitle(f"eowc run docs/examples/{figure.example}.sql docs/examples/{events}.jsonl"
                 f"{close}", fontsize=11)
    wide = panels > 1
    fig.legend(handles=legend_handles(figure.start is not None), loc="lower center",
               ncol=6 if wide else 3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06 if wide else 0.1, 1, 0.97))
    out = DOCS / "figures" / f"{figure.name}.png"
    out.parent.mkdir(exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


#: The watermark-derivation graphs of docs/watermarks.md: (query, picture), drawn by the
#: same code as ``eowc explain QUERY --format png --out PICTURE``.
GRAPHS = (("examples/hop.sql", "figures/watermarks_hop.png"),
          ("examples/lost_watermark.sql", "figures/watermarks_lost.png"),
          ("examples/analysis/interval_join.sql", "figures/watermarks_interval_join.png"))


def draw_graphs() -> list[Path]:
    from eowc.semantics.analysis.derivation_graph import analyze
    from eowc.verify.cli.explain_command import draw as draw_graph

    drawn = []
    for query, picture in GRAPHS:
        draw_graph(analyze(parse_script((DOCS / query).read_text(encoding="utf-8")).query),
                   str(DOCS / picture))
        drawn.append(DOCS / picture)
    return drawn


def main() -> None:
    for figure in FIGURES:
        print(draw(figure).relative_to(DOCS.parent))
    for picture in draw_graphs():
        print(picture.relative_to(DOCS.parent))


if __name__ == "__main__":
    main()
