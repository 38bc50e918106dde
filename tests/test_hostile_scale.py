"""Rows far from unit scale: a learner predicts on rows scaled by ``10^k`` as exact arithmetic would, or says so.

A float32 step whose squares or products of entries overflow (``‖x‖²`` of entries near 1e19: PA's step
``ℓ/‖x‖²`` is 0 and it never learns) or underflow (near 1e-19: ``w·x`` is 0 and every row is predicted +1) would
otherwise fail with nothing to show for it. Every learner declares the row scales its arithmetic holds on
(:meth:`jcsol.base.Learner.row_scales`) and :func:`jcsol.run` warns of rows beyond them. The independent check is
the same run in float64 on the same scaled rows.
"""

import warnings

import jax
import numpy as np
import pytest
import scipy.sparse

import jcsol
from jcsol.base import beyond_row_scales

SCALE_WARNING = "largest |entry|"
MISMATCH = 0.02  # float32 and float64 runs part on near-ties only: at most this share of rounds


def predictions(learner, X, y, dtype="float32"):
    """The pre-update predictions of one run in the rows' order, and the RuntimeWarnings naming the learner."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = jcsol.run(learner, X, y, perms="stream", record_scores=True, dtype=dtype, progress=False)
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning) and learner.name in str(w.message)]
    return np.asarray(res.scores).reshape(-1) >= 0, said


def in_range(learner, X, dtype=np.float32) -> bool:
    """Whether every non-zero row's largest entry is within the learner's range for rows as wide as ``X``'s."""
    lo, hi = learner.row_scales(max(1, int((X != 0).sum(axis=1).max())), dtype)
    top = np.abs(X).max(axis=1)
    return bool(np.all((top == 0) | ((top >= lo) & (top <= hi))))


@pytest.fixture(scope="module")
def rows(german):
    X, y = german
    return np.asarray(X, np.float64)[:200], np.asarray(y)[:200]


# -- the warning ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "k"),
    [
        ("PA", 20),  # ‖x‖² = ∞: τ = 0, it never learns
        ("COG-I", -20),  # w·x = 0: every row predicted +1
        ("ACOG-I", 4),  # xᵀΣx > γ/ε: the covariance update cancels
        ("NORMA", 2),  # Gaussian kernel values underflow to 0
        ("SCW-II", -15),  # fourth powers underflow
    ],
)
def test_rows_beyond_a_learners_range_warn(rows, name, k):
    """Beyond its range a learner's float32 predictions part from float64's: the run says so, naming the learner,
    the first such row and what to do."""
    X, y = rows
    learner = jcsol.by_name(name)
    assert not in_range(learner, X * 10.0**k)
    got, said = predictions(learner, X * 10.0**k, y)
    assert any(SCALE_WARNING in m and "row 0" in m and "standardise" in m for m in said), said
    with jax.enable_x64(True):
        exact, _ = predictions(learner, X * 10.0**k, y, "float64")
    assert np.mean(got != exact) > MISMATCH  # the warning is not a false alarm


def test_sparse_rows_are_checked_as_dense_ones(rows):
    X, y = rows
    sparse = jcsol.SparseRows.from_scipy(scipy.sparse.csr_matrix(X * 1e25))
    with pytest.warns(RuntimeWarning, match=r"200 of 200 rows of X have their largest \|entry\|"):
        jcsol.run(jcsol.PA(), sparse, y, perms=1, progress=False)


def test_float64_runs_take_float64_ranges(rows):
    """Rows of 1e20 are beyond float32's squares but well within float64's: a float64 run does not warn."""
    X, y = rows
    with jax.enable_x64(True), warnings.catch_warnings():
        warnings.simplefilter("error")
        jcsol.run(jcsol.PA(), X * 1e20, y, perms=1, dtype="float64", progress=False)


def test_the_warning_names_the_first_row_beyond_the_range(rows):
    X, y = rows
    X = X.copy()
    X[[17, 40]] *= 1e25
    with pytest.warns(RuntimeWarning, match=r"2 of 200 rows of X .* the first at row 17 \(") as caught:
        jcsol.run(jcsol.COG(), X, y, perms=2, progress=False)
    assert sum(SCALE_WARNING in str(w.message) for w in caught) == 1


