"""The row-scale warning of the kernel learners: a kernel compares whole rows, so its scale is a row's L2 norm.

L2-normalised rows (german as shipped, a sparse LIBSVM file read with ``normalize=True``, whose rows have from 2
to 300 entries) never warn for KOIL, KOIL-MKL or the budget-kernel learners, in float32 or float64; rows far
beyond a learner's range (×1e20, ×1e-20) still do. The independent checks are the rows' norms by NumPy in
float64 and the Gaussian kernel's own bound: rows of norm at most ``r`` are at most ``2r`` apart.
"""

import warnings

import jax
import numpy as np
import pytest

import jcsol
from jcsol.algorithms.koil import KOILMKL
from jcsol.base import beyond_row_scales, row_extents

SMALL_POOL = (("polynomial", 1.0), ("gaussian", 0.5), ("gaussian", 4.0))
KERNEL_LEARNERS = {
    "KOIL": lambda: jcsol.KOIL(budget_pos=8, budget_neg=8, k=2),
    "KOIL-MKL": lambda: KOILMKL(budget_pos=6, budget_neg=6, k=2, pool=SMALL_POOL),
    "NORMA": lambda: jcsol.by_name("NORMA", budget=16),
}


def run_quietly(learner, X, y, dtype="float32"):
    """One run with every warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jcsol.run(learner, X, y, perms=1, dtype=dtype, progress=False)


def scale_warnings(learner, X, y, dtype="float32") -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jcsol.run(learner, X, y, perms=1, dtype=dtype, progress=False)
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


@pytest.fixture(scope="module")
def german_rows(german):
    X, y = german
    return X[:80], y[:80]


@pytest.fixture(scope="module")
def sparse_normalised(tmp_path_factory):
    """A LIBSVM file of 60 rows over 1000 features, of 2 to 300 entries each (a row of few entries has one
    large one), read back L2-normalised as sparse rows."""
    rng = np.random.default_rng(7)
    path = tmp_path_factory.mktemp("libsvm") / "wide.txt"
    lines = []
    for i in range(60):
        nnz = 2 if i % 5 == 0 else int(rng.integers(20, 300))
        columns = np.sort(rng.choice(1000, nnz, replace=False)) + 1
        values = rng.exponential(size=nnz)
        values[0] = 50.0 if nnz == 2 else values[0]
        label = 1 if rng.random() < 0.3 else -1
        lines.append(f"{label} " + " ".join(f"{c}:{v:.6g}" for c, v in zip(columns, values)))
    path.write_text("\n".join(lines) + "\n")
    X, y = jcsol.datasets.load(path, normalize=True, sparse=True)
    assert isinstance(X, jcsol.SparseRows)
    return X, y


def test_row_extents_give_each_rows_l2_norm_in_one_pass():
    """The norms equal NumPy's float64 ones, for rows whose squares underflow or overflow in their dtype too."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 40)).astype(np.float32)
    X[3] *= 1e-30  # squares below float32's smallest normal
    X[5] *= 1e25  # squares beyond float32
    X[7] = 0.0
    extents = row_extents(X)
    exact = np.linalg.norm(X.astype(np.float64), axis=1)
    np.testing.assert_allclose(extents.norms, exact, rtol=1e-5)
    np.testing.assert_array_equal(extents.top, np.abs(X).max(axis=1).astype(np.float64))
    assert extents.widest == 40
    assert extents.norms.dtype == extents.top.dtype == np.float64


def test_the_gaussian_range_is_the_distance_bound_of_the_rows_norms():
    """Rows of norm at most r are at most 2r apart: ``exp(−(2r)²/(2σ²))`` is a normal float32 number up to the
    range's top, and underflows soon above it."""
    koil = jcsol.KOIL()
    lo, hi = koil.row_norm_scales(np.float32)
    tiny = np.finfo(np.float32).tiny
    assert np.exp(-((2 * hi) ** 2) / 2) == pytest.approx(tiny, rel=1e-6)
    assert np.float32(np.exp(-((2 * 1.2 * hi) ** 2) / 2)) < tiny  # beyond: the kernel of two such rows is lost
    assert lo < 1 < hi  # unit rows are within it
    wide = jcsol.KOIL(sigma=np.array([0.5, 4.0])).row_norm_scales(np.float32)
    assert wide == pytest.approx((0.5 * lo, 4.0 * hi))
    # the largest entry's range keeps every row of d entries within the norm's: ‖x‖ <= √d·max|xᵢ|
    assert koil.row_scales(25, np.float32) == pytest.approx((lo, hi / 5))


