"""Perceptron (Rosenblatt 1958), the first-order mistake-driven baseline of every paper (LIBOL ``Perceptron.m``)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..base import Example, Learner, StepInfo, pytree_dataclass
from ..linalg import add_scaled, dot


class PerceptronState(NamedTuple):
    w: jax.Array  # (d,) weight vector


@pytree_dataclass
class Perceptron(Learner[PerceptronState]):
    r"""The Perceptron: add the example to the weights on every mistake.

    .. math::

        f_t = w_t \cdot x_t, \qquad \hat y_t = \operatorname{sign}(f_t)\ (\text{+1 at } f_t = 0), \qquad
        w_{t+1} = w_t + y_t x_t \quad \text{if } \hat y_t \ne y_t, \qquad w_1 = 0.

    A mistake is a wrong *prediction*, so with the convention "score 0 predicts +1" a positive example
    scored exactly 0 is not a mistake, a negative one is (as LIBOL's ``Perceptron.m``). The predictions
    do not depend on any step size (``w`` is a sum of ±x), so the learner has no hyperparameter.
    The reported loss is the 0/1 mistake indicator. On :class:`jcsol.SparseRows` a step costs O(nnz).

    Reference: F. Rosenblatt, *The perceptron: a probabilistic model for information storage and
    organization in the brain*, Psychological Review 65(6), 1958.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.Perceptron(), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        Perceptron: sum 55.5%
    """

    sparse_steps = True
    kernel_steps = True  # dense steps run in the GPU kernel (jcsol.core.triton)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> PerceptronState:
        return PerceptronState(w=jnp.zeros(d, dtype))

    def step(self, state: PerceptronState, ex: Example) -> tuple[PerceptronState, StepInfo]:
        f = dot(state.w, ex.x)
        mistake = (jnp.where(f >= 0, 1.0, -1.0) != ex.y).astype(state.w.dtype)
        return PerceptronState(w=add_scaled(state.w, mistake * ex.y, ex.x)), StepInfo(score=f, loss=mistake)
