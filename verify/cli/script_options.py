"""The options of the commands that read a query script: which of its views to run, how ties
are broken, its dialect, and the executors' options."""

from __future__ import annotations

from collections.abc import Callable

import click

from eowc.executors.plan import DEFAULT_OPTIONS, SORT_PARTITIONS, ExecutorOptions
from eowc.semantics.frontend.dialects import detect_dialect
from eowc.semantics.ir.plan import TIES

VIEW_HELP = ("Run the view called NAME of the script (CREATE [MATERIALIZED] VIEW NAME AS ...) "
             "instead of its last statement.")


def view_option(command: Callable[..., None]) -> Callable[..., None]:
    """``--view NAME``: the view of the script to run (default: its last view or query)."""
    return click.option("--view", metavar="NAME", default=None, help=VIEW_HELP)(command)


TIES_HELP = ("How rows with equal ORDER BY values are ordered (TopN, row_number, ROWS frames, "
             "lag/lead, first_value/last_value, the EOWC sort): row-id, by arrival (RisingWave's "
             "hidden _row_id); deterministic, by a total order on whole rows. Default: the "
             "convention's (deterministic for all three; docs/sql/aggregates.md).")


def ties_option(command: Callable[..., None]) -> Callable[..., None]:
    """``--ties row-id|deterministic``: what breaks ties (default: the convention's)."""
    return click.option("--ties", type=click.Choice(list(TIES)), default=None,
                        help=TIES_HELP)(command)


DIALECT_HELP = ("The SQL dialect of the query file: risingwave (unquoted names fold to lower case), "
                "flink (names keep their case; `backquotes`), or auto: the one the text is "
                "written in (Flink marks such as backquotes, DESCRIPTOR(...), 'connector' = ..., "
                "PROCTIME(); else RisingWave).")


CONVENTION_DEFAULT_HELP = "[default: flink for a Flink SQL script, else risingwave]"


def default_convention(text: str, dialect: str) -> str:
    """The convention a script is run under when none is given: a Flink SQL script follows
    Flink's rules, any other RisingWave's."""
    read_in = detect_dialect(text) if dialect == "auto" else dialect
    return "flink" if read_in == "flink" else "risingwave"


def dialect_option(command: Callable[..., None]) -> Callable[..., None]:
    """``--dialect risingwave|flink|auto``: the SQL dialect the script is read in."""
    return click.option("--dialect", type=click.Choice(["auto", "risingwave", "flink"]),
                        default="auto", show_default=True, help=DIALECT_HELP)(command)


SORT_PARTITIONS_HELP = ("The partitions of an EOWC sort run by the executors (in process or on "
                        "Spark): rows are hash-partitioned by the source's primary key (else the "
                        "whole row) and come out ordered by the watermark column within each "
                        "partition, as RisingWave's EOWC sort is; 1 gives one total order. A run "
                        f"resumed from a checkpoint must keep it.  [default: {SORT_PARTITIONS}]")


def sort_partitions_option(command: Callable[..., None]) -> Callable[..., None]:
    """``--sort-partitions N``: the partitions of an EOWC sort (:func:`options_given`)."""
    return click.option("--sort-partitions", type=click.IntRange(min=1), default=None,
                        help=SORT_PARTITIONS_HELP)(command)


def options_given(sort_partitions: int | None) -> ExecutorOptions:
    """The executors' options of the command line (the defaults for what it leaves out)."""
    if sort_partitions is None:
        return DEFAULT_OPTIONS
    return ExecutorOptions(sort_partitions=sort_partitions)
