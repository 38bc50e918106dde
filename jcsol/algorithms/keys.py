"""A PRNG key carried in a learner's state, as raw key data so that every state leaf is a plain array: the
learners' only source of chance (the reservoirs of KOIL, OAM, the bounded kernel learners and the CW-CVaR
family), so that a run is reproducible from ``init``'s key and runs vmap over keys."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def key_data(key) -> jax.Array:
    """The raw ``uint32`` data of a PRNG key (typed or legacy), as a learner's state carries it."""
    key = jnp.asarray(key)
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    return key.astype(jnp.uint32)


def draw(data: jax.Array, shape: tuple[int, ...], dtype) -> tuple[jax.Array, jax.Array]:
    """One round's uniform numbers in ``[0, 1)``: ``(next key data, u)``."""
    next_key, sub = jax.random.split(jax.random.wrap_key_data(data))
    return jax.random.key_data(next_key), jax.random.uniform(sub, shape, dtype)


def uniforms(key: jax.Array, rounds: int, shape: tuple[int, ...], dtype=jnp.float32) -> np.ndarray:
    """The uniform numbers ``(rounds,) + shape`` a learner initialised with ``key`` draws, round by round.

    A learner's ``draw_shape`` gives ``shape``. The tests' NumPy references consume these numbers, so that a
    reference run makes the same random choices as the JAX run.
    """

    def body(data, _):
        data, u = draw(data, shape, dtype)
        return data, u

    return np.asarray(jax.lax.scan(body, key_data(key), None, length=rounds)[1])
