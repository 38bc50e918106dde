"""Independent float64 NumPy references for the papers' baselines (docs/bibliography.md), one example at a time:
the Perceptron (Rosenblatt, *The Perceptron: A Probabilistic Model for Information Storage and Organization in the
Brain*, Psychological Review, 1958); ROMMA and aggressive ROMMA (Li, Long, *The Relaxed Online Maximum Margin
Algorithm*, Machine Learning, 2002); PA, PA-I, PA-II, CPA-PB and CPA-ML (Crammer, Dekel, Keshet,
Shalev-Shwartz, Singer, *Online Passive-Aggressive Algorithms*, JMLR, 2006); PAUM (Li, Zaragoza, Herbrich,
Shawe-Taylor, Kandola, *The Perceptron Algorithm with Uneven Margins*, ICML 2002); OGD (Zinkevich, *Online Convex
Programming and Generalized Infinitesimal Gradient Ascent*, ICML 2003); AROW (Crammer, Kulesza, Dredze, *Adaptive
Regularization of Weight Vectors*, NIPS 2009); exact CW (Crammer, Dredze, Pereira, *Exact Convex
Confidence-Weighted Learning*, NIPS 2008); SCW-I and SCW-II (Wang, Zhao, Hoi, *Exact Soft Confidence-Weighted
Learning*, ICML 2012).

Written from the papers and ``docs/conventions.md`` (not from jcsol's code, which this module does not import):
plain loops, the papers' closed forms as printed (ROMMA's ``c, d`` coefficients, CW's covariance update on Σ itself),
LIBOL's conventions (``w_1 = 0``, ``Σ_1 = I``, score 0 predicts +1, no bias).

``run(name, X, y, order, rho, **hyperparameters)`` returns the score of every round (before the update),
its scale ``‖w_t‖·‖x_t‖`` (the largest score the weights could give that row) and the final model. ``rho`` is
the objective's ρ; a round's ``ρ_t`` is ρ for a positive example, 1 otherwise.

Near-ties. Where ``|f_t| <= tie_rtol·‖w_t‖‖x_t‖`` the sign of the score is decided by rounding (on a9a,
whose rows are 0/1 vectors scaled by 1/√k, sums of ±rows often score exactly 0 in exact arithmetic), so
a float32 run and this float64 loop may predict differently. With ``follow=`` (another implementation's
predictions), the prediction at such a round is taken from ``follow``, and the mistake-driven updates
(Perceptron, CPA-PB, ROMMA) follow it, so that one rounding-decided tie does not send the two trajectories
apart; the rounds where this happened are returned, for the caller to count.

Where jcsol documents a deliberate numerical guard (ROMMA's parallel-vector tolerance, the CW family's
variance floor), the reference applies the same rule to its own formulas, with the constants below.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

ROMMA_PARALLEL_TOL = 1e-6  # sin² of the angle between x and w under which ROMMA does not update
CW_VARIANCE_FLOOR = 1e-6  # variance floor of the CW family, relative to ‖x‖²


class _Linear:
    def __init__(self, d: int):
        self.w = np.zeros(d)

    def weights(self) -> np.ndarray:
        return self.w

    def state(self) -> dict:
        return {"w": self.w.copy()}


class Perceptron(_Linear):
    def step(self, x, y, rho, predict):
        f = float(self.w @ x)
        if predict(f) != y:
            self.w = self.w + y * x
        return f


class PAUM(_Linear):
    """Li et al. 2002: update when y f <= τ_y, τ_{+1} = ρ, τ_{-1} = 1."""

    def step(self, x, y, rho, predict):
        f = float(self.w @ x)
        tau = rho if y > 0 else 1.0
        if y * f <= tau:
            self.w = self.w + y * x
        return f


class ROMMA(_Linear):
    """Li & Long 2002: w_{t+1} = c w_t + d x_t on y f <= 0 (aggressive: y f < 1); first update w = y x."""

    def __init__(self, d, aggressive=False):
        super().__init__(d)
        self.aggressive = aggressive

    def step(self, x, y, rho, predict):
        f = float(self.w @ x)
        if self.aggressive:
            violated = y * f < 1
        else:  # y f <= 0: a wrong prediction, or a positive scored exactly 0 (score 0 predicts +1)
            violated = predict(f) != y or (y > 0 and f == 0.0)
        if violated:
            ww = float(self.w @ self.w)
            xx = float(x @ x)
            if ww == 0:
                self.w = self.w + y * x
            else:
                deno = xx * ww - f * f
                if deno > ROMMA_PARALLEL_TOL * xx * ww:
                    c = (xx * ww - y * f) / deno
                    dcoef = ww * (y - f) / deno
                    self.w = c * self.w + dcoef * x
        return f


class PA(_Linear):
    """Crammer et al. 2006: τ = ℓ/‖x‖² (PA), min(C, ℓ/‖x‖²) (PA-I), ℓ/(‖x‖² + 1/(2C)) (PA-II)."""

    def __init__(self, d, variant="PA", C=1.0):
        super().__init__(d)
        self.variant, self.C = variant, C

    def step(self, x, y, rho, predict):
        f = float(self.w @ x)
        loss = max(0.0, 1.0 - y * f)
        sq = float(x @ x)
        if loss > 0 and sq > 0:
            if self.variant == "PA":
                tau = loss / sq
            elif self.variant == "PA-I":
                tau = min(self.C, loss / sq)
            else:
                tau = loss / (sq + 1.0 / (2.0 * self.C))
            self.w = self.w + tau * y * x
        return f


class CPAPB(_Linear):
    """Cost-sensitive prediction-based PA-I: on a mistake ℓ = √ρ(y, ŷ) − y f, τ = min(C, ℓ/‖x‖²)."""

    def __init__(self, d, C=1.0):
        super().__init__(d)
        self.C = C

    def step(self, x, y, rho, predict):
        f = float(self.w @ x)
        y_hat = predict(f)
        sq = float(x @ x)
        if y_hat != y and sq > 0:
            cost = rho if y > 0 else 1.0  # ρ(+1, −1) = ρ, ρ(−1, +1) = 1
            loss = math.sqrt(cost) - y * f
            self.w = self.w + min(self.C, loss / sq) * y * x
        return f


class CPAML(_Linear):
    """Cost-sensitive max-loss PA-I: on every round ℓ = max(0, √ρ(y, −y) − y f), τ = min(C, ℓ/‖x‖²)."""

    def __init__(self, d, C=1.0):
        super().__init__(d)
        self.C = C

    def step(self, x, y, rho, predict):
        f = float(self.w @ x)
        sq = float(x @ x)
        cost = rho if y > 0 else 1.0  # the other label's cost: ρ(+1, −1) = ρ, ρ(−1, +1) = 1
        loss = math.sqrt(cost) - y * f
        if loss > 0 and sq > 0:
            self.w = self.w + min(self.C, loss / sq) * y * x
        return f


class OGD(_Linear):
    """Zinkevich 2003 with η_t = η/√t; hinge or logistic loss."""

    def __init__(self, d, eta=1.0, loss="hinge"):
        super().__init__(d)
        self.eta, self.loss, self.t = eta, loss, 0

    def step(self, x, y, rho, predict):
        self.t += 1
        f = float(self.w @ x)
        eta_t = self.eta / math.sqrt(self.t)
        if self.loss == "hinge":
            if 1.0 - y * f > 0:
                self.w = self.w + eta_t * y * x
        else:
            self.w = self.w + eta_t * y * x / (1.0 + math.exp(y * f))
        return f

    def state(self):
        return {"w": self.w.copy(), "t": self.t}


class AROW:
    """Crammer, Kulesza, Dredze 2009: β = 1/(v + r), μ += ℓβ y Σx, Σ −= β Σx xᵀΣ."""

    def __init__(self, d, r=1.0):
        self.mu, self.sigma, self.r = np.zeros(d), np.eye(d), r

    def weights(self):
        return self.mu

    def step(self, x, y, rho, predict):
        f = float(self.mu @ x)
        loss = max(0.0, 1.0 - y * f)
        if loss > 0:
            sx = self.sigma @ x
            beta = 1.0 / (float(x @ sx) + self.r)
            self.mu = self.mu + loss * beta * y * sx
            self.sigma = self.sigma - beta * np.outer(sx, sx)
        return f

    def state(self):
        return {"mu": self.mu.copy(), "sigma": self.sigma.copy()}


class CWFamily:
    """Exact CW (Crammer, Dredze, Pereira 2008) and SCW-I / SCW-II (Wang, Zhao, Hoi 2012), on Σ itself.

    Closed forms of the SCW paper: ψ = 1 + φ²/2, ξ = 1 + φ²; CW: α = max(0, (−mψ + √(m²φ⁴/4 + vφ²ξ))/(vξ));
    SCW-I: min(C, α_CW); SCW-II: α = max(0, (−(2mn + φ²mv) + γ)/(2(n² + nvφ²))), n = v + 1/(2C),
    γ = φ√(φ²m²v² + 4nv(n + vφ²)); u = ¼(−αvφ + √(α²v²φ² + 4v))², β = αφ/(√u + vαφ);
    μ += α y Σx, Σ −= β Σx xᵀΣ, when φ√v − m > 0.

    Guard (as documented by jcsol): α, u, β use v̂ = max(v, ε‖x‖²); the variance along x after the update,
    v·r with r = 1 − βv̂, is kept >= ε‖x‖² by r ← max(r, ε‖x‖²/v̂), applied as Σ −= ((1 − r)/v) Σx xᵀΣ;
    no shrink where v < ε‖x‖².
    """

    def __init__(self, d, variant="CW", eta=0.7, C=1.0):
        self.mu, self.sigma = np.zeros(d), np.eye(d)
        self.variant, self.C = variant, C
        self.phi = NormalDist().inv_cdf(eta)

    def weights(self):
        return self.mu

    def step(self, x, y, rho, predict, scale=1.0):
        """One round; ``scale`` multiplies the mean step (CW-costs of Ali, Collins-Thompson: ``κ·c(x_t)``)."""
        phi = self.phi
        f = float(self.mu @ x)
        m = y * f
        sx = self.sigma @ x
        v = float(x @ sx)
        if phi * math.sqrt(max(v, 0.0)) - m > 0:
            floor = CW_VARIANCE_FLOOR * float(x @ x)
            vh = max(v, floor)
            if self.variant in ("CW", "SCW-I"):
                psi, xi = 1 + phi**2 / 2, 1 + phi**2
                alpha = max(0.0, (-m * psi + math.sqrt(m * m * phi**4 / 4 + vh * phi**2 * xi)) / (vh * xi))
                if self.variant == "SCW-I":
                    alpha = min(alpha, self.C)
            else:
                n = vh + 1 / (2 * self.C)
                gamma = phi * math.sqrt(phi**2 * m * m * vh * vh + 4 * n * vh * (n + vh * phi**2))
                alpha = max(0.0, (-(2 * m * n + phi**2 * m * vh) + gamma) / (2 * (n * n + n * vh * phi**2)))
            u = 0.25 * (-alpha * vh * phi + math.sqrt(alpha**2 * vh**2 * phi**2 + 4 * vh)) ** 2
            beta = alpha * phi / (math.sqrt(u) + vh * alpha * phi)
            self.mu = self.mu + scale * alpha * y * sx
            if v >= floor and v > 0:
                r = max(1.0 - beta * vh, floor / vh)
                self.sigma = self.sigma - ((1.0 - r) / v) * np.outer(sx, sx)
        return f

    def state(self):
        return {"mu": self.mu.copy(), "sigma": self.sigma.copy()}


def make(name: str, d: int, **hp):
    """The reference learner for a jcsol variant name, with jcsol's defaults (LIBOL's)."""
    if name == "Perceptron":
        return Perceptron(d)
    if name == "PAUM":
        return PAUM(d)
    if name in ("ROMMA", "aROMMA"):
        return ROMMA(d, aggressive=name == "aROMMA")
    if name in ("PA", "PA-I", "PA-II"):
        return PA(d, name, hp.get("C", 1.0))
    if name == "CPA-PB":
        return CPAPB(d, hp.get("C", 1.0))
    if name == "CPA-ML":
        return CPAML(d, hp.get("C", 1.0))
    if name in ("OGD-hinge", "OGD-logistic"):
        return OGD(d, hp.get("eta", 1.0), name.split("-")[1])
    if name == "AROW":
        return AROW(d, hp.get("r", 1.0))
    if name == "CW":
        return CWFamily(d, "CW", hp.get("eta", 0.7))
    if name == "SCW-I":
        return CWFamily(d, "SCW-I", hp.get("eta", 0.75), hp.get("C", 1.0))
    if name == "SCW-II":
        return CWFamily(d, "SCW-II", hp.get("eta", 0.9), hp.get("C", 1.0))
    raise ValueError(f"no reference for {name!r}")


class Trace(NamedTuple):
    scores: np.ndarray  # (L,) pre-update score of every round
    scales: np.ndarray  # (L,) ‖w_t‖·‖x_t‖ of every round (NaN without ``follow``)
    followed: np.ndarray  # rounds at a near-tie where the prediction was taken from ``follow``
    state: dict  # the final model


def run(
    name: str, X: np.ndarray, y: np.ndarray, order: np.ndarray, rho: float, *, follow=None, tie_rtol: float = 0.0, **hp
) -> Trace:
    """One pass over ``X[order]`` in float64: every round's score and scale, and the final state.

    ``follow``: optional ``(L,)`` booleans, another run's predictions (True = +1), adopted at the near-ties
    ``|f_t| <= tie_rtol·‖w_t‖‖x_t‖`` (see the module docstring).
    """
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.float64)
    learner = make(name, X.shape[1], **hp)
    L = len(order)
    scores, scales, followed = np.empty(L), np.empty(L), []
    for t, i in enumerate(order):
        x, yi = X[i], float(y[i])
        if follow is not None:
            w = learner.weights()
            scales[t] = math.sqrt(float(w @ w) * float(x @ x))
        else:
            scales[t] = np.nan

        def predict(f, t=t):
            if follow is not None and abs(f) <= tie_rtol * scales[t]:
                followed.append(t)
                return 1.0 if follow[t] else -1.0
            return 1.0 if f >= 0 else -1.0

        scores[t] = learner.step(x, yi, rho if yi > 0 else 1.0, predict)
    return Trace(scores, scales, np.asarray(followed, int), learner.state())
