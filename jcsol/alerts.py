"""Alerts: the rows a team reviews, chosen from scores by a threshold or by an online alert budget.

A fraud team runs a model one of two ways: it alerts on every score at least a **threshold**, or it has an
**alert budget**, a share of the rows it can review ("the top 1% of the scores"). Over a stream the top 1% is
only known in hindsight; :func:`budget_alerts` decides each row when it arrives, from the scores seen before it:

    score ``s_t`` raises an alert iff ``#{earlier scores > s_t} < budget × #{earlier scores}``,

the earlier scores being ``history`` (say, the scores a saved model gave while it learnt), then ``s_1, …,
s_{t−1}``. Without history the first score never alerts; over a stationary stream about ``budget`` of the rows
alert. Tied scores are never counted as greater than one another, so a run of equal top scores may all alert.

:func:`alerted` gives a :class:`jcsol.Result` whose confusion counts (and online curves) are those of the alerts
rather than of the learners' sign predictions: the measures of counts (``precision``, ``sensitivity`` — the
recall of the alerts —, ``alerts_per_catch``, …) then read what the team that reviews the alerts finds.

>>> import numpy as np
>>> from jcsol import alerts
>>> alerts.threshold_alerts([0.2, -1.0, 0.7], 0.5).tolist()
[False, False, True]
>>> alerts.budget_alerts([0.1, 0.9, 0.5, 0.95, 0.2], 0.5).tolist()
[False, True, False, True, False]
"""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import numpy as np

from .metrics import FN, FP, TN, TP
from .result import Result

__all__ = ["threshold_alerts", "budget_alerts", "alerted"]

_CHUNK = 1 << 20  # elements of the rows decided together by budget_alerts (~100 MB of work space, per worker)
_I = np.int32


def threshold_alerts(scores, threshold: float) -> np.ndarray:
    """The alerts of a score threshold: ``scores >= threshold``, a boolean array of the scores' shape.

    The comparison is exact (in float64: a float32 score is compared with the threshold as given, not with the
    threshold rounded to float32). ``ValueError`` naming each problem for scores that are not real numbers or hold
    NaN (a diverged model's: no alert is defined for them) and for a threshold that is not a real number or is
    NaN; an infinite threshold is allowed (``+inf``: no alert).

    >>> from jcsol import alerts
    >>> alerts.threshold_alerts([[0.0, 0.1], [-0.5, 2.0]], 0.0).tolist()
    [[True, True], [False, True]]
    """
    problems: list[str] = []
    values = _real_array(scores, "scores", problems)
    if not _is_real_number(threshold):
        problems.append(f"threshold must be a real number, got {threshold!r}")
    elif np.isnan(threshold):
        problems.append("threshold must be a number, got NaN")
    if values is not None:
        _no_nan(values, "scores", problems)
    _refuse("threshold_alerts", problems)
    assert values is not None
    return np.greater_equal(values, np.float64(threshold))


