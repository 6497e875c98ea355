"""z3 proofs of the EOWC trigger conditions, over integer time with symbolic window parameters.

Every obligation calls the real functions of :mod:`eowc.semantics.rules.triggers` and
:mod:`eowc.semantics.analysis.watermark_maps` with z3 integer terms (they use only comparisons and integer
arithmetic), so what is proved is the code the interpreter runs. An obligation is
"``assumption`` implies ``conclusion`` for all integers"; it is proved when z3 finds the
negation unsatisfiable, refuted with z3's counterexample otherwise. A *witness* obligation
("some integers satisfy both") is proved with the model z3 finds.

Time is integer microseconds; Flink's unit is ``1 ms = MICROS_PER_MILLI = 1000`` of them, so
"RisingWave and Flink differ by one time unit" means by one millisecond here. Watermarks are
finite integers in every obligation (``-inf``/``+inf`` are not modelled).

The properties (``docs/proofs.md`` states each one exactly):

1. *soundness*: once an operator's trigger holds for a result at ``W``, no row that can still
   enter INPUT under any later watermark ``W' >= W`` can change that result;
2. *monotonicity*: each trigger, and ``row_is_late``, that holds at ``W`` holds at every
   ``W' >= W``; each derived watermark is monotone in ``W``;
3. *equivalences*: the trigger read through the derived watermark of ``window_start`` or
   ``window_end`` is the trigger on the window; Flink's rule is RisingWave's at
   ``W + 1 ms``, and the two disagree exactly on ``end - 1 ms <= W < end``; Spark's late
   check is RisingWave's at ``W + 1 µs``.

The builders take the trigger functions as arguments (default: the real ones), so a test can
hand them a wrong condition and see the same proof refute it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import partial
from typing import Any, TypeAlias

import z3

from eowc.semantics.analysis.watermark_derivation import Derivation, Step
from eowc.semantics.analysis.watermark_maps import (
    least_watermark,
    shifted_watermark,
    truncated_watermark,
    window_column_watermark,
    window_end_watermark,
    window_start_watermark,
)
from eowc.semantics.ir.values import MICROS_PER_MILLI
from eowc.semantics.ir.windows import Window, WindowKind
from eowc.semantics.rules.triggers import (
    Convention,
    count_window_closes,
    frame_is_complete,
    group_is_complete,
    match_is_final,
    row_is_late,
    time_is_complete,
    unmatched_row_is_final,
    window_accepts,
    window_closes,
)

#: A time: an int when an obligation is evaluated on numbers, a z3 term when it is proved.
Term: TypeAlias = int | z3.ArithRef
#: A truth value: a bool on numbers, a z3 formula when proved.
Truth: TypeAlias = bool | z3.BoolRef
#: The values of an obligation's variables, by name.
Values: TypeAlias = Mapping[str, Term]

RISINGWAVE, SPARK, FLINK = Convention.RISINGWAVE, Convention.SPARK, Convention.FLINK
ALL_CONVENTIONS = tuple(Convention)
#: The later watermark ``W'`` is the variable ``W2``.
WATERMARKS = ("W", "W2")


# --- truth values on numbers and on z3 terms alike ----------------------------------------

def _symbolic(*truths: Truth) -> bool:
    return any(isinstance(truth, z3.ExprRef) for truth in truths)


def negation(a: Truth) -> Truth:
    return z3.Not(a) if _symbolic(a) else not a


def conjunction(*truths: Truth) -> Truth:
    return z3.And(*truths) if _symbolic(*truths) else all(truths)


def disjunction(*truths: Truth) -> Truth:
    return z3.Or(*truths) if _symbolic(*truths) else any(truths)


def implication(a: Truth, b: Truth) -> Truth:
    return z3.Implies(a, b) if _symbolic(a, b) else (not a) or b


def equivalence(a: Truth, b: Truth) -> Truth:
    return a == b if _symbolic(a, b) else bool(a) is bool(b)


# --- obligations and results ---------------------------------------------------------------

@dataclass(frozen=True)
class Obligation:
    """One claim: for all integer values of ``variables``, ``assumption`` implies
    ``conclusion`` (a *witness* claim: some values satisfy both).

    ``operator`` is what the claim is about (an EOWC operator, ``input`` for Definition 1's
    late check, ``derived`` for :mod:`eowc.semantics.analysis.watermark_maps`); ``conventions`` the
    boundary rules
    it involves (empty: none). ``window`` names the window in a counterexample.

    ``lemma``: another obligation over the same variables whose claim, instantiated at
    ``W + shift`` for each shift of ``lemma_at``, is an extra hypothesis (a proved
    universal claim holds at every point). The obligation counts as proved only if its lemma
    is. It lets z3 prove by linear reasoning what it fails to find in nonlinear arithmetic.
    """

    operator: str
    conventions: tuple[Convention, ...]
    property: str
    claim: str
    variables: tuple[str, ...]
    assumption: Callable[[Values], Truth]
    conclusion: Callable[[Values], Truth]
    witness: bool = False
    window: Callable[[Values], Window] | None = None
    lemma: Obligation | None = None
    lemma_at: tuple[int, ...] = (0,)
    #: Its result informs and never fails ``eowc prove`` (why a rejected expression is rejected).
    advisory: bool = False
    #: Why the claim cannot be stated in z3 integer arithmetic (then it is ``unknown``).
    unmodelled: str = ""
    #: The claim at a model, computed by the code the interpreter runs (not by the z3 terms):
    #: a counterexample (a witness) must make it false (true), or the translation is wrong.
    confirm: Callable[[Mapping[str, int]], bool] | None = None
    #: The model in the claim's own terms (values of the expression at it, say).
    explain: Callable[[Mapping[str, int]], str] | None = None

    @property
    def convention(self) -> str:
        return "/".join(c.value for c in self.conventions) or "-"

    def holds(self, values: Values) -> Truth:
        """The claim at ``values``: a bool on ints, the z3 formula on z3 terms."""
        assumption, conclusion = self.assumption(values), self.conclusion(values)
        return conjunction(assumption, conclusion) if self.witness else implication(assumption,
                                                                                     conclusion)

    def lemma_instances(self, values: Values) -> Truth:
        """The lemma's claim at ``W + shift`` for every shift of ``lemma_at`` (true if none)."""
        if self.lemma is None:
            return True
        return conjunction(*(self.lemma.holds({**values, "W": values["W"] + shift})
                             for shift in self.lemma_at))

    @property
    def formula(self) -> z3.BoolRef:
        """The claim over z3 integer variables named as in ``variables``, with the lemma's
        instances as hypotheses."""
        values = {name: z3.Int(name) for name in self.variables}
        formula = implication(self.lemma_instances(values), self.holds(values))
        return formula if isinstance(formula, z3.BoolRef) else z3.BoolVal(formula)


