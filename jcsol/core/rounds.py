"""A run's carry and its round: the arithmetic of :func:`jcsol.run`, of the live learner's batches and of the
estimator's steps, whichever chunk backend loops over the rounds (:mod:`jcsol.core.chunks`).

A round is the protocol of J. Wang, P. Zhao, S. C. H. Hoi, *Cost-Sensitive Online Classification*, ICDM 2012
(:func:`run_round`): the class weight ``ρ_t`` from the objective and the counts so far, the learner's pre-update
score and its step, the confusion counts and the mistake cost; where the curve points are kept is the backend's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..base import Example, Learner
from ..linalg import SparseVector, densify
from ..metrics import FN, FP, TN, TP
from . import scaling


class Carry(NamedTuple):
    """What a run carries from round to round (and from chunk to chunk, and into checkpoints)."""

    state: Any
    counts: jax.Array  # (4,) int32: tp, fn, fp, tn
    curve: jax.Array  # (K, 4) int32: counts after the rounds of the curve points
    mistake_cost: jax.Array  # (2,): Tally's cost and lost
    scaler: Any = None  # the features' running statistics (jcsol.core.scaling), or None: rows as given
    served: Any = None  # with late labels, the scores served to the rows awaiting them (jcsol.core.delay), or None


def compensated_add(total: jax.Array, lost: jax.Array, value: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``total + value`` and what its rounding lost, ``lost`` carried beside the sum: Neumaier's compensated
    summation (A. Neumaier, *Rundungsfehleranalyse einiger Verfahren zur Summation endlicher Summen*, ZAMM 1974).
    ``total + lost`` is within a unit or two in the last place of the exact sum, whatever the number of terms;
    plainly summed in float32, a sum stops growing by terms of 1 at 2**24 and loses any term below half a unit in
    its last place. Adding 0 leaves both as they are."""
    t = total + value
    lost = lost + jnp.where(jnp.abs(total) >= jnp.abs(value), (total - t) + value, (value - t) + total)
    return t, lost


def total_cost(pairs):
    """The mistake costs of a carry's pairs ``(…, 2)``: each sum with what its rounding lost added."""
    return pairs[..., 0] + pairs[..., 1]


class Tally(NamedTuple):
    """A run's confusion counts and mistake cost, as one round updates them: the scan keeps them in a
    :class:`Carry` (``counts`` and ``mistake_cost``), a kernel in its own registers."""

    counts: jax.Array  # (4,) int32: tp, fn, fp, tn
    cost: jax.Array  # the example costs c_t summed over the rounds predicted wrongly (compensated_add) …
    lost: jax.Array  # … and what the sum's rounding lost
    scaler: Any = None  # the features' running statistics (jcsol.core.scaling), or None


def run_round(learner, objective, state, tally: Tally, example, total_pos, total_neg, *, d: int | None = None):
    """One run's round, the same in every way of running it (the scan, a kernel, the live learner's batches and
    the estimator's steps): ``(state, tally, the step's StepInfo)``.

    With ``example = (x, y_t, c_t or None, weight or None)`` and ``T_p``, ``T_n`` the run's positives and negatives
    seen so far, this one included: with ``tally.scaler`` the row is first standardised by the statistics of the
    rows before it, which then take it in (:mod:`jcsol.core.scaling`), and a sparse row (a
    :class:`jcsol.linalg.SparseVector`) is densified to ``d`` features for a learner whose steps are dense;
    ``ρ_t`` is the objective's weight of the example
    (:meth:`jcsol.objective.Objective.weight`), times the example's weight where given; the learner's step
    runs on ``Example(x, y_t, ρ_t, c_t or ρ_t)`` and scores the row with the model before its update
    (``f_t >= 0`` predicts +1); the confusion count of ``(y_t, f_t)`` grows by one, and a wrong prediction adds its
    cost to the mistake cost (:func:`compensated_add`). Wang, Zhao, Hoi, *Cost-Sensitive Online Classification*,
    ICDM 2012, Algorithm 1.

    The counts are read and written as a whole vector — masked sums and a one-hot add, no element taken out —
    which a GPU kernel language lowers (Pallas' Triton has no slice of a register block) and which the scan runs
    in fewer of XLA's CPU kernels a round than four counts apart (1.4 against 1.9 µs a round, COG-II over 44
    runs)."""
    x, label, example_cost, weight = example
    positive, rho, cost = example_weights(objective, tally.counts, label, example_cost, weight, total_pos, total_neg)
    state, info = learner.step(state, Example(learning_row(learner, tally.scaler, x, d), label, rho, cost))
    return state, tallied(tally, positive, info.score < 0, cost, x), info


