"""The CW-CVaR family of Ali, Collins-Thompson, *Robust Cost-Sensitive Confidence-Weighted Classification*
(jcsol/algorithms/cw_cvar.py).

* ω_ε of each margin-distribution assumption against a direct numerical evaluation of its definition: the
  CVaR of the standard normal by quadrature of its quantile function (Gaussian); for the symmetric,
  symmetric-unimodal and arbitrary families, the worst-case CVaR over the family computed numerically (an LP
  over a fine grid of the family's extreme members, see ``_worst_case_omega``), not from the paper's bounds;
  continuity at the breakpoints.
* λ of Eq. 12 against a numerical root of Eq. 11 (``scipy.optimize.brentq``) on random inputs, and the
  constraint it makes active.
* the two readings of the cost's role against the paper's description of its Fig. 2; the c → 0⁺ limit
  against λ·c at a tiny positive cost.
* the cost buffer (reservoir, c* as the top-τ mean or the τ-quantile) against NumPy.
* every learner step by step against the float64 NumPy reference (tests/algorithms/reference_cw_cvar.py) on the shipped
  german set with the loan-amount costs (both readings, both buffer statistics, zero costs skipped or
  taken to the limit): predictions equal at every round, scores and final means equal up to
  float32 rounding.
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference_cw_cvar as reference
from scipy import integrate, optimize, stats

import jcsol
from jcsol.algorithms import cw_cvar
from jcsol.algorithms.cw_cvar import (
    CWCosts,
    CWCVaR,
    CWNoBuffer,
    CWRobust,
    buffer_add,
    buffer_cvar,
    buffer_quantile,
    cvar_lambda,
    omega,
    zero_cost_limit,
)
from jcsol.base import Example

EPSILONS = [0.01, 0.05, 0.1, 0.2, 0.3, 1 / 3, 0.4, 0.5, 0.6, 2 / 3, 0.7, 0.8, 0.9, 0.99]


# -- ω_ε ------------------------------------------------------------------------------------------------------


def _gaussian_cvar_magnitude(eps: float) -> float:
    """−CVaR_ε of N(0, 1): −(1/ε)∫_0^ε Φ^{-1}(u) du, by quadrature of the quantile function."""
    value, _ = integrate.quad(stats.norm.ppf, 0.0, eps, limit=200)
    return -value / eps


_POS = np.geomspace(1e-3, 40.0, 400)


def _family(name: str):
    """Extreme members of a family (mean 0): ``h(r)`` = E(r − X)₊ of each, and the moment constraints."""
    if name == "symmetric":  # ±a with equal mass (a = 0: the point 0)
        a = np.concatenate([[0.0], _POS])
        return (lambda r: 0.5 * (np.maximum(r + a, 0) + np.maximum(r - a, 0))), np.vstack([np.ones_like(a), a**2])
    if name == "unimodal":  # U[−a, a] (a = 0: the point 0), variance a²/3
        a = np.concatenate([[0.0], _POS])

        def h(r):
            mid = (r + a) ** 2 / (4 * np.where(a > 0, a, 1.0))
            return np.where(r >= a, r, np.where(r <= -a, 0.0, mid))

        return h, np.vstack([np.ones_like(a), a**2 / 3])
    if name == "arbitrary":  # point masses, mean 0 imposed
        p = np.concatenate([-_POS[::-1], [0.0], _POS])
        return (lambda r: np.maximum(r - p, 0)), np.vstack([np.ones_like(p), p, p**2])
    raise ValueError(name)


def _worst_case_omega(eps: float, name: str) -> float:
    """−inf over the family (mean 0, variance 1) of CVaR_ε = (1/ε)·max_r [ε r − E(r − X)₊].

    inf_F max_r = max_r inf_F (the objective is linear in F, concave in r), and for fixed r the sup of
    E(r − X)₊ over mixtures of the extreme members under the moment constraints is an LP (scipy HiGHS).
    """
    h, constraints = _family(name)
    rhs = np.zeros(len(constraints))
    rhs[0], rhs[-1] = 1.0, 1.0

    def sup_shortfall(r):
        res = optimize.linprog(-h(r), A_eq=constraints, b_eq=rhs, bounds=(0, None), method="highs")
        assert res.status == 0
        return -res.fun

    res = optimize.minimize_scalar(
        lambda r: sup_shortfall(r) - eps * r, bounds=(-30.0, 30.0), method="bounded", options={"xatol": 1e-9}
    )
    return res.fun / eps


@pytest.mark.parametrize("assumption", ["symmetric", "unimodal", "arbitrary"])
def test_omega_is_the_numerical_worst_case_cvar(assumption):
    eps = [0.01, 0.05, 0.2, 1 / 3, 0.5, 0.6, 2 / 3, 0.8, 0.99]  # each piece and every breakpoint
    got = np.asarray(omega(jnp.asarray(eps, jnp.float32), assumption))
    want = np.array([_worst_case_omega(e, assumption) for e in eps])
    # the grid of members makes the LP's value ~1e-4 below the worst case
    np.testing.assert_allclose(got, want, rtol=3e-4)


def test_omega_gaussian_is_the_cvar_of_the_standard_normal():
    got = np.asarray(omega(jnp.asarray(EPSILONS, jnp.float32), "gaussian"))
    want = np.array([_gaussian_cvar_magnitude(e) for e in EPSILONS])
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # Monte Carlo as a second, cruder look: the mean of the lowest ε-fraction of 10⁶ draws
    draws = np.sort(np.random.default_rng(0).standard_normal(200_000))
    for e, g in zip(EPSILONS[1:6], got[1:6]):
        assert abs(-draws[: int(e * draws.size)].mean() - g) < 0.02 * g


@pytest.mark.parametrize(
    ("assumption", "breaks"),
    [("symmetric", [0.5]), ("unimodal", [1 / 3, 2 / 3]), ("gaussian", [0.5]), ("arbitrary", [0.5])],
)
def test_omega_is_continuous_and_decreasing(assumption, breaks):
    with jax.enable_x64(True):
        for b in breaks:
            left, right = (float(omega(jnp.float64(b + s * 1e-9), assumption)) for s in (-1, 1))
            assert abs(left - right) < 1e-7 * left
        grid = np.linspace(0.005, 0.995, 397)
        values = np.asarray(omega(jnp.asarray(grid), assumption))
        assert np.all(np.diff(values) < 0)
    # the literal reading of the symmetric row of Table I (√(1−ε)/√(2ε) above ½) jumps at ½; ours does not
    literal = math.sqrt(1 - 0.5) / math.sqrt(2 * 0.5)
    assert abs(literal - float(omega(0.5, "symmetric"))) > 0.25


def test_omega_ordering_of_the_assumptions():
    """Fewer assumptions, a larger worst case: Gaussian <= symmetric-unimodal <= symmetric <= arbitrary at small ε."""
    eps = jnp.asarray([0.01, 0.05, 0.1, 0.2], jnp.float32)
    g, u, s, a = (np.asarray(omega(eps, k)) for k in ("gaussian", "unimodal", "symmetric", "arbitrary"))
    assert np.all(g < u)
    assert np.all(u < s)
    assert np.all(s < a)
    with pytest.raises(ValueError, match="assumption must be one of"):
        omega(0.1, "laplace")


# -- λ ----------------------------------------------------------------------------------------------------------


def _eq11(lam, m, v, c, w):
    """Eq. 11 as printed, LHS − RHS."""
    return c * m + c * c * lam * v - (w * v - w * v * v * 2 * lam * w / (1 + 2 * lam * w * v))


def test_lambda_is_the_root_of_eq11():
    rng = np.random.default_rng(7)
    n = 400
    m = rng.normal(0, 2, n)
    v = np.exp(rng.uniform(np.log(1e-3), np.log(10), n))
    c = np.exp(rng.uniform(np.log(1e-2), np.log(1e3), n))
    eps = rng.choice([0.01, 0.05, 0.1, 0.5, 0.9, 0.99], n)
    kinds = rng.choice(cw_cvar.ASSUMPTIONS, n)
    w = np.select(
        [kinds == k for k in cw_cvar.ASSUMPTIONS], [np.asarray(omega(jnp.asarray(eps), k)) for k in cw_cvar.ASSUMPTIONS]
    ).astype(np.float64)
    with jax.enable_x64(True):
        lam64 = np.asarray(cvar_lambda(jnp.asarray(m), jnp.asarray(v), jnp.asarray(c), jnp.asarray(w)))
    lam32 = np.asarray(cvar_lambda(*(jnp.asarray(a, jnp.float32) for a in (m, v, c, w))))
    n_active = 0
    for i in range(n):
        if _eq11(0.0, m[i], v[i], c[i], w[i]) >= 0:  # constraint met at λ = 0: no positive root
            assert lam64[i] == 0
            assert lam32[i] == 0
            continue
        n_active += 1
        hi = 1.0
        while _eq11(hi, m[i], v[i], c[i], w[i]) < 0:
            hi *= 2
        root = optimize.brentq(_eq11, 0.0, hi, args=(m[i], v[i], c[i], w[i]), xtol=1e-300, rtol=1e-14)
        assert lam64[i] == pytest.approx(root, rel=1e-10)
        assert lam32[i] == pytest.approx(root, rel=1e-4)
    assert 100 < n_active < n


def test_update_makes_the_constraint_active():
    """After a full-covariance round with λ > 0: c·y μ_{t+1}·x = ω x·Σ_{t+1}x (Eq. 11)."""
    rng = np.random.default_rng(1)
    d = 6
    learner = CWNoBuffer(epsilon=0.1, assumption="unimodal")
    state = learner.init(d, jax.random.key(0))
    with jax.enable_x64(True):
        w = float(omega(jnp.float64(0.1), "unimodal"))
        state = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), state)
        checked = 0
        for _ in range(30):
            x, y, c = rng.normal(size=d), float(rng.choice([-1, 1])), float(rng.uniform(0.1, 5))
            new, info = learner.step(state, Example(jnp.asarray(x), jnp.float64(y), jnp.float64(1.0), jnp.float64(c)))
            sigma = np.asarray(new.root @ new.root.T)
            if info.loss > 0:
                checked += 1
                assert c * y * float(new.mu @ x) == pytest.approx(w * x @ sigma @ x, rel=1e-9)
                # the precision grew along x only: Σ_{t+1}^{-1} − Σ_t^{-1} is rank one, ∝ x xᵀ
                diff = np.linalg.inv(sigma) - np.linalg.inv(np.asarray(state.root @ state.root.T))
                np.testing.assert_allclose(diff, diff[0, 0] / x[0] ** 2 * np.outer(x, x), rtol=1e-6, atol=1e-8)
            else:
                np.testing.assert_array_equal(new.mu, state.mu)
            state = new
    assert checked > 5


def test_fig2_ratio_fits_the_scaled_reading_not_the_printed_one():
    """The paper's Fig. 2: λ_gaussian/λ_arbitrary at M̄ = 0, v = 1 for costs c = 0.5 … 10; its text says the
    ratio is near 1 for high costs and further from 1 as the cost falls. As printed the ratio moves the other
    way; with the scaled reading (ω → ωc²) it moves as described, and the two are mirror images
    (ratio_scaled(c) = ratio_printed(1/c))."""
    costs = np.array([0.5, 1.0, 2.0, 5.0, 10.0])
    with jax.enable_x64(True):
        for eps in (0.01, 0.05, 0.2):
            wg, wa = (float(omega(jnp.float64(eps), k)) for k in ("gaussian", "arbitrary"))

            def ratio(c, scale, wg=wg, wa=wa):
                c = jnp.asarray(c, jnp.float64)
                s = c * c if scale else 1.0
                return np.asarray(cvar_lambda(0.0, 1.0, c, wg * s) / cvar_lambda(0.0, 1.0, c, wa * s))

            printed, scaled = ratio(costs, False), ratio(costs, True)
            assert np.all(np.diff(printed) < 0)
            assert np.all(np.diff(scaled) > 0)
            assert np.all((printed < 1) & (scaled < 1))
            np.testing.assert_allclose(scaled, ratio(1.0 / costs, False), rtol=1e-12)
            assert abs(1 - scaled[-1]) < 0.05 < abs(1 - scaled[0])  # near 1 at c = 10, not at c = 0.5


def test_zero_cost_limit_is_the_limit_of_the_update():
    """λ·c at c = 1e-9 (float64) equals the limit's mean step; λ itself grows like 1/c as printed."""
    rng = np.random.default_rng(3)
    with jax.enable_x64(True):
        for _ in range(50):
            m, v = float(rng.normal(0, 2)), float(np.exp(rng.uniform(-3, 2)))
            w = float(omega(jnp.float64(rng.choice([0.05, 0.3, 0.9])), "arbitrary"))
            c = 1e-9
            u, collapse = zero_cost_limit(m, v, "printed")
            assert bool(collapse)
            assert c * float(cvar_lambda(m, v, c, w)) == pytest.approx(float(u), rel=1e-6)
            assert float(cvar_lambda(m, v, c, w)) > 1e6
            u, collapse = zero_cost_limit(m, v, "scaled")
            assert not bool(collapse)
            assert c * float(cvar_lambda(m, v, c, w * c * c)) == pytest.approx(float(u), rel=1e-6, abs=1e-6)
    # one full-covariance round at c = 0: the mean moves by u·y·Σx, the variance along x is gone (as printed)
    x, mu0 = np.array([0.3, -1.2, 0.5]), np.array([0.2, 0.4, -0.1])
    with jax.enable_x64(True):
        learner = CWNoBuffer(zero_cost="limit")
        state = learner.init(3, jax.random.key(0))._replace(mu=jnp.asarray(mu0))
        new, _ = learner.step(state, Example(jnp.asarray(x), jnp.float64(1.0), jnp.float64(1.0), jnp.float64(0.0)))
        u, _ = zero_cost_limit(float(mu0 @ x), float(x @ x), "printed")
        np.testing.assert_allclose(new.mu, mu0 + float(u) * x, rtol=1e-12)
        assert float(x @ new.root @ new.root.T @ x) < 1e-12 * float(x @ x)
        skipped, _ = CWNoBuffer().step(
            state, Example(jnp.asarray(x), jnp.float64(1.0), jnp.float64(1.0), jnp.float64(0.0))
        )
        np.testing.assert_array_equal(skipped.mu, mu0)
    with pytest.raises(ValueError, match="zero_cost"):
        CWNoBuffer(zero_cost="zero")
    with pytest.raises(ValueError, match="reading"):
        CWCVaR(reading="std")
    with pytest.raises(ValueError, match="buffer_statistic"):
        CWCVaR(buffer_statistic="median")
    assert (
        CWCVaR(reading="scaled", buffer_statistic="quantile", zero_cost="limit", diagonal=True).name
        == "CW-CVaR-diag-scaled-quantile-limit"
    )


