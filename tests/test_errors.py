"""Bad input is refused before it reaches a compiled scan, with an exception naming the problem."""

import gzip

import numpy as np
import pytest

import jcsol


@pytest.fixture
def stream(german):
    X, y = german
    return X[:100].copy(), y[:100].copy()


def test_nan_features(stream):
    X, y = stream
    X[7, 3] = np.nan
    with pytest.raises(ValueError, match=r"NaN.*row 7"):
        jcsol.run(jcsol.COG(), X, y, perms=1)


def test_infinite_features(stream):
    X, y = stream
    X[12, 0] = -np.inf
    with pytest.raises(ValueError, match=r"infinite.*row 12"):
        jcsol.run(jcsol.COG(), X, y, perms=1)


def test_values_beyond_the_working_dtype(stream, tmp_path):
    """Finite float64 values that float32 cannot hold are refused where they would become infinite in the cast:
    a run's features and costs, a live learner's, a file loaded or stored unnormalised (the estimator's:
    tests/test_sklearn.py)."""
    X, y = stream
    X = X.astype(np.float64)
    X[5, 2] = -1e39
    beyond = r"X has 1 value\(s\) beyond the range of float32 .*row 5 \(-1e\+39\)"
    with pytest.raises(ValueError, match=beyond):
        jcsol.run(jcsol.COG(), X, y, perms=1)
    sparse = jcsol.SparseRows(np.tile(np.arange(X.shape[1]), (len(y), 1)), X, X.shape[1])
    with pytest.raises(ValueError, match=beyond):
        jcsol.run(jcsol.ACOG(diagonal=True), sparse, y, perms=1)
    costs = np.ones(len(y))
    costs[9] = 1e300
    with pytest.raises(ValueError, match=r"costs has 1 value\(s\) beyond the range of float32 .*row 9"):
        jcsol.run(jcsol.COG(), X / 1e39, y, perms=1, costs=costs, objective=jcsol.Cost(c_p=0.5, c_n=0.5))
    live = jcsol.Live(jcsol.ACOG(eta=jcsol.decades(), diagonal=True), n_features=X.shape[1])
    for call in (lambda: live.predict(X), lambda: live.learn(X, y), lambda: live.predict(sparse, ids=range(len(y)))):
        with pytest.raises(ValueError, match=beyond):
            call()
    assert live.events == 0
    assert len(live.store) == 0
    path = tmp_path / "wide.svm"
    path.write_text("+1 1:0.5 2:1e300\n-1 1:0.25\n")
    with pytest.raises(ValueError, match=r"beyond the range of float32 .*row 0 \(1e\+300\)"):
        jcsol.datasets.load(path, normalize=False)
    with pytest.raises(ValueError, match=r"wide.svm: X has 1 value\(s\) beyond the range of float32 .*row 0"):
        jcsol.datasets.RowStore.build(path, tmp_path / "store", normalize=False)
    assert not (tmp_path / "store").exists()
    X64, _ = jcsol.datasets.load(path, normalize=False, dtype="float64")
    assert X64[0, 1] == 1e300
    np.testing.assert_array_equal(jcsol.datasets.load(path)[0], [[0.0, 1.0], [1.0, 0.0]])  # normalised, it fits


def test_non_binary_labels(stream):
    X, y = stream
    y = y.astype(float)
    y[:10] = 2
    with pytest.raises(ValueError, match=r"labels must be -1 and \+1.*2"):
        jcsol.run(jcsol.COG(), X, y, perms=1)


def test_zero_one_labels_are_read_as_signs_and_mixed_encodings_refused(stream):
    """{0, 1} labels run as 0 → −1, 1 → +1 (the rule of every label check); {−1, 0, 1} is refused."""
    X, y = stream
    as_signs = jcsol.run(jcsol.COG(), X, y, perms=2)
    as_bits = jcsol.run(jcsol.COG(), X, (y > 0).astype(int), perms=2)
    np.testing.assert_array_equal(as_bits.counts, as_signs.counts)
    mixed = np.where(np.arange(len(y)) == 0, 0, y)
    with pytest.raises(ValueError, match=r"labels must be -1 and \+1.*or 0 and 1.*\{-1, 0, 1\}"):
        jcsol.run(jcsol.COG(), X, mixed, perms=1)