def budget_alerts(scores, budget: float, history=None) -> np.ndarray:
    """The alerts of an online alert budget, decided row by row without hindsight (the module's rule).

    Args:
        scores: real numbers of shape ``(..., n)``: the rounds along the last axis, any leading axes independent
            streams (runs), all decided together.
        budget: the share of the rows to alert on, in ``(0, 1)`` (``0.01``: 1%). It is taken as the decimal it is
            written as, as :func:`jcsol.metrics.precision_at_budget` takes its budget: ``budget × m`` is compared
            exactly, so ``0.07`` of 100 earlier scores is 7, not the 7.000000000000001 of the float product.
        history: optional 1-D scores given before the stream, counted as earlier scores of every stream (of
            every leading index), before ``s_1``.

    Returns:
        A boolean array of the scores' shape: whether each round raised an alert.

    The budget is an upper bound on each row's count, so early rows alert a little more often: while
    ``budget × m <= 1`` a score alerts iff no earlier one is greater (a new top score), and over ``n`` stationary
    rounds about ``budget + (ln(1/budget) + ln(n)/2)/n`` of the rows alert (0.0104 at 1% of 20,000).

    Exact for any scores: tied ones are equal, never greater than each other (``-0.0`` equals ``0.0``, infinite
    scores are ordered as any others), and the comparison with the history is NumPy's of the two dtypes. NaN is
    refused, as are a budget outside ``(0, 1)`` and a history that is not 1-D: one ``ValueError`` naming each
    problem, before any work.

    **How.** Each stream's scores are ranked (ties by time, so that an earlier equal score ranks below); the count
    of earlier greater scores is then built from the ranks' bits, highest first, as a wavelet tree counts
    inversions: at each bit the scores of a group (the same higher bits) are partitioned stably by that bit, and
    each with a 0 there counts the earlier ones of its group with a 1. A row is decided as soon as its partial
    count reaches its limit ``ceil(budget × m)`` (no alert) or can no longer reach it (alert: too few earlier
    scores left in its group), and a group keeps only its scores up to its last undecided one. ``O(n log n)``
    per stream; for a small budget, after the first bits only about the top share of the scores is still
    undecided: 220 streams of 50,000 rounds took 1.5 s on two idle CPU cores (2–3.5 s with both busy), the rows
    decided in chunks of about a million scores, one per core (up to four).

    >>> from jcsol import alerts
    >>> alerts.budget_alerts([0.3, 0.3, 0.3], 0.5).tolist()  # ties are not greater: each stays in the top half
    [False, True, True]
    >>> alerts.budget_alerts([0.3, 0.5], 0.5, history=[0.4, 0.8]).tolist()
    [False, True]
    """
    problems: list[str] = []
    values = _real_array(scores, "scores", problems)
    share = _share(budget, problems)
    past = None
    if history is not None:
        past = _real_array(history, "history", problems)
        if past is not None and past.ndim != 1:
            problems.append(f"history must be 1-D (scores given before the stream), got shape {past.shape}")
            past = None
    if values is not None:
        if values.ndim == 0:
            problems.append("scores must have the rounds along a last axis, got a single number")
        else:
            _no_nan(values, "scores", problems)
    if past is not None:
        _no_nan(past, "history", problems)
    _refuse("budget_alerts", problems)
    assert values is not None and share is not None
    n = values.shape[-1]
    streams = values.reshape(int(np.prod(values.shape[:-1], dtype=np.int64)), n)
    out = np.zeros(streams.shape, bool)
    if n == 0 or streams.shape[0] == 0:
        return out.reshape(values.shape)
    sorted_past = np.sort(past) if past is not None else None
    limits = _limits(share, 0 if past is None else len(past), n)
    rows = max(1, _CHUNK // n)

    def decide(start: int) -> None:
        part = streams[start : start + rows]
        if sorted_past is None:
            base = np.zeros(part.shape, _I)
        else:
            base = (len(sorted_past) - np.searchsorted(sorted_past, part, side="right")).astype(_I)
        out[start : start + rows] = _decide(_ranks(part), base, limits)

    starts = range(0, streams.shape[0], rows)
    workers = min(len(starts), os.cpu_count() or 1, 4)
    if workers > 1:  # NumPy releases the GIL inside its loops: the chunks run on the cores side by side
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(decide, starts))
    else:
        for start in starts:
            decide(start)
    return out.reshape(values.shape)


def alerted(result: Result, *, threshold: float | None = None, budget: float | None = None) -> Result:
    """The same runs, measured on their alerts: ``result`` with the confusion counts (and the online curves, at
    ``result.curve_t``, when it has curves) of the rows alerted by ``threshold`` (:func:`threshold_alerts`) or by
    the online ``budget`` (:func:`budget_alerts`, each run its own stream, no history) — exactly one of them —
    instead of the learners' sign predictions. A row alerted is a predicted positive.

    The alerts come from every round's pre-update score, ``result.scores`` (``jcsol.run(...,
    record_scores=True)``), and the counts from the rounds' labels, ``result.labels[result.orders]``. Every
    measure of counts then reads the alerts: ``precision`` is the precision of the alerts, ``sensitivity`` their
    recall, ``alerts_per_catch`` the alerts reviewed per positive caught, ``sum``, ``f1``, ``cost`` theirs. The
    scores, states and models are the runs' own; :attr:`~jcsol.Result.mistake_cost` is ``None`` (the example
    costs summed over the learners' mistakes do not apply to the alerts, and ``example_cost`` is then refused).

    >>> import jcsol
    >>> from jcsol import alerts
    >>> X, y = jcsol.datasets.load("german")
    >>> res = jcsol.run(jcsol.ACOG(eta=0.1), X, y, perms=2, record_scores=True)
    >>> top = alerts.alerted(res, budget=0.1)
    >>> top.measure("precision").shape, bool((top.counts[..., 0] + top.counts[..., 2] < 200).all())
    ((2,), True)
    """
    if not isinstance(result, Result):
        raise TypeError(f"alerted takes a jcsol.Result, got {type(result).__name__}")
    if (threshold is None) == (budget is None):
        given = "both" if threshold is not None else "neither"
        raise ValueError(f"alerted takes exactly one of threshold= or budget=, got {given}")
    if result.scores is None:
        raise ValueError(
            "alerted needs every round's score, and this result has none: run with record_scores=True "
            "(jcsol.run(..., record_scores=True)) to record them"
        )
    if result.labels is None:
        raise ValueError("alerted needs each round's label, and this result holds scores but no labels")
    scores = np.asarray(result.scores)
    diverged = np.isnan(scores).any(axis=-1) if np.issubdtype(scores.dtype, np.floating) else None
    if diverged is not None and diverged.any():
        where = ", ".join(str(tuple(int(i) for i in ix)) for ix in np.argwhere(diverged)[:5])
        more = f" and {int(diverged.sum()) - 5} more" if diverged.sum() > 5 else ""
        raise ValueError(
            f"alerted: the scores of run(s) {where}{more} (index grid point(s) + permutation) hold NaN — a "
            "diverged model, whose alerts are undefined; measure the other grid points (result.at(i))"
        )
    if budget is not None:
        alerts = budget_alerts(scores, budget)
    else:
        assert threshold is not None
        alerts = threshold_alerts(scores, threshold)
    positive = np.asarray(result.labels)[np.asarray(result.orders)] > 0  # (P, L), each round's label
    dtype = np.asarray(result.counts).dtype
    counts = _confusion(alerts, positive, dtype)
    curve = result.curve
    if curve is not None and result.curve_t is not None:
        curve = _curve(alerts, positive, np.asarray(result.curve_t), dtype)
    return dataclasses.replace(result, counts=counts, curve=curve, mistake_cost=None)


