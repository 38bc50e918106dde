"""Property-based hostile input for the entry points other than the reader: hyperparameters, ``run``'s
arguments, damaged checkpoints and row stores, command lines. Each input ends in a clear error raised before
any compiled work, or in a correct result."""

import json
import shutil

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st

import jcsol  # noqa: E402
from jcsol import cli  # noqa: E402
from jcsol.checkpoint import CheckpointError  # noqa: E402
from jcsol.datasets import RowStore  # noqa: E402
from jcsol.datasets.rowstore import RowStoreError  # noqa: E402

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# -- hyperparameters ---------------------------------------------------------------------------------------

VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-3, 3),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
    st.complex_numbers(max_magnitude=3),
    st.lists(st.floats(-2, 2), max_size=4),
    st.lists(st.integers(-1, 3), max_size=3),
    st.lists(st.lists(st.floats(0.1, 2), min_size=1, max_size=3), min_size=1, max_size=3),  # possibly ragged
    st.sampled_from(
        [
            np.array([0.5, 1.0]),
            np.array([[0.1], [1.0]]),
            np.array([True]),
            np.array(["1"]),
            np.array([1 + 1j]),
            np.zeros((0,)),
            np.float32(0.3),
            np.int64(2),
            np.array(np.nan),
        ]
    ),
)


def _valid_positive(value) -> bool:
    """An independent statement of what a positive float hyperparameter accepts."""
    if isinstance(value, (bool, np.bool_, str, complex)) or value is None:
        return False
    try:
        arr = np.asarray(value)
    except ValueError:
        return False
    return (
        arr.dtype.kind in "iuf"
        and arr.size > 0
        and bool(np.all(np.isfinite(arr.astype(float))))
        and bool(np.all(arr.astype(float) > 0))
    )


@FAST
@given(VALUES, st.sampled_from([("COG", "eta"), ("ACOG", "gamma"), ("Cost", "c_n")]))
def test_hyperparameter_values_are_accepted_exactly_when_valid(value, where):
    cls, field = getattr(jcsol, where[0]), where[1]
    kwargs = {field: value}
    valid = _valid_positive(value)
    if where[0] == "Cost":  # c_p = 1 − c_n, which must be > 0 too
        valid = valid and bool(np.all(np.asarray(value, dtype=float) < 1))
        kwargs["c_p"] = 1 - np.asarray(value, dtype=float) if valid else 0.5
    if not valid:
        with pytest.raises((TypeError, ValueError), match=f"{field}|c_p"):
            cls(**kwargs)
        return
    made = cls(**kwargs)
    np.testing.assert_array_equal(np.asarray(getattr(made, field), float), np.asarray(value, float))


@FAST
@given(
    st.sampled_from(["budget", "degree"]),
    st.one_of(st.integers(-2, 3), st.floats(-1, 3), st.booleans(), st.text(max_size=2), st.none()),
)
def test_static_sizes_are_integers_in_range(field, value):
    valid = isinstance(value, int) and not isinstance(value, bool) and value >= (1 if field == "budget" else 0)
    if not valid:
        with pytest.raises((TypeError, ValueError), match=field):
            jcsol.NORMA(**{field: value})
        return
    assert getattr(jcsol.NORMA(**{field: value}), field) == value


# -- run()'s arguments ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(german):
    X, y = german
    return X[:40], y[:40]


@pytest.fixture
def compiles(monkeypatch):
    """Counts the compilations asked of the engine: an error must come before the first."""
    from jcsol.core import programs

    calls = []
    original = programs.compiled_init

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(programs, "compiled_init", counted)
    return calls


def _mostly(valid, hostile):
    """``valid`` four times in five, ``hostile`` otherwise."""
    return st.integers(0, 4).flatmap(lambda k: hostile if k == 0 else valid)


PERMS = _mostly(
    st.one_of(
        st.integers(1, 3), st.lists(st.integers(0, 39), min_size=1, max_size=5).map(lambda v: np.array([v, v[::-1]]))
    ),
    st.one_of(
        st.integers(-1, 0),
        st.booleans(),
        st.floats(0, 3),
        st.none(),
        st.lists(st.integers(-2, 42), min_size=0, max_size=5).map(np.array),
        st.sampled_from(
            [
                np.zeros((2, 3)),
                np.zeros((0, 4), int),
                np.array([[0, 1], [2, 3]], np.uint8),
                np.arange(40, dtype=np.int64),
                np.array([[0, 1], [2, 45]]),
            ]
        ),
    ),
)
CURVE_POINTS = _mostly(st.integers(0, 5), st.one_of(st.integers(-1, 45), st.booleans(), st.floats(0, 5), st.none()))
CHUNK_SIZES = _mostly(st.sampled_from([None, 7, 40]), st.sampled_from([0, -1, 2.5, True, "8"]))
KEYS = _mostly(
    st.integers(0, 3),
    st.one_of(st.booleans(), st.floats(0, 1), st.text(max_size=2), st.sampled_from([-1, 2**32, 2**64])),
)


