"""A run's carry and its rounds: the arithmetic of :func:`jcsol.run` and of the live learner's batches.

A round is the protocol of J. Wang, P. Zhao, S. C. H. Hoi, *Cost-Sensitive Online Classification*, ICDM 2012:
the class weight ``ρ_t`` from the objective and the counts
so far, the learner's pre-update score and its step, the confusion counts, the curve point and the mistake cost.

Runs are laid out units first, grid points of the unit's block second: each round gathers one row per unit, shared
by the block, and the batched products over (units, block, d) states need no transposes.
"""

from __future__ import annotations

import functools
import math
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


def gather(data, i, weights=None):
    """The examples of rows ``i`` (any shape of indices): ``(rows, labels, costs, weights)``, each with ``i``'s
    axes first; sparse rows as ``(indices, values)``; costs and weights ``None`` where not given."""
    rows, y, costs = data
    taken = (rows[0][i], rows[1][i]) if isinstance(rows, tuple) else rows[i]
    return taken, y[i], None if costs is None else costs[i], None if weights is None else weights[i]


def as_vector(x, d: int, sparse_steps: bool):
    """A gathered row: dense, or as a :class:`jcsol.linalg.SparseVector` for learners whose steps cost O(nnz)."""
    if isinstance(x, tuple):
        vector = SparseVector(*x)
        return vector if sparse_steps else densify(vector, d)
    return x


#: The bytes of the rows :func:`advance` gathers at once, for every unit of a device: a block of rounds' rows
#: read in one gather, whose loads overlap, where a round's own row read from a stream larger than the caches
#: waits for memory at every round (µs a round then grew 1.6× from 50,000 to 400,000 rows of 123 features).
GATHER_BYTES = 1 << 21
GATHER_ROUNDS = 256