class Status(Enum):
    PROVED = "proved"
    REFUTED = "refuted"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Result:
    """What z3 said about one obligation, and how long it took.

    ``model``: the counterexample of a refuted claim, or the witness of a proved witness claim
    (every variable, as an int). ``reason``: why z3 gave up, for ``unknown``.
    """

    obligation: Obligation
    status: Status
    seconds: float
    model: dict[str, int] | None = None
    reason: str = ""

    def model_text(self) -> str:
        """The model in readable form: ``W=3, t=2, ...; window [0, 5)``."""
        if self.model is None:
            return ""
        text = ", ".join(f"{name}={value}" for name, value in self.model.items())
        if self.obligation.window is not None:
            start, end = self.obligation.window(self.model)
            text += f"; window [{start}, {end})"
        if self.obligation.explain is not None:
            text += f"; {self.obligation.explain(self.model)}"
        return text

    def as_json(self) -> dict[str, Any]:
        o = self.obligation
        return {"operator": o.operator, "convention": o.convention, "property": o.property,
                "claim": o.claim, "result": self.status.value, "ms": round(self.seconds * 1000, 1),
                "witness" if o.witness else "counterexample": self.model,
                **({"explanation": o.explain(self.model)} if o.explain and self.model else {}),
                **({"advisory": True} if o.advisory else {}),
                **({"reason": self.reason} if self.reason else {})}


def check(obligation: Obligation, timeout_seconds: float = 10.0,
          known: dict[Obligation, Result] | None = None) -> Result:
    """Ask z3 whether ``obligation`` holds, giving up after ``timeout_seconds``.

    A counterexample found with the lemma's instances as hypotheses also refutes the claim
    without them. A proof that uses a lemma stands only if the lemma is proved (its result is
    looked up in, or added to, ``known``); otherwise the result is ``unknown``.
    """
    known = {} if known is None else known
    if obligation in known:
        return known[obligation]
    if obligation.unmodelled:
        return Result(obligation, Status.UNKNOWN, 0.0, reason=obligation.unmodelled)
    solver = z3.Solver()
    solver.set("timeout", max(1, round(timeout_seconds * 1000)))
    formula = obligation.formula
    solver.add(formula if obligation.witness else z3.Not(formula))
    started = time.perf_counter()
    answer = solver.check()
    seconds = time.perf_counter() - started
    if answer == z3.unknown:
        result = Result(obligation, Status.UNKNOWN, seconds, reason=solver.reason_unknown())
    elif answer == z3.unsat:
        result = Result(obligation, Status.REFUTED if obligation.witness else Status.PROVED, seconds)
    else:
        model = solver.model()
        values = {name: model.eval(z3.Int(name), model_completion=True).as_long()
                  for name in obligation.variables}
        result = Result(obligation, Status.PROVED if obligation.witness else Status.REFUTED,
                        seconds, values)
        if obligation.confirm is not None and obligation.confirm(values) is not obligation.witness:
            result = Result(obligation, Status.UNKNOWN, seconds, values,
                            reason="z3's model does not reproduce with the evaluator: the z3 "
                                   "translation differs from the code the interpreter runs")
    lemma = obligation.lemma
    if result.status is Status.PROVED and lemma is not None and not obligation.witness:
        lemma_result = check(lemma, timeout_seconds, known)
        if lemma_result.status is not Status.PROVED:
            result = Result(obligation, Status.UNKNOWN, seconds,
                            reason=f"its lemma ({lemma.operator} [{lemma.convention}] "
                                   f"{lemma.property}) is {lemma_result.status.value}")
    known[obligation] = result
    return result