def _valid_run(perms, curve_points, chunk_size, key, n=40) -> bool:
    def count(v, low, allow_none=False):
        return (allow_none and v is None) or (isinstance(v, int) and not isinstance(v, bool) and v >= low)

    if count(perms, 1):
        length = n
    elif (
        isinstance(perms, np.ndarray)
        and perms.dtype.kind in "iu"
        and perms.ndim in (1, 2)
        and perms.size
        and perms.min() >= 0
        and perms.max() < n
    ):
        length = perms.shape[-1]
    else:
        return False
    return (
        count(curve_points, 0)
        and curve_points <= length
        and count(chunk_size, 1, True)
        and count(key, 0)
        and key < 2**32
    )


@FAST
@given(PERMS, CURVE_POINTS, CHUNK_SIZES, KEYS)
def test_run_arguments_end_in_an_early_error_or_a_correct_result(tiny, compiles, perms, curve_points, chunk_size, key):
    X, y = tiny
    compiles.clear()
    run = lambda: jcsol.run(
        jcsol.COG(),
        X,
        y,
        perms=perms,
        curve_points=curve_points,
        chunk_size=chunk_size,
        key=key,
        objective=jcsol.Cost(),
    )
    if not _valid_run(perms, curve_points, chunk_size, key):
        with pytest.raises((TypeError, ValueError), match=r"\w"):  # a message naming the cause
            run()
        assert not compiles
        return
    res = run()
    np.testing.assert_array_equal(res.counts.sum(axis=-1), res.orders.shape[1])


# -- checkpoints ---------------------------------------------------------------------------------------------


def _run_with(tiny, path, **kwargs):
    X, y = tiny
    return jcsol.run(
        jcsol.ACOG(eta=[0.1, 1.0]),
        X,
        y,
        perms=2,
        chunk_size=8,
        curve_points=5,
        checkpoint=path,
        checkpoint_every=2,
        **kwargs,
    )


@pytest.fixture(scope="module")
def saved(tiny, tmp_path_factory):
    """A checkpoint after 2 of 5 chunks, and the result of the whole run."""
    X, y = tiny
    whole = jcsol.run(jcsol.ACOG(eta=[0.1, 1.0]), X, y, perms=2, chunk_size=8, curve_points=5)
    path = tmp_path_factory.mktemp("ck") / "run.ckpt"

    def stop(chunk):
        if chunk.chunks_done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run_with(tiny, path, on_chunk=stop)
    return path.read_bytes(), whole


def _mutate_archive(path, meta_change=None, leaf_change=None):
    with np.load(path) as archive:
        arrays = {k: archive[k].copy() for k in archive.files}
    meta = json.loads(arrays["meta"].tobytes().decode())
    if meta_change:
        meta[meta_change[0]] = meta_change[1]
    if leaf_change:
        arrays[leaf_change[0]] = leaf_change[1](arrays.get(leaf_change[0], np.zeros(1)))
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 9),
    st.floats(allow_nan=False),
    st.text(max_size=4),
    st.lists(st.integers(0, 2), max_size=2),
)
MUTATIONS = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(1, 255)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6)),
    st.tuples(
        st.just("meta"),
        st.sampled_from(["format", "fingerprint", "chunks_done", "n_chunks", "n_leaves", "digest", "other"]),
        JSON_VALUES,
    ),
    st.tuples(st.just("leaf"), st.integers(0, 8), st.sampled_from(["float64", "scale", "drop_axis", "nan"])),
)
LEAF_CHANGES = {
    "float64": lambda a: a.astype(np.float64),
    "scale": lambda a: a * 2 + 1,
    "drop_axis": lambda a: a[:1],
    "nan": lambda a: np.full(a.shape, np.nan),
}


@FAST
@given(MUTATIONS)
def test_damaged_checkpoints_are_refused_before_the_run_or_resume_exactly(
    saved, tiny, tmp_path_factory, compiles, mutation
):
    raw, whole = saved
    path = tmp_path_factory.mktemp("m") / "run.ckpt"
    path.write_bytes(raw)
    kind = mutation[0]
    if kind == "flip":
        data = bytearray(raw)
        data[mutation[1] % len(data)] ^= mutation[2]
        path.write_bytes(bytes(data))
    elif kind == "truncate":
        path.write_bytes(raw[: mutation[1] % len(raw)])
    elif kind == "meta":
        _mutate_archive(path, meta_change=mutation[1:])
    else:
        _mutate_archive(path, leaf_change=(f"leaf_{mutation[1]}", LEAF_CHANGES[mutation[2]]))
    compiles.clear()
    try:
        res = _run_with(tiny, path)
    except CheckpointError as err:
        message = str(err)
    else:
        assert res.resumed_at == 16  # the mutation left the checkpoint intact (a byte of the archive's padding)
        np.testing.assert_array_equal(res.counts, whole.counts)
        np.testing.assert_array_equal(res.curve, whole.curve)
        return
    assert str(path) in message
    assert not compiles


