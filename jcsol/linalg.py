"""Vector operations a step needs, for dense rows and for sparse rows alike.

A learner that writes its step with these functions (and sets ``sparse_steps = True``) runs on
:class:`jcsol.SparseRows` at O(nnz) per round: the engine hands it each row as a :class:`SparseVector` instead
of a dense ``(d,)`` array, and nothing of size ``d`` is touched but the entries the row names.
"""

from __future__ import annotations

from typing import NamedTuple, Union

import jax
import jax.numpy as jnp


class SparseVector(NamedTuple):
    """One sparse row: ``values`` at ``indices``; padding entries have value 0 (their index is irrelevant)."""

    indices: jax.Array  # (k,) int32
    values: jax.Array   # (k,)


Vector = Union[jax.Array, SparseVector]


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
