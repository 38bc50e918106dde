"""The learners, and the registry of their named variants (``"ACOG-II-diag"`` → ``ACOG(loss="II", diagonal=True)``).

Every variant in :data:`VARIANTS` is covered by the contract tests; a new learner joins by adding its
variants here.

Names follow one rule each:

* A variant's registry key *is* its learner's :attr:`~jcsol.base.Learner.name`: ``by_name(k).name == k``. The
  name is the learner's name as its paper prints it, then the choices that tell its published variants apart
  (the loss type ``-I``/``-II``, ``-diag`` for a diagonal covariance, KOIL's buffer policy, the optimizer), then
  each other option that differs from its default: ``CW-CVaR-unimodal-diag`` (the Gaussian assumption, the
  default, is left out).
* A class is that printed name as a CapWords Python identifier: hyphens dropped (``CPA-PB`` → ``CPAPB``,
  ``CW-nobuffer`` → ``CWNoBuffer``), a first lower-case letter raised (``aROMMA`` → ``AROMMA``), a version
  numeral in digits (``PA-I`` → ``PA1``, ``SCW-II`` → ``SCW2``). Choices that are fields (the loss type,
  ``diagonal``, the assumption) are not part of the class name: one class serves all of a learner's variants.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base import Learner
from .acog import ACOG, ACOGState
from .arow import AROW, AROWState
from .auc_baselines import OAM, OPAUC, OAMState, OPAUCState
from .budget_kernel import NORMA, RBP, Forgetron, Projectron
from .cog import COG, COGState
from .cw import CW, SCW1, SCW2, CWState
from .cw_cvar import CWCosts, CWCVaR, CWCVaRState, CWNoBuffer, CWNoBufferState, CWRobust, CWRobustState
from .cw_var import CWVar, CWVarState
from .koil import KOIL, KOILMKL, KOILMKLState, KOILState
from .ogd import OGD, OGDState
from .optax_learner import OptaxCOG, OptaxCOGState
from .pa import CPAML, CPAPB, PA, PA1, PA2, PAState
from .paum import PAUM, PAUMState
from .perceptron import Perceptron, PerceptronState
from .romma import AROMMA, ROMMA, ROMMAState
from .sacog import SACOG, SSACOG, SACOGState, SSACOGState

VARIANTS: dict[str, Callable[..., Learner]] = {
    "COG-I": lambda **hp: COG(loss="I", **hp),
    "COG-II": lambda **hp: COG(loss="II", **hp),
    "ACOG-I": lambda **hp: ACOG(loss="I", **hp),
    "ACOG-II": lambda **hp: ACOG(loss="II", **hp),
    "ACOG-I-diag": lambda **hp: ACOG(loss="I", diagonal=True, **hp),
    "ACOG-II-diag": lambda **hp: ACOG(loss="II", diagonal=True, **hp),
    "SACOG-I": lambda **hp: SACOG(loss="I", **hp),
    "SACOG-II": lambda **hp: SACOG(loss="II", **hp),
    "SSACOG-I": lambda **hp: SSACOG(loss="I", **hp),
    "SSACOG-II": lambda **hp: SSACOG(loss="II", **hp),
    # the baselines of the papers (docs/bibliography.md)
    "Perceptron": lambda **hp: Perceptron(**hp),
    "ROMMA": lambda **hp: ROMMA(**hp),
    "aROMMA": lambda **hp: AROMMA(**hp),
    "PA": lambda **hp: PA(**hp),
    "PA-I": lambda **hp: PA1(**hp),
    "PA-II": lambda **hp: PA2(**hp),
    "PAUM": lambda **hp: PAUM(**hp),
    "CPA-PB": lambda **hp: CPAPB(**hp),
    "CPA-ML": lambda **hp: CPAML(**hp),
    "AROW": lambda **hp: AROW(**hp),
    "CW": lambda **hp: CW(**hp),
    "SCW-I": lambda **hp: SCW1(**hp),
    "SCW-II": lambda **hp: SCW2(**hp),
    "CW-var": lambda **hp: CWVar(**hp),  # CW of Dredze, Crammer, Pereira, ICML 2008
    "CW-var-project": lambda **hp: CWVar(**{"covariance": "project", **hp}),
    "CW-var-drop": lambda **hp: CWVar(**{"covariance": "drop", **hp}),
    # the CW-CVaR family (Ali, Collins-Thompson, Robust Cost-Sensitive Confidence-Weighted Classification);
    # CW-robust with a unit prior N(0, I) on every weight
    "CW-CVaR": lambda **hp: CWCVaR(**hp),
    "CW-CVaR-diag": lambda **hp: CWCVaR(**{"diagonal": True, **hp}),
    "CW-nobuffer": lambda **hp: CWNoBuffer(**hp),
    "CW-costs-relative": lambda **hp: CWCosts(**{"relative": True, **hp}),  # CW-costs (relative=False) is
    # not registered: its means grow with the product of the costs, beyond the contract tests' tolerances
    "CW-robust-diag": lambda **hp: CWRobust(**{"diagonal": True, "prior_mean": 0.0, "prior_var": 1.0, **hp}),
    "OGD-hinge": lambda **hp: OGD(loss="hinge", **hp),
    "OGD-logistic": lambda **hp: OGD(loss="logistic", **hp),
    # first-order family with optax optimizers (an extension, not in the papers)
    "OptaxCOG-I-adagrad": lambda **hp: OptaxCOG(optimizer="adagrad", loss="I", **hp),
    "OptaxCOG-II-adagrad": lambda **hp: OptaxCOG(optimizer="adagrad", loss="II", **hp),
    "OptaxCOG-I-adam": lambda **hp: OptaxCOG(optimizer="adam", loss="I", **hp),
    "OptaxCOG-II-adam": lambda **hp: OptaxCOG(optimizer="adam", loss="II", **hp),
    # online AUC maximisation with kernels (Hu, Yang, King, Lyu, So, AAAI 2015; the KOIL thesis) and the
    # baselines of the thesis's Table 3.3
    "KOIL-RS++": lambda **hp: KOIL(policy="RS++", **hp),
    "KOIL-FIFO++": lambda **hp: KOIL(policy="FIFO++", **hp),
    "KOIL-RS": lambda **hp: KOIL(policy="RS", **hp),
    "KOIL-FIFO": lambda **hp: KOIL(policy="FIFO", **hp),
    "KOIL-RS++-smooth": lambda **hp: KOIL(policy="RS++", loss="smooth", **hp),
    "KOIL-FIFO++-smooth": lambda **hp: KOIL(policy="FIFO++", loss="smooth", **hp),
    "OAM": lambda **hp: OAM(**hp),
    "OPAUC": lambda **hp: OPAUC(**hp),
    "NORMA": lambda **hp: NORMA(**hp),
    "RBP": lambda **hp: RBP(**hp),
    "Forgetron": lambda **hp: Forgetron(**hp),
    "Projectron": lambda **hp: Projectron(**hp),
    "Projectron++": lambda **hp: Projectron(plus=True, **hp),
}


def by_name(name: str, **hyperparameters: Any) -> Learner:
    """The learner variant called ``name`` (case-insensitive), with the given hyperparameters and options.

    The learner is always the variant named: a keyword that would make another variant (``by_name("ACOG-II",
    diagonal=True)``, which is ACOG-II-diag) is refused, naming the variant it would give.
    """
    if not isinstance(name, str):
        raise TypeError(f"a learner's name must be a string, got {type(name).__name__}: {name!r}")
    lookup = {k.lower(): k for k in VARIANTS}
    if name.lower() not in lookup:
        raise ValueError(f"unknown learner {name!r}; choose from {', '.join(VARIANTS)}")
    variant = lookup[name.lower()]
    learner = VARIANTS[variant](**hyperparameters)  # a keyword the variant sets itself: Python's TypeError
    if learner.name != variant:
        given = ", ".join(f"{k}={v!r}" for k, v in hyperparameters.items())
        raise ValueError(
            f"by_name({name!r}, {given}) would build {learner.name}, not {variant}: ask for "
            f"by_name({learner.name!r}) by its own name, or leave out the option that changes the variant"
        )
    return learner


__all__ = [
    "ACOG",
    "ACOGState",
    "COG",
    "COGState",
    "VARIANTS",
    "by_name",
    "Perceptron",
    "PerceptronState",
    "ROMMA",
    "AROMMA",
    "ROMMAState",
    "PA",
    "PA1",
    "PA2",
    "CPAPB",
    "CPAML",
    "PAState",
    "PAUM",
    "PAUMState",
    "AROW",
    "AROWState",
    "CW",
    "SCW1",
    "SCW2",
    "CWState",
    "CWVar",
    "CWVarState",
    "OGD",
    "OGDState",
    "OptaxCOG",
    "OptaxCOGState",
    "SACOG",
    "SACOGState",
    "SSACOG",
    "SSACOGState",
    "KOIL",
    "KOILState",
    "KOILMKL",
    "KOILMKLState",
    "OAM",
    "OAMState",
    "OPAUC",
    "OPAUCState",
    "NORMA",
    "RBP",
    "Forgetron",
    "Projectron",
    "CWCVaR",
    "CWCVaRState",
    "CWCosts",
    "CWNoBuffer",
    "CWNoBufferState",
    "CWRobust",
    "CWRobustState",
]
