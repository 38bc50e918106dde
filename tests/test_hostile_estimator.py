"""jcsol.sklearn.OnlineClassifier against hostile input: every refused call leaves the estimator as it was (a
property test over random sequences of valid and refused calls), a partial_fit after a refused first call is a
first call, parameters are checked at fit time naming the parameter, sample weights that underflow in float32
are refused, empty batches are refused as SGDClassifier refuses them, and the cases a fraud team's data brings:
sparse matrices of every format and dtype, NaN in sparse data, object columns, int64 ids and nanosecond
timestamps as features, pickling and cloning."""

import pickle
import warnings

import jax
import numpy as np
import pytest

pytest.importorskip("sklearn")
hypothesis = pytest.importorskip("hypothesis")

import pandas as pd  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from scipy import sparse  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.linear_model import SGDClassifier  # noqa: E402

import jcsol  # noqa: E402
from jcsol import sklearn as jsk  # noqa: E402
from jcsol.sklearn import OnlineClassifier  # noqa: E402

RNG = np.random.default_rng(7)
X16 = RNG.normal(size=(16, 4))
Y16 = np.array([1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0])
FORMATS = ["csr", "csc", "coo", "bsr", "lil", "dok", "dia"]


def leaves(clf) -> dict:
    """Every attribute of ``clf`` as comparable leaves: arrays by dtype, shape and bytes, other values by type and
    value (objects without a value, such as a RandomState, by identity)."""

    def leaf(v):
        if isinstance(v, (np.ndarray, np.generic, jax.Array)):
            a = np.asarray(v)
            return ("array", a.dtype.str, a.shape, a.tobytes() if a.dtype != object else repr(a.tolist()))
        if isinstance(v, (str, bytes, int, float, complex, bool, type(None))):
            return (type(v).__name__, v)
        return ("object", type(v).__name__, id(v))

    out = {}
    for name, value in vars(clf).items():
        flat, treedef = jax.tree.flatten(value, is_leaf=lambda v: isinstance(v, dict) and not v)
        out[name] = (str(treedef), [leaf(v) for v in flat])
    return out


def refused(clf, call, *errors):
    """``call(clf)`` raises one of ``errors`` (ValueError, TypeError by default) and leaves ``clf`` as it was."""
    before = leaves(clf)
    with pytest.raises(errors or (ValueError, TypeError)):
        call(clf)
    assert leaves(clf) == before


# -- the property: a refused call changes nothing ---------------------------------------------------------------