def test_beyond_row_scales_counts_non_zero_rows_and_names_the_first():
    values = np.array([[0.0, 0.0], [1.0, -0.5], [-1e20, 0.0], [0.0, 1e-30]])
    message = beyond_row_scales(jcsol.COG(), values, np.float32)
    assert message is not None
    assert message.startswith("2 of 4 rows of X")
    assert "the first at row 2 (1e+20)" in message
    assert "COG-I" in message
    assert beyond_row_scales(jcsol.COG(), values[:2], np.float32) is None  # a zero row is beyond no scale
    assert beyond_row_scales(jcsol.COG(), values, np.float64) is None  # float64 squares hold both
    assert beyond_row_scales(jcsol.COG(), np.zeros((0, 3)), np.float32) is None


def test_unit_rows_are_within_every_learners_range(rows):
    """Rows of unit norm (german as shipped) never warn, whatever the learner."""
    X, y = rows
    for name in jcsol.VARIANTS:
        assert in_range(jcsol.by_name(name), X), name
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jcsol.run(jcsol.ACOG(), X, y, perms=2, progress=False)


def test_a_grid_of_kernel_widths_takes_the_range_of_all_its_widths(rows):
    """A σ grid (the KOIL protocol's is 2^-10 … 2^10) warns only of rows that no width of it suits."""
    X, _ = rows
    one = jcsol.by_name("NORMA").row_scales(X.shape[1], np.float32)
    grid = jcsol.by_name("NORMA", sigma=np.array([0.5, 1.0, 4.0])).row_scales(X.shape[1], np.float32)
    assert grid[0] == pytest.approx(0.5 * one[0])
    assert grid[1] == pytest.approx(4 * one[1])


def test_the_range_is_taken_for_the_rows_non_zero_entries(rows):
    """Sparse rows of a wide stream are as near as their non-zero entries make them: a one-hot row of 1s is
    within a Gaussian kernel's range whatever the number of columns."""
    X, y = rows
    one_hot = np.zeros((len(y), 500))
    one_hot[np.arange(len(y)), np.arange(len(y)) % 7] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jcsol.run(jcsol.by_name("NORMA"), one_hot, y, perms=1, progress=False)
    with pytest.warns(RuntimeWarning, match=SCALE_WARNING.replace("|", "\\|")):
        jcsol.run(jcsol.by_name("NORMA"), one_hot * 10, y, perms=1, progress=False)


# -- every learner at every scale -----------------------------------------------------------------------------

SCALES = (-40, -37, -31, -20, -16, -15, -12, -8, -4, -2, 2, 4, 8, 12, 16, 20, 30, 36, 38)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(jcsol.VARIANTS))
def test_every_learner_at_every_scale_predicts_as_float64_or_warns(rows, name):
    """Within its declared range a learner's float32 predictions are float64's on the same rows (or a warning,
    such as divergence, says otherwise); beyond it, the run warns of the rows' scale."""
    X, y = rows
    learner = jcsol.by_name(name)
    for k in SCALES:
        Xs = X * 10.0**k
        got, said = predictions(learner, Xs, y)
        if in_range(learner, Xs):
            with jax.enable_x64(True):
                exact, _ = predictions(learner, Xs, y, "float64")
            assert np.mean(got != exact) <= MISMATCH or said, (k, np.mean(got != exact))
            assert not any(SCALE_WARNING in m for m in said), k
        else:
            assert any(SCALE_WARNING in m for m in said), k


def test_the_live_learner_warns_as_run_does(rows):
    """``Live.learn`` warns of rows beyond its learners' scales with run's message, and not of unit rows."""
    X, y = rows
    live = jcsol.Live([jcsol.PA(), jcsol.COG()])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        live.learn(X[:50], y[:50])
    for batch, said in (
        (X[50:100] * 1e25, "50 of 50 rows of X have"),
        (np.where(np.arange(50)[:, None] == 3, X[100:150] * 1e-25, X[100:150]), "1 of 50 rows of X have"),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            live.learn(batch, y[:50])
        messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        assert len(messages) == 2, messages
        for name, message in zip(("PA", "COG-I"), messages, strict=True):
            assert message.startswith(said), message
            assert f"{name}'s float32" in message, message
    assert "row 3 " in messages[0]
    for row, warned in ((X[150:151], False), (X[151:152] * 1e25, True), (X[152:153] * 1e-25, True)):  # one event
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            live.learn(row, y[:1])
        messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        assert len(messages) == (2 if warned else 0), messages
        assert all(m.startswith("1 of 1 rows of X have") for m in messages), messages
