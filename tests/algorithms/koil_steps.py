"""Round-by-round runs of the learners of the KOIL thesis (J. Hu, *Kernelized Online Imbalanced Learning*,
thesis, The Chinese University of Hong Kong; Hu, Yang, King, Lyu, So, *Kernelized Online Imbalanced Learning with
Fixed Budgets*, AAAI 2015): KOIL, KOIL-MKL and the baselines of the thesis's Table 3.3, for the comparisons with
the float64 references of ``reference_koil``.

``close`` is their tolerance, ``rtol = 1e-3`` and ``atol = 1e-4 · max|reference|`` (the docstring of
``test_koil.py`` explains it).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jcsol.base import Example

RTOL = 1e-3


@jax.jit
def _scan(learner, state, X, labels, order):
    def body(st, i):
        st, info = learner.step(st, Example(X[i], labels[i], jnp.ones((), X.dtype)))
        return st, (info.score, info.loss)

    return jax.lax.scan(body, state, order)


def run_steps(learner, X, y, order, key):
    """Every round's score and loss, and the final state, of ``learner`` over ``X[order]`` (one jitted scan,
    compiled once per learner configuration)."""
    X = jnp.asarray(X)
    state = learner.init(X.shape[1], key, X.dtype)
    final, (scores, losses) = _scan(learner, state, X, jnp.asarray(y, X.dtype), jnp.asarray(order))
    return final, np.asarray(scores), np.asarray(losses)


def close(a, b, scale=None):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = max(np.max(np.abs(b)) if b.size else 0.0, 1e-12) if scale is None else scale
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-4 * scale)
