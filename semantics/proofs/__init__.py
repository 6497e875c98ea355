"""Machine-checked claims about the semantics, proved with z3 (the ``proofs`` extra):
:mod:`~eowc.semantics.proofs.trigger_proofs` (every trigger condition) and
:mod:`~eowc.semantics.proofs.expression_proofs` (projection expressions that keep a watermark).

Importing this package does not import z3; its modules do.
"""

#: What the trigger obligations are about: the EOWC operators, ``input`` (Definition 1's late
#: check) and ``derived`` (the watermark maps of derived columns).
OPERATORS = ("eowc-sort", "group-by-event-time", "over-window", "tumble", "hop", "cumulate",
             "session", "count-window", "pattern", "interval-join", "union", "input",
             "derived")

__all__ = ["OPERATORS"]
