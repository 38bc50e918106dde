"""PAUM: the perceptron algorithm with uneven margins (Li, Zaragoza, Herbrich, Shawe-Taylor, Kandola, ICML 2002),
the cost-sensitive first-order baseline of the cost-sensitive online classification papers."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..base import Example, Learner, StepInfo, pytree_dataclass
from ..linalg import add_scaled, dot


class PAUMState(NamedTuple):
    w: jax.Array  # (d,) weight vector


@pytree_dataclass
class PAUM(Learner[PAUMState]):
    r"""Perceptron with uneven margins: a perceptron step whenever the margin is at most the class's margin.

    .. math::

        f_t = w_t \cdot x_t, \qquad w_{t+1} = w_t + y_t x_t \quad \text{if } y_t f_t \le \tau_{y_t},
        \qquad w_1 = 0,

    with ``τ_{+1} = ρ`` and ``τ_{−1} = 1`` as in the cost-sensitive papers (Wang, Zhao, Hoi, ICDM 2012, §5;
    Zhao et al., TKDE 2019, §4.1: "the uneven margin was set to ρ"), i.e. ``τ_{y_t} = ρ_t``, the example weight
    the engine computes from the objective (:class:`jcsol.Sum`: ``ρ = α_p T_n/(α_n T_p)``; :class:`jcsol.Cost`:
    ``c_p/c_n``). There is no bias term and no learning rate (the original algorithm's ``η`` only rescales ``w``
    against fixed margins, and the papers use ``η = 1``). The reported loss is ``max(0, τ_{y_t} − y_t f_t)``.
    On :class:`jcsol.SparseRows` a step costs O(nnz).

    Reference: Y. Li, H. Zaragoza, R. Herbrich, J. Shawe-Taylor, J. Kandola, *The Perceptron Algorithm with
    Uneven Margins*, ICML 2002, Alg. 1 (PAUM(τ₋₁, τ₊₁)).

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.PAUM(), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        PAUM: sum 54.5%
    """

    sparse_steps = True
    kernel_steps = True  # dense steps run in the GPU kernel (jcsol.core.triton)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> PAUMState:
        return PAUMState(w=jnp.zeros(d, dtype))

    def step(self, state: PAUMState, ex: Example) -> tuple[PAUMState, StepInfo]:
        f = dot(state.w, ex.x)
        margin = ex.y * f
        update = (margin <= ex.rho).astype(state.w.dtype)
        loss = jnp.maximum(0.0, ex.rho - margin)
        return PAUMState(w=add_scaled(state.w, update * ex.y, ex.x)), StepInfo(score=f, loss=loss)