def test_multiclass_file_without_positive(tmp_path):
    path = tmp_path / "three.txt"
    path.write_text("1 1:0.5\n2 1:0.1 2:0.3\n3 2:1\n")
    with pytest.raises(ValueError, match="not binary; pass positive="):
        jcsol.datasets.load(path)
    X, y = jcsol.datasets.load(path, positive=3)
    np.testing.assert_array_equal(y, [-1, -1, 1])
    with pytest.raises(ValueError, match=r"label\(s\) \[7\] not in the data"):
        jcsol.datasets.load(path, positive=7)


def test_length_mismatch(stream):
    X, y = stream
    with pytest.raises(ValueError, match="X has 100 rows but y has 99 labels"):
        jcsol.run(jcsol.COG(), X, y[:99], perms=1)


def test_wrong_dimensions(stream):
    X, y = stream
    with pytest.raises(ValueError, match="X must be 2-D"):
        jcsol.run(jcsol.COG(), X[0], y, perms=1)


def test_empty_stream():
    with pytest.raises(ValueError, match="the stream is empty"):
        jcsol.run(jcsol.COG(), np.zeros((0, 5), np.float32), np.zeros(0, np.int8), perms=1)


def test_one_class_under_offline_rho(stream):
    X, _ = stream
    y = -np.ones(len(X), np.int8)
    with pytest.raises(ValueError, match=r"no positive example.*Sum\(rho='laplace'\)"):
        jcsol.run(jcsol.COG(), X, y, perms=2)
    # Laplace and cost objectives are defined on one-class streams; sensitivity is then undefined (NaN).
    res = jcsol.run(jcsol.COG(), X, y, perms=2, objective=jcsol.Sum(rho="laplace"))
    assert np.isnan(res.sensitivity).all()
    assert np.isfinite(res.specificity).all()
    res = jcsol.run(jcsol.COG(), X, y, perms=2, objective=jcsol.Cost())
    assert np.isfinite(res.cost).all()


def test_one_class_fold_under_offline_rho(stream):
    X, y = stream
    negatives = np.flatnonzero(y < 0)[None, :20]
    with pytest.raises(ValueError, match="no positive example"):
        jcsol.run(jcsol.COG(), X, y, perms=negatives)


@pytest.mark.parametrize(
    "make",
    [
        lambda: jcsol.COG(eta=0.0),
        lambda: jcsol.COG(eta=-1e-2),
        lambda: jcsol.ACOG(eta=np.array([1.0, -1.0])),
        lambda: jcsol.ACOG(gamma=0),
        lambda: jcsol.ACOG(gamma=-2.0, diagonal=True),
    ],
)
def test_non_positive_hyperparameters(make):
    with pytest.raises(ValueError, match=r"(eta|gamma) must be > 0"):
        make()


def test_nan_hyperparameter():
    with pytest.raises(ValueError, match="eta must be finite"):
        jcsol.COG(eta=float("nan"))


def test_bad_static_option():
    with pytest.raises(ValueError, match="loss='III' is not one of"):
        jcsol.COG(loss="III")


def test_bad_objectives():
    with pytest.raises(ValueError, match="c_p \\+ c_n must be 1"):
        jcsol.Cost(c_p=0.9, c_n=0.2)
    with pytest.raises(ValueError, match="alpha_p must be in"):
        jcsol.Sum(alpha_p=1.0)
    with pytest.raises(ValueError, match="rho='median' is not one of"):
        jcsol.Sum(rho="median")


