"""Kernel online learners on a budget, the kernel baselines of the KOIL thesis (Table 3.3): NORMA
(Kivinen, Smola, Williamson 2004), RBP (Cavallanti, Cesa-Bianchi, Gentile 2007), the self-tuned Forgetron
(Dekel, Shalev-Shwartz, Singer 2008), Projectron and Projectron++ (Orabona, Keshet, Caputo 2009).

All keep one buffer of ``budget`` support-vector slots (static shape; slot ``j`` is occupied iff ``j < size``)
and score ``f(x) = Σ_i α_i k(x_i, x)`` with a kernel of :mod:`jcsol.algorithms.kernels` (Gaussian by default,
width ``sigma``). The perceptron-style learners update when ``y_t f(x_t) ≤ 0``, as in their papers (a score of
exactly 0 is a mistake for both labels; jcsol's online prediction is still ``f >= 0 → +1``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from ..base import Example, Learner, StateT, StepInfo, choice, hyperparameter, pytree_dataclass
from .kernels import KINDS, kernel_matrix, kernel_norm_scales
from .keys import draw, key_data


class BudgetState(NamedTuple):
    sv: jax.Array  # (B, d) support vectors
    alpha: jax.Array  # (B,) weights (0 in empty slots)
    size: jax.Array  # () int32 occupied slots
    head: jax.Array  # () int32 oldest slot (FIFO removal, once full)


class _KernelBudget(Learner[StateT]):
    """Shared parts: kernel, budget, the score of the expansion."""

    weights_field = "alpha"
    budget: int  # fields of every subclass
    kernel: str
    sigma: ArrayLike
    degree: int

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.budget, (int, np.integer)) or self.budget < 1:
            raise ValueError(f"{type(self).__name__}: budget must be an integer >= 1, got {self.budget!r}")

    def _kern(self, A, B):
        return kernel_matrix(self.kernel, A, B, sigma=self.sigma, degree=self.degree, coef0=self.coef0)

    def row_norm_scales(self, dtype: Any) -> tuple[float, float]:
        return kernel_norm_scales(self.kernel, self.sigma, self.degree, dtype)

    def _occupied(self, size):
        return jnp.arange(self.budget) < size

    def _f(self, sv, alpha, size, x):
        kt = jnp.where(self._occupied(size), self._kern(sv, x[None, :])[:, 0], 0.0)
        return kt @ alpha, kt

    def score(self, state, X: jax.Array) -> jax.Array:
        """``f(X)``: the support-vector expansion of the final model on held-out rows ``X``."""
        alpha = jnp.where(self._occupied(state.size), state.alpha, 0.0)
        X = jnp.asarray(X, state.sv.dtype)
        return jax.lax.map(
            lambda row: self._kern(row[None, :], state.sv)[0] @ alpha, X, batch_size=min(256, max(1, len(X)))
        )

    def _empty(self, d, dtype) -> BudgetState:
        return BudgetState(
            sv=jnp.zeros((self.budget, d), dtype),
            alpha=jnp.zeros(self.budget, dtype),
            size=jnp.zeros((), jnp.int32),
            head=jnp.zeros((), jnp.int32),
        )

    def too_large_hint(self) -> str:
        return "use a smaller budget or fewer runs"


def _put(sv, alpha, slot, x, a, write):
    """Writes ``(x, a)`` at ``slot`` when ``write``."""
    return (sv.at[slot].set(jnp.where(write, x, sv[slot])), alpha.at[slot].set(jnp.where(write, a, alpha[slot])))


# --------------------------------------------------------------------------------------------------------------


class NORMAState(NamedTuple):
    sv: jax.Array
    alpha: jax.Array
    size: jax.Array
    head: jax.Array
    rho: jax.Array  # () margin ρ


@pytree_dataclass
class NORMA(_KernelBudget[NORMAState]):
    r"""NORMA: stochastic gradient descent in the RKHS on the regularised soft-margin loss (ν-parametrised).

    .. math::

        \sigma_t = [\,y_t f_t(x_t) < \rho_t\,],\quad
        \alpha_i \leftarrow (1 - \eta\lambda)\,\alpha_i,\quad
        \alpha_t = \eta\, \sigma_t\, y_t,\quad
        \rho_{t+1} = \max\big(0,\ \rho_t + \eta(\nu - \sigma_t)\big),\qquad \rho_1 = 0.

    The expansion is truncated to the last ``budget`` terms (Kivinen et al.'s truncation; a term ``τ`` rounds
    old has been multiplied by ``(1 − ηλ)^τ``): when full, the oldest slot is overwritten. The KOIL thesis ran NORMA
    with an unbounded buffer; a budget at least the stream length reproduces that. ρ is kept ≥ 0 (the margin of the
    ν-formulation).

    Args:
        eta: step size η.  lam: regulariser λ.  nu: ν ∈ (0, 1].  sigma: Gaussian width.
        budget: number of terms kept.

    Reference: J. Kivinen, A. J. Smola, R. C. Williamson, *Online Learning with Kernels*, IEEE Trans. Signal
    Processing 52(8), 2004, §III-B (classification, ν-parametrisation) and §IV (truncation).

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.NORMA(eta=0.1, budget=50), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        NORMA: sum 52.5%
    """

    step_size = "eta"

    eta: ArrayLike = hyperparameter(1e-2)
    lam: ArrayLike = hyperparameter(1e-2)
    nu: ArrayLike = hyperparameter(0.5)
    sigma: ArrayLike = hyperparameter(1.0)
    coef0: ArrayLike = hyperparameter(0.0, positive=False)
    budget: int = choice(500)
    kernel: str = choice("gaussian", *KINDS)
    degree: int = choice(2)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> NORMAState:
        return NORMAState(*self._empty(d, dtype), rho=jnp.zeros((), dtype))

    def step(self, state: NORMAState, ex: Example) -> tuple[NORMAState, StepInfo]:
        x, y, dtype = ex.x, ex.y, ex.x.dtype
        f, _ = self._f(state.sv, state.alpha, state.size, x)
        error = y * f < state.rho
        alpha = (1.0 - self.eta * self.lam) * state.alpha
        full = state.size >= self.budget
        slot = jnp.where(full, state.head, state.size)
        sv, alpha = _put(state.sv, alpha, slot, x, self.eta * y, error)
        size = state.size + (error & ~full).astype(jnp.int32)
        head = jnp.where(error & full, (state.head + 1) % self.budget, state.head)
        rho = jnp.maximum(0.0, state.rho + self.eta * (self.nu - error.astype(dtype)))
        loss = jnp.maximum(0.0, state.rho - y * f)
        return (
            NORMAState(sv=sv, alpha=alpha.astype(dtype), size=size, head=head, rho=rho.astype(dtype)),
            StepInfo(score=f, loss=loss),
        )


# --------------------------------------------------------------------------------------------------------------


class RBPState(NamedTuple):
    sv: jax.Array
    alpha: jax.Array
    size: jax.Array
    head: jax.Array
    key: jax.Array  # (2,) uint32 PRNG key data


@pytree_dataclass
class RBP(_KernelBudget[RBPState]):
    r"""Randomized Budget Perceptron: a kernel perceptron that, on a mistake with a full buffer, first discards
    a support vector chosen uniformly at random.

    .. math::

        \text{if } y_t f_t(x_t) \le 0:\quad
        \text{(full: drop } r \sim \mathcal U\{1..B\}),\quad \alpha_t = y_t.

    One uniform per round from the PRNG key in the state picks ``r``.

    Args:
        sigma: Gaussian width.  budget: B (100 in the KOIL thesis).

    Reference: G. Cavallanti, N. Cesa-Bianchi, C. Gentile, *Tracking the best hyperplane with a simple budget
    Perceptron*, Machine Learning 69(2–3), 2007.

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.RBP(budget=50), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        RBP: sum 52.6%
    """

    sigma: ArrayLike = hyperparameter(1.0)
    coef0: ArrayLike = hyperparameter(0.0, positive=False)
    budget: int = choice(100)
    kernel: str = choice("gaussian", *KINDS)
    degree: int = choice(2)

    draw_shape = (1,)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> RBPState:
        return RBPState(*self._empty(d, dtype), key=key_data(key))

    def step(self, state: RBPState, ex: Example) -> tuple[RBPState, StepInfo]:
        x, y, dtype = ex.x, ex.y, ex.x.dtype
        data, u = draw(state.key, self.draw_shape, dtype)
        f, _ = self._f(state.sv, state.alpha, state.size, x)
        mistake = y * f <= 0
        full = state.size >= self.budget
        r = jnp.minimum(jnp.floor(u[0] * self.budget).astype(jnp.int32), self.budget - 1)
        slot = jnp.where(full, r, state.size)
        sv, alpha = _put(state.sv, state.alpha, slot, x, y, mistake)
        size = state.size + (mistake & ~full).astype(jnp.int32)
        return (
            RBPState(sv=sv, alpha=alpha, size=size, head=state.head, key=data),
            StepInfo(score=f, loss=mistake.astype(dtype)),
        )


# --------------------------------------------------------------------------------------------------------------


class ForgetronState(NamedTuple):
    sv: jax.Array
    alpha: jax.Array  # σ_i y_i
    size: jax.Array
    head: jax.Array
    Q: jax.Array  # () cumulative Ψ of the removals
    M: jax.Array  # () number of mistakes (as a float)


@pytree_dataclass
class Forgetron(_KernelBudget[ForgetronState]):
    r"""The self-tuned Forgetron: a kernel perceptron on a budget that shrinks all weights before removing the
    oldest support vector.

    On a mistake (``y_t f_t(x_t) ≤ 0``): ``M ← M + 1`` and ``x_t`` joins with weight ``y_t``
    (``f'_t = f_t + y_t k(x_t,·)``). If that makes ``B + 1`` support vectors, with ``r`` the oldest,
    ``σ_r = |α_r|`` and ``μ = y_r f'_t(x_r)``:

    .. math::

        \phi_t = \max\{\phi \in (0,1] : \Psi(\phi\sigma_r, \phi\mu) + Q \le \tfrac{15}{32} M\},\quad
        \Psi(\lambda, \mu) = \lambda^2 + 2\lambda - 2\lambda\mu,

    ``Q ← Q + Ψ(φσ_r, φμ)``, every weight (the new one included) is multiplied by ``φ``, and ``r`` is removed.
    ``φ`` is the root of a quadratic, computed as ``2c / (b + √(b² + 4ac))`` (``a = σ_r² − 2σ_rμ``,
    ``b = 2σ_r``, ``c = 15M/32 − Q``), which is stable for ``a → 0``.

    Args:
        sigma: Gaussian width.  budget: B (100 in the KOIL thesis).

    Reference: O. Dekel, S. Shalev-Shwartz, Y. Singer, *The Forgetron: A Kernel-Based Perceptron on a Budget*,
    SIAM J. Computing 37(5), 2008, Fig. 2 (self-tuned).

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.Forgetron(budget=50), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        Forgetron: sum 53.5%
    """

    sigma: ArrayLike = hyperparameter(1.0)
    coef0: ArrayLike = hyperparameter(0.0, positive=False)
    budget: int = choice(100)
    kernel: str = choice("gaussian", *KINDS)
    degree: int = choice(2)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> ForgetronState:
        return ForgetronState(*self._empty(d, dtype), Q=jnp.zeros((), dtype), M=jnp.zeros((), dtype))

    def step(self, state: ForgetronState, ex: Example) -> tuple[ForgetronState, StepInfo]:
        x, y, dtype = ex.x, ex.y, ex.x.dtype
        f, kt = self._f(state.sv, state.alpha, state.size, x)
        mistake = y * f <= 0
        full = state.size >= self.budget
        M = state.M + mistake.astype(dtype)
        r = state.head
        x_r, a_r = state.sv[r], state.alpha[r]
        f_r, _ = self._f(state.sv, state.alpha, state.size, x_r)
        y_r = jnp.sign(a_r)
        sigma_r = jnp.abs(a_r)
        mu = y_r * (f_r + y * kt[r])  # y_r f'_t(x_r), k(x_t, x_r) = kt[r]
        a = sigma_r * sigma_r - 2.0 * sigma_r * mu
        b = 2.0 * sigma_r
        c = 15.0 / 32.0 * M - state.Q
        psi1 = a + b
        root = 2.0 * c / (b + jnp.sqrt(jnp.maximum(b * b + 4.0 * a * c, 0.0)))
        phi = jnp.clip(jnp.where(psi1 <= c, 1.0, root), 0.0, 1.0)
        shrink = mistake & full
        psi = phi * phi * a + phi * b
        Q = state.Q + jnp.where(shrink, psi, 0.0)
        alpha = jnp.where(shrink, phi, 1.0) * state.alpha
        slot = jnp.where(full, r, state.size)
        sv, alpha = _put(state.sv, alpha, slot, x, jnp.where(shrink, phi, 1.0) * y, mistake)
        size = state.size + (mistake & ~full).astype(jnp.int32)
        head = jnp.where(shrink, (state.head + 1) % self.budget, state.head)
        return (
            ForgetronState(sv=sv, alpha=alpha.astype(dtype), size=size, head=head, Q=Q.astype(dtype), M=M),
            StepInfo(score=f, loss=mistake.astype(dtype)),
        )


# --------------------------------------------------------------------------------------------------------------


class ProjectronState(NamedTuple):
    sv: jax.Array
    alpha: jax.Array
    size: jax.Array
    head: jax.Array
    kinv: jax.Array  # (B, B) inverse Gram matrix of the support vectors (zero rows/columns for empty slots)


@pytree_dataclass
class Projectron(_KernelBudget[ProjectronState]):
    r"""Projectron and Projectron++: a kernel perceptron that projects ``k(x_t,·)`` onto the span of its support
    vectors instead of adding it when the projection error is small.

    With ``k_t = (k(x_i, x_t))_i``, ``d = K^{-1} k_t`` and the squared projection error
    ``δ = k(x_t,x_t) − k_tᵀ d`` (as Orabona's DOGMA ``k_projectron*_train.m``):

    * mistake (``y_t f_t(x_t) ≤ 0``): if ``δ ≤ η``, ``α ← α + y_t d`` (projected step); else ``x_t`` joins with
      ``α_t = y_t`` and ``K^{-1}`` grows by the rank-one formula
      ``K^{-1} ← [[K^{-1}, 0], [0, 0]] + (d, −1)(d, −1)ᵀ/δ``;
    * Projectron++ only, margin error (``0 < y_t f_t < 1``, ``ℓ = 1 − y_t f_t``): if ``ℓ − δ/η > 0``,
      ``α ← α + τ y_t d`` with ``τ = min(ℓ/‖Pk‖², 1, 2(ℓ − δ/η)/‖Pk‖²)``, ``‖Pk‖² = k(x_t,x_t) − δ``.

    The Projectron's support set is bounded by a data-dependent constant, not by a budget; for static shapes the
    buffer has ``budget`` slots and, once full, a mistake always takes the projected step (documented
    departure; with a budget above the bound it never triggers).

    Args:
        eta: projection threshold η (grid ``2^[-10:10]`` in the KOIL thesis).  sigma: Gaussian width.
        budget: slots.  plus: Projectron++ (also updates on margin errors).

    Reference: F. Orabona, J. Keshet, B. Caputo, *Bounded Kernel-Based Online Learning*, JMLR 10, 2009, Fig. 1
    (Projectron) and Fig. 2 (Projectron++).

    Example:
        On the German credit data that ships with jcsol, over two permutations of its 1000 rows:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.Projectron(eta=0.1, budget=50), X, y, perms=2)
        >>> print(f"{res.learner.name}: sum {100 * res.sum.mean():.1f}%")
        Projectron: sum 53.5%
    """

    step_size = "eta"

    eta: ArrayLike = hyperparameter(0.1)
    sigma: ArrayLike = hyperparameter(1.0)
    coef0: ArrayLike = hyperparameter(0.0, positive=False)
    budget: int = choice(100)
    plus: bool = choice(False, False, True)
    kernel: str = choice("gaussian", *KINDS)
    degree: int = choice(2)

    @property
    def name(self) -> str:
        return "Projectron++" if self.plus else "Projectron"

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> ProjectronState:
        return ProjectronState(*self._empty(d, dtype), kinv=jnp.zeros((self.budget, self.budget), dtype))

    def step(self, state: ProjectronState, ex: Example) -> tuple[ProjectronState, StepInfo]:
        x, y, dtype = ex.x, ex.y, ex.x.dtype
        f, kt = self._f(state.sv, state.alpha, state.size, x)
        kxx = self._kern(x[None, :], x[None, :])[0, 0]
        coeff = state.kinv @ kt
        delta = jnp.maximum(kxx - kt @ coeff, 0.0)
        margin = y * f
        mistake = margin <= 0
        full = state.size >= self.budget
        grow = mistake & (delta > self.eta) & ~full
        project = mistake & ~grow
        step = jnp.where(project, y, 0.0)
        if self.plus:
            loss = 1.0 - margin
            norm = jnp.maximum(kxx - delta, 0.0)
            gap = loss - delta / self.eta
            tau = jnp.minimum(
                jnp.minimum(loss / jnp.where(norm > 0, norm, 1.0), 1.0), 2.0 * gap / jnp.where(norm > 0, norm, 1.0)
            )
            margin_error = (margin > 0) & (margin < 1) & (gap > 0) & (norm > 0)
            step = step + jnp.where(margin_error, tau * y, 0.0)
        alpha = state.alpha + step * coeff
        s = jnp.minimum(state.size, self.budget - 1)
        sv, alpha = _put(state.sv, alpha, s, x, y, grow)
        v = coeff.at[s].set(-1.0)
        kinv = state.kinv + jnp.where(grow, 1.0 / jnp.where(delta > 0, delta, 1.0), 0.0) * jnp.outer(v, v)
        size = state.size + grow.astype(jnp.int32)
        hinge = jnp.maximum(0.0, 1.0 - margin)
        return (
            ProjectronState(sv=sv, alpha=alpha.astype(dtype), size=size, head=state.head, kinv=kinv.astype(dtype)),
            StepInfo(score=f, loss=hinge),
        )


__all__ = [
    "NORMA",
    "NORMAState",
    "RBP",
    "RBPState",
    "Forgetron",
    "ForgetronState",
    "Projectron",
    "ProjectronState",
    "BudgetState",
]
