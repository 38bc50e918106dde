"""Exact CW (Crammer, Dredze, Pereira, *Exact Convex Confidence-Weighted Learning*, NIPS 2008) on a9a: the
guarded update stays finite where the textbook one breaks down. CW's step-by-step checks against the float64
reference, with the other linear baselines, are in ``test_steps_baselines.py``.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
import reference_baselines as reference
from streams import a9a, objective_rho

import jcsol
from jcsol.algorithms.cw import covariance


@pytest.mark.slow
def test_cw_stays_finite_on_a9a():
    """Every score and the final state of the guarded CW are finite (and Σ positive semi-definite, Σ ⪯ I)."""
    X, y = a9a()
    res = jcsol.run(jcsol.CW(), X, y, perms=1, key=0, record_scores=True)
    scores = np.asarray(res.scores)[0]
    assert scores.shape == (len(y),)
    assert np.all(np.isfinite(scores))
    assert np.abs(scores).max() < 1e3
    for leaf in jax.tree.leaves(res.states):
        assert np.all(np.isfinite(np.asarray(leaf)))
    sigma = np.asarray(covariance(res.states), np.float64)[0]
    eig = np.linalg.eigvalsh((sigma + sigma.T) / 2)
    assert eig.min() > -1e-6
    assert eig.max() < 1 + 1e-4
    assert res.balanced_accuracy.mean() > 0.7  # and it still learns


@pytest.mark.slow
def test_textbook_cw_breaks_down_on_a9a(monkeypatch):
    """Why CW is guarded: without the variance floor the float64 textbook update leaves Σ non-positive or the
    scores explode on a9a (LIBOL reports scores of 1e82)."""
    X, y = a9a()
    order = np.random.default_rng(0).permutation(len(y))
    monkeypatch.setattr(reference, "CW_VARIANCE_FLOOR", 0.0)
    try:
        with np.errstate(all="ignore"):
            trace = reference.run("CW", X, y, order, objective_rho(y, jcsol.Sum()))
    except (ValueError, ZeroDivisionError, OverflowError):  # √ of a negative variance, division by v = 0
        return
    exploded = ~np.isfinite(trace.scores) | (np.abs(trace.scores) > 1e6)
    assert exploded.any() or not np.all(np.isfinite(trace.state["mu"]))