# --- the windows of each operator, over symbolic parameters --------------------------------

@dataclass(frozen=True)
class SymbolicSpec:
    """A :class:`eowc.semantics.ir.windows.WindowSpec` whose fields are terms (no validation: the
    family's ``domain`` states what the spec's checks would)."""

    kind: WindowKind
    size: Term
    slide: Term
    offset: Term


@dataclass(frozen=True)
class WindowFamily:
    """Every window of one windowed operator, as a term of symbolic parameters.

    ``domain``: the parameters are valid and the window is one the operator makes.
    ``window``: the window ``[s, e)``. ``spec``: the TVF's parameters (None for SESSION).
    ``per_window``: under Spark and Flink its aggregate judges lateness per window.
    ``gap``: a session's gap (None for a TVF).
    """

    operator: str
    variables: tuple[str, ...]
    domain: Callable[[Values], Truth]
    window: Callable[[Values], Window]
    spec: Callable[[Values], SymbolicSpec] | None
    per_window: bool
    gap: Callable[[Values], Term] | None = None

    def touches(self, values: Values, t: Term, convention: Convention | None = None,
                watermark: Term | None = None) -> Truth:
        """A row at ``t`` would change the window's result: it falls in ``[s, e)``; for a
        session, its own ``[t, t + gap)`` overlaps ``[s, e)`` (it extends or merges it), or,
        where touching sessions merge (``row_joins_session``), meets it while the session
        takes rows, ``window_accepts`` under ``watermark``."""
        window = self.window(values)
        if self.gap is None:
            return conjunction(window.start <= t, t < window.end)
        gap = self.gap(values)
        overlaps = conjunction(window.start - gap < t, t < window.end)
        if convention is None or not convention.merges_touching_sessions or watermark is None:
            return overlaps
        meets = disjunction(t == window.start - gap, t == window.end)
        return disjunction(overlaps, conjunction(meets, window_accepts(window, watermark,
                                                                       convention)))


def _tumble_window(v: Values) -> Window:
    start = v["offset"] + v["k"] * v["size"]
    return Window(start, start + v["size"])


def _hop_window(v: Values) -> Window:
    start = v["offset"] + v["k"] * v["slide"]
    return Window(start, start + v["size"])


def _cumulate_window(v: Values) -> Window:
    start = v["offset"] + v["k"] * v["m"] * v["step"]
    return Window(start, start + v["j"] * v["step"])


def _session_window(v: Values) -> Window:
    return Window(v["first"], v["last"] + v["gap"])


#: TUMBLE: window ``k`` is ``[offset + k*size, offset + (k+1)*size)``.
TUMBLE = WindowFamily(
    "tumble", ("k", "size", "offset"), lambda v: v["size"] > 0, _tumble_window,
    lambda v: SymbolicSpec(WindowKind.TUMBLE, v["size"], 0, v["offset"]), per_window=True)
#: HOP: window ``k`` is ``[offset + k*slide, offset + k*slide + size)``.
HOP = WindowFamily(
    "hop", ("k", "size", "slide", "offset"), lambda v: conjunction(v["size"] > 0, v["slide"] > 0),
    _hop_window, lambda v: SymbolicSpec(WindowKind.HOP, v["size"], v["slide"], v["offset"]),
    per_window=True)
#: CUMULATE: ``size = m * step``; window ``j`` (``1 <= j <= m``) of period ``k`` is
#: ``[offset + k*size, offset + k*size + j*step)``.
CUMULATE = WindowFamily(
    "cumulate", ("k", "j", "m", "step", "offset"),
    lambda v: conjunction(v["step"] > 0, v["m"] > 0, v["j"] >= 1, v["j"] <= v["m"]),
    _cumulate_window,
    lambda v: SymbolicSpec(WindowKind.CUMULATE, v["m"] * v["step"], v["step"], v["offset"]),
    per_window=True)
#: SESSION is not in the codebase: its trigger is stated with ``window_closes`` on
#: ``[first, last + gap)`` (SEMANTICS.md §2: ``last_event_time + gap`` is complete).
SESSION = WindowFamily(
    "session", ("first", "last", "gap"), lambda v: conjunction(v["gap"] > 0, v["first"] <= v["last"]),
    _session_window, None, per_window=False, gap=lambda v: v["gap"])

TVF_FAMILIES = (TUMBLE, HOP, CUMULATE)
FAMILIES = (*TVF_FAMILIES, SESSION)


def _variables(family: WindowFamily, *names: str) -> tuple[str, ...]:
    return (*names, *family.variables)


def _whole_milliseconds(values: Values, names: tuple[str, ...]) -> Truth:
    return conjunction(*(values[name] % MICROS_PER_MILLI == 0 for name in names))


# --- (1) soundness ---------------------------------------------------------------------------

