"""The leaderboard of a live learner and the online choice of the configuration it serves.

Every configuration of the grid is measured *progressively*: each event counts the prediction that
configuration made before learning from it. The board keeps, per configuration,

* ``counts``: the exact confusion counts ``(tp, fn, fp, tn)`` since the start — until a configuration has
  counted ``HALVE_AT`` (2**30) events: int32 counts would wrap at 2**31, so the counts are then halved
  (:func:`halve_when_full`), and again every 2**29 events. A measure, a ratio of counts, moves by about one over
  its class's count when they are halved: by less than 10**-6 once a class has a million events;
* ``recent``: the same counts discounted by a forgetting factor ``γ`` at every event
  (``recent ← γ·recent + e_t``), for drifting streams; with ``γ = 1`` they are ``counts`` itself, and FTL
  measures the exact integer counts (float counts would stop growing at 2**24 events of one cell);
* the last ``window`` pre-update scores and labels (a ring buffer), from which the leaderboard's AUC and
  average precision are computed exactly over that sliding window.

Two rules choose the served configuration, updated after every event:

* ``"ftl"`` — follow the leader with a switching margin: the served configuration changes to the leader of
  the progressive measure (the objective's *sum*, or minus its mean *cost*, on the ``recent`` counts; the first
  of tied leaders) only when the leader is ahead by more than ``margin`` (Kalai, Vempala, *Efficient algorithms
  for online decision problems*, JCSS 2005, analyse the follow-the-leader family; the margin is the usual
  hysteresis against switching back and forth between near-equal configurations).
* ``"hedge"`` — (only this rule keeps the weights) the exponentially weighted vote over the grid (Freund,
  Schapire, *A decision-theoretic generalization of on-line learning and an application to boosting*, JCSS
  1997): each configuration's log weight loses ``rate·ℓ_t`` per event (and is discounted by ``γ``:
  ``log w ← γ·log w − rate·ℓ_t``), with ``ℓ_t`` its cost-sensitive mistake, ``ρ_t/(1+ρ_t)`` for a missed
  positive and ``1/(1+ρ_t)`` for a false alarm, 0 for a right prediction. ``ρ_t`` is the positive's weight at
  event ``t`` under the configuration's objective, whatever the event's class (``Sum(rho="laplace")``:
  ``α_p/α_n·(n_t+1)/(p_t+1)``, the classes counted through event ``t``; :class:`jcsol.Cost`: ``c_p/c_n``), so
  the two mistakes cost ``ρ_t : 1`` and sum to 1. The served score is ``Σ_g p_g·sign(f_g)`` with ``p`` the
  normalised weights (``sign(0) = +1``).

The served stream's own confusion counts (what the users of the scores saw) are kept beside them.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..metrics import FN, FP, TN, TP, auc, average_precision
from ..objective import Cost, Objective
from ..xla_cpu import compile_options
from .arguments import count, real

RULES = ("ftl", "hedge")


class Selection(NamedTuple):
    """How the served configuration is chosen (static: part of the compiled computation)."""

    rule: str = "ftl"  # "ftl" or "hedge"
    margin: float = 0.0  # FTL: how far ahead the leader must be to be served (measure units)
    rate: float = 0.05  # Hedge: learning rate of the log weights
    forgetting: float = 1.0  # γ in (0, 1]: the discount of the recent counts and of Hedge's log weights
    window: int = 10_000  # events kept per configuration for the leaderboard's AUC

    def check(self, dtype=np.float32, most_per_call: int = 16384) -> Selection:
        """The selection with its values checked (each refusal naming the argument of :class:`jcsol.Live`) and
        made plain Python numbers: ``margin``, ``rate`` and ``forgetting`` real numbers that stay what they are in
        ``dtype`` (``rate`` times the ``most_per_call`` events of one call included), ``window`` an integer."""
        if not isinstance(self.rule, str) or self.rule not in RULES:
            raise ValueError(f"select must be one of {', '.join(map(repr, RULES))}, got {self.rule!r}")
        dtype = np.dtype(dtype)
        margin = real("margin", self.margin, dtype)
        if margin < 0:
            raise ValueError(f"margin must be >= 0, got {margin}")
        rate = real("rate", self.rate, dtype)
        if not rate > 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        with np.errstate(over="ignore"):
            if not np.isfinite(dtype.type(rate) * dtype.type(most_per_call)):
                raise ValueError(
                    f"rate={rate:g} times the {most_per_call} events of one call overflows {dtype.name}: Hedge's "
                    "log weights would be infinite; give a smaller rate"
                )
        forgetting = real("forgetting", self.forgetting, dtype)
        if not 0 < forgetting <= 1:
            raise ValueError(f"forgetting must be in (0, 1], got {forgetting}")
        if dtype.type(forgetting) == 0:
            raise ValueError(f"forgetting={forgetting:g} is 0 in {dtype.name}; give a discount in (0, 1] it can hold")
        return Selection(self.rule, margin, rate, forgetting, count("auc_window", self.window))


class Board(NamedTuple):
    """The progressive measures of every configuration and the selection state, carried from event to event."""

    counts: jax.Array  # (G, 4) int32
    recent: jax.Array  # (G, 4) float, discounted counts
    served_counts: jax.Array  # (4,) int32, the served predictions' counts
    served_recent: jax.Array  # (4,) float
    served: jax.Array  # () int32, FTL's served configuration
    log_weights: jax.Array  # (G,) float, Hedge's
    window_scores: jax.Array  # (G, R) float
    window_labels: jax.Array  # (R,) int8, 0 where the slot is still empty
    slot: jax.Array  # () int32, the window's slot of the next event (the events counted, modulo R)


def init_board(n_grid: int, selection: Selection, dtype) -> Board:
    return Board(
        jnp.zeros((n_grid, 4), jnp.int32),
        jnp.zeros((n_grid, 4), dtype),
        jnp.zeros(4, jnp.int32),
        jnp.zeros(4, dtype),
        jnp.zeros((), jnp.int32),
        jnp.zeros(n_grid, dtype),
        jnp.zeros((n_grid, selection.window), dtype),
        jnp.zeros(selection.window, jnp.int8),
        jnp.zeros((), jnp.int32),
    )


def measure(objective: Objective, counts: jax.Array) -> jax.Array:
    """The selection measure of ``(…, 4)`` counts, higher is better: the *sum* (``α_p``·sensitivity +
    ``α_n``·specificity, a class not seen yet counting 0), or minus the mean *cost* per event under
    :class:`jcsol.Cost`."""
    tp, fn, fp, tn = (counts[..., i] for i in (TP, FN, FP, TN))
    if isinstance(objective, Cost):
        c_p, c_n = jnp.asarray(objective.c_p), jnp.asarray(objective.c_n)
        return -(c_p * fn + c_n * fp) / jnp.maximum(tp + fn + fp + tn, 1)
    sens = jnp.where(tp + fn > 0, tp / jnp.maximum(tp + fn, 1e-30), 0.0)
    spec = jnp.where(tn + fp > 0, tn / jnp.maximum(tn + fp, 1e-30), 0.0)
    alpha_p, _ = objective.measure_weights()
    return alpha_p * sens + (1 - alpha_p) * spec


def choice(board: Board, rule: str) -> jax.Array:
    """What :func:`served_score` reads of the board: FTL's served index, or Hedge's log weights."""
    return board.served if rule == "ftl" else board.log_weights


def served_score(chosen: jax.Array, scores: jax.Array, rule: str) -> jax.Array:
    """The served score of events with grid scores ``scores`` (``(..., G)``) under the current selection
    (``chosen``: the board's :func:`choice`)."""
    if rule == "ftl":
        return jnp.take(scores, chosen, axis=-1)
    p = jax.nn.softmax(chosen)
    return jnp.where(scores >= 0, 1.0, -1.0).astype(scores.dtype) @ p


def advance_board(
    board: Board,
    objective: Objective,
    scores: jax.Array,
    y: jax.Array,
    served: jax.Array | None,
    selection: Selection,
    length: jax.Array | None = None,
) -> Board:
    """Counts ``B`` labelled events: ``scores`` ``(B, G)`` are each configuration's predictions of them,
    ``served`` ``(B,)`` the scores served for them (``None``: the board's current choice at each event).
    ``length`` (a traced scalar): only the first ``length`` events count, the others are padding.

    The recurrences (the counts after each event, in integers; the discounted counts; Hedge's log weights; FTL's
    switching) run event by event, one short loop each (:func:`_running`), the rest for the whole batch at once.
    The counts and discounted counts thus take the same values whatever the batch split; Hedge's log weights
    are shifted to a maximum of 0 after each batch.
    """
    n = y.shape[0]
    valid = jnp.ones(n, bool) if length is None else jnp.arange(n) < length
    count = n if length is None else length
    dtype = scores.dtype
    gamma = selection.forgetting
    positive = y > 0
    one_hot = jnp.arange(4)
    log_weights = board.log_weights
    counts_each = _running_counts(board.counts, positive, scores < 0, valid)  # (B, G, 4) after each event
    if gamma < 1:  # the discounted counts, below (γ = 1: the counts themselves, at the end)
        hits = ((2 * (~positive)[:, None] + (scores < 0))[..., None] == one_hot) & valid[:, None, None]
        hits = hits.astype(dtype)  # (B, G, 4)
    if selection.rule == "hedge":
        if gamma < 1:
            recent = _running(board.recent, hits, gamma, valid, every=False)
        first = counts_each[:, :1]  # (B, 1, 4): every configuration sees every class
        seen_pos, seen_neg = first[..., TP] + first[..., FN], first[..., FP] + first[..., TN]  # (B, 1)
        # ρ_t is the positive's weight whatever the event's class (the objective weighs a negative example 1)
        every = jnp.ones_like(positive[:, None])
        rho = objective.weight(every, seen_pos, seen_neg, seen_pos, seen_neg).astype(dtype)  # (B, G)
        wrong = positive[:, None] == (scores < 0)
        loss = jnp.where(wrong, jnp.where(positive[:, None], rho, 1.0) / (1.0 + rho), 0.0)
        log_w = _running(board.log_weights, -selection.rate * loss, gamma, valid)  # after each event
        log_weights = log_w[-1] - log_w[-1].max()
        chosen = board.served
        if served is None:
            p = jax.nn.softmax(jnp.concatenate([board.log_weights[None], log_w[:-1]]), axis=-1)
            served = jnp.sum(jnp.where(scores >= 0, 1.0, -1.0).astype(dtype) * p, axis=-1)
    else:
        if gamma < 1:
            recent_each = _running(board.recent, hits, gamma, valid)
            recent = recent_each[-1]
        else:  # the counts themselves, in integers (float counts stop growing by ones at 2**24)
            recent_each = counts_each
        quality = measure(objective, recent_each)  # (B, G)
        leader = jnp.argmax(quality, axis=-1)

        def switch(current, inputs):
            q, best, counted = inputs
            ahead = counted & (q[best] > q[current] + selection.margin)
            return jnp.where(ahead, best, current).astype(jnp.int32), current

        chosen, before = jax.lax.scan(switch, board.served, (quality, leader, valid))
        if served is None:
            served = jnp.take_along_axis(scores, before[:, None], axis=1)[:, 0]
    served_hits = ((2 * (~positive) + (served < 0))[:, None] == one_hot) & valid[:, None]  # (B, 4)
    window = selection.window
    if length is None:
        kept = min(n, window)
        slots = (board.slot + (n - kept) + jnp.arange(kept)) % window
        window_scores = board.window_scores.at[:, slots].set(scores[n - kept :].T, unique_indices=True)
        window_labels = board.window_labels.at[slots].set(
            jnp.where(positive[n - kept :], 1, -1).astype(jnp.int8), unique_indices=True
        )
    else:  # the last `window` counted events, each to its slot; the others to distinct slots past the end
        t = jnp.arange(n)
        slots = jnp.where(valid & (t >= length - window), (board.slot + t) % window, window + t)
        window_scores = board.window_scores.at[:, slots].set(scores.T, mode="drop", unique_indices=True)
        window_labels = board.window_labels.at[slots].set(
            jnp.where(positive, 1, -1).astype(jnp.int8), mode="drop", unique_indices=True
        )
    counts = counts_each[-1]
    served_counts = board.served_counts + served_hits.sum(0, dtype=jnp.int32)
    if gamma < 1:
        served_recent = _running(board.served_recent, served_hits.astype(dtype), gamma, valid, every=False)
    else:
        recent, served_recent = counts.astype(dtype), served_counts.astype(dtype)
    return Board(
        counts=counts,
        recent=recent,
        served_counts=served_counts,
        served_recent=served_recent,
        served=chosen,
        log_weights=log_weights,
        window_scores=window_scores,
        window_labels=window_labels,
        slot=(board.slot + count) % window,
    )


#: The counts are halved when they have counted this many events (see the module's docstring).
HALVE_AT = 2**30


def halve_when_full(carries: tuple, board: Board) -> tuple[tuple, Board]:
    """The engine carries' counts (a live learner's, which ``ρ``'s Laplace estimate reads) and the board's, halved
    when they have counted ``HALVE_AT`` events; else as they are.

    All of them count every event once, so they reach it together (the served stream's counts tell). The true
    positives, the true negatives and each class's total are halved (rounded down) and the misses are what the
    totals leave, so that every configuration keeps the same class totals (:func:`_running_counts` reads them
    off the first) and the counts their common total. Called after each batch (at most ``HALVE_AT`` + 16384
    events, far below 2**31).
    """
    full = board.served_counts.sum() >= HALVE_AT

    def halve(counts: jax.Array) -> jax.Array:
        positives, negatives = counts[..., TP] + counts[..., FN], counts[..., FP] + counts[..., TN]
        tp, tn = counts[..., TP] // 2, counts[..., TN] // 2
        cells = {TP: tp, FN: positives // 2 - tp, FP: negatives // 2 - tn, TN: tn}
        return jnp.where(full, jnp.stack([cells[c] for c in range(4)], axis=-1), counts)

    carries = tuple(carry._replace(counts=halve(carry.counts)) for carry in carries)
    return carries, board._replace(counts=halve(board.counts), served_counts=halve(board.served_counts))


def _running_counts(counts: jax.Array, positive: jax.Array, below: jax.Array, valid: jax.Array) -> jax.Array:
    """The confusion counts ``(B, G, 4)`` after each event, from ``counts`` ``(G, 4)``, for the labels
    ``positive`` ``(B,)`` and the scores below 0 ``below`` ``(B, G)``, where ``valid``: one loop sums each
    configuration's true positives and true negatives and the classes seen (the same for the whole grid); the
    misses follow."""
    n, grid = below.shape
    right = jnp.stack([positive[:, None] & ~below, ~positive[:, None] & below], axis=-1)  # (B, G, 2): TP, TN
    classes = jnp.stack([positive, ~positive], axis=-1)  # (B, 2)
    start = jnp.concatenate(
        [counts[:, jnp.array([TP, TN])].reshape(-1), counts[0, jnp.array([TP, FP])] + counts[0, jnp.array([FN, TN])]]
    )
    sums = _running(start, jnp.concatenate([right.reshape(n, -1), classes], axis=1).astype(jnp.int32), 1.0, valid)
    tp, tn = sums[:, : 2 * grid : 2], sums[:, 1 : 2 * grid : 2]
    positives, negatives = sums[:, -2:-1], sums[:, -1:]
    cells = {TP: tp, FN: positives - tp, FP: negatives - tn, TN: tn}
    return jnp.stack([cells[c] for c in range(4)], axis=-1)


def _running(
    start: jax.Array, increments: jax.Array, gamma: float, valid: jax.Array, *, every: bool = True
) -> jax.Array:
    """``v_t = γ·v_{t−1} + x_t`` over the batch (axis 0) where ``valid[t]`` (else ``v_t = v_{t−1}``),
    ``v_{−1} = start``, event by event: every ``v_t`` (``(B, …)``), or the last alone."""

    def step(v, inputs):
        x, counted = inputs
        v = jnp.where(counted, v + x if gamma == 1.0 else gamma * v + x, v)
        return v, (v if every else None)

    last, each = jax.lax.scan(step, start, (increments, valid))
    return each if every else last


@functools.partial(jax.jit, compiler_options=compile_options())
def window_measures(board: Board) -> tuple[jax.Array, jax.Array]:
    """Each configuration's AUC (ties ½; NaN while a class is missing) and average precision
    (:func:`jcsol.metrics.average_precision`; NaN while no positive is in it) over the filled slots of the
    window, in one program."""
    labels = board.window_labels
    filled = labels != 0
    auc_of = jax.vmap(lambda s: auc(s, labels, filled))
    ap_of = jax.vmap(lambda s: average_precision(s, labels, filled))
    return auc_of(board.window_scores), ap_of(board.window_scores)


def replay(objective: Objective, scores, y, selection: Selection, *, batch: int = 16384) -> Board:
    """The board after counting a stream whose every configuration's pre-update scores ``(T, G)`` are known
    (from ``Live.learn(..., return_scores=True)``): what another selection rule would have served, without
    learning again."""
    scores = np.asarray(scores)
    flat = jax.tree.map(lambda v: np.asarray(v, scores.dtype), objective)
    board = init_board(scores.shape[1], selection, scores.dtype)

    def advance(board, s, t):
        return halve_when_full((), advance_board(board, flat, s, t, None, selection))[1]

    step = jax.jit(advance, donate_argnums=0, compiler_options=compile_options())
    for a in range(0, len(y), batch):
        board = step(board, scores[a : a + batch], np.asarray(y[a : a + batch], scores.dtype))
    return board
