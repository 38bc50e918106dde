"""The linear AUC baselines of the KOIL thesis's Table 3.3, OAM (Zhao, Hoi, Jin, Yang, *Online AUC
Maximization*, ICML 2011) and OPAUC (Gao, Jin, Zhu, Zhou, *One-Pass AUC Optimization*, ICML 2013), against the
float64 NumPy references of ``reference_koil``, round by round.

Tolerances as in ``test_koil.py``: float32 jcsol against the float64 reference on the same float32 data and
uniform draws, ``rtol = 1e-3`` and ``atol = 1e-4 · max|reference|``; one different decision (an update made or
skipped, a slot replaced) moves a weight by a whole step, far outside that.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
import reference_koil as ref
from conftest import shared_data
from koil_steps import close, run_steps

from jcsol.algorithms.auc_baselines import OAM, OPAUC
from jcsol.algorithms.koil import uniforms
from jcsol.datasets import load_koil


@pytest.fixture(scope="module")
def sonar():
    X, y = load_koil("sonar", data_dir=shared_data("koil"))
    return X, y, np.random.default_rng(1).permutation(len(y))


def test_oam_matches_reference(sonar):
    X, y, order = sonar
    learner = OAM(C=0.5, budget_pos=10, budget_neg=12)
    key = jax.random.key(4)
    state, scores, _ = run_steps(learner, X, y, order, key)
    out = ref.oam(X, y, order, C=0.5, budget_pos=10, budget_neg=12, u=uniforms(key, len(order), learner.draw_shape))
    close(scores, out["scores"])
    close(state.w, out["w"])
    size = np.asarray(state.size)
    assert tuple(size) == (10, 12)
    np.testing.assert_array_equal(np.asarray(state.buf)[:10], out["pos_x"].astype(np.float32))
    np.testing.assert_array_equal(np.asarray(state.buf)[10:22], out["neg_x"].astype(np.float32))


def test_opauc_matches_reference(sonar):
    X, y, order = sonar
    learner = OPAUC(eta=0.05, lam=0.01)
    state, scores, _ = run_steps(learner, X, y, order, jax.random.key(0))
    out = ref.opauc(X, y, order, eta=0.05, lam=0.01)
    close(scores, out["scores"])
    close(state.w, out["w"])
    pos = X[y > 0].astype(np.float64)
    close(state.cov[0], np.cov(pos.T, bias=True), 1.0)  # the exact running covariance