def point_soundness(operator: str, convention: Convention,
                    trigger: Callable[[Term, Term, Convention], Truth],
                    is_late: Callable[[Term, Term, Convention], Truth] = row_is_late,
                    after: bool = False) -> Obligation:
    """An operator whose result is a single event time ``v`` (the EOWC sort, a GROUP BY on the
    watermark column): once ``trigger(v, W)`` holds, every row that is not late under some
    ``W' >= W`` has a time ``t != v`` (with ``after``: ``t > v``, so it sorts after it)."""
    relation = "t > v (it sorts after v)" if after else "t != v"
    return Obligation(
        operator, (convention,), "soundness",
        f"if {trigger.__name__}(v, W) and W' >= W, every row at t that is not late under W' "
        f"has {relation}",
        ("v", "t", *WATERMARKS),
        lambda x: conjunction(x["W2"] >= x["W"], trigger(x["v"], x["W"], convention)),
        lambda x: implication(negation(is_late(x["t"], x["W2"], convention)),
                              x["t"] > x["v"] if after else x["t"] != x["v"]))


def sort_soundness(convention: Convention, trigger: Callable[..., Truth] = time_is_complete,
                   is_late: Callable[..., Truth] = row_is_late) -> Obligation:
    """EOWC sort: an emitted row's time is never reached again, and later rows sort after it."""
    return point_soundness("eowc-sort", convention, trigger, is_late, after=True)


def group_soundness(convention: Convention, trigger: Callable[..., Truth] = group_is_complete,
                    is_late: Callable[..., Truth] = row_is_late) -> Obligation:
    """GROUP BY the watermark column: no admitted row joins an emitted group."""
    return point_soundness("group-by-event-time", convention, trigger, is_late)


def over_soundness(convention: Convention, trigger: Callable[..., Truth] = frame_is_complete,
                   is_late: Callable[..., Truth] = row_is_late) -> Obligation:
    """EOWC OVER window: once ``frame_is_complete(needed, W)`` (``needed`` the last order
    value the row's frame reads), every row that can still arrive sorts after the frame, so
    it changes neither the frame nor the row's position in it."""
    return point_soundness("over-window", convention, trigger, is_late, after=True)


def pattern_soundness(convention: Convention, trigger: Callable[..., Truth] = match_is_final,
                      is_late: Callable[..., Truth] = row_is_late) -> Obligation:
    """MATCH_RECOGNIZE: once ``match_is_final(v, W)`` (``v`` the ORDER BY value of the last
    row the matcher's search read), every row that can still arrive sorts after that row, so
    the search over the final input reads the same rows and decides the same (a DEFINE
    condition reads only its row and rows before it)."""
    return point_soundness("pattern", convention, trigger, is_late, after=True)


def count_window_soundness(convention: Convention,
                           trigger: Callable[..., Truth] = count_window_closes,
                           is_late: Callable[..., Truth] = row_is_late) -> Obligation:
    """Count windows (COUNT_TUMBLE, COUNT_HOP): once ``count_window_closes(v, W)`` for a full
    window whose last row is at ``v``, every row that is not late under ``W' >= W`` has
    ``t > v``: it sorts after every row of the window (ties are broken among rows already
    there), so it shifts neither the window's rows nor any earlier window's."""
    return point_soundness("count-window", convention, trigger, is_late, after=True)


def admission(family: WindowFamily, convention: Convention,
              accepts: Callable[..., Truth] = window_accepts,
              is_late: Callable[..., Truth] = row_is_late) -> Callable[[Values, Window], Truth]:
    """Whether the row at ``t`` may still enter ``window`` under ``W'`` (``W2``): per window
    (``window_accepts``) for a TVF aggregate under Spark and Flink
    (:attr:`Convention.checks_lateness_per_window`), else ``not row_is_late(t, W')``."""
    if family.per_window and convention.checks_lateness_per_window:
        return lambda v, window: accepts(window, v["W2"], convention)
    return lambda v, window: negation(is_late(v["t"], v["W2"], convention))


def window_soundness(family: WindowFamily, convention: Convention,
                     closes: Callable[..., Truth] = window_closes,
                     admitted: Callable[[Values, Window], Truth] | None = None,
                     whole_milliseconds: tuple[str, ...] = ()) -> Obligation:
    """A window aggregate: once ``closes(window, W)``, no row admitted under ``W' >= W``
    touches the window (falls in it; for a session, extends or merges it). The variables in
    ``whole_milliseconds`` are assumed to be whole milliseconds."""
    admitted = admitted or admission(family, convention)
    rule = "window_accepts(window, W')" if family.per_window and \
        convention.checks_lateness_per_window else "not row_is_late(t, W')"
    effect = "falls in"
    if family is SESSION:
        effect = ("extends or merges (overlaps, or meets while window_accepts(window, W'))"
                  if convention.merges_touching_sessions else "extends or merges (overlaps)")
    ms = f" (times {', '.join(whole_milliseconds)} whole milliseconds)" if whole_milliseconds else ""
    return Obligation(
        family.operator, (convention,), "soundness",
        f"if {closes.__name__}(window, W) and W' >= W, no row at t admitted by {rule} "
        f"{effect} the window{ms}",
        _variables(family, "t", *WATERMARKS),
        lambda v: conjunction(family.domain(v), v["W2"] >= v["W"], _whole_milliseconds(v, whole_milliseconds),
                              closes(family.window(v), v["W"], convention)),
        lambda v: negation(conjunction(admitted(v, family.window(v)),
                                       family.touches(v, v["t"], convention, v["W2"]))),
        window=family.window)


# --- (2) monotonicity ----------------------------------------------------------------------

