"""SACOG: sketched adaptive-regularized cost-sensitive online gradient descent, with Oja's sketch (dense,
Alg. 2–3 of Zhao, Zhang, Wu, Hoi, Tan, Huang, *Adaptive Cost-Sensitive Online Classification*, IEEE TKDE 2019)
and its sparse version (that paper's Alg. 4–6), after Luo, Agarwal, Cesa-Bianchi, Langford, *Efficient
Second Order Online Learning by Sketching*, NIPS 2016 (Oja's sketch and its sparse form).

Both learners keep a rank-``m`` sketch of the to-sketch vectors ``x̂_t = x_t/√γ``: eigenvalue estimates ``Λ``
(``m``) and orthonormal directions ``V`` (``m × d``), and approximate ACOG's covariance by
``Σ_{t+1} = I − Sᵀ H S`` with ``S = (tΛ)^{1/2} V`` and ``H = (I + S Sᵀ)^{-1} = diag(1/(1 + tΛ_ii))``:

* :class:`SACOG` stores ``V`` and ``μ`` explicitly: O(m²d) per round (a QR of ``m`` vectors of size ``d``).
* :class:`SSACOG` stores ``V = F Z`` and ``μ = w + Zᵀ b`` so that every change of a ``d``-sized array is
  a rank-one update supported on the row's non-zeros: O(m³ + m·nnz(x)) per round, nothing of size ``d``
  touched but the row's entries. Both give the same predictions up to rounding.

Layout: the ``m × d`` matrices are stored transposed, as ``(d, m)`` arrays (``vt = Vᵀ``, ``zt = Zᵀ``), so
that the ``m`` entries of one coordinate are contiguous and a sparse row gathers/scatters ``nnz`` short rows.
:meth:`SACOG.sketch` and :meth:`SSACOG.sketch` return ``(V, Λ)`` of a state in the paper's orientation.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..base import Example, Learner, StepInfo, choice, covariance_row_scales, hyperparameter, pytree_dataclass
from ..linalg import SparseVector, Vector, add_scaled, densify, dot, one_matrix_at_a_time, squared_norm
from ..objective import LOSSES, cost_sensitive_loss

# ----------------------------------------------------------------------------------------------------------
# shared pieces
# ----------------------------------------------------------------------------------------------------------


def initial_directions(key: jax.Array, d: int, m: int, dtype: Any = jnp.float32) -> jax.Array:
    """``V_0ᵀ`` (``d × m``): the Gram–Schmidt orthonormalisation of a pseudo-random ``d × m`` matrix.

    The matrix's entries are uniform in ``[−½, ½)``, from an integer hash (MurmurHash3's 32-bit finaliser) of
    the entry's index and the bits of the run's ``key``: reproducible from the key, different for every run,
    and cheap to compile (``jax.random``'s threefry costs seconds of compilation on CPU, for every shape).
    Its columns are in general position, which is all Oja's iteration needs; orthonormalised with
    :func:`gram_schmidt` in ``dtype``, so the directions are orthonormal to the rounding of ``dtype`` (which
    :class:`SSACOG`, starting from ``F = K = I``, relies on). A random start (as Vowpal Wabbit's
    ``--OjaNewton`` default ``random_init``) rather than the first ``m`` coordinate axes: Oja's iteration
    cannot leave an initial subspace orthogonal to the data, and sparse rows often miss the first axes.
    """
    if not 1 <= m <= d:
        raise ValueError(f"the sketch size m must be in [1, d] = [1, {d}], got m={m}")
    return orthonormal_columns(hash_uniform(key, (d, m)).astype(dtype))


def _fmix32(h: jax.Array) -> jax.Array:
    h = (h ^ (h >> 16)) * jnp.uint32(0x85EBCA6B)
    h = (h ^ (h >> 13)) * jnp.uint32(0xC2B2AE35)
    return h ^ (h >> 16)


def hash_uniform(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """float32 numbers uniform in ``[−½, ½)`` (in 2⁻²⁴ steps), a hash of each entry's index and the key's bits."""
    words = jax.random.key_data(key).reshape(-1).astype(jnp.uint32)
    seed = jnp.uint32(0x9E3779B9)
    for word in range(words.shape[0]):
        seed = _fmix32(seed ^ words[word])
    index = jnp.arange(math.prod(shape), dtype=jnp.uint32)
    bits = _fmix32(_fmix32(index * jnp.uint32(0x9E3779B1) + seed) ^ seed)
    return ((bits >> 8).astype(jnp.float32) * (1.0 / (1 << 24)) - 0.5).reshape(shape)


@one_matrix_at_a_time
def _qr(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    return jnp.linalg.qr(a)


def gram_schmidt(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``a = Q R`` for ``a`` of shape ``n × k`` (``n ≥ k``): the Gram–Schmidt factorisation of the columns.

    Computed by Householder QR (LAPACK, backward stable: ``Q`` orthonormal to rounding whatever the
    conditioning of ``a``), with the signs fixed so that ``R`` has a non-negative diagonal — which makes the
    factorisation the unique one that Gram–Schmidt produces: column ``i`` of ``Q`` spans, with the columns
    before it, the first ``i`` columns of ``a`` (the order-dependent basis of the ACOG paper's Alg. 6).
    """
    q, r = _qr(a)
    sign = jnp.sign(jnp.diagonal(r, axis1=-2, axis2=-1))
    sign = jnp.where(sign == 0, 1, sign).astype(a.dtype)
    return q * sign[..., None, :], r * sign[..., :, None]


def orthonormal_columns(a: jax.Array) -> jax.Array:
    """The ``Q`` of :func:`gram_schmidt`: the Gram–Schmidt orthonormalisation of the columns of ``a``."""
    return gram_schmidt(a)[0]


def cholesky_of_identity_plus_rank_one(kappa: jax.Array, v: jax.Array) -> jax.Array:
    """The lower-triangular ``L`` with positive diagonal and ``L Lᵀ = I + κ v vᵀ`` (``κ ≥ 0``), in O(m²).

    The rank-one Cholesky update of ``I`` by ``√κ v`` (Givens form, as LINPACK's ``dchud``): no subtraction of
    large numbers, diagonal ≥ 1, so ``L`` is well conditioned whatever ``v``. Unrolled over the ``m`` columns.
    """
    m = v.shape[0]
    lower = jnp.eye(m, dtype=v.dtype)
    x = jnp.sqrt(kappa) * v
    for k in range(m):
        r = jnp.sqrt(1.0 + x[k] * x[k])  # L_kk is still 1 here: cos = r, sin = x_k (unnormalised)
        column = (lower[k + 1 :, k] + x[k] * x[k + 1 :]) / r
        lower = lower.at[k, k].set(r).at[k + 1 :, k].set(column)
        x = x.at[k + 1 :].set(r * x[k + 1 :] - x[k] * column)
    return lower


def forward_substitution(lower: jax.Array, b: jax.Array) -> jax.Array:
    """``L^{-1} B`` for a lower-triangular ``L`` (``m × m``) and ``B`` (``m × k``), unrolled over the rows."""
    out = jnp.zeros_like(b)
    for i in range(lower.shape[0]):
        out = out.at[i].set((b[i] - lower[i] @ out) / lower[i, i])  # rows ≥ i of out are still 0
    return out


def _check_options(learner) -> None:
    if not isinstance(learner.m, int) or isinstance(learner.m, bool) or learner.m < 1:
        raise ValueError(f"{type(learner).__name__}: the sketch size m must be an int >= 1, got {learner.m!r}")


# ----------------------------------------------------------------------------------------------------------
# SACOG (dense Oja sketch)
# ----------------------------------------------------------------------------------------------------------


class SACOGState(NamedTuple):
    mu: jax.Array  # (d,) mean: the linear predictor
    vt: jax.Array  # (d, m) Vᵀ: the sketch directions, orthonormal columns
    lam: jax.Array  # (m,) Λ: the eigenvalue estimates
    t: jax.Array  # () int32: rounds seen by the sketch
    grad: jax.Array  # (d, m) Oja's accumulated step of the current block (sketch_every > 1), else (0, m)


@pytree_dataclass
class SACOG(Learner[SACOGState]):
    r"""SACOG-I/II: ACOG with the covariance approximated by Oja's sketch of size ``m`` (the ACOG paper's Alg. 2–3).

    Round ``t`` (``μ_1 = 0``): score ``f_t = μ_t · x_t``; then, on **every** round and before the loss test,
    the sketch update of Alg. 3 with the to-sketch vector ``x̂_t = x_t/√γ`` and ``Γ_t = I/t``:

    .. math::

        \Lambda_t = (1 - \tfrac1t)\Lambda_{t-1} + \tfrac1t \operatorname{diag}(V_{t-1}\hat x_t)^2, \qquad
        V_t \xleftarrow{\text{orth}} V_{t-1} + \tfrac1t V_{t-1}\hat x_t \hat x_t^\top,

        S_t = (t\Lambda_t)^{1/2} V_t, \qquad H_t = \operatorname{diag}\Big(\frac{1}{1 + t\Lambda_{t,ii}}\Big),

    and, when the cost-sensitive loss ``ℓ_t(μ_t)`` is positive (the ACOG paper's Eq. 10),

    .. math::

        \mu_{t+1} = \mu_t - \eta\,(g_t - S_t^\top H_t S_t g_t)
                  = \mu_t + \eta\, c\, y_t \big(x_t
                    - V_t^\top \operatorname{diag}\big(\tfrac{t\Lambda}{1+t\Lambda}\big) V_t x_t\big),

    i.e. ``μ ← μ − η Σ_{t+1} g`` with ``Σ_{t+1} = I − Sᵀ H S`` (Woodbury of ``Σ^{-1} = I + SᵀS``). The loss and
    ``g_t = −c y x`` are those of :func:`jcsol.objective.cost_sensitive_loss` (I: ``c = 1``; II: ``c = ρ_t``).

    Choices the paper leaves open:

    * ``V_0``: the Gram–Schmidt orthonormalisation of a ``d × m`` matrix of pseudo-random numbers hashed from
      the run's key (:func:`initial_directions`): reproducible, different for every permutation, the same
      for every point of a grid; ``Λ_0 = 0``, ``t_0 = 0``.
    * ``orth``: Gram–Schmidt of the rows in order (a QR with non-negative ``diag R``), the orthonormalisation
      that :class:`SSACOG`'s ``Decompose`` performs, so both learners follow the same sketch.
    * ``sketch_every = k > 1`` (the ACOG paper's §3.1 remark, "update the sketch every m rounds", as Vowpal
      Wabbit's ``--epoch_size``): ``Λ`` is still updated every round, Oja's step ``Γ_t V x̂_t x̂_tᵀ`` is
      accumulated with ``V`` frozen, and ``V ← orth(V + Σ_block Γ_s V x̂_s x̂_sᵀ)`` on the rounds ``t ≡ 0 (mod
      k)``; ``k = 1`` is Alg. 3 exactly. The orthonormalisation is a ``lax.cond``: it saves its O(m²d) on
      the other rounds only where the step is not vmapped — under :func:`jcsol.run` (which vmaps over runs)
      the predicate is batched and both branches run, so the option changes the results, not the time.

    Cost O(m²d) time and O(md) memory per round and run; :class:`SSACOG` is O(m³ + m·nnz).

    Args:
        eta: learning rate η (> 0).
        gamma: regularisation γ (> 0), 1 in the papers.
        loss: ``"I"`` or ``"II"``.
        m: sketch size (static; 5 in the ACOG paper's §4.5).
        sketch_every: orthonormalise the sketch every this many rounds (static; 1 = every round, Alg. 3).

    Reference: P. Zhao, Y. Zhang, M. Wu, S. C. H. Hoi, M. Tan, J. Huang, *Adaptive Cost-Sensitive Online
    Classification*, IEEE TKDE, §3.1, Alg. 2 (SACOG) and Alg. 3 (Oja's sketch); H. Luo, A. Agarwal,
    N. Cesa-Bianchi, J. Langford, *Efficient Second Order Online Learning by Sketching*, NIPS 2016.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.SACOG(eta=10.0, loss="II", m=5), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        SACOG-II: sum 62.3%
    """

    step_size = "eta"

    eta: ArrayLike = hyperparameter(1e-2)
    gamma: ArrayLike = hyperparameter(1.0)
    loss: str = choice("I", *LOSSES)
    m: int = choice(5)
    sketch_every: int = choice(1)

    weights_field = "mu"

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_options(self)
        k = self.sketch_every
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"SACOG: sketch_every must be an int >= 1, got {k!r}")

    @property
    def name(self) -> str:
        return f"SACOG-{self.loss}" + (f"-every{self.sketch_every}" if self.sketch_every > 1 else "")

    def too_large_hint(self) -> str:
        return "use SSACOG (O(m·nnz) time per round) or fewer runs"

    def row_scales(self, d: int, dtype: Any) -> tuple[float, float]:  # its covariance update cancels beyond
        return covariance_row_scales(dtype)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> SACOGState:
        vt = initial_directions(key, d, self.m, dtype)
        grad = jnp.zeros((d if self.sketch_every > 1 else 0, self.m), dtype)
        return SACOGState(
            mu=jnp.zeros(d, dtype), vt=vt, lam=jnp.zeros(self.m, dtype), t=jnp.zeros((), jnp.int32), grad=grad
        )

    def sketch(self, state: SACOGState) -> tuple[jax.Array, jax.Array]:
        """``(V, Λ)``: the ``m × d`` sketch directions (orthonormal rows) and the eigenvalue estimates."""
        return jnp.swapaxes(state.vt, -1, -2), state.lam

    def step(self, state: SACOGState, ex: Example) -> tuple[SACOGState, StepInfo]:
        mu, vt, lam = state.mu, state.vt, state.lam
        dtype = mu.dtype
        x = densify(ex.x, mu.shape[0])
        f = mu @ x
        loss, c = cost_sensitive_loss(self.loss, ex.y * f, ex.rho)
        update = (loss > 0).astype(dtype)

        # Oja's sketch (Alg. 3), every round, before the loss test
        t = state.t + 1
        rate = 1.0 / t.astype(dtype)  # Γ_t = I/t
        x_hat = x / jnp.sqrt(self.gamma).astype(dtype)  # to-sketch vector
        p = x_hat @ vt  # V_{t-1} x̂
        lam = (1.0 - rate) * lam + rate * p * p
        oja = rate * jnp.outer(x_hat, p)  # (Γ_t V x̂ x̂ᵀ)ᵀ
        if self.sketch_every == 1:
            vt, grad = orthonormal_columns(vt + oja), state.grad
        else:
            grad = state.grad + oja
            vt, grad = jax.lax.cond(
                t % self.sketch_every == 0,
                lambda v, g: (orthonormal_columns(v + g), jnp.zeros_like(g)),
                lambda v, g: (v, g),
                vt,
                grad,
            )

        # μ ← μ − η (I − Sᵀ H S) g,  Sᵀ H S = Vᵀ diag(tΛ/(1+tΛ)) V
        t_lam = t.astype(dtype) * lam
        shrink = t_lam / (1.0 + t_lam)
        direction = x - vt @ (shrink * (x @ vt))
        mu = mu + (update * self.eta * c * ex.y) * direction
        return SACOGState(mu=mu, vt=vt, lam=lam, t=t, grad=grad), StepInfo(score=f, loss=loss)