# -- the cost buffer --------------------------------------------------------------------------------------------


def test_buffer_cvar_is_the_top_fraction_mean():
    rng = np.random.default_rng(2)
    size = 32
    for trial in range(30):
        n = int(rng.integers(1, size + 1)) if trial % 3 else size
        seen = n if trial % 3 else size + int(rng.integers(1, 100))  # a full reservoir: c* over the buffer
        values = rng.choice([1.0, 2.0, 5.0, 7.5, 40.0], n) * rng.choice([1.0, 1.0, rng.uniform(0.5, 2)], n)
        tau = float(rng.choice([0.05, 0.1, 0.3, 0.77, 1.0]))
        buf = np.full(size, -np.inf, np.float32)
        buf[:n] = np.sort(values.astype(np.float32))[::-1]
        got = float(buffer_cvar(jnp.asarray(buf), jnp.int32(seen), jnp.float32(tau)))
        assert got == pytest.approx(reference.cvar_top(list(buf[:n].astype(np.float64)), tau), rel=1e-5)
        want = reference.quantile_top(list(buf[:n].astype(np.float64)), tau)
        assert float(buffer_quantile(jnp.asarray(buf), jnp.int32(seen), jnp.float32(tau))) == want
    # ties at the top give c* = the top cost exactly
    buf = jnp.asarray([3.0] * 7 + [1.0] * 93, jnp.float32)
    assert float(buffer_cvar(buf, jnp.int32(100), jnp.float32(0.05))) == 3.0


