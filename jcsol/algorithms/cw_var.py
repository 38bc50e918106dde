r"""Confidence-weighted learning in its first, variance form (Dredze, Crammer, Pereira, *Confidence-Weighted
Linear Classification*, ICML 2008): full covariance, and the two diagonal approximations of that paper.

The learner keeps a Gaussian ``N(μ, Σ)`` over weights and makes the smallest KL step to one under which
``x_t`` is classified correctly with probability η, with the constraint linearised in the *variance*:
``y_t μ·x_t >= φ x_tᵀΣx_t``, ``φ = Φ^{-1}(η)``. With ``M_t = y_t μ_t·x_t`` and ``V_t = x_tᵀΣ_t x_t``
(ICML 2008, Eqs. 6, 7 and 11)

.. math::

    \alpha_t = \max\Big(0, \frac{-(1 + 2\phi M_t) + \sqrt{(1 + 2\phi M_t)^2 - 8\phi(M_t - \phi V_t)}}
                              {4\phi V_t}\Big),

    \mu_{t+1} = \mu_t + \alpha_t y_t \Sigma_t x_t, \qquad
    \Sigma_{t+1}^{-1} = \Sigma_t^{-1} + 2\alpha_t\phi\, x_t x_t^\top,

``μ_1 = 0``, ``Σ_1 = I`` (the paper's initial variance ``a = 1``). ``α_t > 0`` exactly when the constraint
is violated (``M_t < φ V_t``).

This is not the exact CW of :class:`jcsol.CW` (Crammer, Dredze, Pereira, *Exact Convex Confidence-Weighted
Learning*, NIPS 2008), whose constraint is on the standard deviation ``φ√V_t``.

``covariance`` picks the form of Σ:

* ``"full"``: Σ as a square root ``Σ = A Aᵀ`` (state field ``root``; :func:`jcsol.algorithms.cw.covariance`
  gives Σ), ``A ← A (I − g z zᵀ)``, ``z = Aᵀx``, ``g = (1 − √r)/V``, ``r = 1/(1 + 2αφV)``: exactly the update
  above, positive semi-definite by construction. O(d²) per round.
* ``"project"``: the paper's approximate "Variance" algorithm: the precision update is projected onto the
  diagonal matrices, ``Σ_{t+1}^{-1} = Σ_t^{-1} + 2α_tφ diag(x_t²)``, i.e. ``s_i ← s_i/(1 + 2αφ s_i x_i²)``
  with ``s`` the diagonal of Σ. Among diagonal Gaussians, ``N(μ_{t+1}, diag(s))`` is the closest in
  ``KL(q ‖ p)`` to the full-covariance update ``p``. This is the diagonal of the CW-CVaR family
  (:mod:`jcsol.algorithms.cw_cvar`).
* ``"drop"``: the off-diagonal entries of the full update of Σ itself are dropped,
  ``Σ_{t+1} = Σ_t − Σ_t x_t \frac{2α_tφ}{1 + 2α_tφV_t} x_t^\top Σ_t`` restricted to its diagonal,
  ``s_i ← s_i − 2αφ s_i² x_i²/(1 + 2αφV)`` (the moment-matching projection, ``KL(p ‖ q)``).

In both diagonal forms ``V_t = Σ_i s_i x_i²`` and ``μ ← μ + α y s∘x``; both cost O(d) per round. A zero row
(``V_t = 0``) does not update. ``α_t`` is computed without cancellation as ``−2k/(b + √Δ)``,
``b = 1 + 2φM``, ``k = (M − φV)/V``, ``Δ = b² − 8φVk``, when ``b >= 0`` and as ``(√Δ − b)/(4φV)`` otherwise.

Reference: M. Dredze, K. Crammer, F. Pereira, *Confidence-Weighted Linear Classification*, ICML 2008
(Alg. 1, the Variance update and its diagonal approximations). It is the baseline "[1]" of Ali,
Collins-Thompson, *Robust Cost-Sensitive Confidence-Weighted Classification*, who ran it diagonal.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..base import (
    Example,
    Learner,
    StepInfo,
    choice,
    covariance_row_scales,
    hyperparameter,
    normal_row_scales,
    pytree_dataclass,
)
from ..linalg import dot, matvec, vecmat
from .cw import check_confidence, confidence_quantile

#: The forms of the covariance: the full matrix and the two diagonal approximations.
COVARIANCES = ("full", "project", "drop")


class CWVarState(NamedTuple):
    mu: jax.Array  # (d,) mean: the linear predictor
    root: jax.Array  # (d, d) square root A of Σ = A Aᵀ (full), or (d,) the diagonal of Σ (project, drop)


def variance_alpha(margin, variance, phi):
    """``α = max(0, γ)`` of the Variance update for margin ``M``, variance ``V`` and ``φ > 0``; 0 where
    ``V <= 0`` or the constraint ``M >= φV`` holds."""
    m, v, p = (jnp.asarray(a) for a in (margin, variance, phi))
    ok = v > 0
    v_s = jnp.where(ok, v, 1.0)
    k = (m - p * v_s) / v_s
    b = 1.0 + 2.0 * p * m
    violated = ok & (k < 0)
    disc = jnp.where(violated, b * b - 8.0 * p * v_s * k, 1.0)  # > b² where k < 0
    root = jnp.sqrt(disc)
    gamma = jnp.where(b >= 0, -2.0 * k / jnp.where(b >= 0, b + root, 1.0), (root - b) / (4.0 * p * v_s))
    return jnp.where(violated, jnp.maximum(gamma, 0.0), 0.0)


@pytree_dataclass
class CWVar(Learner[CWVarState]):
    r"""Confidence-weighted learning, Variance form (ICML 2008): the smallest KL step to ``N(μ, Σ)`` under which
    ``y_t μ·x_t >= φ x_tᵀΣx_t``; with ``M_t = y_t μ_t·x_t``, ``V_t = x_tᵀΣ_t x_t``, when ``M_t < φV_t``:

    .. math::

        \alpha_t = \frac{-(1 + 2\phi M_t) + \sqrt{(1 + 2\phi M_t)^2 - 8\phi(M_t - \phi V_t)}}{4\phi V_t},
        \qquad \mu_{t+1} = \mu_t + \alpha_t y_t \Sigma_t x_t, \qquad
        \Sigma_{t+1}^{-1} = \Sigma_t^{-1} + 2\alpha_t\phi\, x_t x_t^\top,

    ``μ_1 = 0``, ``Σ_1 = I``; with a diagonal Σ (``covariance="project"``: ``s_i ← s_i/(1 + 2αφ s_i x_i²)``;
    ``"drop"``: ``s_i ← s_i − 2αφ s_i² x_i²/(1 + 2αφV_t)``). See the module docstring for the forms of Σ.

    Args:
        eta: the confidence η in (0.5, 1), 0.7 by default (as :class:`jcsol.CW`); ``φ = Φ^{-1}(η)``.
        covariance: ``"full"``, ``"project"`` or ``"drop"`` (static).

    Reference: M. Dredze, K. Crammer, F. Pereira, *Confidence-Weighted Linear Classification*, ICML 2008.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.CWVar(eta=0.7), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        CW-var: sum 59.3%
    """

    step_size = None  # η is the confidence of the prediction, not a step

    eta: ArrayLike = hyperparameter(0.7)
    covariance: str = choice("full", *COVARIANCES)

    weights_field = "mu"
    kernel_steps = True  # dense steps run in the GPU kernel (jcsol.core.triton)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_confidence(self)

    @property
    def name(self) -> str:
        return "CW-var" + ("" if self.covariance == "full" else f"-{self.covariance}")

    def too_large_hint(self) -> str:
        return "use covariance='project' or 'drop' (O(d) memory per run) or fewer runs"

    def row_scales(self, d: int, dtype: Any) -> tuple[float, float]:  # the full and projected updates cancel
        return normal_row_scales(dtype) if self.covariance == "drop" else covariance_row_scales(dtype)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> CWVarState:
        if self.covariance == "full":
            return CWVarState(mu=jnp.zeros(d, dtype), root=jnp.eye(d, dtype=dtype))
        return CWVarState(mu=jnp.zeros(d, dtype), root=jnp.ones(d, dtype))

    def step(self, state: CWVarState, ex: Example) -> tuple[CWVarState, StepInfo]:
        mu, root, x, y = state.mu, state.root, ex.x, ex.y
        phi = confidence_quantile(self.eta, x.dtype)
        f = dot(mu, x)
        m = y * f
        if self.covariance == "full":
            z = vecmat(x, root)
            v = dot(z, z)
            sx = matvec(root, z)
        else:
            sx = root * x
            v = dot(sx, x)
        alpha = variance_alpha(m, v, phi)
        mu = mu + (alpha * y) * sx
        q = 2.0 * alpha * phi  # the precision added along x
        if self.covariance == "full":
            r = 1.0 / (1.0 + q * v)
            g = q * r / (1.0 + jnp.sqrt(r))  # (1 − √r)/V without cancellation
            root = root - g * jnp.outer(sx, z)
        elif self.covariance == "project":
            root = root / (1.0 + q * root * x * x)
        else:
            root = root - (q / (1.0 + q * v)) * sx * sx
        loss = jnp.maximum(0.0, phi * v - m)
        return CWVarState(mu=mu, root=root), StepInfo(score=f, loss=loss)


__all__ = ["COVARIANCES", "CWVar", "CWVarState", "variance_alpha"]
