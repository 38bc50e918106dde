"""The public API as a fraud team's data meets it: ``jcsol.run`` on every odd kind of rows and labels, the
methods of :class:`jcsol.Result`, the measures, the LIBSVM reader, tables and the command line, and the memory
check that refuses a run before the kernel's OOM killer would end it. Each input ends in one clear error raised
before any work (naming the argument), or in the result the plain input gives; scikit-learn and SciPy are the
independent references where they compute the same thing."""

import json
import math
import re

import jax
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from conftest import run_cli

import jcsol
from jcsol import devices, metrics
from jcsol.core import checks
from jcsol.core.programs import lowered_chunk
from jcsol.datasets import binarize, l2_normalize, read_libsvm
from jcsol.stream import SparseRows, check_labels, check_stream

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

RNG = np.random.default_rng(7)
X = RNG.normal(size=(40, 5))
Y = np.where(RNG.random(40) < 0.3, 1, -1).astype(np.int64)
Y[:2] = (1, -1)
PA = jcsol.PA()


def counts(X_, y_, **options):
    """The confusion counts of PA over two permutations: every accepted input below is compared by them."""
    return jcsol.run(PA, X_, y_, perms=2, **options).counts


@pytest.fixture(scope="module")
def plain():
    return counts(X, Y)


# -- the memory check -------------------------------------------------------------------------------------


def recorded_need(monkeypatch, learner, X_, y_, **options) -> int:
    """The bytes :func:`jcsol.run` asks for the learners' states, rows, curve and scores (no run follows)."""
    asked = []

    class Asked(Exception):
        pass

    def record(need, what, hint):
        if "state per run" in what:
            asked.append(need)
            raise Asked

    monkeypatch.setattr(checks, "require_memory", record)
    with pytest.raises(Asked):
        jcsol.run(learner, X_, y_, **options)
    return asked[0]


@pytest.mark.parametrize("learner", [jcsol.ACOG(), jcsol.CW(), jcsol.PA()], ids=lambda lr: lr.name)
def test_memory_estimate_covers_the_compiled_peak(monkeypatch, learner):
    """The estimate is at least the peak XLA's compiled memory analysis gives for the chunk of rounds (its
    arguments, outputs and temporaries less the donated carry), within a factor 4: CW's covariance update builds
    a second d × d matrix per run, which counting the state twice missed."""
    d, rounds, perms = 64, 50, 4
    compiled = lowered_chunk(
        learner, d=d, rounds=rounds, perms=perms, curve_points=3, platform="cpu", lowering_platform="cpu"
    ).compile()
    analysis = compiled.memory_analysis()
    if analysis is None:
        pytest.skip("this jaxlib gives no memory analysis")
    peak = (
        analysis.argument_size_in_bytes
        + analysis.output_size_in_bytes
        - analysis.alias_size_in_bytes
        + analysis.temp_size_in_bytes
    )
    X_ = RNG.normal(size=(rounds, d))
    need = recorded_need(monkeypatch, learner, X_, np.resize(Y, rounds), perms=perms, curve_points=3)
    assert peak <= need <= 4 * peak


def test_memory_check_keeps_a_fifth_free(monkeypatch, tmp_path):
    """A run whose need fits in the free memory but not in 80% of it is refused, before any work: its checkpoint
    is never written."""
    need = recorded_need(monkeypatch, PA, X, Y, perms=2)
    monkeypatch.undo()
    monkeypatch.setattr(checks, "available_memory", lambda: int(need / 0.9))
    path = tmp_path / "run.ckpt"
    with pytest.raises(MemoryError, match=r"PA with d=5 needs .* GiB usable of the .* GiB available"):
        jcsol.run(PA, X, Y, perms=2, checkpoint=path)
    assert not path.exists()
    assert not list(tmp_path.iterdir())
    monkeypatch.setattr(checks, "available_memory", lambda: int(need / 0.79))
    assert jcsol.run(PA, X, Y, perms=2).counts.shape == (2, 4)