# -- row stores ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    source = tmp_path_factory.mktemp("src") / "german.svm"
    source.write_bytes(jcsol.datasets._shipped_bytes("german"))
    directory = tmp_path_factory.mktemp("store") / "s"
    store = RowStore.build(source, directory, block_rows=300)
    return directory, store.load()


STORE_MUTATIONS = st.one_of(
    st.tuples(
        st.just("meta"),
        st.sampled_from(["n_rows", "n_features", "width", "dtype", "format", "fingerprint", "source"]),
        JSON_VALUES,
    ),
    st.tuples(
        st.just("truncate"),
        st.sampled_from(["indices.npy", "values.npy", "labels.npy", "meta.json"]),
        st.integers(0, 10**5),
    ),
    st.tuples(st.just("delete"), st.sampled_from(["indices.npy", "values.npy", "labels.npy"]), st.just(0)),
    st.tuples(st.just("labels"), st.integers(-3, 3), st.integers(0, 999)),
    st.tuples(st.just("index"), st.integers(-5, 40), st.integers(0, 999)),
)


@FAST
@given(STORE_MUTATIONS)
def test_damaged_row_stores_are_refused_or_read_as_built(built, tmp_path_factory, mutation):
    directory, (rows, y) = built
    target = tmp_path_factory.mktemp("m") / "s"
    shutil.copytree(directory, target)
    kind, what, arg = mutation
    if kind == "meta":
        meta = json.loads((target / "meta.json").read_text())
        meta[what] = arg
        (target / "meta.json").write_text(json.dumps(meta))
    elif kind == "truncate":
        raw = (target / what).read_bytes()
        (target / what).write_bytes(raw[: arg % max(len(raw), 1)])
    elif kind == "delete":
        (target / what).unlink()
    elif kind == "labels":
        labels = np.load(target / "labels.npy")
        labels[arg] = what
        np.save(target / "labels.npy", labels)
    else:
        indices = np.load(target / "indices.npy", mmap_mode="r+")
        indices[arg, 0] = what
        indices.flush()
        del indices
    try:
        got_rows, got_y = RowStore(target).load()
    except (RowStoreError, FileNotFoundError, ValueError) as err:
        message = str(err)
    else:
        np.testing.assert_array_equal(got_rows.todense(), rows.todense())  # the mutation changed nothing read
        np.testing.assert_array_equal(got_y, y)
        return
    assert str(target) in message or "SparseRows" in message


# -- sparse rows -------------------------------------------------------------------------------------------

COLUMNS = st.sampled_from([0, 1, 2, 3, 0, 1, 2, 3, -1, 4])  # 4 columns; one entry in 5 out of range
ENTRIES = st.sampled_from([0.5, -1.0, 2.0, 1.5, -0.25, 0.0, np.nan, np.inf, -np.inf])


@settings(FAST, max_examples=150)
@given(
    st.integers(0, 6),
    st.integers(0, 5),
    st.data(),
)
def test_few_sparse_rows_are_judged_as_many_are(n, k, data):
    """A batch of few entries is checked in Python first (:data:`jcsol.stream.FEW_ENTRIES`); it must accept and
    refuse exactly what the NumPy checks of a large batch do: the same rows repeated past that size."""
    from jcsol.stream import FEW_ENTRIES, check_features

    d = 4
    indices = np.array(data.draw(st.lists(COLUMNS, min_size=n * k, max_size=n * k)), np.int64)
    values = np.array(data.draw(st.lists(ENTRIES, min_size=n * k, max_size=n * k)), np.float32)
    few = jcsol.SparseRows(indices.reshape(n, k), values.reshape(n, k), d)
    copies = FEW_ENTRIES // max(n * k, 1) + 1
    many = jcsol.SparseRows(np.tile(few.indices, (copies, 1)), np.tile(few.values, (copies, 1)), d)

    once = data.draw(st.booleans())  # learning's check, or scoring's (a column named twice is added up)

    def verdict(rows):
        try:
            out = check_features(rows, columns_once=once)
        except ValueError as err:  # which check refused it (the counts in the messages differ)
            return next(what for what in ("must lie in", "NaN value", "infinite value", "twice") if what in str(err))
        return out.indices.dtype, out.indices[:n].tolist()

    assert few.values.size <= FEW_ENTRIES
    assert many.values.size > FEW_ENTRIES or n * k == 0
    assert verdict(few) == verdict(many)


