"""Tables in (``jcsol.features``): MurmurHash3 signed hashing, online scaling, sources, runs, state, bad input."""

import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import jcsol
from jcsol.features import TableEncoder, hash_features, load_table

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

MERCHANTS = [f"m{i}" for i in range(40)] + ["café", "日本", ""]
COUNTRIES = ["US", "FR", "DE", "GB", "IN", "BR"]


def fraud_records(n: int, seed: int = 0, missing: bool = True) -> list[dict]:
    """Records with numeric and categorical columns, some values missing, an int-valued categorical column."""
    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        rec = {
            "amount": float(rng.lognormal(3, 1)),
            "age": int(rng.integers(18, 90)),
            "hour": float(rng.integers(0, 24)),
            "merchant": MERCHANTS[rng.integers(len(MERCHANTS))],
            "country": COUNTRIES[rng.integers(len(COUNTRIES))],
            "device": int(rng.integers(0, 7)),
            "fraud": int(rng.random() < 0.1),
        }
        if missing and i % 7 == 3:
            rec["amount"] = None
        if missing and i % 11 == 5:
            rec["country"] = None
        if missing and i % 13 == 2:
            rec["device"] = None
        records.append(rec)
    return records


NUMERIC = ["amount", "age", "hour"]
CATEGORICAL = ["merchant", "country", "device"]


def reference_rows(records, numeric, categorical, bits, seed=0, normalize=True):
    """Independent float64 loop: Welford statistics per numeric column, one feature per column summed into a
    dense row, signed hash taken from scikit-learn's MurmurHash3."""
    from sklearn.utils import murmurhash3_32

    def slot(name):
        h = murmurhash3_32(name, seed=seed, positive=True)
        return h % (1 << bits), (-1.0 if h >= 2**31 else 1.0)

    count = {c: 0 for c in numeric}
    mean = {c: 0.0 for c in numeric}
    m2 = {c: 0.0 for c in numeric}
    rows = np.zeros((len(records), 1 << bits))
    for t, rec in enumerate(records):
        for c in numeric:
            x = rec.get(c)
            if x is None or x != x:
                continue
            count[c] += 1
            delta = x - mean[c]
            mean[c] += delta / count[c]
            m2[c] += delta * (x - mean[c])
            std = np.sqrt(m2[c] / count[c])
            z = (x - mean[c]) / std if std > 0 else 0.0
            j, s = slot(c)
            rows[t, j] += s * z
        for c in categorical:
            v = rec.get(c)
            if v is None:
                continue
            j, s = slot(f"{c}={v}")
            rows[t, j] += s
        if normalize:
            norm = np.linalg.norm(rows[t])
            if norm > 0:
                rows[t] /= norm
    return rows


# -- hashing ------------------------------------------------------------------------------------------------------


def test_murmurhash3_published_vectors():
    """MurmurHash3 x86 32-bit test vectors (SMHasher's reference implementation)."""
    for key, seed, expected in [
        ("", 0, 0),
        ("", 1, 0x514E28B7),
        ("hello", 0, 0x248BFA47),
        ("Hello, world!", 1234, 0xFAF6CDB3),
        ("The quick brown fox jumps over the lazy dog", 0x9747B28C, 0x2FA826CD),
    ]:
        index, sign = hash_features([key], bits=30, seed=seed)
        assert index[0] == expected % 2**30, key
        assert sign[0] == (-1.0 if expected >= 2**31 else 1.0), key


def test_hash_equals_scikit_learn_murmurhash3():
    from sklearn.utils import murmurhash3_32

    keys = [f"col{i}=v{j}" for i in range(5) for j in range(200)] + ["merchant=café", "country=日本", "x="]
    for seed in (0, 7, 2**32 - 1):
        for bits in (1, 5, 18, 30):
            index, sign = hash_features(keys, bits, seed)
            h = np.array([murmurhash3_32(k, seed=seed, positive=True) for k in keys], np.int64)
            signed = np.array([murmurhash3_32(k, seed=seed) for k in keys], np.int64)
            np.testing.assert_array_equal(index, h % (1 << bits))  # Vowpal Wabbit's mask of the low bits
            np.testing.assert_array_equal(sign, np.where(signed < 0, -1.0, 1.0))  # scikit-learn's sign
    assert (sign < 0).any()
    assert (sign > 0).any()


