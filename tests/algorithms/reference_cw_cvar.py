"""Independent float64 NumPy reference for the CW-CVaR family (A. Ali, K. Collins-Thompson, *Robust
Cost-Sensitive Confidence-Weighted Classification*), one example at a time.

Written from the paper, not from jcsol's code (this module does not import jcsol): plain loops,
Σ itself updated by Eq. 10 (jcsol keeps a square root), λ by the paper's closed form of Eq. 12 exactly as
printed (jcsol rearranges it to avoid cancellation), ω_ε from Table I (with the readings documented in
jcsol: symmetric ``√(1−ε)/(√2 ε)`` for ε ≥ ½, symmetric-unimodal ``2√(1−ε)/(3ε)`` for ε ≥ ⅔), the cost
buffer as a Python list of every cost seen (Alg. 1; jcsol's reservoir holds them all while the stream is
no longer than the buffer), ``c* = CVaR_τ`` of the list (the top ``τn`` costs, the boundary one with a
fractional weight) or its τ-quantile from the top (the ``⌈τn⌉``-th largest cost), CW-robust's posterior by
Eqs. 14–15 with explicit inverses.

The documented readings and conventions are applied too: ``reading="scaled"`` solves Eq. 11 with ``ωc²`` in
place of ``ω``; no update where ``v = 0``, nor where ``c = 0`` unless ``zero_cost="limit"``, which moves the
mean by ``u y Σx`` with ``u`` the ``c → 0`` root of Eq. 11 written in ``u = λc`` (as printed:
``2v u² + 2M̄u − 1 = 0`` and the variance along ``x`` set to 0; scaled: ``u = max(0, −M̄)/v``, Σ kept); the
diagonal covariance projects the precision update onto the diagonal, ``1/s ← 1/s + 2λω x²`` (Dredze, Crammer,
Pereira 2008); CW-costs is the exact CW of ``reference_baselines.CWFamily`` (Crammer, Dredze, Pereira 2008, closed
form restated in Wang, Zhao, Hoi 2012, with jcsol's documented variance floor), its mean step scaled by ``κ·c``
(or by ``κ·c/c̄`` with ``c̄`` the mean of the costs so far, ``relative=True``).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
from reference_baselines import CWFamily

TIE_RTOL = 1e-9  # c* <= c(x_t) is decided with this relative slack: c* is a weighted mean that equals c
# exactly when the top costs tie with c, but float64 rounding can put it one ulp above


def omega(eps: float, assumption: str) -> float:
    """ω_ε of the paper's Table I."""
    if assumption == "gaussian":
        z = NormalDist().inv_cdf(1.0 - eps)
        return math.exp(-0.5 * z * z) / (eps * math.sqrt(2 * math.pi))
    if assumption == "symmetric":
        return 1 / math.sqrt(2 * eps) if eps <= 0.5 else math.sqrt(1 - eps) / (math.sqrt(2) * eps)
    if assumption == "unimodal":
        if eps <= 1 / 3:
            return 2 / (3 * math.sqrt(eps))
        if eps <= 2 / 3:
            return math.sqrt(3) * (1 - eps)
        return 2 * math.sqrt(1 - eps) / (3 * eps)
    if assumption == "arbitrary":
        return math.sqrt((1 - eps) / eps)
    raise ValueError(assumption)


def psi(m: float, v: float, c: float, w: float) -> float:
    """The positive root ψ of Eq. 11 as printed in Eq. 12."""
    b = c + 2 * w * m
    return (-b + math.sqrt(b * b - 8 * w * (c * m - w * v))) / (4 * w * c * v)


def quantile_top(costs: list[float], tau: float) -> float:
    """The ``⌈τn⌉``-th largest of ``costs`` (τn within 1e-4 of an integer counts as that integer)."""
    b = sorted(costs, reverse=True)
    return b[max(0, math.ceil(tau * len(b) - 1e-4) - 1)]


def cvar_top(costs: list[float], tau: float) -> float:
    """Mean of the top τ-fraction of ``costs`` (fractional weight on the boundary cost)."""
    b = sorted(costs, reverse=True)
    k = tau * len(b)
    total, left = 0.0, k
    for value in b:
        take = min(1.0, left)
        if take <= 0:
            break
        total += take * value
        left -= take
    return total / k


