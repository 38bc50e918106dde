"""Independent float64 NumPy references for KOIL, KOIL-MKL and the AUC / kernel baselines of the KOIL
thesis's Table 3.3 (J. Hu, *Kernelized Online Imbalanced Learning*, thesis, The Chinese University of Hong
Kong; and Hu, Yang, King, Lyu, So, AAAI 2015).

Written from the papers, one example at a time with plain Python lists for the buffers, so that
they can check jcsol step by step. They do not import jcsol. Random choices are not drawn here: every function
that needs them takes ``u``, the array of uniform numbers in ``[0, 1)`` that the JAX learner draws (one row per
round, exported by ``jcsol.algorithms.koil.uniforms``), and makes the same decisions from them:

* reservoir sampling with a full buffer of size ``N`` after ``N_t`` examples of the class: replace iff
  ``u[0]·N_t < N``, the replaced slot is ``⌊u[1]·N⌋``;
* RBP: the discarded slot is ``⌊u[0]·B⌋``;
* KOIL-MKL: kernel ``l`` is updated iff ``u[l, 0] < w_l / max_j w_j``, its reservoir uses ``u[l, 1:]``.

Slot layout: each buffer is a list; appending adds a slot at the end, a replacement writes in place, so slot
``j`` of a buffer here is slot ``j`` of the same buffer in jcsol.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]  # k(A (n, d), b (d,)) -> (n,)


def gaussian(sigma: float) -> Kernel:
    def k(A, b):
        A = np.atleast_2d(np.asarray(A, np.float64))
        diff = A - np.asarray(b, np.float64)[None, :]
        return np.exp(-np.sum(diff * diff, axis=1) / (2.0 * sigma * sigma))

    return k


def polynomial(degree: int, coef0: float = 0.0) -> Kernel:
    def k(A, b):
        A = np.atleast_2d(np.asarray(A, np.float64))
        return (A @ np.asarray(b, np.float64) + coef0) ** degree

    return k


def linear() -> Kernel:
    return polynomial(1, 0.0)


# --------------------------------------------------------------------------------------------------------------
# KOIL
# --------------------------------------------------------------------------------------------------------------


class _Buffer:
    def __init__(self, cap):
        self.x: list[np.ndarray] = []
        self.a: list[float] = []
        self.cap = math.inf if cap is None else cap
        self.seen = 0
        self.head = 0


def _f(kernel: Kernel, bufs, z) -> float:
    xs = bufs[1].x + bufs[-1].x
    if not xs:
        return 0.0
    return float(np.dot(np.asarray(bufs[1].a + bufs[-1].a), kernel(np.asarray(xs), z)))


def koil_round(kernel: Kernel, bufs, x, yt: int, u_row, *, eta, C, k, policy, loss, decay=True):
    """One KOIL round on ``bufs = {+1: _Buffer, -1: _Buffer}`` (modified in place): ``(f_t, Σ chosen ℓ)``."""
    own, opp = bufs[yt], bufs[-yt]
    ft = _f(kernel, bufs, x)
    margins = [1.0 - yt * (ft - _f(kernel, bufs, xj)) for xj in opp.x]
    valid = [j for j, m in enumerate(margins) if m > 0]
    sims = kernel(np.asarray(opp.x), x) if opp.x else np.zeros(0)
    chosen = sorted(valid, key=lambda j: (-sims[j], j))[:k]
    per_pair = {j: (2.0 * margins[j] if loss == "smooth" else 1.0) for j in chosen}
    pair_loss = sum((margins[j] ** 2 if loss == "smooth" else margins[j]) for j in chosen)
    bootstrap = len(opp.x) == 0 or (len(own.x) == 0 and len(valid) == 0)
    step = eta * C * yt
    alpha_t = step if bootstrap else step * sum(per_pair.values())
    keep = (1.0 - eta) if decay else 1.0
    for buf in (own, opp):
        buf.a = [keep * a for a in buf.a]
    for j in chosen:
        opp.a[j] -= step * per_pair[j]
    own.seen += 1
    if bootstrap or valid:  # α_t ≠ 0: x_t becomes a support vector
        if len(own.x) < own.cap:
            own.x.append(np.asarray(x, np.float64))
            own.a.append(alpha_t)
        else:
            if policy.startswith("RS"):
                replace = u_row[0] * own.seen < own.cap
                r = min(int(np.floor(u_row[1] * own.cap)), own.cap - 1)
            else:
                replace, r = True, own.head
                own.head = (own.head + 1) % own.cap
            if replace:
                x_r, a_r = own.x[r], own.a[r]
                own.x[r], own.a[r] = np.asarray(x, np.float64), alpha_t
            else:
                x_r, a_r = np.asarray(x, np.float64), alpha_t
            if policy.endswith("++"):
                c = int(np.argmax(kernel(np.asarray(own.x), x_r)))
                own.a[c] += a_r
    return ft, pair_loss


def koil(
    X, y, order, *, eta, C, kernel: Kernel, budget_pos=None, budget_neg=None, k=10, policy="RS++", loss="hinge", u=None
):
    """One KOIL pass over ``X[order]`` (``budget=None``: unbounded buffers). Returns a dict with ``scores``
    (pre-update ``f_t``), ``losses``, and per class ``x``, ``alpha``, ``f_sv`` (f at each support vector)."""
    X = np.asarray(X, np.float64)
    bufs = {1: _Buffer(budget_pos), -1: _Buffer(budget_neg)}
    scores, losses = [], []
    for t, i in enumerate(order):
        yt = 1 if y[i] > 0 else -1
        ft, pl = koil_round(
            kernel, bufs, X[i], yt, None if u is None else u[t], eta=eta, C=C, k=k, policy=policy, loss=loss
        )
        scores.append(ft)
        losses.append(C * pl)
    return _koil_out(kernel, bufs, scores, losses)


def _koil_out(kernel, bufs, scores, losses):
    out = {"scores": np.asarray(scores), "losses": np.asarray(losses)}
    for cls, name in ((1, "pos"), (-1, "neg")):
        out[f"{name}_x"] = np.asarray(bufs[cls].x).reshape(len(bufs[cls].x), -1)
        out[f"{name}_alpha"] = np.asarray(bufs[cls].a)
        out[f"{name}_f"] = np.asarray([_f(kernel, bufs, z) for z in bufs[cls].x])
        out[f"{name}_seen"] = bufs[cls].seen
    out["bufs"] = bufs
    return out


def koil_score(kernel: Kernel, out, X) -> np.ndarray:
    """The final model's ``f`` on rows ``X``."""
    return np.asarray([_f(kernel, out["bufs"], x) for x in np.asarray(X, np.float64)])


