"""Example-dependent costs reach the learners and the measures; recorded scores are the pre-update scores."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcsol
from jcsol import metrics
from jcsol.base import Example


def test_recorded_scores_are_the_pre_update_scores(small):
    X, y = small
    learner = jcsol.ACOG(eta=[0.5, 5.0], diagonal=True)
    res = jcsol.run(learner, X, y, perms=2, record_scores=True, chunk_size=64, curve_points=len(y))
    assert res.scores.shape == (2, 2, len(y))
    cells = np.diff(res.curve, axis=-2, prepend=0).argmax(-1)
    np.testing.assert_array_equal(res.scores >= 0, (cells == 0) | (cells == 2))
    point = learner.replace(eta=5.0)
    state = point.init(X.shape[1], jax.random.key(0))
    rho = (y < 0).sum() / (y > 0).sum()
    for t, i in enumerate(res.orders[0][:50]):
        r = jnp.float32(rho if y[i] > 0 else 1.0)
        state, info = point.step(state, Example(jnp.asarray(X[i]), jnp.float32(y[i]), r, r))
        np.testing.assert_allclose(res.scores[1, 0, t], info.score, rtol=1e-5, atol=1e-6)


def test_mistake_cost_sums_example_costs_over_mistakes(small):
    X, y = small
    costs = np.random.default_rng(3).uniform(0, 10, len(y))
    res = jcsol.run(jcsol.COG(eta=[0.1, 10.0]), X, y, perms=3, costs=costs, record_scores=True)
    labels = y[res.orders]
    wrong = (res.scores >= 0) != (labels > 0)
    np.testing.assert_allclose(res.mistake_cost, (wrong * costs[res.orders]).sum(-1), rtol=1e-5)
    np.testing.assert_array_equal(res.measure("example_cost"), res.mistake_cost)
    assert res.best("example_cost").index == (int(np.argmin(res.mistake_cost.mean(-1))),)


def test_mistake_cost_keeps_costs_below_the_sums_last_place(small):
    """A first mistake of cost 1e8 (float32's last place there: 8), then costs below 1: summed plainly in
    float32 the later ones are lost; compensated, the total is the exact sum rounded to float32."""
    X, y = small
    y = y.copy()
    y[0] = -1  # round 0 scores 0 (zero weights), predicted +1: a false alarm
    costs = np.random.default_rng(4).uniform(0, 1, len(y))
    costs[0] = 1e8
    res = jcsol.run(jcsol.COG(), X, y, perms=np.arange(len(y))[None], costs=costs, record_scores=True, chunk_size=7)
    wrong = (res.scores[0] >= 0) != (y > 0)
    assert wrong[0]
    assert wrong.sum() > 20
    exact = (wrong * costs.astype(np.float32).astype(np.float64)).sum()
    assert res.mistake_cost[0] == np.float32(exact)
    plain = np.float32(0)
    for cost in costs.astype(np.float32)[wrong]:
        plain = np.float32(plain + cost)
    assert plain == np.float32(1e8) != res.mistake_cost[0]


def test_default_cost_is_the_class_weight(small):
    X, y = small
    res = jcsol.run(jcsol.COG(), X, y, perms=2, objective=jcsol.Cost(c_p=0.8, c_n=0.2))
    # ρ_t = c_p/c_n = 4 for a missed positive, 1 for a false alarm
    np.testing.assert_allclose(res.mistake_cost, 4 * res.fn + res.fp, rtol=1e-6)


def test_costs_are_checked(small):
    X, y = small
    with pytest.raises(ValueError, match="one value per example"):
        jcsol.run(jcsol.COG(), X, y, perms=1, costs=np.ones(3))
    with pytest.raises(ValueError, match="costs must be >= 0"):
        jcsol.run(jcsol.COG(), X, y, perms=1, costs=-np.ones(len(y)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        jcsol.run(jcsol.COG(), X, y, perms=1, costs=np.full(len(y), np.nan))


def test_cvar_is_the_mean_of_the_lowest_tail():
    values = np.array([[5.0, -1.0, 3.0, -4.0, 0.0, 2.0, 1.0, 7.0, 6.0, 4.0]])
    np.testing.assert_allclose(metrics.cvar(values, 0.2), [-2.5])
    np.testing.assert_allclose(metrics.cvar(values, 0.05), [-4.0])
    np.testing.assert_allclose(metrics.cvar(values, 1.0), [values.mean()])
