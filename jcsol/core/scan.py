"""The scan: a chunk of rounds as one ``lax.scan`` that XLA compiles, every run's round
(:func:`jcsol.core.rounds.run_round`) vmapped inside, over units first and the unit's grid points second.

Runs are laid out units first, grid points of the unit's block second: each round gathers one row per unit, shared
by the block, and the batched products over (units, block, d) states need no transposes.

The engine's chunks (:func:`scan_chunk`) and the live learner's and the estimator's batches (:func:`scan_prefix`, the
first rounds of a batch padded to a compiled size) run here on every platform, and wherever no kernel covers the
learner (:mod:`jcsol.core.chunks`).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from .. import whole_loops
from ..linalg import SparseVector, in_rounds
from .layout import configs_minor, minor_layout
from .rounds import Carry, Tally, delayed_round, learning_row, row_score, run_round


def gather(data, i, weights=None):
    """The examples of rows ``i`` (any shape of indices): ``(rows, labels, costs, weights)``, each with ``i``'s
    axes first; sparse rows as ``(indices, values)``; costs and weights ``None`` where not given."""
    rows, y, costs = data
    taken = (rows[0][i], rows[1][i]) if isinstance(rows, tuple) else rows[i]
    return taken, y[i], None if costs is None else costs[i], None if weights is None else weights[i]


def as_vector(x):
    """A gathered row: dense as it is, or sparse ``(indices, values)`` as a :class:`jcsol.linalg.SparseVector`
    (:func:`jcsol.core.rounds.run_round` densifies it for a learner whose steps are dense)."""
    return SparseVector(*x) if isinstance(x, tuple) else x


#: The bytes of the rows :func:`scan_chunk` gathers at once, for every unit of a device: a block of rounds' rows
#: read in one gather, whose loads overlap, where a round's own row read from a stream larger than the caches
#: waits for memory at every round (µs a round then grew 1.6× from 50,000 to 400,000 rows of 123 features).
GATHER_BYTES = 1 << 21
GATHER_ROUNDS = 256


def gathered_rounds(units: int, example_bytes: int, length: int) -> int:
    """How many rounds' examples :func:`scan_chunk` gathers at once for ``units`` units: :data:`GATHER_ROUNDS`, fewer
    for wide rows or many units (:data:`GATHER_BYTES`), never more than the chunk's ``length``."""
    return max(1, min(GATHER_ROUNDS, length, GATHER_BYTES // max(1, units * example_bytes)))


def example_bytes(data) -> int:
    """The bytes of one example of ``data`` (``(rows, labels, costs)``, arrays or their shapes): its row, label and
    cost."""
    return sum(a.dtype.itemsize * math.prod(a.shape[1:]) for a in jax.tree.leaves(data))


def scan_chunk(
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
    late: tuple[int, bool] = (1, True),
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

    With late labels (:mod:`jcsol.core.delay`), ``slots`` is each round's schedule ``(rounds, 6)``, ``idx`` the
    chunk's window of rows (:meth:`jcsol.core.delay.Schedule.window`: those whose labels the rounds learn, then
    those they may score), and ``late`` the schedule's :attr:`~jcsol.core.delay.Schedule.scoring`; the scores are
    those each round's label was served.
    """
    delayed = slots.ndim == 2  # late labels: each round's schedule beside its curve slot (jcsol.core.delay)
    if delayed:  # idx: the rows of the rounds' labels, then those of the positions after them they may score
        window, idx = idx, idx[:, : slots.shape[0]]
        carry = first_rows(carry, learner, data, window, slots[0, 5], d=d, per_unit=per_unit)
        every_run = _every_delayed_run(
            learner,
            objective,
            n_pos,
            n_neg,
            d=d,
            per_unit=per_unit,
            platform=platform,
            data=data,
            window=window,
            scoring=late,
        )
    else:
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

    def blocks_of(carry, blocks_idx, blocks_slots):
        return jax.lax.scan(lambda c, xs: rounds_of(c, *xs), carry, (blocks_idx, blocks_slots))

    blocks_idx = idx[:, : n_blocks * block].T.reshape(n_blocks, block, units)
    blocks_slots = slots[: n_blocks * block].reshape(n_blocks, block, *slots.shape[1:])
    parts = []  # the scores of the whole blocks (n_blocks, block, …), then of the rest (rest, …)
    if n_blocks:
        carry, scores = whole_loops.one_kernel(blocks_of, platform)(carry, blocks_idx, blocks_slots)
        parts.append(scores)
    if rest:
        rest_idx, rest_slots = idx[:, n_blocks * block :].T, slots[n_blocks * block :]
        carry, last = whole_loops.one_kernel(rounds_of, platform)(carry, rest_idx, rest_slots)
        parts.append(last)
    if not record_scores:
        return carry, jnp.zeros(carry.counts.shape[:2] + (0,), data[1].dtype)
    scores = jnp.concatenate([p.reshape((-1,) + p.shape[-2:]) for p in parts])
    return carry, jnp.moveaxis(scores, 0, -1)


def scan_prefix(
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
    """:func:`scan_chunk` over the first ``length`` rounds of ``idx`` only (a traced scalar: the live learner's and
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
        return carry, jax.lax.dynamic_update_index_in_dim(scores, score, t, 0)

    def rounds(carry, length):
        units, n_grid = carry.counts.shape[:2]
        zeros = jnp.zeros((idx.shape[1], units, n_grid), data[1].dtype)
        with in_rounds(idx.shape[1] > 1, jax.default_backend()):
            return jax.lax.fori_loop(0, length, counted, (carry, zeros))

    carry, scores = whole_loops.one_kernel(rounds, jax.default_backend())(carry, length)
    return carry, jnp.moveaxis(scores, 0, -1)


def _every_run(learner, objective, n_pos, n_neg, *, d, per_unit, platform, report="score"):
    """Every run's round, ``(carry, (the units' examples (:func:`gather`), curve slot)) -> (carry, (units, grid)
    scores)``: or the step's ``report`` field in place of its score; an example's weight, if given, multiplies
    its ``ρ_t``. The round is :func:`run_round`; the carry's curve point is written here."""

    def round_(carry, learner, objective, example, slot, total_pos, total_neg):  # one run's round
        x, label, example_cost, weight = example
        example = (as_vector(x), label, example_cost, weight)
        tally = Tally(carry.counts, carry.mistake_cost[0], carry.mistake_cost[1], carry.scaler)
        state, tally, info = run_round(learner, objective, carry.state, tally, example, total_pos, total_neg, d=d)
        mistake_cost = jnp.stack([tally.cost, tally.lost])
        return Carry(state, tally.counts, carry.curve, mistake_cost, tally.scaler), getattr(info, report)

    return _over_runs(round_, learner, objective, n_pos, n_neg, per_unit=per_unit, platform=platform)


def _every_delayed_run(learner, objective, n_pos, n_neg, *, d, per_unit, platform, data, window, scoring=(1, True)):
    """:func:`_every_run` for labels that come late (:mod:`jcsol.core.delay`): a round's slot is its schedule
    ``(curve slot, learnt slot, first column, arrivals, first slot, first rows)``; it learns its label by
    :func:`jcsol.core.rounds.delayed_round`, counted by the score its row was served (the round's score), then
    scores the rows arriving before the next label, read from the unit's ``window`` of rows (``data``'s), by the
    model and statistics after it, keeping their scores in the carry's ring (``scoring``: the first so many in the
    round, and whether any more are scored in a loop). The rows arriving before the first label are scored by the
    initial model, before the first round (:func:`first_rows`)."""

    def round_(carry, learner, objective, example, step, total_pos, total_neg):  # one run's round
        x, label, example_cost, weight = example
        tally = Tally(carry.counts, carry.mistake_cost[0], carry.mistake_cost[1], carry.scaler)
        given = carry.served[step[1]]
        example = (as_vector(x), label, example_cost, weight)
        state, tally = delayed_round(learner, objective, carry.state, tally, given, example, total_pos, total_neg, d=d)
        mistake_cost = jnp.stack([tally.cost, tally.lost])
        return Carry(state, tally.counts, carry.curve, mistake_cost, tally.scaler, carry.served), given

    learn = _over_runs(round_, learner, objective, n_pos, n_neg, per_unit=per_unit, platform=platform)
    over_grid = jax.vmap(functools.partial(_served_score, d=d), in_axes=(0, 0, 0, None))
    every_score = jax.vmap(over_grid, in_axes=(0, 0, 0 if per_unit else None, 0))

    def step(carry, inputs):
        carry, given = learn(carry, inputs)
        column, arrivals, first = inputs[1][2], inputs[1][3], inputs[1][4]

        def scores(i):  # every run's score of its unit's i-th arriving row
            return every_score(carry.state, carry.scaler, learner, gather(data, window[:, column + i])[0])

        # the arriving rows read the state the step wrote: were they scored before it, XLA would copy the whole
        # state every round to keep it for them (O(d) where a sparse step is O(nnz))
        return carry._replace(served=arriving_scores(scores, carry.served, arrivals, first, *scoring)), given

    return step


def _served_score(state, scaler, learner, x, *, d):
    """One run's score of a gathered row ``x`` (:func:`gather`), scaled by the run's statistics ``scaler``: the
    score a late label's row is served."""
    return row_score(learner, state, learning_row(learner, scaler, as_vector(x), d), d)


def first_rows(carry, learner, data, window, count, *, d, per_unit):
    """``carry`` with the scores of the ``count`` rows that arrive before the first label (the first of each unit's
    ``window``), under every run's initial model, into the first ring slots: none but in the first chunk
    (:mod:`jcsol.core.delay`). The window's first ``awaited`` rows are scored at once, those past ``count``
    dropped."""

    def one(state, served, scaler, learner, rows):
        awaited = served.shape[0] - 1
        x = gather(data, rows[:awaited])[0]
        scores = jax.vmap(lambda x: _served_score(state, scaler, learner, x, d=d))(x)
        return served.at[:awaited].set(jnp.where(jnp.arange(awaited) < count, scores, served[:awaited]))

    hyper = 0 if per_unit else None
    over_grid = jax.vmap(one, in_axes=(0, 0, 0, 0, None))
    served = jax.vmap(over_grid, in_axes=(0, 0, 0, hyper, 0))(carry.state, carry.served, carry.scaler, learner, window)
    return carry._replace(served=served)


def arriving_scores(scores, served, arrivals, first, inline: int = 1, loop: bool = True):
    """``served`` (every run's ring ``(units, grid, slots)``) with the scores ``scores(i)`` ``(units, grid)`` of
    the ``arrivals`` rows arriving after a label in its ring slots ``first …``: the first ``inline`` scored in place,
    masked past ``arrivals``, the rest (where ``loop``) in a loop, which a round enters only where more rows arrive
    (a loop holds the state it reads in its own buffers). Each slot is shared by every run: a slice written, where
    a write mapped over the runs would be a scatter (which XLA cannot emit inside one kernel)."""
    awaited = served.shape[-1] - 1  # the ring's last slot takes the scores masked out

    def write(served, i, at):
        return jax.lax.dynamic_update_slice_in_dim(served, scores(i)[..., None], at, served.ndim - 1)

    def masked(i, served):  # past the arrivals, into the last slot, which no label reads
        return write(served, i, jnp.where(i < arrivals, (first + i) % awaited, awaited))

    def scored(i, served):
        return write(served, i, (first + i) % awaited)

    for i in range(inline):
        served = masked(i, served)
    if not loop:  # no round of the run's schedule scores more
        return served
    return jax.lax.cond(
        arrivals > inline,
        lambda served: jax.lax.fori_loop(inline, arrivals, scored, served),
        lambda served: served,
        served,
    )


def _over_runs(round_, learner, objective, n_pos, n_neg, *, per_unit, platform):
    """One run's ``round_`` mapped over the units' grid points and the units, the carry laid out for the rows'
    kind (:func:`jcsol.core.layout.configs_minor`), the counts after the round written into its curve point."""
    over_grid = jax.vmap(round_, in_axes=(0, 0, 0, None, None, None, None))
    hyper = 0 if per_unit else None
    every_run = jax.vmap(over_grid, in_axes=(0, hyper, hyper, 0, None, 0, 0))

    def step(carry, inputs):
        examples, slot = inputs
        laid_out = functools.partial(
            configs_minor, minor=minor_layout(learner, isinstance(examples[0], tuple), platform)
        )
        carry, score = every_run(laid_out(carry), learner, objective, examples, slot, n_pos, n_neg)
        carry = laid_out(carry)
        if not carry.curve.shape[2]:
            return carry, score
        # the counts after the round into the round's curve point (a late label's: its schedule's first entry), one
        # slot shared by every run: a slice written, where a write mapped over the runs would be a scatter (which
        # XLA cannot emit inside one kernel)
        counts, at = carry.counts[:, :, None, :], slot if slot.ndim == 0 else slot[0]
        return carry._replace(curve=jax.lax.dynamic_update_slice_in_dim(carry.curve, counts, at, 2)), score

    return step
