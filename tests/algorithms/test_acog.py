"""ACOG (Zhao, Zhang, Wu, Hoi, Tan, Huang, *Adaptive Cost-Sensitive Online Classification*, IEEE TKDE 2019)
against the float64 reference of ``reference_cog``: the reference by hand (the new, old and mixed Σ of the mean
step; full against diagonal), grids over η × γ and η × ν in one run, sparse rows, the checks of ``new_sigma``.
Every ACOG variant, step by step on german and a9a and in float64, is in ``test_steps_cog.py`` (tolerances there).
"""

from __future__ import annotations

import numpy as np
import pytest
import reference_cog as ref
from cog_runs import (
    F32_TOL,
    assert_same_run,
    f32,
    final_state,
    german,
    hand_stream,
    orders_for,
    per_round_predictions,
    run_jcsol,
)

import jcsol


def test_reference_acog_uses_the_new_sigma_by_hand():
    X, y, order, rho = hand_stream()
    for diagonal in (False, True):
        tr = ref.acog(X, y, order, eta=1.0, gamma=1.0, loss="I", diagonal=diagonal, rho_of=rho)
        # r0: Σ = diag(1/2, 1), μ = Σ x = [1/2, 0] (the old Σ would give [1, 0]);
        # r1: Σ = diag(1/2, 1/2), μ = [1/2, -1/2]; r2: margin 1/2 ≥ ρ = 0.2, no change;
        # r3: margin -1/2: Σ_22 = 1/2 - 1/4/(3/2) = 1/3, μ = [1/2, -1/2 + 1/3]
        np.testing.assert_allclose(tr.w, [0.5, -0.5 + 1 / 3])
        np.testing.assert_allclose(np.diag(tr.sigma) if not diagonal else tr.sigma, [0.5, 1 / 3])
        np.testing.assert_array_equal(tr.updated, [True, True, False, True])


def test_reference_acog_old_and_mixed_sigma_by_hand():
    X, y, order, rho = hand_stream()
    for diagonal in (False, True):
        # ν = 0, the old Σ_t: r0 μ = [1, 0]; r1 μ = [1, -1]; r2 margin 1 ≥ ρ: no change; r3 μ_2 = -1 + Σ_22 = -1/2
        tr = ref.acog(X, y, order, eta=1.0, gamma=1.0, loss="I", diagonal=diagonal, rho_of=rho, new_sigma=0.0)
        np.testing.assert_allclose(tr.w, [1.0, -0.5])
        # ν = 1/2, the mean of both: r0 step 3/4; r1 step 3/4; r2 no change; r3 step (1/2 + 1/3)/2 = 5/12
        tr = ref.acog(X, y, order, eta=1.0, gamma=1.0, loss="I", diagonal=diagonal, rho_of=rho, new_sigma=0.5)
        np.testing.assert_allclose(tr.w, [0.75, -0.75 + 5 / 12])
        # Σ does not depend on ν
        np.testing.assert_allclose(np.diag(tr.sigma) if not diagonal else tr.sigma, [0.5, 1 / 3])


