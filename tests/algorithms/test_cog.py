"""COG (Wang, Zhao, Hoi, *Cost-Sensitive Online Classification*, ICDM 2012) against the float64 reference of
``reference_cog``: the reference by hand, a grid over η in one run, and the Laplace estimate of ρ counting the
current round. Every COG variant, step by step on german and a9a and in float64, is in ``test_steps_cog.py``
(tolerances there).
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
    first_difference,
    german,
    hand_stream,
    orders_for,
    per_round_predictions,
    run_jcsol,
)

import jcsol


def test_reference_cog_by_hand():
    X, y, order, rho = hand_stream()
    tr = ref.cog(X, y, order, eta=0.5, loss="II", rho_of=rho)
    # r0: f=0 → +1, ℓ=0.2·1>0, w=[0.1,0]; r1: f=0 → +1, ℓ=1, w=[0.1,-0.5];
    # r2: f=0.1 → +1, ℓ=0.2·0.9>0, g=-0.2x, w=[0.2,-0.5]; r3: f=-0.5 → -1, ℓ=0.2·1.5, w=[0.2,-0.4]
    np.testing.assert_allclose(tr.scores, [0, 0, 0.1, -0.5])
    np.testing.assert_array_equal(tr.predictions, [1, 1, 1, -1])
    np.testing.assert_allclose(tr.w, [0.2, -0.4])
    tr = ref.cog(X, y, order, eta=0.5, loss="I", rho_of=rho)
    # type I: r0 ℓ=0.2, w=[.5,0]; r1 ℓ=1, w=[.5,-.5]; r2 margin 0.5 ≥ 0.2: ℓ=0; r3 margin -.5: w=[.5,0]
    np.testing.assert_allclose(tr.losses, [0.2, 1.0, 0.0, 0.7])
    np.testing.assert_allclose(tr.w, [0.5, 0.0])


def test_german_eta_grid_cog_float32():
    X, y = german()
    orders = orders_for(len(y), 2, seed=1)
    etas = np.array([0.1, 1.0, 10.0])
    res = run_jcsol(jcsol.COG(eta=etas, loss="I"), X, y, orders, jcsol.Sum())
    assert res.grid_shape == (3,)
    preds = per_round_predictions(res, y, orders)
    w, _ = final_state(res)
    runs = {}
    for g, eta in enumerate(etas):
        for p, order in enumerate(orders):
            tr = ref.cog(X, y, order, f32(eta), "I", ref.sum_offline())
            runs[g, p] = tr.predictions
            assert_same_run(preds[g, p], res.counts[g, p], w[g, p], None, tr, "I", F32_TOL, f"COG-I η={eta} perm {p}")
    # the grid points are genuinely different runs (so a mix-up of grid points would be caught)
    assert any(np.any(runs[0, p] != runs[2, p]) for p in range(2))


def test_laplace_counts_include_the_current_round():
    """The Laplace estimate counts the current example (docs/conventions.md). On this stream a reference that
    counts only the previous rounds, or that uses the offline ρ, predicts differently, so jcsol's agreement with
    the "including" reference at every round pins the convention down."""
    X, y = german()
    orders = orders_for(len(y), 2, seed=3)

    def laplace_excluding(labels):
        out = np.empty(len(labels))
        p = n = 0
        for t, label in enumerate(labels):
            out[t] = (n + 1) / (p + 1) if label > 0 else 1.0
            p, n = p + (label > 0), n + (label < 0)
        return out

    res = run_jcsol(jcsol.COG(eta=1.0, loss="II"), X, y, orders, jcsol.Sum(rho="laplace"))
    preds = per_round_predictions(res, y, orders)
    w, _ = final_state(res)
    for p, order in enumerate(orders):
        including = ref.cog(X, y, order, 1.0, "II", ref.sum_laplace())
        excluding = ref.cog(X, y, order, 1.0, "II", laplace_excluding)
        offline = ref.cog(X, y, order, 1.0, "II", ref.sum_offline())
        # ρ_t differs from the offline value and from the "excluding" convention on this stream …
        assert not np.allclose(including.rhos, offline.rhos)
        assert not np.allclose(including.rhos, excluding.rhos)
        # … and so do the predictions, so the comparison below can tell the conventions apart
        assert first_difference(including.predictions, excluding.predictions) is not None
        assert first_difference(including.predictions, offline.predictions) is not None
        assert_same_run(preds[p], res.counts[p], w[p], None, including, "II", F32_TOL, f"COG-II laplace perm {p}")
        # the very first positive sees ρ = (n+1)/(1+1) with its own count included
        first_pos = int(np.argmax(including.labels > 0))
        assert including.rhos[first_pos] == pytest.approx((first_pos + 1) / 2)