def monotonicity(operator: str, convention: Convention | None, what: str,
                 variables: tuple[str, ...], domain: Callable[[Values], Truth],
                 holds_at: Callable[[Values, Term], Truth],
                 window: Callable[[Values], Window] | None = None) -> Obligation:
    """``holds_at(values, W)`` and ``W' >= W`` imply ``holds_at(values, W')``."""
    return Obligation(
        operator, (convention,) if convention else (), f"monotonicity: {what}",
        f"if {what} holds at W, it holds at every W' >= W", (*variables, *WATERMARKS),
        lambda v: conjunction(domain(v), v["W2"] >= v["W"]),
        lambda v: implication(holds_at(v, v["W"]), holds_at(v, v["W2"])), window=window)


def point_monotonicity(operator: str, convention: Convention,
                       trigger: Callable[[Term, Term, Convention], Truth]) -> Obligation:
    """``trigger(v, W)`` (``time_is_complete``, ``group_is_complete``, ``row_is_late``) is
    monotone in ``W``."""
    return monotonicity(operator, convention, f"{trigger.__name__}(v, W)", ("v",),
                        lambda v: True, lambda v, w: trigger(v["v"], w, convention))


def window_monotonicity(family: WindowFamily, convention: Convention,
                        closes: Callable[..., Truth] = window_closes) -> Obligation:
    """A closed window stays closed."""
    return monotonicity(family.operator, convention, f"{closes.__name__}(window, W)",
                        family.variables, family.domain,
                        lambda v, w: closes(family.window(v), w, convention), family.window)


def refusal_monotonicity(convention: Convention,
                         accepts: Callable[..., Truth] = window_accepts) -> Obligation:
    """A window that refuses rows keeps refusing them (the per-window late check)."""
    return monotonicity("input", convention, f"not {accepts.__name__}(window, W)", ("s", "e"),
                        lambda v: v["s"] < v["e"],
                        lambda v, w: negation(accepts(Window(v["s"], v["e"]), w, convention)),
                        lambda v: Window(v["s"], v["e"]))


def watermark_monotonicity(name: str, variables: tuple[str, ...], domain: Callable[[Values], Truth],
                           derive: Callable[[Values, Term], Term],
                           conventions: tuple[Convention, ...] = ()) -> Obligation:
    """A derived watermark ``derive(values, W)`` is monotone: ``W' >= W`` implies
    ``derive(W') >= derive(W)``. A watermark that can go down must be rejected."""
    return Obligation(
        "derived", conventions, f"monotonicity: {name}", f"W' >= W implies {name}(W') >= {name}(W)",
        (*variables, *WATERMARKS), lambda v: conjunction(domain(v), v["W2"] >= v["W"]),
        lambda v: derive(v, v["W2"]) >= derive(v, v["W"]))


def window_watermark_monotonicity(family: WindowFamily, convention: Convention,
                                  derive: Callable[..., Term] = window_start_watermark
                                  ) -> Obligation:
    """:func:`window_start_watermark` or :func:`window_end_watermark` of ``family``'s TVF, in
    ``convention``'s reading (:func:`eowc.semantics.analysis.watermark_maps.window_column_watermark`)."""
    assert family.spec is not None
    spec = family.spec
    return watermark_monotonicity(
        f"{derive.__name__}[{family.operator}, {convention.value}]", family.variables, family.domain,
        lambda v, w: window_column_watermark(partial(derive, spec(v)), w, convention), (convention,))


# --- (3) equivalences ----------------------------------------------------------------------

def window_column_equivalence(family: WindowFamily, convention: Convention, column: str,
                              derive: Callable[..., Term] | None = None,
                              closes: Callable[..., Truth] = window_closes,
                              complete: Callable[..., Truth] = time_is_complete,
                              longest_only: bool = False, one_way: bool = False,
                              lemma: Obligation | None = None) -> Obligation:
    """The trigger on the window equals ``time_is_complete`` of its ``window_start`` or
    ``window_end`` value under that column's derived watermark
    (:func:`eowc.semantics.analysis.watermark_maps.window_column_watermark`).

    ``longest_only``: only for the longest window of a start (CUMULATE's ``window_start``).
    ``one_way``: only "the column value is complete implies the window is closed".

    Where the column's watermark is read with a completion gap or a closing offset (Spark,
    Flink), z3 does not find the proof in nonlinear arithmetic, so it is proved
    from the same claim under RisingWave (``lemma``, built with the same functions unless
    given) at ``W`` and ``W + 1 ms``: what is left is linear.
    """
    assert family.spec is not None and column in ("window_start", "window_end")
    if lemma is None and (convention.completion_gap or convention.closing_offset):
        lemma = window_column_equivalence(family, RISINGWAVE, column, derive, closes, complete,
                                          longest_only, one_way)
    spec = family.spec
    derive = derive or (window_start_watermark if column == "window_start" else window_end_watermark)

    def column_complete(v: Values) -> Truth:
        window = family.window(v)
        value = window.start if column == "window_start" else window.end
        return complete(value, window_column_watermark(partial(derive, spec(v)), v["W"], convention),
                        convention)

    which = "the longest window" if longest_only else "every window"
    relation = "implies" if one_way else "iff"
    longest = (lambda v: v["j"] == v["m"]) if longest_only else (lambda v: True)
    return Obligation(
        family.operator, (convention,), f"equivalence: {column}" + (" (one way)" if one_way else ""),
        f"for {which}, {column} is complete under {derive.__name__} {relation} "
        f"{closes.__name__}(window, W)",
        _variables(family, "W"), lambda v: conjunction(family.domain(v), longest(v)),
        lambda v: implication(column_complete(v), closes(family.window(v), v["W"], convention))
        if one_way else equivalence(column_complete(v), closes(family.window(v), v["W"], convention)),
        window=family.window, lemma=lemma, lemma_at=(0, MICROS_PER_MILLI))


