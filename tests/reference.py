"""An independent float64 NumPy reference for COG-I/II and ACOG-I/II (full and diagonal).

Written from SPEC.md §1–4 only, one example at a time, with plain loops and no vectorisation over rounds or
runs, so that it can check jcsol's engine step by step. It does not import jcsol.

Conventions (SPEC §1): round ``t`` takes row ``order[t]``, scores it with the model *before* the update,
``f_t = w_t · x_t``, predicts ``+1`` iff ``f_t >= 0``, then updates. ``w_1 = 0``, ``Σ_1 = I``.

ρ (SPEC §3) is given as a ``rho_of`` callable: ``rho_of(labels) -> ρ_t`` for a run's whole label stream
``labels = y[order]`` (in round order). :func:`sum_offline`, :func:`sum_laplace` and :func:`cost` build them.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

RhoOf = Callable[[np.ndarray], np.ndarray]

# Confusion-count cells, in the order of the returned 4-vectors.
TP, FN, FP, TN = 0, 1, 2, 3


# --------------------------------------------------------------------------------------------------------------
# ρ_t (SPEC §3): ρ for a positive example, 1 for a negative one.
# --------------------------------------------------------------------------------------------------------------

def sum_offline(alpha_p: float = 0.5) -> RhoOf:
    """*sum*, offline: ``ρ = α_p T_n / (α_n T_p)`` with ``T_p, T_n`` counted over the run's whole stream."""

    def rho_of(labels: np.ndarray) -> np.ndarray:
        labels = np.asarray(labels)
        t_pos = float(np.sum(labels > 0))
        t_neg = float(np.sum(labels < 0))
        rho = alpha_p * t_neg / ((1.0 - alpha_p) * t_pos)
        out = np.empty(len(labels), np.float64)
        for t, label in enumerate(labels):
            out[t] = rho if label > 0 else 1.0
        return out

    return rho_of


def sum_laplace(alpha_p: float = 0.5) -> RhoOf:
    """*sum*, online Laplace estimate: ``ρ_t = α_p (n_t + 1) / (α_n (p_t + 1))``, ``p_t, n_t`` the positives and
    negatives seen up to **and including** round ``t``."""

    def rho_of(labels: np.ndarray) -> np.ndarray:
        out = np.empty(len(labels), np.float64)
        p = n = 0
        for t, label in enumerate(np.asarray(labels)):
            if label > 0:
                p += 1
            else:
                n += 1
            out[t] = alpha_p * (n + 1) / ((1.0 - alpha_p) * (p + 1)) if label > 0 else 1.0
        return out

    return rho_of


def cost(c_p: float = 0.9, c_n: float = 0.1) -> RhoOf:
    """*cost*: ``ρ = c_p / c_n``."""

    def rho_of(labels: np.ndarray) -> np.ndarray:
        rho = c_p / c_n
        return np.array([rho if label > 0 else 1.0 for label in np.asarray(labels)], np.float64)

    return rho_of


# --------------------------------------------------------------------------------------------------------------
# Losses (SPEC §3)
# --------------------------------------------------------------------------------------------------------------

def loss_and_grad(kind: str, w: np.ndarray, x: np.ndarray, y: float, rho: float) -> tuple[float, np.ndarray]:
    """``(ℓ, g)`` of the cost-sensitive loss at ``w``; ``g`` is the gradient where ``ℓ > 0`` (unused otherwise).

    type I:  ``ℓ = max(0, ρ_t − y w·x)``,   ``g = −y x``
    type II: ``ℓ = ρ_t max(0, 1 − y w·x)``, ``g = −ρ_t y x``
    """
    f = float(np.dot(w, x))
    if kind == "I":
        return max(0.0, rho - y * f), -y * x
    if kind == "II":
        return rho * max(0.0, 1.0 - y * f), -rho * y * x
    raise ValueError(f"loss kind must be 'I' or 'II', got {kind!r}")


class Trace(NamedTuple):
    """A reference run: one entry per round (in round order) and the final model."""

    scores: np.ndarray       # (L,) f_t = w_t · x_t, before the update
    predictions: np.ndarray  # (L,) +1 iff f_t >= 0 else -1
    labels: np.ndarray       # (L,) y_t
    rhos: np.ndarray         # (L,) ρ_t
    losses: np.ndarray       # (L,) ℓ_t(w_t)
    w: np.ndarray            # (d,) final weights (μ for ACOG)
    sigma: np.ndarray | None  # final Σ (d, d), its diagonal (d,), or None for COG

    @property
    def updated(self) -> np.ndarray:
        """Which rounds updated the model (ℓ_t > 0)."""
        return self.losses > 0

    def hinge_argument(self, kind: str) -> np.ndarray:
        """The argument of the loss's max: ``ρ_t − y f`` (I) or ``1 − y f`` (II); its sign decides the update."""
        margin = self.labels * self.scores
        return (self.rhos - margin) if kind == "I" else (1.0 - margin)