def test_full_covariance_too_large():
    d = 200_000  # one 200k × 200k float32 covariance is 149 GiB
    X = np.zeros((3, d), np.float32)
    X[:, 0] = 1
    y = np.array([1, -1, 1], np.int8)
    with pytest.raises(MemoryError, match=r"ACOG-I with d=200000 needs 149\.\d+ GiB.*diagonal=True"):
        jcsol.run(jcsol.ACOG(), X, y, perms=1)
    res = jcsol.run(jcsol.ACOG(diagonal=True), X, y, perms=1)  # the diagonal version fits
    assert res.counts.sum() == 3


def test_bad_perms(stream):
    X, y = stream
    with pytest.raises(ValueError, match="outside"):
        jcsol.run(jcsol.COG(), X, y, perms=np.array([[0, 1, 100]]))
    with pytest.raises(ValueError, match="integer array"):
        jcsol.run(jcsol.COG(), X, y, perms=np.zeros((2, 5)))
    with pytest.raises(ValueError, match="perms must be >= 1"):
        jcsol.run(jcsol.COG(), X, y, perms=0)


def test_grids_that_do_not_broadcast(stream):
    X, y = stream
    with pytest.raises(ValueError, match="do not broadcast"):
        jcsol.run(jcsol.ACOG(eta=np.ones(3), gamma=np.ones(4)), X, y, perms=1)


def test_float64_needs_x64(stream):
    X, y = stream
    with pytest.raises(ValueError, match="jax_enable_x64"):
        jcsol.run(jcsol.COG(), X, y, perms=1, dtype="float64")


def test_malformed_file(tmp_path):
    path = tmp_path / "bad.svm"
    path.write_text("+1 1:0.5 2:0.25\n-1 1:abc\n")
    with pytest.raises(ValueError, match="line 2: not LIBSVM format"):
        jcsol.datasets.load(path)


def test_missing_dataset():
    with pytest.raises(FileNotFoundError, match="not a shipped set"):
        jcsol.datasets.load("no-such-set")


def test_file_with_nan(tmp_path):
    path = tmp_path / "nan.svm.gz"
    path.write_bytes(gzip.compress(b"+1 1:0.5\n-1 1:nan\n"))
    with pytest.raises(ValueError, match="NaN"):
        jcsol.datasets.load(path)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        (dict(chunk_size=0), "chunk_size must be >= 1"),
        (dict(chunk_size=2.5), "chunk_size must be an integer"),
        (dict(curve_points=2.5), "curve_points must be an integer"),
        (dict(curve_points=True), "curve_points"),
        (dict(checkpoint_every=0), "checkpoint_every must be >= 1"),
        (dict(key="0"), "key must be an int"),
        (dict(key=True), "key must be"),
        (dict(key=2**32), r"seed in \[0, 2\*\*32\)"),
        (dict(on_chunk="print"), "on_chunk must be callable"),
        (dict(record_scores="yes"), "record_scores must be True or False"),
    ],
)
def test_run_options_are_checked_before_the_run(stream, kwargs, error):
    X, y = stream
    with pytest.raises((TypeError, ValueError), match=error):
        jcsol.run(jcsol.COG(), X, y, perms=1, **kwargs)


