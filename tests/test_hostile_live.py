"""The live learner and its files as a hostile user meets them: every refused call leaves every state as it was
(property-tested leaf by leaf), ids of every accepted kind survive the store and a restart, constructor
arguments are checked when given, empty batches are no-ops, and saves are refused naming their target, leave
no temporary file when interrupted and put every field under the digest."""

import json
import os

import jax
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import jcsol  # noqa: E402
from jcsol import checkpoint, files  # noqa: E402
from jcsol.live import Live, LiveFileError  # noqa: E402

FAST = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LEARNER = jcsol.COG(eta=np.array([0.1, 1.0]))
D = 4


def rows(n, seed=0, d=D):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def labels(n, seed=0):
    return np.where(np.random.default_rng(seed + 1).random(n) < 0.3, 1, -1).astype(np.int8)


def state(live):
    """Everything a call could change, as plain values and arrays: the learner's carries and board, the events
    learnt, the store's pending events (ids, rows, scores, evictions), the encoder's statistics."""
    out = {"events": live.events, "n_features": live.n_features, "pending": len(live.store)}
    out["store"] = {k: np.array(v) for k, v in live.store.arrays().items()}
    out["ids"] = list(live.store.slots)
    if live.n_features is not None:
        out["carry"] = [np.array(a) for a in jax.tree.leaves(live.carry)]
        out["board"] = [np.array(a) for a in jax.tree.leaves(live.board)]
    if live.encoder is not None:
        out["encoder"] = {k: np.array(v) for k, v in live.encoder.state_dict().items()}
    return out


