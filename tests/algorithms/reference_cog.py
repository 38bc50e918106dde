"""An independent float64 NumPy reference for COG-I/II and ACOG-I/II (full and diagonal).

Written from the conventions of ``docs/conventions.md`` and the papers' update rules only (Wang, Zhao, Hoi,
*Cost-Sensitive Online Classification*, ICDM 2012; Zhao, Zhang, Wu, Hoi, Tan, Huang, *Adaptive Cost-Sensitive
Online Classification*, IEEE TKDE 2019), one example at a time, with plain loops and no vectorisation over rounds
or runs, so that it can check jcsol's engine step by step. It does not import jcsol.

Conventions: round ``t`` takes row ``order[t]``, scores it with the model *before* the update,
``f_t = w_t · x_t``, predicts ``+1`` iff ``f_t >= 0``, then updates. ``w_1 = 0``, ``Σ_1 = I``.

ρ (``docs/conventions.md``) is given as a ``rho_of`` callable: ``rho_of(labels) -> ρ_t`` for a run's whole label stream
``labels = y[order]`` (in round order). :func:`sum_offline`, :func:`sum_laplace` and :func:`cost` build them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

RhoOf = Callable[[np.ndarray], np.ndarray]

# Confusion-count cells, in the order of the returned 4-vectors.
TP, FN, FP, TN = 0, 1, 2, 3


# --------------------------------------------------------------------------------------------------------------
# ρ_t: ρ for a positive example, 1 for a negative one (docs/conventions.md).
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
# Losses: type I and type II (docs/conventions.md)
# --------------------------------------------------------------------------------------------------------------


def loss_value(kind: str, margin: float, rho: float) -> float:
    """The cost-sensitive loss at margin ``m = y w·x``: ``max(0, ρ_t − m)`` (I), ``ρ_t max(0, 1 − m)`` (II)."""
    if kind == "I":
        return max(0.0, rho - margin)
    if kind == "II":
        return rho * max(0.0, 1.0 - margin)
    raise ValueError(f"loss kind must be 'I' or 'II', got {kind!r}")


def gradient(kind: str, x: np.ndarray, y: float, rho: float) -> np.ndarray:
    """The loss's gradient where it is positive: ``g = −y x`` (I), ``g = −ρ_t y x`` (II)."""
    return -y * x if kind == "I" else -rho * y * x


class Trace(NamedTuple):
    """A reference run: one entry per round (in round order) and the final model."""

    scores: np.ndarray  # (L,) f_t = w_t · x_t, before the update
    predictions: np.ndarray  # (L,) +1 iff f_t >= 0 else -1
    labels: np.ndarray  # (L,) y_t
    rhos: np.ndarray  # (L,) ρ_t
    losses: np.ndarray  # (L,) ℓ_t(w_t)
    w: np.ndarray  # (d,) final weights (μ for ACOG)
    sigma: np.ndarray | None  # final Σ (d, d), its diagonal (d,), or None for COG
    snapshots: dict  # k -> (w, Σ) after the first k rounds, for the requested checkpoints

    @property
    def updated(self) -> np.ndarray:
        """Which rounds updated the model (ℓ_t > 0)."""
        return self.losses > 0

    def hinge_argument(self, kind: str) -> np.ndarray:
        """The argument of the loss's max: ``ρ_t − y f`` (I) or ``1 − y f`` (II); its sign decides the update."""
        margin = self.labels * self.scores
        return (self.rhos - margin) if kind == "I" else (1.0 - margin)


def _copy(a):
    return None if a is None else a.copy()


def cog(X, y, order, eta: float, loss: str, rho_of: RhoOf, checkpoints=()) -> Trace:
    """COG-I / COG-II (Wang, Zhao, Hoi, ICDM 2012): ``w ← w − λ g`` when ``ℓ_t > 0``, else unchanged; ``w_1 = 0``.

    ``checkpoints``: round counts ``k`` at which to keep a copy of the model after the first ``k`` rounds.
    """
    return _run(X, y, order, rho_of, checkpoints, loss, _COGStep(eta, loss))


def acog(
    X,
    y,
    order,
    eta: float,
    gamma: float,
    loss: str,
    diagonal: bool,
    rho_of: RhoOf,
    checkpoints=(),
    new_sigma: float = 1.0,
) -> Trace:
    """ACOG-I / ACOG-II, full or diagonal (Zhao et al., *Adaptive Cost-Sensitive Online Classification*, TKDE,
    Alg. 1 and §2.2). Predict with μ; when ``ℓ_t(μ_t) > 0``:

    full: ``Σ_{t+1} = Σ_t − Σ_t x xᵀ Σ_t / (γ + xᵀ Σ_t x)``, then ``μ_{t+1} = μ_t − η Σ_{t+1} g_t`` (the new Σ);
    diag: ``s ← s − (s∘x)² / (γ + Σ_i s_i x_i²)``, then ``μ ← μ − η s∘g`` (the new s).
    Otherwise nothing changes. ``μ_1 = 0``, ``Σ_1 = I``. ``new_sigma`` = ν steps along ``(1 − ν) Σ_t + ν Σ_{t+1}``
    instead (ν = 0: the old Σ_t, that paper's Fig. 7), both matrices formed explicitly.
    """
    return _run(X, y, order, rho_of, checkpoints, loss, _ACOGStep(eta, gamma, loss, diagonal, new_sigma))