HOSTILE_CALLS = {
    "fit one class": lambda c: c.fit(X16, np.ones(16)),
    "fit NaN": lambda c: c.fit(np.where(X16 > 1, np.nan, X16), Y16),
    "fit inf in sparse": lambda c: c.fit(sparse.csr_matrix(np.where(X16 > 1, np.inf, X16)), Y16),
    "fit three classes": lambda c: c.fit(X16, np.arange(16) % 3),
    "fit NaN labels": lambda c: c.fit(X16, np.where(Y16 > 0, np.nan, 0.0)),
    "fit other features, one class": lambda c: c.fit(X16[:, :3], np.zeros(16)),
    "fit negative weights": lambda c: c.fit(X16, Y16, sample_weight=-np.ones(16)),
    "fit NaN weights": lambda c: c.fit(X16, Y16, sample_weight=np.full(16, np.nan)),
    "fit weights of 1e-46": lambda c: c.fit(X16, Y16, sample_weight=np.full(16, 1e-46)),
    "fit weights beyond float32": lambda c: c.fit(X16, Y16, sample_weight=np.full(16, 1e300)),
    "fit weights of another length": lambda c: c.fit(X16, Y16, sample_weight=np.ones(5)),
    "fit all-zero weights": lambda c: c.fit(X16, Y16, sample_weight=np.zeros(16)),
    "fit a class weighed 0 (offline rho)": lambda c: c.fit(X16, Y16, sample_weight=(Y16 == 0).astype(float)),
    "fit empty": lambda c: c.fit(np.empty((0, 4)), np.empty(0)),
    "fit ids beyond 2**53": lambda c: c.fit(np.column_stack([X16.astype(object), [2**60 + i for i in range(16)]]), Y16),
    "fit text": lambda c: c.fit(np.where(X16 > 1, "x", X16.astype(str)).astype(object), Y16),
    "partial_fit unknown label": lambda c: c.partial_fit(X16, np.where(Y16 > 0, 2, 0), classes=[0, 1]),
    "partial_fit three classes": lambda c: c.partial_fit(X16, Y16, classes=[0, 1, 2]),
    "partial_fit NaN class": lambda c: c.partial_fit(X16, Y16, classes=[0, np.nan]),
    "partial_fit mixed classes": lambda c: c.partial_fit(X16, Y16, classes=["a", 1]),
    "partial_fit 2-D classes": lambda c: c.partial_fit(X16, Y16, classes=[[0, 1]]),
    "partial_fit wrong weights": lambda c: c.partial_fit(X16[:, :3], Y16, classes=[0, 1], sample_weight=np.ones(2)),
    "partial_fit empty": lambda c: c.partial_fit(sparse.csr_matrix((0, 4)), np.empty(0), classes=[0, 1]),
    "partial_fit empty int": lambda c: c.partial_fit(np.empty((0, 4), np.int64), np.empty(0, int), classes=[0, 1]),
    "partial_fit NaN sparse": lambda c: c.partial_fit(
        sparse.coo_matrix(np.where(X16 > 0, np.nan, 0)), Y16, classes=[0, 1]
    ),
    "partial_fit without classes, unfitted or not": lambda c: c.partial_fit(X16, np.where(Y16 > 0, "a", "b")),
    "predict NaN": lambda c: c.predict(np.full((2, 4), np.nan)),
    "predict other features": lambda c: c.predict(X16[:, :3]),
    "predict empty": lambda c: c.predict(np.empty((0, 4))),
    "decision_function text": lambda c: c.decision_function(np.array([["a"] * 4])),
    "score wrong length": lambda c: c.score(X16, Y16[:3]),
    "set_params unknown among known": lambda c: c.set_params(normalize=False, dtype="float64", nope=1),
    "set_params refused field among others": lambda c: c.set_params(normalize=False, learner__eta=-1.0),
    "set_params unknown field": lambda c: c.set_params(objective__nope=1.0, learner__eta=0.5),
}

#: parameters that fit and partial_fit refuse (set_params takes them, as scikit-learn asks)
BAD_PARAMETERS = {
    "learner": ("COG", "learner must be a jcsol learner"),
    "learner grid": (jcsol.COG(eta=[0.1, 1.0]), "array hyperparameters"),
    "objective": (jcsol.COG(), "objective must be jcsol.Sum"),
    "objective grid": (jcsol.Sum(alpha_p=[0.2, 0.5]), "objective's hyperparameters must be scalars"),
    "dtype": ("int32", "dtype must be float32 or float64"),
    "dtype text": ("helloworld", "dtype must be float32 or float64"),
    "dtype dict": ({}, "dtype must be float32 or float64"),
    "random_state": (2**32, r"random_state must be None, an int in \[0, 2\*\*32\)"),
    "random_state float": (3.0, "random_state must be None"),
    "random_state bool": (True, "random_state must be None"),
    "normalize": ("yes", "normalize must be True or False"),
    "class_weight list": ([1], "class_weight must be None, 'balanced' or a dict"),
    "class_weight text": ("helloworld", "class_weight must be None, 'balanced' or a dict"),
    "class_weight bool value": ({1: True}, "class_weight values must be numbers"),
    "class_weight label": ({5: 1.0}, r"class_weight has labels \[5\]"),
    "class_weight ratio beyond float32": ({1: 1e300, 0: 1e-300}, "set by class_weight"),
    "pos_label": ("z", "pos_label='z' is not one of the classes"),
    "pos_label bool for ints": (True, "pos_label=True is not one of the classes"),
    "pos_label array": (np.array([1, 0]), "is not one of the classes"),
}


