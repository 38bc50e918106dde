"""The GPU kernel: a chunk of rounds of every run as one Pallas kernel on Pallas' Triton backend (the chunk backend
``"kernel"`` of :mod:`jcsol.core.chunks`, its options :class:`jcsol.Kernel`).

On a GPU, XLA runs the body of a ``lax.scan`` as a few kernels launched from the host at every round, which costs
more than a first-order round's arithmetic. Here one kernel runs a whole chunk. The engine's runs are *units* (a
permutation and its block of grid points) times the unit's grid points; the kernel's programs form a grid over
(units, blocks of :attr:`jcsol.Kernel.block` grid points). A program loads its runs' states — ``(block,)``
scalars, ``(block, d)`` vectors and ``(block, d, d)`` matrices (the full covariance Σ of ACOG, AROW and the CW
family, or its square root, for ``d`` up to :data:`MATRIX_FEATURES`, spread over the registers of the program's
warps: :func:`warps`) — once, loops over the chunk's rounds, and writes them back once: every round it reads the
unit's row index, the row, its label and its cost. A matrix's products with a row are elementwise products and
sums (:func:`jcsol.linalg.matvec`), never a matrix instruction, whose float32 products a GPU may round through
TF32's 10-bit mantissas (which the cancelling covariance update cannot take). The loop takes the rounds in groups of
:attr:`jcsol.Kernel.unroll`, the next group's rows being loaded while the current group updates. The number of
rounds is an argument, so one compiled kernel serves every chunk of a run, the last, shorter one included.

Grid points and features are padded to powers of 2 (Triton's blocks): a padded grid point repeats the last
point's hyperparameters and is dropped; padded features are 0 in every row and in every matrix's padded rows
and columns, so they change no state and no score. The rows are padded once, where the engine places them
(:func:`padded_rows`), not by each chunk: a chunk that padded them would copy the whole stream at every call.

A round is the engine's own, :func:`jcsol.core.rounds.run_round` (traced under :func:`jcsol.linalg.in_gpu_kernel`,
for every run of the block at once); this module supplies only how rows and states are laid out and looped
over. A row's inner products are summed in another order than XLA's dot, so the states agree with the scan's to
float32 rounding, and a round whose score lies within that rounding of 0 can be counted on the other side.

Pallas' Triton backend is deprecated from JAX 0.11.0 on (Mosaic GPU is its successor); it is imported only when a
kernel is built, and :func:`unavailable` says why a JAX cannot build one, so that ``path="auto"`` takes the scan.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..linalg import in_gpu_kernel
from ..paths import Kernel
from .rounds import Tally, run_round

_PALLAS_TRITON = "jax.experimental.pallas.triton"


def unavailable() -> str | None:
    """Why this JAX cannot build the kernel (Pallas' Triton backend does not import), or ``None``."""
    try:
        _pallas_triton()
    except Exception as err:  # an ImportError, or whatever a later JAX raises on import
        return f"Pallas' Triton backend ({_PALLAS_TRITON}) does not import in JAX {jax.__version__}: {err}"
    return None


@functools.cache
def _pallas_triton():
    with warnings.catch_warnings():  # deprecated from JAX 0.11.0: said once, in unavailable()'s reasons, not here
        warnings.simplefilter("ignore", DeprecationWarning)
        return importlib.import_module(_PALLAS_TRITON)


#: The largest (padded) dimension of a matrix a kernel's program holds: a (128, 128) float32 Σ takes 64 registers
#: a thread over 8 warps (:func:`warps`), which the H200's 255 registers a thread hold with the loop's others.
MATRIX_FEATURES = 128


def refusal(learner, state: Callable[[], Any], *, d: int, dense_rows: bool) -> str | None:
    """Why the kernel does not run ``learner``, or ``None`` (``state()``: the shapes of one run's state, asked for
    only of a learner whose ``kernel_steps`` is true): it runs dense rows held in memory, and learners whose
    ``kernel_steps`` is true with states of scalars, vectors of length ``d`` and ``(d, d)`` matrices, these while
    ``d`` padded to a power of 2 is at most :data:`MATRIX_FEATURES`."""
    if not dense_rows:
        return "the kernel runs dense rows held in memory; these are sparse rows or a row store"
    if not learner.kernel_steps:
        return f"{learner.name}'s step is not written for the kernel (its kernel_steps is False)"
    for leaf in jax.tree.leaves(state()):
        if leaf.shape == (d, d) and padded(d) > MATRIX_FEATURES:
            return (
                f"the kernel holds a (d, d) matrix of {learner.name}'s state in registers up to d = "
                f"{MATRIX_FEATURES}, but d = {d}"
            )
        if leaf.shape not in ((), (d,), (d, d)):
            return (
                f"the kernel holds states of scalars, vectors of length d={d} and (d, d) matrices, but a leaf of "
                f"{learner.name}'s state has shape {leaf.shape}"
            )
    return None


def rounds_an_iteration(options: Kernel, state_leaves) -> int:
    """The rounds a program's loop takes an iteration: ``options.unroll`` where given; else 2 for states of
    vectors and scalars and 1 with a ``(d, d)`` matrix. The machine code for sm_90 (``python
    benchmarks/kernel_code.py --learner ACOG-I-diag,COG-II,PA-I --unroll 1,2,4,8``, Triton 3.9) waits every
    round for its row at one round an iteration; its model, fitted to the H200's measured round, gives
    ACOG-I-diag's a9a protocol 14.7, 9.2, 9.6 and 7.8 ms at 1, 2, 4 and 8 rounds an iteration (64 registers a
    thread at 2, 144 at 8, which puts the 2,420-run grid in two waves: 19.8 against 13.8 ms), COG-II and PA-I
    the same order. Two is the model's, until a device measures it."""
    if options.unroll is not None:
        return options.unroll
    return 1 if any(len(leaf.shape) == 4 for leaf in state_leaves) else 2


def warps(options: Kernel, state_leaves, d: int) -> int:
    """The warps a program runs on: ``options.num_warps`` where given; else 1 for states of vectors and scalars,
    and for a ``(d, d)`` matrix enough warps (up to 8) that it takes at most 64 registers a thread."""
    if options.num_warps is not None:
        return options.num_warps
    if not any(len(leaf.shape) == 4 for leaf in state_leaves):  # (units, grid, d, d)
        return 1
    return max(1, min(8, padded(d) ** 2 // (64 * 32)))


def padded(n: int) -> int:
    """The power of 2 at or above ``n``."""
    return 1 << max(0, (n - 1).bit_length())


def padded_rows(rows):
    """Dense rows ``(n, d)`` (a NumPy array) as :func:`kernel_chunk` reads them: features padded with zeros to the
    power of 2 at or above ``d``."""
    d = rows.shape[1]
    return rows if padded(d) == d else np.pad(rows, ((0, 0), (0, padded(d) - d)))


class _Stream(NamedTuple):
    """What every program reads: the chunk's rounds, the rows and the runs' hyperparameters."""

    n_rounds: Any  # (1,) int32
    idx: Any  # (units, L) rows of the rounds
    slots: Any  # (L,) curve points
    rows: Any  # (n, padded d)
    labels: Any  # (n,)
    costs: Any  # (n,), or None: the class weight ρ_t
    weights: Any  # (n,) multiplying each row's ρ_t, or None
    n_pos: Any  # (units,) class totals
    n_neg: Any
    hyper: list  # the leaves of (learner, objective), (units, padded grid)


class _Runs(NamedTuple):
    """What a program carries through the chunk and writes back: its input and output are one buffer."""

    state: list  # the state's leaves, (units, padded grid[, padded d[, padded d]])
    scaler: list  # the features' statistics' leaves (jcsol.core.scaling), (units, padded grid[, padded d])
    counts: Any  # (units, padded grid, 4): tp, fn, fp, tn
    curve: Any  # (units, K, padded grid, 4), or None without curve points
    mistake_cost: Any  # (units, 2, padded grid): Tally's cost and lost


def kernel_chunk(
    carry,
    learner,
    objective,
    data,
    n_pos: jax.Array,
    n_neg: jax.Array,
    idx: jax.Array,
    slots: jax.Array,
    n_rounds: jax.Array,
    *,
    d: int,
    per_unit: bool,
    options: Kernel,
    record_scores: bool,
    weights: jax.Array | None = None,
    report: str = "score",
):
    """The first ``n_rounds`` rounds of ``idx`` for every run, in one kernel: ``(carry, scores)``, as
    :func:`jcsol.core.scan.scan_chunk` returns them.

    ``carry`` is a :class:`jcsol.core.rounds.Carry`, every leaf's leading axes (units, grid points), as the engine
    carries it; ``learner`` and ``objective`` hold the grid's hyperparameters, each unit's own when ``per_unit``;
    ``data`` is ``(X, y, costs)`` with dense ``X`` of :func:`padded_rows` (``costs`` ``None``: the class weight
    ``ρ_t``); ``idx`` ``(units, L)`` the rows of the chunk's rounds, ``slots`` ``(L,)`` their curve points. The
    scores are every run's pre-update scores ``(units, grid points, L)`` when ``record_scores`` (rounds past
    ``n_rounds`` undefined), else ``(units, grid points, 0)``; ``report`` names the field of the step's
    :class:`jcsol.base.StepInfo` written in their place (``"score"`` or ``"loss"``). ``weights`` (one per row, in
    the rows' dtype, optional) multiply each row's ``ρ_t``, as :func:`jcsol.core.scan.scan_prefix`'s do.
    """
    pallas_triton = _pallas_triton()
    from jax.experimental import pallas as pl

    rows, y, costs = data
    units, n_grid = carry.counts.shape[:2]
    length, n_curve = idx.shape[1], carry.curve.shape[2]
    gp, dp = padded(n_grid), padded(d)
    block = min(options.block or gp, gp)
    if rows.shape[1] != dp:
        raise ValueError(f"the kernel reads rows of {dp} features (padded_rows), got {rows.shape[1]} for d={d}")

    def grid_padded(a):  # (units, n_grid, …) → (units, gp, …), the last grid point repeated
        extra = jnp.repeat(a[:, -1:], gp - n_grid, axis=1)
        return jnp.concatenate([a, extra], axis=1) if gp > n_grid else a

    def features_padded(a):  # (units, grid, d…) → (units, grid, dp…), zeros
        return jnp.pad(a, [(0, 0), (0, 0)] + [(0, dp - d)] * (a.ndim - 2)) if dp > d else a

    hyper, hyper_def = jax.tree.flatten((learner, objective))
    state, state_def = jax.tree.flatten(carry.state)
    scaler, scaler_def = jax.tree.flatten(carry.scaler)
    stream = _Stream(
        n_rounds=jnp.reshape(n_rounds, (1,)).astype(jnp.int32),
        idx=idx,
        slots=slots,
        rows=rows,
        labels=y,
        costs=costs,
        weights=weights,
        n_pos=n_pos,
        n_neg=n_neg,
        hyper=[grid_padded(a if per_unit else jnp.broadcast_to(a, (units, n_grid))) for a in hyper],
    )
    runs = _Runs(
        state=[grid_padded(features_padded(a)) for a in state],
        scaler=[grid_padded(features_padded(a)) for a in scaler],
        counts=grid_padded(carry.counts),
        curve=jnp.moveaxis(grid_padded(carry.curve), 1, 2) if n_curve else None,
        mistake_cost=jnp.moveaxis(grid_padded(carry.mistake_cost), 1, 2),
    )

    def whole(a):
        return pl.BlockSpec(a.shape, lambda u, j: (0,) * a.ndim)

    def of_unit(a):
        return pl.BlockSpec((1, *a.shape[1:]), lambda u, j: (u,) + (0,) * (a.ndim - 1))

    def of_runs(a, axis: int):  # the unit's block of grid points, on ``axis``
        shape = (1, *a.shape[1:axis], block, *a.shape[axis + 1 :])
        return pl.BlockSpec(shape, lambda u, j: (u,) + (0,) * (axis - 1) + (j,) + (0,) * (a.ndim - axis - 1))

    stream_specs = _Stream(
        n_rounds=whole(stream.n_rounds),
        idx=of_unit(idx),
        slots=whole(slots),
        rows=whole(rows),
        labels=whole(y),
        costs=None if costs is None else whole(costs),
        weights=None if weights is None else whole(weights),
        n_pos=of_unit(n_pos),
        n_neg=of_unit(n_neg),
        hyper=[of_runs(a, 1) for a in stream.hyper],
    )
    runs_specs = _Runs(
        state=[of_runs(a, 1) for a in runs.state],
        scaler=[of_runs(a, 1) for a in runs.scaler],
        counts=of_runs(runs.counts, 1),
        curve=None if runs.curve is None else of_runs(runs.curve, 2),
        mistake_cost=of_runs(runs.mistake_cost, 2),
    )
    scores_shape = jax.ShapeDtypeStruct((units, length, gp), y.dtype)
    runs_shape = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), runs)

    def kernel(stream_in, runs_in, runs_out, scores_out):
        # the carry is read from its input and written to its output (one buffer); the curve's points are written
        # in place, the others kept
        n = stream_in.n_rounds[0]
        learner_b, objective_b = jax.tree.unflatten(hyper_def, [r[0] for r in stream_in.hyper])

        def fetch(i):  # row i's example: (x, y_t, c_t or None, weight or None)
            cost = None if costs is None else stream_in.costs[i]
            return stream_in.rows[i, :], stream_in.labels[i], cost, None if weights is None else stream_in.weights[i]

        def one_run(learner, objective, state, tally, example):
            return run_round(learner, objective, state, tally, example, stream_in.n_pos[0], stream_in.n_neg[0])

        every_run = jax.vmap(one_run, in_axes=(0, 0, 0, 0, None))

        def one_round(t, carried, example):
            state, tally = carried
            state, tally, info = every_run(learner_b, objective_b, state, tally, example)
            if scores_out is not None:
                scores_out[0, t, :] = getattr(info, report)
            if runs_out.curve is not None:
                runs_out.curve[0, stream_in.slots[t], :, :] = tally.counts
            return state, tally

        def index(t):  # the row of round t, the last round's past the chunk
            return stream_in.idx[0, jnp.minimum(t, n - 1)]

        def groups(size: int, offset):
            """The loop over groups of ``size`` rounds from round ``offset``: each group's rows were loaded during
            the group before, its following group's indices during the one before that."""

            def group(g, loop):
                carried, examples, following = loop
                t0 = offset + g * size
                next_examples = tuple(fetch(i) for i in following)
                after = tuple(index(t0 + 2 * size + j) for j in range(size))
                for j, example in enumerate(examples):
                    carried = one_round(t0 + j, carried, example)
                return carried, next_examples, after

            def first(carried):
                examples = tuple(fetch(index(offset + j)) for j in range(size))
                return carried, examples, tuple(index(offset + size + j) for j in range(size))

            return group, first

        cost = runs_in.mistake_cost
        start = (
            jax.tree.unflatten(state_def, [r[0] for r in runs_in.state]),
            Tally(
                runs_in.counts[0],
                cost[0, 0, :],
                cost[0, 1, :],
                jax.tree.unflatten(scaler_def, [r[0] for r in runs_in.scaler]),
            ),
        )
        size = rounds_an_iteration(options, runs.state)
        with in_gpu_kernel():
            group, first = groups(size, 0)
            carried, _, _ = jax.lax.fori_loop(0, n // size, group, first(start))
            if size > 1:  # the last n mod size rounds, one a group
                group, first = groups(1, n // size * size)
                carried, _, _ = jax.lax.fori_loop(0, n % size, group, first(carried))
        state, tally = carried
        for ref, a in zip(runs_out.state, jax.tree.leaves(state)):
            ref[0] = a
        for ref, a in zip(runs_out.scaler, jax.tree.leaves(tally.scaler)):
            ref[0] = a
        runs_out.counts[0] = tally.counts
        runs_out.mistake_cost[0, 0, :], runs_out.mistake_cost[0, 1, :] = tally.cost, tally.lost

    n_stream = len(jax.tree.leaves(stream))
    interpret = options.interpret if options.interpret is not None else jax.default_backend() != "gpu"
    out_runs, scores = pl.pallas_call(
        kernel,
        out_shape=(runs_shape, scores_shape if record_scores else None),
        grid=(units, gp // block),
        in_specs=(stream_specs, runs_specs),
        out_specs=(runs_specs, of_runs(scores_shape, 2) if record_scores else None),
        input_output_aliases={n_stream + k: k for k in range(len(jax.tree.leaves(runs)))},
        compiler_params=pallas_triton.CompilerParams(
            num_warps=warps(options, runs.state, d), num_stages=options.num_stages
        ),
        interpret=interpret,
        name=f"jcsol_{learner.name.replace('-', '_')}_rounds",
    )(stream, runs)

    def unpadded(a):
        return a[(slice(None), slice(n_grid)) + (slice(d),) * (a.ndim - 2)]

    state = [unpadded(a) for a in out_runs.state]
    scaler = jax.tree.unflatten(scaler_def, [unpadded(a) for a in out_runs.scaler])
    counts = out_runs.counts[:, :n_grid]
    curve = jnp.moveaxis(out_runs.curve, 2, 1)[:, :n_grid] if n_curve else carry.curve
    mistake_cost = jnp.moveaxis(out_runs.mistake_cost, 2, 1)[:, :n_grid]
    if record_scores:
        scores = jnp.moveaxis(scores, 1, 2)[:, :n_grid]
    else:
        scores = jnp.zeros((units, n_grid, 0), y.dtype)
    return type(carry)(jax.tree.unflatten(state_def, state), counts, curve, mistake_cost, scaler), scores


def kernel_prefix(
    carry,
    learner,
    objective,
    data,
    n_pos: jax.Array,
    n_neg: jax.Array,
    idx: jax.Array,
    slots: jax.Array,
    length: jax.Array | None,
    weights: jax.Array | None = None,
    *,
    d: int,
    per_unit: bool,
    options: Kernel,
    report: str = "score",
):
    """:func:`kernel_chunk` over the first ``length`` rounds of ``idx`` (a traced scalar; ``None``: all of them)
    of a batch whose dense rows ``(n, d)`` are not yet padded (the live learner's batches and the estimator's
    steps, as :func:`jcsol.core.scan.scan_prefix` runs them on the scan): the rows are padded here, a batch's
    worth, and the values of the rounds after ``length`` are 0."""
    rows, y, costs = data
    n_rounds = idx.shape[1] if length is None else length
    carry, values = kernel_chunk(
        carry,
        learner,
        objective,
        (jnp.pad(rows, ((0, 0), (0, padded(d) - d))), y, costs),
        n_pos,
        n_neg,
        idx,
        slots,
        jnp.asarray(n_rounds, jnp.int32),
        d=d,
        per_unit=per_unit,
        options=options,
        record_scores=True,
        weights=weights,
        report=report,
    )
    return carry, jnp.where(jnp.arange(idx.shape[1]) < n_rounds, values, 0)
