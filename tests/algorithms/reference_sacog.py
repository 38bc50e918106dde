"""An independent float64 NumPy reference for SACOG (Alg. 2–3) and sparse SACOG (Alg. 4–6) of Zhao, Zhang, Wu,
Hoi, Tan, Huang, *Adaptive Cost-Sensitive Online Classification*, IEEE TKDE 2019.

Written from ``docs/conventions.md`` and the paper's algorithms, one example at a time
with plain loops and dense arrays, literally: ``S = (tΛ)^{1/2} V`` and ``H = diag(1/(1 + tΛ))`` are formed
and the mean step is ``μ ← μ − η (g − Sᵀ H S g)``; ``orth`` is row-by-row Gram–Schmidt; the sparse version
keeps the Gram matrix ``K`` itself, forms ``δ = F^{-1} Γ_t F Z x̂`` with an explicit inverse, and runs
``Decompose(F, K)`` as Alg. 6 writes it. It does not import jcsol.

Conventions: round ``t`` takes row ``order[t]``, scores it with the model *before* the update,
predicts ``+1`` iff the score is ``>= 0``, then updates. ``μ_1 = 0``; the sketch starts from the given ``V_0``
(``Z_0`` for the sparse version; ``F_0 = K_0 = I``), ``Λ_0 = 0``, ``t_0 = 0``, ``Γ_t = I/t``.

``ρ_t`` is given as ``rho_of(labels)`` for a run's label stream in round order (:func:`sum_offline`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

RhoOf = Callable[[np.ndarray], np.ndarray]


class Trace(NamedTuple):
    """One run of the reference: per-round arrays (length T) and the final model."""

    scores: np.ndarray  # pre-update scores f_t
    predictions: np.ndarray  # +1 iff f_t >= 0
    losses: np.ndarray  # ℓ_t(μ_t)
    labels: np.ndarray  # y[order]
    mu: np.ndarray  # final mean μ (for the sparse version: w + Zᵀ b)
    V: np.ndarray  # final sketch directions (m × d); F Z for the sparse version
    lam: np.ndarray  # final Λ (m,)


def sum_offline(alpha_p: float = 0.5) -> RhoOf:
    """*sum*, offline: ``ρ = α_p T_n / (α_n T_p)`` over the run's stream; ``ρ_t = ρ`` for positives, 1 else."""

    def rho_of(labels: np.ndarray) -> np.ndarray:
        labels = np.asarray(labels)
        rho = alpha_p * np.sum(labels < 0) / ((1.0 - alpha_p) * np.sum(labels > 0))
        return np.where(labels > 0, rho, 1.0)

    return rho_of


def loss_and_scale(kind: str, margin: float, rho: float) -> tuple[float, float]:
    """The loss and ``c`` in ``g = −c·y·x``: I ``max(0, ρ − y f)``, c = 1; II ``ρ max(0, 1 − y f)``, c = ρ."""
    if kind == "I":
        return max(0.0, rho - margin), 1.0
    if kind == "II":
        return rho * max(0.0, 1.0 - margin), rho
    raise ValueError(kind)


def gram_schmidt_rows(A: np.ndarray) -> np.ndarray:
    """Orthonormalises the rows of ``A`` in order (modified Gram–Schmidt, each projection done twice)."""
    A = np.asarray(A, np.float64)
    Q = np.zeros_like(A)
    for i in range(A.shape[0]):
        v = A[i].copy()
        for _ in range(2):
            for j in range(i):
                v -= (Q[j] @ v) * Q[j]
        Q[i] = v / np.linalg.norm(v)
    return Q