def test_a_unit_row_of_many_entries_or_one_large_entry_is_within_a_kernels_range():
    """An L2-normalised row is within a kernel learner's range however its unit norm is spread; rows whose norm
    is beyond it are named."""
    spread = np.full((1, 400), 1 / 20.0)  # norm 1, entries 0.05
    peaked = np.zeros((1, 400))
    peaked[0, :3] = [0.99, 0.1, 0.1]
    peaked /= np.linalg.norm(peaked)
    values = np.vstack([spread, peaked])
    for make in KERNEL_LEARNERS.values():
        assert beyond_row_scales(make(), values, np.float32) is None
    lo, hi = jcsol.KOIL().row_norm_scales(np.float32)
    beyond = np.vstack([values, values[:1] * 1.01 * hi, values[:1] * 0.99 * lo])
    message = beyond_row_scales(jcsol.KOIL(), beyond, np.float32)
    assert message is not None
    assert message.startswith("2 of 4 rows of X have their L2 norm outside")
    assert "the first at row 2 (" in message


@pytest.mark.parametrize("name", sorted(KERNEL_LEARNERS))
def test_l2_normalised_rows_never_warn(name, german_rows, sparse_normalised):
    """german as shipped and the sparse LIBSVM rows: no warning of any kind, in float32 runs, and neither for
    float64 (float32 rows compared with float64's range, which float32 cannot hold: no overflow casting it)."""
    learner = KERNEL_LEARNERS[name]()
    for X, y in (german_rows, sparse_normalised):
        if name != "KOIL-MKL" or X is german_rows[0]:  # KOIL-MKL's run on the sparse rows: its warning's check only
            run_quietly(learner, X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            values = X.values if isinstance(X, jcsol.SparseRows) else X
            assert beyond_row_scales(learner, values, np.float64) is None


@pytest.mark.parametrize("name", sorted(KERNEL_LEARNERS))
def test_rows_beyond_a_kernels_range_still_warn(name, german_rows):
    learner = KERNEL_LEARNERS[name]()
    X, y = german_rows
    for scale in (1e20, 1e-20):
        said = scale_warnings(learner, X * scale, y)
        assert any(m.startswith("80 of 80 rows of X have their L2 norm outside") for m in said), (scale, said)
        assert all(learner.name in m for m in said)


def test_the_live_learner_keeps_quiet_on_unit_sparse_rows_and_warns_beyond(sparse_normalised):
    X, y = sparse_normalised
    live = jcsol.Live(KERNEL_LEARNERS["KOIL"]())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        live.learn(X, y)
    far = jcsol.SparseRows(X.indices, X.values * np.float32(1e20), X.n_features)
    with pytest.warns(RuntimeWarning, match="60 of 60 rows of X have their L2 norm outside"):
        live.learn(far, y)


def test_linear_learners_keep_the_largest_entry_and_warn_as_before(german_rows):
    """A linear learner's range is that of the largest entry; rows of float32 compared with a float64 range
    raise no NumPy warning of their own."""
    X, y = german_rows
    assert jcsol.COG().row_norm_scales(np.float32) is None
    said = scale_warnings(jcsol.COG(), X * 1e20, y)
    assert any(m.startswith("80 of 80 rows of X have their largest |entry| outside") for m in said), said
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert beyond_row_scales(jcsol.COG(), X, np.float64) is None
    with jax.enable_x64(True):
        run_quietly(jcsol.COG(), X, y, "float64")
