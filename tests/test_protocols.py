"""The papers' protocols (jcsol.protocols): selection and re-run, cross-validation and its stratified splitter,
varying weights, sensitivity, old vs new Σ, offline vs Laplace ρ — each checked against an independent
computation."""

import numpy as np
import pytest

import jcsol
from jcsol import metrics, protocols

ETA3 = [0.1, 10.0, 1000.0]


@pytest.fixture(scope="module")
def part(german):
    """300 rows of german: 90 positives, every branch, quick to compile."""
    X, y = german
    return X[:300], y[:300]


def test_default_grid_follows_the_papers():
    assert list(protocols.default_grid(jcsol.ACOG())) == ["eta"]
    np.testing.assert_array_equal(protocols.default_grid(jcsol.COG())["eta"], jcsol.decades())
    assert list(protocols.default_grid(jcsol.PA1())) == ["C"]
    assert protocols.default_grid(jcsol.AROW()) == {}  # r = 1, as in the papers
    assert protocols.default_grid(jcsol.CW()) == {}  # η is CW's confidence, not a step size


@pytest.mark.parametrize("name", sorted(jcsol.VARIANTS))
def test_default_grid_is_a_grid_the_learner_takes(name):
    """The step size a class declares is one of its hyperparameters, over values its constructor accepts."""
    learner = jcsol.by_name(name)
    axes = protocols.default_grid(learner)
    assert set(axes) <= set(learner.hyperparameters())
    if axes:
        assert jcsol.grid(learner, **axes).hyperparameters()[learner.step_size].shape == (11,)
    assert (type(learner).__name__ in protocols.FIXED) == (not axes)


def test_select_and_rerun_chooses_the_best_mean_and_reruns_it_on_fresh_permutations(part):
    X, y = part
    sel = protocols.select_and_rerun(jcsol.ACOG(), X, y, grid={"eta": ETA3}, perms=3, key=5)
    means = sel.sweep.sum.mean(-1)
    assert sel.sweep.grid_shape == (3,)
    assert sel.index == (int(np.argmax(means)),)
    assert sel.chosen == {"eta": ETA3[sel.index[0]]}
    assert float(sel.result.learner.eta) == sel.chosen["eta"]
    assert sel.result.grid_shape == ()
    assert not np.array_equal(sel.result.orders, sel.sweep.orders)  # fresh permutations
    again = jcsol.run(jcsol.ACOG(eta=sel.chosen["eta"]), X, y, perms=3, key=6)  # key + 1
    np.testing.assert_array_equal(sel.result.counts, again.counts)
    same = protocols.select_and_rerun(jcsol.ACOG(), X, y, grid={"eta": ETA3}, perms=3, key=5, rerun=False)
    np.testing.assert_array_equal(same.result.counts, sel.sweep.counts[sel.index])


def test_select_minimises_cost_under_cost(part):
    X, y = part
    sel = protocols.select_and_rerun(
        jcsol.COG(loss="II"), X, y, grid={"eta": ETA3}, perms=2, objective=jcsol.Cost(c_p=0.9, c_n=0.1), rerun=False
    )
    assert sel.measure == "cost"
    assert sel.index == (int(np.argmin(sel.sweep.cost.mean(-1))),)


def test_cross_validation_folds_training_orders_and_held_out_counts(part):
    X, y = part
    cv = protocols.cross_validate(jcsol.ACOG(), X, y, folds=4, repeats=2, grid={"eta": ETA3}, key=3)
    n = len(y)
    assert cv.train.grid_shape == (3,)
    assert cv.train.n_perms == 8  # every fold and repeat in one run
    for r in range(2):
        sizes = np.bincount(cv.fold_of[r], minlength=4)
        pos = np.bincount(cv.fold_of[r][y > 0], minlength=4)
        assert sizes.max() - sizes.min() <= 1
        assert pos.max() - pos.min() <= 1  # stratified, balanced
    length = cv.train.orders.shape[1]
    for p in range(8):
        r, k = divmod(p, 4)
        order = cv.train.orders[p]
        train_rows = np.flatnonzero(cv.fold_of[r] != k)
        assert len(set(order)) == length
        assert set(order) <= set(train_rows)  # training rows only, each once
        assert len(train_rows) - length == cv.dropped[p] <= 1
        # held-out counts = the final mean vector of that run applied to the held-out rows
        mu = np.asarray(cv.train.states.mu)[cv.chosen_index[p] + (p,)]
        test = cv.fold_of[r] == k
        pred = X[test] @ mu >= 0
        lab = y[test] > 0
        expected = [np.sum(pred & lab), np.sum(~pred & lab), np.sum(pred & ~lab), np.sum(~pred & ~lab)]
        np.testing.assert_array_equal(cv.test.counts[cv.chosen_index[p] + (p,)], expected)
        # the choice is the best online *training* sum of that very run
        assert cv.chosen_index[p] == (int(np.argmax(cv.train.sum[:, p])),)
    assert cv.held_out().shape == (8,)
    assert cv.held_out_result.counts.sum() == 2 * n  # every example held out once per repeat
    np.testing.assert_allclose(cv.held_out_result.sum, cv.held_out())
    # a fold run on its own gives the same model
    alone = jcsol.run(jcsol.ACOG(eta=ETA3[cv.chosen_index[0][0]]), X, y, perms=cv.train.orders[:1], key=3)
    np.testing.assert_array_equal(alone.counts[0], cv.train.counts[cv.chosen_index[0] + (0,)])


