"""Confidence-weighted learners: exact CW (Crammer, Dredze, Pereira, NIPS 2008) and soft CW, SCW-I and SCW-II
(Wang, Zhao, Hoi, *Exact Soft Confidence-Weighted Learning*, ICML 2012); LIBOL ``CW.m``, ``SCW.m``, ``SCW2.m``."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtri
from jax.typing import ArrayLike

from ..base import Example, Learner, StepInfo, concrete_values, hyperparameter, normal_row_scales, pytree_dataclass
from ..linalg import dot, matvec, squared_norm, tracing_gpu_kernel

#: Variance floor of the guarded update, relative to ``‖x_t‖²`` (the variance of ``x_t`` under ``Σ_1 = I``).
VARIANCE_FLOOR = 1e-6


class CWState(NamedTuple):
    mu: jax.Array  # (d,) mean: the linear predictor
    root: jax.Array  # (d, d) a square root A of the covariance, Σ = A Aᵀ (A_1 = I)


def covariance(state: CWState) -> jax.Array:
    """The covariance ``Σ = A Aᵀ`` of a :class:`CWState` (leading axes of many runs are kept)."""
    return state.root @ jnp.swapaxes(state.root, -1, -2)


def confidence_quantile(eta: Any, dtype) -> jax.Array:
    """``φ = Φ^{-1}(η)``, the standard normal's quantile of the confidence η: ``ndtri``, or inside a GPU kernel
    (whose programs take no array constants, as ``ndtri``'s polynomial coefficients are) ``√2·erf⁻¹(2η − 1)``,
    ``2η − 1`` exact for η in (0.5, 1); the two agree to a unit or two in the last place."""
    eta = jnp.asarray(eta, dtype)
    if tracing_gpu_kernel():
        return np.sqrt(2.0).astype(dtype) * jax.lax.erf_inv(2 * eta - 1)
    return ndtri(eta)


def cw_family_step(state: CWState, ex: Example, eta: Any, C: Any, variant: str) -> tuple[CWState, StepInfo]:
    """One round of CW / SCW-I / SCW-II on the square-root covariance, with the variance floor."""
    mu, root, x, y = state.mu, state.root, ex.x, ex.y
    dtype = x.dtype
    phi = confidence_quantile(eta, dtype)
    f = dot(mu, x)
    m = y * f
    # z = Aᵀx as a column sum: written `root.T @ x`, XLA transposes every run's whole factor each round (a copy
    # of the state that made the round 5× slower on CPU under the engine's vmaps)
    z = jnp.sum(root * x[:, None], axis=0)
    v = dot(z, z)  # v = xᵀΣx = ‖Aᵀx‖² >= 0 by construction
    loss = jnp.maximum(0.0, phi * jnp.sqrt(v) - m)
    update = loss > 0
    floor = VARIANCE_FLOOR * squared_norm(x)
    vh = jnp.maximum(v, floor)
    vh_safe = jnp.where(vh > 0, vh, 1.0)  # a zero row: vh = 0, no update (loss = 0 there)
    phi2 = phi * phi
    if variant in ("CW", "SCW-I"):
        psi = 1.0 + phi2 / 2.0
        xi = 1.0 + phi2
        alpha = jnp.maximum(0.0, (-m * psi + jnp.sqrt(m * m * phi2 * phi2 / 4.0 + vh * phi2 * xi)) / (vh_safe * xi))
        if variant == "SCW-I":
            alpha = jnp.minimum(alpha, C)
    else:  # SCW-II
        n = vh + 0.5 / C
        gamma = phi * jnp.sqrt(phi2 * m * m * vh * vh + 4.0 * n * vh * (n + vh * phi2))
        alpha = jnp.maximum(0.0, (-(2.0 * m * n + phi2 * m * vh) + gamma) / (2.0 * (n * n + n * vh * phi2)))
    alpha = jnp.where(update, alpha, 0.0)
    # √u_t and the shrink factor r_t = 1 − β_t v_t = √u/(√u + v α φ) of the variance along x (no cancellation).
    sqrt_u = 0.5 * (-alpha * vh * phi + jnp.sqrt(alpha * alpha * vh * vh * phi2 + 4.0 * vh))
    denom = sqrt_u + vh * alpha * phi
    r = jnp.where(denom > 0, sqrt_u / jnp.where(denom > 0, denom, 1.0), 1.0)
    r = jnp.clip(jnp.maximum(r, floor / vh_safe), 0.0, 1.0)
    # Σ − ((1 − r)/v) Σx xᵀΣ = A (I − g z zᵀ)² Aᵀ with g = (1 − √r)/v = (1 − r)/(v (1 + √r)).
    shrink = v >= floor
    g = jnp.where(update & shrink & (v > 0), (1.0 - r) / (jnp.where(v > 0, v, 1.0) * (1.0 + jnp.sqrt(r))), 0.0)
    s = matvec(root, z)  # Σ x
    mu = mu + (alpha * y) * s
    root = root - g * jnp.outer(s, z)
    return CWState(mu=mu, root=root), StepInfo(score=f, loss=loss)


def check_confidence(learner: Any) -> None:
    """Refuses a confidence ``η`` outside (0.5, 1): the CW family needs ``φ = Φ^{-1}(η) > 0``."""
    eta = concrete_values(learner.eta)
    if eta is not None and np.any((eta <= 0.5) | (eta >= 1.0)):
        raise ValueError(f"{type(learner).__name__}: eta (the confidence) must be in (0.5, 1), got {learner.eta!r}")


class _CWBase(Learner[CWState]):
    weights_field = "mu"
    kernel_steps = True  # dense steps run in the GPU kernel (jcsol.core.triton)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_confidence(self)

    def too_large_hint(self) -> str:
        return f"use fewer runs ({self.name} keeps a d × d covariance factor per run)"

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> CWState:
        return CWState(mu=jnp.zeros(d, dtype), root=jnp.eye(d, dtype=dtype))


_GUARD_DOC = """
    **Guard.** The textbook update shrinks the variance along a repeated direction doubly exponentially
    (``v_{t+1} ≈ v_t²/(m_t²φ²)`` after a large mistake). On a9a, with its many duplicated examples, the float64
    update of Σ itself makes ``xᵀΣx`` negative after ~10⁴ rounds (the square root of a negative variance: NaN),
    and even a positive-definite float64 factorisation lets the variance fall to ~1e-43 and the step
    ``α_t ≈ |m_t|/v_t`` grow to ~1e30, beyond what float32 can follow (LIBOL's CW reaches scores of 1e82
    there). This implementation therefore

    1. keeps the covariance as a square root, ``Σ = A Aᵀ`` (state field ``root``; :func:`covariance`), updated
       as ``A ← A (I − g z zᵀ)`` with ``z = Aᵀx``, ``g = (1 − √r_t)/v_t``, ``r_t = 1 − β_t v_t =
       √u_t/(√u_t + v_t α_t φ)``: this is exactly ``Σ − β_t Σx xᵀΣ``, but Σ is positive semi-definite by
       construction and ``v_t = ‖z‖²`` is never negative;
    2. floors the variance at ``ε‖x_t‖²`` with ``ε =`` :data:`VARIANCE_FLOOR` ``= 1e-6``: ``α, u, β`` are
       computed with ``max(v_t, ε‖x_t‖²)``, and an update never shrinks the variance along ``x_t`` below
       ``ε‖x_t‖²`` (``r_t ← max(r_t, ε‖x_t‖²/v_t)``; no shrink where ``v_t`` is already below it).

    Where the variance stays above the floor (all but ~2.5% of the updates on german) the update is the
    textbook one; the update test ``φ√v_t − m_t > 0`` is always the textbook one. Both changes are continuous
    in the data, so float32 runs stay close to float64 ones (on a9a: final means within ~1e-3 relative, equal
    predictions except at ~0.1% of rounds, all near-ties). Cost O(d²) per round and run.
"""


@pytree_dataclass
class CW(_CWBase):
    __doc__ = (
        r"""Exact confidence-weighted learning: the smallest KL step to ``N(μ, Σ)`` that classifies ``x_t``
    correctly with probability η.

    With ``φ = Φ^{-1}(η)``, ``ψ = 1 + φ²/2``, ``ξ = 1 + φ²``, ``m_t = y_t μ_t·x_t``, ``v_t = x_tᵀΣ_t x_t``, when
    the loss ``ℓ_t = max(0, φ√v_t − m_t)`` is positive:

    .. math::

        \alpha_t = \max\Big\{0, \frac{-m_t\psi + \sqrt{m_t^2\phi^4/4 + v_t\phi^2\xi}}{v_t\xi}\Big\}, \qquad
        u_t = \tfrac14\Big(-\alpha_t v_t\phi + \sqrt{\alpha_t^2 v_t^2\phi^2 + 4v_t}\Big)^2, \qquad
        \beta_t = \frac{\alpha_t\phi}{\sqrt{u_t} + v_t\alpha_t\phi},

        \mu_{t+1} = \mu_t + \alpha_t y_t \Sigma_t x_t, \qquad
        \Sigma_{t+1} = \Sigma_t - \beta_t \Sigma_t x_t x_t^\top \Sigma_t,

    ``μ_1 = 0``, ``Σ_1 = I`` — the closed form of exact CW (Crammer, Dredze, Pereira, NIPS 2008, full-covariance
    update) as restated in Wang, Zhao, Hoi (ICML 2012, §2), and LIBOL's ``CW.m``.
    """
        + _GUARD_DOC
        + r"""
    Args:
        eta: the confidence η in (0.5, 1), 0.7 by default (LIBOL).

    Reference: K. Crammer, M. Dredze, F. Pereira, *Exact Convex Confidence-Weighted Learning*, NIPS 2008.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.CW(eta=0.7), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        CW: sum 60.1%
    """
    )

    step_size = None  # η is the confidence of the prediction, not a step

    eta: ArrayLike = hyperparameter(0.7)

    def step(self, state: CWState, ex: Example) -> tuple[CWState, StepInfo]:
        return cw_family_step(state, ex, self.eta, None, "CW")


@pytree_dataclass
class SCW1(_CWBase):
    __doc__ = (
        r"""Soft confidence-weighted learning, SCW-I: exact CW with its step clipped at ``C``.

    As :class:`CW`, with ``α_t = min{C, max{0, (−m_tψ + √(m_t²φ⁴/4 + v_tφ²ξ))/(v_tξ)}}`` (Wang, Zhao, Hoi,
    ICML 2012, Prop. 1; LIBOL ``SCW.m``):

    .. math::

        \alpha_t = \min\Big\{C, \max\Big\{0, \frac{-m_t\psi + \sqrt{m_t^2\phi^4/4 + v_t\phi^2\xi}}{v_t\xi}\Big\}\Big\},

    with ``u_t``, ``β_t`` and the mean and covariance updates of :class:`CW`, applied when
    ``ℓ_t = max(0, φ√v_t − m_t) > 0``.
    """
        + _GUARD_DOC
        + r"""
    Args:
        eta: the confidence η in (0.5, 1), 0.75 by default (LIBOL).
        C: the aggressiveness (> 0), 1 by default (LIBOL).

    Reference: J. Wang, P. Zhao, S. C. H. Hoi, *Exact Soft Confidence-Weighted Learning*, ICML 2012.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.SCW1(eta=0.75, C=1.0), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        SCW-I: sum 57.7%
    """
    )

    step_size = "C"

    eta: ArrayLike = hyperparameter(0.75)
    C: ArrayLike = hyperparameter(1.0)

    @property
    def name(self) -> str:
        return "SCW-I"

    def step(self, state: CWState, ex: Example) -> tuple[CWState, StepInfo]:
        return cw_family_step(state, ex, self.eta, self.C, "SCW-I")


@pytree_dataclass
class SCW2(_CWBase):
    __doc__ = (
        r"""Soft confidence-weighted learning, SCW-II: the squared-slack variant.

    With ``n_t = v_t + 1/(2C)`` (Wang, Zhao, Hoi, ICML 2012, Prop. 2):

    .. math::

        \gamma_t = \phi\sqrt{\phi^2 m_t^2 v_t^2 + 4 n_t v_t (n_t + v_t\phi^2)}, \qquad
        \alpha_t = \max\Big\{0, \frac{-(2 m_t n_t + \phi^2 m_t v_t) + \gamma_t}{2(n_t^2 + n_t v_t \phi^2)}\Big\},

    with ``u_t``, ``β_t`` and the mean and covariance updates of :class:`CW`, applied when
    ``ℓ_t = max(0, φ√v_t − m_t) > 0``.

    **Departure from LIBOL.** LIBOL's ``SCW2.m`` (and its C version) computes
    ``sqrt(φ⁴m²v·2 + 4nvφ²(n + vφ·2))`` — ``v*2`` and ``phi*2`` where the paper has ``v²`` and ``φ²``.
    This implementation follows the paper.
    """
        + _GUARD_DOC
        + r"""
    Args:
        eta: the confidence η in (0.5, 1), 0.9 by default (LIBOL).
        C: the aggressiveness (> 0), 1 by default (LIBOL).

    Reference: J. Wang, P. Zhao, S. C. H. Hoi, *Exact Soft Confidence-Weighted Learning*, ICML 2012.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.SCW2(eta=0.9, C=1.0), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        SCW-II: sum 57.5%
    """
    )

    step_size = "C"

    eta: ArrayLike = hyperparameter(0.9)
    C: ArrayLike = hyperparameter(1.0)

    @property
    def name(self) -> str:
        return "SCW-II"

    def row_scales(self, d: int, dtype: Any) -> tuple[float, float]:  # γ_t holds m_t² v_t²: fourth powers
        return normal_row_scales(dtype, 4)

    def step(self, state: CWState, ex: Example) -> tuple[CWState, StepInfo]:
        return cw_family_step(state, ex, self.eta, self.C, "SCW-II")