def _bad_parameter_call(key: str):
    name = key.split()[0]
    value = BAD_PARAMETERS[key][0]

    def call(c):
        old = c.get_params(deep=False)[name]
        c.set_params(**{name: value})
        try:
            refused(c, lambda c: c.fit(X16, Y16))
            refused(c, lambda c: c.partial_fit(X16, Y16, classes=[0, 1]))
            if name == "normalize" and hasattr(c, "state_"):  # the one parameter predict reads
                refused(c, lambda c: c.predict(X16))
        finally:
            c.set_params(**{name: old})

    return call


def _valid(kind: str, seed: int):
    order = np.random.default_rng(seed).permutation(16)
    X, y = X16[order], Y16[order]
    if kind == "fit":
        return lambda c: c.fit(X, y)
    if kind == "partial_fit":
        return lambda c: c.partial_fit(sparse.csr_matrix(X[:12]), y[:12], classes=[0, 1])
    return lambda c: c.set_params(learner__eta=float(1 + seed % 3))


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("hostile"), st.sampled_from(sorted(HOSTILE_CALLS))),
            st.tuples(st.just("parameter"), st.sampled_from(sorted(BAD_PARAMETERS))),
            st.tuples(st.sampled_from(["fit", "partial_fit", "set_params"]), st.integers(0, 5)),
        ),
        min_size=1,
        max_size=8,
    ),
    learner=st.sampled_from([jcsol.COG(eta=0.5, loss="II"), jcsol.ACOG(eta=0.1, diagonal=True)]),
)
def test_every_refused_call_leaves_the_estimator_as_it_was(steps, learner):
    """Random sequences of valid calls and refused ones: after each refused call every attribute (the state's
    arrays, classes_, n_features_in_, n_seen_, the parameters) equals, leaf by leaf, what it was before."""
    clf = OnlineClassifier(learner)
    for kind, arg in steps:
        if kind == "hostile":
            refused(clf, HOSTILE_CALLS[arg])
        elif kind == "parameter":
            _bad_parameter_call(arg)(clf)
        else:
            _valid(kind, arg)(clf)
    if hasattr(clf, "state_"):  # still a working model
        assert clf.predict(X16).shape == (16,)


@pytest.mark.parametrize("key", sorted(BAD_PARAMETERS))
def test_parameters_are_stored_by_set_params_and_refused_by_fit_naming_them(key):
    name = key.split()[0]
    value, message = BAD_PARAMETERS[key]
    clf = OnlineClassifier(**{name: value})  # neither __init__ nor set_params raises (scikit-learn's convention)
    OnlineClassifier().set_params(**{name: value})
    for call in (lambda c: c.fit(X16, Y16), lambda c: c.partial_fit(X16, Y16, classes=[0, 1])):
        with pytest.raises((ValueError, TypeError), match=message):
            call(clf)
        assert not hasattr(clf, "state_")
        assert not hasattr(clf, "classes_")
        assert not hasattr(clf, "n_features_in_")


def test_a_refused_random_state_draw_happens_only_after_every_check():
    state = np.random.RandomState(3)
    before = state.get_state()[1].copy()
    refused(OnlineClassifier(random_state=state), HOSTILE_CALLS["fit weights of 1e-46"])
    np.testing.assert_array_equal(state.get_state()[1], before)


def test_an_interrupted_pass_restores_the_model(monkeypatch):
    """A KeyboardInterrupt between two blocks of rows leaves the model of before the call."""
    clf = OnlineClassifier(jcsol.COG(eta=0.5)).fit(X16, Y16)
    monkeypatch.setattr(jsk, "BLOCK_BYTES", 8 * 4 * 4)  # four rows a block
    calls = []
    consume = jsk._consume

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return consume(*args, **kwargs)

    monkeypatch.setattr(jsk, "_consume", interrupted)
    refused(clf, lambda c: c.partial_fit(X16, Y16), KeyboardInterrupt)
    assert len(calls) == 2
    monkeypatch.setattr(jsk, "_consume", consume)
    blocks = clone(clf).fit(X16, Y16).partial_fit(X16, Y16)  # four blocks of four rows: the bits of one scan
    monkeypatch.setattr(jsk, "BLOCK_BYTES", 2**27)
    whole = clone(clf).fit(X16, Y16).partial_fit(X16, Y16)
    np.testing.assert_array_equal(blocks.state_.w, whole.state_.w)


