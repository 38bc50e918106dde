"""Kernels for the kernel learners (KOIL, KOIL-MKL, NORMA, RBP, Forgetron, Projectron).

A kernel is described by a static *kind* and float parameters that are pytree leaves of the learner that uses
it (so that a learner whose ``sigma`` is an array is a grid over σ):

* ``"gaussian"``: ``k(x, x') = exp(−‖x − x'‖² / (2σ²))`` (J. Hu et al., *Kernelized Online Imbalanced
  Learning*, the KOIL thesis, §4.4), the default;
* ``"polynomial"``: ``k(x, x') = (x·x' + c)^p`` with integer degree ``p`` (static) and offset ``c``
  (``c = 0`` in the thesis, §4.4: ``(xᵢᵀxⱼ)^p``);
* ``"linear"``: ``k(x, x') = x·x'``.

The squared distance of the Gaussian kernel is summed from the differences ``x − x'`` (see :func:`_sq_dist`).

:func:`pool_kernel` evaluates a whole *pool* of kernels of mixed kinds at once (KOIL-MKL): each pool member is
given by numbers (a Gaussian flag, σ, a degree), so a computation vmapped over the pool runs one program.
:func:`mkl_pool` is the pool of the thesis, §4.4: 3 polynomial kernels of degree 1, 2, 3 and 13 Gaussian kernels with
``σ = 2^-6, …, 2^6``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..base import concrete_values, normal_row_scales

KINDS = ("gaussian", "polynomial", "linear")
MAX_POOL_DEGREE = 5


def _sq_dist(A: jax.Array, B: jax.Array) -> jax.Array:
    """``(n, m)`` squared Euclidean distances between the rows of ``A (n, d)`` and ``B (m, d)``.

    Summed from the differences ``a − b``, not as ``‖a‖² + ‖b‖² − 2a·b``: that matrix-product form is about twice
    as fast on CPU, but its float32 cancellation (an absolute error ~1e-7·‖a‖²) is amplified by ``1/(2σ²)``, so
    that for small σ near-duplicates get kernel values off by 1e-4 and more, and jitted and eager evaluations of
    the same step disagree.
    """
    diff = A[:, None, :] - B[None, :, :]
    return jnp.sum(diff * diff, axis=-1)


def kernel_matrix(kind: str, A: jax.Array, B: jax.Array, *, sigma=1.0, degree: int = 2, coef0=0.0) -> jax.Array:
    """``K[i, j] = k(A[i], B[j])`` for a kernel of static ``kind`` (one of :data:`KINDS`)."""
    if kind == "gaussian":
        return jnp.exp(-_sq_dist(A, B) / (2.0 * sigma * sigma))
    dot = A @ B.T
    if kind == "linear":
        return dot
    if kind == "polynomial":
        return (dot + coef0) ** int(degree)
    raise ValueError(f"unknown kernel kind {kind!r}; choose from {', '.join(KINDS)}")


def kernel_norm_scales(kind: str, sigma, degree: int, dtype) -> tuple[float, float]:
    """:meth:`jcsol.base.Learner.row_norm_scales` of a learner on the kernel ``kind`` of
    this module (σ the learner's, an array for a grid): the range of a row's L2 norm ``r``.

    Gaussian: rows of norm at most ``r`` are at most ``2r`` apart, so ``‖x − x'‖²/(2σ²) <= 2r²/σ²``, however many
    entries they have. Above ``σ √(ln(1/tiny)/2)`` (about 6.6 for σ = 1 in float32) a kernel value can underflow
    to 0, below ``σ ε^(1/4)/√2`` (about 0.013) every one rounds to 1 with fewer than half its digits: rows then look
    unrelated or alike to the learner, where float64 tells them apart. L2-normalised rows (``r = 1``) are within
    it for σ from about 0.15 to 76 in float32. A grid of widths takes the range of all of them together (a
    protocol that selects σ tries widths that do not suit the rows on purpose): from the narrowest width's lower
    end to the widest's upper end. Polynomial: ``|x·x'| <= ‖x‖ ‖x'‖``, so products of ``2p`` norms
    (:func:`jcsol.base.normal_row_scales` of power ``2p``); linear: of two.
    """
    if kind == "polynomial":
        return normal_row_scales(dtype, 2 * int(degree))
    if kind != "gaussian":
        return normal_row_scales(dtype)
    info = np.finfo(dtype)
    widths = concrete_values(sigma)
    widths = np.ones(1) if widths is None else widths.ravel()
    lo = float(widths.min() * info.eps**0.25 / np.sqrt(2))
    hi = float(widths.max() * np.sqrt(np.log(1 / info.tiny) / 2))
    return lo, hi


def kernel_numpy(kind: str, A: np.ndarray, B: np.ndarray, *, sigma=1.0, degree: int = 2, coef0=0.0) -> np.ndarray:
    """The same kernel in float64 NumPy (used by the tests' references and by the benchmark)."""
    A = np.atleast_2d(np.asarray(A, np.float64))
    B = np.atleast_2d(np.asarray(B, np.float64))
    if kind == "gaussian":
        diff = A[:, None, :] - B[None, :, :]
        return np.exp(-np.sum(diff * diff, axis=-1) / (2.0 * float(sigma) ** 2))
    dot = A @ B.T
    if kind == "linear":
        return dot
    if kind == "polynomial":
        return (dot + float(coef0)) ** int(degree)
    raise ValueError(f"unknown kernel kind {kind!r}")


class PoolMember(NamedTuple):
    """One kernel of a pool, as numbers: ``gaussian`` (1.0 or 0.0), ``sigma``, integer ``degree``."""

    gaussian: jax.Array
    sigma: jax.Array
    degree: jax.Array


#: The Gaussian widths of the KOIL thesis' pool: σ = 2^-6, …, 2^6.
MKL_SIGMAS = tuple(2.0 ** np.arange(-6, 7))


def mkl_pool(sigmas=MKL_SIGMAS, degrees=(1, 2, 3)) -> tuple[tuple[str, float], ...]:
    """The pool of the KOIL thesis (§4.4) as a static tuple of ``(kind, parameter)``: polynomial degrees first,
    then σ's."""
    return tuple(("polynomial", float(p)) for p in degrees) + tuple(("gaussian", float(s)) for s in sigmas)


def pool_members(pool: tuple[tuple[str, float], ...], dtype) -> PoolMember:
    """The numeric description of a static pool, stacked along the pool axis."""
    for kind, value in pool:
        if kind not in ("gaussian", "polynomial"):
            raise ValueError(f"pool kernels are 'gaussian' or 'polynomial', got {kind!r}")
        if kind == "polynomial" and not (1 <= value <= MAX_POOL_DEGREE and float(value).is_integer()):
            raise ValueError(f"pool polynomial degrees are integers in [1, {MAX_POOL_DEGREE}], got {value}")
        if value <= 0:
            raise ValueError(f"pool kernel parameters must be > 0, got {kind} {value}")
    return PoolMember(
        gaussian=jnp.asarray([1.0 if k == "gaussian" else 0.0 for k, _ in pool], dtype),
        sigma=jnp.asarray([v if k == "gaussian" else 1.0 for k, v in pool], dtype),
        degree=jnp.asarray([int(v) if k == "polynomial" else 1 for k, v in pool], jnp.int32),
    )


def pool_kernel(member: PoolMember, A: jax.Array, B: jax.Array) -> jax.Array:
    """``K[i, j]`` for one pool member given by numbers (traced under a vmap over the pool).

    Gaussian: ``exp(−‖a − b‖²/(2σ²))``; polynomial: ``(a·b)^p`` with ``p`` selected among ``1…5``.
    """
    gauss = jnp.exp(-_sq_dist(A, B) / (2.0 * member.sigma * member.sigma))
    dot = A @ B.T
    powers = [dot]
    for _ in range(MAX_POOL_DEGREE - 1):
        powers.append(powers[-1] * dot)
    poly = jnp.select([member.degree == p for p in range(1, MAX_POOL_DEGREE + 1)], powers, dot)
    return jnp.where(member.gaussian > 0, gauss, poly)


def pool_kernel_numpy(kind: str, value: float, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """One pool kernel ``(kind, parameter)`` in float64 NumPy."""
    if kind == "gaussian":
        return kernel_numpy("gaussian", A, B, sigma=value)
    return kernel_numpy("polynomial", A, B, degree=int(value), coef0=0.0)


__all__ = [
    "KINDS",
    "kernel_matrix",
    "kernel_numpy",
    "mkl_pool",
    "pool_members",
    "pool_kernel",
    "PoolMember",
    "pool_kernel_numpy",
]