def assert_same_state(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype
            assert x.shape == y.shape
            assert np.array_equal(x, y, equal_nan=x.dtype.kind in "fc")
        else:
            assert type(x) is type(y)
            assert x == y


def refused(live, call, error, match=None):
    """Runs ``call``, which must raise ``error``, and checks that it changed nothing."""
    before = state(live)
    with pytest.raises(error, match=match):
        call()
    assert_same_state(before, state(live))


# -- every refused call changes nothing -------------------------------------------------------------------------

HOSTILE = [
    "nan row",
    "inf row",
    "wide rows",
    "ids too few",
    "ids repeated",
    "ids pending",
    "float ids",
    "bool ids",
    "none id",
    "bad labels",
    "unknown label id",
    "one unknown among pending",
    "rows and labels differ",
    "sparse while dense pending",
    "store overflow",
    "labels repeat an id",
    "table labels differ",
    "table ids too few",
    "table ids pending",
    "table value not a number",
]
VALID = ["predict", "predict ids", "learn", "learn pending", "empty", "pending", "learn table"]


def table(n, rng):
    """``n`` records of a payment table: an amount (missing at times) and a shop."""
    amounts = rng.lognormal(3, 2, n)
    return [
        {"amount": None if rng.random() < 0.2 else float(a), "shop": str(rng.choice(["a", "b", "c"]))} for a in amounts
    ]


def hostile_call(live, kind, rng, fresh):
    """A call of this kind that must be refused: ``(callable, error)``. With an encoder, the events kept for
    their labels are table rows (sparse), and the rows of the other kind are dense."""
    X = rows(2, int(rng.integers(1 << 30)))
    pending = list(live.store.slots)
    with_table = live.encoder is not None
    if kind == "nan row":
        X[1, 0] = np.nan
        return (lambda: live.predict(X, ids=fresh(2))), ValueError
    if kind == "inf row":
        X[0, 1] = np.inf
        return (lambda: live.learn(X, [1, -1])), ValueError
    if kind == "wide rows":
        return (lambda: live.predict(rows(2, d=D + 1), ids=fresh(2))), ValueError
    if kind == "ids too few":
        return (lambda: live.predict(X, ids=fresh(1))), ValueError
    if kind == "ids repeated":
        return (lambda: live.predict(X, ids=[77, 77])), ValueError
    if kind == "ids pending" and pending:
        return (lambda: live.predict(X, ids=[*fresh(1), pending[0]])), ValueError
    if kind == "float ids":
        return (lambda: live.predict(X, ids=[1.0, 2.0])), TypeError
    if kind == "bool ids":
        return (lambda: live.predict(X, ids=np.array([True, False]))), TypeError
    if kind == "none id":
        return (lambda: live.predict(X, ids=[*fresh(1), None])), TypeError
    if kind == "bad labels":
        return (lambda: live.learn(X, [0, 2])), ValueError
    if kind == "unknown label id":
        return (lambda: live.learn(ids=fresh(1), y=[1])), KeyError
    if kind == "one unknown among pending" and pending:
        return (lambda: live.learn(ids=[pending[-1], *fresh(1)], y=[1, -1])), KeyError
    if kind == "rows and labels differ":
        return (lambda: live.learn(X, [1, -1, 1])), ValueError
    if kind == "sparse while dense pending" and pending:
        sparse = jcsol.SparseRows(np.array([[0], [1]], np.int32), np.ones((2, 1), np.float32), D)
        return (lambda: live.predict(X if with_table else sparse, ids=fresh(2))), ValueError
    if kind.startswith("table") and with_table:
        records = table(2, rng)
        if kind == "table labels differ":
            return (lambda: live.learn(records, [1])), ValueError
        if kind == "table ids too few":
            return (lambda: live.predict(records, ids=fresh(1))), ValueError
        if kind == "table ids pending" and pending:
            return (lambda: live.predict(records, ids=[*fresh(1), pending[0]])), ValueError
        if kind == "table value not a number":
            records[1]["amount"] = "lots"
            return (lambda: live.predict(records, ids=fresh(2))), ValueError
    if kind == "store overflow":
        return (lambda: live.predict(rows(9), ids=fresh(9))), OverflowError
    if kind == "labels repeat an id" and pending:
        return (lambda: live.learn(ids=[pending[0], pending[0]], y=[1, 1])), ValueError
    return (lambda: live.learn(X, [1, -1, 1])), ValueError


def valid_call(live, kind, rng, fresh):
    n = int(rng.integers(1, 4))
    X, y = rows(n, int(rng.integers(1 << 30))), labels(n, int(rng.integers(1 << 30)))
    if kind == "predict":
        live.predict(X)
    elif kind == "predict ids":
        live.predict(X if live.encoder is None else table(n, rng), ids=fresh(n))
    elif kind == "learn table":
        live.learn(X if live.encoder is None else table(n, rng), y)
    elif kind == "learn":
        live.learn(X, y)
    elif kind == "learn pending":
        pending = list(live.store.slots)[:n]
        live.learn(ids=pending, y=y[: len(pending)])
    elif kind == "empty":
        live.predict(np.zeros((0, D), np.float64), ids=[])
        live.learn(np.zeros((0, D), np.float32), [])
    else:
        live.pending(list(live.store.slots)[:2] + fresh(1))


@FAST
@given(
    calls=st.lists(st.one_of(st.sampled_from(HOSTILE), st.sampled_from(VALID)), min_size=4, max_size=14),
    seed=st.integers(0, 2**16),
    select=st.sampled_from(["ftl", "hedge"]),
    with_table=st.booleans(),
)
def test_a_refused_call_changes_no_state(calls, seed, select, with_table):
    """Random sequences of valid and refused calls (with a table encoder or not): after every refused call, the
    whole state equals, leaf by leaf, the state before it."""
    encoder = None
    if with_table:
        features = pytest.importorskip("jcsol.features")
        encoder = features.TableEncoder(numeric=["amount"], categorical=["shop"], bits=2)  # rows of D features
    live = Live(LEARNER, select=select, store_size=8, on_full="raise", forgetting=0.99, encoder=encoder)
    rng = np.random.default_rng(seed)
    counter = iter(range(10**6))
    kinds = [lambda i: i, lambda i: f"id-{i}", lambda i: 2**64 - 1 - i, lambda i: -(2**80) - i]
    fresh = lambda n: [kinds[int(rng.integers(4))](next(counter)) for _ in range(n)]
    live.learn(rows(3, seed), labels(3, seed))
    for kind in calls:
        if kind in VALID:
            if kind == "predict ids" and len(live.store) > 4:
                kind = "learn pending"
            valid_call(live, kind, rng, fresh)
        else:
            call, error = hostile_call(live, kind, rng, fresh)
            refused(live, call, error)


def test_a_refused_call_through_an_encoder_leaves_its_statistics():
    """The encoder has encoded the rows when the call is refused for their count, their ids or the store: its
    running statistics are those before the call, and the next call scales as if the refused one never came."""
    features = pytest.importorskip("jcsol.features")
    make = lambda: features.TableEncoder(numeric=["amount"], categorical=["shop"], bits=4)
    records = [{"amount": float(a), "shop": s} for a, s in zip([3, 50, 7, 900, 12, 40], "abcabc")]
    live = Live(LEARNER, encoder=make(), store_size=4, on_full="raise")
    twin = Live(LEARNER, encoder=make(), store_size=4, on_full="raise")
    for each in (live, twin):
        each.learn(records[:2], [1, -1])
    live.predict(records[2:3], ids=["p"])
    twin.predict(records[2:3], ids=["p"])
    refused(live, lambda: live.learn(records[3:5], [1]), ValueError, "rows but y has")
    refused(live, lambda: live.predict(records[3:5], ids=["q"]), ValueError, "1 ids for 2 events")
    refused(live, lambda: live.predict(records[3:5], ids=["p", "q"]), ValueError, "already pending")
    refused(live, lambda: live.predict(records[:4], ids=list("wxyz")), OverflowError, "do not fit")
    refused(live, lambda: live.learn(records[3:5], [1, 5]), ValueError, "labels must be")
    refused(live, lambda: live.learn([{"amount": "many", "shop": "a"}], [1]), ValueError)
    for each in (live, twin):
        each.learn(records[3:], [1, -1, 1])
        each.learn(ids=["p"], y=[-1])
    assert_same_state(state(twin), state(live))


# -- ids --------------------------------------------------------------------------------------------------------

IDS = st.one_of(
    st.integers(-(2**100), 2**100),
    st.integers(2**63, 2**64 - 1),
    st.text(max_size=6),
    st.sampled_from(["5", "", "\x00", "a\x00", "é", "💳", "-0", "007"]),
)


@FAST
@given(batches=st.lists(st.lists(IDS, min_size=0, max_size=4), min_size=1, max_size=4))
def test_ids_of_every_kind_round_trip_through_the_store_and_a_restart(batches, tmp_path_factory):
    """Integers of any size and strings, mixed in a batch and over the stream's life: each is pending, saved,
    loaded and labelled as the id it was given (5 and "5" are two ids)."""
    path = tmp_path_factory.mktemp("ids") / "live.npz"
    live = Live(LEARNER, n_features=D)
    given_ids: list = []
    seen: set = set()
    for batch in batches:
        batch = [k for k in dict.fromkeys(batch) if (type(k), k) not in seen]  # fresh ids, each once
        seen.update((type(k), k) for k in batch)
        live.predict(rows(len(batch)), ids=batch)
        given_ids += batch
    live.save(path)
    loaded = Live.load(path, LEARNER)
    assert list(loaded.store.slots) == given_ids
    for key in given_ids:
        assert type(next(k for k in loaded.store.slots if k == key and type(k) is type(key))) is type(key)
    assert loaded.pending(given_ids).all()
    assert loaded.pending(given_ids[::-1]).all()
    others = [k + 1 if isinstance(k, str) is False else k + "?" for k in given_ids]
    assert not loaded.pending([k for k in others if k not in set(given_ids)]).any()
    y = labels(len(given_ids))
    for each in (live, loaded):
        each.learn(ids=given_ids[::-1], y=y[::-1])
        assert len(each.store) == 0
    assert_same_state(state(live), state(loaded))


def test_ids_from_databases_keep_their_values():
    """uint64 snowflake ids above 2**63, negative ids, ids beyond 64 bits, NumPy and pandas columns: each id is
    its integer value whatever its container, and a string is never the integer it spells."""
    pd = pytest.importorskip("pandas")
    live = Live(LEARNER, n_features=D)
    snowflakes = np.array([2**63 + 5, 2**64 - 1], np.uint64)
    live.predict(rows(2), ids=snowflakes)
    live.predict(rows(3), ids=[-1, 2**70, "5"])
    live.predict(rows(2), ids=pd.Series([5, 6], dtype="int64"))
    live.predict(rows(2), ids=pd.Series(["order-1", "order-2"], dtype=object))
    assert live.pending([2**63 + 5, np.uint64(2**64 - 1), np.int64(-1), 2**70, 5, "5", np.str_("order-1")]).all()
    assert not live.pending([2**63 + 4, "6", "-1", 2**70 + 1]).any()
    with pytest.raises(ValueError, match=r"already pending.*\[18446744073709551615\]"):
        live.predict(rows(1), ids=np.array([2**64 - 1], np.uint64))
    with pytest.raises(KeyError, match=r"not pending.*\[9223372036854775812\]"):
        live.learn(ids=np.array([2**63 + 4], np.uint64), y=[1])
    for bad, shown in [
        ([1.5], "1.5"),
        (np.array([3.0]), "3.0"),
        ([np.float64("nan")], r"np.float64\(nan\)"),
        ([b"id"], "b'id'"),
        ([True], "True"),
        ([None], "None"),
        ([(1, 2)], r"\(1, 2\)"),
    ]:
        refused(live, lambda bad=bad: live.predict(rows(1), ids=bad), TypeError, f"id {shown} ")
    missing = pd.Series([9, None], dtype="Int64")  # a nullable column with a missing id
    refused(live, lambda: live.predict(rows(2), ids=missing), TypeError, "id <NA> .at position 1")
    refused(live, lambda: live.predict(rows(1), ids="a"), TypeError, "sequence of ids")
    refused(live, lambda: live.predict(rows(1), ids=(i for i in [1])), TypeError, "sequence of ids")
    refused(live, lambda: live.predict(rows(2), ids=np.zeros((2, 1), np.int64)), ValueError, "1-D")
    refused(live, lambda: live.pending([0.5]), TypeError, "id 0.5 ")


# -- constructor arguments ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"key": -1}, ValueError, r"key must be a seed in \[0, 2\*\*32\)"),
        ({"key": 2**32}, ValueError, "key must be a seed"),
        ({"key": 1.0}, TypeError, "key must be an int seed"),
        ({"key": True}, TypeError, "key must be an int seed"),
        ({"margin": 1e39}, ValueError, "margin=1e.39 is beyond the range of float32"),
        ({"margin": float("inf")}, ValueError, "margin must be finite"),
        ({"margin": float("nan")}, ValueError, "margin must be finite"),
        ({"margin": -0.1}, ValueError, "margin must be >= 0"),
        ({"margin": "0.1"}, TypeError, "margin must be a real number"),
        ({"rate": 1e36, "select": "hedge"}, ValueError, "rate=1e.36 times the 16384 events of one call overflows"),
        ({"rate": 0.0}, ValueError, "rate must be > 0"),
        ({"rate": True}, TypeError, "rate must be a real number"),
        ({"forgetting": 1e-50}, ValueError, "forgetting=1e-50 is 0 in float32"),
        ({"forgetting": 1.5}, ValueError, r"forgetting must be in \(0, 1\]"),
        ({"forgetting": "0.9"}, TypeError, "forgetting must be a real number"),
        ({"auc_window": 100.0}, TypeError, "auc_window must be an integer"),
        ({"auc_window": True}, TypeError, "auc_window must be an integer"),
        ({"auc_window": 0}, ValueError, "auc_window must be an integer in"),
        ({"store_size": 10.5}, TypeError, "store_size must be an integer"),
        ({"store_size": "10"}, TypeError, "store_size must be an integer"),
        ({"store_size": 0}, ValueError, "store_size must be an integer in"),
        ({"grid_blocks": 2.0}, ValueError, "grid_blocks must cut"),
        ({"grid_blocks": True}, ValueError, "grid_blocks must cut"),
        ({"n_features": 4.0}, TypeError, "n_features must be an integer"),
        ({"n_features": 0}, ValueError, "n_features must be an integer in"),
        ({"n_features": 2**31}, ValueError, "n_features must be an integer in"),
        ({"batch_sizes": "64"}, TypeError, "batch_sizes must be a list or tuple"),
        ({"batch_sizes": (b for b in [64])}, TypeError, "batch_sizes must be a list or tuple"),
        ({"batch_sizes": 64}, TypeError, "batch_sizes must be a list or tuple"),
        ({"batch_sizes": [64.0]}, TypeError, "batch_sizes must be an integer"),
        ({"batch_sizes": [0]}, ValueError, "batch_sizes must be an integer in"),
        ({"select": "best"}, ValueError, "select must be one of"),
        ({"select": ["ftl"]}, ValueError, "select must be one of"),
        ({"on_full": "drop"}, ValueError, "on_full must be one of"),
        ({"on_full": None}, ValueError, "on_full must be one of"),
        ({"dtype": "int8"}, ValueError, "dtype must be float32 or float64"),
        ({"dtype": "no such type"}, ValueError, "dtype must be float32 or float64"),
        ({"encoder": object()}, TypeError, "encoder must be a jcsol.features.TableEncoder"),
    ],
)
def test_constructor_arguments_are_checked_naming_them(kwargs, error, match):
    with pytest.raises(error, match=match):
        Live(LEARNER, **kwargs)