def test_memory_check_counts_rows_and_scores(monkeypatch):
    """Recording every round's scores and a longer stream raise the estimate by what they hold."""
    base = recorded_need(monkeypatch, PA, X, Y, perms=2)
    scored = recorded_need(monkeypatch, PA, X, Y, perms=2, record_scores=True)
    assert scored - base >= 2 * 40 * 4
    longer = recorded_need(monkeypatch, PA, np.tile(X, (10, 1)), np.tile(Y, 10), perms=2)
    assert longer - base >= 9 * X.size * 4


def test_permutations_beyond_memory_are_refused_before_drawing(monkeypatch):
    """``perms=10**11`` once aborted the process inside XLA while drawing the orders."""
    with pytest.raises(MemoryError, match=r"perms=100000000000 runs of 40 rounds need .*give fewer permutations"):
        jcsol.run(PA, X, Y, perms=10**11)


def test_available_memory_reads_the_cgroup_limit(monkeypatch, tmp_path):
    """A container's limit less its usage bounds the host's MemAvailable: the OOM killer acts on the cgroup."""
    limit, usage = tmp_path / "memory.max", tmp_path / "memory.current"
    limit.write_text(f"{3 * 2**20}\n")
    usage.write_text(f"{2**20}\n")
    monkeypatch.setattr(devices, "_CGROUP_MEMORY", ((str(limit), str(usage)),))
    assert devices.available_memory(jax_cpu()) == 2 * 2**20
    limit.write_text("max\n")  # no limit: the host's figure
    assert devices.available_memory(jax_cpu()) > 2 * 2**20


def jax_cpu():
    import jax

    return jax.devices("cpu")[0]


# -- run: rows of every kind -------------------------------------------------------------------------------

SPARSE_FORMATS = ["csr", "csc", "coo", "lil", "dok", "bsr", "dia"]


@pytest.mark.parametrize("fmt", SPARSE_FORMATS)
@pytest.mark.parametrize("kind", [sp.csr_matrix, sp.csr_array])
def test_every_scipy_format_gives_the_dense_counts(plain, fmt, kind):
    np.testing.assert_array_equal(counts(kind(X).asformat(fmt), Y), plain)


def test_scipy_explicit_zeros_unsorted_duplicates_int64(plain):
    csr = sp.csr_matrix(X)
    # each row's entries reversed (unsorted), every value split in two duplicates, explicit zeros added
    rows = np.repeat(np.arange(40), np.diff(csr.indptr))
    cols, vals = csr.indices, csr.data
    coo = sp.coo_matrix(
        (
            np.r_[vals[::-1] / 2, vals[::-1] / 2, np.zeros(3)],
            (np.r_[rows[::-1], rows[::-1], 0, 1, 2], np.r_[cols[::-1], cols[::-1], 0, 1, 2]),
        ),
        shape=X.shape,
    )
    messy = sp.csr_matrix((coo.data, (coo.row, coo.col)), shape=X.shape)
    messy.has_sorted_indices = False
    wide = messy.copy()
    wide.indices, wide.indptr = wide.indices.astype(np.int64), wide.indptr.astype(np.int64)
    np.testing.assert_allclose(SparseRows.from_scipy(coo).todense(), X, rtol=1e-15, atol=1e-15)
    np.testing.assert_array_equal(counts(coo, Y), plain)
    np.testing.assert_array_equal(counts(wide, Y), plain)


@FAST
@given(
    hnp.arrays(np.float64, (6, 4), elements=st.sampled_from([0.0, 0.5, -1.25, 3.0])),
    st.integers(0, 4),
    st.sampled_from(SPARSE_FORMATS),
)
def test_sparse_rows_equal_scipy_toarray(dense, extra_zeros, fmt):
    """Whatever the format, explicit zeros and duplicates, the rows a run reads are SciPy's own ``toarray``."""
    coo = sp.coo_matrix(dense)
    coo = sp.coo_matrix(
        (
            np.r_[coo.data, np.zeros(extra_zeros)],
            (np.r_[coo.row, np.zeros(extra_zeros, int)], np.r_[coo.col, np.arange(extra_zeros) % 4]),
        ),
        shape=dense.shape,
    )
    matrix = coo.asformat(fmt)
    np.testing.assert_array_equal(SparseRows.from_scipy(matrix).todense(), matrix.toarray())


