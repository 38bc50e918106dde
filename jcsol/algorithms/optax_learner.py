"""OptaxCOG: the first-order cost-sensitive learners with any optax optimizer in place of plain gradient steps.

COG (Wang, Zhao, Hoi, *Cost-Sensitive Online Classification*, ICDM 2012) takes a step ``w ← w − λ g`` on the
subgradient ``g`` of the cost-sensitive loss whenever that loss is positive. Replacing the step ``−λ g`` by the
output of an ``optax.GradientTransformation`` fed with the same ``g`` gives the whole first-order family: AdaGrad, Adam,
RMSProp, momentum, learning-rate schedules, gradient clipping, … With ``optax.sgd`` it *is* COG.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax.typing import ArrayLike

from ..base import Example, Learner, StepInfo, choice, hyperparameter, pytree_dataclass
from ..objective import LOSSES, cost_sensitive_loss


class OptaxCOGState(NamedTuple):
    w: jax.Array  # (d,) weight vector
    opt_state: Any  # the optimizer's state (a pytree of arrays, e.g. Adam's moments and count)


@pytree_dataclass
class OptaxCOG(Learner[OptaxCOGState]):
    r"""Cost-sensitive online learning with an optax optimizer.

    .. math::

        f_t = w_t \cdot x_t, \qquad
        (u_t, s_{t+1}) = \mathrm{opt.update}(g_t, s_t, w_t), \qquad
        w_{t+1} = w_t + u_t \quad \text{if } \ell_t(w_t) > 0, \qquad w_1 = 0,

    with ``ℓ`` and ``g = −c·y·x`` from :func:`jcsol.objective.cost_sensitive_loss` (type I: ``c = 1``; type II:
    ``c = ρ_t``), and ``opt = optimizer(eta, **optimizer_kwargs)``. With ``optimizer="sgd"``,
    ``u_t = −λ g_t`` and this is :class:`jcsol.COG` with the same ``eta``.

    Rounds with zero loss leave *both* the weights and the optimizer state unchanged, exactly as COG skips
    them: the optimizer sees the sequence of subgradients of the rounds where the loss was positive, so Adam's
    moments and bias correction, AdaGrad's accumulator and a schedule's step count advance only on updates
    (feeding a zero gradient instead would let momentum keep moving ``w`` on correctly classified rounds).

    Args:
        eta: the learning rate λ (> 0), passed as the factory's first argument (optax's ``learning_rate``);
            named ``eta`` as in every jcsol learner, so ``eta=jcsol.decades()`` and the CLI's default grid
            apply. A pytree leaf: an array of values is a grid that :func:`jcsol.run` vmaps over. The factory
            is called with the (possibly traced) value inside ``init`` and ``step``, so it must only compute
            with it, not branch on it in Python (all optax aliases qualify).
        optimizer: the name of an optax alias (``"sgd"``, ``"adagrad"``, ``"adam"``, ``"rmsprop"``, …) or any
            callable ``factory(eta, **optimizer_kwargs) -> optax.GradientTransformation``; static
            (part of the compiled computation). Schedules: a factory such as
            ``def decayed(lr): return optax.sgd(optax.exponential_decay(lr, 100, 0.5))``; use module-level
            functions — a new lambda or ``functools.partial`` object per learner is a new static value and
            recompiles.
        optimizer_kwargs: further (static, not vmappable) arguments of the factory, a dict or a tuple of
            ``(name, value)`` pairs, e.g. ``{"b1": 0.8}`` for Adam; stored as a sorted tuple.
        loss: ``"I"`` (margin) or ``"II"`` (slope).

    References: J. Wang, P. Zhao, S. C. H. Hoi, *Cost-Sensitive Online Classification*, ICDM 2012 (COG/CSOGD);
    J. Duchi, E. Hazan, Y. Singer, *Adaptive Subgradient Methods*, JMLR 2011 (AdaGrad); D. P. Kingma, J. Ba,
    *Adam*, ICLR 2015; optax, https://github.com/google-deepmind/optax.

    Warning: the papers' learners have no optimizer state; with ``optimizer != "sgd"`` this is an extension,
    not a reproduction.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.OptaxCOG(eta=0.1, optimizer="adam", loss="II"), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        OptaxCOG-II-adam: sum 60.3%
    """

    step_size = "eta"

    eta: ArrayLike = hyperparameter(1e-2)
    optimizer: Any = choice("sgd")
    optimizer_kwargs: Any = choice(())
    loss: str = choice("I", *LOSSES)

    def __post_init__(self) -> None:
        kwargs = self.optimizer_kwargs
        if isinstance(kwargs, dict):
            kwargs = tuple(sorted(kwargs.items()))
        try:
            kwargs = tuple((str(k), v) for k, v in kwargs)
            hash(kwargs)
        except (TypeError, ValueError):
            raise ValueError(
                f"OptaxCOG: optimizer_kwargs must be a dict or (name, value) pairs of hashable values, "
                f"got {self.optimizer_kwargs!r}"
            ) from None
        object.__setattr__(self, "optimizer_kwargs", kwargs)
        if isinstance(self.optimizer, str):
            if not callable(getattr(optax, self.optimizer, None)):
                raise ValueError(
                    f"OptaxCOG: optax has no optimizer {self.optimizer!r}; pass a name such as 'sgd', "
                    "'adagrad', 'adam', or a factory eta -> optax.GradientTransformation"
                )
        elif not callable(self.optimizer):
            raise ValueError(f"OptaxCOG: optimizer must be an optax alias name or a callable, got {self.optimizer!r}")
        super().__post_init__()

    @property
    def name(self) -> str:
        opt = self.optimizer if isinstance(self.optimizer, str) else getattr(self.optimizer, "__name__", "custom")
        return f"OptaxCOG-{self.loss}-{opt}"

    def transformation(self) -> optax.GradientTransformation:
        """The optax transformation of this learner, built with its (possibly traced) learning rate ``eta``."""
        factory: Callable[..., optax.GradientTransformation] = (
            getattr(optax, self.optimizer) if isinstance(self.optimizer, str) else self.optimizer
        )
        return factory(self.eta, **dict(self.optimizer_kwargs))

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> OptaxCOGState:
        w = jnp.zeros(d, dtype)
        return OptaxCOGState(w=w, opt_state=self.transformation().init(w))

    def step(self, state: OptaxCOGState, ex: Example) -> tuple[OptaxCOGState, StepInfo]:
        f = state.w @ ex.x
        loss, c = cost_sensitive_loss(self.loss, ex.y * f, ex.rho)
        g = -(c * ex.y) * ex.x
        updates, opt_state = self.transformation().update(g, state.opt_state, state.w)
        active = loss > 0
        w = jnp.where(active, optax.apply_updates(state.w, updates), state.w)
        opt_state = jax.tree.map(
            lambda new, old: jnp.where(active, new, old).astype(old.dtype), opt_state, state.opt_state
        )
        return OptaxCOGState(w=w, opt_state=opt_state), StepInfo(score=f, loss=loss)