def test_learner_objective_and_encoder_arguments_are_checked():
    features = pytest.importorskip("jcsol.features")
    with pytest.raises(TypeError, match="COG: eta must be a real number"):
        Live(jcsol.COG(eta=None))
    with pytest.raises(TypeError, match="learner must be a jcsol learner"):
        Live([LEARNER, "COG"])
    with pytest.raises(ValueError, match="n_features=5, but the encoder makes rows of 16 features"):
        Live(LEARNER, encoder=features.TableEncoder(numeric=["a"], bits=4), n_features=5)
    with pytest.raises(TypeError, match="learner must be a jcsol learner"):
        Live.load("nowhere.npz", None)
    with pytest.raises(TypeError, match="objective must be"):
        Live.load("nowhere.npz", LEARNER, "sum")
    big = Live(LEARNER, batch_sizes=np.array([3, 3, 5]), margin=np.float32(0.5), key=np.uint32(7))
    assert big.batch_sizes == (5, 3)
    assert big.selection.margin == 0.5
    assert big.key == 7


# -- empty batches ----------------------------------------------------------------------------------------------


def empty_batches():
    yield "float32", np.zeros((0, D), np.float32)
    yield "float64", np.zeros((0, D), np.float64)
    yield "int64", np.zeros((0, D), np.int64)
    yield "sparse", jcsol.SparseRows(np.zeros((0, 0), np.int32), np.zeros((0, 0), np.float32), D)
    scipy = pytest.importorskip("scipy.sparse")
    yield "scipy", scipy.csr_matrix((0, D), dtype=np.float32)