def _stream(X, y, order):
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.float64)
    order = np.asarray(order)
    return X, y, order


def cog(X, y, order, eta: float, loss: str, rho_of: RhoOf) -> Trace:
    """COG-I / COG-II (SPEC §4): ``w ← w − λ g`` when ``ℓ_t > 0``, else unchanged; ``w_1 = 0``."""
    X, y, order = _stream(X, y, order)
    labels = y[order]
    rhos = rho_of(labels)
    L, d = len(order), X.shape[1]
    w = np.zeros(d)
    scores, preds, losses = np.empty(L), np.empty(L), np.empty(L)
    for t in range(L):
        x, yt = X[order[t]], labels[t]
        f = float(np.dot(w, x))
        scores[t] = f
        preds[t] = 1.0 if f >= 0 else -1.0
        ell, g = loss_and_grad(loss, w, x, yt, rhos[t])
        losses[t] = ell
        if ell > 0:
            w = w - eta * g
    return Trace(scores, preds, labels, rhos, losses, w, None)


def acog(X, y, order, eta: float, gamma: float, loss: str, diagonal: bool, rho_of: RhoOf) -> Trace:
    """ACOG-I / ACOG-II, full or diagonal (SPEC §4). Predict with μ; when ``ℓ_t(μ_t) > 0``:

    full: ``Σ_{t+1} = Σ_t − Σ_t x xᵀ Σ_t / (γ + xᵀ Σ_t x)``, then ``μ_{t+1} = μ_t − η Σ_{t+1} g_t`` (the new Σ);
    diag: ``s ← s − (s∘x)² / (γ + Σ_i s_i x_i²)``, then ``μ ← μ − η s∘g`` (the new s).
    Otherwise nothing changes. ``μ_1 = 0``, ``Σ_1 = I``.
    """
    X, y, order = _stream(X, y, order)
    labels = y[order]
    rhos = rho_of(labels)
    L, d = len(order), X.shape[1]
    mu = np.zeros(d)
    sigma = np.ones(d) if diagonal else np.eye(d)
    scores, preds, losses = np.empty(L), np.empty(L), np.empty(L)
    for t in range(L):
        x, yt = X[order[t]], labels[t]
        f = float(np.dot(mu, x))
        scores[t] = f
        preds[t] = 1.0 if f >= 0 else -1.0
        ell, g = loss_and_grad(loss, mu, x, yt, rhos[t])
        losses[t] = ell
        if ell > 0:
            if diagonal:
                sx = sigma * x
                sigma = sigma - sx * sx / (gamma + float(np.sum(sigma * x * x)))
                mu = mu - eta * sigma * g
            else:
                sigma_x = sigma @ x           # Σ_t x
                x_sigma = x @ sigma           # xᵀ Σ_t
                sigma = sigma - np.outer(sigma_x, x_sigma) / (gamma + float(x @ sigma_x))
                mu = mu - eta * (sigma @ g)   # Σ_{t+1} g_t
    return Trace(scores, preds, labels, rhos, losses, mu, sigma)


def confusion(labels, predictions) -> np.ndarray:
    """``(tp, fn, fp, tn)`` of labels and predictions in ``{-1, +1}``."""
    labels = np.asarray(labels)
    predictions = np.asarray(predictions)
    pos, pred_pos = labels > 0, predictions > 0
    return np.array([
        np.sum(pos & pred_pos),     # tp
        np.sum(pos & ~pred_pos),    # fn
        np.sum(~pos & pred_pos),    # fp
        np.sum(~pos & ~pred_pos),   # tn
    ], np.int64)


def run_variant(name: str, X, y, order, rho_of: RhoOf, eta: float, gamma: float = 1.0) -> Trace:
    """The reference run of a variant named as in jcsol.VARIANTS (``"COG-I"``, ``"ACOG-II-diag"``, …)."""
    parts = name.split("-")
    family, loss, diagonal = parts[0], parts[1], parts[-1] == "diag"
    if family == "COG":
        return cog(X, y, order, eta, loss, rho_of)
    if family == "ACOG":
        return acog(X, y, order, eta, gamma, loss, diagonal, rho_of)
    raise ValueError(f"no reference for {name!r}")
