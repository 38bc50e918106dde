"""ACOG with the mean step taken along the *old* covariance Σ_t (AROW-style) or the new Σ_{t+1} (ACOG), or any
mixture of the two — the comparison of Zhao, Zhang, Wu, Hoi, Tan, Huang, *Adaptive Cost-Sensitive Online
Classification* (TKDE), §4.4.3, Fig. 7 ("Evaluation of updating rules").

This learner exists for :func:`jcsol.protocols.old_vs_new_sigma`; it is not a registered variant.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ..base import Example, Learner, StepInfo, choice, hyperparameter, pytree_dataclass
from ..objective import LOSSES, cost_sensitive_loss
from .acog import ACOGState


@pytree_dataclass
class ACOGOldSigma(Learner):
    r"""ACOG whose mean step uses ``(1 − ν) Σ_t + ν Σ_{t+1}``: ``ν = 0`` is the old-Σ rule, ``ν = 1`` is ACOG.

    When the cost-sensitive loss ``ℓ_t(μ_t)`` is positive:

    .. math::

        \Sigma_{t+1} = \Sigma_t - \frac{\Sigma_t x_t x_t^\top \Sigma_t}{\gamma + x_t^\top \Sigma_t x_t},
        \qquad
        \mu_{t+1} = \mu_t - \eta\, \big((1-\nu)\,\Sigma_t + \nu\,\Sigma_{t+1}\big)\, g_t .

    ``ν = 0`` steps along the covariance *before* the update, as AROW does (that paper calls this the "invariant
    version", the green line of Fig. 7); ``ν = 1`` along the covariance after it, which is ACOG (that paper's Alg. 1,
    :class:`jcsol.ACOG`). Since ``ν`` is a float hyperparameter (a pytree leaf), one :func:`jcsol.run` over
    ``new_sigma=[0.0, 1.0]`` (times a grid of η) compares the two rules in a single compiled computation.

    With ``Σ_{t+1} x = γ Σ_t x / (γ + xᵀΣ_t x)`` the full-covariance step is
    ``μ ← μ + η c y (1 − ν + ν γ / (γ + xᵀΣ_t x)) Σ_t x``; the diagonal one is
    ``μ ← μ + η c y ((1 − ν) s_t + ν s_{t+1}) ∘ x``. Everything else (loss types I/II, ``μ_1 = 0``,
    ``Σ_1 = I``, no change when the loss is zero) is as in :class:`jcsol.ACOG`.

    Args:
        eta: learning rate η (> 0).
        gamma: regularisation γ (> 0).
        new_sigma: ν, the weight of the new covariance in the mean step (0: old Σ_t, 1: new Σ_{t+1}).
        loss: ``"I"`` or ``"II"``.
        diagonal: keep only the diagonal of Σ.
    """

    eta: Any = hyperparameter(1e-2)
    gamma: Any = hyperparameter(1.0)
    new_sigma: Any = hyperparameter(0.0, positive=False)
    loss: str = choice("I", *LOSSES)
    diagonal: bool = choice(False, False, True)

    weights_field = "mu"

    @property
    def name(self) -> str:
        return f"ACOG-{self.loss}" + ("-diag" if self.diagonal else "") + "-old-sigma"

    def too_large_hint(self) -> str:
        return "use diagonal=True (O(d) memory per run) or fewer runs"

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> ACOGState:
        sigma = jnp.ones(d, dtype) if self.diagonal else jnp.eye(d, dtype=dtype)
        return ACOGState(mu=jnp.zeros(d, dtype), sigma=sigma)

    def step(self, state: ACOGState, ex: Example) -> tuple[ACOGState, StepInfo]:
        mu, sigma, x, y = state.mu, state.sigma, ex.x, ex.y
        f = mu @ x
        loss, c = cost_sensitive_loss(self.loss, y * f, ex.rho)
        update = (loss > 0).astype(x.dtype)
        nu = jnp.asarray(self.new_sigma, x.dtype)
        if self.diagonal:
            sx = sigma * x
            beta = update / (self.gamma + sx @ x)
            new = sigma - beta * sx * sx
            mu = mu + (update * self.eta * c * y) * ((1.0 - nu) * sigma + nu * new) * x
            sigma = new
        else:
            sx = sigma @ x
            denom = self.gamma + sx @ x
            sigma = sigma - (update / denom) * jnp.outer(sx, sx)
            mu = mu + (update * self.eta * c * y * ((1.0 - nu) + nu * self.gamma / denom)) * sx
        return ACOGState(mu=mu, sigma=sigma), StepInfo(score=f, loss=loss)