class _Gaussian:
    """The shared part: N(μ, Σ) and the CVaR update of Eqs. 12, 9, 10."""

    def __init__(self, d: int, diagonal: bool, reading: str = "printed", zero_cost: str = "skip"):
        self.diagonal, self.reading, self.zero_cost = diagonal, reading, zero_cost
        self.mu = np.zeros(d)
        self.sigma = np.ones(d) if diagonal else np.eye(d)

    def update(self, x, y, c, w):
        m = y * float(self.mu @ x)
        sx = self.sigma * x if self.diagonal else self.sigma @ x
        v = float(x @ sx)
        if v <= 0:
            return
        if c == 0 and self.zero_cost == "limit":
            if self.reading == "scaled":
                self.mu = self.mu + max(0.0, -m) / v * y * sx
                return
            u = (-m + math.sqrt(m * m + 2 * v)) / (2 * v)
            self.mu = self.mu + u * y * sx
            if self.diagonal:
                self.sigma = np.where(x != 0, 0.0, self.sigma)
            else:
                self.sigma = self.sigma - np.outer(sx, sx) / v
            return
        if self.reading == "scaled":
            w = w * c * c
        if c <= 0 or c * m >= w * v:
            return
        lam = max(0.0, psi(m, v, c, w))
        self.mu = self.mu + lam * c * y * sx
        if self.diagonal:
            with np.errstate(divide="ignore"):  # a variance of 0 (after a zero-cost limit) stays 0
                self.sigma = 1.0 / (1.0 / self.sigma + 2 * lam * w * x * x)
        else:
            self.sigma = self.sigma - (2 * lam * w / (1 + 2 * lam * w * v)) * np.outer(sx, sx)


class CWNoBuffer(_Gaussian):
    def __init__(self, d, epsilon=0.05, assumption="gaussian", diagonal=False, **options):
        super().__init__(d, diagonal, **options)
        self.w = omega(epsilon, assumption)

    def step(self, x, y, c):
        f = float(self.mu @ x)
        self.update(x, y, c, self.w)
        return f


class CWCVaR(_Gaussian):
    def __init__(
        self,
        d,
        alpha=0.05,
        beta=0.2,
        tau=0.05,
        assumption="gaussian",
        diagonal=False,
        buffer_statistic="cvar",
        **options,
    ):
        super().__init__(d, diagonal, **options)
        self.w_alpha, self.w_beta = omega(alpha, assumption), omega(beta, assumption)
        self.tau, self.buffer = tau, []
        self.statistic = cvar_top if buffer_statistic == "cvar" else quantile_top
        self.high = []  # whether each round used α

    def choose(self, c):
        self.buffer.append(c)
        c_star = self.statistic(self.buffer, self.tau)
        high = c_star <= c * (1 + TIE_RTOL)  # c* = c exactly when the top costs equal c (rounding aside)
        self.high.append(high)
        return self.w_alpha if high else self.w_beta

    def step(self, x, y, c):
        w = self.choose(c)
        f = float(self.mu @ x)
        self.update(x, y, c, w)
        return f


class CWRobust(CWCVaR):
    """CW-CVaR predicting with the posterior mean of Eqs. 14-15 (prior N(ν + κ∘μ, diag(Υ)), Υ_dd = ∞ allowed)."""

    def __init__(self, d, nu, upsilon, kappa=None, **kw):
        super().__init__(d, **kw)
        self.nu, self.prec = np.asarray(nu, float), 1.0 / np.asarray(upsilon, float)
        self.kappa = np.zeros(d) if kappa is None else np.asarray(kappa, float)
        self.t = 0
        self.mu_tilde = np.where(self.prec > 0, self.nu, 0.0)

    def step(self, x, y, c):
        f = float(self.mu_tilde @ x)
        w = self.choose(c)
        self.update(x, y, c, w)
        self.t += 1
        nu = self.nu + self.kappa * self.mu
        if self.diagonal:
            s_tilde = 1.0 / (self.prec + self.t / self.sigma)
            self.mu_tilde = s_tilde * (self.prec * nu + self.t * self.mu / self.sigma)
        else:
            inv = np.linalg.inv(self.sigma)
            s_tilde = np.linalg.inv(np.diag(self.prec) + self.t * inv)
            self.mu_tilde = s_tilde @ (self.prec * nu + self.t * inv @ self.mu)
        return f


class CWCosts:
    """CW-costs: exact CW — the baselines' reference, on Σ itself with the variance floor — with the mean
    step scaled by κ·c (c relative to the mean of the costs seen so far with ``relative``)."""

    def __init__(self, d, eta=0.7, cost_scale=1.0, relative=False):
        self.cw = CWFamily(d, "CW", eta=eta)
        self.scale, self.relative, self.costs = cost_scale, relative, []

    @property
    def mu(self):
        return self.cw.mu

    def step(self, x, y, c):
        self.costs.append(c)
        if self.relative:  # the cost relative to the mean of the costs seen so far
            mean = sum(self.costs) / len(self.costs)
            c = c / mean if mean > 0 else 0.0
        return self.cw.step(x, y, None, None, scale=self.scale * c)


def run(learner, X, y, costs, order):
    """One pass of ``learner`` over ``X[order]``: the pre-update score of every round."""
    X, y, costs = (np.asarray(a, np.float64) for a in (X, y, costs))
    return np.array([learner.step(X[i], float(y[i]), float(costs[i])) for i in order])
