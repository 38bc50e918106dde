"""The learners, and the registry of their named variants (``"ACOG-II-diag"`` → ``ACOG(loss="II", diagonal=True)``).

Every variant in :data:`VARIANTS` is covered by the contract tests; a new learner joins by adding its
variants here.
"""

from __future__ import annotations

from typing import Any, Callable

from ..base import Learner
from .acog import ACOG, ACOGState
from .arow import AROW, AROWState
from .cog import COG, COGState
from .cw import CW, SCW, SCW2, CWState
from .ogd import OGD, OGDState
from .optax_learner import OptaxCOG, OptaxCOGState
from .pa import PA, PA1, PA2, CPAPB, PAState
from .paum import PAUM, PAUMState
from .perceptron import Perceptron, PerceptronState
from .romma import AROMMA, ROMMA, ROMMAState

VARIANTS: dict[str, Callable[..., Learner]] = {
    "COG-I": lambda **hp: COG(loss="I", **hp),
    "COG-II": lambda **hp: COG(loss="II", **hp),
    "ACOG-I": lambda **hp: ACOG(loss="I", **hp),
    "ACOG-II": lambda **hp: ACOG(loss="II", **hp),
    "ACOG-I-diag": lambda **hp: ACOG(loss="I", diagonal=True, **hp),
    "ACOG-II-diag": lambda **hp: ACOG(loss="II", diagonal=True, **hp),
    # baselines of the papers (SPEC §5)
    "Perceptron": lambda **hp: Perceptron(**hp),
    "ROMMA": lambda **hp: ROMMA(**hp),
    "aROMMA": lambda **hp: AROMMA(**hp),
    "PA": lambda **hp: PA(**hp),
    "PA-I": lambda **hp: PA1(**hp),
    "PA-II": lambda **hp: PA2(**hp),
    "PAUM": lambda **hp: PAUM(**hp),
    "CPA-PB": lambda **hp: CPAPB(**hp),
    "AROW": lambda **hp: AROW(**hp),
    "CW": lambda **hp: CW(**hp),
    "SCW-I": lambda **hp: SCW(**hp),
    "SCW-II": lambda **hp: SCW2(**hp),
    "OGD-hinge": lambda **hp: OGD(loss="hinge", **hp),
    "OGD-logistic": lambda **hp: OGD(loss="logistic", **hp),
    # first-order family with optax optimizers (an extension, not in the papers)
    "OptaxCOG-I-adagrad": lambda **hp: OptaxCOG(optimizer="adagrad", loss="I", **hp),
    "OptaxCOG-II-adagrad": lambda **hp: OptaxCOG(optimizer="adagrad", loss="II", **hp),
    "OptaxCOG-I-adam": lambda **hp: OptaxCOG(optimizer="adam", loss="I", **hp),
    "OptaxCOG-II-adam": lambda **hp: OptaxCOG(optimizer="adam", loss="II", **hp),
}


def by_name(name: str, **hyperparameters: Any) -> Learner:
    """The learner variant called ``name`` (case-insensitive), with the given hyperparameters."""
    lookup = {k.lower(): k for k in VARIANTS}
    if name.lower() not in lookup:
        raise ValueError(f"unknown learner {name!r}; choose from {', '.join(VARIANTS)}")
    return VARIANTS[lookup[name.lower()]](**hyperparameters)


__all__ = [
    "ACOG", "ACOGState", "COG", "COGState", "VARIANTS", "by_name",
    "Perceptron", "PerceptronState", "ROMMA", "AROMMA", "ROMMAState", "PA", "PA1", "PA2", "CPAPB", "PAState",
    "PAUM", "PAUMState", "AROW", "AROWState", "CW", "SCW", "SCW2", "CWState", "OGD", "OGDState",
    "OptaxCOG", "OptaxCOGState",
]