def example_weights(objective, counts, label, example_cost, weight, total_pos, total_neg):
    """``(y_t > 0, ρ_t, c_t)`` of a round (:func:`run_round`): ``ρ_t`` the objective's weight of the example from the
    run's counts so far and this label, times its weight where given; ``c_t`` its cost where given, else ``ρ_t``."""
    positive = label > 0
    positive_cells = (jnp.arange(4) == TP) | (jnp.arange(4) == FN)
    seen_pos = jnp.sum(jnp.where(positive_cells, counts, 0), dtype=counts.dtype) + positive
    seen_neg = jnp.sum(jnp.where(positive_cells, 0, counts), dtype=counts.dtype) + (~positive)
    rho = objective.weight(positive, seen_pos, seen_neg, total_pos, total_neg).astype(label.dtype)
    if weight is not None:
        rho = rho * weight
    return positive, rho, rho if example_cost is None else example_cost


def learning_row(learner, scaler, x, d: int | None):
    """The row a learner's step or score takes: standardised by ``scaler`` (:func:`jcsol.core.scaling.scaled`), and
    a sparse row densified to ``d`` features for a learner whose steps are dense."""
    row: Any = scaling.scaled(scaler, x)
    if isinstance(row, SparseVector) and not learner.sparse_steps:
        if d is None:
            raise ValueError(f"run_round needs d to densify a sparse row for {learner.name}, whose steps are dense")
        row = densify(row, d)
    return row


def tallied(tally: Tally, positive, below, cost, x) -> Tally:
    """``tally`` after a round predicting ``-1`` where ``below`` (the score ``< 0``) for a row of label ``positive``
    and cost ``cost``: the confusion cell grows by one, a mistake adds its cost, and the scaler takes the row in."""
    cells = jnp.arange(4)
    cell = jnp.where(positive, jnp.where(below, FN, TP), jnp.where(below, TN, FP))
    total, lost = compensated_add(tally.cost, tally.lost, jnp.where(positive == below, cost, 0))
    return Tally(tally.counts + (cells == cell), total, lost, scaling.updated(tally.scaler, x))


def delayed_round(learner, objective, state, tally: Tally, served, example, total_pos, total_neg, *, d):
    """The learning of a round whose label came late (:mod:`jcsol.core.delay`): ``(state, tally)``.

    The example (its row, label, cost and weight, as :func:`run_round` takes them) is learnt as :func:`run_round`
    learns it — ``ρ_t`` from the labels learnt so far, the row scaled by the statistics of the rows learnt before
    it — but counted by ``served``, the score its row was given when it arrived, not by the model's score now."""
    x, label, example_cost, weight = example
    positive, rho, cost = example_weights(objective, tally.counts, label, example_cost, weight, total_pos, total_neg)
    state, _ = learner.step(state, Example(learning_row(learner, tally.scaler, x, d), label, rho, cost))
    return state, tallied(tally, positive, served < 0, cost, x)


def row_score(learner, state, row, d: int):
    """The score of one row under ``state``: ``w·x`` over a sparse row's features for a linear learner, else
    :meth:`jcsol.base.Learner.score` of the row (densified to ``d`` features where sparse)."""
    if isinstance(row, SparseVector):
        if type(learner).score is Learner.score:
            return jnp.dot(learner.weights(state)[row.indices], row.values)
        row = densify(row, d)
    return learner.score(state, row[None])[0]


def init_carry(
    learner, keys, *, n_grid, n_curve, d, dtype, per_unit=False, scale=None, sparse_rows=False, awaited: int = 0
):
    """Every unit's initial carry; ``learner`` holds each unit's hyperparameters when ``per_unit``, else the
    grid's, shared by every unit; with ``scale="online"`` each run's features' statistics of no row yet, for
    sparse rows or dense ones (:func:`jcsol.core.scaling.init_scaler`); with ``awaited`` rows awaiting their labels
    at most (late labels, :mod:`jcsol.core.delay`), room for their served scores."""

    def one(learner, key):
        return Carry(
            learner.init(d, key, dtype),
            jnp.zeros(4, jnp.int32),
            jnp.zeros((n_curve, 4), jnp.int32),
            jnp.zeros(2, dtype),
            scaling.init_scaler(scale, d, dtype, sparse_rows),
            jnp.zeros(awaited, dtype) if awaited else None,
        )

    # axis_size: a learner without float hyperparameters has no leaf to map over
    over_grid = jax.vmap(one, in_axes=(0, None), axis_size=n_grid)
    return jax.vmap(over_grid, in_axes=(0 if per_unit else None, 0))(learner, keys)