@pytest.mark.parametrize("bits", [18, 30])
def test_slots_equal_vowpal_wabbits_hash(bits):
    """Vowpal Wabbit's slot of ``column=value`` (and of a numeric column's name) in the default namespace:
    the same MurmurHash3, masked to ``bits``. (VW keeps no sign: values are compared in absolute value.)"""
    pyvw = pytest.importorskip("vowpalwabbit.pyvw")
    records = fraud_records(100, missing=False)
    X = TableEncoder(["amount"], CATEGORICAL, bits=bits, normalize=False).fit_transform(records)
    ws = pyvw.Workspace(quiet=True, b=bits, noconstant=True)
    try:
        for t, rec in enumerate(records):
            ex = ws.example("| amount:1 " + " ".join(f"{c}={rec[c]}" for c in CATEGORICAL))
            vw_slots = sorted(i for i, _ in ex.iter_features())
            ws.finish_example(ex)
            assert sorted(X.indices[t].tolist()) == vw_slots, rec
            np.testing.assert_array_equal(np.abs(X.values[t][1:]), 1.0)  # the categorical entries
        namespace = ws.hash_space(" ")
        keys = [f"merchant={m}" for m in MERCHANTS]
        np.testing.assert_array_equal(hash_features(keys, bits)[0], [ws.hash_feature(k, namespace) for k in keys])
    finally:
        ws.finish()


def test_categorical_rows_equal_feature_hasher_where_conventions_agree():
    """scikit-learn's FeatureHasher puts h at |h| mod n with sign(h); for h >= 0 that is our slot and sign, so on
    values whose hashes are non-negative the rows (collisions summed) must be FeatureHasher's."""
    from sklearn.feature_extraction import FeatureHasher
    from sklearn.utils import murmurhash3_32

    bits = 5
    rng = np.random.default_rng(3)
    values = [
        v
        for v in (f"v{i}" for i in range(400))
        if all(murmurhash3_32(f"{c}={v}", seed=0) >= 0 for c in ("a", "b", "c"))
    ]
    records = [{c: values[rng.integers(len(values))] for c in ("a", "b", "c")} for _ in range(300)]
    X = TableEncoder(categorical=["a", "b", "c"], bits=bits, normalize=False).fit_transform(records)
    hasher = FeatureHasher(n_features=2**bits, input_type="string", alternate_sign=True)
    expected = hasher.transform([[f"{c}={r[c]}" for c in ("a", "b", "c")] for r in records]).toarray()
    np.testing.assert_array_equal(X.todense(), expected)
    assert ((expected != 0).sum(axis=1) < 3).any(), "collisions expected at 32 slots"


