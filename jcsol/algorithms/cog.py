"""COG: cost-sensitive online gradient descent (Wang, Zhao, Hoi, *Cost-Sensitive Online Classification*,
ICDM 2012 / TKDE 2014, where it is called CSOGD; Zhao et al., *Adaptive Cost-Sensitive Online Classification*,
TKDE 2019, §3 calls it COG)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..base import Example, Learner, StepInfo, choice, hyperparameter, pytree_dataclass
from ..linalg import add_scaled, dot
from ..objective import LOSSES, cost_sensitive_loss


class COGState(NamedTuple):
    w: jax.Array  # (d,) weight vector


@pytree_dataclass
class COG(Learner[COGState]):
    r"""First-order cost-sensitive online gradient descent.

    .. math::

        f_t = w_t \cdot x_t, \qquad
        w_{t+1} = w_t - \lambda\, g_t \quad \text{if } \ell_t(w_t) > 0, \qquad w_1 = 0,

    with the loss of :func:`jcsol.objective.cost_sensitive_loss`:
    type I ``ℓ = max(0, ρ_t − y f)``, ``g = −y x``; type II ``ℓ = ρ_t max(0, 1 − y f)``, ``g = −ρ_t y x``.

    Args:
        eta: the learning rate λ (> 0); an array of values makes a grid.
        loss: ``"I"`` (COG-I, margin) or ``"II"`` (COG-II, slope).

    Reference: J. Wang, P. Zhao, S. C. H. Hoi, *Cost-Sensitive Online Classification*, ICDM 2012, Alg. 1 (CSOGD).

    Example:
        On the German credit data that ships with jcsol, the papers' protocol (the η of the best mean sum over a grid,
        on the same permutations):

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> sweep = jcsol.run(jcsol.COG(eta=jcsol.decades(1e-2, 1e2), loss="II"), X, y, perms=2)
        >>> best = sweep.best("sum")
        >>> print(f"eta={best.params['eta']:g}: sum {100 * best.result.sum.mean():.1f}%")
        eta=0.1: sum 56.8%
    """

    step_size = "eta"

    eta: ArrayLike = hyperparameter(1e-2)
    loss: str = choice("I", *LOSSES)

    sparse_steps = True
    kernel_steps = True  # dense steps run in the GPU kernel (jcsol.core.triton)

    @property
    def name(self) -> str:
        return f"COG-{self.loss}"

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> COGState:
        return COGState(w=jnp.zeros(d, dtype))

    def step(self, state: COGState, ex: Example) -> tuple[COGState, StepInfo]:
        f = dot(state.w, ex.x)
        loss, c = cost_sensitive_loss(self.loss, ex.y * f, ex.rho)
        step = jnp.where(loss > 0, self.eta * c * ex.y, 0.0)
        return COGState(w=add_scaled(state.w, step, ex.x)), StepInfo(score=f, loss=loss)