def koil_mkl(
    X,
    y,
    order,
    *,
    eta,
    C,
    kernels: list[Kernel],
    budget_pos,
    budget_neg,
    k,
    policy="RS++",
    loss="hinge",
    combine="vote",
    decay=False,
    penalized_weights=True,
    u=None,
):
    """KOIL-MKL (the KOIL thesis, Alg. 4): ``scores`` are ``F_t = Σ_l q_l sign(f_l(x_t))`` (``combine="vote"``) or
    ``Σ_l q_l f_l(x_t)`` (``"sum"``) before the round; ``w`` the final weights divided by their maximum; per kernel
    the buffers."""
    X = np.asarray(X, np.float64)
    m = len(kernels)
    bufs = [{1: _Buffer(budget_pos), -1: _Buffer(budget_neg)} for _ in range(m)]
    w = np.ones(m)
    scores = []
    for t, i in enumerate(order):
        yt = 1 if y[i] > 0 else -1
        q = w / w.sum()
        fs = np.asarray([_f(kernels[l], bufs[l], X[i]) for l in range(m)])
        scores.append(float(np.sum(q * (np.sign(fs) if combine == "vote" else fs))))
        limit = w / w.max()
        new_w = w.copy()
        for l in range(m):
            if u[t][l][0] < limit[l]:
                _, pl = koil_round(
                    kernels[l], bufs[l], X[i], yt, u[t][l][1:], eta=eta, C=C, k=k, policy=policy, loss=loss, decay=decay
                )
                new_w[l] = w[l] * math.exp(-eta * (C if penalized_weights else 1.0) * pl)
        w = new_w / new_w.max()
    return {
        "scores": np.asarray(scores),
        "w": w,
        "bufs": bufs,
        "alpha": [(np.asarray(b[1].a), np.asarray(b[-1].a)) for b in bufs],
    }