def test_hashing_is_stable_across_processes():
    """Another interpreter with another PYTHONHASHSEED gives the same slots and values."""
    records = fraud_records(50)
    X = TableEncoder(NUMERIC, CATEGORICAL, bits=20, seed=11).fit_transform(records)
    script = (
        "import sys, json, numpy as np; sys.path.insert(0, sys.argv[1]); "
        "from test_features import fraud_records, NUMERIC, CATEGORICAL; from jcsol import TableEncoder; "
        "X = TableEncoder(NUMERIC, CATEGORICAL, bits=20, seed=11).fit_transform(fraud_records(50)); "
        "print(json.dumps([X.indices.tolist(), X.values.tolist()]))"
    )
    for hash_seed in ("1", "12345"):
        done = subprocess.run(
            [sys.executable, "-c", script, os.path.dirname(__file__)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            check=True,
        )
        indices, values = json.loads(done.stdout)
        np.testing.assert_array_equal(np.array(indices), X.indices)
        np.testing.assert_array_equal(np.array(values, np.float32), X.values)


# -- rows ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("bits", "normalize"), [(12, False), (12, True), (3, True), (2, False)])
def test_rows_equal_the_float64_reference_loop(bits, normalize):
    """Signed hashing, collisions summed (bits 2 and 3 force them), Welford scaling row by row, L2 rows."""
    records = fraud_records(400)
    enc = TableEncoder(NUMERIC, CATEGORICAL, bits=bits, normalize=normalize, dtype=np.float64)
    X = enc.fit_transform(records)
    expected = reference_rows(records, NUMERIC, CATEGORICAL, bits, normalize=normalize)
    np.testing.assert_allclose(X.todense(), expected, rtol=1e-9, atol=1e-12)
    assert X.indices.shape == (400, 6)
    assert X.n_features == enc.n_features == 2**bits
    live = X.values != 0
    for row, mask in zip(X.indices, live):  # one entry per slot, as in a dense row
        assert len(set(row[mask].tolist())) == mask.sum()
    assert (X.values < 0).any()
    assert (X.values > 0).any()
    if bits <= 3:
        assert (live.sum(axis=1) < 6).mean() > 0.5  # collisions merged entries


def test_scaling_has_no_look_ahead_and_batches_give_the_same_bits():
    records = fraud_records(300)
    whole = TableEncoder(NUMERIC, CATEGORICAL, bits=16).fit_transform(records)
    changed = [dict(r) for r in records]
    for r in changed[150:]:
        r["amount"], r["age"] = 1e6, -5  # later rows change: earlier rows must not
    head = TableEncoder(NUMERIC, CATEGORICAL, bits=16).fit_transform(changed)
    np.testing.assert_array_equal(head.values[:150], whole.values[:150])
    assert not np.array_equal(head.values[150:], whole.values[150:])
    enc = TableEncoder(NUMERIC, CATEGORICAL, bits=16)
    parts = [enc.fit_transform(records[a:b]) for a, b in [(0, 1), (1, 57), (57, 58), (58, 300)]]
    np.testing.assert_array_equal(np.concatenate([p.values for p in parts]), whole.values)
    np.testing.assert_array_equal(np.concatenate([p.indices for p in parts]), whole.indices)


def test_transform_uses_the_statistics_so_far_and_keeps_them():
    records = fraud_records(200)
    enc = TableEncoder(NUMERIC, CATEGORICAL, bits=16, normalize=False, dtype=np.float64)
    enc.fit_transform(records[:100])
    before = enc.state_dict()
    out = enc.transform(records[100:])
    for key, value in enc.state_dict().items():
        np.testing.assert_array_equal(value, before[key])
    amounts = np.array([np.nan if r["amount"] is None else r["amount"] for r in records[:100]])
    mean, std = np.nanmean(amounts), np.nanstd(amounts)
    np.testing.assert_allclose(enc.mean[0], mean, rtol=1e-12)
    np.testing.assert_allclose(enc.var[0], std**2, rtol=1e-9)
    slot, sign = hash_features(["amount"], 16)
    col = out.todense()[:, slot[0]] * sign[0]
    given = np.array([r["amount"] is not None for r in records[100:]])
    z = np.array([(r["amount"] - mean) / std for r in records[100:] if r["amount"] is not None])
    np.testing.assert_allclose(col[given], z, rtol=1e-9)
    assert (col[~given] == 0).all()  # a missing numeric value contributes nothing


def test_pandas_arrow_and_records_give_identical_rows():
    records = fraud_records(300)
    frame = pd.DataFrame.from_records(records)  # device becomes float (NaN): still hashed as "3"
    assert frame["device"].dtype == np.float64
    table = pa.Table.from_pylist(records)
    chunked = pa.concat_tables([pa.Table.from_pylist(records[:70]), pa.Table.from_pylist(records[70:])])
    typed = frame.astype({"merchant": "category", "country": "category", "device": "Int64"})
    dictionary = pa.Table.from_pandas(typed, preserve_index=False)  # Arrow dictionary columns
    assert pa.types.is_dictionary(dictionary.schema.field("merchant").type)
    rows = [
        TableEncoder(NUMERIC, CATEGORICAL, bits=18, label="fraud").fit_transform(t)
        for t in (records, frame, table, chunked, typed, dictionary)
    ]
    for other in rows[1:]:
        np.testing.assert_array_equal(other.indices, rows[0].indices)
        np.testing.assert_array_equal(other.values, rows[0].values)
    inferred = [TableEncoder(label="fraud") for _ in range(3)]
    for enc, t in zip(inferred, (records, frame, pa.Table.from_pandas(frame))):
        enc.fit_transform(t)
    assert {(e.numeric, e.categorical) for e in inferred[1:]} == {
        (("amount", "age", "hour", "device"), ("merchant", "country"))
    }
    assert inferred[0].numeric == ("amount", "age", "hour", "device")  # ints and None: numeric too


def test_inference_leaves_out_the_label_and_takes_booleans_as_categories():
    frame = pd.DataFrame({"amount": [1.0, 2.0], "flag": [True, False], "city": ["a", "b"], "y": [1, -1]})
    enc = TableEncoder(label="y")
    enc.transform(frame)  # transform infers but fixes nothing
    assert enc.numeric == ()
    assert enc.categorical == ()
    enc.fit_transform(frame)
    assert enc.numeric == ("amount",)
    assert enc.categorical == ("flag", "city")


@pytest.mark.parametrize("name", ["COG-I", "ACOG-II-diag"])
def test_encoded_table_runs_like_its_dense_rows(name):
    """O(nnz) steps on the encoded table equal the dense run (collisions at 2**6 slots included)."""
    records = fraud_records(600, seed=4)
    enc = TableEncoder(NUMERIC, CATEGORICAL, bits=6, label="fraud")
    X, y = enc.fit_transform(records), enc.labels(records)
    learner = jcsol.by_name(name)
    assert learner.sparse_steps
    sparse = jcsol.run(learner, X, y, perms=3, key=5)
    dense = jcsol.run(learner, X.todense(), y, perms=3, key=5)
    np.testing.assert_array_equal(sparse.counts, dense.counts)
    for a, b in zip(jax.tree.leaves(sparse.states), jax.tree.leaves(dense.states)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    assert sparse.sum.mean() > 0.5


def test_real_data_as_a_table():
    """german's 24 columns as a data frame, scaled online and hashed, learnt by COG-I like the LIBSVM rows."""
    X, y = jcsol.datasets.load("german", normalize=False)
    frame = pd.DataFrame(X.astype(np.float64), columns=[f"f{i}" for i in range(X.shape[1])]).assign(label=y)
    Xt, yt, enc = load_table(frame, "label", bits=12)
    assert enc.numeric == tuple(f"f{i}" for i in range(24))
    assert enc.categorical == ()
    np.testing.assert_array_equal(yt, y)
    np.testing.assert_allclose(enc.mean, X.mean(axis=0), rtol=1e-5)
    res = jcsol.run(jcsol.COG(eta=jcsol.decades(1e-2, 1e2)), Xt, yt, perms=4)
    ref = jcsol.run(jcsol.COG(eta=jcsol.decades(1e-2, 1e2)), *jcsol.datasets.load("german"), perms=4)
    assert res.sum.mean(axis=-1).max() > max(0.65, ref.sum.mean(axis=-1).max())  # 0.71 against 0.55


# -- labels, files, state -----------------------------------------------------------------------------------------


def test_labels_follow_the_libsvm_rule(tmp_path):
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 0], "s": ["no", "yes", "no", "maybe"]})
    np.testing.assert_array_equal(TableEncoder(["x"], label="y").labels(frame), [-1, 1, -1, -1])
    np.testing.assert_array_equal(TableEncoder(["x"], label="s").labels(frame, positive="yes"), [-1, 1, -1, -1])
    np.testing.assert_array_equal(
        TableEncoder(["x"], label="s").labels(frame, positive=["yes", "maybe"]), [-1, 1, -1, 1]
    )
    np.testing.assert_array_equal(
        TableEncoder(categorical=["s"], label="x").labels(frame, positive="3"), [-1, -1, 1, -1]
    )
    with pytest.raises(ValueError, match="holds text .* pass positive=<value>"):
        TableEncoder(["x"], label="s").labels(frame)
    with pytest.raises(ValueError, match=r"positive=\['nope'\]: not in the label column 's'"):
        TableEncoder(["x"], label="s").labels(frame, positive="nope")
    with pytest.raises(ValueError, match="labels .* are not binary"):
        TableEncoder(categorical=["s"], label="x").labels(frame)
    with pytest.raises(ValueError, match="missing value"):
        TableEncoder(["x"], label="y").labels(frame.assign(y=[1, None, 0, 0]))
    with pytest.raises(ValueError, match="1 missing value.*row 2"):
        TableEncoder(["x"], label="s").labels(frame.assign(s=["no", "yes", None, "no"]), positive="yes")
    path = tmp_path / "t.csv"
    frame.assign(y=[0, 1, 1, 0]).to_csv(path, index=False)  # y no copy of the label s: a copy is refused
    X, y, enc = load_table(path, "s", positive="yes", categorical=["y"], numeric=["x"], bits=8)
    np.testing.assert_array_equal(y, [-1, 1, -1, -1])
    assert X.shape == (4, 256)
    assert enc.label == "s"