def test_empty_batches_change_nothing_and_return_empty_results():
    fresh = Live(LEARNER)
    for _, X in empty_batches():  # not even started: no dimension is fixed by an empty batch
        assert fresh.predict(X, ids=[]).shape == (0,)
        assert fresh.learn(X, np.zeros(0), return_scores=True).shape == (0, 2)
    assert fresh.learn(ids=[], y=[]) is None
    assert fresh.pending([]).shape == (0,)
    assert fresh.n_features is None
    live = Live(LEARNER)
    live.learn(rows(5), labels(5))
    live.predict(rows(2), ids=[1, 2])
    before = state(live)
    for name, X in empty_batches():
        assert live.predict(X).shape == (0,), name
        assert live.predict(X, ids=np.array([], np.uint64)).shape == (0,), name
        assert live.scores(X).shape == (0, 2), name
        assert live.learn(X, np.zeros(0, np.int8), return_scores=True).shape == (0, 2), name
        assert live.learn(ids=[], y=np.zeros(0)) is None
    assert_same_state(before, state(live))
    refused(live, lambda: live.predict(np.zeros((0, D + 1), np.float32)), ValueError, "features")


def test_empty_micro_batches_between_events_leave_the_bits_of_the_stream():
    X, y = rows(12, 3), labels(12, 3)
    plain, busy = Live(LEARNER, select="hedge"), Live(LEARNER, select="hedge")
    plain.learn(X, y)
    for t in range(12):
        busy.learn(np.zeros((0, D), np.float32), [])
        busy.predict(X[t : t + 1], ids=[t])
        busy.predict(np.zeros((0, D)), ids=[])
        busy.learn(ids=[t], y=y[t : t + 1])
    np.testing.assert_array_equal(plain.states.w, busy.states.w)
    np.testing.assert_array_equal(plain.counts, busy.counts)


