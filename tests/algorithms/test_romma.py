"""ROMMA (Li, Long, *The Relaxed Online Maximum Margin Algorithm*, Machine Learning, 2002): its update meets
both constraints with equality. ROMMA's step-by-step checks against the float64 reference, with the other linear
baselines, are in ``test_steps_baselines.py``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jcsol
from jcsol.base import Example


def test_romma_update_attains_margin_one_and_keeps_projection():
    """ROMMA's new w satisfies both constraints with equality: w'·w = ‖w‖² and y w'·x = 1."""
    learner = jcsol.ROMMA()
    w = jnp.array([1.0, 2.0, -1.0])
    x = jnp.array([-0.5, -1.0, 2.0])
    state, info = learner.step(
        learner.init(3, jax.random.key(0))._replace(w=w), Example(x, jnp.float32(1.0), jnp.float32(1.0))
    )
    assert float(info.score) <= 0
    np.testing.assert_allclose(float(state.w @ w), float(w @ w), rtol=1e-6)
    np.testing.assert_allclose(float(state.w @ x), 1.0, rtol=1e-6)