@settings(FAST, max_examples=150)
@given(st.integers(1, 40), st.integers(2, 6), st.data())
def test_a_column_twice_is_found_in_any_order(n, k, data):
    """Rows in column order or not, zero-valued entries anywhere: the first row naming a column twice with
    non-zero values is the one refused, and only such a row."""
    from jcsol.stream import _check_unique_columns

    d = 6
    sorted_rows = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    indices = np.zeros((n, k), np.int32)
    values = np.zeros((n, k), np.float32)
    for r, ordered in enumerate(sorted_rows):
        cols = data.draw(st.lists(st.integers(0, d - 1), min_size=k, max_size=k, unique=ordered))
        vals = data.draw(st.lists(st.sampled_from([0.0, 1.0, -2.5]), min_size=k, max_size=k))
        if ordered:  # increasing columns, non-zeros first
            cols, vals = sorted(cols), sorted(vals, key=lambda v: v == 0)
        indices[r], values[r] = cols, vals
    first = next(
        (r for r in range(n) if len(named := [c for c, v in zip(indices[r], values[r]) if v]) != len(set(named))),
        None,
    )
    if first is None:
        _check_unique_columns(indices, values)
    else:
        with pytest.raises(ValueError, match=f"row {first} holds column"):
            _check_unique_columns(indices, values)


# -- the command line ---------------------------------------------------------------------------------------


class _Reached(Exception):
    """Raised in place of the computation: the arguments passed every check."""


OPTIONS = st.lists(
    st.one_of(
        st.tuples(
            st.just("--grid"),
            st.sampled_from(
                [
                    "eta=1e-1:1e1",
                    "eta=1,10",
                    "gamma=0.5,1",
                    "gama=1",
                    "eta=",
                    "eta=1e-1:1e1:1e2",
                    "eta=0:1",
                    "eta=-1,1",
                    "eta=nan",
                    "C=1",
                    "eta=a",
                    "eta=1e5:1e-5",
                ]
            ),
        ),
        st.tuples(st.just("--learner"), st.sampled_from(["COG-I", "ACOG-I", "Perceptron", "NOPE", "PA-I"])),
        st.tuples(st.just("--perms"), st.sampled_from(["0", "-2", "1.5", "2", "x"])),
        st.tuples(st.just("--alpha-p"), st.sampled_from(["0.3", "1", "0", "nan", "-0.5"])),
        st.tuples(st.just("--c-p"), st.sampled_from(["0.9", "1.5", "inf"])),
        st.tuples(st.just("--objective"), st.sampled_from(["sum", "cost", "auc"])),
        st.tuples(st.just("--csv"), st.sampled_from(["OUT/a.csv", "OUT", "OUT/missing/a.csv", "OUT/same"])),
        st.tuples(st.just("--json"), st.sampled_from(["OUT/a.json", "OUT/same"])),
        st.tuples(st.just("--data"), st.sampled_from(["german", "no-such-set", "OUT"])),
        st.tuples(st.just("--loss"), st.sampled_from(["I", "II", "III"])),
        st.tuples(st.just("--positive")),
    ),
    max_size=5,
)


@FAST
@given(OPTIONS)
def test_command_lines_fail_in_one_line_before_any_computation(monkeypatch, tmp_path, capsys, options):
    import jcsol.protocols

    def reached(*args, **kwargs):
        raise _Reached

    monkeypatch.setattr(jcsol.protocols, "select_and_rerun", reached)
    monkeypatch.setattr(jcsol, "run", reached)
    argv = ["run"] + [part.replace("OUT", str(tmp_path)) for option in options for part in option]
    capsys.readouterr()
    try:
        rc = cli.main(argv)
    except SystemExit as exit_:  # argparse's own refusals
        rc = exit_.code
    except _Reached:
        grids = [v.split("=")[0] for k, v in zip(argv, argv[1:]) if k == "--grid"]
        learners = [v for k, v in zip(argv, argv[1:]) if k == "--learner"][-1:] or cli.DEFAULT_LEARNERS
        names = set().union(*(jcsol.by_name(n).hyperparameters() for n in learners))
        assert set(grids) <= names, argv
        assert len(set(grids)) == len(grids), argv  # every axis given is used
        return
    err = capsys.readouterr().err
    assert rc == 2, (argv, err)
    assert err.startswith("jcsol: error: "), err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err, err
