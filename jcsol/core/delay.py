"""Labels that come late: the order of a run's predictions and updates when each label is known some time after
its row.

In fraud, a chargeback confirms a payment days after it was scored (verification latency): a model serving row
``t`` has learnt only the labels known by then. With ``jcsol.run(..., delay=D)`` the label of the row at position
``i`` of a run's order is known at ``τ_i + D``, where ``τ_i`` is the row's time (``times=``; by default its
position, so that ``D`` counts rows), and it is learnt before the row at position ``a`` is scored iff ``i < a`` and
``τ_i + D <= τ_a`` — the rule of river's ``stream.simulate_qa`` (and so of its
``evaluate.progressive_val_score(..., delay=D)``): ``D`` of 0 or 1 row is the usual protocol (each label learnt
before the next row is scored), 2 leaves one row scored between a row and its label. Labels still awaited
after the last row are learnt at the end, in order, so a run's final state has learnt every row.

A run is then one *round* per label, in position order, as without delay: round ``j`` learns label ``j``, counted
by the score its row was served, then scores the rows that arrive after label ``j`` and before label ``j + 1``
(none, one or several: :func:`schedule`), each by the model then, keeping its served score in a ring of
:attr:`Schedule.awaited` slots (the rows arriving before the first label are scored by the initial model, before
the first round) — as :class:`jcsol.Live` counts an event predicted with ``predict(X, ids=...)`` and
learnt when its label comes. Every round learns exactly once, so the step is never masked (a masked step would
copy every run's state, O(d), where a sparse step is O(nnz)); a round scores up to :attr:`Schedule.inline` rows
in place, and the rare rounds where more arrive score the rest in a loop.
"""

from __future__ import annotations

import datetime
import math
import numbers
from typing import NamedTuple

import numpy as np

#: The most rows a round scores in place (each of them computed, masked, in every round).
INLINE = 4


class Schedule(NamedTuple):
    """The rows of a run with late labels scored between its labels: ``arrivals[j]`` rows, of positions ``first[j]``
    on, are scored just before label ``j`` is learnt; :attr:`awaited` is the most rows awaiting their labels at once
    (the ring of served scores)."""

    first: np.ndarray  # (L,) int64: the first position scored before each label
    arrivals: np.ndarray  # (L,) int64: how many positions are scored just before it
    awaited: int
    inline: int  # the rows a round scores in place; rounds where more arrive score the rest in a loop

    @property
    def ring(self) -> int:
        """The slots of each run's ring of served scores: one per row awaiting its label, and a last one that takes
        the scores a round computes for no row (:func:`jcsol.core.scan.arriving_scores`)."""
        return self.awaited + 1

    @property
    def scoring(self) -> tuple[int, bool]:
        """``(rows a round scores in place, whether a round after the first label scores more)``: without the loop
        no round pays for it."""
        return self.inline, bool(np.max(self.arrivals[1:], initial=0) > self.inline)

    def window(self, idx: np.ndarray, k: int, chunk: int) -> np.ndarray:
        """The rows of chunk ``k``'s rounds ``(units, chunk + awaited)``, from the runs' orders ``idx``: the rows
        whose labels it learns, then those of the positions after them it may score (after label ``j`` a round
        scores positions up to ``j + awaited``); 0 past the last position."""
        taken = idx[:, k * chunk : (k + 1) * chunk + self.awaited]
        width = min(chunk, idx.shape[1] - k * chunk) + self.awaited
        return taken if taken.shape[1] == width else np.pad(taken, ((0, 0), (0, width - taken.shape[1])))

    def slots(self, curve_slots: np.ndarray, chunk: int) -> np.ndarray:
        """Each round's ``(curve slot, learnt slot, first column, arrivals, first slot, first rows)`` ``(L, 6)``
        int32 for chunks of ``chunk`` rounds: the curve point of its position (labels are learnt in position
        order, so a curve point holds, as without delay, the counts of the rows up to its round, each counted by
        the score it was served), the ring slot of its label's served score; of the rows arriving after its label
        (and before the next), the column of the first in its chunk's :meth:`window`, how many, and the ring slot
        of the first (the next ones follow it); and, in the first round only, how many rows arrive before the
        first label (the first of the window)."""
        length = self.first.shape[0]
        position = np.arange(length)
        after_first = np.append(self.first[1:], length)  # the rows scored after label j: those before label j + 1
        after = np.append(self.arrivals[1:], 0)
        before_any = np.zeros(length, np.int64)
        before_any[:1] = self.arrivals[:1]
        return np.stack(
            [
                curve_slots,
                position % self.awaited,
                after_first - position // chunk * chunk,
                after,
                after_first % self.awaited,
                before_any,
            ],
            axis=-1,
        ).astype(np.int32)