def sacog(
    X,
    y,
    order,
    V0,
    *,
    eta: float,
    gamma: float = 1.0,
    loss: str = "I",
    rho_of: RhoOf | None = None,
    sketch_every: int = 1,
) -> Trace:
    """SACOG (the ACOG paper's Alg. 2) with Oja's sketch (Alg. 3), one example at a time, in float64.

    ``sketch_every = k > 1`` ("update the sketch every m rounds"): ``Λ`` every round; Oja's step
    ``Γ_t V x̂ x̂ᵀ`` accumulated with ``V`` frozen, and ``V ← orth(V + accumulated)`` on rounds ``t ≡ 0 mod k``.
    """
    X = np.asarray(X, np.float64)
    y = np.asarray(y)
    order = np.asarray(order)
    rho_t = (rho_of or sum_offline())(y[order])
    V = np.array(V0, np.float64)
    m, d = V.shape
    mu = np.zeros(d)
    lam = np.zeros(m)
    pending = np.zeros_like(V)
    t = 0
    scores, losses = np.zeros(len(order)), np.zeros(len(order))
    for n, i in enumerate(order):
        x, label = X[i], float(y[i])
        f = mu @ x
        ell, c = loss_and_scale(loss, label * f, rho_t[n])
        scores[n], losses[n] = f, ell
        # SketchUpdate(x̂), Alg. 3
        x_hat = x / np.sqrt(gamma)
        t += 1
        gamma_t = 1.0 / t
        proj = V @ x_hat
        lam = (1.0 - gamma_t) * lam + gamma_t * proj**2
        step = gamma_t * np.outer(proj, x_hat)
        if sketch_every == 1:
            V = gram_schmidt_rows(V + step)
        else:
            pending += step
            if t % sketch_every == 0:
                V = gram_schmidt_rows(V + pending)
                pending[:] = 0.0
        S = np.sqrt(t * lam)[:, None] * V
        H = np.diag(1.0 / (1.0 + t * lam))
        if ell > 0:
            g = -c * label * x
            mu = mu - eta * (g - S.T @ (H @ (S @ g)))
    return Trace(scores, np.where(scores >= 0, 1, -1), losses, y[order], mu, V, lam)


def decompose(F: np.ndarray, K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ACOG paper's Alg. 6: ``(L, Q)`` with ``L Q = F``, ``Q K Qᵀ = I``, ``L`` lower triangular
    (Gram–Schmidt under K).

    Assumes every ``c`` is non-zero (the paper's footnote 1), so no row or column is deleted.
    """
    m = F.shape[0]
    L, Q = np.zeros((m, m)), np.zeros((m, m))
    for i in range(m):
        f = F[i]
        alpha = Q @ K @ f
        beta = f - Q.T @ alpha
        c = np.sqrt(beta @ K @ beta)
        if c == 0:
            raise ValueError("rank-deficient sketch (Alg. 6 would delete a row)")
        Q[i] = beta / c
        alpha[i] = c
        L[i] = alpha
    return L, Q


def sparse_sacog(
    X,
    y,
    order,
    Z0,
    *,
    eta: float,
    gamma: float = 1.0,
    loss: str = "I",
    rho_of: RhoOf | None = None,
    correct_every_round: bool = True,
) -> Trace:
    """Sparse SACOG (the ACOG paper's Alg. 4) with the sparse Oja's sketch (Alg. 5) and Decompose (Alg. 6), float64.

    ``correct_every_round=False`` is the paper's text: ``w ← w − η g − x̂ δᵀ b`` only when ``ℓ_t > 0``.
    ``True`` also applies ``w ← w − x̂ δᵀ b`` on the other rounds, since ``Z`` changes on every round and
    ``μ = w + Zᵀ b`` needs it (sparse SACOG must predict as SACOG).
    """
    X = np.asarray(X, np.float64)
    y = np.asarray(y)
    order = np.asarray(order)
    rho_t = (rho_of or sum_offline())(y[order])
    Z = np.array(Z0, np.float64)
    m, d = Z.shape
    w, b = np.zeros(d), np.zeros(m)
    F, K = np.eye(m), np.eye(m)
    lam = np.zeros(m)
    t = 0
    scores, losses = np.zeros(len(order)), np.zeros(len(order))
    for n, i in enumerate(order):
        x, label = X[i], float(y[i])
        f = (w + Z.T @ b) @ x  # μ_t = w_t + Z_{t-1}ᵀ b_t
        ell, c = loss_and_scale(loss, label * f, rho_t[n])
        scores[n], losses[n] = f, ell
        x_hat = x / np.sqrt(gamma)
        # SketchUpdate(x̂), Alg. 5
        t += 1
        Gamma = np.eye(m) / t
        lam = (1.0 - 1.0 / t) * lam + (1.0 / t) * (F @ Z @ x_hat) ** 2
        delta = np.linalg.inv(F) @ Gamma @ F @ Z @ x_hat
        zx = Z @ x_hat
        K = K + np.outer(zx, delta) + np.outer(delta, zx) + (x_hat @ x_hat) * np.outer(delta, delta)
        Z = Z + np.outer(delta, x_hat)
        _, F = decompose(F, K)
        H = np.diag(1.0 / (1.0 + t * lam))
        if ell > 0:
            g = -c * label * x
            w = w - eta * g - x_hat * (delta @ b)
            b = b + eta * F.T @ (t * np.diag(lam) @ H) @ F @ Z @ g
        elif correct_every_round:
            w = w - x_hat * (delta @ b)
    return Trace(scores, np.where(scores >= 0, 1, -1), losses, y[order], w + Z.T @ b, F @ Z, lam)
