"""The leaderboard of a live learner and the online choice of the configuration it serves.

Every configuration of the grid is measured *progressively*: each event counts the prediction that
configuration made before learning from it. The board keeps, per configuration,

* ``counts``: the exact confusion counts ``(tp, fn, fp, tn)`` since the start;
* ``recent``: the same counts discounted by a forgetting factor ``γ`` at every event
  (``recent ← γ·recent + e_t``; ``γ = 1`` keeps them equal to ``counts``), for drifting streams;
* the last ``window`` pre-update scores and labels (a ring buffer), from which the leaderboard's AUC is
  computed exactly over that sliding window.

Two rules choose the served configuration, updated after every event:

* ``"ftl"`` — follow the leader with a switching margin: the served configuration changes to the leader of
  the progressive measure (the objective's *sum*, or minus its mean *cost*, on the ``recent`` counts) only when
  the leader is ahead by more than ``margin`` (Kalai, Vempala, *Efficient algorithms for online decision
  problems*, JCSS 2005, analyse the follow-the-leader family; the margin is the usual hysteresis against
  switching back and forth between near-equal configurations).
* ``"hedge"`` — (only this rule keeps the weights) the exponentially weighted vote over the grid (Freund,
  Schapire, *A decision-theoretic generalization of on-line learning and an application to boosting*, JCSS
  1997): each configuration's log weight loses ``rate·ℓ_t`` per event (and is discounted by ``γ``), with
  ``ℓ_t`` its cost-sensitive mistake, ``ρ_t/(1+ρ_t)`` for a missed positive and ``1/(1+ρ_t)`` for a false
  alarm; the served score is ``Σ_g p_g·sign(f_g)`` with ``p`` the normalised weights (``sign(0) = +1``).

The served stream's own confusion counts (what the users of the scores saw) are kept beside them.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..metrics import FN, FP, TN, TP, auc
from ..objective import Cost, Objective

RULES = ("ftl", "hedge")


class Selection(NamedTuple):
    """How the served configuration is chosen (static: part of the compiled computation)."""

    rule: str = "ftl"  # "ftl" or "hedge"
    margin: float = 0.0  # FTL: how far ahead the leader must be to be served (measure units)
    rate: float = 0.05  # Hedge: learning rate of the log weights
    forgetting: float = 1.0  # γ in (0, 1]: the discount of the recent counts and of Hedge's log weights
    window: int = 10_000  # events kept per configuration for the leaderboard's AUC

    def check(self) -> Selection:
        if self.rule not in RULES:
            raise ValueError(f"select must be one of {', '.join(map(repr, RULES))}, got {self.rule!r}")
        if not self.margin >= 0:
            raise ValueError(f"margin must be >= 0, got {self.margin}")
        if not self.rate > 0:
            raise ValueError(f"rate must be > 0, got {self.rate}")
        if not 0 < self.forgetting <= 1:
            raise ValueError(f"forgetting must be in (0, 1], got {self.forgetting}")
        if int(self.window) < 1:
            raise ValueError(f"window must be >= 1, got {self.window}")
        return self._replace(
            margin=float(self.margin), rate=float(self.rate), forgetting=float(self.forgetting), window=int(self.window)
        )


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
    seen: jax.Array  # () int32, events counted


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
    board: Board, objective: Objective, scores: jax.Array, y: jax.Array, served: jax.Array | None, selection: Selection
) -> Board:
    """Counts ``B`` labelled events: ``scores`` ``(B, G)`` are each configuration's predictions of them,
    ``served`` ``(B,)`` the scores served for them (``None``: the board's current choice at each event).

    Everything is computed for the whole batch at once: counts as prefix sums, the discounted counts and
    Hedge's log weights as linear recurrences by a parallel prefix scan, and FTL's switching as the prefix
    compositions of each event's switching map (:func:`_follow`).
    """
    n = y.shape[0]
    dtype = scores.dtype
    gamma = selection.forgetting
    positive = y > 0
    one_hot = jnp.arange(4)
    hits = (2 * (~positive)[:, None] + (scores < 0))[..., None] == one_hot  # (B, G, 4)
    recent = _recurrence(board.recent, hits.astype(dtype), gamma)
    chosen, log_weights = board.served, board.log_weights
    if selection.rule == "hedge":
        seen_pos = board.counts[0, TP] + board.counts[0, FN] + jnp.cumsum(positive)
        seen_neg = board.counts[0, FP] + board.counts[0, TN] + jnp.cumsum(~positive)
        rho = objective.weight(
            positive[:, None], seen_pos[:, None], seen_neg[:, None], seen_pos[:, None], seen_neg[:, None]
        ).astype(dtype)  # (B, G)
        wrong = positive[:, None] == (scores < 0)
        loss = jnp.where(wrong, jnp.where(positive[:, None], rho, 1.0) / (1.0 + rho), 0.0)
        log_w = _recurrence(board.log_weights, -selection.rate * loss, gamma)  # after each event
        log_weights = log_w[-1] - log_w[-1].max()
        if served is None:
            p = jax.nn.softmax(jnp.concatenate([board.log_weights[None], log_w[:-1]]), axis=-1)
            served = jnp.sum(jnp.where(scores >= 0, 1.0, -1.0).astype(dtype) * p, axis=-1)
    else:
        before, chosen = _follow(board.served, measure(objective, recent), selection.margin)
        if served is None:
            served = jnp.take_along_axis(scores, before[:, None], axis=1)[:, 0]
    served_hits = (2 * (~positive) + (served < 0))[:, None] == one_hot  # (B, 4)
    kept = min(n, selection.window)
    slots = (board.seen + (n - kept) + jnp.arange(kept)) % selection.window
    labels = jnp.where(positive[n - kept :], 1, -1).astype(jnp.int8)
    return Board(
        counts=board.counts + hits.sum(0, dtype=jnp.int32),
        recent=recent[-1],
        served_counts=board.served_counts + served_hits.sum(0, dtype=jnp.int32),
        served_recent=_recurrence(board.served_recent, served_hits.astype(dtype), gamma)[-1],
        served=chosen,
        log_weights=log_weights,
        window_scores=board.window_scores.at[:, slots].set(scores[n - kept :].T, unique_indices=True),
        window_labels=board.window_labels.at[slots].set(labels, unique_indices=True),
        seen=board.seen + n,
    )


def _follow(served: jax.Array, quality: jax.Array, margin: float) -> tuple[jax.Array, jax.Array]:
    """FTL's served configuration before each event of a batch ``(B,)``, and after the last: after event ``t``
    the served ``c`` becomes the leader ``b_t`` of ``quality[t]`` when ``quality[t, b_t] > quality[t, c] + margin``.

    Event ``t`` maps every configuration ``c`` to its successor ``f_t(c)`` (a row of ``G`` indices); the served
    configuration after ``t`` is ``(f_t ∘ … ∘ f_1)(served)``, and the compositions of all prefixes come from one
    parallel prefix scan of ``B × G`` indices instead of ``B`` dependent steps. The same comparisons, so the
    same choices as the step-by-step rule.
    """
    leader = jnp.argmax(quality, axis=-1)  # (B,)
    lead = jnp.take_along_axis(quality, leader[:, None], axis=1)  # (B, 1)
    maps = jnp.where(lead > quality + margin, leader[:, None], jnp.arange(quality.shape[1])).astype(jnp.int32)
    prefix = jax.lax.associative_scan(lambda first, then: jnp.take_along_axis(then, first, axis=-1), maps)
    after = prefix[:, served]
    return jnp.concatenate([served[None], after[:-1]]), after[-1]


def _recurrence(start: jax.Array, increments: jax.Array, gamma: float) -> jax.Array:
    """``v_t = γ·v_{t−1} + x_t`` for every ``t`` of the batch (axis 0), ``v_{−1} = start``."""
    if gamma == 1.0:
        return start + jnp.cumsum(increments, axis=0)
    first = increments.at[0].add(gamma * start)
    decay = jnp.full(increments.shape[:1] + (1,) * (increments.ndim - 1), gamma, increments.dtype)

    def combine(a, b):
        return a[0] * b[0], b[0] * a[1] + b[1]

    return jax.lax.associative_scan(combine, (jnp.broadcast_to(decay, increments.shape), first))[1]


@jax.jit
def window_auc(board: Board) -> jax.Array:
    """Each configuration's AUC over the filled slots of the window, ties ½ (NaN while a class is missing)."""
    labels = board.window_labels
    return jax.vmap(lambda s: auc(s, labels, labels != 0))(board.window_scores)


def replay(objective: Objective, scores, y, selection: Selection, *, batch: int = 16384) -> Board:
    """The board after counting a stream whose every configuration's pre-update scores ``(T, G)`` are known
    (from ``Live.learn(..., return_scores=True)``): what another selection rule would have served, without
    learning again."""
    scores = np.asarray(scores)
    flat = jax.tree.map(lambda v: np.asarray(v, scores.dtype), objective)
    board = init_board(scores.shape[1], selection, scores.dtype)
    step = jax.jit(lambda b, s, t: advance_board(b, flat, s, t, None, selection), donate_argnums=0)
    for a in range(0, len(y), batch):
        board = step(board, scores[a : a + batch], np.asarray(y[a : a + batch], scores.dtype))
    return board