def known_before(times: np.ndarray, delay) -> np.ndarray:
    """For each position ``a``, how many labels are learnt before its row is scored: ``#{i < a : τ_i + D <= τ_a}``,
    which is the labels of positions ``0 … n_a − 1`` since the times do not decrease."""
    length = times.shape[0]
    due = np.searchsorted(times + delay, times, side="right")
    return np.minimum(due, np.arange(length))


def schedule(length: int, delay, times: np.ndarray | None = None) -> Schedule:
    """The rounds of a run of ``length`` positions whose labels come ``delay`` after their rows (module docstring):
    ``times`` the positions' times (nondecreasing, ``delay`` in their unit), or ``None`` for positions counted in
    rows. Position ``a`` is scored in round ``n_a`` (:func:`known_before`: after the labels before it are learnt),
    which is at most ``a``, so every row is scored before its label is learnt."""
    times = np.arange(length, dtype=np.int64) if times is None else times
    known = known_before(times, delay)
    arrivals = np.bincount(known, minlength=length).astype(np.int64)
    first = np.cumsum(arrivals) - arrivals
    awaited = int(np.max(np.arange(length) - known + 1)) if length else 1
    # in place, as many rows as 99% of the rounds score (at most INLINE): a loop holds the state it reads in its
    # own buffers, a copy of it, which only the rounds scoring more rows pay
    inline = int(np.clip(np.searchsorted(np.cumsum(np.bincount(arrivals)), 0.99 * length), 1, INLINE))
    return Schedule(first, arrivals, awaited, inline)


def check_delay(delay, times, length: int, orders: np.ndarray):
    """``(delay, times)`` checked and in one unit: ``delay`` a finite number ``>= 0`` (rows, or the unit of
    ``times``; a ``datetime.timedelta`` or ``numpy.timedelta64`` with ``datetime64`` times), ``times`` one number or
    ``datetime64`` per row of the stream, not decreasing along the run's order — which must be the one order of
    every run. Returns the positions' times (``None`` for rows) and the delay in their unit."""
    if isinstance(delay, bool) or not isinstance(delay, (numbers.Real, datetime.timedelta, np.timedelta64)):
        raise TypeError(f"delay must be a number of rows (or of the unit of times), got {type(delay).__name__}")
    if times is None:
        if not isinstance(delay, numbers.Real) or not math.isfinite(delay) or delay < 0:
            raise ValueError(f"delay must be a finite number of rows >= 0, got {delay!r}")
        return None, delay
    given = np.asarray(times)
    if given.ndim != 1 or given.shape[0] != length:
        raise ValueError(f"times must hold one time per row of the stream ({length}), got shape {given.shape}")
    if orders.shape[0] != 1 and not np.all(orders == orders[0]):
        raise ValueError(
            "times fix the rows' order in time: give perms='stream' (or one order), not several permutations"
        )
    if np.issubdtype(given.dtype, np.datetime64):
        if isinstance(delay, datetime.timedelta):
            delay = np.timedelta64(delay)
        if not isinstance(delay, np.timedelta64):
            raise TypeError(
                "times are datetimes: give delay as a datetime.timedelta or numpy.timedelta64, got "
                f"{type(delay).__name__}"
            )
        if np.isnat(given).any() or np.isnat(delay):
            raise ValueError("times and delay must not be NaT")
        at = given[orders[0]].astype("datetime64[ns]").astype(np.int64)
        delay = int(np.timedelta64(delay, "ns").astype(np.int64))
    else:
        if not np.issubdtype(given.dtype, np.number) or np.issubdtype(given.dtype, np.complexfloating):
            raise TypeError(f"times must be numbers or datetime64, got {given.dtype}")
        if not isinstance(delay, numbers.Real):
            raise TypeError(f"times are numbers: give delay as a number of their unit, got {type(delay).__name__}")
        at = given[orders[0]].astype(np.float64)
        if not np.all(np.isfinite(at)):
            raise ValueError("times must be finite")
    if delay < 0 or not math.isfinite(delay):
        raise ValueError(f"delay must be finite and >= 0, got {delay!r}")
    back = np.flatnonzero(np.diff(at) < 0)
    if back.size:
        raise ValueError(
            f"times decrease along the run's order at position {int(back[0]) + 1}: a late label is known at its "
            "row's time plus the delay, so the rows must come in time order (sort them by time)"
        )
    return at, delay
