"""The AUC (:func:`jcsol.metrics.auc`), the one-computation KOIL protocol (:func:`jcsol.protocols.protocol_auc`,
:func:`jcsol.protocols.fold_auc`) and the KOIL data (:mod:`jcsol.datasets.koil`)."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from conftest import shared_data

import jcsol
from jcsol.algorithms.koil import KOIL, KOILMKL
from jcsol.datasets import koil_synthetic, load_koil
from jcsol.metrics import auc, auc_numpy
from jcsol.protocols import cv_splits, fold_auc, protocol_auc


def brute_auc(s, y):
    pos, neg = s[y > 0], s[y <= 0]
    diff = pos[:, None] - neg[None, :]
    return float(np.mean((diff > 0) + 0.5 * (diff == 0)))


def test_auc_counts_ties_half_and_ignores_masked_entries():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 6, 300).astype(np.float32)  # many ties
    y = np.where(rng.random(300) < 0.3, 1, -1)
    assert abs(float(auc(s, y)) - brute_auc(s, y)) < 1e-6
    assert abs(auc_numpy(s, y) - brute_auc(s, y)) < 1e-12
    mask = rng.random(300) < 0.6
    assert abs(float(auc(s, y, mask)) - brute_auc(s[mask], y[mask])) < 1e-6
    assert float(auc(np.ones(10), np.array([1, -1] * 5))) == 0.5
    batch = rng.normal(size=(4, 300)).astype(np.float32)
    vm = jax.jit(jax.vmap(auc, in_axes=(0, None)))(batch, y)
    np.testing.assert_allclose(vm, [brute_auc(b, y) for b in batch], atol=1e-6)


def test_auc_orders_infinite_scores_and_is_nan_for_a_nan_score():
    """An infinite score is ordered as any other (it once collided with the sentinel of the other class's
    entries: an AUC of 7/6), ``-0.0`` ties with ``0.0``; a NaN score, counted, makes the AUC NaN (it gave 4/3),
    masked out, it is ignored."""
    from sklearn.metrics import roc_auc_score

    y = np.array([1, 1, -1, -1, -1])
    for s in ([np.inf, 0.5, 0.1, 0.2, 0.3], [0.9, 0.5, np.inf, 0.2, 0.3], [0.9, -np.inf, -np.inf, 0.2, np.inf]):
        s = np.array(s, np.float32)
        expected = roc_auc_score(y, np.nan_to_num(s))  # ±inf as ±the largest float: the same order and ties
        assert float(auc(s, y)) == pytest.approx(expected)
        assert auc_numpy(s, y) == pytest.approx(expected)
    assert float(auc(np.float32([0.0, -0.0]), [1, -1])) == float(auc(np.float32([-0.0, 0.0]), [1, -1])) == 0.5
    for s in ([np.nan, 0.5, 0.1, 0.2, 0.3], [0.9, 0.5, np.nan, 0.2, 0.3]):
        s = np.array(s, np.float32)
        assert np.isnan(float(auc(s, y)))
        assert np.isnan(auc_numpy(s, y))
        ok = ~np.isnan(s)
        assert float(auc(s, y, ok)) == pytest.approx(brute_auc(s[ok], y[ok]))


def test_auc_of_more_pairs_than_an_int32_counts():
    """100,000 positives and as many negatives: twice the count of ordered pairs is about 10**10, past 2**31;
    the AUC is still scikit-learn's."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(5)
    y = np.repeat([1, -1], 100_000)
    s = np.round(0.4 * y + rng.normal(size=y.size), 2).astype(np.float32)  # ties too
    mask = rng.random(y.size) < 0.9
    expected = roc_auc_score(y[mask], s[mask])
    assert 0.65 < expected < 0.75
    assert abs(float(jax.jit(auc)(s, y, mask)) - expected) < 1e-6
    two = jax.jit(jax.vmap(auc, in_axes=(0, None)))(np.stack([s, -s]), y)
    np.testing.assert_allclose(two, [roc_auc_score(y, s), roc_auc_score(y, -s)], atol=1e-6)


def test_protocol_is_one_run_and_scores_each_runs_own_test_fold():
    """``protocol_auc`` on a σ grid equals, run by run, a single-stream run scored on that run's test fold.

    FIFO++ makes no random choice, so the single runs need not share the protocol's PRNG keys.
    """
    X, y = koil_synthetic(40, 160, seed=2)
    sp = cv_splits(y, folds=5, repeats=2, seed=0)
    learner = KOIL(sigma=np.array([0.1, 0.3]), C=4.0, budget_pos=10, budget_neg=10, k=2, policy="FIFO++")
    pr = protocol_auc(learner, X, y, sp)
    assert pr.auc.shape == (2, 10)
    assert pr.result.orders.shape == sp.train.shape
    for g, sigma in enumerate([0.1, 0.3]):
        single = learner.replace(sigma=sigma)
        for p in (0, 7):
            res = jcsol.run(single, X, y, perms=sp.train[p])
            rows = sp.test[p][sp.test_mask[p]]
            scores = np.asarray(single.score(jax.tree.map(lambda a: a[0], res.states), X[rows]))
            assert abs(pr.auc[g, p] - auc_numpy(scores, y[rows])) < 1e-5
    assert pr.auc.mean() > 0.85  # the kernel separates the "+" layout


def test_fold_auc_scores_one_training_under_another_reading():
    """``fold_auc`` with KOIL-MKL's ``combine="sum"`` as the scorer of a training with the vote gives the AUCs of
    ``protocol_auc`` run with the sum (training does not depend on the reading); another class is refused."""
    X, y = koil_synthetic(40, 160, seed=2)
    sp = cv_splits(y, folds=5, repeats=1, seed=0)
    pool = (("polynomial", 1.0), ("gaussian", 0.2), ("gaussian", 0.5))
    vote = KOILMKL(C=np.array([1.0, 8.0]), pool=pool, budget_pos=10, budget_neg=10, k=2)
    voted = protocol_auc(vote, X, y, sp, key=1)
    summed = protocol_auc(vote.replace(combine="sum"), X, y, sp, key=1)
    rescored = fold_auc(voted.result, X, y, sp, scorer=vote.replace(combine="sum", C=1.0))
    np.testing.assert_array_equal(rescored, summed.auc)
    np.testing.assert_array_equal(fold_auc(voted.result, X, y, sp), voted.auc)
    assert not np.array_equal(rescored, voted.auc)
    with pytest.raises(ValueError, match="the scorer must be the trained KOILMKL with other static options"):
        fold_auc(voted.result, X, y, sp, scorer=KOIL())


def test_koil_data_loader_and_synthetic_sets():
    X, y = load_koil("glass", data_dir=shared_data("koil"))
    assert X.shape == (214, 9)
    assert (y > 0).sum() == 70
    assert X.min() >= 0
    assert X.max() <= 1
    Xs, ys = koil_synthetic(100, 1000, seed=0)
    assert Xs.shape == (1100, 2)
    assert (ys > 0).sum() == 100
    assert Xs.min() == 0
    assert Xs.max() == 1
    centre = Xs[ys > 0].mean(axis=0)
    assert np.all(np.abs(centre - Xs.mean(axis=0)) < 0.05)  # positives in the middle of the "+"
    with pytest.raises(FileNotFoundError):
        load_koil("no_such_set", data_dir=shared_data("koil"))