def test_reservoir_keeps_everything_then_a_uniform_sample():
    size, n, n_keys = 8, 48, 3000
    costs = jnp.arange(1, n + 1, dtype=jnp.float32)

    def fill(key):
        def body(carry, c):
            buf, seen = carry
            buf, seen = buffer_add(buf, seen, key, c)
            return (buf, seen), buf

        init = (jnp.full(size, -jnp.inf, jnp.float32), jnp.zeros((), jnp.int32))
        return jax.lax.scan(body, init, costs)[1]

    keys = jax.vmap(lambda k: jax.random.key_data(k))(jax.random.split(jax.random.key(4), n_keys)).astype(jnp.uint32)
    history = np.asarray(jax.jit(jax.vmap(fill))(keys))  # (keys, rounds, size)
    # sorted, without duplicates, a subset of what was seen
    assert np.all(history[..., :-1] >= history[..., 1:])
    assert np.all(np.diff(np.where(np.isfinite(history), history, -1e9 * np.arange(size)), axis=-1) < 0)
    for t in (3, size - 1, n - 1):
        seen = history[:, t]
        assert np.all(np.isin(seen[np.isfinite(seen)], np.arange(1, t + 2)))
    # exact while not full
    np.testing.assert_array_equal(history[:, size - 1], np.broadcast_to(np.arange(size, 0, -1), (n_keys, size)))
    # then every cost is kept with probability size/n
    final = history[:, -1]
    assert np.all(np.isfinite(final))
    freq = np.array([(final == c).any(-1).mean() for c in range(1, n + 1)])
    p = size / n
    assert np.max(np.abs(freq - p)) < 5 * math.sqrt(p * (1 - p) / n_keys)


