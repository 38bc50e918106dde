r"""Robust cost-sensitive confidence-weighted learning: CW-CVaR, CW-nobuffer, CW-costs and CW-robust
(A. Ali, K. Collins-Thompson, *Robust Cost-Sensitive Confidence-Weighted Classification*; "the paper" below).

The family keeps CW's Gaussian ``N(μ, Σ)`` over weights and replaces CW's probabilistic constraint by a
constraint on the conditional value at risk of the *cost-weighted* margin ``c(x_t)·y_t w·x_t``. With the
margin mean ``M̄_t = y_t μ_t·x_t`` and variance ``v_t = x_tᵀΣ_t x_t`` of the model before the update, the
constraint ``CVaR_ε(c M) >= 0`` becomes (Eq. 7, with ``σ`` squared as in the paper)

.. math::

    \omega_\epsilon v - c(x_t) \bar M \le 0,

where ``ω_ε`` is the magnitude of the ε-lower-tail mean of the *standardised* margin distribution (exact for
a Gaussian margin, worst case over a family of distributions with the same mean and variance otherwise; see
:func:`omega`). The smallest KL step to a distribution meeting it is (Eqs. 9–12)

.. math::

    \lambda_t = \max(0, \psi_t), \qquad
    \psi_t = \frac{-(c + 2\omega\bar M) + \sqrt{(c + 2\omega\bar M)^2 - 8\omega(c\bar M - \omega v)}}
                  {4\omega c v},

    \mu_{t+1} = \mu_t + \lambda_t c\, y_t \Sigma_t x_t, \qquad
    \Sigma_{t+1} = \Sigma_t - \Sigma_t x_t \frac{2\lambda_t\omega}{1 + 2\lambda_t\omega v_t} x_t^\top \Sigma_t,

``μ_1 = 0``, ``Σ_1 = I``. ``ψ`` is the positive root of Eq. 11, which says that the constraint is active
at the new parameters: ``c (M̄ + λ c v) = ω v / (1 + 2λωv)``; ``λ > 0`` exactly when the constraint is
violated (``c M̄ < ω v``). :func:`cvar_lambda` computes ``ψ`` without cancellation.

Conventions of this module (where the paper is silent):

* a round with ``v_t = 0`` (a zero row) does not update (the constraint holds trivially);
* a round with ``c(x_t) = 0`` does not update by default (``zero_cost="skip"``): there the printed ``λ`` is
  undefined — it tends to infinity as ``c → 0⁺``, not to 0 (``λ ≈ 1/(√2 c)`` at ``M̄ = 0``, ``v = 1``), and the
  constraint ``0 >= ω v`` cannot be met by a finite step. ``zero_cost="limit"`` applies the ``c → 0⁺`` limit
  instead (:func:`zero_cost_limit`): a finite mean step, and (as printed) the variance along ``x`` collapsed;
* the full covariance is kept as a square root ``Σ = A Aᵀ`` (state field ``root``, as jcsol's exact CW;
  :func:`jcsol.algorithms.cw.covariance` gives Σ): ``A ← A (I − g z zᵀ)``, ``z = Aᵀx``,
  ``g = (1 − √r)/v``, ``r = 1/(1 + 2λωv)`` — exactly Eq. 10, positive semi-definite by construction;
* the diagonal covariance (the paper ran all its experiments diagonal, "as described in" Dredze, Crammer,
  Pereira, ICML 2008) projects the *precision* update ``Σ^{-1} ← Σ^{-1} + 2λω x xᵀ`` onto the diagonal, as
  that paper's approximate "Variance" algorithm does (:class:`jcsol.CWVar` with ``covariance="project"``):
  ``s_i ← s_i / (1 + 2λω s_i x_i²)``, with ``v = Σ_i s_i x_i²`` and ``μ ← μ + λ c y s∘x``;
* the example cost is ``Example.cost`` (set by :func:`jcsol.run` from ``costs=``, else the class weight
  ``ρ_t``); a hand-built example without one uses ``ρ_t``.

**The costs' role.** The constraint compares ``c·M̄`` with ``ω·v``, i.e. ``M̄ >= ω v / c``: a costlier example
must reach a *smaller* margin (measured in variance units), and the update is not invariant to the costs'
units — large costs make the constraint easy (barely correct), small costs demand a large margin. CVaR is
positively homogeneous (``CVaR_ε(cM) = c·CVaR_ε(M)``), so with the standard deviation of ``cM`` taken as
``c√v`` the cost would cancel from Eq. 4; the paper's Eq. 6 takes ``σ_x = √v`` for the cost-weighted margin, and
that is where the dependence on ``c`` comes from. This module implements the paper's equations as printed
(``reading="printed"``, the default). The paper's own description of its Fig. 2 — the ratio of the Gaussian
to the arbitrary law's ``λ`` at ``M̄ = 0``, ``v = 1`` near 1 for high costs, further from 1 as the cost falls —
does not fit the printed update (there the ratio tends to 1 as ``c → 0`` and to ``ω_gauss/ω_arb`` as
``c → ∞``) but fits ``reading="scaled"``: the deviation of ``cM`` taken as ``c√v`` and squared as the paper
squares ``σ``, i.e. ``c M̄ >= ω c² v`` (``M̄ >= ω c v``: a costlier example must reach a *larger* margin) — the
printed update with ``ω`` replaced by ``ωc²``; ``μ`` still moves by ``λ c y Σx``. It depends on the costs'
units more than the printed one: each update adds ``2λωc²`` to the precision, so with costs in the hundreds
(German credit's loan amounts) the float32 diagonal variances underflow within a few hundred rounds and the
run ends non-finite (and warns); give it costs of mean about 1 (the costs divided by their mean).
``benchmarks/cw_cvar.py`` measures both readings on German credit.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtri
from jax.typing import ArrayLike

from ..base import (
    Example,
    Learner,
    StepInfo,
    choice,
    concrete_values,
    count_one,
    covariance_row_scales,
    hyperparameter,
    pytree_dataclass,
)
from ..linalg import one_matrix_at_a_time
from .cw import CWState, check_confidence, cw_family_step
from .keys import key_data


@one_matrix_at_a_time
def _solve(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.linalg.solve(a, b)


#: The margin-distribution assumptions of Table I, as accepted by :func:`omega` and the learners.
ASSUMPTIONS = ("gaussian", "symmetric", "unimodal", "arbitrary")

#: The readings of the cost's role in the constraint (see the module docstring): ``"printed"``, the paper's
#: ``c M̄ >= ω v``; ``"scaled"``, the deviation of ``cM`` taken as ``c√v``, i.e. ``c M̄ >= ω c² v``.
READINGS = ("printed", "scaled")

#: What a round with ``c(x_t) = 0`` does: ``"skip"`` (no update) or ``"limit"`` (the ``c → 0⁺`` limit).
ZERO_COSTS = ("skip", "limit")

#: The statistic of the cost buffer that defines ``c*``: the mean of its top τ-fraction (the paper's
#: ``CVaR_τ``) or its τ-quantile from the top.
BUFFER_STATISTICS = ("cvar", "quantile")

#: Default size of the cost buffer of CW-CVaR and CW-robust (a reservoir: exact for streams this long).
BUFFER_SIZE = 1024


# -- the update factor ω_ε (Table I) -------------------------------------------------------------------


def omega_gaussian(epsilon):
    r"""``ω_ε = φ(Φ^{-1}(1−ε)) / ε = exp(−½Φ^{-1}(1−ε)²) / (ε√(2π))``: minus the mean of the lowest
    ε-fraction of a standard normal (its CVaR_ε), so ``CVaR_ε(M) = M̄ − ω_ε σ`` for a Gaussian margin."""
    eps = jnp.asarray(epsilon)
    z = ndtri(eps)  # = −Φ^{-1}(1−ε), accurate for small ε; only z² is used
    return jnp.exp(-0.5 * z * z) / (eps * math.sqrt(2.0 * math.pi))


def omega_symmetric(epsilon):
    r"""Worst case over symmetric distributions of given mean and variance:
    ``ω = 1/√(2ε)`` for ``ε ≤ ½``, ``ω = √(1−ε)/(√2·ε)`` for ``ε ≥ ½`` (continuous, 1 at ε = ½).

    The paper's table prints the second piece as ``1/√(2ε)·√(1−ε)``, which is discontinuous at ½ (1 vs
    0.707) and not the worst case; read ``1/(√2 ε)·√(1−ε)``. Attained by the symmetric three-point law with
    mass ``min(ε, 1−ε)`` at ``±a`` and the rest at 0.
    """
    eps = jnp.asarray(epsilon)
    return jnp.where(eps <= 0.5, 1.0 / jnp.sqrt(2.0 * eps), jnp.sqrt(1.0 - eps) / (math.sqrt(2.0) * eps))


def omega_unimodal(epsilon):
    r"""Worst case over symmetric unimodal distributions of given mean and variance:
    ``2/(3√ε)`` for ``ε ≤ ⅓``, ``√3 (1−ε)`` for ``⅓ ≤ ε ≤ ⅔``, ``2√(1−ε)/(3ε)`` for ``ε ≥ ⅔``.

    the paper's table prints the last piece as ``1/3ε·2√(1−ε)``, read as ``2√(1−ε)/(3ε)``: continuous at both
    breakpoints (``2/√3`` at ⅓, ``1/√3`` at ⅔), and equal to a direct numerical worst case over mixtures of
    uniform laws (``tests/algorithms/test_cw_cvar.py``). The middle piece is the uniform law's own CVaR.
    """
    eps = jnp.asarray(epsilon)
    low = 2.0 / (3.0 * jnp.sqrt(eps))
    mid = math.sqrt(3.0) * (1.0 - eps)
    high = 2.0 * jnp.sqrt(jnp.maximum(1.0 - eps, 0.0)) / (3.0 * eps)
    return jnp.where(eps <= 1.0 / 3.0, low, jnp.where(eps <= 2.0 / 3.0, mid, high))


def omega_arbitrary(epsilon):
    r"""Worst case over all distributions of given mean and variance: ``ω = √((1−ε)/ε)`` (attained by the
    two-point law with mass ε at ``−√((1−ε)/ε)``)."""
    eps = jnp.asarray(epsilon)
    return jnp.sqrt((1.0 - eps) / eps)


_OMEGAS = {
    "gaussian": omega_gaussian,
    "symmetric": omega_symmetric,
    "unimodal": omega_unimodal,
    "arbitrary": omega_arbitrary,
}


def omega(epsilon, assumption: str = "gaussian"):
    """The update factor ``ω_ε`` of Table I for a margin-distribution ``assumption`` (one of
    :data:`ASSUMPTIONS`; ``"unimodal"`` is the symmetric-unimodal family), ``ε ∈ (0, 1)``.

    In every case ``CVaR_ε(M) = M̄ − ω_ε·σ`` is the mean of the lowest ε-fraction of the margin ``M`` of mean
    ``M̄`` and standard deviation ``σ`` — exactly for a Gaussian margin, in the worst case over the family for
    the others (Yu, Li, Schuurmans, Szepesvári, NIPS 2009, Prop. 2, cited by the paper).
    """
    if assumption not in _OMEGAS:
        raise ValueError(f"assumption must be one of {', '.join(ASSUMPTIONS)}, got {assumption!r}")
    return _OMEGAS[assumption](epsilon)


# -- λ (Eqs. 11-12) -------------------------------------------------------------------------------------


def cvar_lambda(margin, variance, cost, omega_eps):
    r"""``λ = max(0, ψ)`` of Eq. 12 for margin mean ``M̄``, variance ``v``, cost ``c`` and factor ``ω``.

    ``ψ`` is the positive root of ``a λ² + b λ + k = 0`` with ``a = 2cωv``, ``b = c + 2ωM̄``,
    ``k = (cM̄ − ωv)/(cv)`` (Eq. 11 multiplied by ``(1 + 2λωv)/(cv)``), the paper's closed form;
    it is computed as ``−2k/(b + √Δ)`` when ``b >= 0`` and ``(−b + √Δ)/(2a)`` otherwise, ``Δ = b² − 4ak``,
    so that neither form cancels. ``λ = 0`` where ``c M̄ >= ω v`` (constraint met), and where ``c <= 0`` or
    ``v <= 0``.
    """
    m, v, c, w = (jnp.asarray(a) for a in (margin, variance, cost, omega_eps))
    ok = (v > 0) & (c > 0)
    v_s = jnp.where(ok, v, 1.0)
    c_s = jnp.where(ok, c, 1.0)
    k = (c_s * m - w * v_s) / (c_s * v_s)
    b = c_s + 2.0 * w * m
    a = 2.0 * c_s * w * v_s
    violated = ok & (k < 0)
    disc = jnp.where(violated, b * b - 4.0 * a * k, 1.0)  # > b² where k < 0
    root = jnp.sqrt(disc)
    psi = jnp.where(b >= 0, -2.0 * k / jnp.where(b >= 0, b + root, 1.0), (root - b) / (2.0 * a))
    return jnp.where(violated, jnp.maximum(psi, 0.0), 0.0)


# -- shared pieces -------------------------------------------------------------------------------------------


class CWNoBufferState(NamedTuple):
    mu: jax.Array  # (d,) mean: the linear predictor
    root: jax.Array  # (d, d) square root A of Σ = A Aᵀ, or (d,) the diagonal of Σ when diagonal=True


class CWCVaRState(NamedTuple):
    mu: jax.Array  # (d,) mean: the linear predictor
    root: jax.Array  # (d, d) square root A of Σ = A Aᵀ, or (d,) the diagonal of Σ when diagonal=True
    costs: jax.Array  # (B,) the buffered costs, sorted in decreasing order, -inf in the empty slots
    seen: jax.Array  # () int32: the number of costs seen so far
    key: jax.Array  # (2,) uint32: key data of the reservoir's random choices


class CWRobustState(NamedTuple):
    mu: jax.Array  # (d,) mean μ_t of the CW-CVaR model
    root: jax.Array  # (d, d) square root of Σ_t, or (d,) its diagonal
    costs: jax.Array  # (B,) cost buffer, as CWCVaRState
    seen: jax.Array  # () int32: the rounds seen so far, t
    key: jax.Array  # (2,) uint32 key data
    mu_tilde: jax.Array  # (d,) the posterior mean μ̃_t: the predictor


def _example_cost(ex: Example):
    return ex.rho if ex.cost is None else ex.cost


def _init_cov(d: int, diagonal: bool, dtype):
    return jnp.ones(d, dtype) if diagonal else jnp.eye(d, dtype=dtype)


def _cvar_update(mu, root, x, y, c, w, diagonal: bool, reading: str = "printed", zero_cost: str = "skip"):
    """Eqs. 12, 9, 10 for one example: returns the new ``(μ, root)``, the score and the constraint violation.

    ``reading="scaled"`` replaces ``ω`` by ``ωc²`` (see :data:`READINGS`); ``zero_cost="limit"`` applies the
    ``c → 0⁺`` limit of the update where ``c = 0`` (see :func:`zero_cost_limit`).
    """
    f = mu @ x
    m = y * f
    if diagonal:
        sx = root * x
        v = sx @ x
    else:
        z = root.T @ x
        v = z @ z
        sx = root @ z
    w = w * c * c if reading == "scaled" else w
    lam = cvar_lambda(m, v, c, w)
    step = lam * c  # the mean moves by step·y·Σx
    q = 2.0 * lam * w  # 2λω: the precision added along x
    collapse = jnp.zeros((), bool)
    if zero_cost == "limit":
        at_zero = (c == 0) & (v > 0)
        limit_step, limit_collapse = zero_cost_limit(m, v, reading)
        step = jnp.where(at_zero, limit_step, step)
        q = jnp.where(at_zero, 0.0, q)
        collapse = at_zero & limit_collapse
    mu = mu + (step * y) * sx
    if diagonal:
        root = jnp.where(collapse & (root * x * x > 0), 0.0, root / (1.0 + q * root * x * x))
    else:
        r = 1.0 / (1.0 + q * v)  # the variance along x shrinks by r
        g = q * r / (1.0 + jnp.sqrt(r))  # (1 − √r)/v without cancellation
        g = jnp.where(collapse, 1.0 / jnp.where(v > 0, v, 1.0), g)
        root = root - g * jnp.outer(sx, z)
    violation = jnp.maximum(0.0, w * v - c * m)
    return mu, root, f, violation


def zero_cost_limit(margin, variance, reading: str = "printed"):
    r"""The ``c → 0⁺`` limit of one update, for margin mean ``M̄`` and variance ``v > 0``: the mean step
    ``u = lim λc`` (``μ ← μ + u y Σx``) and whether the variance along ``x`` collapses.

    With ``u = λc``, Eq. 11 reads ``2ω̃v u² + (c + 2ω̃M̄) u + (cM̄ − ω̃v)/v = 0`` (``ω̃ = ω`` as printed,
    ``ωc²`` scaled). As printed, ``λ`` itself tends to infinity (``λ ≈ 1/(√2 c)`` at ``M̄ = 0``, ``v = 1``) but
    ``u → (−M̄ + √(M̄² + 2v))/(2v)`` and ``2λω → ∞``: the variance along ``x`` collapses,
    ``Σ ← Σ − Σx xᵀΣ/v`` (diagonal: ``s_i ← 0`` where ``x_i ≠ 0``) — the constraint ``0·M̄ >= ω v`` can only
    be met with no variance left. Scaled, ``u → max(0, −M̄)/v`` (the step to margin 0) and ``2λωc² → 0``:
    Σ is unchanged.
    """
    m, v = jnp.asarray(margin), jnp.asarray(variance)
    v_s = jnp.where(v > 0, v, 1.0)
    if reading == "scaled":
        return jnp.maximum(0.0, -m) / v_s, jnp.zeros((), bool)
    # (−M̄ + √(M̄² + 2v))/(2v) = 1/(M̄ + √(M̄² + 2v)) where M̄ >= 0 (no cancellation)
    root = jnp.sqrt(m * m + 2.0 * v_s)
    u = jnp.where(m >= 0, 1.0 / (m + root), (root - m) / (2.0 * v_s))
    return u, jnp.ones((), bool)


def buffer_add(costs, seen, key, c):
    """Adds cost ``c`` to the sorted reservoir ``costs`` (decreasing, ``-inf`` in empty slots) of size ``B``.

    While fewer than ``B`` costs have been seen the buffer keeps them all. Afterwards it is a uniform sample
    of the stream (reservoir sampling, Vitter's algorithm R): the ``n``-th cost enters with probability
    ``B/n``, in place of a uniformly chosen buffered cost. The random choices of round ``n`` come from
    ``fold_in(key, n)``, so a run is reproducible from its key. O(B) per round.
    """
    size = costs.shape[0]
    idx = jnp.arange(size)
    n = count_one(seen)  # the count including c (it stops at 2**31 - 1: base.COUNT_MAX)
    full = seen >= size
    k = jax.random.fold_in(jax.random.wrap_key_data(key), seen)
    k_in, k_slot = jax.random.split(k)
    admit = jnp.logical_or(~full, jax.random.uniform(k_in) * n.astype(jnp.float32) < size)
    slot = jax.random.randint(k_slot, (), 0, size)
    neg_inf = jnp.full_like(costs, -jnp.inf)
    dropped = jnp.where(idx < slot, costs, jnp.roll(costs, -1))
    dropped = jnp.where(idx == size - 1, neg_inf, dropped)
    base = jnp.where(full, dropped, costs)
    pos = jnp.sum(base > c)
    inserted = jnp.where(idx < pos, base, jnp.where(idx == pos, c.astype(costs.dtype), jnp.roll(base, 1)))
    return jnp.where(admit, inserted, costs), n


def buffer_cvar(costs, seen, tau):
    r"""``c* = CVaR_τ(B_t)``: the mean of the top τ-fraction of the buffered costs (Alg. 1).

    With ``n`` buffered costs ``b_1 >= b_2 >= …`` and ``k = τn``, the top fraction is the ``⌊k⌋`` largest
    costs and a share ``k − ⌊k⌋`` of the next one (the CVaR of the buffer's empirical distribution, which is
    continuous in τ; the largest cost when ``k < 1``). Computed as ``b_1 − Σ_i w_i (b_1 − b_i)``, which is
    exactly ``b_1`` when the top costs tie (class costs), so the test ``c* <= c(x_t)`` is not decided by
    rounding there.
    """
    size = costs.shape[0]
    count = jnp.minimum(seen, size).astype(costs.dtype)
    k = tau * count
    i = jnp.arange(size, dtype=costs.dtype)
    weight = jnp.clip(k - i, 0.0, 1.0)
    top = costs[0]
    gaps = jnp.where(weight > 0, top - costs, 0.0)
    return top - (weight @ gaps) / k


def buffer_quantile(costs, seen, tau):
    r"""``c*`` as the τ-quantile from the top of the buffered costs: ``b_{⌈τn⌉}`` with ``n`` buffered costs
    ``b_1 >= b_2 >= …`` — the smallest of the top τ-fraction (the largest cost when ``τn <= 1``), so that
    ``c* <= c(x_t)`` says that ``c(x_t)`` is among the costliest τ-fraction of the buffer.
    """
    size = costs.shape[0]
    count = jnp.minimum(seen, size).astype(costs.dtype)
    index = jnp.clip(jnp.ceil(tau * count - 1e-4).astype(jnp.int32) - 1, 0, size - 1)  # τn = 50.000001: 50
    return costs[index]


def _check_epsilon(name: str, value: Any, cls: str) -> None:
    arr = concrete_values(value)
    if arr is not None and np.any((arr <= 0) | (arr >= 1)):
        raise ValueError(f"{cls}: {name} must be in (0, 1), got {value!r}")


def _check_buffer(size: Any, cls: str) -> None:
    if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 1:
        raise ValueError(f"{cls}: buffer_size must be a positive int, got {size!r}")


_FAMILY_ARGS = """
        assumption: the margin-distribution assumption of :func:`omega` — ``"gaussian"``, ``"symmetric"``,
            ``"unimodal"`` (symmetric and unimodal) or ``"arbitrary"``.
        diagonal: keep only the diagonal of Σ (O(d) per round; the paper's setting) instead of the full
            matrix (O(d²)).
        reading: the cost's role in the constraint, ``"printed"`` (``c M̄ >= ω v``, the default) or
            ``"scaled"`` (``c M̄ >= ω c² v``); see :data:`READINGS` and the module docstring.
        zero_cost: a round with ``c(x_t) = 0``: ``"skip"`` (no update, the default) or ``"limit"`` (the
            ``c → 0⁺`` limit of the update, :func:`zero_cost_limit`).
"""

_BUFFER_DOC = r"""
    **Cost buffer.** ``B_t`` is a reservoir of ``buffer_size`` costs (default :data:`BUFFER_SIZE` = 1024),
    kept sorted (:func:`buffer_add`): it holds every cost seen while the stream is shorter than the buffer —
    the paper's buffer of all past costs — and a uniform sample of them afterwards. ``c(x_t)`` is added
    *before* ``c*`` is computed, as in Alg. 1. ``c* = CVaR_τ(B_t)`` is the mean of the top τ-fraction of
    the buffer (:func:`buffer_cvar`), and (Eq. 13)

    .. math::

        \epsilon_t = \begin{cases}\alpha & c^* \le c(x_t) \\ \beta & \text{otherwise,}\end{cases}

    so the costliest τ-fraction of the examples gets the smaller tolerance α (the larger ``ω``).
"""


# -- the learners ----------------------------------------------------------------------------------------------


@pytree_dataclass
class CWNoBuffer(Learner[CWNoBufferState]):
    __doc__ = (
        r"""CW-nobuffer: CW-CVaR with one tolerance ε for every example (§VI-A).

    Each round: ``ω = ω_ε`` (:func:`omega`), ``λ`` by Eq. 12 (:func:`cvar_lambda`), then

    .. math::

        \mu_{t+1} = \mu_t + \lambda_t c(x_t) y_t \Sigma_t x_t, \qquad
        \Sigma_{t+1}^{-1} = \Sigma_t^{-1} + 2\lambda_t\omega\, x_t x_t^\top

    (Eq. 10 by Sherman–Morrison), ``μ_1 = 0``, ``Σ_1 = I``; see the module docstring for the conventions.

    Args:
        epsilon: the tolerated misclassification probability ε in (0, 1).
    """
        + _FAMILY_ARGS
        + """
    Reference: A. Ali, K. Collins-Thompson, *Robust Cost-Sensitive Confidence-Weighted Classification*,
    Eqs. 9–12 and Table I.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.CWNoBuffer(epsilon=0.05), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        CW-nobuffer: sum 58.4%
    """
    )

    epsilon: ArrayLike = hyperparameter(0.05)
    assumption: str = choice("gaussian", *ASSUMPTIONS)
    diagonal: bool = choice(False, False, True)
    reading: str = choice("printed", *READINGS)
    zero_cost: str = choice("skip", *ZERO_COSTS)

    weights_field = "mu"

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_epsilon("epsilon", self.epsilon, type(self).__name__)

    @property
    def name(self) -> str:
        return _name("CW-nobuffer", self)

    def too_large_hint(self) -> str:
        return "use diagonal=True (O(d) memory per run) or fewer runs"

    def row_scales(self, d: int, dtype: Any) -> tuple[float, float]:  # its covariance update cancels beyond
        return covariance_row_scales(dtype)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> CWNoBufferState:
        return CWNoBufferState(mu=jnp.zeros(d, dtype), root=_init_cov(d, self.diagonal, dtype))

    def step(self, state: CWNoBufferState, ex: Example) -> tuple[CWNoBufferState, StepInfo]:
        w = omega(jnp.asarray(self.epsilon, ex.x.dtype), self.assumption)
        mu, root, f, loss = _cvar_update(
            state.mu, state.root, ex.x, ex.y, _example_cost(ex), w, self.diagonal, self.reading, self.zero_cost
        )
        return CWNoBufferState(mu=mu, root=root), StepInfo(score=f, loss=loss)


def _name(family: str, learner) -> str:
    """``family`` followed by each option that differs from its default (the Gaussian assumption, full covariance,
    the printed reading, the CVaR of the buffer, skipped zero costs):
    ``CWCVaR(assumption="unimodal", diagonal=True, zero_cost="limit").name == "CW-CVaR-unimodal-diag-limit"``."""
    parts = [learner.assumption] if learner.assumption != "gaussian" else []
    if learner.diagonal:
        parts.append("diag")
    if learner.reading != "printed":
        parts.append(learner.reading)
    if getattr(learner, "buffer_statistic", "cvar") != "cvar":
        parts.append(learner.buffer_statistic)
    if learner.zero_cost != "skip":
        parts.append("limit")
    return family + "".join(f"-{p}" for p in parts)


def _cvar_buffer_round(learner, state, ex):
    """Buffer, ε by Eq. 13, then the CW-CVaR update: the shared part of CW-CVaR and CW-robust."""
    c = jnp.asarray(_example_cost(ex), ex.x.dtype)
    costs, seen = buffer_add(state.costs, state.seen, state.key, c)
    statistic = buffer_cvar if learner.buffer_statistic == "cvar" else buffer_quantile
    c_star = statistic(costs, seen, jnp.asarray(learner.tau, ex.x.dtype))
    high = c_star <= c
    dtype = ex.x.dtype
    w = jnp.where(
        high,
        omega(jnp.asarray(learner.alpha, dtype), learner.assumption),
        omega(jnp.asarray(learner.beta, dtype), learner.assumption),
    )
    mu, root, f, loss = _cvar_update(
        state.mu, state.root, ex.x, ex.y, c, w, learner.diagonal, learner.reading, learner.zero_cost
    )
    return mu, root, costs, seen, f, loss


def _init_buffer(size: int, key, dtype):
    return jnp.full(size, -jnp.inf, dtype), jnp.zeros((), jnp.int32), key_data(key)


@pytree_dataclass
class CWCVaR(Learner[CWCVaRState]):
    __doc__ = (
        r"""CW-CVaR (Alg. 1): cost-sensitive confidence-weighted learning with a CVaR constraint
    and a buffer of past costs that sets the tolerance ε of each example.

    Each round: add ``c(x_t)`` to the buffer, compute ``c*`` and ``ε_t`` (Eq. 13, below), ``ω = ω_{ε_t}``
    (:func:`omega`), ``λ_t`` by Eq. 12 (:func:`cvar_lambda`), predict with ``μ_t`` (before the update), then

    .. math::

        \mu_{t+1} = \mu_t + \lambda_t c(x_t) y_t \Sigma_t x_t, \qquad
        \Sigma_{t+1} = \Sigma_t - \Sigma_t x_t \frac{2\lambda_t\omega}{1 + 2\lambda_t\omega v_t}
        x_t^\top \Sigma_t,

    ``μ_1 = 0``, ``Σ_1 = I``; see the module docstring for the conventions (zero cost, square-root and
    diagonal covariance).
    """
        + _BUFFER_DOC
        + """
    With ``alpha == beta`` this is :class:`CWNoBuffer` with ``epsilon = alpha``.

    Args:
        alpha: ε of the high-cost examples (``c* <= c(x_t)``), in (0, 1).
        beta: ε of the other examples, in (0, 1).
        tau: the top fraction of the buffered costs that defines ``c*``, in (0, 1]; 0.05 in the paper.
    """
        + _FAMILY_ARGS
        + """        buffer_size: the reservoir's size B (static).
        buffer_statistic: ``c*`` as the mean of the buffer's top τ-fraction (``"cvar"``, the paper's
            Alg. 1, the default) or as its τ-quantile from the top (``"quantile"``, :func:`buffer_quantile`).

    Reference: A. Ali, K. Collins-Thompson, *Robust Cost-Sensitive Confidence-Weighted Classification*,
    Alg. 1, Eqs. 9–13, Table I.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.CWCVaR(alpha=0.05, beta=0.2, diagonal=True), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        CW-CVaR-diag: sum 60.9%
    """
    )

    alpha: ArrayLike = hyperparameter(0.05)
    beta: ArrayLike = hyperparameter(0.2)
    tau: ArrayLike = hyperparameter(0.05)
    assumption: str = choice("gaussian", *ASSUMPTIONS)
    diagonal: bool = choice(False, False, True)
    reading: str = choice("printed", *READINGS)
    zero_cost: str = choice("skip", *ZERO_COSTS)
    buffer_size: int = dataclasses.field(default=BUFFER_SIZE, metadata={"static": True})
    buffer_statistic: str = choice("cvar", *BUFFER_STATISTICS)

    weights_field = "mu"

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("alpha", "beta"):
            _check_epsilon(name, getattr(self, name), type(self).__name__)
        tau = concrete_values(self.tau)
        if tau is not None and np.any(tau > 1):
            raise ValueError(f"{type(self).__name__}: tau must be in (0, 1], got {self.tau!r}")
        _check_buffer(self.buffer_size, type(self).__name__)

    @property
    def name(self) -> str:
        return _name("CW-CVaR", self)

    def too_large_hint(self) -> str:
        return "use diagonal=True (O(d) memory per run), a smaller buffer_size, or fewer runs"

    def row_scales(self, d: int, dtype: Any) -> tuple[float, float]:  # its covariance update cancels beyond
        return covariance_row_scales(dtype)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> CWCVaRState:
        costs, seen, k = _init_buffer(self.buffer_size, key, dtype)
        return CWCVaRState(
            mu=jnp.zeros(d, dtype), root=_init_cov(d, self.diagonal, dtype), costs=costs, seen=seen, key=k
        )

    def step(self, state: CWCVaRState, ex: Example) -> tuple[CWCVaRState, StepInfo]:
        mu, root, costs, seen, f, loss = _cvar_buffer_round(self, state, ex)
        return CWCVaRState(mu=mu, root=root, costs=costs, seen=seen, key=state.key), StepInfo(score=f, loss=loss)


def _as_static_vector(value: Any, name: str, cls: str, *, allow_inf: bool = False) -> Any:
    """A prior vector as a hashable tuple of floats (or one float), validated."""
    if value is None:
        return None
    if isinstance(value, jax.core.Tracer):
        raise TypeError(f"{cls}: {name} is a static option and cannot be traced")
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim > 1:
        raise ValueError(f"{cls}: {name} must be a number or a 1-d array, got shape {arr.shape}")
    bad = np.isnan(arr) | (np.isinf(arr) if not allow_inf else np.isneginf(arr))
    if np.any(bad):
        raise ValueError(f"{cls}: {name} has invalid values {value!r}")
    return float(arr) if arr.ndim == 0 else tuple(float(a) for a in arr)


def _prior_vector(value: Any, d: int, default: float, name: str, dtype) -> jax.Array:
    if value is None:
        return jnp.full(d, default, dtype)
    if isinstance(value, float):
        return jnp.full(d, value, dtype)
    if len(value) != d:
        raise ValueError(f"CWRobust: {name} has length {len(value)} but the data has d = {d} features")
    return jnp.asarray(np.asarray(value), dtype)


@pytree_dataclass
class CWRobust(Learner[CWRobustState]):
    __doc__ = (
        r"""CW-robust (§IV, Alg. 2): CW-CVaR whose predictions use the posterior mean under a
    Gaussian prior ``N(ν, Υ)`` on the weights, ``Υ`` diagonal.

    Each round runs :class:`CWCVaR` (buffer, ε, λ, μ, Σ), but predicts with ``μ̃_{t−1}`` and then sets
    (Eqs. 14–15, ``t`` the number of rounds seen)

    .. math::

        \tilde\Sigma_t = (\Upsilon^{-1} + t\Sigma_t^{-1})^{-1}, \qquad
        \tilde\mu_t = \tilde\Sigma_t(\Upsilon^{-1}\nu_t + t\Sigma_t^{-1}\mu_t),

    computed as ``μ̃ = μ + (ΣP + tI)^{-1} ΣP (ν − μ)`` with the precision ``P = Υ^{-1}`` (no inverse of Σ;
    a ``d × d`` solve per round for the full covariance, ``μ̃_i = μ_i + P_i s_i (ν_i − μ_i)/(P_i s_i + t)``
    for the diagonal one). ``Υ_dd = ∞`` is allowed and means no prior on weight ``d``: ``P_dd = 1/∞ = 0``,
    so ``μ̃_d = μ_d`` exactly. Before the first round ``μ̃_0 = ν`` on the coordinates with a prior and
    ``μ_1 = 0`` elsewhere (the formula at ``t = 0``).

    **Prior mean that follows the model.** §VI-B sets ``ν_2 = −μ_2`` — the negative of the current mean
    weight, so that the posterior mean of ``w_2`` is pulled towards 0. ``prior_mean_coef`` (κ) expresses it:
    ``ν_t = ν + κ∘μ_t``; ``κ_2 = −1``, ``ν_2 = 0`` gives the paper's prior.

    ``prior_mean``, ``prior_var`` and ``prior_mean_coef`` are *static* (hashable tuples; a new prior
    compiles anew and cannot be a grid axis): give each as a number (the same for every feature) or an
    array whose length must equal ``d`` (checked at ``init``). ``None``: ``ν = 0``, ``Υ = ∞·I`` (no prior:
    CW-robust is then CW-CVaR), ``κ = 0``.
    """
        + _BUFFER_DOC
        + """
    Args:
        alpha, beta, tau: as :class:`CWCVaR`.
    """
        + _FAMILY_ARGS
        + """        buffer_size, buffer_statistic: as :class:`CWCVaR`.
        prior_mean: ν.
        prior_var: the diagonal of Υ (> 0, ``inf`` allowed).
        prior_mean_coef: κ of ``ν_t = ν + κ∘μ_t``.

    Reference: A. Ali, K. Collins-Thompson, *Robust Cost-Sensitive Confidence-Weighted Classification*,
    §IV, Eqs. 14–15, Alg. 2, §VI-B.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.CWRobust(diagonal=True, prior_mean=0.0, prior_var=1.0), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        CW-robust-diag: sum 61.0%
    """
    )

    alpha: ArrayLike = hyperparameter(0.05)
    beta: ArrayLike = hyperparameter(0.2)
    tau: ArrayLike = hyperparameter(0.05)
    assumption: str = choice("gaussian", *ASSUMPTIONS)
    diagonal: bool = choice(False, False, True)
    reading: str = choice("printed", *READINGS)
    zero_cost: str = choice("skip", *ZERO_COSTS)
    buffer_size: int = dataclasses.field(default=BUFFER_SIZE, metadata={"static": True})
    buffer_statistic: str = choice("cvar", *BUFFER_STATISTICS)
    prior_mean: Any = dataclasses.field(default=None, metadata={"static": True})
    prior_var: Any = dataclasses.field(default=None, metadata={"static": True})
    prior_mean_coef: Any = dataclasses.field(default=None, metadata={"static": True})

    weights_field = "mu_tilde"

    def __post_init__(self) -> None:
        cls = type(self).__name__
        object.__setattr__(self, "prior_mean", _as_static_vector(self.prior_mean, "prior_mean", cls))
        object.__setattr__(self, "prior_var", _as_static_vector(self.prior_var, "prior_var", cls, allow_inf=True))
        object.__setattr__(self, "prior_mean_coef", _as_static_vector(self.prior_mean_coef, "prior_mean_coef", cls))
        var = self.prior_var
        if var is not None and np.any(np.asarray(var) <= 0):
            raise ValueError(f"{cls}: prior_var must be > 0 (inf: no prior), got {var!r}")
        super().__post_init__()
        for name in ("alpha", "beta"):
            _check_epsilon(name, getattr(self, name), cls)
        tau = concrete_values(self.tau)
        if tau is not None and np.any(tau > 1):
            raise ValueError(f"{cls}: tau must be in (0, 1], got {self.tau!r}")
        _check_buffer(self.buffer_size, cls)

    @property
    def name(self) -> str:
        return _name("CW-robust", self)

    def too_large_hint(self) -> str:
        return "use diagonal=True (O(d) memory per run), a smaller buffer_size, or fewer runs"

    def row_scales(self, d: int, dtype: Any) -> tuple[float, float]:  # its covariance update cancels beyond
        return covariance_row_scales(dtype)

    def _prior(self, d: int, dtype):
        nu = _prior_vector(self.prior_mean, d, 0.0, "prior_mean", dtype)
        var = _prior_vector(self.prior_var, d, math.inf, "prior_var", dtype)
        kappa = _prior_vector(self.prior_mean_coef, d, 0.0, "prior_mean_coef", dtype)
        return nu, 1.0 / var, kappa  # 1/inf = 0: no prior on that weight

    def _posterior_mean(self, mu, root, t, nu, prec):
        gap = nu - mu
        if self.diagonal:
            ps = prec * root
            den = ps + t
            return mu + jnp.where(den > 0, ps * gap / jnp.where(den > 0, den, 1.0), 0.0)
        sigma = root @ root.T
        sp = sigma * prec[None, :]  # Σ P
        eye = jnp.eye(mu.shape[0], dtype=mu.dtype)
        return mu + _solve(sp + t * eye, sp @ gap)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> CWRobustState:
        nu, prec, _ = self._prior(d, dtype)
        costs, seen, k = _init_buffer(self.buffer_size, key, dtype)
        return CWRobustState(
            mu=jnp.zeros(d, dtype),
            root=_init_cov(d, self.diagonal, dtype),
            costs=costs,
            seen=seen,
            key=k,
            mu_tilde=jnp.where(prec > 0, nu, 0.0),
        )

    def step(self, state: CWRobustState, ex: Example) -> tuple[CWRobustState, StepInfo]:
        x = ex.x
        f = state.mu_tilde @ x
        mu, root, costs, seen, _, loss = _cvar_buffer_round(self, state, ex)
        nu, prec, kappa = self._prior(x.shape[0], x.dtype)
        mu_tilde = self._posterior_mean(mu, root, seen.astype(x.dtype), nu + kappa * mu, prec)
        return (
            CWRobustState(mu=mu, root=root, costs=costs, seen=seen, key=state.key, mu_tilde=mu_tilde),
            StepInfo(score=f, loss=loss),
        )


class CWCostsState(NamedTuple):
    mu: jax.Array  # (d,) mean: the linear predictor
    root: jax.Array  # (d, d) square root A of Σ = A Aᵀ (as jcsol.CW's state)
    cost_sum: jax.Array  # () the sum of the costs seen so far (for relative=True)
    seen: jax.Array  # () int32: the number of rounds seen


@pytree_dataclass
class CWCosts(Learner[CWCostsState]):
    __doc__ = r"""CW-costs (§VI-A): exact CW with its mean step scaled by the example cost.

    With ``φ = Φ^{-1}(η)`` and ``α_t``, ``β_t`` the exact-CW step sizes of :class:`jcsol.CW` (same guard, same
    square-root covariance), when ``φ√v_t − m_t > 0``:

    .. math::

        \mu_{t+1} = \mu_t + \kappa\, \tilde c_t\, \alpha_t y_t \Sigma_t x_t, \qquad
        \Sigma_{t+1} = \Sigma_t - \beta_t \Sigma_t x_t x_t^\top \Sigma_t,

    with ``c̃_t = c(x_t)`` (``relative=False``) or ``c̃_t = c(x_t)/c̄_t``, ``c̄_t`` the
    mean of the costs seen so far, ``c(x_t)`` included (``relative=True``; 0 while every cost seen is 0).

    The step is that of :func:`jcsol.algorithms.cw.cw_family_step` (the one implementation of exact CW in
    jcsol), whose mean change is scaled by ``κ c̃_t``; with ``κ c̃ ≡ 1`` this is :class:`jcsol.CW` (up to one
    rounding of the mean). Full covariance only, as :class:`jcsol.CW`.

    **Why ``relative``.** The exact-CW step moves the margin to about ``φ√v`` from where it was; scaled by
    ``c > 1`` it overshoots by ``(c − 1)|m_t|``, and the next mistake is larger in proportion: the means grow
    geometrically with the product of the costs. With German credit's costs in hundreds of DM (``c`` up to
    920) the float64 reference overflows and the float32 run turns to NaN within ~30 rounds; even with
    class-weight costs (ρ ≈ 2.3) a run is sensitive enough that two compilations of the same computation
    (scan vs step loop) end ~1e-4 apart. ``relative=True`` makes the costs unit-free (mean 1) and keeps the
    learner usable whatever the costs' units; it is the variant registered as ``"CW-costs-relative"``.

    Args:
        cost_scale: κ > 0, a unit for the costs (1: the costs as given).
        eta: the confidence η in (0.5, 1), 0.7 by default (as :class:`jcsol.CW`); the paper's ε is ``1 − η``.
        relative: divide each cost by the running mean of the costs (static).

    Reference: A. Ali, K. Collins-Thompson, *Robust Cost-Sensitive Confidence-Weighted Classification*, §VI-A;
    K. Crammer, M. Dredze, F. Pereira, *Exact Convex Confidence-Weighted Learning*, NIPS 2008.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.CWCosts(relative=True), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        CW-costs-relative: sum 60.5%
    """

    step_size = None  # η is the confidence of the prediction, not a step

    cost_scale: ArrayLike = hyperparameter(1.0)
    eta: ArrayLike = hyperparameter(0.7)
    relative: bool = choice(False, False, True)

    weights_field = "mu"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_confidence(self)

    @property
    def name(self) -> str:
        return "CW-costs" + ("-relative" if self.relative else "")

    def too_large_hint(self) -> str:
        return "use fewer runs (CW-costs keeps a d × d covariance factor per run)"

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> CWCostsState:
        return CWCostsState(
            mu=jnp.zeros(d, dtype),
            root=jnp.eye(d, dtype=dtype),
            cost_sum=jnp.zeros((), dtype),
            seen=jnp.zeros((), jnp.int32),
        )

    def step(self, state: CWCostsState, ex: Example) -> tuple[CWCostsState, StepInfo]:
        c = jnp.asarray(_example_cost(ex), ex.x.dtype)
        cost_sum, seen = state.cost_sum + c, count_one(state.seen)
        if self.relative:
            mean = cost_sum / seen.astype(c.dtype)
            c = jnp.where(mean > 0, c / jnp.where(mean > 0, mean, 1.0), 0.0)
        new, info = cw_family_step(CWState(state.mu, state.root), ex, self.eta, None, "CW")
        mu = state.mu + (self.cost_scale * c) * (new.mu - state.mu)
        return CWCostsState(mu=mu, root=new.root, cost_sum=cost_sum, seen=seen), info


__all__ = [
    "ASSUMPTIONS",
    "BUFFER_SIZE",
    "CWCVaR",
    "CWCVaRState",
    "CWNoBuffer",
    "CWNoBufferState",
    "CWRobust",
    "CWRobustState",
    "CWCosts",
    "CWCostsState",
    "omega",
    "omega_gaussian",
    "omega_symmetric",
    "omega_unimodal",
    "omega_arbitrary",
    "cvar_lambda",
    "buffer_add",
    "buffer_cvar",
    "buffer_quantile",
    "zero_cost_limit",
    "READINGS",
    "ZERO_COSTS",
    "BUFFER_STATISTICS",
]
