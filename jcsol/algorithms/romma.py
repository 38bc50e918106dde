"""ROMMA and aggressive ROMMA: the relaxed online maximum margin algorithm (Li & Long, NIPS 1999 / Machine
Learning 2002; LIBOL ``ROMMA.m``, ``aROMMA.m``)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..base import Example, Learner, StepInfo, pytree_dataclass

#: Relative tolerance under which ``x_t`` counts as parallel to ``w_t`` (``sin² ∠(x_t, w_t) <= PARALLEL_TOL``),
#: where the ROMMA constraints are degenerate and no update is made. LIBOL skips the update when the
#: denominator is exactly 0, which rounding almost never produces (an exact duplicate of the example that
#: made ``w = y x`` gives a denominator of ~1e-16 and a step of ~1e16 there).
PARALLEL_TOL = 1e-6


class ROMMAState(NamedTuple):
    w: jax.Array  # (d,) weight vector


def _romma_step(w: jax.Array, ex: Example, aggressive: bool) -> tuple[jax.Array, jax.Array, jax.Array]:
    """One ROMMA round: ``(new w, score, loss)``."""
    x, y = ex.x, ex.y
    f = w @ x
    margin = y * f
    if aggressive:
        loss = jnp.maximum(0.0, 1.0 - margin)
        update = loss > 0
    else:
        update = margin <= 0
        loss = update.astype(x.dtype)
    ww = w @ w
    xx = x @ x
    first = ww == 0
    # x_perp: the part of x orthogonal to w; (x·x)(w·w) − (w·x)² = (w·w)(x_perp·x_perp).
    x_perp = x - (f / jnp.where(first, 1.0, ww)) * w
    pp = x_perp @ x_perp
    regular = (~first) & (pp > PARALLEL_TOL * xx)
    step_first = jnp.where(update & first, y, 0.0)
    step_perp = jnp.where(update & regular, (y - f) / jnp.where(regular, pp, 1.0), 0.0)
    return w + step_first * x + step_perp * x_perp, f, loss


@pytree_dataclass
class ROMMA(Learner[ROMMAState]):
    r"""ROMMA: the smallest-norm weights satisfying the last constraint and a relaxation of all earlier ones.

    On a round with ``y_t f_t <= 0`` (a score of exactly 0 counts as a margin violation, as in every
    jcsol learner, so the first example always updates), ``w_{t+1}`` is the minimum-norm ``w`` with ``w·w_t >= ‖w_t‖²``
    and ``y_t w·x_t >= 1``, whose closed form (Li & Long 2002, §3) is

    .. math::

        w_{t+1} = c_t w_t + d_t x_t, \quad
        c_t = \frac{\|x_t\|^2\|w_t\|^2 - y_t f_t}{\|x_t\|^2\|w_t\|^2 - f_t^2}, \quad
        d_t = \frac{\|w_t\|^2 (y_t - f_t)}{\|x_t\|^2\|w_t\|^2 - f_t^2},

    and ``w_2 = y_1 x_1`` for the first update from ``w_1 = 0`` (LIBOL; the paper's ``y x/‖x‖²`` is the
    same on L2-normalised rows). It is computed here in the algebraically equal form

    .. math::

        x_\perp = x_t - \frac{f_t}{\|w_t\|^2} w_t, \qquad
        w_{t+1} = w_t + \frac{y_t - f_t}{\|x_\perp\|^2}\, x_\perp

    (the denominator above is ``‖w_t‖²‖x_⊥‖²``), which keeps ``w_{t+1}·w_t = ‖w_t‖²`` and ``y_t
    w_{t+1}·x_t = 1`` exact up to rounding instead of cancelling two large coefficients. Where ``x_t`` is
    parallel to ``w_t`` (``‖x_⊥‖² <= PARALLEL_TOL·‖x_t‖²``) the constraints are degenerate and, as in LIBOL,
    nothing changes. The reported loss is the indicator of ``y_t f_t <= 0``.

    Reference: Y. Li, P. M. Long, *The relaxed online maximum margin algorithm*, Machine Learning 46, 2002
    (NIPS 1999).

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.ROMMA(), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        ROMMA: sum 53.8%
    """

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> ROMMAState:
        return ROMMAState(w=jnp.zeros(d, dtype))

    def step(self, state: ROMMAState, ex: Example) -> tuple[ROMMAState, StepInfo]:
        w, f, loss = _romma_step(state.w, ex, aggressive=False)
        return ROMMAState(w=w), StepInfo(score=f, loss=loss)


@pytree_dataclass
class AROMMA(Learner[ROMMAState]):
    r"""Aggressive ROMMA: the ROMMA update of :class:`ROMMA` on every round with ``y_t f_t < 1``.

    .. math::

        \ell_t = \max(0, 1 - y_t f_t), \qquad
        w_{t+1} = w_t + \frac{y_t - f_t}{\|x_\perp\|^2}\, x_\perp \quad \text{if } \ell_t > 0,

    with ``x_⊥`` and the first update ``w = y x`` as in :class:`ROMMA`. The reported loss is ``ℓ_t``.

    Reference: Y. Li, P. M. Long, *The relaxed online maximum margin algorithm*, Machine Learning 46, 2002,
    §4 (aggressive ROMMA); LIBOL ``aROMMA.m``.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.AROMMA(), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        aROMMA: sum 54.6%
    """

    @property
    def name(self) -> str:
        return "aROMMA"

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> ROMMAState:
        return ROMMAState(w=jnp.zeros(d, dtype))

    def step(self, state: ROMMAState, ex: Example) -> tuple[ROMMAState, StepInfo]:
        w, f, loss = _romma_step(state.w, ex, aggressive=True)
        return ROMMAState(w=w), StepInfo(score=f, loss=loss)
