"""Every registered learner meets the contract: jit, vmap over a grid, scan, stable state, no retracing, keys."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcsol
from jcsol import engine
from jcsol.base import Example

from conftest import first_hyperparameter, grid_values


def _predictions(res):
    """Per-round predictions (+1/-1) of every run, from a result recorded with curve_points = L."""
    cells = np.diff(res.curve, axis=-2, prepend=0).argmax(-1)
    return np.where((cells == 0) | (cells == 2), 1, -1)


def test_step_is_jittable_and_keeps_state_structure(variant, small):
    X, y = small
    learner = jcsol.by_name(variant)
    state = learner.init(X.shape[1], jax.random.key(0), jnp.float32)
    step = jax.jit(learner.step)
    for t in range(5):
        ex = Example(jnp.asarray(X[t]), jnp.float32(y[t]), jnp.float32(2.0 if y[t] > 0 else 1.0))
        new, info = step(state, ex)
        eager, eager_info = learner.step(state, ex)
        assert jax.tree.structure(new) == jax.tree.structure(state)
        for a, b, c in zip(jax.tree.leaves(new), jax.tree.leaves(state), jax.tree.leaves(eager)):
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_allclose(a, c, rtol=1e-6, atol=1e-7)
        assert info.score.shape == () and info.score.dtype == jnp.float32
        np.testing.assert_allclose(info.score, eager_info.score, rtol=1e-6, atol=1e-7)
        state = new


def test_scan_equals_python_loop(variant, small):
    X, y = small
    learner = jcsol.by_name(variant)
    order = np.random.default_rng(1).permutation(len(y))
    res = jcsol.run(learner, X, y, perms=order[None], curve_points=len(order))
    rho = (y == -1).sum() / (y == 1).sum()
    state = learner.init(X.shape[1], jax.random.split(jax.random.split(jax.random.key(0))[1], 1)[0], jnp.float32)
    step = jax.jit(learner.step)
    preds = []
    for i in order:
        ex = Example(jnp.asarray(X[i]), jnp.float32(y[i]), jnp.float32(rho if y[i] > 0 else 1.0))
        state, info = step(state, ex)
        preds.append(1 if info.score >= 0 else -1)
    np.testing.assert_array_equal(_predictions(res)[0], preds)
    for a, b in zip(jax.tree.leaves(res.states), jax.tree.leaves(state)):
        np.testing.assert_allclose(np.asarray(a)[0], b, rtol=1e-5, atol=1e-6)


def test_grid_equals_loop_over_grid(variant, small):
    X, y = small
    learner = jcsol.by_name(variant)
    hp = first_hyperparameter(learner)
    if hp is None:
        pytest.skip(f"{variant} has no float hyperparameter")
    name, default = hp
    values = grid_values(learner, name, default)
    grid_res = jcsol.run(learner.replace(**{name: values}), X, y, perms=3, key=5)
    assert grid_res.counts.shape == (3, 3, 4)
    for k, v in enumerate(values):
        single = jcsol.run(learner.replace(**{name: float(v)}), X, y, perms=3, key=5)
        np.testing.assert_array_equal(grid_res.counts[k], single.counts)
        for a, b in zip(jax.tree.leaves(grid_res.states), jax.tree.leaves(single.states)):
            np.testing.assert_allclose(np.asarray(a)[k], b, rtol=1e-5, atol=1e-6)


def test_no_retracing_on_second_call(variant, small):
    X, y = small
    learner = jcsol.by_name(variant)
    jcsol.run(learner, X, y, perms=2)
    traces = engine.trace_count()
    hp = first_hyperparameter(learner)
    again = learner.replace(**{hp[0]: grid_values(learner, *hp)[0]}) if hp else learner
    res = jcsol.run(again, X, y, perms=2, key=9)
    assert engine.trace_count() == traces
    assert res.time_compile == 0.0


def test_same_key_same_result_other_key_other_orders(variant, small):
    X, y = small
    learner = jcsol.by_name(variant)
    a = jcsol.run(learner, X, y, perms=2, key=11)
    b = jcsol.run(learner, X, y, perms=2, key=11)
    c = jcsol.run(learner, X, y, perms=2, key=12)
    np.testing.assert_array_equal(a.orders, b.orders)
    np.testing.assert_array_equal(a.counts, b.counts)
    for u, v in zip(jax.tree.leaves(a.states), jax.tree.leaves(b.states)):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a.orders, c.orders)
    for row in a.orders:
        np.testing.assert_array_equal(np.sort(row), np.arange(len(y)))