# --------------------------------------------------------------------------------------------------------------
# OAM and OPAUC
# --------------------------------------------------------------------------------------------------------------


def oam(X, y, order, *, C, budget_pos, budget_neg, u):
    """OAM_seq (Zhao et al. 2011) with reservoir buffers: ``scores`` and final ``w``, buffers."""
    X = np.asarray(X, np.float64)
    w = np.zeros(X.shape[1])
    bufs = {1: _Buffer(budget_pos), -1: _Buffer(budget_neg)}
    scores = []
    for t, i in enumerate(order):
        x, yt = X[i], (1 if y[i] > 0 else -1)
        scores.append(float(w @ x))
        own, opp = bufs[yt], bufs[-yt]
        own.seen += 1
        c_t = C * max(1.0, opp.seen / opp.cap)
        for xj in opp.x:
            diff = x - xj
            ell = max(0.0, 1.0 - yt * float(w @ diff))
            sq = float(diff @ diff)
            if sq > 0:
                w = w + min(c_t / 2.0, ell / sq) * yt * diff
        if len(own.x) < own.cap:
            own.x.append(x.copy())
        elif u[t][0] * own.seen < own.cap:
            own.x[min(int(np.floor(u[t][1] * own.cap)), own.cap - 1)] = x.copy()
    return {"scores": np.asarray(scores), "w": w, "pos_x": np.asarray(bufs[1].x), "neg_x": np.asarray(bufs[-1].x)}


def opauc(X, y, order, *, eta, lam):
    """OPAUC (Gao et al. 2013), exact running means and covariances: ``scores`` and final ``w``."""
    X = np.asarray(X, np.float64)
    d = X.shape[1]
    w = np.zeros(d)
    rows = {1: [], -1: []}
    scores = []
    for i in order:
        x, yt = X[i], (1 if y[i] > 0 else -1)
        scores.append(float(w @ x))
        rows[yt].append(x)
        other = rows[-yt]
        if other:
            O = np.asarray(other)
            c = O.mean(axis=0)
            G = (O - c).T @ (O - c) / len(O)  # biased covariance, from the rows themselves
            diff = x - c
            w = w - eta * (lam * w - yt * diff + diff * (diff @ w) + G @ w)
    return {"scores": np.asarray(scores), "w": w}


# --------------------------------------------------------------------------------------------------------------
# kernel learners on a budget
# --------------------------------------------------------------------------------------------------------------


def _fk(kernel, xs, alphas, z) -> float:
    return float(np.dot(alphas, kernel(np.asarray(xs), z))) if xs else 0.0


def norma(X, y, order, *, eta, lam, nu, kernel: Kernel, budget):
    X = np.asarray(X, np.float64)
    xs, al, head, rho = [], [], 0, 0.0
    scores = []
    for i in order:
        x, yt = X[i], (1 if y[i] > 0 else -1)
        f = _fk(kernel, xs, al, x)
        scores.append(f)
        err = yt * f < rho
        al = [(1.0 - eta * lam) * a for a in al]
        if err:
            if len(xs) < budget:
                xs.append(x.copy())
                al.append(eta * yt)
            else:
                xs[head], al[head] = x.copy(), eta * yt
                head = (head + 1) % budget
        rho = max(0.0, rho + eta * (nu - (1.0 if err else 0.0)))
    return {"scores": np.asarray(scores), "x": np.asarray(xs), "alpha": np.asarray(al), "rho": rho}