def test_cross_validation_without_grid_and_errors(part):
    X, y = part
    cv = protocols.cross_validate(jcsol.ACOG(eta=10.0), X, y, folds=3, grid={})
    assert cv.train.grid_shape == ()
    assert cv.setting == "-"
    assert cv.held_out().shape == (3,)
    with pytest.raises(ValueError, match="folds"):
        protocols.cross_validate(jcsol.ACOG(), X, y, folds=1)


def _labels(n, share, seed):
    return np.where(np.random.default_rng(seed).random(n) < share, 1, -1).astype(np.int8)


@pytest.mark.parametrize(("n", "share", "folds"), [(103, 0.2, 5), (300, 0.3, 4), (57, 0.1, 3), (40, 0.5, 7)])
def test_cv_splits_are_stratified_disjoint_and_cover_every_row(n, share, folds):
    """Each repetition's test folds partition the rows; a run trains on the other folds only, each row once;
    every fold holds ⌊n/k⌋ or ⌈n/k⌉ rows and ⌊n_c/k⌋ or ⌈n_c/k⌉ rows of each class."""
    y = _labels(n, share, seed=n)
    sp = protocols.cv_splits(y, folds, repeats=3, seed=7)
    assert sp.train.shape[0] == sp.test.shape[0] == 3 * folds
    assert sp.fold_of.shape == (3, n)
    for r in range(3):
        tests = [sp.test[r * folds + k][sp.test_mask[r * folds + k]] for k in range(folds)]
        np.testing.assert_array_equal(np.sort(np.concatenate(tests)), np.arange(n))  # a partition
        for k in range(folds):
            p = r * folds + k
            np.testing.assert_array_equal(tests[k], np.flatnonzero(sp.fold_of[r] == k))
            train = sp.train[p]
            assert len(np.unique(train)) == len(train) == n - len(tests[k]) - sp.dropped[p]  # each row once
            assert not np.intersect1d(train, tests[k]).size  # disjoint from its fold
        for cls in (y > 0, y <= 0):
            per_fold = np.bincount(sp.fold_of[r][cls], minlength=folds)
            assert per_fold.max() - per_fold.min() <= 1
            assert per_fold.sum() == cls.sum()
        sizes = np.bincount(sp.fold_of[r], minlength=folds)
        assert sizes.max() - sizes.min() <= 1
    assert sp.dropped.max() <= 1
    assert sp.dropped.min() == 0


@pytest.mark.parametrize(("n", "share", "folds"), [(103, 0.2, 5), (300, 0.3, 4), (57, 0.1, 3), (41, 0.5, 7)])
def test_cv_splits_fold_sizes_per_class_are_those_of_stratified_kfold(n, share, folds):
    model_selection = pytest.importorskip("sklearn.model_selection")
    y = _labels(n, share, seed=n)
    y[0] = 1  # scikit-learn deals the classes in the order they first appear: positives first, as cv_splits
    sp = protocols.cv_splits(y, folds, seed=3)
    ours = [((y[sp.fold_of[0] == k] > 0).sum(), (y[sp.fold_of[0] == k] <= 0).sum()) for k in range(folds)]
    kfold = model_selection.StratifiedKFold(folds, shuffle=True, random_state=0)
    theirs = [((y[test] > 0).sum(), (y[test] <= 0).sum()) for _, test in kfold.split(np.zeros((n, 1)), y)]
    assert ours == theirs


