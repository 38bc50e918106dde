"""``jcsol.Stream``: a dataset checked, converted and placed once, against the same rows given as arrays at every
call; and rows given as a ``jax.Array``, kept by identity."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse

import jcsol
from jcsol import checked


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(400, 9)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(rng.random(400) < 0.25, 1, -1)
    costs = rng.uniform(0.1, 2.0, 400)
    return X, y, costs


def _same(a: jcsol.Result, b: jcsol.Result) -> None:
    for u, v in zip(jax.tree.leaves(a.states), jax.tree.leaves(b.states)):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
    np.testing.assert_array_equal(a.counts, b.counts)
    np.testing.assert_array_equal(a.mistake_cost, b.mistake_cost)
    np.testing.assert_array_equal(a.scores, b.scores)


@pytest.mark.parametrize("kind", ["dense", "sparse", "jax"])
def test_a_stream_gives_the_bits_of_its_arrays(data, kind):
    X, y, costs = data
    rows = {"dense": X, "sparse": scipy.sparse.csr_matrix(np.where(np.abs(X) > 0.3, X, 0)), "jax": jnp.asarray(X)}[kind]
    learner = jcsol.COG(eta=np.array([0.1, 1.0]))
    options = dict(perms=3, record_scores=True, chunk_size=150)
    stream = jcsol.Stream(rows, y, costs)
    expected = jcsol.run(learner, rows if kind != "jax" else X, y, costs=costs, **options)
    _same(jcsol.run(learner, stream, **options), expected)
    _same(jcsol.run(learner, stream, **options), expected)  # placed by the first call, read by the second
    if kind == "jax":
        _same(jcsol.run(learner, rows, y, costs=costs, **options), expected)


def test_a_stream_is_checked_converted_and_placed_once(data, monkeypatch):
    X, y, _ = data
    stream = jcsol.Stream(X, y, dtype="float32")
    assert stream.X.dtype == np.float32
    assert not stream.X.flags.writeable
    assert len(stream) == 400
    assert stream.shape == (400, 9)
    assert repr(stream) == "Stream(400 dense rows of 9 features, float32)"
    placed = []
    original = checked.Rows.placed

    def counted(self, key, place):
        return original(self, key, lambda: placed.append(key) or place())

    monkeypatch.setattr(checked.Rows, "placed", counted)
    checks = []
    monkeypatch.setattr(checked, "check_stream", lambda *a: checks.append(1) or (_ for _ in ()).throw(AssertionError))
    for key in (0, 0, 5):
        jcsol.run(jcsol.PA(), stream, perms=2, key=key)
    assert len(placed) == 1  # one placement for the three calls, whatever the orders
    assert not checks  # no check of the rows after the stream was made


def test_a_stream_keeps_its_own_copy(data):
    X, y, _ = data
    X, y = X.copy(), y.copy()
    stream = jcsol.Stream(X, y)
    before = jcsol.run(jcsol.PA(), stream, perms=2, record_scores=True)
    X[:] = 0.0
    y[:] = 1
    _same(jcsol.run(jcsol.PA(), stream, perms=2, record_scores=True), before)


def test_arrays_are_checked_at_every_call(data):
    """A NumPy array may change between calls: ``jcsol.run`` checks it again (a ``jax.Array`` cannot)."""
    X, y, _ = data
    X = X.copy()
    jcsol.run(jcsol.PA(), X, y, perms=1)
    X[7, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        jcsol.run(jcsol.PA(), X, y, perms=1)


def test_a_jax_arrays_checks_are_kept_by_identity(data, monkeypatch):
    X, y, _ = data
    rows = jnp.asarray(X)
    jcsol.run(jcsol.PA(), rows, y, perms=1)
    seen = []
    original = checked.check_features
    monkeypatch.setattr(checked, "check_features", lambda *a, **k: seen.append(1) or original(*a, **k))
    jcsol.run(jcsol.PA(), rows, y, perms=1)
    assert not seen  # the same array: its checks kept
    jcsol.run(jcsol.PA(), jnp.asarray(X), y, perms=1)
    assert len(seen) == 1  # another array: checked
    with pytest.raises(ValueError, match="NaN"):
        jcsol.run(jcsol.PA(), rows.at[3, 1].set(jnp.nan), y, perms=1)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda s, X, y: jcsol.run(jcsol.PA(), s, y), ValueError, "y must not be given beside it"),
        (lambda s, X, y: jcsol.run(jcsol.PA(), s, dtype="float64"), ValueError, "dtype must not be given"),
        (lambda s, X, y: jcsol.run(jcsol.PA(), X), TypeError, "y, the labels, is missing"),
        (lambda s, X, y: jcsol.Stream(s, y), TypeError, "X is a Stream already"),
        (lambda s, X, y: jcsol.Stream(X, y[:-1]), ValueError, "X has 400 rows but y has 399 labels"),
        (lambda s, X, y: jcsol.Stream(X, y, -np.ones(400)), ValueError, "costs must be >= 0"),
        (lambda s, X, y: jcsol.Stream(np.where(X > 0.5, np.inf, X), y), ValueError, r"infinite value\(s\)"),
        (lambda s, X, y: jcsol.Stream(jnp.asarray(X), y[:-1]), ValueError, "X has 400 rows but y has 399"),
    ],
)
def test_refusals(data, call, error, message):
    X, y, _ = data
    stream = jcsol.Stream(X, y)
    with pytest.raises(error, match=message):
        call(stream, X, y)


def test_a_row_store_is_refused(tmp_path):
    path = tmp_path / "rows.svm"
    path.write_text("+1 1:0.5 2:1\n-1 1:0.25\n")
    store = jcsol.datasets.RowStore.build(path, tmp_path / "store")
    with pytest.raises(TypeError, match="a row store is read from disk chunk by chunk"):
        jcsol.Stream(store, np.array([1, -1]))


def test_the_protocols_run_on_a_stream(data):
    """Selection and re-run, and cross-validation, take a stream (and make one of arrays, for all their calls):
    the same results either way."""
    X, y, costs = data
    learner = jcsol.COG()
    grid = {"eta": [0.1, 1.0]}
    a = jcsol.protocols.select_and_rerun(learner, X, y, grid=grid, perms=2, costs=costs)
    b = jcsol.protocols.select_and_rerun(learner, jcsol.Stream(X, y, costs), grid=grid, perms=2)
    assert a.chosen == b.chosen
    np.testing.assert_array_equal(a.result.counts, b.result.counts)
    c = jcsol.protocols.cross_validate(learner, X, y, folds=3, grid=grid)
    d = jcsol.protocols.cross_validate(learner, jcsol.Stream(X, y), folds=3, grid=grid)
    np.testing.assert_array_equal(c.held_out(), d.held_out())


def test_an_accelerator_runs_one_chunk_unless_asked_for_more():
    from jcsol.engine import DEFAULT_CHUNK, default_chunk

    n = 3 * DEFAULT_CHUNK
    plain = dict(stored=False, checkpoint=None, on_chunk=None, progress=None)
    assert default_chunk(n, platform="gpu", **plain) == n
    assert default_chunk(n, platform="tpu", **plain) == n
    assert default_chunk(n, platform="cpu", **plain) == DEFAULT_CHUNK
    assert default_chunk(100, platform="cpu", **plain) == 100
    for asked in ({"stored": True}, {"checkpoint": "run.ckpt"}, {"on_chunk": print}, {"progress": True}):
        assert default_chunk(n, platform="gpu", **{**plain, **asked}) == DEFAULT_CHUNK, asked


@pytest.mark.parametrize("n", [1, 2, 3, 100, 48_842, 65_536, 131_077])
def test_orders_drawn_on_the_host_are_jaxs_permutations(n):
    """The CPU's draw (JAX's random keys, NumPy's stable sorts) gives ``jax.random.permutation``'s orders bit for
    bit, over sizes of one, two and three sorting rounds."""
    from jcsol import engine

    for seed in (0, 7):
        key = jax.random.key(seed)
        expected = np.asarray(jax.vmap(lambda k: jax.random.permutation(k, n))(jax.random.split(key, 3)))
        np.testing.assert_array_equal(engine._sorted_on_host(key, 3, n), expected)