@pytest.mark.slow
def test_huge_dimension_with_few_entries_runs_sparse():
    X_ = sp.random(40, 10**7, density=2e-6, format="csr", random_state=0)
    res = jcsol.run(PA, X_, Y, perms=2)
    assert res.counts.sum() == 80
    assert res.n_features == 10**7
    np.testing.assert_allclose(res.score(X_[:3]), res.score(X_[:3].toarray()), rtol=1e-5, atol=1e-6)


def test_array_layouts_give_the_same_counts(plain, tmp_path):
    readonly = X.copy()
    readonly.flags.writeable = False
    np.save(tmp_path / "x.npy", X)
    mapped = np.load(tmp_path / "x.npy", mmap_mode="r")
    strided = np.repeat(X, 2, axis=1)[:, ::2]
    for each in (readonly, np.asfortranarray(X), strided, mapped, X.tolist(), pd.DataFrame(X), X.astype(object)):
        np.testing.assert_array_equal(counts(each, Y), plain)


def test_pandas_frames(plain):
    frame = pd.DataFrame(X, columns=list("abcde"))
    np.testing.assert_array_equal(counts(frame, pd.Series(Y)), plain)
    np.testing.assert_array_equal(counts(frame.astype("Float64"), pd.Series(Y, dtype="Int64")), plain)
    with pytest.raises(TypeError, match=r"column 'f' must hold real numbers; its object entries include 'card'"):
        counts(frame.assign(f="card"), Y)
    with pytest.raises(TypeError, match=r"column 'f' holds bool values"):
        counts(frame.assign(f=True), Y)
    with_na = frame.astype("Float64")
    with_na.iloc[7, 2] = pd.NA
    with pytest.raises(ValueError, match=r"X has 1 NaN value.*the first at row 7"):
        counts(with_na, Y)
    labels = pd.Series(Y, dtype="Int64")
    labels.iloc[9] = pd.NA
    with pytest.raises(ValueError, match=r"y has NaN \(a missing label\).*the first at row 9"):
        counts(X, labels)


@pytest.mark.parametrize(
    ("rows", "error", "match"),
    [
        (np.zeros((0, 5)), ValueError, "the stream is empty"),
        (sp.csr_matrix((0, 5)), ValueError, "the stream is empty"),
        (X[:, 0], ValueError, r"X must be 2-D"),
        (X[:, :, None], ValueError, r"X must be 2-D"),
        (X[:, :0], ValueError, r"X has no features"),
        (X.astype(str), TypeError, r"X must hold real numbers"),
        (X.astype(complex), TypeError, r"X must hold real numbers"),
        (X > 0, TypeError, r"X must hold real numbers, got dtype bool"),
        (np.array([["1", 2.0]] * 40, object), TypeError, r"object entries include '1' \(str\) at row 0"),
        (np.where(np.arange(200).reshape(40, 5) == 13, np.nan, X), ValueError, r"1 NaN value.*row 2"),
        (np.where(np.arange(200).reshape(40, 5) == 13, np.inf, X), ValueError, r"1 infinite value.*row 2"),
        (sp.csr_matrix(np.where(np.arange(200).reshape(40, 5) == 13, np.nan, X)), ValueError, r"NaN.*row 2"),
        (sp.csr_matrix(X > 0), TypeError, r"values must be real numbers"),
        (np.full((40, 5), np.longdouble(1e300) * 1e300), ValueError, r"beyond the range of float32"),
        ([[1.0, 2.0]] * 39 + [[1.0]], ValueError, r"X is ragged"),
        (
            np.where(np.arange(200).reshape(40, 5) == 13, 2**60, 1),
            ValueError,
            r"integer 1152921504606846976 at row 2, column 3, beyond 2\*\*53",
        ),
        (np.array([[1, 2**70]] * 40, object), ValueError, r"the integer 1180591620717411303424 at row 0, column 1"),
        (
            pd.DataFrame({"id": pd.array([None, 5, 2**62] + [1] * 37, "Int64"), "x": 1.0}),
            ValueError,
            r"column 'id' holds the integer 4611686018427387904 at row 2, beyond 2\*\*53",
        ),
    ],
    ids=lambda v: getattr(v, "__name__", None) if isinstance(v, type) else None,
)
def test_bad_rows_are_refused_naming_them(rows, error, match):
    with pytest.raises(error, match=match):
        counts(rows, Y[: rows.shape[0] if hasattr(rows, "shape") else len(rows)])


