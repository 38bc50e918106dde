"""AROW: adaptive regularization of weight vectors (Crammer, Kulesza, Dredze, NIPS 2009; LIBOL ``AROW.m``)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..base import Example, Learner, StepInfo, covariance_row_scales, hyperparameter, pytree_dataclass
from ..linalg import dot, matvec


class AROWState(NamedTuple):
    mu: jax.Array  # (d,) mean: the linear predictor
    sigma: jax.Array  # (d, d) covariance


@pytree_dataclass
class AROW(Learner[AROWState]):
    r"""AROW: a Gaussian ``N(μ, Σ)`` over weights, updated on the hinge loss of the mean with the *old* covariance.

    .. math::

        f_t = \mu_t \cdot x_t, \quad \ell_t = \max(0, 1 - y_t f_t), \quad v_t = x_t^\top \Sigma_t x_t, \quad
        \beta_t = \frac{1}{v_t + r},

        \mu_{t+1} = \mu_t + \ell_t \beta_t\, y_t \Sigma_t x_t, \qquad
        \Sigma_{t+1} = \Sigma_t - \beta_t \Sigma_t x_t x_t^\top \Sigma_t \qquad \text{if } \ell_t > 0,

    ``μ_1 = 0``, ``Σ_1 = I`` (NIPS 2009, Eqs. 10–12 with ``α_t = ℓ_t β_t``). Compare :class:`jcsol.ACOG`, whose
    mean step uses the new covariance and the cost-sensitive loss. The variance along ``x`` shrinks by the
    factor ``r/(v_t + r)``, so Σ stays well conditioned in float32. Cost O(d²) per round and run.

    Args:
        r: regularisation (> 0), 1 by default and in the papers (LIBOL's ``C``).

    Reference: K. Crammer, A. Kulesza, M. Dredze, *Adaptive Regularization of Weight Vectors*, NIPS 2009.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.AROW(r=1.0), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        AROW: sum 53.3%
    """

    step_size = None  # r = 1, as the ACOG paper sets it for AROW (§4.1)

    r: ArrayLike = hyperparameter(1.0)

    weights_field = "mu"
    kernel_steps = True  # dense steps run in the GPU kernel (jcsol.core.triton)

    def too_large_hint(self) -> str:
        return "use fewer runs (AROW keeps a d × d covariance per run)"

    def row_scales(self, d: int, dtype: Any) -> tuple[float, float]:  # its covariance update cancels beyond
        return covariance_row_scales(dtype)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> AROWState:
        return AROWState(mu=jnp.zeros(d, dtype), sigma=jnp.eye(d, dtype=dtype))

    def step(self, state: AROWState, ex: Example) -> tuple[AROWState, StepInfo]:
        mu, sigma, x, y = state.mu, state.sigma, ex.x, ex.y
        f = dot(mu, x)
        loss = jnp.maximum(0.0, 1.0 - y * f)
        sx = matvec(sigma, x, symmetric=True)
        beta = jnp.where(loss > 0, 1.0 / (dot(sx, x) + self.r), 0.0)
        mu = mu + (loss * beta * y) * sx
        sigma = sigma - beta * jnp.outer(sx, sx)
        return AROWState(mu=mu, sigma=sigma), StepInfo(score=f, loss=loss)
