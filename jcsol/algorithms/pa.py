"""Passive-Aggressive learners: PA, PA-I, PA-II and the cost-sensitive CPA-PB (prediction-based) and CPA-ML
(max-loss) (Crammer, Dekel,
Keshet, Shalev-Shwartz, Singer, *Online Passive-Aggressive Algorithms*, JMLR 7, 2006; LIBOL ``PA.m``, ``PA1.m``,
``PA2.m``). Every step here costs O(nnz) on :class:`jcsol.SparseRows`."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..base import Example, Learner, StepInfo, hyperparameter, pytree_dataclass
from ..linalg import Vector, add_scaled, dot, squared_norm


class PAState(NamedTuple):
    w: jax.Array  # (d,) weight vector


def _pa_update(w: jax.Array, x: Vector, y: jax.Array, loss: jax.Array, variant: str, C: Any) -> jax.Array:
    """``w + τ y x`` with the PA step ``τ`` of ``variant`` for a round with loss ``loss`` (τ = 0 where loss = 0).

    A zero row (``‖x‖² = 0``) changes nothing whatever τ; τ is set to 0 there so that no ``∞·0`` appears.
    """
    sq = squared_norm(x)
    nonzero = sq > 0
    ratio = loss / jnp.where(nonzero, sq, 1.0)
    if variant == "PA":
        tau = ratio
    elif variant == "PA-I":
        tau = jnp.minimum(C, ratio)
    else:  # PA-II
        tau = loss / (sq + 0.5 / C)
    tau = jnp.where(nonzero & (loss > 0), tau, 0.0)
    return add_scaled(w, tau * y, x)


class _PABase(Learner[PAState]):
    sparse_steps = True  # O(nnz) per step on jcsol.SparseRows
    kernel_steps = True  # dense steps run in the GPU kernel (jcsol.core.triton)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> PAState:
        return PAState(w=jnp.zeros(d, dtype))


@pytree_dataclass
class PA(_PABase):
    r"""Passive-Aggressive (PA): the smallest change of ``w`` that attains margin 1 on the current example.

    .. math::

        \ell_t = \max(0, 1 - y_t f_t), \qquad \tau_t = \frac{\ell_t}{\|x_t\|^2}, \qquad
        w_{t+1} = w_t + \tau_t y_t x_t, \qquad w_1 = 0

    (JMLR 2006, §3 and Fig. 1; ``τ = 0`` for a zero row, where LIBOL's ``τ = 1`` changes nothing either).
    The reported loss is ``ℓ_t``.

    Reference: K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz, Y. Singer, *Online Passive-Aggressive
    Algorithms*, JMLR 7:551–585, 2006.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.PA(), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        PA: sum 53.7%
    """

    def step(self, state: PAState, ex: Example) -> tuple[PAState, StepInfo]:
        f = dot(state.w, ex.x)
        loss = jnp.maximum(0.0, 1.0 - ex.y * f)
        return PAState(w=_pa_update(state.w, ex.x, ex.y, loss, "PA", None)), StepInfo(score=f, loss=loss)


@pytree_dataclass
class PA1(_PABase):
    r"""PA-I: the PA step clipped at the aggressiveness ``C``.

    .. math::

        \ell_t = \max(0, 1 - y_t f_t), \qquad \tau_t = \min\Big(C, \frac{\ell_t}{\|x_t\|^2}\Big), \qquad
        w_{t+1} = w_t + \tau_t y_t x_t

    (JMLR 2006, §3 and Fig. 1). The reported loss is ``ℓ_t``.

    Args:
        C: aggressiveness (> 0), 1 by default (LIBOL); the cost-sensitive papers use ``C = 10`` (Wang, Zhao,
            Hoi, ICDM 2012) or select it from ``{10^-5, …, 10^5}`` (Zhao et al., TKDE 2019).

    Reference: K. Crammer et al., *Online Passive-Aggressive Algorithms*, JMLR 7, 2006.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.PA1(C=1.0), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        PA-I: sum 53.6%
    """

    step_size = "C"

    C: ArrayLike = hyperparameter(1.0)

    @property
    def name(self) -> str:
        return "PA-I"

    def step(self, state: PAState, ex: Example) -> tuple[PAState, StepInfo]:
        f = dot(state.w, ex.x)
        loss = jnp.maximum(0.0, 1.0 - ex.y * f)
        return PAState(w=_pa_update(state.w, ex.x, ex.y, loss, "PA-I", self.C)), StepInfo(score=f, loss=loss)


@pytree_dataclass
class PA2(_PABase):
    r"""PA-II: the PA step with a squared-slack penalty ``C``.

    .. math::

        \ell_t = \max(0, 1 - y_t f_t), \qquad \tau_t = \frac{\ell_t}{\|x_t\|^2 + \frac{1}{2C}}, \qquad
        w_{t+1} = w_t + \tau_t y_t x_t

    (JMLR 2006, §3 and Fig. 1). The reported loss is ``ℓ_t``.

    Args:
        C: aggressiveness (> 0), 1 by default (LIBOL).

    Reference: K. Crammer et al., *Online Passive-Aggressive Algorithms*, JMLR 7, 2006.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.PA2(C=1.0), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        PA-II: sum 54.4%
    """

    step_size = "C"

    C: ArrayLike = hyperparameter(1.0)

    @property
    def name(self) -> str:
        return "PA-II"

    def step(self, state: PAState, ex: Example) -> tuple[PAState, StepInfo]:
        f = dot(state.w, ex.x)
        loss = jnp.maximum(0.0, 1.0 - ex.y * f)
        return PAState(w=_pa_update(state.w, ex.x, ex.y, loss, "PA-II", self.C)), StepInfo(score=f, loss=loss)


@pytree_dataclass
class CPAPB(_PABase):
    r"""CPA-PB: cost-sensitive, prediction-based PA-I (the binary case of JMLR 2006 §7).

    With the costs ``ρ(y, ŷ)`` of predicting ``ŷ`` for ``y`` — ``ρ(−1, +1) = 1`` (false alarm) and
    ``ρ(+1, −1) = ρ`` (missed positive), i.e. ``ρ_t`` of :class:`jcsol.Example` — the loss on a mistake is

    .. math::

        \ell_t = \sqrt{\rho(y_t, \hat y_t)} - y_t f_t \ \text{ if } \hat y_t \ne y_t \text{ else } 0,
        \qquad \tau_t = \min\Big(C, \frac{\ell_t}{\|x_t\|^2}\Big), \qquad w_{t+1} = w_t + \tau_t y_t x_t.

    This is the prediction-based (PB) update of JMLR 2006 §7 with ``Φ(x, y) = y x / 2``:
    ``w·Φ(x,ŷ) − w·Φ(x,y) = −y f`` on a mistake and ``‖Φ(x,y) − Φ(x,ŷ)‖² = ‖x‖²``; the step is the PA-I one
    (the papers' "PA-I" setting). A mistake is a wrong prediction with "score 0 predicts +1".
    The reported loss is ``ℓ_t``.

    Args:
        C: aggressiveness (> 0), 1 by default (LIBOL's PA-I default); Wang, Zhao, Hoi (ICDM 2012)
            use ``C = 10``.

    Reference: K. Crammer et al., *Online Passive-Aggressive Algorithms*, JMLR 7, 2006, §7 (cost-sensitive
    multiclass, prediction-based); used as a cost-sensitive baseline by Wang, Zhao, Hoi (ICDM 2012) with
    ``ρ(−1, 1) = 1``, ``ρ(1, −1) = ρ``.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.CPAPB(C=1.0), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        CPA-PB: sum 55.5%
    """

    step_size = "C"

    C: ArrayLike = hyperparameter(1.0)

    @property
    def name(self) -> str:
        return "CPA-PB"

    def step(self, state: PAState, ex: Example) -> tuple[PAState, StepInfo]:
        f = dot(state.w, ex.x)
        mistake = jnp.where(f >= 0, 1.0, -1.0) != ex.y
        loss = jnp.where(mistake, jnp.sqrt(ex.rho) - ex.y * f, 0.0)
        return PAState(w=_pa_update(state.w, ex.x, ex.y, loss, "PA-I", self.C)), StepInfo(score=f, loss=loss)


@pytree_dataclass
class CPAML(_PABase):
    r"""CPA-ML: cost-sensitive, max-loss PA-I (the binary case of JMLR 2006 §7).

    .. math::

        \ell_t = \max\big(0, \sqrt{\rho_t} - y_t f_t\big), \qquad \tau_t = \min\Big(C, \frac{\ell_t}{\|x_t\|^2}\Big),
        \qquad w_{t+1} = w_t + \tau_t y_t x_t,

    with ``ρ_t`` the cost of misclassifying the example (``ρ(+1, −1) = ρ`` for a positive, ``ρ(−1, +1) = 1``
    for a negative: ``ρ_t`` of :class:`jcsol.Example`). The max-loss (ML) update of JMLR 2006 §7 takes the label
    of largest cost-augmented violation, ``argmax_r w·Φ(x,r) − w·Φ(x,y) + √ρ(y,r)``; in the binary case that is
    the other label whenever ``ℓ_t > 0``, so CPA-ML steps on every round whose margin falls short of ``√ρ_t``,
    mistake or not, where :class:`CPAPB` steps on mistakes only. With ``C = 10`` it gives the CPA-PB rows of
    Zhao et al. (IEEE TKDE 2019) Tables II and VIII on a9a and dna, which the prediction-based rule misses
    (``benchmarks/paper_cells.py``). The reported loss is ``ℓ_t``.

    Args:
        C: aggressiveness (> 0), 1 by default.

    Reference: K. Crammer et al., *Online Passive-Aggressive Algorithms*, JMLR 7, 2006, §7 (cost-sensitive
    multiclass, max-loss).

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.CPAML(C=1.0), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        CPA-ML: sum 54.9%
    """

    step_size = "C"

    C: ArrayLike = hyperparameter(1.0)

    @property
    def name(self) -> str:
        return "CPA-ML"

    def step(self, state: PAState, ex: Example) -> tuple[PAState, StepInfo]:
        f = dot(state.w, ex.x)
        loss = jnp.maximum(0.0, jnp.sqrt(ex.rho) - ex.y * f)
        return PAState(w=_pa_update(state.w, ex.x, ex.y, loss, "PA-I", self.C)), StepInfo(score=f, loss=loss)