def test_epsilon_follows_the_buffer():
    """ε = α when c* <= c(x_t), β otherwise (Eq. 13), c(x_t) in the buffer first. With x_t = e_t, the margin
    mean is 0 and the variance 1 before each round, so the round's loss ωv − cM̄ is the ω it used."""
    learner = CWCVaR(alpha=0.01, beta=0.9, tau=0.2, assumption="arbitrary", buffer_size=16)
    state = learner.init(5, jax.random.key(0))
    step = jax.jit(learner.step)
    w_alpha, w_beta = (float(omega(e, "arbitrary")) for e in (0.01, 0.9))
    # buffers {5}, {5,1}, {5,5,1}, {7,5,5,1}, {7,6,5,5,1}; τn = 0.2…1, so c* = the largest cost
    for t, (c, high) in enumerate([(5.0, True), (1.0, False), (5.0, True), (7.0, True), (6.0, False)]):
        x = jnp.zeros(5).at[t].set(1.0)
        state, info = step(state, Example(x, jnp.float32(1.0), jnp.float32(1.0), jnp.float32(c)))
        assert float(info.loss) == pytest.approx(w_alpha if high else w_beta, rel=1e-6)
    np.testing.assert_array_equal(np.asarray(state.costs[:6]), [7, 6, 5, 5, 1, -np.inf])
    assert int(state.seen) == 5