# -- files ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    live = Live(LEARNER, select="hedge", margin=0.0, rate=0.1, batch_sizes=(3,), store_size=10)
    live.learn(rows(6), labels(6))
    live.predict(rows(2, 1), ids=[10, "ten"])
    path = tmp_path_factory.mktemp("saved") / "live.npz"
    live.save(path)
    return live, path


@pytest.mark.parametrize("error", [KeyboardInterrupt, OSError])
def test_an_interrupted_save_leaves_the_old_file_and_no_temporary(saved, tmp_path, monkeypatch, error):
    live, original = saved
    path = tmp_path / "live.npz"
    path.write_bytes(original.read_bytes())

    def interrupted(fh, *args, **kwargs):
        fh.write(b"half a file")
        raise error("interrupted")

    monkeypatch.setattr(np, "savez", interrupted)
    with pytest.raises(error):
        live.save(path)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["live.npz"]
    assert path.read_bytes() == original.read_bytes()
    live.save(path)  # a restart saves again over it
    assert os.listdir(tmp_path) == ["live.npz"]
    assert Live.load(path, LEARNER).pending([10, "ten"]).all()


def test_temporaries_of_killed_writers_are_removed_by_the_next_save(saved, tmp_path):
    live, _ = saved
    path = tmp_path / "live.npz"
    dead = 2**22 + 12345  # above Linux's largest pid: a writer that was killed, its process gone
    host = files.socket.gethostname()
    stale = tmp_path / f"live.npz.tmp-{host}-{dead}-1"
    running = tmp_path / f"live.npz.tmp-{host}-{os.getppid()}-1"  # a writer that still runs: left alone
    elsewhere = tmp_path / "live.npz.tmp-another-host-1-1"  # another host's: left alone
    other = tmp_path / f"other.npz.tmp-{host}-{dead}-1"  # another target's: left alone
    for each in (stale, running, elsewhere, other):
        each.write_bytes(b"torn")
    live.save(path)
    assert sorted(os.listdir(tmp_path)) == sorted(["live.npz", running.name, elsewhere.name, other.name])
    Live.load(path, LEARNER)


