"""Vector operations a step needs, for dense rows and for sparse rows alike.

A learner that writes its step with these functions (and sets ``sparse_steps = True``) runs on
:class:`jcsol.SparseRows` at O(nnz) per round: the engine hands it each row as a :class:`SparseVector` instead
of a dense ``(d,)`` array, and nothing of size ``d`` is touched but the entries the row names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeVar

import jax
import jax.numpy as jnp

F = TypeVar("F", bound=Callable)


class SparseVector(NamedTuple):
    """One sparse row: ``values`` at ``indices``; padding entries have value 0 (their index is irrelevant)."""

    indices: jax.Array  # (k,) int32
    values: jax.Array  # (k,)


Vector = jax.Array | SparseVector


def dot(w: jax.Array, x: Vector) -> jax.Array:
    """``w · x``."""
    if isinstance(x, SparseVector):
        return w[x.indices] @ x.values
    return w @ x


def add_scaled(w: jax.Array, coef: jax.Array, x: Vector) -> jax.Array:
    """``w + coef · x``."""
    if isinstance(x, SparseVector):
        return w.at[x.indices].add(coef * x.values)
    return w + coef * x


def squared_norm(x: Vector) -> jax.Array:
    """``‖x‖²``."""
    values = x.values if isinstance(x, SparseVector) else x
    return values @ values


def weighted_squared_norm(s: jax.Array, x: Vector) -> jax.Array:
    """``Σ_i s_i x_i²``: ``xᵀ diag(s) x``."""
    if isinstance(x, SparseVector):
        return s[x.indices] @ (x.values * x.values)
    return (s * x) @ x


def add_scaled_product(w: jax.Array, coef: jax.Array, s: jax.Array, x: Vector) -> jax.Array:
    """``w + coef · (s ∘ x)``."""
    if isinstance(x, SparseVector):
        return w.at[x.indices].add(coef * s[x.indices] * x.values)
    return w + coef * s * x


def add_scaled_square(s: jax.Array, coef: jax.Array, t: jax.Array, x: Vector) -> jax.Array:
    """``s + coef · (t ∘ x)²``."""
    if isinstance(x, SparseVector):
        v = t[x.indices] * x.values
        return s.at[x.indices].add(coef * v * v)
    v = t * x
    return s + coef * v * v


def densify(x: Vector, d: int) -> jax.Array:
    """``x`` as a dense ``(d,)`` array."""
    if isinstance(x, SparseVector):
        return jnp.zeros(d, x.values.dtype).at[x.indices].add(x.values)
    return x


def one_matrix_at_a_time(fn: F) -> F:
    """``fn`` (a dense factorisation or solve: a LAPACK call on the CPU) vmapped as a loop over the batch.

    Under ``vmap`` — the engine maps every step over grid points and permutations — each LAPACK call then gets one
    matrix (batch size 1) instead of the whole batch. jaxlib 0.10's CPU LAPACK kernels split a batch over XLA's
    intra-op thread pool and *block* a pool thread until the pieces finish; when every pool thread is running such
    a kernel — as happens when runs are laid over one CPU device per core and each device's program reaches its
    batched call — no thread is left to run the pieces, and the process waits forever (the stacks show every
    ``tf_XLAEigen`` thread in ``jax::ParallelBatchMap`` → ``BlockingCounter::Wait``). A batch of one runs inline,
    on the calling thread. Each matrix is factored by the same LAPACK routine as in a batch, so the numbers are
    the same; only the batch's own split over threads (unused anyway when the devices already take every core)
    is given up.
    """
    wrapped = jax.custom_batching.custom_vmap(fn)

    @wrapped.def_vmap
    def _loop(axis_size, in_batched, *args):
        mapped = [a for a, b in zip(args, in_batched) if b]

        def one(xs):
            it = iter(xs)
            return wrapped(*(next(it) if b else a for a, b in zip(args, in_batched)))

        out = jax.lax.map(one, mapped)
        return out, jax.tree.map(lambda _: True, out)

    return wrapped  # type: ignore[return-value]
