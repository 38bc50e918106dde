"""Independent float64 NumPy reference for the Variance form of confidence-weighted learning (Dredze, Crammer,
Pereira, *Confidence-Weighted Linear Classification*, ICML 2008), one example at a time.

Written from the paper, not from jcsol's code (this module does not import jcsol): Σ itself (jcsol keeps a
square root of the full matrix), α by the paper's closed form as printed (jcsol rearranges it to avoid
cancellation), the full precision update by Sherman–Morrison, and the two diagonal approximations:
``project`` adds ``2αφ diag(x²)`` to the precision, ``drop`` keeps the diagonal of the full update of Σ.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np


class CWVar:
    def __init__(self, d: int, eta: float = 0.7, covariance: str = "full"):
        self.phi = NormalDist().inv_cdf(eta)
        self.covariance = covariance
        self.mu = np.zeros(d)
        self.sigma = np.eye(d) if covariance == "full" else np.ones(d)

    def step(self, x, y, c=None):
        """One round (``c``, an example cost, is ignored: the learner is cost-blind); the pre-update score."""
        f = float(self.mu @ x)
        m = y * f
        sx = self.sigma @ x if self.covariance == "full" else self.sigma * x
        v = float(x @ sx)
        phi = self.phi
        if v <= 0 or m >= phi * v:
            return f
        b = 1 + 2 * phi * m
        alpha = max(0.0, (-b + math.sqrt(b * b - 8 * phi * (m - phi * v))) / (4 * phi * v))
        self.mu = self.mu + alpha * y * sx
        factor = 2 * alpha * phi / (1 + 2 * alpha * phi * v)
        if self.covariance == "full":
            self.sigma = self.sigma - factor * np.outer(sx, sx)
        elif self.covariance == "project":
            self.sigma = 1.0 / (1.0 / self.sigma + 2 * alpha * phi * x * x)
        else:  # drop: the diagonal of the full update
            self.sigma = self.sigma - factor * sx * sx
        return f


def run(learner, X, y, order):
    """One pass of ``learner`` over ``X[order]``: the pre-update score of every round."""
    X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
    return np.array([learner.step(X[i], float(y[i])) for i in order])