@pytest.mark.parametrize(
    "learner",
    [CWCVaR(tau=0.2, buffer_size=4), CWRobust(tau=0.2, buffer_size=4), CWCosts(relative=True)],
    ids=["CW-CVaR", "CW-robust", "CW-costs"],
)
def test_the_count_of_rounds_stops_at_the_int32_maximum(learner):
    """A live stream has no end: a count of rounds one short of 2**31 - 1 reaches it and stays there, where it
    wrapped to -2**31 (the reservoir then took every cost, CW-costs' mean cost turned negative and its updates
    stopped)."""
    from jcsol.base import COUNT_MAX

    state = learner.init(3, jax.random.key(0))
    state = state._replace(seen=jnp.asarray(COUNT_MAX - 1, jnp.int32))
    step = jax.jit(learner.step)
    for t in range(3):
        x = jnp.zeros(3).at[t].set(1.0)
        state, info = step(state, Example(x, jnp.float32(1.0), jnp.float32(1.0), jnp.float32(2.0 + t)))
        assert np.isfinite(float(info.loss))
    assert int(state.seen) == COUNT_MAX
    assert np.linalg.norm(np.asarray(state.mu)) > 0  # the rounds still update
    assert np.isfinite(np.asarray(state.mu)).all()
    assert np.isfinite(np.asarray(state.root)).all()


@jax.jit
def _scan_rows(learner, state, rows, rho):
    def body(state, row):
        x, label, cost = row
        state, info = learner.step(state, Example(x, label, rho, cost))
        return state, (info.score, info.loss)

    return jax.lax.scan(body, state, rows)


def _scan(learner, X, y, costs, rho=1.0):
    """One pass of ``learner.step`` over the rows, as one jitted ``lax.scan``: scores, losses, final state
    (compiled once per static configuration and number of rows)."""
    X = jnp.asarray(X, jnp.float32)
    state = learner.init(X.shape[1], jax.random.key(0))
    state, (scores, losses) = _scan_rows(
        learner, state, (X, jnp.asarray(y, jnp.float32), jnp.asarray(costs, jnp.float32)), jnp.float32(rho)
    )
    return np.asarray(scores), np.asarray(losses), state


# -- learners against the reference -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def german_costs(german):
    X, y = german
    raw, _ = jcsol.datasets.load("german", normalize=False)
    amount = raw[:, 3]  # credit amount, in hundreds
    return X, y, np.where(y > 0, 5.0, 1.0) * amount


def _some_zero(costs):
    """The loan-amount costs with every seventh one set to 0."""
    return np.where(np.arange(len(costs)) % 7 == 3, 0.0, costs)


