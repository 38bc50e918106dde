"""One PRNG key carried in a learner's state (jcsol.algorithms.keys), shared by KOIL and the CW-CVaR family."""

import jax
import numpy as np

from jcsol.algorithms import KOIL, CWCVaR
from jcsol.algorithms.keys import draw, key_data, uniforms


def test_typed_and_legacy_keys_give_the_same_state_key():
    typed, legacy = jax.random.key(7), jax.random.PRNGKey(7)
    np.testing.assert_array_equal(key_data(typed), key_data(legacy))
    np.testing.assert_array_equal(key_data(np.asarray(legacy)), np.asarray(legacy))
    assert key_data(typed).dtype == np.uint32
    for learner in (KOIL(), CWCVaR()):
        np.testing.assert_array_equal(learner.init(3, typed).key, key_data(legacy))


def test_uniforms_are_the_draws_round_by_round():
    data, got = key_data(jax.random.key(1)), []
    for _ in range(3):
        data, u = draw(data, (2,), np.float32)
        got.append(np.asarray(u))
    np.testing.assert_array_equal(uniforms(jax.random.key(1), 3, (2,)), np.stack(got))
