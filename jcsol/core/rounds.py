"""A run's carry and its rounds: the arithmetic of :func:`jcsol.run` and of the live learner's batches.

A round is the protocol of J. Wang, P. Zhao, S. C. H. Hoi, *Cost-Sensitive Online Classification*, ICDM 2012:
the class weight ``ρ_t`` from the objective and the counts
so far, the learner's pre-update score and its step, the confusion counts, the curve point and the mistake cost.

Runs are laid out units first, grid points of the unit's block second: each round gathers one row per unit, shared
by the block, and the batched products over (units, block, d) states need no transposes.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..base import Example
from ..linalg import SparseVector, densify, in_rounds
from ..metrics import FN, FP, TN, TP
from .layout import configs_minor, minor_layout


class Carry(NamedTuple):
    """What a run carries from round to round (and from chunk to chunk, and into checkpoints)."""

    state: Any
    counts: jax.Array  # (4,) int32: tp, fn, fp, tn
    curve: jax.Array  # (K, 4) int32: counts after the rounds of the curve points
    mistake_cost: jax.Array  # (2,): the example costs c_t summed over the rounds predicted wrongly (add_cost)


def compensated_add(total: jax.Array, lost: jax.Array, value: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``total + value`` and what its rounding lost, ``lost`` carried beside the sum: Neumaier's compensated
    summation (A. Neumaier, *Rundungsfehleranalyse einiger Verfahren zur Summation endlicher Summen*, ZAMM 1974).
    ``total + lost`` is within a unit or two in the last place of the exact sum, whatever the number of terms;
    plainly summed in float32, a sum stops growing by terms of 1 at 2**24 and loses any term below half a unit in
    its last place. Adding 0 leaves both as they are. The scan and the kernel (:mod:`jcsol.kernel`) share it."""
    t = total + value
    lost = lost + jnp.where(jnp.abs(total) >= jnp.abs(value), (total - t) + value, (value - t) + total)
    return t, lost


def add_cost(total: jax.Array, cost: jax.Array) -> jax.Array:
    """``total`` ``(2,)``, a sum and what its rounding lost, with ``cost`` added (:func:`compensated_add`): a run's
    mistake cost stays within a unit or two in the last place of the exact sum, whatever the number of mistakes."""
    return jnp.stack(compensated_add(total[0], total[1], cost))


def total_cost(pairs):
    """The mistake costs of :func:`add_cost`'s pairs ``(…, 2)``: each sum with what its rounding lost added."""
    return pairs[..., 0] + pairs[..., 1]


def row(rows, i, d: int, sparse_steps: bool):
    """Row ``i``: dense, or as a :class:`jcsol.linalg.SparseVector` for learners whose steps cost O(nnz)."""
    if isinstance(rows, tuple):
        vector = SparseVector(rows[0][i], rows[1][i])
        return vector if sparse_steps else densify(vector, d)
    return rows[i]


def init_carry(learner, keys, *, n_grid, n_curve, d, dtype, per_unit=False):
    """Every unit's initial carry; ``learner`` holds each unit's hyperparameters when ``per_unit``, else the
    grid's, shared by every unit."""

    def one(learner, key):
        return Carry(
            learner.init(d, key, dtype),
            jnp.zeros(4, jnp.int32),
            jnp.zeros((n_curve, 4), jnp.int32),
            jnp.zeros(2, dtype),
        )

    # axis_size: a learner without float hyperparameters has no leaf to map over
    over_grid = jax.vmap(one, in_axes=(0, None), axis_size=n_grid)
    return jax.vmap(over_grid, in_axes=(0 if per_unit else None, 0))(learner, keys)


def advance(
    carry,
    learner,
    objective,
    data,
    n_pos,
    n_neg,
    idx,
    slots,
    *,
    d,
    per_unit=False,
    unroll: int = 1,
    platform: str | None = None,
):
    """Scans one chunk of rounds for every run: ``(carry, every round's pre-update score (units, grid, rounds))``.

    ``data`` is ``(X, y, costs)``, ``costs`` ``None`` when the example cost is the class weight ``ρ_t``;
    ``learner`` and ``objective`` hold each unit's hyperparameters when ``per_unit``, else the grid's, shared by
    every unit (mapped over the units, shared hyperparameters would round some products differently with the
    number of units a device holds, on some XLA versions). ``n_pos`` and ``n_neg`` are each unit's class totals
    (``Sum(rho="offline")`` reads them), ``idx`` ``(units, rounds)`` the rows of each unit's rounds, ``slots`` each
    round's curve point. ``unroll`` rounds make one iteration of the compiled scan; ``platform`` (default: JAX's
    default backend) is the one the steps are written for (:func:`jcsol.linalg.in_rounds`).
    """
    step = _every_run(learner, objective, data, n_pos, n_neg, d=d, per_unit=per_unit, platform=platform)
    with in_rounds(idx.shape[1] > 1, platform or jax.default_backend()):  # XLA removes a loop of one round
        carry, scores = jax.lax.scan(step, carry, (idx.T, slots), unroll=unroll)
    return carry, jnp.moveaxis(scores, 0, -1)


