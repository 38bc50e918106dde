"""Confidence-weighted learning, Variance form (Dredze, Crammer, Pereira, ICML 2008; jcsol/algorithms/cw_var.py).

* α against a numerical root of the active constraint (``scipy.optimize.brentq``) on random inputs, both
  branches of the cancellation-free form.
* after a full-covariance round with α > 0 the constraint is active: ``y μ_{t+1}·x = φ xᵀΣ_{t+1}x``, and the
  precision grew by ``2αφ x xᵀ``.
* every covariance form step by step against the float64 NumPy reference (tests/algorithms/reference_cw_var.py) on the
  shipped german set, with the loan-amount costs of the CW-CVaR benchmark: predictions equal at every round,
  scores and final means equal up to float32 rounding, the example costs summed over the mistakes equal.
* the "project" diagonal is the CW-CVaR family's diagonal update with unit costs and ω = φ.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference_cw_var as reference
from scipy import optimize
from scipy.stats import norm

import jcsol
from jcsol.algorithms.cw_cvar import CWNoBuffer
from jcsol.algorithms.cw_var import CWVar, variance_alpha
from jcsol.base import Example


def _active(alpha, m, v, phi):
    """The constraint at the new parameters, LHS − RHS: M + αV − φ V/(1 + 2αφV) (ICML 2008, Eqs. 6–7)."""
    return m + alpha * v - phi * v / (1 + 2 * alpha * phi * v)


def test_alpha_is_the_root_of_the_active_constraint():
    rng = np.random.default_rng(3)
    n = 400
    m = rng.normal(0, 3, n)
    v = np.exp(rng.uniform(np.log(1e-3), np.log(10), n))
    phi = norm.ppf(rng.choice([0.55, 0.7, 0.9, 0.99], n))
    with jax.enable_x64(True):
        got = np.asarray(variance_alpha(jnp.asarray(m), jnp.asarray(v), jnp.asarray(phi)))
    negative_b = 0
    for i in range(n):
        if m[i] >= phi[i] * v[i]:
            assert got[i] == 0
            continue
        negative_b += 1 + 2 * phi[i] * m[i] < 0
        hi = 1.0
        while _active(hi, m[i], v[i], phi[i]) < 0:
            hi *= 2
        root = optimize.brentq(_active, 0.0, hi, args=(m[i], v[i], phi[i]), xtol=1e-300, rtol=1e-14)
        assert got[i] == pytest.approx(root, rel=1e-10)
    assert negative_b > 20
    assert float(variance_alpha(1.0, 0.0, 0.5)) == 0.0  # a zero row


def test_full_update_makes_the_constraint_active():
    rng = np.random.default_rng(1)
    d = 6
    learner = CWVar(eta=0.8)
    phi = norm.ppf(0.8)
    with jax.enable_x64(True):
        state = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), learner.init(d, jax.random.key(0)))
        checked = 0
        for _ in range(30):
            x, y = rng.normal(size=d), float(rng.choice([-1, 1]))
            new, info = learner.step(state, Example(jnp.asarray(x), jnp.float64(y), jnp.float64(1.0)))
            old_sigma = np.asarray(state.root @ state.root.T)
            sigma = np.asarray(new.root @ new.root.T)
            if info.loss > 0:
                checked += 1
                assert y * float(new.mu @ x) == pytest.approx(phi * x @ sigma @ x, rel=1e-9)
                alpha = float(variance_alpha(y * float(state.mu @ x), x @ old_sigma @ x, phi))
                np.testing.assert_allclose(
                    np.linalg.inv(sigma) - np.linalg.inv(old_sigma),
                    2 * alpha * phi * np.outer(x, x),
                    rtol=1e-6,
                    atol=1e-8,
                )
            else:
                np.testing.assert_array_equal(new.mu, state.mu)
            state = new
    assert checked > 5


@pytest.fixture(scope="module")
def german_costs(german):
    X, y = german
    raw, _ = jcsol.datasets.load("german", normalize=False)
    return X, y, np.where(y > 0, 5.0, 1.0) * raw[:, 3]  # 5 × or 1 × the credit amount


ETAS = [0.7, 0.95]


@pytest.mark.parametrize(
    ("name", "covariance"), [("CW-var", "full"), ("CW-var-project", "project"), ("CW-var-drop", "drop")]
)
def test_learner_matches_float64_reference_on_german(name, covariance, german_costs):
    X, y, costs = german_costs
    learner = jcsol.by_name(name, eta=ETAS)
    assert learner.name == name
    assert learner.covariance == covariance
    res = jcsol.run(learner, X, y, perms=2, costs=costs, record_scores=True, key=3)
    X64 = X.astype(np.float32).astype(np.float64)
    for k in range(2):
        for p in range(2):
            ref = reference.CWVar(X.shape[1], eta=ETAS[k], covariance=covariance)
            want = reference.run(ref, X64, y, res.orders[p])
            got = res.scores[k, p]
            np.testing.assert_array_equal(got >= 0, want >= 0)
            np.testing.assert_allclose(got, want, rtol=0, atol=5e-5 * np.abs(want).max())
            np.testing.assert_allclose(
                np.asarray(res.states.mu)[k, p], ref.mu, rtol=0, atol=1e-4 * np.abs(ref.mu).max()
            )
            root = np.asarray(res.states.root)[k, p]
            sigma = root @ root.T if covariance == "full" else root
            np.testing.assert_allclose(sigma, ref.sigma, rtol=0, atol=1e-4 * np.abs(ref.sigma).max())
    labels = y[res.orders]
    wrong = (res.scores >= 0) != (labels > 0)
    np.testing.assert_allclose(res.mistake_cost, (wrong * costs[res.orders]).sum(-1), rtol=1e-5)


def test_the_diagonal_forms_differ_and_project_is_the_cvar_diagonal(german_costs):
    X, y, _ = german_costs
    ones = np.ones(len(y))
    eta = 0.9
    runs = {
        c: jcsol.run(CWVar(eta=eta, covariance=c), X, y, perms=2, costs=ones, key=1, record_scores=True)
        for c in ("project", "drop")
    }
    # the CW-CVaR update with c = 1 and ω = φ is the Variance update (its diagonal is the projected one)
    cvar = CWNoBuffer(epsilon=1 - eta, assumption="gaussian", diagonal=True)
    omega_g = float(jcsol.algorithms.cw_cvar.omega(1 - eta, "gaussian"))
    phi = norm.ppf(eta)
    same = jcsol.run(
        CWVar(eta=float(norm.cdf(omega_g)), covariance="project"), X, y, perms=2, costs=ones, key=1, record_scores=True
    )
    other = jcsol.run(cvar, X, y, perms=2, costs=ones, key=1, record_scores=True)
    np.testing.assert_array_equal(same.scores >= 0, other.scores >= 0)
    np.testing.assert_allclose(same.scores, other.scores, rtol=0, atol=1e-5 * np.abs(other.scores).max())
    assert omega_g != pytest.approx(phi)
    assert not np.allclose(runs["project"].scores, runs["drop"].scores, rtol=1e-3)
    for res in runs.values():
        assert np.all(np.asarray(res.states.root) > 0)


def test_validation():
    with pytest.raises(ValueError, match="eta"):
        CWVar(eta=0.5)
    with pytest.raises(ValueError, match="covariance"):
        CWVar(covariance="diag")