def test_a_save_where_no_file_can_be_written_is_refused_naming_the_target(saved, tmp_path, monkeypatch):
    live, _ = saved
    (tmp_path / "locked").mkdir()
    real = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode, *a, **k: False if str(p).endswith("locked") else real(p, mode, *a, **k)
    )
    monkeypatch.setattr(type(live.store), "arrays", lambda self: pytest.fail("the save did work before refusing"))
    cases = [
        (tmp_path, IsADirectoryError, f"live learner file {tmp_path} is a directory"),
        (tmp_path / "missing" / "live.npz", FileNotFoundError, f"live learner file {tmp_path / 'missing'}"),
        (tmp_path / "locked" / "live.npz", PermissionError, "is not writable"),
    ]
    for target, error, match in cases:
        with pytest.raises(error, match=match) as refusal:
            live.save(target)
        assert ".tmp-" not in str(refusal.value)
    assert sorted(os.listdir(tmp_path)) == ["locked"]


FIELDS = {
    "selection": lambda m: m["selection"].update(margin=0.5),
    "rate": lambda m: m["selection"].update(rate=0.2),
    "rule": lambda m: m["selection"].update(rule="ftl"),
    "window": lambda m: m["selection"].update(window=20),
    "store_size": lambda m: m.update(store_size=11),
    "on_full": lambda m: m.update(on_full="raise"),
    "batch_sizes": lambda m: m.update(batch_sizes=[4]),
    "dtype": lambda m: m.update(dtype="float64"),
    "key": lambda m: m.update(key=1),
    "n_features": lambda m: m.update(n_features=5),
    "grid_blocks": lambda m: m.update(grid_blocks=2),
    "encoder": lambda m: m.update(encoder="jcsol.features.TableEncoder"),
}


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_every_saved_field_is_under_the_digest(saved, tmp_path, field):
    _, path = saved
    with np.load(path) as archive:
        arrays = dict(archive)
    meta = json.loads(arrays["meta"].tobytes())
    FIELDS[field](meta)
    edited = tmp_path / "edited.npz"
    np.savez(edited, **{**arrays, "meta": np.frombuffer(json.dumps(meta).encode(), np.uint8)})
    with pytest.raises(LiveFileError, match="corrupted"):
        Live.load(edited, LEARNER)


