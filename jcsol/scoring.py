"""Scores of held-out rows under trained models: one rule for a run's final models (:meth:`jcsol.Result.score`),
the KOIL protocol's test folds (:func:`jcsol.protocols.fold_auc`) and a live learner's grid
(:meth:`jcsol.Live.predict`).

Rows are dense ``(n, d)``, or sparse: the ``(indices, values)`` arrays ``(n, k)`` of :class:`jcsol.SparseRows`. A
linear learner (one that scores by ``w·x``, :meth:`jcsol.base.Learner.score`) scores a sparse row from the weights
of its features alone, O(nnz) per model and never a dense copy of the rows; any other learner (the kernel ones
compare whole rows) scores the rows densified on the device.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from .base import Learner
from .core import scaling
from .linalg import SparseVector, densify
from .stream import SparseRows, check_fits, held_out_rows
from .xla_cpu import compile_options


def is_linear(learner: Learner) -> bool:
    """Whether ``learner`` scores by ``w·x`` (:meth:`jcsol.base.Learner.score`), so that a sparse row is scored
    at O(nnz) from the weights of its features."""
    return type(learner).score is Learner.score


def grid_scores(state, learner, rows, d: int, scaler=None) -> jax.Array:
    """``(n, G)`` scores of the rows under every model of a grid: ``learner``'s hyperparameter leaves and
    ``state``'s leaves of leading axis ``(G,)``; ``rows`` dense ``(n, d)`` or sparse ``(indices, values)``. With
    ``scaler`` (the models' features' statistics, leaves of leading axis ``(G,)``: :mod:`jcsol.core.scaling`),
    each model scores the rows as its run's last round would have scaled them."""
    if scaler is not None:
        return _scaled_grid_scores(state, scaler, learner, rows, d)
    if isinstance(rows, tuple) and is_linear(learner):  # w·x at O(nnz) per row
        return sparse_dot(rows, grid_weights(state, learner).T[rows[0]])
    if isinstance(rows, tuple):
        rows = jax.vmap(lambda i, v: densify(SparseVector(i, v), d))(*rows)
    return jax.vmap(lambda learner, state: learner.score(state, rows))(learner, state).T


def _scaled_grid_scores(state, scaler, learner, rows, d: int) -> jax.Array:
    def one_model(learner, state, scaler):
        def one_row(x):
            row = scaling.scaled(scaler, SparseVector(*x) if isinstance(x, tuple) else x)
            return densify(row, d) if isinstance(row, SparseVector) else row

        return learner.score(state, jax.vmap(one_row)(rows))

    return jax.vmap(one_model)(learner, state, scaler).T


def grid_weights(state, learner) -> jax.Array:
    """``(G, d)``: every model's weight vector."""
    return jax.vmap(lambda learner, state: learner.weights(state))(learner, state)


def sparse_dot(rows: tuple, weights: jax.Array) -> jax.Array:
    """``(n, G)`` dot products of sparse rows ``(indices, values)`` ``(n, k)`` with their features' weights
    ``(n, k, G)`` (each feature's weights over the grid side by side, as the engine lays them out on the CPU)."""
    return jnp.einsum("nk,nkg->ng", rows[1], weights)


def scoring_rows(X, dtype, n_features: int | None = None) -> tuple[np.ndarray | tuple[np.ndarray, np.ndarray], int]:
    """Held-out rows ``X`` checked as a run's rows are (:func:`jcsol.stream.held_out_rows`; none beyond
    ``dtype``, of ``n_features`` columns when given), in ``dtype``, as :func:`grid_scores` takes them (a dense
    array, or a sparse one's ``(indices, values)``), and their number of columns."""
    rows = held_out_rows(X, n_features)
    values = np.asarray(rows.values) if isinstance(rows, SparseRows) else rows
    check_fits(values, dtype)
    values = values.astype(dtype, copy=False)
    return ((np.asarray(rows.indices), values) if isinstance(rows, SparseRows) else values), rows.shape[1]


def per_run(learner, grid_shape: tuple[int, ...], n_perms: int, dtype=None):
    """``learner`` (hyperparameter leaves of ``grid_shape``, or broadcast to it) with one leaf entry per run,
    grid point by grid point, each repeated for the ``n_perms`` permutations (in ``dtype`` when given)."""
    n_grid = math.prod(grid_shape)
    leaves, treedef = jax.tree.flatten(learner)
    flat = lambda l: np.broadcast_to(np.asarray(l, dtype), grid_shape).reshape(n_grid)
    return jax.tree.unflatten(treedef, [np.repeat(flat(l), n_perms) for l in leaves])


@functools.partial(jax.jit, static_argnums=3, compiler_options=compile_options())
def run_scores(state, learner, rows, d: int, scaler=None) -> jax.Array:
    """:func:`grid_scores` compiled as jcsol's other programs are (:mod:`jcsol.xla_cpu`)."""
    return grid_scores(state, learner, rows, d, scaler)