# -- partial_fit after a refused first call -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "message"),
    [
        (lambda c: c.partial_fit(np.full((16, 4), np.nan), Y16, classes=[0, 1]), "contains NaN"),
        (lambda c: c.partial_fit(X16, Y16, classes=[0, 1], sample_weight=-np.ones(16)), "Negative values"),
        (lambda c: c.partial_fit(X16[:, :3], np.where(Y16 > 0, 5, 0), classes=[0, 1]), r"labels \[5\] not in"),
        (lambda c: c.partial_fit(X16, Y16, classes=[0, 1], sample_weight=np.full(16, 1e-46)), "would underflow"),
        (lambda c: c.set_params(dtype="float16").partial_fit(X16, Y16, classes=[0, 1]), "float16"),
    ],
    ids=["NaN", "negative weights", "unknown label and other features", "weights 1e-46", "dtype"],
)
def test_partial_fit_after_a_refused_first_call_is_a_first_call(first, message):
    clf = OnlineClassifier(jcsol.COG(eta=0.5, loss="II"))
    with pytest.raises(ValueError, match=message):
        first(clf)
    clf.set_params(dtype="float32")
    clf.partial_fit(X16[:, :2], Y16, classes=[0, 1])  # another width: a first call
    fresh = OnlineClassifier(jcsol.COG(eta=0.5, loss="II")).partial_fit(X16[:, :2], Y16, classes=[0, 1])
    assert clf.n_features_in_ == 2
    np.testing.assert_array_equal(clf.state_.w, fresh.state_.w)
    np.testing.assert_array_equal(clf.n_seen_, fresh.n_seen_)


# -- set_params ---------------------------------------------------------------------------------------------------


def test_set_params_sets_all_or_nothing():
    clf = OnlineClassifier(jcsol.COG(eta=0.5))
    refused(clf, lambda c: c.set_params(normalize=False, learner__eta=-1.0))
    refused(clf, lambda c: c.set_params(learner=jcsol.ACOG(), objective__nope=1.0))
    refused(clf, lambda c: c.set_params(learner="COG", learner__eta=1.0))
    with pytest.raises(ValueError, match="Invalid parameter 'nope'"):
        clf.set_params(nope=1)
    clf.set_params(learner=jcsol.ACOG(), learner__eta=2.0, normalize=False)
    assert clf.learner == jcsol.ACOG(eta=2.0)
    assert clf.normalize is False


def test_partial_fit_refuses_to_continue_with_another_model_and_predict_keeps_the_fitted_one():
    clf = OnlineClassifier(jcsol.COG(eta=0.5)).partial_fit(X16, Y16, classes=[0, 1])
    scores = clf.decision_function(X16)
    clf.set_params(learner=jcsol.ACOG())
    np.testing.assert_array_equal(clf.decision_function(X16), scores)  # the fitted learner_ scores
    refused(clf, lambda c: c.partial_fit(X16, Y16), ValueError)
    with pytest.raises(ValueError, match="cannot continue the model of COG"):
        clf.partial_fit(X16, Y16)
    clf.set_params(learner=jcsol.COG(eta=0.5, loss="II"))  # another static option: the same state, refused too
    refused(clf, lambda c: c.partial_fit(X16, Y16), ValueError)
    clf.set_params(learner=jcsol.COG(eta=2.0))  # another float hyperparameter continues the model
    clf.partial_fit(X16, Y16)
    assert clf.learner_ == jcsol.COG(eta=2.0)
    with pytest.raises(ValueError, match="pos_label=0 differs from pos_label_=1"):
        clf.set_params(pos_label=0).partial_fit(X16, Y16)
    clf.set_params(pos_label=None)
    named = OnlineClassifier(pos_label="fraud").partial_fit(
        X16, np.where(Y16 > 0, "fraud", "ok").astype(object), ["fraud", "ok"]
    )
    with pytest.raises(ValueError, match="pos_label='ok' differs from pos_label_='fraud'"):
        named.set_params(pos_label="ok").partial_fit(X16, np.where(Y16 > 0, "fraud", "ok"))
    if not jax.config.jax_enable_x64:
        with pytest.raises(ValueError, match="needs 64-bit JAX"):
            clf.set_params(dtype="float64").partial_fit(X16, Y16)


