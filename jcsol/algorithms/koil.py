"""KOIL: kernelized online imbalanced learning with fixed budgets, and KOIL with multiple kernels
(Hu, Yang, King, Lyu, So, AAAI 2015; and the KOIL thesis: J. Hu, *Kernelized Online Imbalanced Learning*,
thesis, The Chinese University of Hong Kong, chapters 3 and 4)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from ..base import (
    Example,
    Learner,
    StepInfo,
    choice,
    count_one,
    hyperparameter,
    pytree_dataclass,
)
from .kernels import KINDS, kernel_matrix, kernel_norm_scales, mkl_pool, pool_kernel, pool_members
from .keys import draw, key_data, uniforms

POLICIES = ("RS++", "FIFO++", "RS", "FIFO")
PAIR_LOSSES = ("hinge", "smooth")


# ----------------------------------------------------------------------------------------------------------
# One KOIL round for one kernel (shared by KOIL and KOIL-MKL)
# ----------------------------------------------------------------------------------------------------------


class Buffers(NamedTuple):
    """The two support-vector buffers of one kernel classifier, in one array of slots.

    Slots ``[0, N⁺)`` hold the positive buffer, ``[N⁺, N⁺ + N⁻)`` the negative one; a buffer fills its slots in
    order and, once full, replaces in place, so slot ``j`` of a buffer is occupied iff ``j < size``.
    """

    sv: jax.Array  # (N, d) support vectors (zeros in empty slots)
    alpha: jax.Array  # (N,) weights α_i (0 in empty slots)
    fsv: jax.Array  # (N,) f(x_i) of every support vector under the current model (0 in empty slots)
    gram: jax.Array  # (N, N) k(sv_i, sv_j) between occupied slots (entries of an empty slot are never used)
    size: jax.Array  # (2,) int32 occupied slots of the positive / negative buffer
    seen: jax.Array  # (2,) int32 examples of each class received (N_t of the reservoir probability N/N_t)
    head: jax.Array  # (2,) int32 FIFO: slot (within its buffer) of the oldest support vector


def empty_buffers(n_pos: int, n_neg: int, d: int, dtype) -> Buffers:
    n = n_pos + n_neg
    zeros2 = jnp.zeros(2, jnp.int32)
    return Buffers(
        sv=jnp.zeros((n, d), dtype),
        alpha=jnp.zeros(n, dtype),
        fsv=jnp.zeros(n, dtype),
        gram=jnp.zeros((n, n), dtype),
        size=zeros2,
        seen=zeros2,
        head=zeros2,
    )


class RoundOut(NamedTuple):
    buffers: Buffers
    score: jax.Array  # f_t(x_t), before the update
    loss: jax.Array  # Σ over the selected pairs of ℓ_h (hinge) or ℓ_h² (smooth), without C


def koil_round(
    kern: Callable[[jax.Array, jax.Array], jax.Array],
    buf: Buffers,
    x: jax.Array,
    y: jax.Array,
    u: jax.Array,
    *,
    eta,
    C,
    n_pos: int,
    n_neg: int,
    k: int,
    policy: str,
    smooth: bool,
    decay: bool,
    active: jax.Array | bool = True,
) -> RoundOut:
    """One round of KOIL (the KOIL thesis, Alg. 1–3) for the kernel ``kern(A, B) -> K``; ``u`` holds two uniforms.

    ``decay=False`` gives the un-decayed update of KOIL-MKL (the thesis's Eq. 4.2/4.3). ``active=False`` scores ``x_t``
    and leaves the buffers as they were (a KOIL-MKL classifier not drawn for update), without copying them.
    """
    dtype = x.dtype
    n = n_pos + n_neg
    slot = jnp.arange(n)
    slot_neg = slot >= n_pos
    rel = slot - jnp.where(slot_neg, n_pos, 0)
    occ = rel < buf.size[slot_neg.astype(jnp.int32)]
    positive = y > 0
    b = jnp.where(positive, 0, 1)
    own = slot_neg == ~positive
    size_own, size_opp = buf.size[b], buf.size[1 - b]

    # score and valid set V_t: opposite support vectors with 1 > y (f(x_t) − f(x_i)), cut to the k most similar
    kt = kern(buf.sv, x[None, :])[:, 0]
    f = jnp.sum(jnp.where(occ, kt, 0.0) * buf.alpha)
    margin = 1.0 - y * (f - buf.fsv)  # ℓ_h(f, z_t, z_i) where positive
    valid = occ & ~own & (margin > 0)
    n_valid = jnp.sum(valid)
    top, idx = jax.lax.top_k(jnp.where(valid, kt, -jnp.inf), k)
    chosen = top > -jnp.inf
    pair = jnp.where(chosen, margin[idx], 0.0)
    per_pair = jnp.where(chosen, 2.0 * pair if smooth else 1.0, 0.0).astype(dtype)
    loss = jnp.sum(pair * pair) if smooth else jnp.sum(pair)

    # weights (Eq. 3.10 / 3.18): α_t for x_t, −ηC y (·2ℓ_h) for each chosen pair, (1 − η) decay for all others
    step = eta * C * y
    bootstrap = (size_opp == 0) | ((size_own == 0) & (n_valid == 0))
    alpha_t = jnp.where(bootstrap, step, step * jnp.sum(per_pair)).astype(dtype)
    admit = bootstrap | (n_valid > 0)  # α_t ≠ 0: x_t becomes a support vector
    keep = (1.0 - eta) if decay else 1.0
    delta = (-step * per_pair).astype(dtype)
    alpha = (keep * buf.alpha).at[idx].add(delta)

    # buffer of y_t (Alg. 3): append, or RS (probability N/N_t, uniform slot) / FIFO (oldest slot) replacement
    cap = jnp.where(positive, n_pos, n_neg)
    offset = jnp.where(positive, 0, n_pos)
    seen_own = count_one(buf.seen, b)[b]
    not_full = size_own < cap
    if policy.startswith("RS"):
        replace = u[0] * seen_own.astype(dtype) < cap.astype(dtype)
        r_rel = jnp.minimum(jnp.floor(u[1] * cap.astype(dtype)).astype(jnp.int32), cap - 1)
    else:
        replace = jnp.bool_(True)
        r_rel = buf.head[b]
    write = admit & (not_full | replace)
    removed = admit & ~not_full  # something leaves: z_r, or x_t itself
    removed_old = removed & replace
    target = offset + jnp.where(not_full, size_own, r_rel)
    at_target = slot == target
    a_rem = jnp.where(removed_old, alpha[target], alpha_t)
    k_old = buf.gram[target]  # k(x_r, ·) over the old slots, if replaced
    k_rem = jnp.where(removed_old, k_old, kt)  # k(x_r, ·); x_r is x_t unless replaced

    store = write & active
    sv = buf.sv.at[target].set(jnp.where(store, x, buf.sv[target]))
    alpha = alpha.at[target].set(jnp.where(write, alpha_t, alpha[target]))
    compensate = policy.endswith("++") & removed
    # compensation: α_r goes to the support vector of the (updated) buffer most similar to x_r (Alg. 3, l. 14–15)
    sims = jnp.where(write & at_target, kt, k_rem)  # k(x_r, ·) over the buffer after replacement
    c = jnp.argmax(jnp.where(own, sims, -jnp.inf))
    gain = jnp.where(compensate, a_rem, 0.0).astype(dtype)
    alpha = alpha.at[c].add(gain)
    kxx = kern(x[None, :], x[None, :])[0, 0]
    kt_new = jnp.where(at_target, kxx, kt)  # k(x_t, ·) over the new slots

    # the Gram matrix of the new slots: x_t's row and column where it was written. Its other rows are read
    # after this write (reading them before would make XLA copy the whole matrix every round); they differ
    # from the old slots' only in column `target`, whose f(x_i) is redone below.
    gram_row = jnp.where(store, kt_new, k_old).astype(dtype)
    gram = buf.gram.at[target].set(gram_row).at[:, target].set(gram_row)
    fsv = keep * buf.fsv + delta @ gram[idx]  # the chosen pairs' weight changes
    fsv = (
        fsv + jnp.where(write, alpha_t, 0.0) * kt - jnp.where(removed_old, a_rem, 0.0) * k_rem + gain * gram[c]
    )  # k(x_c, ·); row `target` is redone below

    occ_new = occ | (write & at_target)
    f_new = jnp.sum(jnp.where(occ_new, kt_new, 0.0) * alpha)
    fsv = jnp.where(occ_new, jnp.where(write & at_target, f_new, fsv), 0.0)
    size = buf.size.at[b].add((store & not_full).astype(jnp.int32))
    head = buf.head.at[b].set(jnp.where(store & ~not_full, (buf.head[b] + 1) % cap, buf.head[b]))
    seen = count_one(buf.seen, b, active)
    new = Buffers(
        sv=sv,
        alpha=jnp.where(active, alpha, buf.alpha).astype(dtype),
        fsv=jnp.where(active, fsv, buf.fsv).astype(dtype),
        gram=gram,
        size=size,
        seen=seen,
        head=head,
    )
    return RoundOut(new, f, loss.astype(dtype))


def expansion(
    kern: Callable[[jax.Array, jax.Array], jax.Array], buf: Buffers, X: jax.Array, n_pos: int, batch: int = 256
) -> jax.Array:
    """``f(X) = Σ_i α_i k(x_i, X)`` over the occupied slots, rows of ``X`` taken ``batch`` at a time."""
    n = buf.alpha.shape[0]
    slot = jnp.arange(n)
    slot_neg = slot >= n_pos
    occ = (slot - jnp.where(slot_neg, n_pos, 0)) < buf.size[slot_neg.astype(jnp.int32)]
    alpha = jnp.where(occ, buf.alpha, 0.0)
    X = jnp.asarray(X, buf.sv.dtype)
    return jax.lax.map(lambda row: kern(row[None, :], buf.sv)[0] @ alpha, X, batch_size=min(batch, max(1, len(X))))


def _check_budgets(obj, n_pos: int, n_neg: int, k: int) -> None:
    name = type(obj).__name__
    for field, value in (("budget_pos", n_pos), ("budget_neg", n_neg), ("k", k)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name}: {field} must be an integer >= 1, got {value!r}")
    if k > n_pos + n_neg:
        raise ValueError(f"{name}: k={k} exceeds the number of support-vector slots {n_pos + n_neg}")


# ----------------------------------------------------------------------------------------------------------
# KOIL
# ----------------------------------------------------------------------------------------------------------


class KOILState(NamedTuple):
    sv: jax.Array  # (N⁺ + N⁻, d) support vectors; positive slots first
    alpha: jax.Array  # (N⁺ + N⁻,) weights
    fsv: jax.Array  # (N⁺ + N⁻,) f at each support vector
    gram: jax.Array  # (N⁺ + N⁻, N⁺ + N⁻) kernel values between the slots' vectors
    size: jax.Array  # (2,) int32 occupied slots (positive, negative)
    seen: jax.Array  # (2,) int32 examples received per class
    head: jax.Array  # (2,) int32 FIFO heads
    key: jax.Array  # (2,) uint32 PRNG key data (reservoir sampling)


@pytree_dataclass
class KOIL(Learner[KOILState]):
    r"""Kernelized online imbalanced learning with fixed budgets (AUC maximisation with two SV buffers).

    Decision function ``f(x) = Σ_{i∈I⁺} α_i k(x_i, x) + Σ_{j∈I⁻} α_j k(x_j, x)`` over a positive and a negative
    buffer of budgets ``N⁺``, ``N⁻``. Round ``t`` with ``z_t = (x_t, y_t)``:

    1. score ``f_t(x_t)``; the valid set ``V_t`` is the opposite buffer's support vectors with
       ``1 > y_t (f_t(x_t) − f_t(x_i))``, cut to the ``k`` with the largest ``k(x_t, x_i)`` (ties: lower slot).
    2. weights, non-smooth pairwise hinge (the thesis's Eq. 3.10):

       .. math::

           \alpha_t = \eta C y_t |V_t|, \qquad
           \alpha_i \leftarrow (1-\eta)\alpha_i - \eta C y_t \ (i \in V_t), \qquad
           \alpha_i \leftarrow (1-\eta)\alpha_i \ \text{(all other support vectors)};

       smooth (squared) pairwise hinge (Eq. 3.18): ``2ηC y_t ℓ_h(f_t, z_t, z_i)`` in place of ``ηC y_t`` for each
       pair, ``ℓ_h = 1 − y_t (f_t(x_t) − f_t(x_i))``, so ``α_t = 2ηC y_t Σ_{i∈V_t} ℓ_h``.
    3. buffer of ``y_t`` (Alg. 3): not full → append ``(x_t, α_t)``. Full → ``RS++``: with probability
       ``N/N_t`` (``N_t`` the examples of that class received so far) a uniformly chosen ``z_r`` is replaced by
       ``z_t``, otherwise ``z_r`` is ``z_t`` itself; then ``α_r`` is added to the weight of the support vector
       of the buffer most similar to ``x_r`` (largest ``k(x_r, ·)``, first on ties). ``FIFO++``: ``z_r`` is the
       oldest. ``RS`` and ``FIFO`` drop ``α_r`` without compensation.

    Choices where the thesis is silent, following the authors' C++/MATLAB code (``KOIL.cpp``, ``nUpdateKernel4.m``):

    * bootstrap: while the opposite buffer is empty, or the own buffer is empty and ``V_t`` is empty,
      ``α_t = ηC y_t`` (Eq. 3.10 alone would give ``α_t = 0`` forever);
    * an example with ``α_t = 0`` (empty ``V_t`` after the bootstrap) does not enter the buffer (support vectors
      have non-zero weights, the thesis's §2), but it counts in ``N_t``;
    * no bias: the code's threshold ``b`` only shifts predictions (AUC and ``V_t`` do not depend on it), and the
      online prediction is ``f_t(x_t) >= 0`` as everywhere in jcsol.

    Implementation: static shapes — the two buffers are one array of ``N⁺ + N⁻`` slots, empty slots masked. The
    values ``f(x_i)`` at the support vectors are kept in the state and updated with the kernel rows of the
    weights that change (the ``k`` chosen pairs, ``x_r``, the compensated ``x_c``), read from the buffer's Gram
    matrix, also kept in the state: a round evaluates the kernel only between ``x_t`` and the buffer, and writes
    that row and column into the Gram matrix where ``x_t`` enters (``O((N⁺+N⁻)(k + d))`` per round against
    ``O((N⁺+N⁻)(k+3)d)`` without the matrix; ``(N⁺+N⁻)²`` more numbers of state per run). The cached kernel
    values equal a fresh evaluation up to float rounding (``k(a, b)`` and ``k(b, a)`` are computed alike; XLA
    may round a reduction of another shape differently in the last bit). Reservoir sampling draws two uniforms
    per round from a PRNG key carried in the state (see :func:`jcsol.algorithms.keys.uniforms`), so a run is
    reproducible from ``init``'s key and runs vmap over keys.

    Args:
        eta: learning rate η (0.01 in the thesis).
        C: penalty C (grid ``2^[-10:10]`` in the thesis).
        sigma: Gaussian kernel width σ (grid ``2^[-10:10]``).
        coef0: offset ``c`` of the polynomial kernel ``(x·x' + c)^p``.
        budget_pos, budget_neg: budgets ``N⁺``, ``N⁻`` (100 per class in the thesis on real data, 50 on synthetic).
        k: number of nearest opposite support vectors (10% of the budget in the thesis).
        policy: ``"RS++"``, ``"FIFO++"``, ``"RS"`` or ``"FIFO"``.
        loss: ``"hinge"`` (Eq. 3.10) or ``"smooth"`` (Eq. 3.18).
        kernel: ``"gaussian"``, ``"polynomial"`` or ``"linear"``; ``degree`` for the polynomial kernel.

    Reference: J. Hu, H. Yang, I. King, M. R. Lyu, A. M.-C. So, *Kernelized Online Imbalanced Learning with
    Fixed Budgets*, AAAI 2015; J. Hu, *Kernelized Online Imbalanced Learning*, thesis, The Chinese
    University of Hong Kong, Alg. 1–3.

    Example:
        On the German credit data that ships with jcsol: learn from 500 rows, measure the AUC of the final model on the
        other 500:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.KOIL(C=1.0, sigma=1.0, budget_pos=20, budget_neg=20, k=2), X[:500], y[:500], perms=1)
        >>> held_out = res.score(X[500:])[0]  # the final model's scores of rows it never saw
        >>> print(f"{res.learner.name}: AUC {float(jcsol.metrics.auc(held_out, y[500:])):.3f}")
        KOIL-RS++: AUC 0.636
    """

    step_size = "eta"

    eta: ArrayLike = hyperparameter(1e-2)
    C: ArrayLike = hyperparameter(1.0)
    sigma: ArrayLike = hyperparameter(1.0)
    coef0: ArrayLike = hyperparameter(0.0, positive=False)
    budget_pos: int = choice(100)
    budget_neg: int = choice(100)
    k: int = choice(10)
    policy: str = choice("RS++", *POLICIES)
    loss: str = choice("hinge", *PAIR_LOSSES)
    kernel: str = choice("gaussian", *KINDS)
    degree: int = choice(2)

    weights_field = "alpha"
    draw_shape = (2,)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_budgets(self, self.budget_pos, self.budget_neg, self.k)
        if not isinstance(self.degree, (int, np.integer)) or self.degree < 1:
            raise ValueError(f"KOIL: degree must be an integer >= 1, got {self.degree!r}")

    @property
    def name(self) -> str:
        return f"KOIL-{self.policy}" + ("-smooth" if self.loss == "smooth" else "")

    def _kern(self, A, B):
        return kernel_matrix(self.kernel, A, B, sigma=self.sigma, degree=self.degree, coef0=self.coef0)

    def row_norm_scales(self, dtype: Any) -> tuple[float, float]:
        return kernel_norm_scales(self.kernel, self.sigma, self.degree, dtype)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> KOILState:
        return KOILState(*empty_buffers(self.budget_pos, self.budget_neg, d, dtype), key=key_data(key))

    def step(self, state: KOILState, ex: Example) -> tuple[KOILState, StepInfo]:
        data, u = draw(state.key, self.draw_shape, ex.x.dtype)
        out = koil_round(
            self._kern,
            Buffers(*state[:7]),
            ex.x,
            ex.y,
            u,
            eta=self.eta,
            C=self.C,
            n_pos=self.budget_pos,
            n_neg=self.budget_neg,
            k=self.k,
            policy=self.policy,
            smooth=self.loss == "smooth",
            decay=True,
        )
        return KOILState(*out.buffers, key=data), StepInfo(score=out.score, loss=jnp.asarray(self.C) * out.loss)

    def score(self, state: KOILState, X: jax.Array) -> jax.Array:
        """``f(X)``: the support-vector expansion of the final model on held-out rows ``X``."""
        return expansion(self._kern, Buffers(*state[:7]), X, self.budget_pos)

    def too_large_hint(self) -> str:
        return "use smaller budgets or fewer runs"


# ----------------------------------------------------------------------------------------------------------
# KOIL with multiple kernels
# ----------------------------------------------------------------------------------------------------------


class KOILMKLState(NamedTuple):
    sv: jax.Array  # (m, N⁺ + N⁻, d) support vectors of each kernel classifier
    alpha: jax.Array  # (m, N⁺ + N⁻)
    fsv: jax.Array  # (m, N⁺ + N⁻)
    gram: jax.Array  # (m, N⁺ + N⁻, N⁺ + N⁻) each classifier's kernel values between its slots' vectors
    size: jax.Array  # (m, 2) int32
    seen: jax.Array  # (m, 2) int32 examples received by each classifier (only rounds it was updated)
    head: jax.Array  # (m, 2) int32
    w: jax.Array  # (m,) kernel weights, divided by their maximum
    key: jax.Array  # (2,) uint32 PRNG key data


@pytree_dataclass
class KOILMKL(Learner[KOILMKLState]):
    r"""KOIL with multiple kernel learning (the KOIL thesis, ch. 4, Alg. 4): a pool of kernel classifiers ``f_l``.

    Each round, classifier ``l`` is updated with probability ``w_l / max_j w_j`` (Bernoulli; the one of
    largest weight always is). An updated classifier takes the *un-decayed* step (Eq. 4.2 / 4.3: Eq. 3.10 /
    3.18 without the factor ``1 − η``), its buffer is updated by the policy (its own ``N_t`` counts the rounds
    in which it was updated, Alg. 4 l. 8/12), and its weight becomes

    .. math::

        w_l \leftarrow w_l \exp(-\eta L_t(f_l)), \qquad L_t(f_l) = C \sum_{i \in V_t} \ell(f_l, z_t, z_i)

    with the loss of Eq. 3.4 / 3.14 without its regulariser, over the (at most ``k``) chosen pairs, evaluated
    with ``f_l`` before its update (``penalized_weights=False``: ``L_t`` without the factor ``C``, as the
    authors' public C++ code weighs its kernels). Prediction (``combine="vote"``, Alg. 4 as printed): ``F(x) = Σ_l q_l
    sign(f_l(x))``, ``q = w / ‖w‖₁``; ``combine="sum"`` gives ``F(x) = Σ_l q_l f_l(x)``, the same classifiers
    and weights (training does not depend on it) with a score that ranks instead of voting. The online score and
    :meth:`score` both return ``F``. The vote takes few distinct values, and its ties cost AUC; the sum ranks
    finely but follows the magnitudes of the ``f_l``, which the un-decayed update lets grow (a large C, FIFO++'s
    compensation on a long stream). ``benchmarks/koil_mkl.py`` measures both against the thesis's Table 4.1.

    The weights are kept divided by their maximum after each round: ``w_l / max_j w_j`` and ``q`` do not change,
    and no weight underflows to 0 for all kernels at once.

    Each kernel classifier is the :class:`KOIL` round of :func:`koil_round` (vmapped over the pool, whose members
    are described by numbers, see :func:`jcsol.algorithms.kernels.pool_kernel`). KOIL-MKL is not registered in
    ``jcsol.VARIANTS``: without the ``1 − η`` decay its cached ``f(x_i)`` accumulate float32 rounding, so a
    vmapped grid and the same runs one at a time (same decisions) drift apart by ~1e-5 relative, above the
    registry contract's tolerance (``tests/algorithms/test_koil.py::test_mkl_grid_equals_single_runs`` checks 1e-4).

    Args:
        eta: learning rate η of the kernel classifiers and of the weights (0.01 in the thesis, §4.4).
        C: penalty C.
        pool: static tuple of ``(kind, parameter)``: ``("gaussian", σ)`` or ``("polynomial", degree)``; the
            default is the thesis's (§4.4): 3 polynomial (``(xᵀx')^p``, ``p = 1, 2, 3``) + 13 Gaussian
            (``σ = 2^-6…2^6``).
        budget_pos, budget_neg, k, policy, loss: as in :class:`KOIL` (per kernel classifier).
        combine: ``"vote"`` (``Σ_l q_l sign(f_l)``) or ``"sum"`` (``Σ_l q_l f_l``).
        decay: ``False`` (Alg. 4 as printed: Eq. 4.2 / 4.3, the step without the factor ``1 − η``) or ``True``
            (the single-kernel KOIL's decayed step, Eq. 3.10 / 3.18, in every kernel classifier): a variant to
            compare with, not the thesis's KOIL-MKL.
        penalized_weights: ``True`` (Alg. 4 as printed: the weights' loss ``L_t`` carries ``C``) or ``False``
            (``w_l ← w_l exp(−η Σ ℓ)``, the kernel weights' update of the authors' C++ code): a variant to
            compare with.

    Reference: J. Hu, *Kernelized Online Imbalanced Learning*, thesis, The Chinese University of Hong Kong,
    ch. 4, Alg. 4; after the online MKL framework of Jin, Hoi, Yang, *Online multiple kernel learning*, ALT 2010.

    Example:
        On the German credit data that ships with jcsol: learn from 500 rows, measure the AUC of the final model on the
        other 500:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.KOILMKL(C=1.0, budget_pos=20, budget_neg=20, k=2), X[:500], y[:500], perms=1)
        >>> held_out = res.score(X[500:])[0]  # the final model's scores of rows it never saw
        >>> print(f"{res.learner.name}: AUC {float(jcsol.metrics.auc(held_out, y[500:])):.3f}")
        KOIL-MKL-RS++: AUC 0.661
    """

    step_size = "eta"

    eta: ArrayLike = hyperparameter(1e-2)
    C: ArrayLike = hyperparameter(1.0)
    pool: tuple = choice(mkl_pool())
    budget_pos: int = choice(100)
    budget_neg: int = choice(100)
    k: int = choice(10)
    policy: str = choice("RS++", *POLICIES)
    loss: str = choice("hinge", *PAIR_LOSSES)
    combine: str = choice("vote", "vote", "sum")
    decay: bool = choice(False, False, True)
    penalized_weights: bool = choice(True, True, False)

    weights_field = "alpha"

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_budgets(self, self.budget_pos, self.budget_neg, self.k)
        if not isinstance(self.pool, tuple) or not self.pool:
            raise ValueError("KOILMKL: pool must be a non-empty tuple of (kind, parameter)")
        pool_members(self.pool, jnp.float32)  # validates

    @property
    def name(self) -> str:
        return (
            f"KOIL-MKL-{self.policy}"
            + ("-smooth" if self.loss == "smooth" else "")
            + ("-sum" if self.combine == "sum" else "")
            + ("-decayed" if self.decay else "")
            + ("" if self.penalized_weights else "-plain-weights")
        )

    @property
    def draw_shape(self) -> tuple[int, int]:
        return (len(self.pool), 3)

    def row_norm_scales(self, dtype: Any) -> tuple[float, float]:
        """The range of all the pool's kernels together (:func:`kernel_norm_scales` of each), as a grid of widths
        takes it: the kernels' weights move to those that suit the rows."""
        ranges = [
            kernel_norm_scales("gaussian", value, 1, dtype)
            if kind == "gaussian"
            else kernel_norm_scales("polynomial", 1.0, int(value), dtype)
            for kind, value in self.pool
        ]
        return min(lo for lo, _ in ranges), max(hi for _, hi in ranges)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> KOILMKLState:
        m = len(self.pool)
        one = empty_buffers(self.budget_pos, self.budget_neg, d, dtype)
        stacked = jax.tree.map(lambda a: jnp.broadcast_to(a, (m,) + a.shape), one)
        return KOILMKLState(**stacked._asdict(), w=jnp.ones(m, dtype), key=key_data(key))

    def kernel_scores(self, state: KOILMKLState, X: jax.Array) -> jax.Array:
        """Each kernel classifier's ``f_l(X)``, shape ``(m, n)``: what ``score`` combines with ``q = w / Σ w``."""
        members = pool_members(self.pool, state.sv.dtype)
        fn = lambda member, buf: expansion(lambda A, B: pool_kernel(member, A, B), buf, X, self.budget_pos)
        return jax.vmap(fn)(members, Buffers(*state[:7]))  # (m, n)

    def step(self, state: KOILMKLState, ex: Example) -> tuple[KOILMKLState, StepInfo]:
        data, u = draw(state.key, self.draw_shape, ex.x.dtype)
        buffers, w, info = self.update(state, ex, u)
        return KOILMKLState(**buffers._asdict(), w=w, key=data), info

    def update(self, state: KOILMKLState, ex: Example, u: jax.Array) -> tuple[Buffers, jax.Array, StepInfo]:
        """One round given its uniform numbers ``u`` (shape ``draw_shape``): per kernel, the draw of the
        Bernoulli choice to update it (``u[l, 0] < w_l / max w``) and the two of its buffer policy. Returns the
        kernels' buffers, their weights ``w`` and the round's info; ``step`` draws ``u`` from the state's key."""
        dtype = ex.x.dtype
        members = pool_members(self.pool, dtype)

        def one(member, buf, u_rs, active):
            return koil_round(
                lambda A, B: pool_kernel(member, A, B),
                buf,
                ex.x,
                ex.y,
                u_rs,
                eta=self.eta,
                C=self.C,
                n_pos=self.budget_pos,
                n_neg=self.budget_neg,
                k=self.k,
                policy=self.policy,
                smooth=self.loss == "smooth",
                decay=self.decay,
                active=active,
            )

        w = state.w
        chosen = u[:, 0] < w / jnp.max(w)
        out = jax.vmap(one)(members, Buffers(*state[:7]), u[:, 1:], chosen)
        buffers = out.buffers
        q = w / jnp.sum(w)
        score = jnp.sum(q * self._combined(out.score))
        weights_loss = self.C * out.loss if self.penalized_weights else out.loss
        w = jnp.where(chosen, w * jnp.exp(-jnp.asarray(self.eta) * weights_loss), w)
        w = (w / jnp.max(w)).astype(dtype)
        loss = jnp.sum(jnp.where(chosen, q * self.C * out.loss, 0.0))
        return buffers, w, StepInfo(score=score, loss=loss)

    def _combined(self, f: jax.Array) -> jax.Array:
        return jnp.sign(f) if self.combine == "vote" else f

    def score(self, state: KOILMKLState, X: jax.Array) -> jax.Array:
        """``F(X)`` of the final model on held-out rows ``X``: ``Σ_l q_l sign(f_l(X))`` or ``Σ_l q_l f_l(X)``."""
        q = state.w / jnp.sum(state.w)
        return q @ self._combined(self.kernel_scores(state, X))

    def too_large_hint(self) -> str:
        return "use smaller budgets, a smaller pool or fewer runs"


__all__ = [
    "KOIL",
    "KOILState",
    "KOILMKL",
    "KOILMKLState",
    "POLICIES",
    "PAIR_LOSSES",
    "uniforms",
    "draw",
    "key_data",
    "koil_round",
    "Buffers",
    "expansion",
]
