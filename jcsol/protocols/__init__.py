"""The papers' experimental protocols, each one a few :func:`jcsol.run` calls over a grid.

=============================  ==========================================================  =========================
function                       what it computes                                            paper
=============================  ==========================================================  =========================
:func:`select_and_rerun`       η/λ/C chosen from a grid by the mean measure over            csogd, arcsogd, acog
                               permutations, then re-run on fresh permutations              (all tables)
:func:`cross_validate`         k-fold generalisation: one online pass on k−1 folds, the     acog Table III
                               final model's *sum* on the held-out fold
:func:`varying_weights`        *sum* under α_n ∈ grid, or *cost* under c_n ∈ grid           acog Figs. 2, 4;
                                                                                            arcsogd Figs. 3, 4
:func:`sensitivity`            the measure over a product grid of η and γ                   acog Figs. 5, 6
:func:`old_vs_new_sigma`       ACOG's mean step with Σ_t (AROW-style) vs Σ_{t+1}            acog Fig. 7
:func:`offline_vs_laplace`     ρ from the whole stream vs the online Laplace estimate        acog Fig. 8
:func:`protocol_auc`           test AUC of the final models of a repeated k-fold            koil thesis T. 3.2, 3.3,
                               cross-validation, all runs one computation                   4.1
:func:`fold_auc`               the same test AUCs from a trained result, scored by the
                               learner or by another reading of its score
:func:`cv_splits`              the stratified k-fold splitter of both cross-validations
=============================  ==========================================================  =========================

Papers (``docs/bibliography.md``): *csogd* — J. Wang, P. Zhao, S. C. H. Hoi, *Cost-Sensitive Online
Classification*, IEEE ICDM 2012; *arcsogd* — P. Zhao, F. Zhuang, M. Wu, X.-L. Li, S. C. H. Hoi, *Cost-Sensitive
Online Classification with Adaptive Regularization and Its Applications*, IEEE ICDM 2015; *acog* — P. Zhao,
Y. Zhang, M. Wu, S. C. H. Hoi, M. Tan, J. Huang, *Adaptive Cost-Sensitive Online Classification*, IEEE TKDE
31(2), 2019; *koil* — J. Hu, H. Yang, I. King, M. R. Lyu, A. M.-C. So, *Kernelized Online Imbalanced Learning
with Fixed Budgets*, AAAI 2015, and J. Hu's thesis *Kernelized Online Imbalanced Learning*.

Each protocol returns a small result object holding the :class:`jcsol.Result` objects and what was chosen; the
tables of :mod:`jcsol.report` and the figures of :mod:`jcsol.plots` take them directly. The paper tables
themselves, paper values beside jcsol's, are :mod:`jcsol.papers`.

Modules: :mod:`~jcsol.protocols.cost_sensitive` (the cost-sensitive protocols), :mod:`~jcsol.protocols.auc`
(the KOIL AUC protocol), :mod:`~jcsol.protocols.splits` (the splitter).
"""

from .auc import ProtocolResult, fold_auc, protocol_auc
from .cost_sensitive import (
    FIXED,
    STEP_SIZE,
    CrossValidation,
    OfflineVsLaplace,
    OldVsNew,
    Selection,
    Sensitivity,
    VaryingWeights,
    cross_validate,
    default_grid,
    offline_vs_laplace,
    old_vs_new_sigma,
    select_and_rerun,
    sensitivity,
    varying_weights,
)
from .splits import Splits, cv_splits

__all__ = [
    "default_grid",
    "select_and_rerun",
    "Selection",
    "cross_validate",
    "CrossValidation",
    "varying_weights",
    "VaryingWeights",
    "sensitivity",
    "Sensitivity",
    "old_vs_new_sigma",
    "OldVsNew",
    "offline_vs_laplace",
    "OfflineVsLaplace",
    "fold_auc",
    "protocol_auc",
    "ProtocolResult",
    "cv_splits",
    "Splits",
    "STEP_SIZE",
    "FIXED",
]