# -- the counts of alerts ------------------------------------------------------------------------------------


def _confusion(alerts: np.ndarray, positive: np.ndarray, dtype) -> np.ndarray:
    """``(tp, fn, fp, tn)`` of ``alerts`` ``(..., L)`` against ``positive`` (broadcast to it), ``(..., 4)``."""
    positive = np.broadcast_to(positive, alerts.shape)
    out = np.empty(alerts.shape[:-1] + (4,), dtype)
    out[..., TP] = np.count_nonzero(alerts & positive, axis=-1)
    out[..., FP] = np.count_nonzero(alerts & ~positive, axis=-1)
    out[..., FN] = np.count_nonzero(positive, axis=-1) - out[..., TP]
    out[..., TN] = alerts.shape[-1] - out[..., TP] - out[..., FP] - out[..., FN]
    return out


def _curve(alerts: np.ndarray, positive: np.ndarray, rounds: np.ndarray, dtype) -> np.ndarray:
    """The counts of the alerts after each of ``rounds`` (1-based): ``(..., K, 4)``."""
    positive = np.broadcast_to(positive, alerts.shape)
    at = rounds.astype(np.intp) - 1
    caught = np.cumsum(alerts & positive, axis=-1, dtype=dtype)[..., at]
    false = np.cumsum(alerts & ~positive, axis=-1, dtype=dtype)[..., at]
    positives = np.cumsum(positive, axis=-1, dtype=dtype)[..., at]
    out = np.empty(caught.shape + (4,), dtype)
    out[..., TP], out[..., FP] = caught, false
    out[..., FN] = positives - caught
    out[..., TN] = (at + 1).astype(dtype) - positives - false
    return out


# -- the online budget ---------------------------------------------------------------------------------------