def test_partial_fit_refuses_a_learner_of_another_kind_even_where_its_state_has_the_same_layout():
    clf = OnlineClassifier(jcsol.COG(eta=0.5)).partial_fit(X16, Y16, classes=[0, 1])
    layout = lambda learner: [(a.shape, a.dtype) for a in jax.tree.leaves(learner.init(4, jax.random.key(0)))]
    assert layout(jcsol.PA1()) == layout(jcsol.COG())  # the same arrays: only the kind tells them apart
    clf.set_params(learner=jcsol.PA1())
    refused(clf, lambda c: c.partial_fit(X16, Y16), ValueError)
    with pytest.raises(ValueError, match=r"learner=PA1\(.*\) cannot continue the model of COG\("):
        clf.partial_fit(X16, Y16)
    assert clf.learner_ == jcsol.COG(eta=0.5)


def test_labels_of_another_kind_than_the_classes():
    clf = OnlineClassifier().partial_fit(X16, Y16, classes=[0, 1])
    with pytest.raises(ValueError, match=r"y holds labels \['0', '1'\] not in classes \[0, 1\]"):
        clf.partial_fit(X16, Y16.astype(str))
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        OnlineClassifier().partial_fit(X16, Y16)
    # pos_label: equal to a class and of its kind; 1.0 names the class 1
    assert OnlineClassifier(pos_label=1.0).fit(X16, Y16).pos_label_ == 1
    assert OnlineClassifier(pos_label=True).fit(X16, Y16 > 0).pos_label_ is np.True_


# -- sample weights and ρ in float32 --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("weight", "match"),
    [
        (1e-46, r"row 4, s_t = 1e-46, ρ_t = 0, whose update would underflow to 0"),
        (1e-40, "underflow to 0"),  # subnormal in float32: XLA flushes it to 0
        (1e300, r"sample_weight has 1 value\(s\) beyond the range of float32 .* row 4"),
        (3e38, r"ρ_t = inf, whose update would overflow"),  # a float32 number, times ρ = 3: beyond float32
    ],
)
def test_sample_weights_whose_rho_t_is_no_normal_float32_are_refused(weight, match):
    sw = np.ones(16)
    sw[4] = weight  # a positive row: ρ_t = 3·s_t
    clf = OnlineClassifier(jcsol.COG(eta=0.5), objective=jcsol.Cost(c_p=0.75, c_n=0.25))
    with pytest.raises(ValueError, match=match):
        clf.fit(X16, Y16, sample_weight=sw)
    sw[4] = 0.0  # zero skips the row
    assert np.abs(clf.fit(X16, Y16, sample_weight=sw).coef_).max() > 0


def test_rho_beyond_float32_is_refused_naming_what_set_it():
    with pytest.raises(ValueError, match=r"ρ = inf set by the objective for row 0"):
        OnlineClassifier(objective=jcsol.Cost(c_p=1.0 - 1e-45, c_n=1e-45)).fit(X16, Y16)
    with pytest.raises(ValueError, match=r"ρ set by class_weight=\{1: 1e-300\} in float32: .*rho must be > 0"):
        OnlineClassifier(class_weight={1: 1e-300}).fit(X16, Y16)
    # weights small but normal once multiplied by ρ are fine, and learn (the same model, scaled, for loss II)
    small = OnlineClassifier(jcsol.COG(eta=1.0, loss="II"), objective=jcsol.Cost(c_p=0.5, c_n=0.5))
    small.fit(X16, Y16, sample_weight=np.full(16, 1e-30))
    assert np.abs(small.coef_).max() > 0