def test_reference_full_equals_diag_on_axis_aligned_rows():
    rng = np.random.default_rng(5)
    X = np.eye(6)[rng.integers(0, 6, 300)] * rng.uniform(0.5, 2, (300, 1))
    y = np.where(rng.random(300) < 0.3, 1, -1)
    order = rng.permutation(300)
    full = ref.acog(X, y, order, 0.7, 1.3, "II", False, ref.sum_laplace())
    diag = ref.acog(X, y, order, 0.7, 1.3, "II", True, ref.sum_laplace())
    np.testing.assert_array_equal(full.predictions, diag.predictions)
    np.testing.assert_allclose(full.w, diag.w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.diag(full.sigma), diag.sigma, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("diagonal", [False, True])
def test_german_eta_gamma_grid_acog_float32(diagonal):
    X, y = german()
    orders = orders_for(len(y), 2, seed=2)
    etas, gammas = [0.1, 1.0, 10.0], [0.5, 2.0]
    learner = jcsol.grid(jcsol.ACOG(loss="II", diagonal=diagonal), eta=etas, gamma=gammas)
    res = run_jcsol(learner, X, y, orders, jcsol.Sum(rho="laplace"))
    assert res.grid_shape == (3, 2)
    preds = per_round_predictions(res, y, orders)
    w, sigma = final_state(res)
    finals = {}
    for i, eta in enumerate(etas):
        for j, gamma in enumerate(gammas):
            for p, order in enumerate(orders):
                tr = ref.acog(X, y, order, f32(eta), f32(gamma), "II", diagonal, ref.sum_laplace())
                finals[i, j, p] = tr.sigma
                assert_same_run(
                    preds[i, j, p],
                    res.counts[i, j, p],
                    w[i, j, p],
                    sigma[i, j, p],
                    tr,
                    "II",
                    F32_TOL,
                    f"ACOG-II{'-diag' if diagonal else ''} η={eta} γ={gamma} perm {p}",
                )
    assert not np.allclose(finals[1, 0, 0], finals[1, 1, 0])  # γ matters


@pytest.mark.parametrize("diagonal", [False, True])
def test_german_new_sigma_grid_acog_float32(diagonal):
    """ACOG's ``new_sigma`` = ν: 0 (the old Σ_t), 1/2 and 1 (ACOG) as one grid, each point against the reference."""
    X, y = german()
    orders = orders_for(len(y), 2, seed=4)
    etas, nus = [1.0, 10.0], [0.0, 0.5, 1.0]
    learner = jcsol.grid(jcsol.ACOG(loss="I", diagonal=diagonal), eta=etas, new_sigma=nus)
    res = run_jcsol(learner, X, y, orders, jcsol.Sum())
    assert res.grid_shape == (2, 3)
    preds = per_round_predictions(res, y, orders)
    w, sigma = final_state(res)
    for i, eta in enumerate(etas):
        for j, nu in enumerate(nus):
            for p, order in enumerate(orders):
                tr = ref.acog(X, y, order, f32(eta), 1.0, "I", diagonal, ref.sum_offline(), new_sigma=nu)
                assert_same_run(
                    preds[i, j, p],
                    res.counts[i, j, p],
                    w[i, j, p],
                    sigma[i, j, p],
                    tr,
                    "I",
                    F32_TOL,
                    f"ACOG-I{'-diag' if diagonal else ''} η={eta} ν={nu} perm {p}",
                )
    default = run_jcsol(jcsol.ACOG(eta=np.array(etas), loss="I", diagonal=diagonal), X, y, orders, jcsol.Sum())
    np.testing.assert_array_equal(default.counts, res.counts[:, 2])  # ν = 1 is ACOG
    np.testing.assert_array_equal(np.asarray(default.states.mu), w[:, 2])
    assert not np.array_equal(preds[:, 0], preds[:, 2])  # the rules differ


def test_acog_diag_new_sigma_on_sparse_rows_gives_the_dense_run():
    """The diagonal mixed step touches only a sparse row's non-zeros, and equals the dense one."""
    X, y = german()
    Xs, ys = jcsol.datasets.load("german", sparse=True)
    np.testing.assert_array_equal(y, ys)
    learner = jcsol.grid(jcsol.ACOG(diagonal=True, loss="II"), eta=[1.0, 10.0], new_sigma=[0.0, 0.5, 1.0])
    dense = jcsol.run(learner, X[:300], y[:300], perms=2, key=2)
    sparse = jcsol.run(
        learner, jcsol.SparseRows(Xs.indices[:300], Xs.values[:300], Xs.n_features), y[:300], perms=2, key=2
    )
    np.testing.assert_array_equal(dense.counts, sparse.counts)
    for leaf in ("mu", "sigma"):  # 300 rounds of float32 sums in other orders: a dozen ulps of the largest entry
        a, b = np.asarray(getattr(sparse.states, leaf)), np.asarray(getattr(dense.states, leaf))
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6 * np.abs(b).max())
    assert not np.array_equal(dense.counts[:, 0], dense.counts[:, 2])  # ν changes the runs


def test_acog_new_sigma_validation():
    jcsol.ACOG(new_sigma=0.0), jcsol.ACOG(new_sigma=[0.0, 0.25, 1.0])
    for bad in (-0.1, 1.5, [0.0, 2.0]):
        with pytest.raises(ValueError, match="new_sigma must be in \\[0, 1\\]"):
            jcsol.ACOG(new_sigma=bad)
    assert jcsol.ACOG(loss="II", diagonal=True, new_sigma=0.0).name == "ACOG-II-diag"
