"""``eowc explain QUERY.sql``: the plan as a tree with, per operator, the columns that carry a
watermark (and the map from the source watermark ``W``), the trigger condition in words and
the state bound; or the watermark-derivation graph as JSON, Graphviz dot, SVG or PNG.

Exit codes: 0 the query is valid under EMIT ON WINDOW CLOSE; 1 it is not (the tree shows
where the watermark is missing, the message what to change); 2 bad usage or input.
"""

from __future__ import annotations

import io
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import click
import networkx as nx
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from eowc.semantics.analysis.derivation_graph import Analysis, analyze, groups, operators
from eowc.semantics.errors import EowcError
from eowc.semantics.frontend.dialects import detect_dialect
from eowc.semantics.frontend.sql import parse_script
from eowc.semantics.rules.emit_modes import operator_mode
from eowc.semantics.rules.triggers import Convention
from eowc.verify.cli.output_paths import OutputFile
from eowc.verify.cli.script_options import (
    CONVENTION_DEFAULT_HELP,
    default_convention,
    dialect_option,
    view_option,
)

#: The colour of watermark-carrying columns in pictures.
CARRIES = "#f4a340"
PLAIN = "#dddddd"
#: The colour of columns that lost a watermark (computed by a map not proven non-decreasing).
LOST = "#e06666"


def operator_modes(analysis: Analysis, flink_rules: bool) -> dict[str, str]:
    """Each stateful operator's emit mode and why, by operator id (:func:`operator_mode`)."""
    query = analysis.query
    return {node_id: mode for node_id, node, _ in operators(query.plan)
            if (mode := operator_mode(node, query.emit_on_window_close, flink_rules))}


def text_tree(analysis: Analysis, modes: dict[str, str] | None = None) -> Tree:
    """The plan root first, one branch per operator, its input below it; ``modes`` the
    operators' emit modes (:func:`operator_modes`)."""
    modes = modes or {}
    verdict = ("[green]valid under EMIT ON WINDOW CLOSE[/green]" if analysis.valid
               else "[red]not valid under EMIT ON WINDOW CLOSE[/red]")
    at_once = "; its rows are its interval join's, at once, with no EOWC sort over them" \
        if analysis.query.at_once else ""
    root = Tree(f"{verdict} ({analysis.convention.value} convention{at_once})")
    inputs = {node_id: children for node_id, _, children in operators(analysis.query.plan)}
    branches: dict[str, Tree] = {}
    for report in analysis.operators:  # root first: a parent is added before its inputs
        parent = next((branches[p] for p, children in inputs.items()
                       if report.id in children and p in branches), None)
        if parent is None:
            parent = branches.get("sort", root) if report.id == "op0" else root
        branch = parent.add(f"[bold]{report.operator}[/bold] {escape(report.detail)}")
        branches[report.id] = branch
        for d in report.carries:
            branch.add(f"watermark: [yellow]{escape(d.column)}[/yellow] = "
                       f"{escape(d.expression())} (from {escape(d.source)})")
        for lost in report.lost:
            branch.add(f"[red]no watermark[/red]: {escape(lost.column)} = "
                       f"{escape(lost.expression)}: {escape(lost.reason)}")
        if report.id in modes:
            branch.add(f"mode: {escape(modes[report.id])}")
        if report.trigger:
            branch.add(f"trigger: {escape(report.trigger)}")
        if report.state.kind != "none":
            colour = "green" if report.state.kind == "bounded" else "red"
            branch.add(f"state: [{colour}]{escape(str(report.state))}[/{colour}]")
    return root


def as_json(analysis: Analysis, modes: dict[str, str] | None = None) -> dict[str, Any]:
    """The analysis and the graph's groups as JSON."""
    modes = modes or {}
    return {
        "valid": analysis.valid, "error": analysis.error,
        "convention": analysis.convention.value,
        "operators": [{"id": r.id, "operator": r.operator, "detail": r.detail,
                       "watermark_columns": [{"column": d.column, "source": d.source,
                                              "role": d.role, "watermark": d.expression()}
                                             for d in r.carries],
                       "lost": [vars(x) for x in r.lost], "mode": modes.get(r.id),
                       "trigger": r.trigger,
                       "state": {"kind": r.state.kind, "cleaned_when": r.state.cleaned_when}}
                      for r in analysis.operators],
        "groups": groups(analysis.graph()),
    }


def as_dot(analysis: Analysis) -> str:
    """The graph in Graphviz dot: one cluster per operator holding its columns,
    watermark-carrying columns filled, derivation edges labelled with their map."""
    import pydot

    graph = analysis.graph()
    dot = pydot.Dot("watermarks", graph_type="digraph", rankdir="BT", fontname="Helvetica")
    for node, data in graph.nodes(data=True):
        if data["kind"] != "operator":
            continue
        cluster = pydot.Cluster(node, label=f"{node}: {data['operator']} {data['detail']}",
                                style="rounded")
        for column in _columns_of(graph, node):
            derivation = graph.nodes[column]["derivation"]
            cluster.add_node(pydot.Node(_dot_id(column), label=graph.nodes[column]["column"],
                                        shape="box", style="filled",
                                        fillcolor=CARRIES if derivation else PLAIN))
        dot.add_subgraph(cluster)
    for source, target, data in graph.edges(data=True):
        if data["kind"] == "derives":
            dot.add_edge(pydot.Edge(_dot_id(source), _dot_id(target), label=data["map"] or ""))
    return dot.to_string()


