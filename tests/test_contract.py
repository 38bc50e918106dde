"""Every registered learner meets the contract: jit, vmap over a grid, scan, stable state, no retracing, keys,
and a name that is its registry key.

Every check runs over the variants of :data:`jcsol.VARIANTS` in two tiers: the fast one, run by default, over one
variant per algorithm module (:func:`representatives`); the full matrix, every check over every registered variant,
marked ``@pytest.mark.slow`` (``pytest -m slow tests/test_contract.py``), with ids ``full-<variant>``.

The ``variant`` fixture is module-scoped, so pytest runs every check of one variant before the next, and the
engine compiles each variant's runs once: every single-point run here has the same shapes (two permutations of
the first 200 rows of german), so the checks after the first reuse its compiled program.
"""

import functools
import re

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import first_hyperparameter, grid_values

import jcsol
from jcsol.base import Example


def representatives() -> list[str]:
    """The first registered variant of each algorithm module (``jcsol/algorithms/<module>.py``)."""
    first: dict[str, str] = {}
    for name in jcsol.VARIANTS:
        first.setdefault(type(jcsol.by_name(name)).__module__, name)
    return sorted(first.values())


FAST = representatives()


@pytest.fixture(
    scope="module",
    params=[pytest.param(n, id=n) for n in FAST]
    + [pytest.param(n, id=f"full-{n}", marks=pytest.mark.slow) for n in sorted(jcsol.VARIANTS)],
)
def variant(request):
    return request.param


def test_fast_tier_is_one_variant_per_module():
    modules = {type(jcsol.by_name(n)).__module__ for n in jcsol.VARIANTS}
    assert len(FAST) == len(modules) == len({type(jcsol.by_name(n)).__module__ for n in FAST})
    assert set(FAST) <= set(jcsol.VARIANTS)


def test_name_is_the_registry_key(variant):
    assert jcsol.by_name(variant).name == variant
    assert jcsol.by_name(variant.lower()).name == variant


def test_class_names_follow_the_variant_names():
    """A class is its variant's printed name without hyphens, a version numeral in digits (``PA-I`` → ``PA1``)
    unless the numeral is the class's loss-type field (``ACOG-I`` → ``ACOG(loss="I")``)."""
    for name in jcsol.VARIANTS:
        learner = jcsol.by_name(name)
        spelled = re.sub(r"-II(?=-|$)", "2", re.sub(r"-I(?=-|$)", "1", name)).replace("-", "").lower()
        cls = type(learner).__name__
        assert spelled.startswith(cls.lower()), (name, cls)
        if spelled[len(cls) :][:1] in ("1", "2"):
            assert learner.options().get("loss") == {"1": "I", "2": "II"}[spelled[len(cls)]], (name, cls)


@functools.cache
def jitted_step(variant: str):
    """The variant's jitted step, compiled once for the module's checks."""
    return jax.jit(jcsol.by_name(variant).step)


def test_step_is_jittable_and_keeps_state_structure(variant, small):
    X, y = small
    learner = jcsol.by_name(variant)
    state = learner.init(X.shape[1], jax.random.key(0), jnp.float32)
    step = jitted_step(variant)
    for t in range(5):
        ex = Example(jnp.asarray(X[t]), jnp.float32(y[t]), jnp.float32(2.0 if y[t] > 0 else 1.0))
        new, info = step(state, ex)
        eager, eager_info = learner.step(state, ex)
        chex.assert_trees_all_equal_shapes_and_dtypes(new, state)
        chex.assert_trees_all_close(new, eager, rtol=1e-6, atol=1e-7)
        chex.assert_shape(info.score, ())
        chex.assert_type(info.score, jnp.float32)
        chex.assert_trees_all_close(info.score, eager_info.score, rtol=1e-6, atol=1e-7)
        state = new


def test_scan_equals_python_loop(variant, small):
    X, y = small
    learner = jcsol.by_name(variant)
    orders = np.stack([np.random.default_rng(seed).permutation(len(y)) for seed in (1, 2)])
    res = jcsol.run(learner, X, y, perms=orders, record_scores=True)
    order = orders[0]
    rho = (y == -1).sum() / (y == 1).sum()
    state = learner.init(X.shape[1], jax.random.split(jax.random.split(jax.random.key(0))[1], 2)[0], jnp.float32)
    step = jitted_step(variant)
    preds = []
    for i in order:
        ex = Example(jnp.asarray(X[i]), jnp.float32(y[i]), jnp.float32(rho if y[i] > 0 else 1.0))
        state, info = step(state, ex)
        preds.append(1 if info.score >= 0 else -1)
    np.testing.assert_array_equal(np.where(res.scores[0] >= 0, 1, -1), preds)
    # the scanned and the stepped programs compile apart: float32 sums may round differently
    chex.assert_trees_all_close(jax.tree.map(lambda a: a[0], res.states), state, rtol=1e-5, atol=1e-5)


def test_grid_equals_loop_over_grid(variant, small):
    X, y = small
    learner = jcsol.by_name(variant)
    hp = first_hyperparameter(learner)
    if hp is None:
        pytest.skip(f"{variant} has no float hyperparameter")
    name, default = hp
    values = grid_values(learner, name, default)
    grid_res = jcsol.run(learner.replace(**{name: values}), X, y, perms=2, key=5)
    assert grid_res.counts.shape == (3, 2, 4)
    for k, v in enumerate(values):
        single = jcsol.run(learner.replace(**{name: float(v)}), X, y, perms=2, key=5)
        np.testing.assert_array_equal(grid_res.counts[k], single.counts)
        chex.assert_trees_all_close(
            jax.tree.map(lambda a, k=k: a[k], grid_res.states), single.states, rtol=1e-4, atol=1e-5
        )


def test_no_retracing_on_second_call(variant, small, forbid_tracing):
    X, y = small
    learner = jcsol.by_name(variant)
    jcsol.run(learner, X, y, perms=2)
    forbid_tracing()
    hp = first_hyperparameter(learner)
    again = learner.replace(**{hp[0]: grid_values(learner, *hp)[0]}) if hp else learner
    res = jcsol.run(again, X, y, perms=2, key=9)
    assert res.time_compile == 0.0


def test_same_key_same_result_other_key_other_orders(variant, small):
    X, y = small
    learner = jcsol.by_name(variant)
    a = jcsol.run(learner, X, y, perms=2, key=11)
    b = jcsol.run(learner, X, y, perms=2, key=11)
    c = jcsol.run(learner, X, y, perms=2, key=12)
    np.testing.assert_array_equal(a.orders, b.orders)
    np.testing.assert_array_equal(a.counts, b.counts)
    chex.assert_trees_all_equal(a.states, b.states)
    assert not np.array_equal(a.orders, c.orders)
    for row in a.orders:
        np.testing.assert_array_equal(np.sort(row), np.arange(len(y)))