def test_a_model_that_never_moves_or_diverges_warns():
    with pytest.warns(RuntimeWarning, match=r"still w = 0 after \d+ row\(s\) with a positive loss"):
        OnlineClassifier(jcsol.COG(eta=1e-45)).fit(X16, Y16)  # η is 0 in float32
    with pytest.warns(RuntimeWarning, match="non-finite weights"):
        OnlineClassifier(jcsol.COG(eta=1e38, loss="II"), normalize=False).fit(X16 * 1e4, Y16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OnlineClassifier(jcsol.COG(eta=0.5)).fit(X16, Y16)
        OnlineClassifier(jcsol.COG(eta=0.5)).fit(np.zeros_like(X16), Y16)  # rows without features teach nothing


NORMALISED = OnlineClassifier(jcsol.COG(eta=0.5, loss="II")).fit(X16, Y16)


@settings(max_examples=25, deadline=None)
@given(k=st.integers(-300, 300))
def test_rows_scaled_by_ten_to_the_k_learn_as_the_unscaled_rows_when_normalised(k):
    """Normalised rows (the default) are the same rows at any scale float64 holds, 1e-300 to 1e300."""
    scaled = OnlineClassifier(jcsol.COG(eta=0.5, loss="II")).fit(X16 * 10.0**k, Y16)
    np.testing.assert_allclose(scaled.coef_, NORMALISED.coef_, rtol=1e-6)
    np.testing.assert_array_equal(scaled.predict(X16 * 10.0**k), NORMALISED.predict(X16))


@pytest.mark.parametrize("k", [-44, -20, 20, 37])
def test_rows_not_normalised_beyond_the_learners_scales_warn(k):
    lo, hi = jcsol.COG().row_scales(4, np.float32)
    assert not lo <= np.abs(X16 * 10.0**k).max(axis=1).min() <= hi
    with pytest.warns(RuntimeWarning, match=r"rows of X have their largest \|entry\| outside"):
        OnlineClassifier(jcsol.COG(eta=0.5), normalize=False).fit(X16 * 10.0**k, Y16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OnlineClassifier(jcsol.COG(eta=0.5), normalize=False).fit(X16, Y16)
        OnlineClassifier(jcsol.COG(eta=0.5), normalize=False).fit(sparse.csr_matrix(X16), Y16)


# -- empty batches, sparse formats, dtypes -----------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["dense"] + FORMATS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.bool_])
def test_empty_batches_are_refused_as_sgdclassifier_refuses_them(fmt, dtype):
    def empty(d=4):
        dense = np.empty((0, d), dtype)
        return dense if fmt == "dense" else sparse.csr_matrix(dense).asformat(fmt)

    fitted = OnlineClassifier().fit(X16, Y16)
    sgd = SGDClassifier().fit(X16, Y16)
    for est in (OnlineClassifier(), SGDClassifier()):
        with pytest.raises(ValueError, match="0 sample"):
            est.partial_fit(empty(), np.empty(0), classes=[0, 1])
    for est in (fitted, sgd):
        with pytest.raises(ValueError, match="0 sample"):
            est.predict(empty())
        with pytest.raises(ValueError, match="0 sample"):
            est.partial_fit(empty(), np.empty(0))
    refused(fitted, lambda c: c.fit(empty(), np.empty(0)))
    refused(fitted, lambda c: c.decision_function(empty()))
    with pytest.raises(ValueError, match="0 feature"):
        OnlineClassifier().fit(
            np.empty((16, 0), dtype) if fmt == "dense" else sparse.csr_matrix((16, 0), dtype=dtype).asformat(fmt), Y16
        )


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64, np.bool_])
def test_sparse_of_every_format_and_dtype_learns_as_the_dense_rows(fmt, dtype):
    dense = np.where(np.abs(X16) > 0.7, np.round(X16 * 3), 0).astype(dtype)
    a = OnlineClassifier(jcsol.ACOG(eta=0.1, diagonal=True)).fit(sparse.csr_matrix(dense).asformat(fmt), Y16)
    b = OnlineClassifier(jcsol.ACOG(eta=0.1, diagonal=True)).fit(dense, Y16)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.decision_function(sparse.coo_matrix(dense)), b.decision_function(dense))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_and_inf_in_sparse_data_are_refused(fmt, bad):
    dense = np.where(np.abs(X16) > 0.7, X16, 0)
    dense[5, 2] = bad
    clf = OnlineClassifier().fit(X16, Y16)
    refused(clf, lambda c: c.partial_fit(sparse.csr_matrix(dense).asformat(fmt), Y16))
    refused(clf, lambda c: c.predict(sparse.csr_matrix(dense).asformat(fmt)))