def _limits(share: Fraction, h: int, n: int) -> np.ndarray:
    """``ceil(share × m)`` for ``m = h, …, h + n − 1`` earlier scores, exactly, as int32 (a count ``c`` is under
    the budget, ``c < share × m``, iff ``c < ceil(share × m)``)."""
    p, q = share.numerator, share.denominator
    if p * (h + n) < 2**62:
        m = np.arange(h, h + n, dtype=np.int64)
        return (-((-p * m) // q)).astype(_I)
    return np.array([-(-p * m // q) for m in range(h, h + n)], np.int64).astype(_I)


def _ranks(scores: np.ndarray) -> np.ndarray:
    """Each row's ranks ``0 … n − 1`` (int32), equal scores ranked by time (the earlier lower): one sort of
    64-bit keys, the scores' order in the high half and the position in the low half."""
    streams, n = scores.shape
    if scores.dtype.kind == "f" and scores.dtype.itemsize <= 4:
        floats = np.where(scores == 0, 0, scores).astype(np.float32)  # -0.0 and 0.0: one key
        bits = floats.view(np.int32)
        order = (bits ^ ((bits >> 31) & 0x7FFFFFFF)).astype(np.int64)  # the floats' order, as integers
        position = np.arange(n, dtype=np.int64)
    else:  # wider scores: their dense ranks (equal scores one rank) as the order
        position = np.argsort(scores, axis=-1)
        ordered = np.take_along_axis(scores, position, axis=-1)
        order = np.zeros((streams, n), np.int64)
        np.cumsum(ordered[:, 1:] != ordered[:, :-1], axis=-1, out=order[:, 1:])
    keys = (order << 32) | position
    keys.sort(axis=-1)
    return _inverse(keys & 0xFFFFFFFF)


def _inverse(by_rank: np.ndarray) -> np.ndarray:
    ranks = np.empty(by_rank.shape, _I)
    np.put_along_axis(ranks, by_rank.astype(np.intp), np.arange(by_rank.shape[-1], dtype=_I)[None, :], axis=-1)
    return ranks


def _decide(ranks: np.ndarray, base: np.ndarray, limits: np.ndarray) -> np.ndarray:
    """The alerts of streams ``(S, n)`` of ranks, ``base`` the history's scores greater than each score.

    The live elements are kept sorted by group (the stream, then the ranks' bits above the current one), in time
    order within a group. ``count`` is the earlier scores known greater, ``within`` the earlier elements of an
    element's group: the later bits can add at most ``within`` to ``count``."""
    streams, n = ranks.shape
    out = np.zeros(streams * n, bool)
    time = np.broadcast_to(np.arange(n, dtype=_I), (streams, n))
    limit = np.broadcast_to(limits, (streams, n))
    # before any bit: one group per stream, ``within`` the position in it
    alert = base + time < limit
    open_ = ~(alert | (base >= limit))
    out[:] = alert.ravel()  # final where decided; the undecided are written when they are
    last = np.where(open_.any(axis=1), n - 1 - np.argmax(open_[:, ::-1], axis=1), -1)
    top = int(n - 1).bit_length()
    keep = np.flatnonzero((time <= last[:, None]).ravel())
    index = keep.astype(_I)  # each element's flat index in out
    stream = index // n
    rank = ranks.ravel()[keep] + (stream << top)  # the stream as the highest bits: groups never mix streams
    count = base.ravel()[keep].astype(_I)
    bound = limits[index - stream * n]
    open_ = open_.ravel()[keep]
    for bit in range(top - 1, -1, -1):
        m = len(rank)
        if m == 0 or not open_.any():
            break
        group = rank >> (bit + 1)
        first = np.empty(m, bool)
        first[0] = True
        np.not_equal(group[1:], group[:-1], out=first[1:])
        starts = np.flatnonzero(first).astype(_I)
        segment = np.cumsum(first, dtype=_I) - 1
        start = starts[segment]
        one = (rank >> bit) & 1
        ones = np.cumsum(one, dtype=_I) - one
        ones_before = ones - ones[start]  # earlier elements of the group with a 1 at this bit
        zero = one == 0
        count += np.where(zero, ones_before, 0)  # those are greater than a 0 there
        zeros_before = np.arange(m, dtype=_I) - start - ones_before
        within = np.where(zero, zeros_before, ones_before)  # the position in the group split by this bit
        zeros = np.diff(np.append(starts, _I(m))) - np.add.reduceat(one, starts)
        position = start + within + np.where(zero, 0, zeros[segment])
        alert = count + within < bound
        newly = open_ & (alert | (count >= bound))
        out[index[newly]] = alert[newly]
        open_ &= ~newly
        halves = 2 * segment + one  # the new groups, by their index; a group keeps up to its last undecided
        last_open = np.full(2 * len(starts), -1, _I)
        np.maximum.at(last_open, halves[open_], within[open_])
        order = np.empty(m, np.intp)
        order[position] = np.arange(m)
        order = order[(within <= last_open[halves])[order]]
        rank, count, bound, index, open_ = rank[order], count[order], bound[order], index[order], open_[order]
    out[index[open_]] = count[open_] < bound[open_]  # every bit counted: the exact counts
    return out.reshape(streams, n)


# -- checks --------------------------------------------------------------------------------------------------


def _is_real_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _real_array(values, name: str, problems: list[str]) -> np.ndarray | None:
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as error:
        problems.append(f"{name} must be an array of real numbers ({error})")
        return None
    if array.dtype.kind not in "iuf":
        problems.append(f"{name} must be real numbers, got dtype {array.dtype}")
        return None
    return array


def _no_nan(values: np.ndarray, name: str, problems: list[str]) -> None:
    if values.dtype.kind == "f":
        nan = np.isnan(values)
        if nan.any():
            first = tuple(int(i) for i in np.argwhere(nan)[0])
            problems.append(
                f"{name} hold NaN ({int(nan.sum())} of {values.size}, the first at index {first}): a diverged "
                "model's scores, which no alert can be decided for"
            )


def _share(budget, problems: list[str]) -> Fraction | None:
    """``budget`` as the exact fraction of the decimal it is written as, in ``(0, 1)``."""
    if isinstance(budget, Fraction):
        share = budget
    elif _is_real_number(budget) and np.isfinite(budget):
        share = Fraction(str(budget))
    else:
        problems.append(f"budget must be a share in (0, 1) (0.01: 1% of the rows), got {budget!r}")
        return None
    if not 0 < share < 1:
        problems.append(f"budget must be a share in (0, 1) (0.01: 1% of the rows), got {budget!r}")
        return None
    return share


def _refuse(function: str, problems: list[str]) -> None:
    if problems:
        raise ValueError(f"{function}: " + "; ".join(problems))