@pytest.mark.parametrize(
    "labels",
    [Y.astype(float), (Y > 0).astype(int), list(Y), pd.Series(Y), pd.Series(Y).astype("category"), Y.astype(object)],
    ids=["float", "01", "list", "series", "category", "object"],
)
def test_label_encodings_give_the_same_counts(plain, labels):
    np.testing.assert_array_equal(counts(X, labels), plain)


@pytest.mark.parametrize(
    ("labels", "error", "match"),
    [
        (Y > 0, ValueError, r"y is boolean"),
        (Y.astype(str), TypeError, r"got text labels \('1', …\).*binarize"),
        (np.where(Y > 0, "fraud", "ok").astype(object), TypeError, r"got text labels \('fraud', …\)"),
        (np.where(Y > 0, 0.5, -0.5), ValueError, r"got \{-0.5, 0.5\}"),
        (Y.astype(complex), TypeError, r"got dtype complex128"),
        (np.r_[np.nan, Y[1:]], ValueError, r"the first at row 0"),
        (Y[:, None], ValueError, r"y must be 1-D"),
        (Y[:-1], ValueError, r"X has 40 rows but y has 39 labels"),
        (np.where(Y > 0, 1, 255).astype(np.uint8), ValueError, r"got \{1, 255\}"),
    ],
    ids=["bool", "str", "text", "halves", "complex", "nan", "column", "short", "uint8"],
)
def test_bad_labels_are_refused_naming_them(labels, error, match):
    with pytest.raises(error, match=match):
        counts(X, labels)


@FAST
@given(st.lists(st.sampled_from([-1.0, 0.0, 1.0, 2.0, 0.5, -0.0]), min_size=1, max_size=8))
def test_labels_accepted_exactly_in_one_of_two_encodings(values):
    """The one label rule: a stream's labels are all in {-1, +1}, or all in {0, 1}; anything else refused."""
    present = set(values)
    if present <= {-1.0, 1.0} or present <= {0.0, 1.0}:
        expected = np.where(np.asarray(values) == 1.0, 1, -1)
        np.testing.assert_array_equal(check_labels(values), expected)
    else:
        with pytest.raises(ValueError, match="labels must be -1 and \\+1"):
            check_labels(values)


def test_one_example_and_one_class(plain):
    with pytest.raises(ValueError, match=r"no negative example.*Sum\(rho='laplace'\)"):
        counts(X[:1], Y[:1])
    with pytest.raises(ValueError, match=r"no negative example"):
        counts(X, np.ones(40, int))
    one = jcsol.run(PA, X[:1], Y[:1], perms=2, objective=jcsol.Sum(rho="laplace"))
    assert one.counts.sum() == 2
    assert np.isnan(one.measure("specificity")).all()


@pytest.mark.parametrize(
    ("perms", "match"),
    [
        ([[0, 1], [2]], r"perms: the rows of an array of orders must all have the same length"),
        (np.array([[0, 1, 40]]), r"outside \[0, 40\)"),
        (np.array([[0.0, 1.0]]), r"integer array"),
        (np.ones(40, bool), r"integer array"),
        (np.zeros((1, 0), int), r"at least one example"),
        (True, r"integer array"),
    ],
)
def test_bad_orders_are_refused(perms, match):
    with pytest.raises(ValueError, match=match):
        jcsol.run(PA, X, Y, perms=perms)


# -- Result -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep():
    return jcsol.run(jcsol.PA2(C=np.array([0.1, 1.0, 10.0])), X, Y, perms=2, record_scores=True, curve_points=3)