def test_a_sparse_batch_is_densified_a_block_of_rows_at_a_time(monkeypatch):
    """A wide sparse batch never becomes one dense array: the same model, block by block."""
    wide = sparse.random(40, 5_000, density=2e-3, format="csr", random_state=0, dtype=np.float64)
    y = np.arange(40) % 4 == 0
    whole = OnlineClassifier(jcsol.COG(eta=0.5)).fit(wide, y)
    monkeypatch.setattr(jsk, "BLOCK_BYTES", 8 * 5_000 * 3)  # three rows a block
    blocks = OnlineClassifier(jcsol.COG(eta=0.5)).fit(wide, y)
    np.testing.assert_array_equal(blocks.coef_, whole.coef_)
    np.testing.assert_array_equal(blocks.decision_function(wide), whole.decision_function(wide))


def test_a_state_too_large_for_memory_is_refused_before_it_is_made():
    clf = OnlineClassifier(jcsol.ACOG(eta=0.1))  # full covariance: d × d
    with pytest.raises(MemoryError, match="ACOG-I with d=1000000 needs 3725.29 GiB of state"):
        clf.fit(sparse.csr_matrix((16, 1_000_000)), Y16)
    assert not hasattr(clf, "state_")
    assert not hasattr(clf, "n_features_in_")


# -- a fraud team's data ------------------------------------------------------------------------------------------


def test_int64_ids_and_nanosecond_timestamps_as_features_are_refused_naming_them():
    ids = np.column_stack([np.arange(16) + 10**17, np.round(X16[:, 0] * 100)]).astype(np.int64)
    with pytest.raises(ValueError, match=r"X holds the integer 100000000000000000 at row 0, column 0 \(16 such"):
        OnlineClassifier().fit(ids, Y16)
    hours = 1_767_225_600 + 3_600 * np.arange(16, dtype=np.int64)
    stamps = pd.DataFrame({"amount": X16[:, 0], "ts": hours * 10**9})  # epoch nanoseconds, int64
    with pytest.raises(ValueError, match=r"at row 0, column 'ts'.*timestamp in nanoseconds"):
        OnlineClassifier().fit(stamps, Y16)
    arrow = pytest.importorskip("pyarrow").table({"amount": X16[:, 0], "ts": hours * 10**9})
    with pytest.raises(ValueError, match=r"at row 0, column 'ts'.*timestamp in nanoseconds"):
        OnlineClassifier().fit(arrow, Y16)
    with pytest.raises(ValueError, match=r"the integer 10000000000000000000000000000000 at row 2, column 1"):
        OnlineClassifier().fit([[1.0, 2], [1.0, 3], [1.0, 10**31]] * 5 + [[0.0, 1]], Y16)
    with pytest.raises(ValueError, match="column 3"):
        OnlineClassifier().fit(
            sparse.csr_matrix(np.column_stack([ids[:, 1:], ids[:, 1:], ids[:, 1:], ids[:, :1]])), Y16
        )
    # integers float64 holds exactly are numbers like any other
    small = np.round(X16 * 1000).astype(np.int64)
    np.testing.assert_array_equal(
        OnlineClassifier().fit(small, Y16).coef_, OnlineClassifier().fit(small.astype(float), Y16).coef_
    )
    np.testing.assert_array_equal(
        OnlineClassifier().fit(np.abs(small).astype(np.uint64) + 2**40, Y16).coef_,
        OnlineClassifier().fit(np.abs(small).astype(float) + 2**40, Y16).coef_,
    )