def test_checkpoint_saves_share_the_checks_and_the_clean_up(tmp_path, monkeypatch):
    with pytest.raises(IsADirectoryError, match=f"checkpoint {tmp_path} is a directory"):
        checkpoint.check_checkpoint_path(tmp_path)
    with pytest.raises(FileNotFoundError, match="checkpoint .*folder .*missing does not exist"):
        checkpoint.check_checkpoint_path(tmp_path / "missing" / "run.ckpt")
    path = tmp_path / "run.ckpt"
    checkpoint.save_checkpoint(path, "fp", 1, 2, [np.arange(3)])
    monkeypatch.setattr(np, "savez", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save_checkpoint(path, "fp", 2, 2, [np.arange(3)])
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["run.ckpt"]
    assert checkpoint.load_checkpoint(path, "fp", 2)[0] == 1


# -- a fraud team's stream ---------------------------------------------------------------------------------------


def test_a_file_loaded_twice_gives_two_independent_learners(saved):
    live, path = saved
    first, second = Live.load(path, LEARNER), Live.load(path, LEARNER)
    first.learn(ids=[10, "ten"], y=[1, -1])
    assert second.pending([10, "ten"]).all()
    assert second.events == live.events == first.events - 2
    second.learn(ids=[10, "ten"], y=[1, -1])
    assert_same_state(state(first), state(second))


def test_load_with_another_learner_objective_or_file_is_refused(saved, tmp_path):
    _, path = saved
    for learner, objective, match in [
        (jcsol.COG(eta=np.array([0.1, 2.0])), None, "another learner"),
        ([LEARNER, LEARNER], None, "another learner"),
        (jcsol.PA1(C=np.array([0.1, 1.0])), None, "another learner"),
        (LEARNER, jcsol.Cost(), "another objective"),
    ]:
        with pytest.raises(LiveFileError, match=match):
            Live.load(path, learner, objective)
    with pytest.raises(LiveFileError, match="not a readable"):
        Live.load(tmp_path / "absent.npz", LEARNER)
    (tmp_path / "folder.npz").mkdir()
    with pytest.raises(LiveFileError, match="not a readable"):
        Live.load(tmp_path / "folder.npz", LEARNER)


def test_labels_for_events_never_predicted_name_the_ids_as_given():
    live = Live(LEARNER, n_features=D)
    live.predict(rows(2), ids=["tx-1", 2])
    refused(live, lambda: live.learn(ids=["tx-1", "tx-9"], y=[1, -1]), KeyError, r"\['tx-9'\]")
    refused(live, lambda: live.learn(ids=np.array([2, 3], np.int64), y=[1, -1]), KeyError, r"\[3\]")
    refused(live, lambda: live.learn(ids=["2"], y=[1]), KeyError, r"\['2'\]")  # the string is not the integer
    refused(live, lambda: live.learn(ids=[2, "tx-1"], y=[1]), ValueError, "2 ids for 1 events")
    refused(live, lambda: live.learn(ids=[2], y=[3]), ValueError, "labels must be")
    refused(live, lambda: live.learn(ids=[2], y=[np.nan]), ValueError, "NaN")
    live.learn(ids=[2, "tx-1"], y=[1, -1])
    refused(live, lambda: live.learn(ids=[2], y=[1]), KeyError, "already labelled")


def test_a_store_that_would_outgrow_the_memory_is_refused_before_anything_changes(monkeypatch):
    """The pending events' store grows as events wait for labels; a growth beyond the memory free is refused
    before the call changes anything — the first call included, which would otherwise start the learner."""
    from jcsol.core import checks

    live = Live(LEARNER, store_size=10**6)
    monkeypatch.setattr(checks, "available_memory", lambda: 2**20)  # 1 MiB free: 1024 rows of 1,000 do not fit
    wide = rows(4, d=1000)
    refused(live, lambda: live.predict(wide, ids=[1, 2, 3, 4]), MemoryError, r"grows the store to 1024 events")
    assert live.n_features is None
    monkeypatch.undo()
    live.predict(wide, ids=[1, 2, 3, 4])  # with the memory back, the same call is taken
    assert len(live.store) == 4


@pytest.mark.parametrize("value", [1, "yes", None, np.array([True])])
def test_return_scores_is_a_bool_or_refused_before_anything_is_learnt(value):
    live = Live(LEARNER)
    live.learn(rows(3), labels(3))
    refused(live, lambda: live.learn(rows(2, 1), labels(2, 1), return_scores=value), TypeError, "return_scores must be")


@pytest.mark.parametrize(
    "objective",
    [jcsol.Sum(rho="laplace", alpha_p=0.3), jcsol.Cost(c_p=0.7, c_n=0.3)],
    ids=["sum", "cost"],
)
def test_the_leaderboard_weighs_the_counts_by_the_objective_as_given_not_its_float32_copy(objective):
    """0.3 and 0.7 are not float32 numbers: the board's copies are about 1e-8 off, so were the figures."""
    live = Live([jcsol.COG(eta=np.array([0.1, 1.0])), jcsol.PA()], objective)
    live.learn(rows(300, 5), labels(300, 5))
    board = live.leaderboard()
    tp, fn, fp, tn = board.counts.T.astype(np.float64)
    alpha_p, c_p = (0.3, 0.9) if isinstance(objective, jcsol.Sum) else (0.5, 0.7)
    assert min(tp + fn) > 0
    assert min(tn + fp) > 0
    np.testing.assert_allclose(board.sum, alpha_p * tp / (tp + fn) + (1 - alpha_p) * tn / (tn + fp), rtol=1e-14)
    np.testing.assert_allclose(board.cost, c_p * fn + (1 - c_p) * fp, rtol=1e-14)
    stp, sfn, sfp, stn = board.served_counts.astype(np.float64)
    assert board.served_sum == pytest.approx(alpha_p * stp / (stp + sfn) + (1 - alpha_p) * stn / (stn + sfp), rel=1e-14)
    assert board.served_cost == pytest.approx(c_p * sfn + (1 - c_p) * sfp, rel=1e-14)
