"""jcsol.sklearn.OnlineClassifier: scikit-learn's estimator checks, equality with jcsol.run, the label, ρ,
class_weight and sample_weight rules, Pipeline and GridSearchCV."""

import pickle

import jax
import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import jcsol  # noqa: E402
from jcsol import sklearn as jsk  # noqa: E402
from jcsol.sklearn import EXPECTED_FAILED_CHECKS, OnlineClassifier  # noqa: E402


@parametrize_with_checks(
    [OnlineClassifier()], expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS, xfail_strict=True
)
def test_sklearn_estimator_checks(estimator, check):
    """Every check passes except exactly those of EXPECTED_FAILED_CHECKS (strict: they must still fail)."""
    check(estimator)


@pytest.fixture(scope="module")
def german_raw():
    """german, not normalised (the estimator normalises), as float64 with ±1 labels."""
    X, y = jcsol.datasets.load("german", normalize=False, dtype=np.float64)
    return X, y


def _identity(n):
    return np.arange(n)[None]


@pytest.mark.parametrize(
    "learner", [jcsol.COG(eta=0.5), jcsol.ACOG(eta=0.1, diagonal=True, loss="II")], ids=["COG-I", "ACOG-II-diag"]
)
def test_fit_equals_one_run_over_the_rows_in_order(german_raw, learner):
    X, y = german_raw
    clf = OnlineClassifier(learner).fit(X, y)
    Xn = jcsol.datasets.l2_normalize(X).astype(np.float32)
    res = jcsol.run(learner, Xn, y, perms=_identity(len(y)))
    assert clf.pos_label_ == 1
    assert list(clf.classes_) == [-1, 1]  # 300 positives: the minority is +1
    np.testing.assert_allclose(clf.coef_[0], np.asarray(learner.weights(res.states))[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(clf.decision_function(X), res.score(Xn)[0], rtol=1e-5, atol=1e-6)
    assert np.abs(clf.coef_).max() > 0


@pytest.mark.parametrize("learner", [jcsol.COG(eta=0.5), jcsol.CW()], ids=lambda a: a.name)
def test_fit_and_partial_fit_step_through_the_rounds_of_run_bit_for_bit(german_raw, learner):
    """The estimator's pass is jcsol.run's rounds over one permutation, the identity: fit (offline ρ) and
    partial_fit in uneven batches (Laplace ρ, its counts carried from batch to batch) end in run's state, bit for
    bit, full covariance matrices included."""
    X, y = german_raw
    Xn = jcsol.datasets.l2_normalize(X).astype(np.float32)
    fitted = OnlineClassifier(learner).fit(X, y)
    res = jcsol.run(learner, Xn, y, perms=_identity(len(y)))
    for got, expected in zip(jax.tree.leaves(fitted.state_), jax.tree.leaves(res.states)):
        np.testing.assert_array_equal(got, np.asarray(expected)[0])
    streamed = OnlineClassifier(learner)
    for lo, hi in [(0, 170), (170, 171), (171, 1000)]:
        streamed.partial_fit(X[lo:hi], y[lo:hi], classes=[-1, 1])
    res = jcsol.run(learner, Xn, y, perms=_identity(len(y)), objective=jcsol.Sum(rho="laplace"))
    for got, expected in zip(jax.tree.leaves(streamed.state_), jax.tree.leaves(res.states)):
        np.testing.assert_array_equal(got, np.asarray(expected)[0])


def test_partial_fit_uses_laplace_and_equals_fit_with_laplace(german_raw):
    X, y = german_raw
    learner = jcsol.COG(eta=0.3, loss="II")
    whole = OnlineClassifier(learner, objective=jcsol.Sum(rho="laplace")).fit(X, y)
    streamed = OnlineClassifier(learner)  # default objective: offline in fit, Laplace in partial_fit
    for start in range(0, len(y), 170):  # uneven batches
        streamed.partial_fit(X[start : start + 170], y[start : start + 170], classes=[-1, 1])
    np.testing.assert_allclose(streamed.coef_, whole.coef_, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(streamed.n_seen_, [300, 700])
    # and both are jcsol.run with the Laplace ρ
    Xn = jcsol.datasets.l2_normalize(X).astype(np.float32)
    res = jcsol.run(learner, Xn, y, perms=_identity(len(y)), objective=jcsol.Sum(rho="laplace"))
    np.testing.assert_allclose(whole.coef_[0], np.asarray(res.states.w)[0], rtol=1e-5, atol=1e-7)
    # the offline ρ of fit gives another model
    offline = OnlineClassifier(learner).fit(X, y)
    assert not np.allclose(offline.coef_, whole.coef_)


def test_partial_fit_continues_the_same_pass(german_raw):
    X, y = german_raw
    a = OnlineClassifier(jcsol.ACOG(eta=0.2)).partial_fit(X[:400], y[:400], classes=np.array([-1, 1]))
    a.partial_fit(X[400:], y[400:])
    b = OnlineClassifier(jcsol.ACOG(eta=0.2)).partial_fit(X, y, classes=[1, -1])
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="classes must be passed"):
        OnlineClassifier().partial_fit(X[:10], y[:10])
    with pytest.raises(ValueError, match="not in classes"):
        OnlineClassifier().partial_fit(X[:10], np.where(y[:10] > 0, 2, -1), classes=[-1, 1])
    with pytest.raises(ValueError, match="single class"):
        OnlineClassifier().fit(X[y > 0], y[y > 0])
    # a first batch of one class is fine in a stream
    one = OnlineClassifier(objective=jcsol.Cost()).partial_fit(X[y > 0][:5], y[y > 0][:5], classes=[-1, 1])
    assert one.pos_label_ == -1  # absent from the first batch, so the rarer: pass pos_label for such streams
    assert OnlineClassifier(pos_label=1).partial_fit(X[y > 0][:5], y[y > 0][:5], classes=[-1, 1]).pos_label_ == 1


def test_string_labels_minority_and_pos_label(german_raw):
    X, y = german_raw
    names = np.where(y > 0, "bad", "good")
    numeric = OnlineClassifier(jcsol.COG(eta=0.5)).fit(X, y)
    named = OnlineClassifier(jcsol.COG(eta=0.5)).fit(X, names)
    assert list(named.classes_) == ["bad", "good"]
    assert named.pos_label_ == "bad"
    pred = named.predict(X)
    np.testing.assert_array_equal(pred, np.where(numeric.predict(X) > 0, "bad", "good"))
    # scikit-learn's orientation: decision > 0 means classes_[1] ("good"), so it is −f here
    dec = named.decision_function(X)
    np.testing.assert_allclose(dec, -numeric.decision_function(X), rtol=1e-6)
    nonzero = dec != 0
    assert nonzero.all()
    np.testing.assert_array_equal(pred[nonzero], named.classes_[(dec[nonzero] > 0).astype(int)])
    # pos_label picks the +1 class explicitly, and ρ then weighs that class
    flipped = OnlineClassifier(jcsol.COG(eta=0.5), pos_label="good").fit(X, names)
    assert flipped.pos_label_ == "good"
    assert not np.allclose(flipped.decision_function(X), dec)
    with pytest.raises(ValueError, match="pos_label"):
        OnlineClassifier(pos_label="ugly").fit(X, names)


def test_class_weight_is_rho(german_raw):
    X, y = german_raw
    learner = jcsol.COG(eta=0.5, loss="II")
    weighted = OnlineClassifier(learner, class_weight={1: 3.0, -1: 1.0}).fit(X, y)
    cost = OnlineClassifier(learner, objective=jcsol.Cost(c_p=0.75, c_n=0.25)).fit(X, y)
    np.testing.assert_allclose(weighted.coef_, cost.coef_, rtol=1e-5)
    balanced = OnlineClassifier(learner, class_weight="balanced").fit(X, y)
    default = OnlineClassifier(learner).fit(X, y)
    np.testing.assert_allclose(balanced.coef_, default.coef_, rtol=1e-6)
    assert not np.allclose(weighted.coef_, default.coef_)
    with pytest.raises(ValueError, match="either class_weight or objective"):
        OnlineClassifier(learner, objective=jcsol.Sum(), class_weight="balanced").fit(X, y)


def test_sample_weight_scales_rho_and_zero_removes(german_raw):
    X, y = german_raw
    X, y = X[:300], y[:300]
    rng = np.random.default_rng(0)
    sw = rng.choice([0.0, 0.5, 1.0, 2.0], size=len(y))
    eta = 0.4
    clf = OnlineClassifier(jcsol.COG(eta=eta, loss="II")).fit(X, y, sample_weight=sw)
    # float64 loop of the cost-sensitive update: ρ_t = s_t·ρ (positives) or s_t (negatives), ρ over rows with s_t > 0
    keep = sw > 0
    rho = ((y == -1) & keep).sum() / ((y == 1) & keep).sum()
    w = np.zeros(X.shape[1])
    for x, label, s in zip(jcsol.datasets.l2_normalize(X), y, sw):
        if s == 0:
            continue
        r = s * (rho if label > 0 else 1.0)
        if r * max(0.0, 1.0 - label * (w @ x)) > 0:
            w = w + eta * r * label * x
    np.testing.assert_allclose(clf.coef_[0], w, rtol=1e-4, atol=1e-5 * np.abs(w).max())
    # weight 0 is removal, exactly
    removed = OnlineClassifier(jcsol.COG(eta=eta, loss="II")).fit(X[keep], y[keep], sample_weight=sw[keep])
    np.testing.assert_array_equal(removed.coef_, clf.coef_)
    with pytest.raises(ValueError, match="(?i)negative"):
        OnlineClassifier().fit(X, y, sample_weight=-sw)


def test_params_nested_and_immutable_learner():
    learner = jcsol.ACOG(eta=0.1)
    clf = OnlineClassifier(learner)
    params = clf.get_params()
    assert params["learner__eta"] == 0.1
    assert params["learner__gamma"] == 1.0
    assert params["objective__alpha_p"] == 0.5  # the default objective's fields
    assert set(clf.get_params(deep=False)) < set(params)
    clf.set_params(learner__eta=0.5, learner__loss="II", objective__alpha_p=0.3)
    assert clf.learner.eta == 0.5
    assert clf.learner.loss == "II"
    assert isinstance(clf.learner, jcsol.ACOG)
    assert learner.eta == 0.1  # the frozen learner given was not mutated
    assert clf.objective == jcsol.Sum(alpha_p=0.3)
    # learner and its fields together: the object first, then the fields
    clf.set_params(learner=jcsol.COG(), learner__eta=2.0)
    assert clf.learner == jcsol.COG(eta=2.0)
    assert clone(clf).get_params()["learner__eta"] == 2.0
    with pytest.raises(ValueError, match="invalid parameter learner__nope"):
        clf.set_params(learner__nope=1.0)
    with pytest.raises(ValueError, match="> 0"):
        clf.set_params(learner__eta=-1.0)
    with pytest.raises(ValueError, match="array hyperparameters"):
        OnlineClassifier(jcsol.COG(eta=[0.1, 1.0])).fit(np.eye(4), [1, -1, 1, -1])


def test_one_compilation_per_batch_bucket_and_eta(german_raw):
    X, y = german_raw
    clf = OnlineClassifier(jcsol.COG(eta=0.1)).partial_fit(X[:20], y[:20], classes=[-1, 1])
    before = jsk._CONSUME.cache_size()
    for lo, hi in [(20, 45), (45, 75), (75, 100)]:  # 25, 30, 25 rows: one bucket of 32
        clf.partial_fit(X[lo:hi], y[lo:hi])
    clf.set_params(learner__eta=0.7).partial_fit(X[100:130], y[100:130])  # a new η is data, not code
    assert jsk._CONSUME.cache_size() - before <= 1
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.predict(X), clf.predict(X))


def test_pipeline_and_grid_search(german_raw):
    X, y = german_raw
    pipe = make_pipeline(StandardScaler(), OnlineClassifier(jcsol.COG(eta=0.1)))
    pipe.fit(X, y)
    manual = OnlineClassifier(jcsol.COG(eta=0.1)).fit(StandardScaler().fit_transform(X), y)
    np.testing.assert_array_equal(pipe.predict(X), manual.predict(StandardScaler().fit(X).transform(X)))
    assert pipe.score(X, y) > 0.6

    cv = KFold(3)
    etas = [1e-3, 1e-1, 10.0]
    search = GridSearchCV(pipe, {"onlineclassifier__learner__eta": etas}, cv=cv, scoring="balanced_accuracy")
    search.fit(X, y)
    assert search.best_params_["onlineclassifier__learner__eta"] in etas
    assert search.best_estimator_[-1].learner.eta == search.best_params_["onlineclassifier__learner__eta"]
    # the search's scores are those of separate cross-validations
    for eta, score in zip(etas, search.cv_results_["mean_test_score"]):
        single = make_pipeline(StandardScaler(), OnlineClassifier(jcsol.COG(eta=eta)))
        assert np.isclose(cross_val_score(single, X, y, cv=cv, scoring="balanced_accuracy").mean(), score)

    # a grid over whole learners, with a nested field as well
    by_learner = GridSearchCV(
        OnlineClassifier(),
        {"learner": [jcsol.COG(), jcsol.ACOG(diagonal=True)], "learner__eta": [0.1, 1.0]},
        cv=cv,
        scoring="balanced_accuracy",
    )
    by_learner.fit(X, y)
    tried = [(type(p["learner"]).__name__, p["learner__eta"]) for p in by_learner.cv_results_["params"]]
    assert sorted(tried) == [("ACOG", 0.1), ("ACOG", 1.0), ("COG", 0.1), ("COG", 1.0)]
    assert by_learner.best_estimator_.learner.eta == by_learner.best_params_["learner__eta"]


@pytest.mark.parametrize(
    ("params", "error"),
    [
        (dict(class_weight={1: 2.0, 7: 1.0}), r"class_weight has labels \[7\] that are not classes"),
        (dict(class_weight={1: "heavy"}), "class_weight values must be numbers"),
        (dict(class_weight={1: -1.0}), "finite and > 0"),
        (dict(normalize="yes"), "normalize must be True or False"),
        (dict(learner=jcsol.COG(eta=[0.1, 1.0])), "array hyperparameters"),
    ],
)
def test_bad_parameters_are_refused_by_fit(german_raw, params, error):
    X, y = german_raw
    labels = np.where(y > 0, 1, 0)
    with pytest.raises((TypeError, ValueError), match=error):
        OnlineClassifier(**params).fit(X[:50], labels[:50])


def test_values_beyond_float32_are_refused_unless_normalised(german_raw):
    X, y = german_raw
    X = X[:50].astype(np.float64)
    X[4, 1] = 1e300
    labels = np.where(y[:50] > 0, 1, 0)
    with pytest.raises(ValueError, match=r"X has 1 value\(s\) beyond the range of float32 .*row 4 \(1e\+300\)"):
        OnlineClassifier(normalize=False).fit(X, labels)
    assert OnlineClassifier().fit(X, labels).predict(X[4:5]).shape == (1,)  # its row normalised: it fits
