"""Linear online AUC maximisation: OAM (Zhao, Hoi, Jin, Yang, ICML 2011) and OPAUC (Gao, Jin, Zhu, Zhou,
ICML 2013), the linear baselines of the KOIL thesis (J. Hu, *Kernelized
Online Imbalanced Learning*, The Chinese University of Hong Kong), Table 3.3."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..base import Example, Learner, StepInfo, choice, count_one, hyperparameter, pytree_dataclass
from .keys import draw, key_data


class OAMState(NamedTuple):
    w: jax.Array  # (d,) linear scorer
    buf: jax.Array  # (N⁺ + N⁻, d) buffered examples; positive slots first
    size: jax.Array  # (2,) int32 occupied slots (positive, negative)
    seen: jax.Array  # (2,) int32 examples received per class
    key: jax.Array  # (2,) uint32 PRNG key data (reservoir sampling)


@pytree_dataclass
class OAM(Learner[OAMState]):
    r"""Online AUC maximisation with reservoir buffers and sequential updates (OAM_seq).

    Round ``t`` with ``(x_t, y_t)``: score ``f_t = w·x_t``; ``N^{y}_t`` (examples of ``y_t``'s class so far)
    grows by one, and

    1. the buffer of ``y_t``'s class is updated by reservoir sampling: appended while it has room, else ``x_t``
       replaces a uniformly chosen slot with probability ``N/N^{y}_t``;
    2. ``C_t = C·max(1, N^{−y}_t / N^{−y})`` (``N^{−y}_t`` examples of the other class so far, ``N^{−y}`` its
       budget), and ``w`` is updated against each buffered example ``x_j`` of the other class in turn
       (slot order):

       .. math::

           \ell = \max(0, 1 - y_t\, w\cdot(x_t - x_j)),\qquad
           \tau = \min\!\Big(\frac{C_t}{2}, \frac{\ell}{\|x_t - x_j\|^2}\Big),\qquad
           w \leftarrow w + \tau\, y_t (x_t - x_j)

       (``τ = 0`` when ``x_t = x_j``).

    Two uniforms are drawn per round from the PRNG key carried in the state (the Bernoulli, then the slot).
    The reported loss is the sum of the pairwise ``ℓ`` met during the sequential pass.

    Args:
        C: penalty C (grid ``2^[-10:10]`` in the KOIL thesis).
        budget_pos, budget_neg: buffer sizes ``N⁺``, ``N⁻`` (100 each in the KOIL thesis).

    Reference: P. Zhao, S. C. H. Hoi, R. Jin, T. Yang, *Online AUC Maximization*, ICML 2011, Alg. 1–3 (OAM_seq).

    Example:
        On the German credit data that ships with jcsol: learn from 500 rows, measure the AUC of the final model on the
        other 500:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.OAM(C=1.0, budget_pos=20, budget_neg=20), X[:500], y[:500], perms=1)
        >>> held_out = res.score(X[500:])[0]  # the final model's scores of rows it never saw
        >>> print(f"{res.learner.name}: AUC {float(jcsol.metrics.auc(held_out, y[500:])):.3f}")
        OAM: AUC 0.679
    """

    step_size = "C"

    C: ArrayLike = hyperparameter(1.0)
    budget_pos: int = choice(100)
    budget_neg: int = choice(100)

    draw_shape = (2,)

    def __post_init__(self) -> None:
        super().__post_init__()
        for field in ("budget_pos", "budget_neg"):
            value = getattr(self, field)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"OAM: {field} must be an integer >= 1, got {value!r}")

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> OAMState:
        z = jnp.zeros(2, jnp.int32)
        return OAMState(
            w=jnp.zeros(d, dtype),
            buf=jnp.zeros((self.budget_pos + self.budget_neg, d), dtype),
            size=z,
            seen=z,
            key=key_data(key),
        )

    def step(self, state: OAMState, ex: Example) -> tuple[OAMState, StepInfo]:
        x, y, dtype = ex.x, ex.y, ex.x.dtype
        data, u = draw(state.key, self.draw_shape, dtype)
        n_pos, n_neg = self.budget_pos, self.budget_neg
        positive = y > 0
        b = jnp.where(positive, 0, 1)
        f = state.w @ x
        seen = count_one(state.seen, b)
        cap_own, cap_opp = jnp.where(positive, n_pos, n_neg), jnp.where(positive, n_neg, n_pos)
        off_own, off_opp = jnp.where(positive, 0, n_pos), jnp.where(positive, n_pos, 0)
        c_t = self.C * jnp.maximum(1.0, seen[1 - b].astype(dtype) / cap_opp.astype(dtype))

        # classifier: sequential pass over the other class's buffer (before this round's buffer update: the
        # two touch different buffers)
        size_opp = state.size[1 - b]

        def pair(j, carry):
            w, total = carry
            xj = state.buf[off_opp + jnp.minimum(j, cap_opp - 1)]
            diff = x - xj
            loss = jnp.maximum(0.0, 1.0 - y * (w @ diff))
            sq = diff @ diff
            tau = jnp.where((j < size_opp) & (sq > 0), jnp.minimum(c_t / 2, loss / jnp.where(sq > 0, sq, 1.0)), 0.0)
            return w + (tau * y) * diff, total + jnp.where(j < size_opp, loss, 0.0)

        w, total = jax.lax.fori_loop(0, max(n_pos, n_neg), pair, (state.w, jnp.zeros((), dtype)))

        # own buffer: reservoir sampling
        size_own = state.size[b]
        not_full = size_own < cap_own
        replace = u[0] * seen[b].astype(dtype) < cap_own.astype(dtype)
        r = jnp.minimum(jnp.floor(u[1] * cap_own.astype(dtype)).astype(jnp.int32), cap_own - 1)
        target = off_own + jnp.where(not_full, size_own, r)
        write = not_full | replace
        buf = state.buf.at[target].set(jnp.where(write, x, state.buf[target]))
        size = state.size.at[b].add(not_full.astype(jnp.int32))
        return OAMState(w=w.astype(dtype), buf=buf, size=size, seen=seen, key=data), StepInfo(score=f, loss=total)

    def too_large_hint(self) -> str:
        return "use smaller budgets or fewer runs"


class OPAUCState(NamedTuple):
    w: jax.Array  # (d,) linear scorer
    center: jax.Array  # (2, d) class means c⁺, c⁻
    cov: jax.Array  # (2, d, d) class covariances Γ⁺, Γ⁻ (biased: mean of x xᵀ minus c cᵀ)
    class_count: jax.Array  # (2,) int32 examples per class T⁺, T⁻


@pytree_dataclass
class OPAUC(Learner[OPAUCState]):
    r"""One-pass AUC optimisation with the square pairwise loss, from per-class means and covariances.

    Round ``t`` (score ``f_t = w·x_t`` first): the statistics of ``y_t``'s class are updated,

    .. math::

        T \leftarrow T + 1,\quad c \leftarrow c + \frac{x_t - c}{T},\quad
        \Gamma \leftarrow \Gamma + \frac{x_t x_t^\top - \Gamma - c_{\rm old} c_{\rm old}^\top}{T}
                      + c_{\rm old} c_{\rm old}^\top - c\, c^\top,

    (the exact running covariance), then, if the other class (mean ``c'``, covariance ``Γ'``) has been seen,

    .. math::

        w \leftarrow w - \eta\big(\lambda w - y_t (x_t - c') + (x_t - c')(x_t - c')^\top w + \Gamma' w\big),

    the gradient of ``λ/2‖w‖² + Σ_{i: y_i ≠ y_t} (1 − y_t w·(x_t − x_i))² / (2 T')`` in closed form. O(d²) per
    round and memory per run (the full-covariance version of the paper).

    Args:
        eta: step size η.
        lam: regulariser λ.

    Reference: W. Gao, R. Jin, S. Zhu, Z.-H. Zhou, *One-Pass AUC Optimization*, ICML 2013, Alg. 1 (and the
    authors' MATLAB ``OPAUC.m``).

    Example:
        On the German credit data that ships with jcsol: learn from 500 rows, measure the AUC of the final model on the
        other 500:

        >>> import jcsol
        >>> X, y = jcsol.datasets.load("german")
        >>> res = jcsol.run(jcsol.OPAUC(eta=0.1, lam=0.01), X[:500], y[:500], perms=1)
        >>> held_out = res.score(X[500:])[0]  # the final model's scores of rows it never saw
        >>> print(f"{res.learner.name}: AUC {float(jcsol.metrics.auc(held_out, y[500:])):.3f}")
        OPAUC: AUC 0.645
    """

    step_size = "eta"

    eta: ArrayLike = hyperparameter(1e-2)
    lam: ArrayLike = hyperparameter(1e-2)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> OPAUCState:
        return OPAUCState(
            w=jnp.zeros(d, dtype),
            center=jnp.zeros((2, d), dtype),
            cov=jnp.zeros((2, d, d), dtype),
            class_count=jnp.zeros(2, jnp.int32),
        )

    def step(self, state: OPAUCState, ex: Example) -> tuple[OPAUCState, StepInfo]:
        x, y, dtype = ex.x, ex.y, ex.x.dtype
        b = jnp.where(y > 0, 0, 1)
        f = state.w @ x
        count = count_one(state.class_count, b)
        t = count[b].astype(dtype)
        old = state.center[b]
        new = old + (x - old) / t
        cov_b = (
            state.cov[b]
            + (jnp.outer(x, x) - state.cov[b] - jnp.outer(old, old)) / t
            + jnp.outer(old, old)
            - jnp.outer(new, new)
        )
        center = state.center.at[b].set(new)
        cov = state.cov.at[b].set(cov_b)
        c_o, g_o = state.center[1 - b], state.cov[1 - b]
        diff = x - c_o
        grad = self.lam * state.w - y * diff + (diff @ state.w) * diff + g_o @ state.w
        seen_other = state.class_count[1 - b] > 0
        w = state.w - jnp.where(seen_other, self.eta, 0.0) * grad
        loss = jnp.where(seen_other, jnp.square(1.0 - y * (state.w @ diff)), 0.0)
        return OPAUCState(w=w.astype(dtype), center=center, cov=cov, class_count=count), StepInfo(score=f, loss=loss)

    def too_large_hint(self) -> str:
        return "OPAUC keeps two d × d covariances per run; use fewer runs"


__all__ = ["OAM", "OAMState", "OPAUC", "OPAUCState"]