def flink_is_risingwave_shifted(family: WindowFamily,
                                closes: Callable[..., Truth] = window_closes) -> Obligation:
    """``window_closes(w, W, flink)`` iff ``window_closes(w, W + 1 ms, risingwave)``."""
    return Obligation(
        family.operator, (FLINK, RISINGWAVE), "equivalence: flink = risingwave at W + 1 ms",
        "window_closes(window, W, flink) iff window_closes(window, W + 1 ms, risingwave)",
        _variables(family, "W"), family.domain,
        lambda v: equivalence(closes(family.window(v), v["W"], FLINK),
                              closes(family.window(v), v["W"] + MICROS_PER_MILLI, RISINGWAVE)),
        window=family.window)


def _rules_disagree(family: WindowFamily, closes: Callable[..., Truth], v: Values) -> Truth:
    return negation(equivalence(closes(family.window(v), v["W"], FLINK),
                                closes(family.window(v), v["W"], RISINGWAVE)))


def rules_differ_exactly(family: WindowFamily,
                         closes: Callable[..., Truth] = window_closes) -> Obligation:
    """RisingWave's and Flink's rules disagree on a window exactly when
    ``end - 1 ms <= W < end``."""
    return Obligation(
        family.operator, (FLINK, RISINGWAVE), "equivalence: rules differ on [end - 1 ms, end)",
        "window_closes under flink and under risingwave disagree iff end - 1 ms <= W < end",
        _variables(family, "W"), family.domain,
        lambda v: equivalence(_rules_disagree(family, closes, v),
                              conjunction(family.window(v).end - MICROS_PER_MILLI <= v["W"],
                                          v["W"] < family.window(v).end)),
        window=family.window)


def rules_disagree_somewhere(family: WindowFamily,
                             closes: Callable[..., Truth] = window_closes) -> Obligation:
    """A witness: a window and a ``W`` where Flink's rule has closed it and RisingWave's not."""
    return Obligation(
        family.operator, (FLINK, RISINGWAVE), "witness: rules disagree",
        "some window and W have window_closes under flink and not under risingwave",
        _variables(family, "W"), family.domain,
        lambda v: conjunction(closes(family.window(v), v["W"], FLINK),
                              negation(closes(family.window(v), v["W"], RISINGWAVE))),
        witness=True, window=family.window)


def late_is_shifted(convention: Convention, shift: int, reference: Convention,
                    is_late: Callable[..., Truth] = row_is_late) -> Obligation:
    """``row_is_late(c, W, convention)`` iff ``row_is_late(c, W + shift, reference)``."""
    unit = f" + {shift} µs" if shift else ""
    return Obligation(
        "input", (convention, reference), f"equivalence: {convention.value} late = "
        f"{reference.value} late at W{unit}",
        f"row_is_late(c, W, {convention.value}) iff row_is_late(c, W{unit}, {reference.value})",
        ("c", "W"), lambda v: True,
        lambda v: equivalence(is_late(v["c"], v["W"], convention),
                              is_late(v["c"], v["W"] + shift, reference)))


def not_late_is_accepted(family: WindowFamily, accepts: Callable[..., Truth] = window_accepts,
                         is_late: Callable[..., Truth] = row_is_late) -> Obligation:
    """Under RisingWave the source's late check is the whole late check of a window aggregate:
    a row that is not late is accepted by every window it falls in."""
    return Obligation(
        family.operator, (RISINGWAVE,), "consistency: not late implies accepted",
        "a row at t in the window that is not late under W is accepted by the window",
        _variables(family, "t", "W"), family.domain,
        lambda v: implication(conjunction(family.touches(v, v["t"]),
                                          negation(is_late(v["t"], v["W"], RISINGWAVE))),
                              accepts(family.window(v), v["W"], RISINGWAVE)),
        window=family.window)


def accepts_is_not_closes(convention: Convention, accepts: Callable[..., Truth] = window_accepts,
                          closes: Callable[..., Truth] = window_closes) -> Obligation:
    """``window_accepts`` is exactly the negation of ``window_closes``."""
    return Obligation(
        "input", (convention,), "equivalence: window_accepts = not window_closes",
        "window_accepts(window, W) iff not window_closes(window, W)", ("s", "e", "W"),
        lambda v: v["s"] < v["e"],
        lambda v: equivalence(accepts(Window(v["s"], v["e"]), v["W"], convention),
                              negation(closes(Window(v["s"], v["e"]), v["W"], convention))),
        window=lambda v: Window(v["s"], v["e"]))