def gathered_rounds(units: int, example_bytes: int, length: int) -> int:
    """How many rounds' examples :func:`advance` gathers at once for ``units`` units: :data:`GATHER_ROUNDS`, fewer
    for wide rows or many units (:data:`GATHER_BYTES`), never more than the chunk's ``length``."""
    return max(1, min(GATHER_ROUNDS, length, GATHER_BYTES // max(1, units * example_bytes)))


def example_bytes(data) -> int:
    """The bytes of one example of ``data`` (``(rows, labels, costs)``, arrays or their shapes): its row, label and
    cost."""
    return sum(a.dtype.itemsize * math.prod(a.shape[1:]) for a in jax.tree.leaves(data))


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
    record_scores: bool = True,
):
    """Scans one chunk of rounds for every run: ``(carry, every round's pre-update score (units, grid, rounds))``.

    ``data`` is ``(X, y, costs)``, ``costs`` ``None`` when the example cost is the class weight ``ρ_t``;
    ``learner`` and ``objective`` hold each unit's hyperparameters when ``per_unit``, else the grid's, shared by
    every unit (mapped over the units, shared hyperparameters would round some products differently with the
    number of units a device holds, on some XLA versions). ``n_pos`` and ``n_neg`` are each unit's class totals
    (``Sum(rho="offline")`` reads them), ``idx`` ``(units, rounds)`` the rows of each unit's rounds, ``slots`` each
    round's curve point. ``unroll`` rounds make one iteration of the compiled scan; ``platform`` (default: JAX's
    default backend) is the one the steps are written for (:func:`jcsol.linalg.in_rounds`). Without
    ``record_scores`` the scores are ``(units, grid, 0)``: none is written.

    The examples of a block of rounds (:func:`gathered_rounds`) are gathered at once, then scanned: the same
    round, reading its row from the block.
    """
    every_run = _every_run(learner, objective, n_pos, n_neg, d=d, per_unit=per_unit, platform=platform)

    def step(carry, inputs):
        carry, score = every_run(carry, inputs)
        return carry, score if record_scores else None

    units, length = idx.shape
    block = gathered_rounds(units, example_bytes(data), length)
    n_blocks, rest = divmod(length, block)
    platform = platform or jax.default_backend()

    def rounds_of(carry, idx_t, slots_t):  # rounds of (rounds, units) rows, gathered at once, then scanned
        with in_rounds(idx_t.shape[0] > 1, platform):  # XLA removes a loop of one round
            return jax.lax.scan(step, carry, (gather(data, idx_t), slots_t), unroll=min(unroll, idx_t.shape[0]))

    blocks_idx = idx[:, : n_blocks * block].T.reshape(n_blocks, block, units)
    blocks_slots = slots[: n_blocks * block].reshape(n_blocks, block)
    parts = []  # the scores of the whole blocks (n_blocks, block, …), then of the rest (rest, …)
    if n_blocks:
        carry, scores = jax.lax.scan(lambda c, xs: rounds_of(c, *xs), carry, (blocks_idx, blocks_slots))
        parts.append(scores)
    if rest:
        carry, last = rounds_of(carry, idx[:, n_blocks * block :].T, slots[n_blocks * block :])
        parts.append(last)
    if not record_scores:
        return carry, jnp.zeros(carry.counts.shape[:2] + (0,), data[1].dtype)
    scores = jnp.concatenate([p.reshape((-1,) + p.shape[-2:]) for p in parts])
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
    step = _every_run(learner, objective, n_pos, n_neg, d=d, per_unit=per_unit, platform=None, report=report)

    def counted(t, both):
        carry, scores = both
        carry, score = step(carry, (gather(data, idx[:, t], weights), slots[t]))
        return carry, scores.at[t].set(score)

    units, n_grid = carry.counts.shape[:2]
    zeros = jnp.zeros((idx.shape[1], units, n_grid), data[1].dtype)
    with in_rounds(idx.shape[1] > 1, jax.default_backend()):
        carry, scores = jax.lax.fori_loop(0, length, counted, (carry, zeros))
    return carry, jnp.moveaxis(scores, 0, -1)


def _every_run(learner, objective, n_pos, n_neg, *, d, per_unit, platform, report="score"):
    """Every run's round, ``(carry, (the units' examples (:func:`gather`), curve slot)) -> (carry, (units, grid)
    scores)``: or the step's ``report`` field in place of its score; an example's weight, if given, multiplies
    its ``ρ_t``."""
    one_hot = jnp.arange(4)

    def round_(carry, learner, objective, example, slot, total_pos, total_neg):  # one run's round
        x, label, example_cost, weight = example
        positive = label > 0
        seen_pos = carry.counts[TP] + carry.counts[FN] + positive
        seen_neg = carry.counts[FP] + carry.counts[TN] + (~positive)
        rho = objective.weight(positive, seen_pos, seen_neg, total_pos, total_neg).astype(label.dtype)
        if weight is not None:
            rho = rho * weight
        cost = rho if example_cost is None else example_cost
        state, info = learner.step(carry.state, Example(as_vector(x, d, learner.sparse_steps), label, rho, cost))
        wrong = positive == (info.score < 0)
        cell = 2 * (~positive) + (info.score < 0)  # TP=0, FN=1, FP=2, TN=3
        counts = carry.counts + (one_hot == cell)
        curve = carry.curve.at[slot].set(counts) if carry.curve.shape[0] else carry.curve
        mistake_cost = add_cost(carry.mistake_cost, jnp.where(wrong, cost, 0))
        return Carry(state, counts, curve, mistake_cost), getattr(info, report)

    over_grid = jax.vmap(round_, in_axes=(0, 0, 0, None, None, None, None))
    hyper = 0 if per_unit else None
    every_run = jax.vmap(over_grid, in_axes=(0, hyper, hyper, 0, None, 0, 0))

    def step(carry, inputs):
        examples, slot = inputs
        laid_out = functools.partial(
            configs_minor, minor=minor_layout(learner, isinstance(examples[0], tuple), platform)
        )
        carry, score = every_run(laid_out(carry), learner, objective, examples, slot, n_pos, n_neg)
        return laid_out(carry), score

    return step