@FAST
@given(
    st.one_of(st.integers(-6, 6), st.tuples(st.integers(-4, 4)), st.floats(-2, 2), st.booleans(), st.text(max_size=2))
)
def test_result_at_takes_python_indices(sweep, index):
    """A flat index in [-n, n) or one integer per axis, as Python indexes a list; anything else an IndexError."""
    flat = index[0] if isinstance(index, tuple) and len(index) == 1 and isinstance(index[0], int) else index
    if isinstance(flat, int) and not isinstance(flat, bool) and -3 <= flat < 3:
        point = sweep.at(index)
        assert point.grid_shape == ()
        assert float(point.params["C"]) == [0.1, 1.0, 10.0][flat]
        np.testing.assert_array_equal(point.counts, sweep.counts[flat])
    else:
        with pytest.raises(IndexError, match="index"):
            sweep.at(index)


def test_result_at_on_a_single_point():
    res = jcsol.run(PA, X, Y, perms=2)
    np.testing.assert_array_equal(res.at(0).counts, res.counts)
    np.testing.assert_array_equal(res.at(()).counts, res.counts)
    with pytest.raises(IndexError, match=r"outside \[-1, 1\)"):
        res.at(1)


def test_result_score_on_hostile_rows(sweep):
    dense = sweep.score(X)
    np.testing.assert_allclose(sweep.score(sp.csr_matrix(X)), dense, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sweep.score(pd.DataFrame(X)), dense)
    assert sweep.score(np.zeros((0, 5))).shape == (3, 2, 0)
    assert sweep.score(sp.csr_matrix((0, 5))).shape == (3, 2, 0)
    for rows, match in [
        (np.full((2, 5), np.nan), "NaN"),
        (np.ones((2, 4)), "X has 4 features; the models learnt from rows of 5"),
        (sp.csr_matrix(np.ones((2, 6))), "X has 6 features"),
        (np.ones(5), "X must be 2-D"),
        (np.full((2, 5), 1e300), "beyond the range of float32"),
    ]:
        with pytest.raises(ValueError, match=match):
            sweep.score(rows)


def test_result_best_measures_and_curves(sweep):
    assert sweep.best("average_precision").index in {(0,), (1,), (2,)}
    assert sweep.best("precision_at_5%").index in {(0,), (1,), (2,)}
    for bad in ("SUM", None, 1, "precision_at_0%", "precision_at_150%"):
        with pytest.raises(ValueError, match="measure|review budget"):
            sweep.best(bad)
    with pytest.raises(ValueError, match="no online curve"):
        sweep.curve_of("average_precision")


def test_tables_take_one_measure_by_name(sweep):
    one = jcsol.table(sweep, measures="sum")
    assert "sum (%)" in one
    assert "sensitivity" not in one
    assert [r["sum"] for r in jcsol.report.records(sweep, "sum")] == [r["sum"] for r in jcsol.report.records(sweep)]
    with pytest.raises(TypeError, match="bold must be True or False"):
        jcsol.table(sweep, bold="no")
    with pytest.raises(ValueError, match="no results"):
        jcsol.table({})


def test_write_json_refuses_before_touching_the_file(tmp_path):
    path = tmp_path / "out.json"
    with pytest.raises(TypeError, match="write_json: the document holds a value JSON cannot hold"):
        jcsol.report.write_json({"a": object()}, path)
    assert not path.exists()
    assert not list(tmp_path.iterdir())
    jcsol.report.write_json({"a": float("nan")}, path)
    assert json.loads(path.read_text()) == {"a": None}


# -- measures ---------------------------------------------------------------------------------------------