# ----------------------------------------------------------------------------------------------------------
# Sparse SACOG (sparse Oja sketch)
# ----------------------------------------------------------------------------------------------------------


class SSACOGState(NamedTuple):
    w: jax.Array  # (d,) w: μ = w + Zᵀ b
    b: jax.Array  # (m,) b: the weights on the rows of Z
    zt: jax.Array  # (d, m) Zᵀ
    f: jax.Array  # (m, m) F: V = F Z
    lam: jax.Array  # (m,) Λ
    t: jax.Array  # () int32: rounds seen by the sketch


def _rows_of(zt: jax.Array, x: Vector) -> tuple[jax.Array, jax.Array]:
    """The rows of ``Zᵀ`` that ``x`` touches and the matching values: ``Z x = values @ rows``."""
    if isinstance(x, SparseVector):
        return zt[x.indices], x.values
    return zt, x


def _add_outer(zt: jax.Array, x: Vector, coef: jax.Array, delta: jax.Array) -> jax.Array:
    """``Zᵀ + coef · x δᵀ`` (i.e. ``Z ← Z + coef · δ xᵀ``), touching only the rows of ``x``'s non-zeros."""
    if isinstance(x, SparseVector):
        return zt.at[x.indices].add(jnp.outer(coef * x.values, delta))
    return zt + jnp.outer(coef * x, delta)