A2, B2 = [0.01, 0.1], [0.3, 0.9]
NU = np.linspace(-0.5, 0.5, 24)
UPS = np.where(np.arange(24) % 3 == 0, np.inf, 0.5)
KAPPA = np.where(np.arange(24) == 5, -1.0, 0.0)

CASES = {
    # name: (jcsol learner as a grid of 2 points, reference for grid point k, costs: "amount" or None)
    "CW-CVaR-arbitrary": (
        lambda: jcsol.paired(CWCVaR(assumption="arbitrary"), alpha=A2, beta=B2),
        lambda k: reference.CWCVaR(24, alpha=A2[k], beta=B2[k], assumption="arbitrary"),
        "amount",
    ),
    "CW-CVaR-unimodal-diag": (
        lambda: jcsol.paired(CWCVaR(assumption="unimodal", diagonal=True), alpha=A2, beta=B2),
        lambda k: reference.CWCVaR(24, alpha=A2[k], beta=B2[k], assumption="unimodal", diagonal=True),
        None,
    ),
    "CW-nobuffer-symmetric": (
        lambda: CWNoBuffer(epsilon=[0.05, 0.7], assumption="symmetric"),
        lambda k: reference.CWNoBuffer(24, epsilon=[0.05, 0.7][k], assumption="symmetric"),
        "amount",
    ),
    "CW-CVaR-arbitrary-diag-scaled-quantile": (
        lambda: jcsol.paired(
            CWCVaR(assumption="arbitrary", diagonal=True, reading="scaled", buffer_statistic="quantile"),
            alpha=A2,
            beta=B2,
        ),
        lambda k: reference.CWCVaR(
            24,
            alpha=A2[k],
            beta=B2[k],
            assumption="arbitrary",
            diagonal=True,
            reading="scaled",
            buffer_statistic="quantile",
        ),
        "unit amount",
    ),
    "CW-CVaR-quantile": (
        lambda: jcsol.paired(CWCVaR(buffer_statistic="quantile"), alpha=A2, beta=B2),
        lambda k: reference.CWCVaR(24, alpha=A2[k], beta=B2[k], buffer_statistic="quantile"),
        "amount",
    ),
    "CW-nobuffer-scaled": (
        lambda: CWNoBuffer(epsilon=[0.05, 0.7], reading="scaled"),
        lambda k: reference.CWNoBuffer(24, epsilon=[0.05, 0.7][k], reading="scaled"),
        "unit amount",
    ),
    # as printed, the limit removes the variance along x: the diagonal stops learning exactly (the full Σ's
    # left-over variance after ~d such rounds is float32 rounding, which the float64 reference does not share)
    "CW-nobuffer-unimodal-diag-limit": (
        lambda: CWNoBuffer(epsilon=[0.05, 0.7], assumption="unimodal", diagonal=True, zero_cost="limit"),
        lambda k: reference.CWNoBuffer(
            24, epsilon=[0.05, 0.7][k], assumption="unimodal", diagonal=True, zero_cost="limit"
        ),
        "some zero",
    ),
    "CW-CVaR-symmetric-diag-scaled-limit": (
        lambda: jcsol.paired(
            CWCVaR(assumption="symmetric", diagonal=True, reading="scaled", zero_cost="limit"), alpha=A2, beta=B2
        ),
        lambda k: reference.CWCVaR(
            24, alpha=A2[k], beta=B2[k], assumption="symmetric", diagonal=True, reading="scaled", zero_cost="limit"
        ),
        "some zero unit",
    ),
    "CW-costs-relative": (
        lambda: jcsol.paired(CWCosts(relative=True), eta=[0.7, 0.9], cost_scale=[1.0, 0.3]),
        lambda k: reference.CWCosts(24, eta=[0.7, 0.9][k], cost_scale=[1.0, 0.3][k], relative=True),
        "amount",
    ),
    "CW-robust": (
        lambda: jcsol.paired(CWRobust(prior_mean=NU, prior_var=UPS, prior_mean_coef=KAPPA), alpha=A2, beta=B2),
        lambda k: reference.CWRobust(24, NU, UPS, KAPPA, alpha=A2[k], beta=B2[k]),
        "amount",
    ),
    "CW-robust-diag": (
        lambda: jcsol.paired(
            CWRobust(prior_mean=NU, prior_var=UPS, prior_mean_coef=KAPPA, diagonal=True), alpha=A2, beta=B2
        ),
        lambda k: reference.CWRobust(24, NU, UPS, KAPPA, alpha=A2[k], beta=B2[k], diagonal=True),
        "amount",
    ),
}