@FAST
@given(st.lists(st.sampled_from([(1, 1), (1, -1), (-1, 1), (-1, -1)]), min_size=1, max_size=30))
def test_measures_of_counts_equal_scikit_learn(pairs):
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    truth, predicted = np.array(pairs).T
    tp, fn = np.sum((truth > 0) & (predicted > 0)), np.sum((truth > 0) & (predicted < 0))
    fp, tn = np.sum((truth < 0) & (predicted > 0)), np.sum((truth < 0) & (predicted < 0))
    c = np.array([tp, fn, fp, tn])
    assert metrics.precision(c) == pytest.approx(sklearn_metrics.precision_score(truth, predicted, zero_division=0))
    assert metrics.f1(c) == pytest.approx(sklearn_metrics.f1_score(truth, predicted, zero_division=0))
    assert metrics.accuracy(c) == pytest.approx(sklearn_metrics.accuracy_score(truth, predicted))
    if (truth > 0).any():
        assert metrics.sensitivity(c) == pytest.approx(sklearn_metrics.recall_score(truth, predicted))
    if (truth > 0).any() and (truth < 0).any():
        assert metrics.balanced_accuracy(c) == pytest.approx(sklearn_metrics.balanced_accuracy_score(truth, predicted))


AUC = jax.jit(metrics.auc)


@FAST
@given(
    hnp.arrays(np.float64, 24, elements=st.sampled_from([-2.0, -0.5, 0.0, 0.5, 1.0, np.inf])),
    hnp.arrays(np.int64, 24, elements=st.sampled_from([1, -1])),
)
def test_auc_equals_scikit_learn(scores, y):
    """Ties and infinite scores included (one length: :func:`jcsol.metrics.auc` compiles once)."""
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    if len(set(y.tolist())) < 2:
        assert math.isnan(metrics.auc_numpy(scores, y))
        return
    finite = np.where(np.isinf(scores), 1e300, scores)  # scikit-learn refuses infinities; 1e300 ranks the same
    expected = sklearn_metrics.roc_auc_score(y, finite)
    assert metrics.auc_numpy(scores, y) == pytest.approx(expected)
    assert float(AUC(scores.astype(np.float32), y)) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: metrics.measure("sum", [-1, 2, 3, 4]), ValueError, r"finite and >= 0, got -1"),
        (lambda: metrics.measure("sum", [1, 2, 3]), ValueError, r"last axis of 4"),
        (lambda: metrics.measure("sum", ["a"] * 4), TypeError, r"counts must be numbers"),
        (lambda: metrics.measure("sum", [1, 2, 3, 4], alpha_p=2.0), ValueError, r"alpha_p must be in \[0, 1\]"),
        (lambda: metrics.measure("sum", [1, 2, 3, 4], alpha_p=np.nan), ValueError, r"alpha_p"),
        (lambda: metrics.measure("cost", [1, 2, 3, 4], c_p=-1), ValueError, r"c_p must be in \[0, 1\]"),
        (lambda: metrics.cvar(np.ones(0), 0.5), ValueError, r"cvar of no values"),
        (lambda: metrics.auc(np.ones(3), np.ones(4)), ValueError, r"auc: scores of shape \(3,\) and labels"),
        (lambda: metrics.auc_numpy(np.ones(3), np.ones(4)), ValueError, r"auc_numpy: scores of shape"),
        (lambda: metrics.auc_numpy(np.ones((2, 3)), np.ones((2, 3))), ValueError, r"must be 1-D"),
        (lambda: metrics.auc_numpy(["a", "b"], [1, -1]), TypeError, r"real numbers"),
        (lambda: metrics.precision_at_budget([1, 2], [1, -1], np.nan), ValueError, r"review budget"),
        (lambda: metrics.precision_at_budget([1, 2], [1, -1], "x"), ValueError, r"review budget .* got 'x'"),
        (lambda: metrics.precision_at_budget([1, 2], [1, -1], True), TypeError, r"review budget"),
        (lambda: metrics.precision_at_budget([1, 2, 3], [1, -1], 10), ValueError, r"scores of shape \(3,\)"),
        (lambda: metrics.score_measure("average_precision", np.ones(3), np.ones(4)), ValueError, "shape"),
        (lambda: metrics.score_measure("average_precision", 1.0, np.ones(1)), ValueError, "single number"),
    ],
)
def test_measures_refuse_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_grid_axes_are_one_dimensional():
    with pytest.raises(ValueError, match=r"grid: C must be one number or a 1-D sequence, got shape \(1, 2\)"):
        jcsol.grid(jcsol.PA2(), C=[[1.0, 2.0]])