def truncation_exactness(derive: Callable[..., Term] = truncated_watermark) -> Obligation:
    """``date_trunc``: a bucket start ``d`` is below the truncated watermark iff the bucket's
    last value is complete (RisingWave reading)."""
    return Obligation(
        "derived", (RISINGWAVE,), "equivalence: truncated_watermark exact",
        "for d = offset + k*unit: time_is_complete(d, truncated_watermark(W)) iff "
        "time_is_complete(d + unit - 1, W)", ("k", "unit", "offset", "W"), lambda v: v["unit"] > 0,
        lambda v: equivalence(
            time_is_complete(v["offset"] + v["k"] * v["unit"],
                             derive(v["W"], v["unit"], v["offset"]), RISINGWAVE),
            time_is_complete(v["offset"] + v["k"] * v["unit"] + v["unit"] - 1, v["W"], RISINGWAVE)))


def shift_exactness(convention: Convention,
                    derive: Callable[..., Term] = shifted_watermark) -> Obligation:
    """``c + delta``: complete under the shifted watermark iff ``c`` is complete."""
    return Obligation(
        "derived", (convention,), "equivalence: shifted_watermark exact",
        "time_is_complete(c + delta, shifted_watermark(W, delta)) iff time_is_complete(c, W)",
        ("c", "delta", "W"), lambda v: True,
        lambda v: equivalence(time_is_complete(v["c"] + v["delta"], derive(v["W"], v["delta"]),
                                               convention),
                              time_is_complete(v["c"], v["W"], convention)))


# --- joins and unions ------------------------------------------------------------------------

def _bounded_column(lower: Term) -> Derivation:
    """The derivation :func:`eowc.semantics.analysis.watermark_derivation._join` gives the left column of
    ``l >= r + lower``: the least of ``W[l]`` and ``W[r] + lower``."""
    return Derivation("l", "left.t", parts=(
        Derivation("l", "left.t"),
        Derivation("l", "right.t", "derived", (Step("shift", amount=lower),))))


def _matches(v: Values) -> Truth:
    """``r + lower <= l <= r + upper``: the interval join's time condition."""
    return conjunction(v["r"] + v["lower"] <= v["l"], v["l"] <= v["r"] + v["upper"])


def join_output_soundness(convention: Convention,
                          derivation: Callable[[Term], Derivation] = _bounded_column,
                          is_late: Callable[..., Truth] = row_is_late) -> Obligation:
    """A joined row comes out when the later of its two rows arrives (not late under its
    side's watermark): its left time is not complete under the derived watermark
    ``min(W_l, W_r + lower)`` (by symmetry, the right time under ``min(W_r, W_l - upper)``)."""
    return Obligation(
        "interval-join", (convention,), "soundness: output watermark",
        "if r + lower <= l <= r + upper and l or r is not late (it arrives now), l is not "
        "complete under min(W_l, W_r + lower)", ("l", "r", "lower", "upper", "Wl", "Wr"),
        lambda v: conjunction(v["lower"] <= v["upper"], _matches(v),
                              negation(conjunction(is_late(v["l"], v["Wl"], convention),
                                                   is_late(v["r"], v["Wr"], convention)))),
        lambda v: negation(time_is_complete(
            v["l"], derivation(v["lower"]).watermark({"left.t": v["Wl"], "right.t": v["Wr"]}),
            convention)))


def join_cleaning_soundness(convention: Convention,
                            is_late: Callable[..., Truth] = row_is_late) -> Obligation:
    """A stored left row whose time is complete under ``W_r + lower`` is dropped (or, in an
    outer join, emitted with NULLs): no right row admitted under any ``W_r' >= W_r``
    matches it."""
    return Obligation(
        "interval-join", (convention,), "soundness: state cleaning",
        "if l is complete under W_r + lower and W_r' >= W_r, no r that is not late under W_r' "
        "has r + lower <= l <= r + upper", ("l", "r", "lower", "upper", "Wr", "Wr2"),
        lambda v: conjunction(v["Wr2"] >= v["Wr"],
                              time_is_complete(v["l"], shifted_watermark(v["Wr"], v["lower"]),
                                               convention)),
        lambda v: negation(conjunction(negation(is_late(v["r"], v["Wr2"], convention)),
                                       _matches(v))))


def outer_row_soundness(convention: Convention, side: str,
                        final: Callable[..., Truth] = unmatched_row_is_final,
                        is_late: Callable[..., Truth] = row_is_late) -> Obligation:
    """The trigger of an unmatched outer row (and of join state cleaning), the interpreter's
    own function: once ``unmatched_row_is_final(l - lower, W_r)`` (a left row; a right row:
    ``unmatched_row_is_final(r + upper, W_l)``), no row of the other side admitted under any
    later watermark matches it, so the NULL-padded row is final."""
    if side == "left":
        until: Callable[[Values], Term] = lambda v: v["l"] - v["lower"]  # noqa: E731
        other = "r"
    else:
        until = lambda v: v["r"] + v["upper"]  # noqa: E731
        other = "l"
    return Obligation(
        "interval-join", (convention,), f"soundness: unmatched {side} row",
        f"if unmatched_row_is_final({'l - lower' if side == 'left' else 'r + upper'}, W) and "
        f"W' >= W, no {other} that is not late under W' has r + lower <= l <= r + upper",
        ("l", "r", "lower", "upper", "W", "W2"),
        lambda v: conjunction(v["W2"] >= v["W"], final(until(v), v["W"], convention)),
        lambda v: negation(conjunction(negation(is_late(v[other], v["W2"], convention)),
                                       _matches(v))))


