"""The time loop inside one kernel: a chunk of rounds of every run as one Pallas call (the engine's GPU path).

On a GPU, XLA runs the body of a ``lax.scan`` as a few kernels launched from the host at every round, which costs
more than a first-order round's arithmetic. Here one Pallas kernel (its Triton backend) runs a whole chunk. The
engine's runs are *units* (a permutation and its block of grid points) times the unit's grid points; the
kernel's programs form a grid over (units, blocks of :attr:`jcsol.Kernel.block` grid points). A program loads its
runs' states — ``(block, d)`` vectors and ``(block,)`` scalars — once, loops over the chunk's rounds, and writes
them back once: every round it reads the unit's row index, the row, its label and its cost. The loop takes the
rounds in groups of :attr:`jcsol.Kernel.unroll`, the next group's rows being loaded while the current group
updates. The number of rounds is an argument, so one compiled kernel serves every chunk of a run, the last,
shorter one included.

Grid points and features are padded to powers of 2 (Triton's blocks): a padded grid point repeats the last
point's hyperparameters and is dropped; padded features are 0 in every row, so they change no state and no
score. The rows are padded once, where the engine places them (:func:`padded_rows`), not by each chunk: a chunk
that padded them would copy the whole stream at every call.

A round is the engine's: ``ρ_t`` from the objective and the counts so far, the learner's own ``step`` (traced
under :func:`jcsol.linalg.in_kernel`, for every run of the block at once), the confusion counts, the compensated
mistake cost, the curve point and the pre-update score. A row's inner products are summed in another order
than XLA's dot, so the states agree with the scan's to float32 rounding, and a round whose score lies within
that rounding of 0 can be counted on the other side.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pallas_triton

from .base import Example
from .core.rounds import compensated_add
from .linalg import in_kernel
from .paths import Kernel


def padded(n: int) -> int:
    """The power of 2 at or above ``n``."""
    return 1 << max(0, (n - 1).bit_length())


def padded_rows(rows):
    """Dense rows ``(n, d)`` (a NumPy array) as :func:`advance` reads them: features padded with zeros to the power
    of 2 at or above ``d``."""
    d = rows.shape[1]
    return rows if padded(d) == d else np.pad(rows, ((0, 0), (0, padded(d) - d)))


def advance(
    parts,
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
) -> tuple[tuple, jax.Array | None]:
    """The first ``n_rounds`` rounds of ``idx`` for every run, in one kernel.

    ``parts`` is ``(state, counts, curve, mistake_cost)``, every leaf's leading axes (units, grid points), as the
    engine carries them; ``learner`` and ``objective`` hold the grid's hyperparameters, each unit's own when
    ``per_unit``; ``data`` is ``(X, y, costs)`` with dense ``X`` of :func:`padded_rows` (``costs`` ``None``: the class
    weight ``ρ_t``);
    ``idx`` ``(units, L)`` the rows of the chunk's rounds, ``slots`` ``(L,)`` their curve points. Returns the new
    ``parts`` and, when ``record_scores``, every run's pre-update scores ``(units, grid points, L)`` (rounds past
    ``n_rounds`` undefined).
    """
    state, counts, curve, mistake_cost = parts
    rows, y, costs = data
    units, n_grid = counts.shape[:2]
    length, n_curve = idx.shape[1], curve.shape[2]
    gp, dp = padded(n_grid), padded(d)
    block = min(options.block or gp, gp)

    def grid_padded(a):  # (units, n_grid, …) → (units, gp, …), the last grid point repeated
        extra = jnp.repeat(a[:, -1:], gp - n_grid, axis=1)
        return jnp.concatenate([a, extra], axis=1) if gp > n_grid else a

    def features_padded(a):  # (…, d) → (…, dp), zeros
        return jnp.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, dp - d)]) if dp > d else a

    hyper, hyper_def = jax.tree.flatten((learner, objective))
    hyper = [grid_padded(a if per_unit else jnp.broadcast_to(a, (units, n_grid))) for a in hyper]
    leaves, state_def = jax.tree.flatten(state)
    for a in leaves:
        if a.shape[2:] not in ((), (d,)):
            raise ValueError(
                f"{learner.name}: the kernel path holds states of vectors of length d={d} and scalars, but a leaf "
                f"has shape {a.shape[2:]} per run; its kernel_steps must be False"
            )
    leaves = [grid_padded(features_padded(a) if a.ndim == 3 else a) for a in leaves]
    counts = jnp.moveaxis(grid_padded(counts), 1, 2)  # (units, 4, gp)
    curve = jnp.moveaxis(grid_padded(curve), 1, 3)  # (units, K, 4, gp)
    mistake_cost = jnp.moveaxis(grid_padded(mistake_cost), 1, 2)  # (units, 2, gp)
    n_rounds = jnp.reshape(n_rounds, (1,)).astype(jnp.int32)
    if rows.shape[1] != dp:
        raise ValueError(f"the kernel reads rows of {dp} features (padded_rows), got {rows.shape[1]} for d={d}")
    stream = (rows, y) + (() if costs is None else (costs,))

    def whole(a):
        return pl.BlockSpec(a.shape, lambda u, j: (0,) * a.ndim)

    def of_unit(a):
        return pl.BlockSpec((1, *a.shape[1:]), lambda u, j: (u,) + (0,) * (a.ndim - 1))

    def of_runs(a, axis: int):  # the unit's block of grid points, on ``axis``
        shape = (1, *a.shape[1:axis], block, *a.shape[axis + 1 :])
        return pl.BlockSpec(shape, lambda u, j: (u,) + (0,) * (axis - 1) + (j,) + (0,) * (a.ndim - axis - 1))

    carried = [*leaves, counts, *([curve] if n_curve else []), mistake_cost]
    carried_specs = [
        *(of_runs(a, 1) for a in leaves),
        of_runs(counts, 2),
        *([of_runs(curve, 3)] if n_curve else []),
        of_runs(mistake_cost, 2),
    ]
    inputs = [n_rounds, idx, slots, *stream, n_pos, n_neg, *hyper, *carried]
    in_specs = [
        whole(n_rounds),
        of_unit(idx),
        whole(slots),
        *(whole(a) for a in stream),
        of_unit(n_pos),
        of_unit(n_neg),
        *(of_runs(a, 1) for a in hyper),
        *carried_specs,
    ]
    scores_shape = jax.ShapeDtypeStruct((units, length, gp), y.dtype)
    out_shape = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in carried] + ([scores_shape] if record_scores else [])
    out_specs = carried_specs + ([of_runs(scores_shape, 2)] if record_scores else [])
    first_carried = len(inputs) - len(carried)

    def kernel(*refs):
        it: Iterator[Any] = iter(refs)
        n_ref, idx_ref, slots_ref, x_ref, y_ref = (next(it) for _ in range(5))
        cost_ref = None if costs is None else next(it)
        pos_ref, neg_ref = next(it), next(it)
        hyper_refs = [next(it) for _ in hyper]
        state_in = [next(it) for _ in leaves]
        counts_in, curve_in, cost_in = next(it), next(it) if n_curve else None, next(it)
        state_out = [next(it) for _ in leaves]
        counts_out, curve_out, cost_out = next(it), next(it) if n_curve else None, next(it)
        scores_out = next(it) if record_scores else None
        del curve_in  # the curve is written in place (its input and output are one buffer)

        n, total_pos, total_neg = n_ref[0], pos_ref[0], neg_ref[0]
        learner_b, objective_b = jax.tree.unflatten(hyper_def, [r[0] for r in hyper_refs])

        def fetch(i):  # row i, its label and its cost
            return x_ref[i, :], y_ref[i], None if cost_ref is None else cost_ref[i]

        def one_run(learner, objective, state, tp, fn, fp, tn, total, lost, x, label, example_cost):
            positive = label > 0
            rho = objective.weight(positive, tp + fn + positive, fp + tn + ~positive, total_pos, total_neg)
            rho = rho.astype(y_ref.dtype)
            cost = rho if example_cost is None else example_cost
            state, info = learner.step(state, Example(x, label, rho, cost))
            below = info.score < 0
            tp, fn = tp + (positive & ~below), fn + (positive & below)
            fp, tn = fp + (~positive & ~below), tn + (~positive & below)
            total, lost = compensated_add(total, lost, jnp.where(positive == below, cost, 0))
            return state, tp, fn, fp, tn, total, lost, info.score

        every_run = jax.vmap(one_run, in_axes=(0,) * 9 + (None,) * 3)

        def one_round(t, runs, row):
            *runs, score = every_run(learner_b, objective_b, *runs, *row)
            tp, fn, fp, tn = runs[1:5]
            if scores_out is not None:
                scores_out[0, t, :] = score
            if curve_out is not None:
                slot = slots_ref[t]
                for k, count in enumerate((tp, fn, fp, tn)):
                    curve_out[0, slot, k, :] = count
            return tuple(runs)

        def index(t):  # the row of round t, the last round's past the chunk
            return idx_ref[0, jnp.minimum(t, n - 1)]

        def groups(size: int, offset):
            """The loop over groups of ``size`` rounds from round ``offset``: each group's rows were loaded during
            the group before, its following group's indices during the one before that."""

            def group(g, carry):
                runs, rows, following = carry
                t0 = offset + g * size
                next_rows = tuple(fetch(i) for i in following)
                after = tuple(index(t0 + 2 * size + j) for j in range(size))
                for j, row in enumerate(rows):
                    runs = one_round(t0 + j, runs, row)
                return runs, next_rows, after

            def first(runs):
                rows = tuple(fetch(index(offset + j)) for j in range(size))
                return runs, rows, tuple(index(offset + size + j) for j in range(size))

            return group, first

        start = (
            jax.tree.unflatten(state_def, [r[0] for r in state_in]),
            *(counts_in[0, k, :] for k in range(4)),
            cost_in[0, 0, :],
            cost_in[0, 1, :],
        )
        size = options.unroll
        with in_kernel():
            group, first = groups(size, 0)
            runs, _, _ = jax.lax.fori_loop(0, n // size, group, first(start))
            if size > 1:  # the last n mod size rounds, one a group
                group, first = groups(1, n // size * size)
                runs, _, _ = jax.lax.fori_loop(0, n % size, group, first(runs))
        for ref, a in zip(state_out, jax.tree.leaves(runs[0])):
            ref[0] = a
        for k in range(4):
            counts_out[0, k, :] = runs[1 + k]
        cost_out[0, 0, :], cost_out[0, 1, :] = runs[5], runs[6]

    interpret = options.interpret if options.interpret is not None else jax.default_backend() != "gpu"
    outs = pl.pallas_call(
        kernel,
        out_shape=out_shape,
        grid=(units, gp // block),
        in_specs=in_specs,
        out_specs=out_specs,
        input_output_aliases={first_carried + k: k for k in range(len(carried))},
        compiler_params=pallas_triton.CompilerParams(num_warps=options.num_warps, num_stages=options.num_stages),
        interpret=interpret,
        name=f"jcsol_{learner.name.replace('-', '_')}_rounds",
    )(*inputs)

    outs = list(outs)
    new_leaves = [a[:, :n_grid, :d] if a.ndim == 3 else a[:, :n_grid] for a in outs[: len(leaves)]]
    rest = outs[len(leaves) :]
    counts = jnp.moveaxis(rest.pop(0), 2, 1)[:, :n_grid]
    if n_curve:
        curve = jnp.moveaxis(rest.pop(0), 3, 1)[:, :n_grid]
    else:
        curve = jnp.moveaxis(curve, 3, 1)[:, :n_grid]
    mistake_cost = jnp.moveaxis(rest.pop(0), 2, 1)[:, :n_grid]
    scores = jnp.moveaxis(rest.pop(0), 1, 2)[:, :n_grid] if record_scores else None
    return (jax.tree.unflatten(state_def, new_leaves), counts, curve, mistake_cost), scores