def test_state_round_trip_continues_bit_identically(tmp_path):
    records = fraud_records(300)
    enc = TableEncoder(label="fraud", bits=17, seed=3, normalize=False, dtype=np.float64)
    enc.fit_transform(records[:120])
    np.savez(tmp_path / "enc.npz", **enc.state_dict())
    with np.load(tmp_path / "enc.npz", allow_pickle=False) as f:
        loaded = TableEncoder.from_state_dict(dict(f))
    assert repr(loaded) == repr(enc)
    a, b = enc.fit_transform(records[120:]), loaded.fit_transform(records[120:])
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.values, b.values)
    assert b.values.dtype == np.float64
    fresh = TableEncoder.from_state_dict(TableEncoder(label="fraud").state_dict())  # columns still to infer
    fresh.fit_transform(records)
    assert fresh.numeric == enc.numeric
    state = enc.state_dict()
    with pytest.raises(ValueError, match="format version 99; this jcsol reads version 1"):
        TableEncoder.from_state_dict({**state, "version": np.array(99)})
    with pytest.raises(ValueError, match="kind is 'jcsol.Live'"):
        TableEncoder.from_state_dict({**state, "kind": np.array("jcsol.Live")})
    with pytest.raises(ValueError, match=r"keys \['count'\] are missing"):
        TableEncoder.from_state_dict({k: v for k, v in state.items() if k != "count"})


