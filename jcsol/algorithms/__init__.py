"""The learners, and the registry of their named variants (``"ACOG-II-diag"`` → ``ACOG(loss="II", diagonal=True)``).

Every variant in :data:`VARIANTS` is covered by the contract tests; a new learner joins by adding its
variants here.
"""

from __future__ import annotations

from typing import Any, Callable

from ..base import Learner
from .acog import ACOG, ACOGState
from .cog import COG, COGState

VARIANTS: dict[str, Callable[..., Learner]] = {
    "COG-I": lambda **hp: COG(loss="I", **hp),
    "COG-II": lambda **hp: COG(loss="II", **hp),
    "ACOG-I": lambda **hp: ACOG(loss="I", **hp),
    "ACOG-II": lambda **hp: ACOG(loss="II", **hp),
    "ACOG-I-diag": lambda **hp: ACOG(loss="I", diagonal=True, **hp),
    "ACOG-II-diag": lambda **hp: ACOG(loss="II", diagonal=True, **hp),
}


def by_name(name: str, **hyperparameters: Any) -> Learner:
    """The learner variant called ``name`` (case-insensitive), with the given hyperparameters."""
    lookup = {k.lower(): k for k in VARIANTS}
    if name.lower() not in lookup:
        raise ValueError(f"unknown learner {name!r}; choose from {', '.join(VARIANTS)}")
    return VARIANTS[lookup[name.lower()]](**hyperparameters)


__all__ = ["ACOG", "ACOGState", "COG", "COGState", "VARIANTS", "by_name"]
