"""Online gradient descent (Zinkevich, *Online Convex Programming and Generalized Infinitesimal Gradient Ascent*,
ICML 2003): its step η/√t counts every round. OGD's step-by-step checks against the float64 reference, with the
other linear baselines, are in ``test_steps_baselines.py``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jcsol
from jcsol.base import Example


def test_ogd_counts_rounds_and_steps_with_inverse_sqrt_t():
    learner = jcsol.OGD(eta=0.5)
    x = jnp.array([1.0, 0.0])
    state = learner.init(2, jax.random.key(0))
    for t, label in enumerate([1.0, 1.0, 1.0, 1.0, -1.0], start=1):
        state, info = learner.step(state, Example(x, jnp.float32(label), jnp.float32(1.0)))
        assert int(state.t) == t
    # rounds 1-3 have margin < 1 (steps η/√1, η/√2, η/√3); round 4 has margin 1.14: no step, but t counts it;
    # round 5 (a negative) steps with η/√5
    expected = 0.5 * (1 + 1 / np.sqrt(2) + 1 / np.sqrt(3) - 1 / np.sqrt(5))
    np.testing.assert_allclose(state.w, [expected, 0.0], rtol=1e-6)
