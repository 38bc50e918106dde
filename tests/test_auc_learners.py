"""The baselines of the KOIL thesis's Table 3.3 (OAM, OPAUC, NORMA, RBP, Forgetron, Projectron, Projectron++)
against the float64 NumPy references of ``tests/koil_reference.py``, round by round; the AUC
(:func:`jcsol.metrics.auc`), the one-computation KOIL protocol (:func:`jcsol.protocols.protocol_auc`) and the
KOIL data (:mod:`jcsol.datasets.koil`).

Tolerances as in ``test_koil.py``: float32 jcsol against the float64 reference on the same float32 data and
uniform draws, ``rtol = 1e-3`` and ``atol = 1e-4 · max|reference|``; one different decision (an update made or
skipped, a slot replaced) moves a weight by a whole step, far outside that.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import shared_data

import jcsol
from jcsol.algorithms.auc_baselines import OAM, OPAUC
from jcsol.algorithms.budget_kernel import NORMA, RBP, Forgetron, Projectron
from jcsol.algorithms.koil import KOIL, KOILMKL, uniforms
from jcsol.base import Example
from jcsol.datasets import koil_synthetic, load_koil
from jcsol.metrics import auc, auc_numpy
from jcsol.protocols import cv_splits, fold_auc, protocol_auc

sys.path.insert(0, str(Path(__file__).resolve().parent))
import koil_reference as ref  # noqa: E402


@jax.jit
def _scan(learner, state, X, labels, order):
    def body(st, i):
        st, info = learner.step(st, Example(X[i], labels[i], jnp.ones((), X.dtype)))
        return st, info.score

    return jax.lax.scan(body, state, order)


def run_steps(learner, X, y, order, key):
    X = jnp.asarray(X)
    state = learner.init(X.shape[1], key, X.dtype)
    final, scores = _scan(learner, state, X, jnp.asarray(y, X.dtype), jnp.asarray(order))
    return final, np.asarray(scores)


def close(a, b, scale=None):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = max(np.max(np.abs(b)) if b.size else 0.0, 1e-12) if scale is None else scale
    np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4 * scale)


@pytest.fixture(scope="module")
def planar():
    """A 2-D continuous stream (Syn-like, 1:3), 240 rounds."""
    X, y = koil_synthetic(60, 180, seed=8)
    return X, y, np.random.default_rng(0).permutation(len(y))


@pytest.fixture(scope="module")
def sonar():
    X, y = load_koil("sonar", data_dir=shared_data("koil"))
    return X, y, np.random.default_rng(1).permutation(len(y))


# --------------------------------------------------------------------------------------------------------------
# linear AUC learners
# --------------------------------------------------------------------------------------------------------------


def test_oam_matches_reference(sonar):
    X, y, order = sonar
    learner = OAM(C=0.5, budget_pos=10, budget_neg=12)
    key = jax.random.key(4)
    state, scores = run_steps(learner, X, y, order, key)
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
    state, scores = run_steps(learner, X, y, order, jax.random.key(0))
    out = ref.opauc(X, y, order, eta=0.05, lam=0.01)
    close(scores, out["scores"])
    close(state.w, out["w"])
    pos = X[y > 0].astype(np.float64)
    close(state.cov[0], np.cov(pos.T, bias=True), 1.0)  # the exact running covariance


# --------------------------------------------------------------------------------------------------------------
# kernel learners on a budget
# --------------------------------------------------------------------------------------------------------------

KERNEL_CASES = {
    "NORMA": (
        lambda: NORMA(eta=0.2, lam=0.1, nu=0.3, sigma=0.2, budget=40),
        lambda X, y, o, u: ref.norma(X, y, o, eta=0.2, lam=0.1, nu=0.3, kernel=ref.gaussian(0.2), budget=40),
    ),
    "RBP": (
        lambda: RBP(sigma=0.2, budget=15),
        lambda X, y, o, u: ref.rbp(X, y, o, kernel=ref.gaussian(0.2), budget=15, u=u),
    ),
    "Forgetron": (
        lambda: Forgetron(sigma=0.2, budget=15),
        lambda X, y, o, u: ref.forgetron(X, y, o, kernel=ref.gaussian(0.2), budget=15),
    ),
    "Projectron": (
        lambda: Projectron(eta=0.3, sigma=0.2, budget=60),
        lambda X, y, o, u: ref.projectron(X, y, o, eta=0.3, kernel=ref.gaussian(0.2), budget=60),
    ),
    "Projectron++": (
        lambda: Projectron(eta=0.3, sigma=0.2, budget=60, plus=True),
        lambda X, y, o, u: ref.projectron(X, y, o, eta=0.3, kernel=ref.gaussian(0.2), budget=60, plus=True),
    ),
}


@pytest.mark.parametrize("name", list(KERNEL_CASES))
def test_budget_kernel_learner_matches_reference(planar, name):
    X, y, order = planar
    make, reference = KERNEL_CASES[name]
    learner = make()
    key = jax.random.key(2)
    state, scores = run_steps(learner, X, y, order, key)
    draws = uniforms(key, len(order), learner.draw_shape) if hasattr(learner, "draw_shape") else None
    out = reference(X, y, order, draws)
    close(scores, out["scores"])
    size = int(state.size)
    assert size == len(out["alpha"])
    assert size >= 5
    np.testing.assert_array_equal(np.asarray(state.sv)[:size], out["x"].astype(np.float32))
    close(np.asarray(state.alpha)[:size], out["alpha"])
    expected = [np.dot(out["alpha"], ref.gaussian(0.2)(out["x"], x)) for x in X[:30].astype(np.float64)]
    close(learner.score(state, X[:30]), expected)
    if name in ("RBP", "Forgetron"):
        assert size == learner.budget  # the budget was reached and enforced
    if name == "Forgetron":
        close(state.Q, out["Q"])
        assert out["Q"] > 0  # some removal shrank the weights


# --------------------------------------------------------------------------------------------------------------
# AUC, splits, protocol
# --------------------------------------------------------------------------------------------------------------


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


@pytest.mark.parametrize(
    ("learner", "field"),
    [
        (KOIL(sigma=1.0, C=1.0, budget_pos=4, budget_neg=4, k=2, policy="RS++"), "seen"),
        (KOILMKL(C=1.0, budget_pos=4, budget_neg=4, k=2), "seen"),
        (OAM(C=0.5, budget_pos=4, budget_neg=4), "seen"),
        (OPAUC(eta=0.05, lam=0.01), "class_count"),
    ],
    ids=["KOIL", "KOIL-MKL", "OAM", "OPAUC"],
)
def test_class_counts_stop_at_the_int32_maximum(learner, field):
    """A live stream has no end: a per-class count one short of 2**31 - 1 reaches it and stays there, where it
    wrapped to -2**31 (a reservoir then replaced on every round, OAM's step and OPAUC's means turned negative)."""
    from jcsol.base import COUNT_MAX

    X, y = koil_synthetic(8, 8, seed=1)
    state = learner.init(X.shape[1], jax.random.key(0), jnp.float32)
    state = state._replace(**{field: jnp.full_like(getattr(state, field), COUNT_MAX - 1)})
    step = jax.jit(learner.step)
    for x in X[y > 0][:3]:
        state, info = step(state, Example(jnp.asarray(x), jnp.float32(1), jnp.float32(1)))
        assert np.isfinite(float(info.score))
    counts = np.asarray(getattr(state, field)).reshape(-1, 2)
    assert counts[:, 0].max() == COUNT_MAX
    assert counts[:, 0].min() >= COUNT_MAX - 1  # KOIL-MKL: updated kernels
    assert (counts[:, 1] == COUNT_MAX - 1).all()
    assert all(np.isfinite(np.asarray(leaf, np.float64)).all() for leaf in jax.tree.leaves(state))


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