def test_cv_splits_follow_the_seed_and_split_a_subset():
    y = _labels(120, 0.25, seed=1)
    a, b = protocols.cv_splits(y, 4, 2, seed=5), protocols.cv_splits(y, 4, 2, seed=5)
    for field in a._fields:
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))  # same seed, same splits
    other = protocols.cv_splits(y, 4, 2, seed=6)
    assert not np.array_equal(a.fold_of, other.fold_of)
    assert not np.array_equal(a.train, other.train)
    rows = np.arange(10, 110, 2)
    sub = protocols.cv_splits(y, 5, seed=0, subset=rows)
    assert set(sub.train.ravel()) <= set(rows)
    assert set(sub.test[sub.test_mask]) == set(rows)
    for cls in (y[rows] > 0, y[rows] <= 0):
        per_fold = np.bincount(sub.fold_of[0][cls], minlength=5)
        assert per_fold.max() - per_fold.min() <= 1
    plain = protocols.cv_splits(y, 4, seed=0, stratify=False)
    np.testing.assert_array_equal(np.sort(plain.test[plain.test_mask]), np.arange(120))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(folds=1), "folds must be an integer >= 2"),
        (dict(folds=2.5), "folds must be an integer >= 2"),
        (dict(repeats=0), "repeats must be an integer >= 1"),
        (dict(folds=9), "9 folds need at least 9 rows, got 8"),
    ],
)
def test_cv_splits_refuse_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        protocols.cv_splits(np.array([1, -1] * 4), **kwargs)


def test_cross_validation_uses_the_splitter(part):
    X, y = part
    cv = protocols.cross_validate(jcsol.ACOG(eta=10.0), X, y, folds=3, repeats=2, grid={}, key=4)
    sp = protocols.cv_splits(y, 3, 2, np.random.default_rng(4))
    np.testing.assert_array_equal(cv.fold_of, sp.fold_of)
    np.testing.assert_array_equal(cv.train.orders, sp.train)
    np.testing.assert_array_equal(cv.dropped, sp.dropped)


def test_varying_weights_is_one_run_with_each_weight_its_own_measure(part):
    X, y = part
    vw = protocols.varying_weights(jcsol.COG(), X, y, kind="sum", weights=[0.2, 0.5, 0.8], grid={"eta": ETA3}, perms=2)
    assert vw.result.grid_shape == (
        3,
        3,
    )
    assert vw.values.shape == (3, 2)
    sens, spec = vw.result.sensitivity, vw.result.specificity
    for j, a_n in enumerate([0.2, 0.5, 0.8]):
        manual = (1 - a_n) * sens[:, j] + a_n * spec[:, j]  # (eta, P)
        best = int(np.argmax(manual.mean(-1)))
        np.testing.assert_allclose(vw.values[j], manual[best])
        assert vw.chosen[j] == {"eta": ETA3[best]}
    # the weight is the objective's ρ too: a separate run with Sum(alpha_p=0.8) gives the same counts
    single = jcsol.run(jcsol.COG(eta=ETA3), X, y, perms=2, objective=jcsol.Sum(alpha_p=0.8))
    np.testing.assert_array_equal(single.counts, vw.result.counts[:, 0])


def test_varying_cost_weights(part):
    X, y = part
    vw = protocols.varying_weights(jcsol.ACOG(eta=10.0), X, y, kind="cost", weights=[0.1, 0.5], grid={}, perms=2)
    c = vw.result.counts
    for j, c_n in enumerate([0.1, 0.5]):
        np.testing.assert_allclose(vw.values[j], (1 - c_n) * c[j, :, metrics.FN] + c_n * c[j, :, metrics.FP])
    with pytest.raises(ValueError, match=r"weights must be in \(0, 1\)"):
        protocols.varying_weights(jcsol.ACOG(), X, y, weights=[0.0, 0.5])


def test_sensitivity_product_grid_and_figure_slices(part):
    X, y = part
    sens = protocols.sensitivity(jcsol.ACOG(loss="II"), X, y, axes={"eta": ETA3, "gamma": [0.1, 1.0, 10.0]}, perms=2)
    assert sens.result.grid_shape == (3, 3)
    np.testing.assert_array_equal(np.asarray(sens.result.learner.gamma)[0], [0.1, 1.0, 10.0])
    values, mean, std, fixed = sens.curve("eta")  # Fig. 5: γ at the learner's γ = 1
    assert fixed == {"gamma": 1.0}
    np.testing.assert_allclose(mean, sens.mean[:, 1])
    values, mean, _, fixed = sens.curve("gamma")  # Fig. 6: η at its best for γ = 1
    assert fixed == {"eta": ETA3[int(np.argmax(sens.mean[:, 1]))]}
    np.testing.assert_allclose(mean, sens.mean[ETA3.index(fixed["eta"]), :])
    _, mean, _, fixed = sens.curve("gamma", at={"eta": 0.1})
    assert fixed == {"eta": 0.1}
    np.testing.assert_allclose(mean, sens.mean[0])