# the default run checks the cases that together take every option (assumption, diagonal, scaling, buffer, λ at
# c = 0, robust prior, relative costs); the slow tier checks every case
FAST_CASES = {
    "CW-CVaR-arbitrary-diag-scaled-quantile",
    "CW-nobuffer-unimodal-diag-limit",
    "CW-CVaR-symmetric-diag-scaled-limit",
    "CW-costs-relative",
    "CW-robust",
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n in FAST_CASES else [pytest.mark.slow]) for n in CASES])
def test_learner_matches_float64_reference_on_german(name, german_costs):
    X, y, amount_costs = german_costs
    make, make_ref, cost_kind = CASES[name]
    learner = make()
    assert learner.name == name
    if cost_kind is None:  # the class weight ρ_t of the default objective
        costs, ref_costs = None, np.where(y > 0, (y < 0).sum() / (y > 0).sum(), 1.0)
    elif cost_kind.startswith("some zero"):
        costs = ref_costs = _some_zero(amount_costs / (amount_costs.mean() if cost_kind.endswith("unit") else 1.0))
    elif cost_kind == "unit amount":  # the scaled reading needs costs of mean ~1 (see CWCVaR's reading)
        costs = ref_costs = amount_costs / amount_costs.mean()
    else:  # 5 × or 1 × the credit amount
        costs = ref_costs = amount_costs
    res = jcsol.run(learner, X, y, perms=2, costs=costs, record_scores=True, key=3)
    X64 = X.astype(np.float32).astype(np.float64)
    for k in range(2):
        for p in range(2):
            ref = make_ref(k)
            scores = reference.run(ref, X64, y, ref_costs, res.orders[p])
            got = res.scores[k, p]
            np.testing.assert_array_equal(got >= 0, scores >= 0)
            # exact CW's steps (CW-costs) amplify rounding more than the CVaR update, as in test_baselines
            tol = 2e-3 if name.startswith("CW-costs") else 5e-5
            np.testing.assert_allclose(got, scores, rtol=0, atol=tol * np.abs(scores).max())
            mu = np.asarray(res.states.mu)[k, p]
            np.testing.assert_allclose(mu, ref.mu, rtol=0, atol=2 * tol * np.abs(ref.mu).max())
            if isinstance(learner, CWRobust):
                np.testing.assert_allclose(
                    np.asarray(res.states.mu_tilde)[k, p], ref.mu_tilde, rtol=0, atol=1e-4 * np.abs(ref.mu_tilde).max()
                )
            if hasattr(ref, "high"):  # both ε were used
                assert 0 < np.mean(ref.high) < 1
    # the example costs summed over the mistakes are those of the reference's predictions
    if costs is not None:
        labels = y[res.orders]
        wrong = (res.scores >= 0) != (labels > 0)
        np.testing.assert_allclose(res.mistake_cost, (wrong * costs[res.orders]).sum(-1), rtol=1e-5)


def test_cvar_with_equal_tolerances_is_nobuffer_and_robust_without_prior_is_cvar(german_costs):
    X, y, costs = german_costs
    rows = (X[:300], y[:300], costs[:300])
    kw = dict(assumption="gaussian", diagonal=True)
    a = _scan(CWCVaR(alpha=0.3, beta=0.3, **kw), *rows)
    b = _scan(CWNoBuffer(epsilon=0.3, **kw), *rows)
    c = _scan(CWRobust(alpha=0.3, beta=0.3, **kw), *rows)
    d = _scan(CWCVaR(alpha=0.3, beta=0.05, **kw), *rows)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[0], c[0])
    np.testing.assert_array_equal(c[2].mu_tilde, c[2].mu)
    assert not np.array_equal(a[0], d[0])  # β ≠ α changes the run


def test_cw_costs_with_unit_costs_is_cw(german):
    X, y = german
    X, y = X[:300], y[:300]  # as many rows as test_cw_costs_literal_matches_reference: one compilation of CW-costs
    s1, _, cw = _scan(jcsol.CW(eta=0.8), X, y, np.ones(len(y)), rho=3.0)
    s2, _, costs = _scan(CWCosts(eta=0.8), X, y, np.ones(len(y)), rho=3.0)
    s3, _, rel = _scan(CWCosts(eta=0.8, relative=True), X, y, np.full(len(y), 7.0), rho=3.0)
    np.testing.assert_array_equal(s1 >= 0, s2 >= 0)
    np.testing.assert_array_equal(s1 >= 0, s3 >= 0)
    for state in (costs, rel):
        np.testing.assert_allclose(state.mu, cw.mu, rtol=1e-5, atol=1e-6 * float(jnp.abs(cw.mu).max()))
        np.testing.assert_allclose(state.root, cw.root, rtol=0, atol=1e-5)


