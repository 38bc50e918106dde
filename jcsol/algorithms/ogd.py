"""OGD: online gradient descent with a decaying step η/√t (Zinkevich, ICML 2003; LIBOL ``OGD.m``)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..base import Example, Learner, StepInfo, choice, hyperparameter, pytree_dataclass
from ..linalg import add_scaled, dot

OGD_LOSSES = ("hinge", "logistic")


class OGDState(NamedTuple):
    w: jax.Array  # (d,) weight vector
    t: jax.Array  # () int32: rounds seen so far (the step of round t uses η/√t, t = 1, 2, …)


@pytree_dataclass
class OGD(Learner[OGDState]):
    r"""Online gradient descent on the hinge or the logistic loss, step ``η/√t``.

    .. math::

        f_t = w_t \cdot x_t, \qquad \eta_t = \frac{\eta}{\sqrt t}, \qquad w_1 = 0,

        \text{hinge: } \ell_t = \max(0, 1 - y_t f_t), \quad w_{t+1} = w_t + \eta_t y_t x_t \ \text{ if } \ell_t > 0;

        \text{logistic: } \ell_t = \log(1 + e^{-y_t f_t}), \quad
        w_{t+1} = w_t + \eta_t \frac{y_t x_t}{1 + e^{y_t f_t}}.

    ``t`` counts every round (updating or not), as LIBOL's ``model.t``; the state carries it. No projection
    and no regularisation (LIBOL's ``OGD.m``, loss types 1 and 2). The logistic step is applied on every
    round (its gradient never vanishes; LIBOL skips it only where ``ℓ_t`` underflows to 0, when the step is
    below 1e-16·η_t anyway). On :class:`jcsol.SparseRows` a step costs O(nnz).

    Args:
        eta: the base learning rate η (> 0), 1 by default (LIBOL's ``C``).
        loss: ``"hinge"`` or ``"logistic"``.

    Reference: M. Zinkevich, *Online Convex Programming and Generalized Infinitesimal Gradient Ascent*,
    ICML 2003 (step ``η/√t``).

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows: blind to the costs, it
        flags almost no bad credit (a sum of 50% is a learner that never flags anything):

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.OGD(eta=1.0, loss="hinge"), X, y, perms=2)
        >>> print(f"sum {100 * res.sum.mean():.1f}%, sensitivity {100 * res.sensitivity.mean():.1f}%")
        sum 50.0%, sensitivity 0.5%
    """

    step_size = "eta"

    eta: ArrayLike = hyperparameter(1.0)
    loss: str = choice("hinge", *OGD_LOSSES)

    sparse_steps = True
    kernel_steps = True  # dense steps run in the GPU kernel (jcsol.core.triton)

    @property
    def name(self) -> str:
        return f"OGD-{self.loss}"

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> OGDState:
        return OGDState(w=jnp.zeros(d, dtype), t=jnp.zeros((), jnp.int32))

    def step(self, state: OGDState, ex: Example) -> tuple[OGDState, StepInfo]:
        x, y = ex.x, ex.y
        t = state.t + 1
        f = dot(state.w, x)
        margin = y * f
        eta_t = jnp.asarray(self.eta) / jnp.sqrt(t.astype(state.w.dtype))
        if self.loss == "hinge":
            loss = jnp.maximum(0.0, 1.0 - margin)
            scale = jnp.where(loss > 0, 1.0, 0.0)
        else:
            loss = jax.nn.softplus(-margin)
            scale = jax.nn.sigmoid(-margin)
        w = add_scaled(state.w, eta_t * scale * y, x)
        return OGDState(w=w, t=t), StepInfo(score=f, loss=loss)