def test_protocols_take_the_run_input_and_refuse_as_run_does():
    np.testing.assert_array_equal(
        jcsol.protocols.cv_splits(pd.Series(Y), folds=2, seed=3).test, jcsol.protocols.cv_splits(Y, 2, seed=3).test
    )
    for labels, match in [(Y.astype(str), "text labels"), (Y > 0, "boolean"), (Y * 3, r"got \{-3, 3\}")]:
        with pytest.raises((TypeError, ValueError), match=match):
            jcsol.protocols.cv_splits(labels, folds=2)
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        jcsol.protocols.cv_splits(Y, folds=2, seed=-1)
    with pytest.raises(TypeError, match="comparison_table takes a sequence of jcsol.papers.Comparison"):
        jcsol.papers.comparison_table("acog-table2")


# -- the LIBSVM reader ------------------------------------------------------------------------------------

GOOD = "+1 1:0.5 3:2\n-1 2:1\n+1.0 3:-1.5e0\n"


@pytest.mark.parametrize(
    "text",
    [
        GOOD,
        GOOD.replace("\n", "\r\n"),
        "\ufeff" + GOOD,
        "# header line\n" + GOOD.replace("2\n", "2 # a comment\n"),
        GOOD.replace("\n", "   \t\n"),
        "\n\n" + GOOD.replace("\n", "\n\n"),
        GOOD.replace("+1 1:", "+1 qid:7 1:").replace("-1 2", "-1 qid:7 2"),
        "   " + GOOD.replace(" ", "\t"),
    ],
    ids=["plain", "crlf", "bom", "comments", "trailing", "blank", "qid", "tabs"],
)
def test_libsvm_odd_text_reads_as_scikit_learn_does(tmp_path, text):
    load_svmlight_file = pytest.importorskip("sklearn.datasets").load_svmlight_file
    path = tmp_path / "d.txt"
    path.write_bytes(text.encode())
    X_, y_ = jcsol.datasets.load(str(path), normalize=False, dtype="float64")
    clean = tmp_path / "clean.txt"  # scikit-learn reads neither a byte-order mark nor blank lines with spaces
    clean.write_text(text.lstrip("\ufeff").replace("\r\n", "\n"))
    expected, labels = load_svmlight_file(str(clean), zero_based=False, n_features=3)
    np.testing.assert_array_equal(X_, expected.toarray())
    np.testing.assert_array_equal(y_, labels.astype(int))


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"+1 3:2 1:0.5\n-1 2:1\n", r"line 1: feature index 1 follows index 3"),
        (b"+1 1:2 1:0.5\n-1 2:1\n", r"line 1: feature index 1 follows index 1"),
        (GOOD.encode("utf-16"), r"the text is UTF-16"),
        (b"+1 1:0.5\r-1 2:1\n", r"line 1: not LIBSVM format"),
        (b"+1 1: 0.5\n", r"line 1: not LIBSVM format"),
        (b"-1 2:1\n+1 0:0.5\n", r"line 2: feature index 0 is outside"),
        (b"-1 2:1\n1 1:nan\n", r"line 2: a feature value is NaN"),
        (b"# only\n\n", r"no examples"),
    ],
)
def test_libsvm_malformed_text_is_refused_at_its_line(tmp_path, content, match):
    path = tmp_path / "d.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match):
        jcsol.datasets.load(str(path))


def test_read_libsvm_keeps_a_mark_inside_the_text_as_content():
    """Only the file's first line may open with the byte-order mark; a later block's would be content."""
    with pytest.raises(ValueError, match="line 5: not LIBSVM format"):
        read_libsvm("\ufeff+1 1:1\n", first_line=5)


def test_binarize_text_labels():
    y_ = np.array(["fraud", "ok", "ok", "fraud"], object)
    np.testing.assert_array_equal(binarize(y_, positive="fraud"), [1, -1, -1, 1])
    np.testing.assert_array_equal(binarize(y_.astype(str), positive=["fraud"]), [1, -1, -1, 1])
    with pytest.raises(ValueError, match=r"label\(s\) \['chargeback'\] not in the data"):
        binarize(y_, positive="chargeback")
    with pytest.raises(ValueError, match="positive must be a label"):
        binarize(np.array([1, 0, 1]), positive=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1e-30, 1.0, 1e30, 6e37])