def test_sparse_rows_and_shapes(stream):
    X, y = stream
    rows = jcsol.SparseRows(np.array([[0.0, 1.5]] * 100), np.ones((100, 2), np.float32), 24)
    with pytest.raises(TypeError, match="indices must be integers"):
        jcsol.run(jcsol.COG(), rows, y, perms=1)
    for d in (0, 2**31):  # int32 indices
        with pytest.raises(ValueError, match=r"n_features must be an integer in \[1, 2\*\*31\)"):
            jcsol.run(jcsol.COG(), rows._replace(indices=np.zeros((100, 2), np.int32), n_features=d), y, perms=1)
    with pytest.raises(ValueError, match="X has no features"):
        jcsol.run(jcsol.COG(), np.zeros((100, 0), np.float32), y, perms=1)


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: jcsol.COG(eta="1e-2"), "eta must be a real number"),
        (lambda: jcsol.COG(eta=True), "eta must be a real number"),
        (lambda: jcsol.COG(eta=None), "eta must be a real number or an array of real numbers, got None"),
        (lambda: jcsol.ACOG(gamma=[]), "gamma is an empty array"),
        (lambda: jcsol.ACOG(gamma=[[1.0], [1.0, 2.0]]), "gamma must be a rectangular array"),
        (lambda: jcsol.NORMA(budget=0), "budget must be an integer >= 1"),
        (lambda: jcsol.SACOG(m=2.5), "m must be a non-negative integer"),
        (lambda: jcsol.NORMA(degree=-1), "degree must be a non-negative integer"),
        (lambda: jcsol.Cost(c_p=[0.9, 0.8, 0.7], c_n=[0.1, 0.2]), "c_p and c_n must have shapes that broadcast"),
        (lambda: jcsol.grid(jcsol.COG(), eta=["a", "b"]), "eta must be a sequence of real numbers"),
        (lambda: jcsol.decades(0, 10), "low must be a power of ten > 0"),
        (lambda: jcsol.datasets.binarize(np.array([1.0, 2.0, 3.0]), positive=[]), "non-empty list of labels"),
    ],
)
def test_constructors_refuse_values_that_would_be_cast(make, error):
    with pytest.raises((TypeError, ValueError), match=error):
        make()


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--learner", "COG-I", "--grid", "eta=1,10", "--grid", "gama=1"], "--grid gama: no learner of this run"),
        (["--learner", "COG-I", "ACOG-I", "--grid", "eta=1,10", "--grid", "eta=3"], "--grid eta is given twice"),
        (["--learner", "COG-I", "--grid", "eta=-1,1"], "--grid: COG: eta must be > 0"),
        (["--learner", "COG-I", "--grid", "eta=0:1"], "decades"),
        (["--learner", "COG-I", "--plot", "curves", "--all"], "--plot draws the selected runs"),
        (["--learner", "COG-I", "--positive"], "--positive needs at least one label"),
        (["--learner", "COG-I", "--csv", "OUT"], "is a folder"),
        (["--learner", "COG-I", "--csv", "OUT/same", "--json", "OUT/same"], "name the same file"),
    ],
)
def test_command_line_errors_come_before_the_run(monkeypatch, tmp_path, capsys, argv, error):
    from jcsol import cli, protocols

    def reached(*args, **kwargs):
        raise AssertionError("the run started")

    monkeypatch.setattr(protocols, "select_and_rerun", reached)
    monkeypatch.setattr(jcsol, "run", reached)
    assert cli.main(["run"] + [a.replace("OUT", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jcsol: error: "), err
    assert error in err, err


def test_grid_axis_of_some_learners_only_applies_to_those(capsys):
    from jcsol import cli

    assert (
        cli.main(
            [
                "run",
                "--learner",
                "COG-I",
                "ACOG-I",
                "--perms",
                "2",
                "--grid",
                "eta=1,10",
                "--grid",
                "gamma=0.5,2",
                "--all",
                "--format",
                "markdown",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "gamma=0.5" in out
    assert "gamma=2" in out


def test_sparse_rows_naming_a_column_twice(stream):
    _, y = stream
    indices = np.tile(np.array([[0, 3, 3, 5]], np.int32), (100, 1))
    values = np.tile(np.array([[0.5, 0.0, 0.2, 0.1]], np.float32), (100, 1))
    jcsol.run(jcsol.COG(), jcsol.SparseRows(indices, values, 24), y, perms=1)  # a zero-valued repeat is padding
    values[17, 1] = 0.3
    with pytest.raises(ValueError, match="row 17 holds column 3 twice"):
        jcsol.run(jcsol.COG(), jcsol.SparseRows(indices, values, 24), y, perms=1)