@pytree_dataclass
class SSACOG(Learner[SSACOGState]):
    r"""Sparse SACOG-I/II (SSACOG in the ACOG paper's §4.5): SACOG at O(m³ + m·nnz(x)) per round (its Alg. 4–6).

    The sketch directions are kept as ``V = F Z`` (``F`` ``m × m``, ``Z`` ``m × d``) and the mean as
    ``μ = w + Zᵀ b``. With ``p = Z_{t-1} x̂_t`` (``x̂ = x/√γ``) and ``v = F p = V_{t-1} x̂``, on **every** round
    (Alg. 5):

    .. math::

        \Lambda_t = (1 - \tfrac1t)\Lambda_{t-1} + \tfrac1t \operatorname{diag}(v)^2, \qquad
        \delta_t = F^{-1}\Gamma_t F p = p/t,

        K \leftarrow K + p\,\delta^\top + \delta\, p^\top + \|\hat x\|^2 \delta\delta^\top, \qquad
        Z \leftarrow Z + \delta\, \hat x^\top, \qquad F \leftarrow \mathrm{Decompose}(F, K),

    ``Decompose`` (Alg. 6) being Gram–Schmidt of the rows of ``F`` under ``⟨a, b⟩ = aᵀ K b``, ``K = Z Zᵀ``:
    ``F ← L^{-1} F`` with ``L`` lower triangular and ``L Lᵀ = F K Fᵀ``; this makes ``F Z`` the Gram–Schmidt
    orthonormalisation of ``V_{t-1} + \tfrac1t V_{t-1} x̂ x̂ᵀ``: the ``V_t`` of :class:`SACOG`. Then (the ACOG
    paper's Eqs. 14–15, Alg. 4), with ``h = tΛ/(1 + tΛ)`` and the *new* ``F, Z``:

    .. math::

        w \leftarrow w - \eta\,[\ell_t > 0]\, g_t - \hat x_t\, (\delta_t^\top b), \qquad
        b \leftarrow b + \eta\,[\ell_t > 0]\, F^\top \operatorname{diag}(h) F Z g_t,

    so that ``w + Zᵀ b = μ_t − η [ℓ_t > 0] (I − Sᵀ H S) g_t``: the mean of :class:`SACOG`. The score is
    ``f_t = w·x + b·(Z x)``. Every change of ``w`` and ``Z`` is supported on the row's non-zeros (gathers and
    scatters on its indices); everything else is ``m``-sized: nothing of size ``d`` is touched. ``μ`` itself
    is formed only by :meth:`weights` (O(md), for held-out scoring).

    **Decompose without forming K.** ``F K Fᵀ`` is all that ``Decompose`` needs of ``K``, and since ``δ = p/t``,
    Eq. 18 is the rank-one ``K_t = K_{t-1} + κ p pᵀ`` with ``κ = 2/t + ‖x̂‖²/t²``; as the rows of ``F Z`` were
    orthonormal (``F K_{t-1} Fᵀ = I``), ``F K_t Fᵀ = I + κ v vᵀ``. So ``L`` is the Cholesky factor of
    ``I + κ v vᵀ``, computed in O(m²) by a rank-one update of ``I``
    (:func:`cholesky_of_identity_plus_rank_one`), and ``F ← L^{-1} F`` by forward substitution — the paper's
    Decompose(F, K) in exact arithmetic, without ``K``. Forming ``K`` does not work in float32: ``Z_t = Z_0
    ∏_s (I + x̂_s x̂_sᵀ/s)`` is a power iteration, its rows align, ``cond(Z)`` grows with ``t`` (≈200 after 1000
    rounds of german) and ``K`` has ``cond(Z)²``: Gram–Schmidt under a float32 ``K`` lost ``‖V Vᵀ − I‖ ≈ 1e-2``
    and put μ off by 1e-1 after 1000 rounds of german (keeping ``K`` as ``Rᵀ R`` with QRs gave 1e-3, 10×
    slower). Here the rounding of the stored ``Z`` and ``F`` still costs ``≈ ε·cond(Z)`` per round:
    ``‖V Vᵀ − I‖`` reaches ~1e-4 after 10⁴ rounds of mushrooms or usps (``cond(Z) ≈ 20``), against ≈1e-7 for
    :class:`SACOG`, which re-orthonormalises an explicit ``V`` every round.

    **Range of use.** ``cond(Z)`` grows like ``t^{(λ_1 − λ_m)/γ}`` (``λ_i`` the eigenvalues of the rows'
    second moment): with L2-normalised rows and ``γ = 1`` (the papers' setting) it stays small on the
    papers' data, but a small ``γ`` (a large ``x̂``) on data with a dominant direction makes it explode within
    a few hundred rounds (german, ``γ = 0.1``: float32 overflows) — use :class:`SACOG`, or float64, there.
    Vowpal Wabbit's ``OjaNewton`` resets ``Z ← F Z``, ``F ← I`` when ``K`` grows large; that reset is O(md)
    and, under the engine's vmap, would run on every round, so it is not done here.

    Other deviations from the paper's text, needed for "same predictions as SACOG":

    * Alg. 4 applies ``w ← w − x̂ δᵀ b`` only when ``ℓ_t > 0``, but ``Z`` changes on every round; without the
      correction on the other rounds ``w + Zᵀ b`` drifts away from ``μ`` (the float64 reference, read
      literally, leaves SACOG within the first rounds). It is applied every round (as Vowpal Wabbit's
      ``OjaNewton`` does in its sketch update).
    * ``δ = F^{-1} Γ_t F Z x̂`` is ``Z x̂ / t`` since ``Γ_t = I/t`` is scalar: no inverse is formed.

    The same ``V_0 = Z_0`` as :class:`SACOG` for a key (:func:`initial_directions`); ``F_0 = K_0 = I``,
    ``Λ_0 = 0``, ``w_1 = 0``, ``b_1 = 0``. Memory O(md) per run (``Z``); time O(m³ + m·nnz(x)) per round.

    Args:
        eta: learning rate η (> 0).
        gamma: regularisation γ (> 0), 1 in the papers.
        loss: ``"I"`` or ``"II"``.
        m: sketch size (static; 5 in the ACOG paper's §4.5).

    Reference: P. Zhao, Y. Zhang, M. Wu, S. C. H. Hoi, M. Tan, J. Huang, *Adaptive Cost-Sensitive Online
    Classification*, IEEE TKDE, §3.2, Alg. 4 (sparse SACOG), Alg. 5 (sparse Oja's sketch), Alg. 6
    (Decompose); H. Luo et al., NIPS 2016 (sparse Oja's sketch).

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.SSACOG(eta=10.0, loss="II", m=5), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        SSACOG-II: sum 62.1%
    """

    step_size = "eta"

    eta: ArrayLike = hyperparameter(1e-2)
    gamma: ArrayLike = hyperparameter(1.0)
    loss: str = choice("I", *LOSSES)
    m: int = choice(5)

    sparse_steps = True

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_options(self)

    @property
    def name(self) -> str:
        return f"SSACOG-{self.loss}"

    def row_scales(self, d: int, dtype: Any) -> tuple[float, float]:  # its sketched covariance cancels beyond
        return covariance_row_scales(dtype)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> SSACOGState:
        return SSACOGState(
            w=jnp.zeros(d, dtype),
            b=jnp.zeros(self.m, dtype),
            zt=initial_directions(key, d, self.m, dtype),
            f=jnp.eye(self.m, dtype=dtype),
            lam=jnp.zeros(self.m, dtype),
            t=jnp.zeros((), jnp.int32),
        )

    def weights(self, state: SSACOGState) -> jax.Array:
        """The mean ``μ = w + Zᵀ b`` (O(md))."""
        return state.w + state.zt @ state.b

    def gram(self, state: SSACOGState) -> jax.Array:
        """The paper's Gram matrix ``K = Z Zᵀ`` (O(m²d); the step does not need it)."""
        return state.zt.T @ state.zt

    def sketch(self, state: SSACOGState) -> tuple[jax.Array, jax.Array]:
        """``(V, Λ)`` with ``V = F Z`` (O(m²d)): the ``m × d`` sketch directions, and ``Λ``."""
        return state.f @ state.zt.T, state.lam

    def step(self, state: SSACOGState, ex: Example) -> tuple[SSACOGState, StepInfo]:
        w, b, zt, f_mat, lam = state.w, state.b, state.zt, state.f, state.lam
        dtype = w.dtype
        x = ex.x
        s = 1.0 / jnp.sqrt(self.gamma).astype(dtype)  # x̂ = s·x
        rows, values = _rows_of(zt, x)
        zx = values @ rows  # Z_{t-1} x: O(m·nnz)
        score = dot(w, x) + b @ zx  # μ_t·x = w·x + b·(Z x)
        loss, c = cost_sensitive_loss(self.loss, ex.y * score, ex.rho)
        update = (loss > 0).astype(dtype)

        # sparse Oja's sketch (Alg. 5), every round, before the loss test
        t = state.t + 1
        rate = 1.0 / t.astype(dtype)  # Γ_t = I/t
        norm2_x = squared_norm(x)
        p = s * zx  # Z x̂
        v = f_mat @ p  # V_{t-1} x̂
        lam = (1.0 - rate) * lam + rate * v * v
        delta = rate * p  # F^{-1} Γ_t F Z x̂ = Z x̂ / t
        kappa = rate * (2.0 + rate * s * s * norm2_x)  # K_t = K + κ p pᵀ  (Eq. 18 with δ = p/t)
        lower = cholesky_of_identity_plus_rank_one(kappa, v)  # L Lᵀ = F K_t Fᵀ = I + κ v vᵀ
        f_mat = forward_substitution(lower, f_mat)  # Decompose(F, K_t): F ← L^{-1} F
        zt = _add_outer(zt, x, s, delta)  # Z ← Z + δ x̂ᵀ: O(m·nnz)

        # mean (Alg. 4, Eqs. 14–15): w ← w − η g − x̂ δᵀ b (the correction on every round), b ← b + η Fᵀ h F Z g
        t_lam = t.astype(dtype) * lam
        shrink = t_lam / (1.0 + t_lam)
        gain = update * self.eta * c * ex.y  # −η g = gain·x
        zx = zx + delta * (s * norm2_x)  # Z_t x = Z_{t-1} x + δ (x̂·x)
        w = add_scaled(w, gain - s * (delta @ b), x)  # O(nnz)
        b = b - gain * (f_mat.T @ (shrink * (f_mat @ zx)))
        return SSACOGState(w=w, b=b, zt=zt, f=f_mat, lam=lam, t=t), StepInfo(score=score, loss=loss)