def test_l2_normalize_extreme_rows_against_float64(dtype, scale):
    """Rows near the dtype's limits come out as the exact unit row rounded to the dtype (a float32 row of
    3e38 once became zeros: its norm overflowed)."""
    rows = np.array([[1.0, 1.0, 0.0], [3.0, 0.0, 4.0], [0.0, 0.0, 0.0]]) * scale
    exact = np.array([[1, 1, 0] / np.sqrt(2.0), [0.6, 0.0, 0.8], [0, 0, 0]])
    np.testing.assert_allclose(l2_normalize(rows.astype(dtype)), exact, rtol=2 * np.finfo(dtype).eps, atol=0)
    near_max = np.array([[3e38, 3e38]], dtype)  # its norm, 4.2e38, is beyond float32
    np.testing.assert_allclose(l2_normalize(near_max), [[2**-0.5, 2**-0.5]], rtol=2 * np.finfo(dtype).eps)


# -- the command line -------------------------------------------------------------------------------------


@pytest.fixture
def small_file(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("\ufeff+1 1:0.5 3:2\r\n-1 2:1\r\n+1 1:1\r\n-1 3:1\r\n")
    return str(path)


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--perms", "100000000000"], r"perms=100000000000 runs of 4 rounds need .* give fewer permutations"),
        (["--perms", "0"], r"--perms: must be >= 1"),
        (["--perms", "2.5"], r"--perms: invalid int value"),
        (["--measures", "sum,,sum"], r"--measures: expected column names"),
        (["--measures", "nope"], r"unknown measure 'nope'"),
        (["--order", "file", "--perms", "3"], r"--order file runs the rows once"),
        (["--order", "file", "--rerun"], r"--rerun runs the selected values on fresh permutations"),
        (["--grid", "C=a:b"], r"--grid"),
        (["--key", "-1"], r"key must be a seed"),
        (["--positive", "x"], r"LIBSVM labels are numbers"),
    ],
)
def test_cli_run_refuses_odd_arguments(small_file, capsys, argv, match):
    rc, out, err = run_cli(["run", "--data", small_file, "--learner", "PA", *argv], capsys)
    assert rc == 2
    assert not out
    assert err.count("\n") == 1
    assert err.startswith("jcsol: error:")
    assert re.search(match, err), err


def test_cli_run_one_class_names_the_options(tmp_path, capsys):
    path = tmp_path / "positives.txt"
    path.write_text("+1 1:0.5\n+1 2:1\n")
    rc, out, err = run_cli(["run", "--data", str(path), "--learner", "PA", "--perms", "2"], capsys)
    assert rc == 2
    assert "no negative example" in err
    assert "--rho laplace or --objective cost" in err
    rc, out, err = run_cli(["run", "--data", str(path), "--learner", "PA", "--perms", "2", "--rho", "laplace"], capsys)
    assert rc == 0
    assert "PA" in out


def test_cli_run_reads_a_windows_file_in_its_order(small_file, capsys):
    rc, out, err = run_cli(["run", "--data", small_file, "--learner", "PA", "--order", "file"], capsys)
    assert rc == 0
    assert "PA" in out


def test_cli_learners_refuses_arguments(capsys):
    rc, _, err = run_cli(["learners", "extra"], capsys)
    assert rc == 2
    assert "unrecognized arguments: extra" in err
    rc, out, _ = run_cli(["learners"], capsys)
    assert rc == 0
    assert all(info.name in out for info in jcsol.learners())


def test_check_stream_is_the_check_of_run():
    """The stream a run accepts is what :func:`check_stream` returns: pandas and object input become arrays."""
    rows, labels = check_stream(pd.DataFrame(X).astype(object), pd.Series(Y, dtype="Int64"))
    assert rows.dtype == np.float64
    assert labels.dtype == np.int8
    np.testing.assert_array_equal(rows, X)


def test_a_learner_is_named_by_a_string():
    with pytest.raises(TypeError, match=r"a learner's name must be a string, got int: 3"):
        jcsol.by_name(3)
