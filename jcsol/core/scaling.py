"""Online standardisation of the features, inside the round: each run scales its row ``t`` by the statistics of
rows ``1 … t−1`` of its own order (never a later row), before the learner's step, then adds row ``t`` to them.

Two definitions, by the kind of rows (``jcsol.run(..., scale="online")``):

- **dense rows** (:class:`DenseScaler`): centred and scaled, ``x̃_j = (x_j − m_j) / s_j``, with ``m_j`` and
  ``s_j² `` the running mean and population variance (``ddof = 0``) of feature ``j``; river's
  ``preprocessing.StandardScaler``, whose recurrences these are (Welford's:
  ``m ← m + (x − m)/n``, ``v ← v + ((x − m_old)(x − m_new) − v)/n``);
- **sparse rows** (:class:`SparseScaler`): scaled without centring, ``x̃_j = x_j / s_j``, so that zeros stay
  zeros and a round stays O(nnz); ``s_j²`` is the population variance of feature ``j`` over every row seen, its
  zeros included, kept from the same recurrences over the row's non-zero entries alone and the count of rows:
  with ``k_j`` non-zeros of mean ``a_j`` and variance ``b_j`` among ``n`` rows,
  ``s_j² = (k_j b_j + k_j (n − k_j) a_j² / n) / n`` (T. F. Chan, G. H. Golub, R. J. LeVeque, *Updating formulae
  and a pairwise algorithm for computing sample variances*, 1979: the pooled variance of the non-zeros and the
  ``n − k_j`` zeros). scikit-learn's ``StandardScaler(with_mean=False)`` scales sparse rows the same way.

A feature of no variance yet (every row so far equal, or no row yet: the first round's row) has nothing to be
scaled by: a value other than the mean so far scales to 0, as river's does, and a value equal to it passes as
given. So a constant feature stays the constant it is (from the second row on): the bias of
:func:`jcsol.datasets.add_bias` (``bias=True`` where rows are loaded) remains the learner's offset on scaled rows,
which centring would otherwise leave without one (river's scaler maps such a feature to 0; its logistic regression
has an intercept of its own).

The statistics are kept per run beside its state (:attr:`jcsol.core.rounds.Carry.scaler`), in the rows' dtype,
so a checkpoint, a resumed run and a saved live learner carry them. The count of rows is in that dtype too: exact
up to 2**24 rows in float32 (2**53 in float64); beyond, it stays there, and each new row weighs ``2**-24`` in the
mean and the variance: an exponential average over that horizon.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..linalg import SparseVector, Vector, add_at, densify

#: The values of ``scale=`` that :func:`jcsol.run`, :class:`jcsol.Live`, the estimator and the CLI take.
SCALES = (None, "online")


class DenseScaler(NamedTuple):
    """The running statistics of dense rows: the rows seen, each feature's mean and population variance."""

    n: jax.Array  # () rows seen, in the rows' dtype
    mean: jax.Array  # (d,)
    var: jax.Array  # (d,)


class SparseScaler(NamedTuple):
    """The running statistics of sparse rows: the rows seen, and each feature's non-zero entries — how many,
    their mean and their population variance."""

    n: jax.Array  # () rows seen, in the rows' dtype
    k: jax.Array  # (d,) non-zero entries seen
    mean: jax.Array  # (d,) of the non-zero entries
    var: jax.Array  # (d,) of the non-zero entries


def check_scale(scale) -> None:
    """Refuses a ``scale=`` that is not one of :data:`SCALES`."""
    if not (scale is None or (isinstance(scale, str) and scale in SCALES)):
        raise ValueError(f'scale must be None (no scaling) or "online" (each feature standardised), got {scale!r}')


def init_scaler(scale, d: int, dtype, sparse_rows: bool) -> DenseScaler | SparseScaler | None:
    """The statistics before the first row (``None`` without scaling)."""
    if scale is None:
        return None
    zero, zeros = jnp.zeros((), dtype), jnp.zeros(d, dtype)
    return SparseScaler(zero, zeros, zeros, zeros) if sparse_rows else DenseScaler(zero, zeros, zeros)


def scaled(scaler, x: Vector) -> Vector:
    """Row ``x`` standardised by ``scaler`` (the statistics of the rows before it); ``x`` itself without one."""
    if scaler is None:
        return x
    if isinstance(scaler, DenseScaler):
        x = densify(x, scaler.mean.shape[0])
        return _ratio(x, x - scaler.mean, scaler.var, scaler.mean)
    if isinstance(x, SparseVector):
        mean = scaler.mean[x.indices]
        var = _pooled(scaler.n, scaler.k[x.indices], mean, scaler.var[x.indices])
        return SparseVector(x.indices, _ratio(x.values, x.values, var, mean))
    return _ratio(x, x, _pooled(scaler.n, scaler.k, scaler.mean, scaler.var), scaler.mean)


def updated(scaler, x: Vector):
    """``scaler`` with row ``x`` added to its statistics."""
    if scaler is None:
        return None
    n = scaler.n + 1
    if isinstance(scaler, DenseScaler):
        x = densify(x, scaler.mean.shape[0])
        mean = scaler.mean + (x - scaler.mean) / n
        var = scaler.var + ((x - scaler.mean) * (x - mean) - scaler.var) / n
        return DenseScaler(n, mean, var)
    if isinstance(x, SparseVector):  # the non-zero entries' statistics, at their indices only: O(nnz)
        seen = (x.values != 0).astype(n.dtype)
        k = scaler.k[x.indices] + seen
        old = scaler.mean[x.indices]
        safe_k = jnp.where(k > 0, k, 1)
        mean = old + seen * (x.values - old) / safe_k
        var_old = scaler.var[x.indices]
        var = var_old + seen * ((x.values - old) * (x.values - mean) - var_old) / safe_k
        return SparseScaler(
            n,
            add_at(scaler.k, x.indices, k - scaler.k[x.indices]),
            add_at(scaler.mean, x.indices, mean - old),
            add_at(scaler.var, x.indices, var - var_old),
        )
    seen = (x != 0).astype(n.dtype)
    k = scaler.k + seen
    safe_k = jnp.where(k > 0, k, 1)
    mean = scaler.mean + seen * (x - scaler.mean) / safe_k
    var = scaler.var + seen * ((x - scaler.mean) * (x - mean) - scaler.var) / safe_k
    return SparseScaler(n, k, mean, var)


def _pooled(n, k, mean, var):
    """The population variance of ``n`` values, ``k`` of them of mean ``mean`` and variance ``var``, the others 0."""
    safe_n = jnp.where(n > 0, n, 1)
    return (k * var + k * (n - k) / safe_n * mean * mean) / safe_n


def _ratio(x, centred, var, mean):
    """``centred / √var``; where the variance is 0, ``x`` where it equals ``mean`` (a constant feature), else 0."""
    positive = var > 0
    return jnp.where(positive, centred / jnp.sqrt(jnp.where(positive, var, 1)), jnp.where(x == mean, x, 0))
