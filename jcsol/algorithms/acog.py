"""ACOG: adaptive regularized cost-sensitive online gradient descent, full and diagonal covariance
(Zhao, Zhuang, Wu, Li, Hoi, ICDM 2015, where it is called ARCSOGD; Zhao, Zhang, Wu, Hoi, Tan, Huang,
*Adaptive Cost-Sensitive Online Classification*, TKDE, Alg. 1), with the AROW-style "old Σ" mean step of that
paper's Fig. 7 as the other end of one float hyperparameter."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from ..base import (
    Example,
    Learner,
    StepInfo,
    choice,
    concrete_values,
    covariance_row_scales,
    hyperparameter,
    normal_row_scales,
    pytree_dataclass,
)
from ..linalg import (
    SparseVector,
    Vector,
    add_scaled,
    add_scaled_square,
    densify,
    dot,
    matvec,
    weighted_squared_norm,
)
from ..objective import LOSSES, cost_sensitive_loss


class ACOGState(NamedTuple):
    mu: jax.Array  # (d,) mean: the linear predictor
    sigma: jax.Array  # (d, d) covariance, or (d,) its diagonal for ACOG-diag


@pytree_dataclass
class ACOG(Learner[ACOGState]):
    r"""Second-order cost-sensitive online learning: a Gaussian ``N(μ, Σ)`` over weights, predicting with ``μ``.

    When the cost-sensitive loss ``ℓ_t(μ_t)`` is positive:

    .. math::

        \Sigma_{t+1} = \Sigma_t - \frac{\Sigma_t x_t x_t^\top \Sigma_t}{\gamma + x_t^\top \Sigma_t x_t},
        \qquad
        \mu_{t+1} = \mu_t - \eta\, \big((1-\nu)\,\Sigma_t + \nu\,\Sigma_{t+1}\big)\, g_t,

    otherwise nothing changes; ``μ_1 = 0``, ``Σ_1 = I``. The loss and its gradient ``g_t = −c·y·x`` are those of
    :func:`jcsol.objective.cost_sensitive_loss` (type I: ``c = 1``; type II: ``c = ρ_t``).

    ``ν = 1`` (the default) is ACOG: the mean step uses the *new* covariance, the difference from AROW
    (Zhao et al., TKDE, Eq. 7 and Alg. 1). ``ν = 0`` steps along the covariance *before* the update, as AROW does
    (the "invariant version" of that paper's §4.4.3, Fig. 7). Since ``ν`` is a float hyperparameter, one
    :func:`jcsol.run` over ``jcsol.grid(ACOG(), eta=…, new_sigma=[0.0, 1.0])`` compares the two rules on the same
    permutations (:func:`jcsol.protocols.old_vs_new_sigma`).

    Since ``Σ_{t+1} x = γ Σ_t x / (γ + xᵀΣ_t x)``, the mean step is computed from the one matrix-vector
    product ``Σ_t x`` the covariance update needs:
    ``μ_{t+1} = μ_t + η c y ((1 − ν)(γ + xᵀΣ_t x) + ν γ) Σ_t x / (γ + xᵀΣ_t x)``.

    ``diagonal=True`` (ACOG-diag) keeps only the diagonal ``s`` of ``Σ``:
    ``s ← s − (s∘x)² / (γ + Σ_i s_i x_i²)``, ``μ ← μ − η ((1 − ν) s_t + ν s_{t+1})∘g``, at O(d) per round
    (O(nnz) on sparse rows). The full covariance costs O(d²) memory and time per round and run.

    Args:
        eta: learning rate η (> 0).
        gamma: regularisation γ (> 0), 1 in the papers.
        new_sigma: ν in [0, 1], the weight of the new covariance ``Σ_{t+1}`` in the mean step: 1 is ACOG,
            0 the old-Σ rule.
        loss: ``"I"`` or ``"II"``.
        diagonal: keep only the diagonal of Σ.

    Reference: P. Zhao, Y. Zhang, M. Wu, S. C. H. Hoi, M. Tan, J. Huang, *Adaptive Cost-Sensitive Online
    Classification*, IEEE TKDE, Alg. 1 (ACOG), §2.2 (ACOG-diag) and §4.4.3, Fig. 7 (old vs new Σ).

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.ACOG(eta=10.0, loss="II"), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        ACOG-II: sum 67.2%
    """

    step_size = "eta"

    eta: ArrayLike = hyperparameter(1e-2)
    gamma: ArrayLike = hyperparameter(1.0)
    new_sigma: ArrayLike = hyperparameter(1.0, positive=False)
    loss: str = choice("I", *LOSSES)
    diagonal: bool = choice(False, False, True)

    weights_field = "mu"

    def __post_init__(self) -> None:
        super().__post_init__()
        nu = concrete_values(self.new_sigma)
        if nu is not None and np.any((nu < 0) | (nu > 1)):
            raise ValueError(f"{type(self).__name__}: new_sigma must be in [0, 1], got {self.new_sigma!r}")

    @property
    def name(self) -> str:
        return f"ACOG-{self.loss}" + ("-diag" if self.diagonal else "")

    @property
    def sparse_steps(self) -> bool:  # the diagonal version touches only a row's non-zeros
        return self.diagonal

    kernel_steps = True  # dense steps run in the GPU kernel (jcsol.core.triton), Σ full or diagonal

    def too_large_hint(self) -> str:
        return "use diagonal=True (ACOG-diag, O(d) memory per run) or fewer runs"

    def row_scales(self, d: int, dtype: Any) -> tuple[float, float]:  # the full covariance update cancels
        return normal_row_scales(dtype) if self.diagonal else covariance_row_scales(dtype)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> ACOGState:
        sigma = jnp.ones(d, dtype) if self.diagonal else jnp.eye(d, dtype=dtype)
        return ACOGState(mu=jnp.zeros(d, dtype), sigma=sigma)

    def step(self, state: ACOGState, ex: Example) -> tuple[ACOGState, StepInfo]:
        mu, sigma, x, y = state.mu, state.sigma, ex.x, ex.y
        f = dot(mu, x)
        loss, c = cost_sensitive_loss(self.loss, y * f, ex.rho)
        update = (loss > 0).astype(mu.dtype)
        nu = jnp.asarray(self.new_sigma, mu.dtype)
        # at ν = 1 the mixed step is exactly the Σ_{t+1} one (0·a + 1·b = b): ACOG's arithmetic, bit for bit
        if self.diagonal:
            beta = update / (self.gamma + weighted_squared_norm(sigma, x))
            new = add_scaled_square(sigma, -beta, sigma, x)
            step = (1 - nu) * _on_support(sigma, x) + nu * _on_support(new, x)
            mu = add_scaled(mu, update * self.eta * c * y * step, x)
            sigma = new
        else:
            x = densify(x, mu.shape[0])
            sx = matvec(sigma, x, symmetric=True)
            denom = self.gamma + dot(sx, x)
            sigma = sigma - (update / denom) * jnp.outer(sx, sx)
            mu = mu + (update * self.eta * c * y * ((1 - nu) * denom + nu * self.gamma) / denom) * sx
        return ACOGState(mu=mu, sigma=sigma), StepInfo(score=f, loss=loss)


def _on_support(s: jax.Array, x: Vector) -> jax.Array:
    """The entries of ``s`` that multiply ``x``'s values: ``s`` itself for a dense row, ``s[indices]`` for a
    sparse one (so that the diagonal step stays O(nnz))."""
    return s[x.indices] if isinstance(x, SparseVector) else s