class _COGStep:
    def __init__(self, eta, kind):
        self.eta, self.kind = eta, kind

    def init(self, d):
        return np.zeros(d), None

    def update(self, w, sigma, x, y, rho):
        g = gradient(self.kind, x, y, rho)
        return w - self.eta * g, None


class _ACOGStep:
    def __init__(self, eta, gamma, kind, diagonal, new_sigma=1.0):
        self.eta, self.gamma, self.kind, self.diagonal, self.nu = eta, gamma, kind, diagonal, new_sigma

    def init(self, d):
        return np.zeros(d), (np.ones(d) if self.diagonal else np.eye(d))

    def update(self, mu, sigma, x, y, rho):
        g = gradient(self.kind, x, y, rho)
        old = sigma
        if self.diagonal:
            sx = sigma * x
            sigma = sigma - sx * sx / (self.gamma + float(np.sum(sigma * x * x)))
            step = sigma if self.nu == 1.0 else (1 - self.nu) * old + self.nu * sigma
            mu = mu - self.eta * step * g  # new s (ν = 1)
        else:
            sigma_x = sigma @ x  # Σ_t x
            x_sigma = x @ sigma  # xᵀ Σ_t
            sigma = sigma - np.outer(sigma_x, x_sigma) / (self.gamma + float(x @ sigma_x))
            step = sigma if self.nu == 1.0 else (1 - self.nu) * old + self.nu * sigma
            mu = mu - self.eta * (step @ g)  # Σ_{t+1} g_t (ν = 1)
        return mu, sigma


def _run(X, y, order, rho_of: RhoOf, checkpoints, kind: str, step) -> Trace:
    if kind not in ("I", "II"):
        raise ValueError(f"loss must be 'I' or 'II', got {kind!r}")
    X = np.asarray(X, np.float64)
    order = np.asarray(order)
    labels = np.asarray(y, np.float64)[order]
    rhos = np.asarray(rho_of(labels), np.float64)
    L, d = len(order), X.shape[1]
    w, sigma = step.init(d)
    scores, losses = np.empty(L), np.empty(L)
    keep = set(int(k) for k in checkpoints)
    snapshots = {0: (w.copy(), _copy(sigma))} if 0 in keep else {}
    for t in range(L):
        x, yt, rho = X[order[t]], float(labels[t]), float(rhos[t])
        f = float(np.dot(w, x))  # score with the model before the update
        scores[t] = f
        ell = loss_value(kind, yt * f, rho)
        losses[t] = ell
        if ell > 0:
            w, sigma = step.update(w, sigma, x, yt, rho)
        if t + 1 in keep:
            snapshots[t + 1] = (w.copy(), _copy(sigma))
    predictions = np.where(scores >= 0, 1.0, -1.0)  # score exactly 0 predicts +1
    return Trace(scores, predictions, labels, rhos, losses, w, sigma, snapshots)


def confusion(labels, predictions) -> np.ndarray:
    """``(tp, fn, fp, tn)`` of labels and predictions in ``{-1, +1}``."""
    labels = np.asarray(labels)
    predictions = np.asarray(predictions)
    pos, pred_pos = labels > 0, predictions > 0
    return np.array(
        [
            np.sum(pos & pred_pos),  # tp
            np.sum(pos & ~pred_pos),  # fn
            np.sum(~pos & pred_pos),  # fp
            np.sum(~pos & ~pred_pos),  # tn
        ],
        np.int64,
    )


def run_variant(
    name: str, X, y, order, rho_of: RhoOf, eta: float, gamma: float = 1.0, checkpoints=(), new_sigma: float = 1.0
) -> Trace:
    """The reference run of a variant named as in jcsol.VARIANTS (``"COG-I"``, ``"ACOG-II-diag"``, …)."""
    parts = name.split("-")
    family, kind, diagonal = parts[0], parts[1], parts[-1] == "diag"
    if family == "COG":
        return cog(X, y, order, eta, kind, rho_of, checkpoints)
    if family == "ACOG":
        return acog(X, y, order, eta, gamma, kind, diagonal, rho_of, checkpoints, new_sigma)
    raise ValueError(f"no reference for {name!r}")
