"""The papers' measures (the weighted *sum* of sensitivity and specificity, the *cost*, accuracy, balanced
accuracy), computed from confusion counts carried through the scan.

Counts are kept in the order ``(tp, fn, fp, tn)`` along the last axis: ``fn = M_p`` (missed positives),
``fp = M_n`` (false alarms). Every measure here is a NumPy function of counts, so it applies equally to a
run's final counts and to its online curve (counts at sampled rounds).
"""

from __future__ import annotations

import numpy as np

TP, FN, FP, TN = range(4)
MEASURES = ("sum", "sensitivity", "specificity", "accuracy", "balanced_accuracy", "cost", "example_cost")
HIGHER_IS_BETTER = {"sum": True, "sensitivity": True, "specificity": True, "accuracy": True,
                    "balanced_accuracy": True, "cost": False, "example_cost": False}


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num, den = np.asarray(num, np.float64), np.asarray(den, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def sensitivity(counts: np.ndarray) -> np.ndarray:
    """``(T_p − M_p)/T_p``; NaN where the stream has no positive example."""
    c = np.asarray(counts)
    return _ratio(c[..., TP], c[..., TP] + c[..., FN])


def specificity(counts: np.ndarray) -> np.ndarray:
    """``(T_n − M_n)/T_n``; NaN where the stream has no negative example."""
    c = np.asarray(counts)
    return _ratio(c[..., TN], c[..., TN] + c[..., FP])


def accuracy(counts: np.ndarray) -> np.ndarray:
    """``(T − M_p − M_n)/T``."""
    c = np.asarray(counts)
    return _ratio(c[..., TP] + c[..., TN], c.sum(-1))


def weighted_sum(counts: np.ndarray, alpha_p=0.5) -> np.ndarray:
    """*sum* ``= α_p·sensitivity + α_n·specificity``, ``α_n = 1 − α_p``."""
    alpha_p = np.asarray(alpha_p, np.float64)
    return alpha_p * sensitivity(counts) + (1.0 - alpha_p) * specificity(counts)


def balanced_accuracy(counts: np.ndarray) -> np.ndarray:
    """*sum* with ``α_p = α_n = ½``."""
    return weighted_sum(counts, 0.5)


def weighted_cost(counts: np.ndarray, c_p=0.9) -> np.ndarray:
    """*cost* ``= c_p·M_p + c_n·M_n``, ``c_n = 1 − c_p``, unscaled (the papers print it in various scalings)."""
    c = np.asarray(counts, np.float64)
    c_p = np.asarray(c_p, np.float64)
    return c_p * c[..., FN] + (1.0 - c_p) * c[..., FP]


def cvar(values: np.ndarray, epsilon: float, axis: int = -1) -> np.ndarray:
    """CVaR_ε: the mean of the lowest ``ceil(ε·n)`` values along ``axis`` (Ali, Collins-Thompson, *Robust
    Cost-Sensitive Confidence-Weighted Classification*, Table III, applies it to margins ``y·f``; higher is
    better)."""
    values = np.sort(np.asarray(values, np.float64), axis=axis)
    if not 0 < epsilon <= 1:
        raise ValueError(f"epsilon must be in (0, 1], got {epsilon}")
    k = max(1, int(np.ceil(epsilon * values.shape[axis])))
    return np.take(values, np.arange(k), axis=axis).mean(axis=axis)


def measure(name: str, counts: np.ndarray, alpha_p=0.5, c_p=0.9) -> np.ndarray:
    """The measure ``name`` (one of :data:`MEASURES` but ``example_cost``, which counts cannot give) of ``counts``."""
    if name == "sum":
        return weighted_sum(counts, alpha_p)
    if name == "cost":
        return weighted_cost(counts, c_p)
    functions = {"sensitivity": sensitivity, "specificity": specificity, "accuracy": accuracy,
                 "balanced_accuracy": balanced_accuracy}
    if name not in functions:
        raise ValueError(f"unknown measure {name!r}; choose from {', '.join(MEASURES)}")
    return functions[name](counts)
