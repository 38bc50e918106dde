"""The GPU kernel's full-covariance learners (run here in Pallas' interpreter) against independent float64 NumPy
loops written from the papers, beside the scan, on real data: German credit, 1000 rounds in the rows' order.

The kernel sums a row's products in another order than the scan's dot (column sums of ``Σ ∘ x``, no matrix
instruction), so neither path is the other's bits. Each is held to the float64 reference: the kernel's ``μ`` and
``Σ`` no further from it than twice the scan's distance (plus a few float32 units), its states within
:data:`RTOL` of the scan's, and every round it predicts otherwise than the scan has a score within :data:`RTOL`
(relative to the largest) of 0. ``benchmarks/kernel_numerics.py`` measures the same over a whole a9a pass.
"""

import numpy as np
import pytest
import reference_baselines
import reference_cog
import reference_cw_var

import jcsol
from jcsol.algorithms.cw import covariance

RTOL = 1e-4
EPS32 = float(np.finfo(np.float32).eps)


def relative(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / np.abs(b).max())


def float64_reference(name: str, X, y):
    """``(μ, Σ)`` after one float64 pass over the rows in their order."""
    order = np.arange(len(y))
    if name.startswith("ACOG"):
        trace = reference_cog.acog(X, y, order, 1.0, 1.0, name.split("-")[1], False, reference_cog.sum_offline(0.5))
        return trace.w, trace.sigma
    if name == "CW-var":
        learner = reference_cw_var.CWVar(X.shape[1])
        reference_cw_var.run(learner, X, y, order)
        return learner.mu, learner.sigma
    state = reference_baselines.run(name, X, y, order, 1.0).state
    return state["mu"], state["sigma"]


def mean_and_covariance(name: str, states):
    mu = np.asarray(states.mu)[0]
    if name in ("CW", "SCW-I", "SCW-II", "CW-var"):  # the state holds a square root A of Σ = A Aᵀ
        return mu, np.asarray(covariance(states))[0]
    return mu, np.asarray(states.sigma)[0]


@pytest.mark.parametrize("name", ["ACOG-I", "ACOG-II", "AROW", "CW", "SCW-I", "SCW-II", "CW-var"])
def test_the_kernel_is_as_close_to_float64_as_the_scan(name, german):
    X, y = german
    learner = jcsol.by_name(name)
    if name.startswith("ACOG"):
        learner = learner.replace(eta=1.0)
    runs = {
        path_name: jcsol.run(learner, X, y, perms="stream", path=path, record_scores=True)
        for path_name, path in (("scan", "scan"), ("kernel", jcsol.Kernel()))
    }
    mu64, sigma64 = float64_reference(name, X, y)
    errors = {}
    for path_name, res in runs.items():
        mu, sigma = mean_and_covariance(name, res.states)
        errors[path_name] = relative(mu, mu64), relative(sigma, sigma64)
    assert max(errors["scan"]) <= 1e-5, errors  # the scan is the reference's learner
    for which in (0, 1):  # μ, Σ
        assert errors["kernel"][which] <= 2 * errors["scan"][which] + 10 * EPS32, errors
    scan, kernel = (mean_and_covariance(name, runs[p].states) for p in ("scan", "kernel"))
    assert relative(kernel[0], scan[0]) <= RTOL
    assert relative(kernel[1], scan[1]) <= RTOL
    s, k = runs["scan"].scores[0], runs["kernel"].scores[0]
    differ = (s >= 0) != (k >= 0)
    assert np.all(np.abs(s[differ]) <= RTOL * np.abs(s).max())
    assert differ.sum() <= 2
