"""ACOG: adaptive regularized cost-sensitive online gradient descent, full and diagonal covariance
(Zhao, Zhuang, Wu, Li, Hoi, ICDM 2015, where it is called ARCSOGD; Zhao, Zhang, Wu, Hoi, Tan, Huang,
*Adaptive Cost-Sensitive Online Classification*, TKDE, Alg. 1)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..base import Example, Learner, StepInfo, choice, hyperparameter, pytree_dataclass
from ..linalg import add_scaled_product, add_scaled_square, densify, dot, weighted_squared_norm
from ..objective import LOSSES, cost_sensitive_loss


class ACOGState(NamedTuple):
    mu: jax.Array     # (d,) mean: the linear predictor
    sigma: jax.Array  # (d, d) covariance, or (d,) its diagonal for ACOG-diag


@pytree_dataclass
class ACOG(Learner):
    r"""Second-order cost-sensitive online learning: a Gaussian ``N(μ, Σ)`` over weights, predicting with ``μ``.

    When the cost-sensitive loss ``ℓ_t(μ_t)`` is positive:

    .. math::

        \Sigma_{t+1} = \Sigma_t - \frac{\Sigma_t x_t x_t^\top \Sigma_t}{\gamma + x_t^\top \Sigma_t x_t},
        \qquad
        \mu_{t+1} = \mu_t - \eta\, \Sigma_{t+1} g_t,

    otherwise nothing changes; ``μ_1 = 0``, ``Σ_1 = I``. The mean step uses the *new* covariance — the
    difference from AROW (003 Eq. 7). The loss and its gradient ``g_t = −c·y·x`` are those of
    :func:`jcsol.objective.cost_sensitive_loss` (type I: ``c = 1``; type II: ``c = ρ_t``).

    Since ``Σ_{t+1} x = γ Σ_t x / (γ + xᵀΣ_t x)``, the mean step is computed from the one matrix-vector
    product ``Σ_t x`` the covariance update needs: ``μ_{t+1} = μ_t + η c y γ Σ_t x / (γ + xᵀΣ_t x)``.

    ``diagonal=True`` (ACOG-diag) keeps only the diagonal ``s`` of ``Σ``:
    ``s ← s − (s∘x)² / (γ + Σ_i s_i x_i²)``, ``μ ← μ − η s∘g`` (with the new ``s``), at O(d) per round.
    The full covariance costs O(d²) memory and time per round and run.

    Args:
        eta: learning rate η (> 0).
        gamma: regularisation γ (> 0), 1 in the papers.
        loss: ``"I"`` or ``"II"``.
        diagonal: keep only the diagonal of Σ.

    Reference: P. Zhao, Y. Zhang, M. Wu, S. C. H. Hoi, M. Tan, J. Huang, *Adaptive Cost-Sensitive Online
    Classification*, IEEE TKDE, Alg. 1 (ACOG) and §2.2 (ACOG-diag).
    """

    eta: Any = hyperparameter(1e-2)
    gamma: Any = hyperparameter(1.0)
    loss: str = choice("I", *LOSSES)
    diagonal: bool = choice(False, False, True)

    weights_field = "mu"

    @property
    def name(self) -> str:
        return f"ACOG-{self.loss}" + ("-diag" if self.diagonal else "")

    @property
    def sparse_steps(self) -> bool:  # the diagonal version touches only a row's non-zeros
        return self.diagonal

    def too_large_hint(self) -> str:
        return "use diagonal=True (ACOG-diag, O(d) memory per run) or fewer runs"

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> ACOGState:
        sigma = jnp.ones(d, dtype) if self.diagonal else jnp.eye(d, dtype=dtype)
        return ACOGState(mu=jnp.zeros(d, dtype), sigma=sigma)

    def step(self, state: ACOGState, ex: Example) -> tuple[ACOGState, StepInfo]:
        mu, sigma, x, y = state.mu, state.sigma, ex.x, ex.y
        f = dot(mu, x)
        loss, c = cost_sensitive_loss(self.loss, y * f, ex.rho)
        update = (loss > 0).astype(mu.dtype)
        if self.diagonal:
            beta = update / (self.gamma + weighted_squared_norm(sigma, x))
            sigma = add_scaled_square(sigma, -beta, sigma, x)
            mu = add_scaled_product(mu, update * self.eta * c * y, sigma, x)
        else:
            x = densify(x, mu.shape[0])
            sx = sigma @ x
            denom = self.gamma + sx @ x
            sigma = sigma - (update / denom) * jnp.outer(sx, sx)
            mu = mu + (update * self.eta * c * y * self.gamma / denom) * sx
        return ACOGState(mu=mu, sigma=sigma), StepInfo(score=f, loss=loss)