# -- bad input ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(bits=0), ValueError, r"bits must be an integer in \[1, 30\]"),
        (dict(bits=31), ValueError, r"bits must be an integer in \[1, 30\]"),
        (dict(bits=2.5), ValueError, "bits must be an integer"),
        (dict(seed=-1), ValueError, "seed must be"),
        (dict(numeric="amount"), TypeError, "a list of column names"),
        (dict(numeric=["a"], categorical=["a"]), ValueError, "both numeric and categorical"),
        (dict(numeric=["a", "a"]), ValueError, "more than once"),
        (dict(numeric=["a"], label="a"), ValueError, "label column 'a' cannot also be a feature"),
    ],
)
def test_bad_configuration_is_refused(kwargs, error, message):
    with pytest.raises(error, match=message):
        TableEncoder(**kwargs)


def test_bad_tables_are_refused_before_any_update():
    records = fraud_records(20)
    enc = TableEncoder(NUMERIC, CATEGORICAL, label="fraud")
    cases = [
        ([{k: v for k, v in r.items() if k != "age"} for r in records], ValueError, r"column\(s\) \['age'\] not in"),
        (
            [dict(r, age="old") if i == 4 else r for i, r in enumerate(records)],
            ValueError,
            "numeric column 'age' holds the non-numeric value 'old' at row 4",
        ),
        (pd.DataFrame.from_records(records).assign(hour=["x"] * 20), ValueError, "non-numeric value 'x' at row 0"),
        (
            pa.Table.from_pylist(records).set_column(1, "age", pa.array(["1"] * 20)),
            ValueError,
            "numeric column 'age' holds the non-numeric value '1' at row 0",
        ),
        (
            [dict(r, amount=float("inf")) if i == 9 else r for i, r in enumerate(records)],
            ValueError,
            "'amount' has 1 infinite value.*row 9",
        ),
        (records + [["not", "a", "dict"]], TypeError, "records must be dicts"),
        ({"amount": [1.0]}, TypeError, "a pandas DataFrame, a pyarrow Table or a list of dict records"),
        ([dict(r, merchant=["a"]) for r in records], TypeError, r"column 'merchant' holds \['a'\] at row 0"),
        (
            [dict(r, amount=1e200) if i == 7 else r for i, r in enumerate(records)],
            ValueError,
            r"numeric column 'amount' has a value too large to encode at row 7 \(1e\+200\)",
        ),
        (
            pd.DataFrame.from_records(records).assign(amount=np.arange(20) * 1j),
            ValueError,
            "numeric column 'amount' holds complex numbers",
        ),
    ]
    for table, error, message in cases:
        with pytest.raises(error, match=message):
            enc.fit_transform(table)
        assert (enc.n_seen == 0).all()
    fitted = TableEncoder(NUMERIC, CATEGORICAL, label="fraud")
    fitted.fit_transform(records)
    before = fitted.state_dict()
    huge = [dict(r, age=1e160) if i == 3 else r for i, r in enumerate(records)]
    with pytest.raises(ValueError, match=r"'age' has a value too large to encode at row 3 \(1e\+160\)"):
        fitted.fit_transform(huge)  # its square overflows the running statistics
    assert all(np.array_equal(v, before[k]) for k, v in fitted.state_dict().items())
    row = fitted.transform(huge).values[3]  # scaled by the statistics so far: finite, normalised without overflow
    assert abs(row[fitted.numeric.index("age")]) == pytest.approx(1.0)
    assert np.linalg.norm(row) == pytest.approx(1.0)
    raw = TableEncoder(NUMERIC, CATEGORICAL, label="fraud", normalize=False)
    raw.fit_transform(records)
    with pytest.raises(ValueError, match=r"'age' has a value too large to encode at row 3 \(1e\+45\)"):
        raw.transform([dict(r, age=1e45) if i == 3 else r for i, r in enumerate(records)])  # beyond float32
    with pytest.raises(ValueError, match="label column 'fraud' not in the table"):
        enc.labels([{k: v for k, v in r.items() if k != "fraud"} for r in records])
    with pytest.raises(ValueError, match="label column 'fraud' not in the table"):
        load_table([{k: v for k, v in r.items() if k != "fraud"} for r in records], "fraud")
    with pytest.raises(ValueError, match="no label column"):
        TableEncoder(NUMERIC).labels(records)
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_table("/no/such/table.csv", "fraud")
