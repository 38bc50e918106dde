"""One scorer of held-out rows (jcsol.scoring): Result.score and protocols.fold_auc on dense and sparse rows,
checked against NumPy float64 dot products and scikit-learn's AUC; sparse rows are never densified on the host."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import jcsol
from jcsol.protocols import cv_splits, fold_auc, protocol_auc


def _sparse(X):
    """``X`` as fixed-width sparse rows (every row's non-zero entries, padded with zeros)."""
    width = max(1, int((X != 0).sum(axis=1).max()))
    indices = np.zeros((len(X), width), np.int32)
    values = np.zeros((len(X), width), X.dtype)
    for i, row in enumerate(X):
        nz = np.flatnonzero(row)
        indices[i, : len(nz)], values[i, : len(nz)] = nz, row[nz]
    return jcsol.SparseRows(indices, values, X.shape[1])


@pytest.fixture
def no_host_densify(monkeypatch):
    def refuse(self):
        raise AssertionError("sparse held-out rows were densified on the host")

    monkeypatch.setattr(jcsol.SparseRows, "todense", refuse)


def test_result_scores_sparse_rows_as_float64_dot_products(small, no_host_densify):
    X, y = small
    res = jcsol.run(jcsol.COG(eta=[0.1, 10.0]), X, y, perms=2)
    held = X[150:190]
    expected = np.einsum("nd,gpd->gpn", held.astype(np.float64), np.asarray(res.states.w, np.float64))
    for rows in (held, _sparse(held)):
        np.testing.assert_allclose(res.score(rows), expected, rtol=1e-5, atol=1e-6)


def test_kernel_learner_scores_sparse_rows_as_dense_ones(small, no_host_densify):
    X, y = small
    res = jcsol.run(jcsol.KOIL(budget_pos=8, budget_neg=8), X[:60], y[:60], perms=2)
    held = X[150:170]
    np.testing.assert_allclose(res.score(_sparse(held)), res.score(held), rtol=1e-6, atol=1e-7)


def test_fold_auc_of_sparse_rows_is_scikit_learns_auc_of_each_test_fold(small, no_host_densify):
    X, y = small
    splits = cv_splits(y, folds=2, repeats=1, seed=0)
    pr = protocol_auc(jcsol.COG(eta=[0.1, 1.0]), X, y, splits)
    sparse = fold_auc(pr.result, _sparse(X), y, splits)
    np.testing.assert_allclose(sparse, pr.auc, atol=1e-6)
    weights = np.asarray(pr.result.states.w, np.float64)  # (grid, runs, d)
    for g in range(2):
        for r in range(splits.train.shape[0]):
            rows = splits.test[r][splits.test_mask[r]]
            expected = roc_auc_score(y[rows] > 0, X[rows].astype(np.float64) @ weights[g, r])
            assert abs(sparse[g, r] - expected) < 1e-5