def _columns_of(graph: nx.DiGraph, operator: str) -> list[str]:
    return [n for n, d in graph.nodes(data=True) if d["kind"] == "column" and d["operator"] == operator]


def _dot_id(node: str) -> str:
    return '"' + node.replace('"', "") + '"'


def draw(analysis: Analysis, path: str) -> None:
    """The graph as a picture (SVG or PNG by the file's suffix): operators as rows (the scan
    at the bottom), their columns side by side, watermark-carrying columns highlighted, an
    arrow from each input column to the columns computed from it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graph = analysis.graph()
    ops = [n for n, d in graph.nodes(data=True) if d["kind"] == "operator"]
    positions: dict[str, tuple[float, float]] = {}
    for row, op in enumerate(reversed(ops)):
        for i, column in enumerate(_columns_of(graph, op)):
            positions[column] = (i * 1.6, row * 1.4)
    right = max(x for x, _ in positions.values()) + 1.0
    figure, axes = plt.subplots(figsize=(max(8.0, right * 1.1 + 9), 1.3 * len(ops) + 1.5))
    columns = graph.subgraph(positions)
    lost = {f"{r.id}.{x.column}": x for r in analysis.operators for x in r.lost}
    colour = {n: CARRIES if columns.nodes[n]["derivation"] else LOST if n in lost else PLAIN
              for n in columns}
    derives = [(u, v) for u, v, d in columns.edges(data=True) if d["kind"] == "derives"]
    nx.draw_networkx_edges(columns, positions, edgelist=derives, ax=axes, arrows=True,
                           edge_color=["#999999" if colour[v] == PLAIN else colour[v]
                                       for _, v in derives], node_size=1800, node_shape="s")
    nx.draw_networkx_nodes(columns, positions, ax=axes, node_shape="s", node_size=1800,
                           node_color=[colour[n] for n in columns])
    nx.draw_networkx_labels(columns, positions, ax=axes, font_size=7,
                            labels={n: graph.nodes[n]["column"] for n in columns})
    labels = {(u, v): columns.edges[u, v]["map"] for u, v in derives  # where the map changes
              if colour[v] == CARRIES and columns.nodes[u]["derivation"] is not None
              and columns.nodes[u]["derivation"].expression() != columns.edges[u, v]["map"]}
    labels |= {(u, v): f"lost: {lost[v].expression}" for u, v in derives
               if v in lost and columns.nodes[u]["derivation"] is not None}
    nx.draw_networkx_edge_labels(columns, positions, edge_labels=labels, ax=axes, font_size=6,
                                 font_color="#8a4200", label_pos=0.6)
    for row, op in enumerate(reversed(ops)):
        report = next(r for r in analysis.operators if r.id == op)
        lines = [f"{report.operator}: {report.detail}"]
        lines += [f"trigger: {report.trigger}"] if report.trigger else []
        lines += [f"state: {report.state}"] if report.state.kind != "none" else []
        axes.text(right, row * 1.4, "\n".join(textwrap.shorten(line, 150) for line in lines),
                  fontsize=7, va="center")
    axes.set_xlim(-1.0, right + 9.0)
    title = "valid under EOWC" if analysis.valid else "NOT valid under EOWC"
    axes.set_title(f"Watermark derivation ({analysis.convention.value}): {title}; "
                   f"orange columns carry a watermark, red ones lost it", fontsize=9)
    axes.set_axis_off()
    figure.tight_layout()
    figure.savefig(path, format=Path(path).suffix.lstrip("."))
    plt.close(figure)


@click.command()
@click.argument("query_file", type=click.Path(dir_okay=False))
@click.option("--convention", type=click.Choice([c.value for c in Convention]), default=None,
              help=f"Boundary rule of the triggers {CONVENTION_DEFAULT_HELP}.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "dot", "svg", "png"]),
              default="text", show_default=True)
@click.option("--out", type=OutputFile(),
              help="Write here instead of standard output (svg and png: default QUERY.svg/png).")
@view_option
@dialect_option
def explain(query_file: str, convention: str | None, fmt: str, out: str | None, view: str | None,
            dialect: str) -> None:
    """Explain how watermarks flow through the query in QUERY_FILE: is it valid under EMIT ON
    WINDOW CLOSE, what triggers each operator, which state is bounded."""
    try:
        text = Path(query_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        click.echo(f"eowc explain: error: {query_file}: cannot read the query: {error}", err=True)
        sys.exit(2)
    read_in = detect_dialect(text) if dialect == "auto" else dialect
    try:
        analysis = analyze(parse_script(text, view, dialect).query,
                           Convention(convention or default_convention(text, dialect)))
    except EowcError as error:
        click.echo(f"eowc explain: error: {query_file}: {error}", err=True)
        sys.exit(2)
    if fmt in ("svg", "png"):
        path = out or str(Path(query_file).with_suffix(f".{fmt}").name)
        draw(analysis, path)
        click.echo(f"wrote {path}", err=True)
    else:
        modes = operator_modes(analysis, read_in == "flink")
        if fmt == "text":
            console = Console(record=True, width=140, file=io.StringIO() if out else None)
            console.print(text_tree(analysis, modes))
            rendered = console.export_text()
        else:
            rendered = json.dumps(as_json(analysis, modes), indent=2) if fmt == "json" \
                else as_dot(analysis)
            if not out:
                click.echo(rendered)
        if out:
            Path(out).write_text(rendered.rstrip("\n") + "\n", encoding="utf-8")
    if analysis.error:
        click.echo(f"eowc explain: {query_file}: {analysis.error}", err=True)
        sys.exit(1)