def test_cw_costs_literal_matches_reference(german_costs):
    """CW-costs with the costs as given (relative=False), step by step, on costs of mean 1 (with the raw
    amounts its means grow geometrically, see CWCosts)."""
    X, y, costs = german_costs
    costs = (costs / costs.mean()).astype(np.float32)
    order = np.random.default_rng(5).permutation(len(y))[:300]
    ref = reference.CWCosts(X.shape[1], eta=0.8, cost_scale=0.5)
    want = reference.run(ref, X.astype(np.float32), y, costs, order)
    got, _, state = _scan(CWCosts(eta=0.8, cost_scale=0.5), X[order], y[order], costs[order])
    np.testing.assert_array_equal(got >= 0, want >= 0)
    np.testing.assert_allclose(state.mu, ref.mu, rtol=0, atol=1e-4 * np.abs(ref.mu).max())


def test_robust_prior_pulls_the_prediction():
    """A tight prior on weight 0 (Υ_00 = 1e-6, ν_0 = 3) holds μ̃_0 near ν_0 while μ_0 moves (Eq. 15 per
    coordinate: μ̃ = (ν/Υ + tμ/s)/(1/Υ + t/s)); Υ_11 = ∞: no prior, μ̃_1 = μ_1."""
    learner = CWRobust(alpha=0.1, beta=0.1, prior_mean=[3.0, 0.0], prior_var=[1e-6, np.inf], diagonal=True)
    state = learner.init(2, jax.random.key(0))
    np.testing.assert_array_equal(state.mu_tilde, [3.0, 0.0])
    step = jax.jit(learner.step)
    rng = np.random.default_rng(0)
    for t in range(1, 21):
        x = rng.normal(size=2).astype(np.float32)
        state, info = step(state, Example(jnp.asarray(x), jnp.float32(-1.0), jnp.float32(1), jnp.float32(1)))
        mu, s = np.asarray(state.mu, np.float64), np.asarray(state.root, np.float64)
        want = (3.0 / 1e-6 + t * mu[0] / s[0]) / (1 / 1e-6 + t / s[0])
        assert float(state.mu_tilde[0]) == pytest.approx(want, rel=1e-5)
        assert float(state.mu_tilde[1]) == float(state.mu[1])
    assert abs(float(state.mu_tilde[0]) - 3.0) < 0.01 * abs(float(state.mu[0]) - 3.0)


def test_validation():
    with pytest.raises(ValueError, match="alpha must be in"):
        CWCVaR(alpha=1.0)
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        CWNoBuffer(epsilon=[0.1, 0.0])
    with pytest.raises(ValueError, match="tau must be in"):
        CWCVaR(tau=1.5)
    with pytest.raises(ValueError, match="buffer_size must be a positive int"):
        CWCVaR(buffer_size=0)
    with pytest.raises(ValueError, match="prior_var must be > 0"):
        CWRobust(prior_var=[1.0, 0.0])
    with pytest.raises(ValueError, match="prior_mean has invalid values"):
        CWRobust(prior_mean=[np.inf, 0.0])
    with pytest.raises(ValueError, match="eta"):
        CWCosts(eta=0.4)
    with pytest.raises(ValueError, match="length 3"):
        CWRobust(prior_var=[1.0, np.inf, 1.0]).init(2, jax.random.key(0))
    assert CWRobust(prior_var=np.array([1.0, np.inf])).prior_var == (1.0, math.inf)


def test_a_diverging_run_is_reported(german_costs):
    """CW-costs fed the raw loan-amount costs (up to 920) overflows; the run says so instead of passing off
    its NaN scores (+1 predictions) as a classifier."""
    X, y, costs = german_costs
    with pytest.warns(RuntimeWarning, match=r"2 of 2 runs of CW-costs ended with non-finite weights"):
        res = jcsol.run(CWCosts(eta=0.99), X, y, perms=2, costs=costs, key=1)
    assert not np.isfinite(np.asarray(res.states.mu)).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jcsol.run(CWCosts(eta=0.99, relative=True), X, y, perms=2, costs=costs, key=1)