def _old_sigma_reference(X, y, order, eta, gamma, rho, diagonal):
    """float64 NumPy loop of ACOG-I with the mean step along the *old* Σ_t (the ACOG paper's Fig. 7, green line)."""
    d = X.shape[1]
    mu, sigma = np.zeros(d), (np.ones(d) if diagonal else np.eye(d))
    preds = []
    for i in order:
        x, lab = X[i].astype(np.float64), float(y[i])
        f = mu @ x
        preds.append(f >= 0)
        r = rho if lab > 0 else 1.0
        if r - lab * f > 0:
            sx = sigma * x if diagonal else sigma @ x
            mu = mu + eta * lab * sx  # old Σ_t
            if diagonal:
                sigma = sigma - sx * sx / (gamma + sx @ x)
            else:
                sigma = sigma - np.outer(sx, sx) / (gamma + sx @ x)
    return np.array(preds), mu


@pytest.mark.parametrize("diagonal", [False, True])
def test_old_vs_new_sigma_rules(part, diagonal):
    X, y = part
    out = protocols.old_vs_new_sigma(X, y, loss="I", diagonal=diagonal, eta=ETA3, perms=2, key=1)
    assert out.result.grid_shape == (3, 2)
    acog = jcsol.run(jcsol.ACOG(eta=ETA3, diagonal=diagonal), X, y, perms=2, key=1)
    np.testing.assert_array_equal(out.result.counts[:, 1], acog.counts)  # new_sigma = 1 is ACOG
    rho = (y < 0).sum() / (y > 0).sum()
    order = out.result.orders[0]
    preds, mu = _old_sigma_reference(X, y, order, 10.0, 1.0, rho, diagonal)
    lab = y[order] > 0
    expected = [np.sum(preds & lab), np.sum(~preds & lab), np.sum(preds & ~lab), np.sum(~preds & ~lab)]
    np.testing.assert_array_equal(out.result.counts[1, 0, 0], expected)
    np.testing.assert_allclose(np.asarray(out.result.states.mu)[1, 0, 0], mu, rtol=2e-3, atol=2e-4)
    v = out.result.sum.mean(-1)
    assert out.chosen_eta == {"old": ETA3[int(np.argmax(v[:, 0]))], "new": ETA3[int(np.argmax(v[:, 1]))]}
    assert not np.array_equal(out.result.counts[:, 0], out.result.counts[:, 1])  # the rules differ


def test_offline_vs_laplace_pairs_the_permutations(part):
    X, y = part
    out = protocols.offline_vs_laplace(jcsol.COG(), X, y, grid={"eta": ETA3}, perms=2, rerun=False)
    assert out.offline.sweep.objective.rho == "offline"
    assert out.laplace.sweep.objective.rho == "laplace"
    np.testing.assert_array_equal(out.offline.sweep.orders, out.laplace.sweep.orders)
    assert not np.array_equal(out.offline.sweep.counts, out.laplace.sweep.counts)
    assert set(out.values) == {"offline", "laplace"}


def test_protocols_take_sparse_rows_and_scipy_matrices(part):
    """The held-out scoring of cross_validate and protocol_auc takes the rows a run takes: the same AUCs and
    held-out measures from dense rows, SparseRows and a CSR matrix."""
    sparse = pytest.importorskip("scipy.sparse")
    X, y = part
    X, y = X[:150], y[:150]
    rows = jcsol.SparseRows(np.tile(np.arange(X.shape[1]), (len(y), 1)), X, X.shape[1])
    kinds = (X, rows, sparse.csr_matrix(X))
    splits = protocols.cv_splits(y, 3, 1)
    aucs = [protocols.protocol_auc(jcsol.KOIL(), each, y, splits).auc for each in kinds]
    held = [
        protocols.cross_validate(jcsol.COG(), each, y, folds=3, grid={"eta": [0.1, 1.0]}).held_out() for each in kinds
    ]
    for other in range(1, 3):
        np.testing.assert_array_equal(aucs[other], aucs[0])
        np.testing.assert_array_equal(held[other], held[0])