def join_watermark_monotonicity() -> Obligation:
    """The joined column's watermark never goes down while both inputs' rise."""
    def at(v: Values, left: Term, right: Term) -> Term:
        return _bounded_column(v["lower"]).watermark({"left.t": left, "right.t": right})
    return Obligation(
        "interval-join", (), "monotonicity: output watermark",
        "W_l' >= W_l and W_r' >= W_r imply min(W_l', W_r' + lower) >= min(W_l, W_r + lower)",
        ("lower", "Wl", "Wr", "Wl2", "Wr2"),
        lambda v: conjunction(v["Wl2"] >= v["Wl"], v["Wr2"] >= v["Wr"]),
        lambda v: at(v, v["Wl2"], v["Wr2"]) >= at(v, v["Wl"], v["Wr"]))


def union_soundness(convention: Convention, is_late: Callable[..., Truth] = row_is_late
                    ) -> Obligation:
    """UNION ALL: a row of either input that is not late under its input's watermark is not
    complete under the least of the two."""
    return Obligation(
        "union", (convention,), "soundness: output watermark",
        "a row at t of an input whose watermark is W_in (W_a or W_b) that is not late under it "
        "is not complete under min(W_a, W_b)", ("t", "Win", "Wa", "Wb"),
        lambda v: conjunction(disjunction(v["Win"] == v["Wa"], v["Win"] == v["Wb"]),
                              negation(is_late(v["t"], v["Win"], convention))),
        lambda v: negation(time_is_complete(v["t"], least_watermark(v["Wa"], v["Wb"]),
                                            convention)))


# --- the whole set ---------------------------------------------------------------------------

def obligations() -> list[Obligation]:
    """Every obligation ``eowc prove`` checks, with the real trigger functions."""
    found: list[Obligation] = []
    for c in ALL_CONVENTIONS:
        found += [sort_soundness(c), point_monotonicity("eowc-sort", c, time_is_complete),
                  group_soundness(c), point_monotonicity("group-by-event-time", c, group_is_complete),
                  over_soundness(c), point_monotonicity("over-window", c, frame_is_complete),
                  pattern_soundness(c), point_monotonicity("pattern", c, match_is_final),
                  count_window_soundness(c),
                  point_monotonicity("count-window", c, count_window_closes)]
        for family in FAMILIES:
            # A session closing before its end (Flink's) is sound only on whole-millisecond
            # times (see docs/proofs.md).
            ms = ("t", "last", "gap") if family is SESSION and c.closing_offset else ()
            found += [window_soundness(family, c, whole_milliseconds=ms),
                      window_monotonicity(family, c)]
        found += [point_monotonicity("input", c, row_is_late), refusal_monotonicity(c),
                  accepts_is_not_closes(c), shift_exactness(c)]
    columns = [(family, "window_start", family is CUMULATE, False) for family in TVF_FAMILIES] + \
        [(family, "window_end", False, False) for family in TVF_FAMILIES] + \
        [(CUMULATE, "window_start", False, True)]
    for family, column, longest_only, one_way in columns:
        lemma = window_column_equivalence(family, RISINGWAVE, column, longest_only=longest_only,
                                          one_way=one_way)
        found += [lemma, *(window_column_equivalence(family, c, column, longest_only=longest_only,
                                                     one_way=one_way, lemma=lemma)
                           for c in (SPARK, FLINK))]
    for family in FAMILIES:
        found += [flink_is_risingwave_shifted(family), rules_differ_exactly(family),
                  rules_disagree_somewhere(family)]
    found += [late_is_shifted(SPARK, 1, RISINGWAVE), late_is_shifted(FLINK, 0, SPARK)]
    for family in TVF_FAMILIES:
        found.append(not_late_is_accepted(family))
        found += [window_watermark_monotonicity(family, c, derive) for c in ALL_CONVENTIONS
                  for derive in (window_start_watermark, window_end_watermark)]
    for c in ALL_CONVENTIONS:
        found += [join_output_soundness(c), join_cleaning_soundness(c), union_soundness(c),
                  outer_row_soundness(c, "left"), outer_row_soundness(c, "right"),
                  point_monotonicity("interval-join", c, unmatched_row_is_final)]
    found.append(join_watermark_monotonicity())
    found += [
        watermark_monotonicity("shifted_watermark", ("delta",), lambda v: True,
                               lambda v, w: shifted_watermark(w, v["delta"])),
        watermark_monotonicity("truncated_watermark", ("unit", "offset"), lambda v: v["unit"] > 0,
                               lambda v, w: truncated_watermark(w, v["unit"], v["offset"])),
        truncation_exactness()]
    return found


def check_all(selected: list[Obligation], timeout_seconds: float = 10.0) -> list[Result]:
    """:func:`check` every obligation, each lemma once."""
    known: dict[Obligation, Result] = {}
    return [check(obligation, timeout_seconds, known) for obligation in selected]
