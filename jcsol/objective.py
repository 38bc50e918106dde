"""What a run optimises: the weighted *sum* of sensitivity and specificity, or the misclassification *cost*.

Both reduce to one cost-sensitive objective (J. Wang, P. Zhao, S. C. H. Hoi, *Cost-Sensitive Online Classification*,
ICDM 2012, Thm. 1):
minimise ``Σ_{y=+1} ρ·I(y w·x < 0) + Σ_{y=-1} I(y w·x < 0)`` with

* *sum*: ``ρ = α_p T_n / (α_n T_p)``, ``α_n = 1 − α_p``, with ``T_n/T_p`` from the whole stream ("offline")
  or estimated online by Laplace's rule ``ρ_t = α_p (n_t + 1) / (α_n (p_t + 1))``, ``p_t, n_t`` the positives
  and negatives seen up to and including round ``t`` (Zhao et al., *Adaptive Cost-Sensitive Online
  Classification*, TKDE);
* *cost*: ``ρ = c_p / c_n``.

Each round's example weight is ``ρ_t = ρ`` for a positive example and ``1`` for a negative one. The learners
turn it into one of the two surrogate losses of :func:`cost_sensitive_loss`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .base import Configurable, choice, concrete_values, hyperparameter, pytree_dataclass


class Objective(Configurable):
    """Base of :class:`Sum` and :class:`Cost`: how ``ρ_t`` is computed for each round."""

    def needs_both_classes(self) -> bool:
        """Whether ``ρ`` is undefined on a stream with a single class."""
        return False

    def weight(
        self, positive: jax.Array, seen_pos: jax.Array, seen_neg: jax.Array, total_pos: jax.Array, total_neg: jax.Array
    ) -> jax.Array:
        """``ρ_t`` for a round whose example is ``positive``.

        ``seen_pos``/``seen_neg`` count the examples up to and including this round; ``total_pos``/``total_neg``
        count the whole stream of the run.
        """
        raise NotImplementedError

    def measure_weights(self) -> tuple[Any, Any]:
        """``(α_p, c_p)`` used by the *sum* and *cost* measures of a run under this objective."""
        raise NotImplementedError


@pytree_dataclass
class Sum(Objective):
    """Maximise ``α_p·sensitivity + α_n·specificity`` with ``α_n = 1 − α_p`` (α_p = ½: balanced accuracy).

    Args:
        alpha_p: weight of sensitivity, in (0, 1).
        rho: ``"offline"`` uses ``T_n/T_p`` of the whole stream (the papers' setting; the stream must hold both
            classes); ``"laplace"`` uses the online estimate ``(n_t + 1)/(p_t + 1)``.
    """

    alpha_p: ArrayLike = hyperparameter(0.5)
    rho: str = choice("offline", "offline", "laplace")

    def __post_init__(self) -> None:
        super().__post_init__()
        a = concrete_values(self.alpha_p)
        if a is not None and np.any(a >= 1):
            raise ValueError(f"Sum: alpha_p must be in (0, 1), got {self.alpha_p!r}")

    def needs_both_classes(self) -> bool:
        return self.rho == "offline"

    def weight(self, positive, seen_pos, seen_neg, total_pos, total_neg):
        ratio = self.alpha_p / (1.0 - self.alpha_p)
        if self.rho == "offline":
            r = ratio * total_neg / total_pos
        else:
            r = ratio * (seen_neg + 1) / (seen_pos + 1)
        return jnp.where(positive, r, 1.0)

    def measure_weights(self):
        return self.alpha_p, 0.9


@pytree_dataclass
class Cost(Objective):
    """Minimise ``c_p·M_p + c_n·M_n`` (``M_p`` false negatives, ``M_n`` false positives), ``c_p + c_n = 1``.

    Args:
        c_p: cost of a false negative (a missed positive).
        c_n: cost of a false positive.
    """

    c_p: ArrayLike = hyperparameter(0.9)
    c_n: ArrayLike = hyperparameter(0.1)

    def __post_init__(self) -> None:
        super().__post_init__()
        cp, cn = concrete_values(self.c_p), concrete_values(self.c_n)
        if cp is not None and cn is not None:
            try:
                np.broadcast_shapes(np.shape(cp), np.shape(cn))
            except ValueError:
                raise ValueError(
                    f"Cost: c_p and c_n must have shapes that broadcast (one c_n = 1 − c_p per c_p), "
                    f"got {np.shape(cp)} and {np.shape(cn)}"
                ) from None
        if cp is not None and cn is not None and not np.allclose(cp + cn, 1.0, atol=1e-6):
            raise ValueError(f"Cost: c_p + c_n must be 1, got c_p={self.c_p!r}, c_n={self.c_n!r}")

    def weight(self, positive, seen_pos, seen_neg, total_pos, total_neg):
        return jnp.where(positive, self.c_p / self.c_n, 1.0)

    def measure_weights(self):
        return 0.5, self.c_p


LOSSES = ("I", "II")


def cost_sensitive_loss(kind: str, margin: jax.Array, rho: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The cost-sensitive surrogate loss of a round and the scale ``c`` of its gradient ``g = −c·y·x``.

    ``kind="I"`` (margin): ``ℓ = max(0, ρ_t − y w·x)``, ``c = 1``.
    ``kind="II"`` (slope): ``ℓ = ρ_t · max(0, 1 − y w·x)``, ``c = ρ_t``.
    """
    if kind == "I":
        return jnp.maximum(0.0, rho - margin), jnp.ones_like(rho)
    if kind == "II":
        return rho * jnp.maximum(0.0, 1.0 - margin), rho
    raise ValueError(f"loss must be one of {LOSSES}, got {kind!r}")