def rbp(X, y, order, *, kernel: Kernel, budget, u):
    X = np.asarray(X, np.float64)
    xs, al, scores = [], [], []
    for t, i in enumerate(order):
        x, yt = X[i], (1 if y[i] > 0 else -1)
        f = _fk(kernel, xs, al, x)
        scores.append(f)
        if yt * f <= 0:
            if len(xs) < budget:
                xs.append(x.copy())
                al.append(float(yt))
            else:
                r = min(int(np.floor(u[t][0] * budget)), budget - 1)
                xs[r], al[r] = x.copy(), float(yt)
    return {"scores": np.asarray(scores), "x": np.asarray(xs), "alpha": np.asarray(al)}


def forgetron(X, y, order, *, kernel: Kernel, budget):
    """Self-tuned Forgetron (Dekel et al. 2008, Fig. 2); φ by bisection-free search of the largest feasible φ."""
    X = np.asarray(X, np.float64)
    xs, al, head, Q, M = [], [], 0, 0.0, 0
    scores = []
    for i in order:
        x, yt = X[i], (1 if y[i] > 0 else -1)
        f = _fk(kernel, xs, al, x)
        scores.append(f)
        if yt * f > 0:
            continue
        M += 1
        if len(xs) < budget:
            xs.append(x.copy())
            al.append(float(yt))
            continue
        r = head
        x_r, a_r = xs[r], al[r]
        y_r, s_r = np.sign(a_r), abs(a_r)
        mu = y_r * (_fk(kernel, xs, al, x_r) + yt * float(kernel(x[None, :], x_r)[0]))
        psi = lambda phi, s_r=s_r, mu=mu: (phi * s_r) ** 2 + 2 * phi * s_r - 2 * (phi * s_r) * (phi * mu)
        limit = 15.0 / 32.0 * M - Q
        if psi(1.0) <= limit:
            phi = 1.0
        else:  # largest φ in (0, 1] with ψ(φ) ≤ limit: smallest positive root
            a, b = s_r * s_r - 2 * s_r * mu, 2 * s_r
            roots = np.roots([a, b, -limit]) if a != 0 else np.array([limit / b])
            roots = np.real(roots[np.isreal(roots)])
            phi = float(min(r_ for r_ in roots if r_ > 0))
        Q += psi(phi)
        al = [phi * a for a in al]
        xs[r], al[r] = x.copy(), phi * yt
        head = (head + 1) % budget
    return {"scores": np.asarray(scores), "x": np.asarray(xs), "alpha": np.asarray(al), "Q": Q, "M": M}


def projectron(X, y, order, *, eta, kernel: Kernel, budget, plus=False):
    """Projectron / Projectron++ (Orabona et al. 2009; squared projection error δ as in DOGMA); ``K⁻¹`` by
    direct inversion of the Gram matrix at every round (independent of jcsol's rank-one updates)."""
    X = np.asarray(X, np.float64)
    xs, al, scores = [], [], []
    for i in order:
        x, yt = X[i], (1 if y[i] > 0 else -1)
        f = _fk(kernel, xs, al, x)
        scores.append(f)
        kxx = float(kernel(x[None, :], x)[0])
        if xs:
            kt = kernel(np.asarray(xs), x)
            G = np.stack([kernel(np.asarray(xs), z) for z in xs])
            d = np.linalg.solve(G, kt)
            delta = max(kxx - float(kt @ d), 0.0)
        else:
            d, delta = np.zeros(0), kxx
        m = yt * f
        if m <= 0:
            if delta > eta and len(xs) < budget:
                xs.append(x.copy())
                al.append(float(yt))
            else:
                al = list(np.asarray(al) + yt * d)
        elif plus and m < 1:
            ell = 1.0 - m
            norm = max(kxx - delta, 0.0)
            gap = ell - delta / eta
            if gap > 0 and norm > 0:
                tau = min(ell / norm, 1.0, 2.0 * gap / norm)
                al = list(np.asarray(al) + tau * yt * d)
    return {"scores": np.asarray(scores), "x": np.asarray(xs), "alpha": np.asarray(al)}
