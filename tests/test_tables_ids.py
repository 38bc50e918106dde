"""Tables with ids and datetimes (refused unless dropped or declared; datetimes as hour and weekday), and the
offset term (``bias=True``, ``jcsol.datasets.add_bias``) of tables, LIBSVM files and the command line."""

import datetime as dt

import numpy as np
import pytest
from conftest import run_cli

import jcsol
from jcsol.datasets import add_bias, l2_normalize
from jcsol.features import FORMAT_VERSION, ID_MIN_ROWS, TableEncoder, load_table

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

N = 60


def payments(n: int = N, seed: int = 0) -> "pd.DataFrame":
    """Payments with an id of text, an id of integers, a timestamp, an amount, a country and a label."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "payment_id": [f"p{i:05d}" for i in range(n)],
            "user_id": rng.permutation(10 * n)[:n],
            "ts": pd.date_range("2024-03-01 05:30", periods=n, freq="7h"),
            "amount": rng.lognormal(3, 1, n),
            "country": rng.choice(["US", "FR", "BR"], n),
            "fraud": rng.integers(0, 2, n),
        }
    )


def same_rows(a, b) -> None:
    assert a.n_features == b.n_features
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.values, b.values)


# -- ids and datetimes are never encoded without being told -----------------------------------------------------


@pytest.mark.parametrize("kind", ["pandas", "arrow", "records"])
def test_ids_and_datetimes_are_refused_naming_the_ways_out(kind):
    frame = payments()
    table = {
        "pandas": frame,
        "arrow": pa.Table.from_pandas(frame, preserve_index=False),
        "records": frame.assign(ts=[t.to_pydatetime() for t in frame["ts"]]).to_dict("records"),
    }[kind]
    enc = TableEncoder(label="fraud")
    before = enc.state_dict()
    with pytest.raises(ValueError, match="looks like an id") as refused:
        enc.fit_transform(table)
    message = str(refused.value)
    for text in (
        f"'payment_id' looks like an id (its {N} values are all distinct)",
        f"'user_id' looks like an id (its {N} values are all distinct)",
        "'ts' holds datetimes",
        "drop=['payment_id', 'user_id', 'ts'] (--drop payment_id,user_id,ts)",
        "datetime=['ts'] (--datetime ts)",
        "numeric=[...], categorical=[...]",
    ):
        assert text in message, message
    assert "amount" not in message
    assert "country" not in message
    after = enc.state_dict()
    assert after.keys() == before.keys()
    assert all(np.array_equal(after[k], before[k]) for k in before)
    with pytest.raises(ValueError, match="looks like an id"):
        enc.transform(table)  # inferring without fixing refuses alike
    with pytest.raises(ValueError, match="'ts' holds datetimes"):
        load_table(table, "fraud", drop=["payment_id", "user_id"])


def test_iso_text_is_a_datetime_and_what_is_not_an_id_is_encoded():
    frame = payments()
    text = frame.assign(ts=frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S+01:00"))
    with pytest.raises(ValueError, match=r"'ts' holds datetimes \(ISO 8601 text\)"):
        TableEncoder(label="fraud", drop=["payment_id", "user_id"]).fit_transform(text)
    # an amount of distinct floats, a column with one value repeated or missing, few rows: encoded as inferred
    rows = frame.drop(columns=["ts"]).assign(
        payment_id=[f"p{i}" for i in range(N - 1)] + ["p0"],
        user_id=frame["user_id"].astype("Int64").where(np.arange(N) != 3),
    )
    enc = TableEncoder(label="fraud")
    enc.fit_transform(rows)
    assert enc.columns == {
        "user_id": "numeric",
        "amount": "numeric",
        "payment_id": "categorical",
        "country": "categorical",
    }
    few = payments(ID_MIN_ROWS - 1).drop(columns=["ts"])
    enc = TableEncoder(label="fraud")
    enc.fit_transform(few)
    assert enc.numeric == ("user_id", "amount")
    assert enc.categorical == ("payment_id", "country")
    with pytest.raises(ValueError, match="'payment_id' looks like an id"):
        TableEncoder(label="fraud").fit_transform(payments(ID_MIN_ROWS).drop(columns=["ts"]))


def test_declared_and_dropped_columns_are_taken_as_told():
    frame = payments()
    declared = TableEncoder(["amount", "user_id"], ["country", "payment_id"], datetime=["ts"], bits=12, label="fraud")
    X = declared.fit_transform(frame)
    assert declared.columns == {
        "amount": "numeric",
        "user_id": "numeric",
        "country": "categorical",
        "payment_id": "categorical",
        "ts": "datetime",
    }
    assert X.shape == (N, 2**12)
    assert X.indices.shape[1] == 2 + 2 + 2  # one entry per column, two per datetime
    inferred = TableEncoder(drop=["payment_id", "user_id"], datetime=["ts"], bits=12, label="fraud")
    assert inferred.columns == {"ts": "datetime", "payment_id": "dropped", "user_id": "dropped"}
    Xi = inferred.fit_transform(frame)
    assert inferred.columns == {
        "amount": "numeric",
        "country": "categorical",
        "ts": "datetime",
        "payment_id": "dropped",
        "user_id": "dropped",
    }
    same_rows(Xi, TableEncoder(["amount"], ["country"], datetime=["ts"], bits=12).fit_transform(frame))
    assert "datetime=['ts'], drop=['payment_id', 'user_id'], bias=False" in repr(inferred)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(numeric=["a"], drop=["a"]), r"columns \['a'\] are both numeric and dropped"),
        (dict(categorical=["a"], datetime=["a"]), r"columns \['a'\] are both categorical and datetime"),
        (dict(datetime=["a"], drop=["a"]), r"columns \['a'\] are both datetime and dropped"),
        (dict(datetime=["y"], label="y"), "label column 'y' cannot also be a feature"),
        (dict(drop=["y"], label="y"), "label column 'y' is never a feature: leave it out of drop"),
        (dict(drop="a"), "drop must be a list of column names"),
        (dict(datetime=["a", "a"]), "datetime names columns"),
        (dict(bias=1), "bias must be True or False"),
    ],
)
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=message):
        TableEncoder(**kwargs)


# -- datetime encoding ----------------------------------------------------------------------------------------


def moments(n: int = 50, seed: int = 1) -> list:
    """Naive moments over every hour and weekday, one missing."""
    rng = np.random.default_rng(seed)
    start = dt.datetime(2024, 2, 26, 0, 0)  # a Monday
    out = [start + dt.timedelta(minutes=int(m)) for m in rng.integers(0, 60 * 24 * 21, n)]
    out[7] = None
    return out


def reference(values: list, bits: int = 10):
    """The documented encoding written out: categorical columns 'ts.hour' and 'ts.weekday' holding Python's
    datetime.hour (0 for a date) and datetime.weekday()."""
    hour = [None if v is None else v.hour if isinstance(v, dt.datetime) else 0 for v in values]
    weekday = [None if v is None else v.weekday() for v in values]
    records = [{"ts.hour": h, "ts.weekday": w} for h, w in zip(hour, weekday)]
    return TableEncoder(categorical=["ts.hour", "ts.weekday"], bits=bits).fit_transform(records)


def test_datetimes_are_hour_of_day_and_day_of_week_from_every_kind_of_table():
    values = moments()
    expected = reference(values)
    stamps = pd.Series(pd.to_datetime(values))
    aware = [None if v is None else v.replace(tzinfo=dt.timezone(dt.timedelta(hours=-5))) for v in values]
    tables = {
        "pandas datetime64": pd.DataFrame({"ts": stamps}),
        "pandas tz-aware": pd.DataFrame({"ts": stamps.dt.tz_localize("Asia/Kolkata")}),  # wall time kept
        "pandas object": pd.DataFrame({"ts": pd.Series(values, dtype=object)}),
        "arrow timestamp": pa.table({"ts": pa.array(values, pa.timestamp("us"))}),
        "arrow timestamp tz": pa.table({"ts": pa.array(stamps.dt.tz_localize("America/New_York"))}),
        "records datetime": [{"ts": v} for v in values],
        "records aware": [{"ts": v} for v in aware],
        "records Timestamp": [{"ts": None if v is None else pd.Timestamp(v)} for v in values],
        "records datetime64": [{"ts": None if v is None else np.datetime64(v, "ns")} for v in values],
        "records ISO text": [{"ts": None if v is None else v.isoformat()} for v in values],
        "records ISO text with offset": [{"ts": None if v is None else v.isoformat() + "+09:00"} for v in values],
        "records ISO text, space": [{"ts": None if v is None else v.isoformat(sep=" ")} for v in values],
    }
    for name, table in tables.items():
        got = TableEncoder(datetime=["ts"], bits=10).fit_transform(table)
        assert np.array_equal(got.indices, expected.indices), name
        assert np.array_equal(got.values, expected.values), name
    days = [None if v is None else v.date() for v in values]
    expected = reference(days)
    for name, table in {
        "arrow date32": pa.table({"ts": pa.array(days, pa.date32())}),
        "records date": [{"ts": d} for d in days],
        "records ISO date": [{"ts": None if d is None else d.isoformat()} for d in days],
    }.items():
        got = TableEncoder(datetime=["ts"], bits=10).fit_transform(table)
        assert np.array_equal(got.indices, expected.indices), name
        assert np.array_equal(got.values, expected.values), name


def test_a_value_that_is_no_datetime_is_refused_before_any_update():
    values = moments(30)
    enc = TableEncoder(["x"], datetime=["ts"])
    bad = [{"x": float(i), "ts": "yesterday" if i == 4 else v} for i, v in enumerate(values)]
    with pytest.raises(ValueError, match="datetime column 'ts' holds 'yesterday' at row 4, which is not a datetime"):
        enc.fit_transform(bad)
    with pytest.raises(ValueError, match="holds 1700000000 at row 0"):
        enc.fit_transform([{"x": 1.0, "ts": 1700000000}])
    with pytest.raises(ValueError, match=r"column\(s\) \['ts'\] not in the table"):
        enc.fit_transform([{"x": 1.0}])
    assert (enc.n_seen == 0).all()


# -- state ------------------------------------------------------------------------------------------------------


def test_state_round_trip_keeps_the_new_settings(tmp_path):
    frame = payments(200)
    enc = TableEncoder(drop=["payment_id", "user_id"], datetime=["ts"], bias=True, bits=11, label="fraud")
    enc.fit_transform(frame[:80])
    state = enc.state_dict()
    assert int(state["version"]) == FORMAT_VERSION == 3
    np.savez(tmp_path / "enc.npz", **state)
    with np.load(tmp_path / "enc.npz", allow_pickle=False) as f:
        loaded = TableEncoder.from_state_dict(dict(f))
    assert repr(loaded) == repr(enc)
    assert loaded.columns == enc.columns
    assert loaded.bias
    same_rows(loaded.fit_transform(frame[80:]), enc.fit_transform(frame[80:]))
    # a state written before version 2: no datetime, drop or bias
    old = {k: v for k, v in TableEncoder(["amount"], ["country"], bits=11).state_dict().items()}
    old = {k: v for k, v in old.items() if k not in ("datetime", "drop", "bias", "positive")} | {"version": np.array(1)}
    legacy = TableEncoder.from_state_dict(old)
    assert legacy.columns == {"amount": "numeric", "country": "categorical"}
    assert not legacy.bias
    with pytest.raises(ValueError, match=r"version 3: keys \['bias'\] are missing"):
        TableEncoder.from_state_dict({k: v for k, v in state.items() if k != "bias"})


def test_a_refused_table_leaves_an_inferring_encoder_unfixed():
    """The columns inferred from a table are kept only once its rows are encoded."""
    frame = payments().drop(columns=["payment_id", "user_id", "ts"])
    enc = TableEncoder(label="fraud")
    with pytest.raises(ValueError, match="'amount' has 1 infinite value"):
        enc.fit_transform(frame.assign(amount=np.where(np.arange(N) == 5, np.inf, frame["amount"])))
    assert enc.columns == {}
    assert (enc.n_seen == 0).all()
    enc.fit_transform(frame)
    assert enc.columns == {"amount": "numeric", "country": "categorical"}
    assert (enc.n_seen == N).all()


# -- the offset term ---------------------------------------------------------------------------------------------


def test_add_bias_appends_a_constant_column():
    X = np.arange(12, dtype=np.float32).reshape(4, 3)
    B = add_bias(X)
    assert B.dtype == np.float32
    np.testing.assert_array_equal(B, np.hstack([X, np.ones((4, 1), np.float32)]))
    assert add_bias(np.ones((2, 2), np.int64)).dtype == np.float64
    rows = jcsol.SparseRows(np.array([[0, 2], [1, 0]], np.int32), np.array([[1.0, 2.0], [3.0, 0.0]]), 3)
    Bs = add_bias(rows)
    assert Bs.n_features == 4
    assert Bs.indices.dtype == np.int32
    np.testing.assert_array_equal(Bs.todense(), add_bias(rows.todense()))
    scipy_sparse = pytest.importorskip("scipy.sparse")
    np.testing.assert_array_equal(add_bias(scipy_sparse.csr_matrix(rows.todense())).todense(), Bs.todense())
    with pytest.raises(TypeError, match=r"add_bias takes a dense \(T, d\) array"):
        add_bias(np.ones(3))
    with pytest.raises(TypeError, match=r"add_bias takes a dense \(T, d\) array"):
        add_bias(np.array([["a"]]))


def test_load_with_bias_appends_it_after_the_normalisation():
    X, y = jcsol.datasets.load("german")
    Xb, yb = jcsol.datasets.load("german", bias=True)
    np.testing.assert_array_equal(yb, y)
    np.testing.assert_array_equal(Xb, np.hstack([X, np.ones((len(X), 1), X.dtype)]))
    np.testing.assert_allclose(np.linalg.norm(Xb, axis=1), np.sqrt(2.0), rtol=1e-6)  # unit rows beside the 1
    Xs, _ = jcsol.datasets.load("german", bias=True, sparse=True)
    assert Xs.n_features == 25
    np.testing.assert_array_equal(Xs.todense(), Xb)
    with pytest.raises(TypeError, match="bias must be True or False"):
        jcsol.datasets.load("german", bias="yes")


def test_table_bias_is_slot_2_to_the_bits_after_the_normalisation():
    frame = payments().drop(columns=["payment_id", "user_id"])
    plain = TableEncoder(datetime=["ts"], bits=8, label="fraud").fit_transform(frame)
    enc = TableEncoder(datetime=["ts"], bits=8, bias=True, label="fraud")
    X = enc.fit_transform(frame)
    assert enc.n_features == X.n_features == 2**8 + 1
    np.testing.assert_array_equal(X.indices[:, :-1], plain.indices)
    np.testing.assert_array_equal(X.values[:, :-1], plain.values)
    assert (X.indices[:, -1] == 2**8).all()
    assert (X.values[:, -1] == 1).all()
    empty = enc.transform([{"amount": None, "country": None, "ts": None}])  # every value missing
    np.testing.assert_array_equal(empty.todense()[0], np.eye(2**8 + 1)[-1])


def w8a_like(n: int = 5000, d: int = 300, seed: int = 0):
    """A stream shaped like w8a (49,749 × 300 binary features, about 3% positive, 8.4% of its rows empty, their
    labels at the base rate): sparse binary rows labelled by a linear rule, L2-normalised."""
    rng = np.random.default_rng(seed)
    nnz = np.where(rng.random(n) < 0.084, 0, rng.poisson(11, n).clip(1, 40))
    popularity = 1.0 / np.arange(1, d + 1) ** 0.7
    keys = rng.random((n, d)) ** (1.0 / popularity)  # weighted sampling without replacement: the largest keys
    top = np.argsort(-keys, axis=1)[:, : nnz.max()]
    present = np.arange(nnz.max()) < nnz[:, None]
    indices = np.where(present, np.sort(np.where(present, top, d), axis=1), 0).astype(np.int32)
    X = jcsol.SparseRows(indices, present.astype(np.float64), d)
    score = X.todense() @ rng.standard_normal(d)
    empty = nnz == 0
    y = np.where(score > np.quantile(score[~empty], 0.97), 1, -1).astype(np.int8)
    y[empty] = np.where(rng.random(empty.sum()) < 0.03, 1, -1)
    return l2_normalize(X), y, empty


def test_bias_removes_the_false_alarms_of_empty_rows():
    """Without an offset every empty row scores exactly 0 and is flagged (+1); with one, COG-I learns a negative
    offset and the empty negatives stop being false alarms."""
    X, y, empty = w8a_like(3000)
    with_bias = add_bias(X)
    without = with_bias._replace(values=np.where(with_bias.indices == X.n_features, 0.0, with_bias.values))
    alarms = {}
    for bias, rows in ((False, without), (True, with_bias)):  # one shape: one compiled run for both
        res = jcsol.run(
            jcsol.COG(eta=jcsol.decades(1e-2, 1e2), loss="I"),
            rows,
            y,
            perms=np.arange(len(y))[None],
            record_scores=True,
        )
        scores = res.scores[:, 0]
        if not bias:
            assert (scores[:, empty] == 0).all()
        alarms[bias] = ((scores >= 0) & (y < 0) & empty).sum(axis=-1)
    n_empty_negatives = int((empty & (y < 0)).sum())
    assert n_empty_negatives > 200
    assert (alarms[False] == n_empty_negatives).all()
    assert (alarms[True] <= 0.05 * n_empty_negatives).all(), alarms[True]


# -- the command line --------------------------------------------------------------------------------------------


def test_cli_prints_the_columns_and_refuses_ids_and_datetimes(tmp_path, capsys):
    path = tmp_path / "pay.csv"
    payments().assign(fraud=lambda f: np.where(f["fraud"] > 0, "yes", "no")).to_csv(path, index=False)
    base = ["run", "--data", str(path), "--label", "fraud", "--positive", "yes", "--learner", "COG-I"]
    base += ["--perms", "1", "--grid", "eta=1", "--bits", "8"]
    rc, out, err = run_cli(base, capsys)
    assert rc == 2
    assert err.count("\n") == 1
    assert "--drop payment_id,user_id,ts" in err
    assert "--datetime ts" in err
    assert out == ""
    rc, out, err = run_cli([*base, "--drop", "payment_id,user_id", "--datetime", "ts", "--bias"], capsys)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == (
        "columns: amount numeric, country categorical, ts datetime (hour of day, day of the week), "
        "payment_id dropped, user_id dropped; label fraud; slot 256 a constant 1 (--bias)"
    )
    assert f"{N} examples × 257 features" in lines[1]
    rc, out, err = run_cli(["run", "--data", "german", "--drop", "a"], capsys)
    assert rc == 2
    assert "--drop: only for a table" in err