def advance_prefix(
    carry,
    learner,
    objective,
    data,
    n_pos,
    n_neg,
    idx,
    slots,
    *,
    d,
    length,
    per_unit=False,
    weights=None,
    report: str = "score",
):
    """:func:`advance` over the first ``length`` rounds of ``idx`` only (a traced scalar: the live learner's and
    the estimator's batches padded to a compiled size), in a loop that stops there: the same round, so the same
    bits as a scan of those rounds, and no round masked (a masked round would copy every run's state, O(d) where a
    sparse step is O(nnz)). The values of the rounds after ``length`` are 0.

    ``weights`` (optional, one per row, in the rows' dtype) multiply each row's ``ρ_t`` (the sample weights of
    :class:`jcsol.sklearn.OnlineClassifier`); ``report`` names the field of the step's
    :class:`jcsol.base.StepInfo` returned for every round (``"score"``, or ``"loss"``)."""
    step = _every_run(
        learner, objective, data, n_pos, n_neg, d=d, per_unit=per_unit, platform=None, weights=weights, report=report
    )

    def counted(t, both):
        carry, scores = both
        carry, score = step(carry, (idx[:, t], slots[t]))
        return carry, scores.at[t].set(score)

    units, n_grid = carry.counts.shape[:2]
    zeros = jnp.zeros((idx.shape[1], units, n_grid), data[1].dtype)
    with in_rounds(idx.shape[1] > 1, jax.default_backend()):
        carry, scores = jax.lax.fori_loop(0, length, counted, (carry, zeros))
    return carry, jnp.moveaxis(scores, 0, -1)


def _every_run(learner, objective, data, n_pos, n_neg, *, d, per_unit, platform, weights=None, report="score"):
    """Every run's round, ``(carry, (rows of the units, curve slot)) -> (carry, (units, grid) scores)``: or the
    step's ``report`` field in place of its score; ``weights``, if given, multiply each row's ``ρ_t``."""
    rows, y, costs = data
    dtype = y.dtype
    one_hot = jnp.arange(4)

    def round_(carry, learner, objective, i, slot, total_pos, total_neg):  # one run's round
        label = y[i]
        positive = label > 0
        seen_pos = carry.counts[TP] + carry.counts[FN] + positive
        seen_neg = carry.counts[FP] + carry.counts[TN] + (~positive)
        rho = objective.weight(positive, seen_pos, seen_neg, total_pos, total_neg).astype(dtype)
        if weights is not None:
            rho = rho * weights[i]
        cost = rho if costs is None else costs[i]
        state, info = learner.step(carry.state, Example(row(rows, i, d, learner.sparse_steps), label, rho, cost))
        wrong = positive == (info.score < 0)
        cell = 2 * (~positive) + (info.score < 0)  # TP=0, FN=1, FP=2, TN=3
        counts = carry.counts + (one_hot == cell)
        curve = carry.curve.at[slot].set(counts) if carry.curve.shape[0] else carry.curve
        mistake_cost = add_cost(carry.mistake_cost, jnp.where(wrong, cost, 0))
        return Carry(state, counts, curve, mistake_cost), getattr(info, report)

    over_grid = jax.vmap(round_, in_axes=(0, 0, 0, None, None, None, None))
    hyper = 0 if per_unit else None
    every_run = jax.vmap(over_grid, in_axes=(0, hyper, hyper, 0, None, 0, 0))
    laid_out = functools.partial(configs_minor, minor=minor_layout(learner, isinstance(rows, tuple), platform))

    def step(carry, inputs):
        i, slot = inputs
        carry, score = every_run(laid_out(carry), learner, objective, i, slot, n_pos, n_neg)
        return laid_out(carry), score

    return step