def test_data_frames_with_object_columns():
    frame = pd.DataFrame(X16, columns=list("abcd"))
    mixed = frame.astype({"d": object})
    ref = OnlineClassifier().fit(frame, Y16)
    np.testing.assert_array_equal(OnlineClassifier().fit(mixed, Y16).coef_, ref.coef_)
    text = mixed.copy()
    text.loc[5, "d"] = "n/a"
    with pytest.raises(ValueError, match=r"X holds 'n/a' at row 5, column 'd', which is not a number"):
        OnlineClassifier().fit(text, Y16)
    refused(ref, lambda c: c.predict(text))
    odd = mixed.copy()
    column = odd["d"].to_numpy(copy=True)
    column[7] = {"k": 1}
    odd["d"] = column
    with pytest.raises(TypeError, match=r"at row 7, column 'd'"):
        OnlineClassifier().fit(odd, Y16)
    missing = mixed.copy()
    missing.loc[2, "d"] = None
    with pytest.raises(ValueError, match="X holds None at row 2, column 'd', a missing value"):
        OnlineClassifier().fit(missing, Y16)
    with pytest.raises(ValueError, match="NaN"):
        OnlineClassifier().fit(frame.where(frame > -1), Y16)  # float NaN: scikit-learn's own refusal
    dated = frame.assign(ts=pd.date_range("2026-01-01", periods=16, freq="h"))
    with pytest.raises(TypeError, match=r"X holds .*2026-01-01.* at row 0, column 'ts', a datetime or a duration"):
        OnlineClassifier().fit(dated, Y16)


def test_pickle_a_fitted_estimator_and_continue_bit_for_bit():
    X, y = jcsol.datasets.load("german", normalize=False, dtype=np.float64)
    straight = OnlineClassifier(jcsol.ACOG(eta=0.2), class_weight="balanced").partial_fit(X[:500], y[:500], [-1, 1])
    restored = pickle.loads(pickle.dumps(straight))
    refused(restored, lambda c: c.partial_fit(X[500:], y[500:] * 2))  # a refusal after the restore changes nothing
    straight.partial_fit(X[500:], y[500:])
    restored.partial_fit(X[500:], y[500:])
    for a, b in zip(jax.tree.leaves(straight.state_), jax.tree.leaves(restored.state_)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(straight.n_seen_, restored.n_seen_)


def test_clone_gives_an_unfitted_copy_that_learns_the_same():
    clf = OnlineClassifier(jcsol.COG(eta=0.3), pos_label=1, random_state=4).fit(X16, Y16)
    twin = clone(clf)
    assert not hasattr(twin, "state_")
    assert twin.get_params() == clf.get_params()
    np.testing.assert_array_equal(twin.fit(X16, Y16).coef_, clf.coef_)
    # a clone of an estimator whose parameters fit refuses: refused the same way
    bad = clone(OnlineClassifier(random_state=-1))
    refused(bad, lambda c: c.fit(X16, Y16))


def test_a_kernel_learner_has_no_coef():
    clf = OnlineClassifier(jcsol.by_name("NORMA"), random_state=0).fit(X16, Y16)
    assert not hasattr(clf, "coef_")
    assert clf.predict(X16).shape == (16,)


@pytest.mark.parametrize(("first", "then"), [(True, False), (False, True)])
def test_partial_fit_refuses_to_continue_a_model_with_rows_normalised_otherwise(first, then):
    """The model learnt on rows of one scale would continue on rows of another, as ``scale`` is refused."""
    clf = OnlineClassifier(normalize=first).partial_fit(X16, Y16, classes=[0, 1])
    assert clf.normalize_ is first
    clf.set_params(normalize=then)
    refused(clf, lambda c: c.partial_fit(X16, Y16), ValueError)
    with pytest.raises(ValueError, match=f"normalize={then} differs from the model's {first}"):
        clf.partial_fit(X16, Y16)
    clf.fit(X16, Y16)  # fit starts over with it
    assert clf.normalize_ is then
    clf.partial_fit(X16, Y16)
