"""No label among the features: a table still holding its label column, given with its labels, is refused.

The frames are built so that the leak is known by construction: a column ``fraud`` written from the labels
themselves (0/1, ±1, booleans, "yes"/"no", 1/2), a copy of it under another name, and columns that only look
alike (constant over one class, the labels but for one row, the labels with a missing value).
"""

import jax
import numpy as np
import pytest

import jcsol
from jcsol.features import LABEL_MIN_ROWS, TableEncoder, load_table

pd = pytest.importorskip("pandas")

N = 120
LEARNER = jcsol.COG(eta=np.array([0.1, 1.0]))


def payments(n: int = N, seed: int = 0):
    """Payments with an id, a timestamp, two features and a label column ``fraud`` (0/1: every fourth payment),
    and their ±1 labels."""
    rng = np.random.default_rng(seed)
    fraud = (np.arange(n) % 4 == 1).astype(int)
    frame = pd.DataFrame(
        {
            "payment_id": [f"p{i:05d}" for i in range(n)],
            "ts": pd.date_range("2024-03-01", periods=n, freq="37min"),
            "amount": rng.lognormal(3, 1, n).round(2),
            "country": rng.choice(["fr", "de", "us"], n),
            "fraud": fraud,
        }
    )
    return frame, np.where(fraud == 1, 1, -1).astype(np.int8)


def encoder(**kwargs) -> TableEncoder:
    return TableEncoder(drop=["payment_id"], datetime=["ts"], bits=10, **kwargs)


def same_state(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a)


def label_as(kind: str, y: np.ndarray):
    """The labels written as a label column of ``kind``."""
    positive = y > 0
    return {
        "0/1": positive.astype(int),
        "±1": y.astype(int),
        "bool": positive,
        "yes/no": np.where(positive, "yes", "no"),
        "1/2": np.where(positive, 2, 1),
        "float 0/1": positive.astype(float),
        "category": pd.Categorical(np.where(positive, "fraud", "ok")),
    }[kind]


KINDS = ["0/1", "±1", "bool", "yes/no", "1/2", "float 0/1", "category"]


# -- the encoder ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_an_unnamed_label_column_is_refused_naming_it_and_the_ways_out(kind):
    frame, y = payments()
    frame = frame.assign(fraud=label_as(kind, y))
    enc = encoder()
    before = enc.state_dict()
    with pytest.raises(ValueError, match="'fraud' is .* on every positive row") as caught:
        enc.fit_transform(frame, labels=y)
    message = str(caught.value)
    for way in ("label='fraud'", "--label fraud", "drop=['fraud']", "--drop fraud"):
        assert way in message, message
    assert same_state(enc.state_dict(), before)
    assert enc.columns == {"ts": "datetime", "payment_id": "dropped"}  # nothing inferred
    unaware = encoder()  # without the labels the encoder cannot tell: the column is encoded
    unaware.fit_transform(frame)
    assert unaware.columns["fraud"] in ("numeric", "categorical")


@pytest.mark.parametrize("table_kind", ["records", "arrow"])
def test_records_and_arrow_tables_are_refused_alike(table_kind):
    frame, y = payments(4 * LABEL_MIN_ROWS)
    frame = frame.drop(columns=["ts"]).assign(fraud=label_as("yes/no", y))
    if table_kind == "records":
        table = frame.to_dict("records")
    else:
        pa = pytest.importorskip("pyarrow")
        table = pa.Table.from_pandas(frame, preserve_index=False)
    with pytest.raises(ValueError, match="'fraud' is 'yes' on every positive row and 'no' on every negative one"):
        TableEncoder(drop=["payment_id"], bits=10).fit_transform(table, labels=y)


def test_declared_columns_and_fitted_encoders_are_checked_too():
    """A column declared numeric or categorical is refused as an inferred one is; an encoder that has already
    learnt keeps its statistics when a later batch is refused."""
    frame, y = payments()
    enc = TableEncoder(numeric=["amount", "fraud"], categorical=["country"], bits=10)
    enc.fit_transform(frame.iloc[:60].assign(fraud=0.0), labels=y[:60])  # constant here: no label
    before = enc.state_dict()
    with pytest.raises(ValueError, match="'fraud' is 1 on every positive row and 0 on every negative one"):
        enc.fit_transform(frame.iloc[60:], labels=y[60:])
    assert same_state(enc.state_dict(), before)
    cat = TableEncoder(numeric=["amount"], categorical=["country", "fraud"], bits=10)
    with pytest.raises(ValueError, match="'fraud'"):
        cat.fit_transform(frame, labels=y)


def test_several_leaking_columns_are_named_together():
    frame, y = payments()
    frame = frame.assign(is_fraud=label_as("bool", y), outcome=label_as("yes/no", y))
    with pytest.raises(ValueError, match="'is_fraud' is True on every positive row") as caught:
        encoder().fit_transform(frame, labels=y)
    message = str(caught.value)
    assert "drop=['fraud', 'is_fraud', 'outcome']" in message
    assert "--drop fraud,is_fraud,outcome" in message


@pytest.mark.parametrize(
    "column",
    [
        "constant in a batch of one class",
        "the labels but for one row",
        "the labels with a missing value",
        "the labels with a third value",
        "constant over both classes",
    ],
)
def test_columns_that_only_look_like_the_labels_are_encoded(column):
    frame, y = payments()
    positive = y > 0
    if column == "constant in a batch of one class":
        frame, y = frame[~positive], y[~positive]
        values = np.zeros(len(y))
    elif column == "the labels but for one row":
        values = positive.astype(float)
        values[7] = 1 - values[7]
    elif column == "the labels with a missing value":
        values = positive.astype(float)
        values[5] = np.nan
    elif column == "the labels with a third value":
        values = np.where(positive, "yes", "no").astype(object)
        values[9] = "maybe"
    else:
        values = np.ones(len(y))
    enc = encoder()
    rows = enc.fit_transform(frame.assign(fraud=values), labels=y)
    assert rows.shape[0] == len(y)
    assert "fraud" in enc.columns


def test_a_micro_batch_is_too_small_to_tell_a_label_from_chance():
    """Below LABEL_MIN_ROWS rows of a class, a column matching the labels may be chance (in a live stream's batch
    of two events every varying column matches them): encoded; from LABEL_MIN_ROWS rows of each class on, refused."""
    frame, y = payments(4 * LABEL_MIN_ROWS)
    encoder().fit_transform(frame.iloc[:2], labels=y[:2])  # 'fraud', 'amount' and 'country' all match
    positives, negatives = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
    for n_pos, n_neg, refused in (
        (LABEL_MIN_ROWS - 1, len(negatives), False),
        (len(positives), LABEL_MIN_ROWS - 1, False),
        (LABEL_MIN_ROWS, LABEL_MIN_ROWS, True),
    ):
        rows = np.sort(np.concatenate([positives[:n_pos], negatives[:n_neg]]))
        if refused:
            with pytest.raises(ValueError, match="'fraud' is 1 on every positive row"):
                encoder().fit_transform(frame.iloc[rows], labels=y[rows])
        else:
            assert encoder().fit_transform(frame.iloc[rows], labels=y[rows]).shape[0] == len(rows)


def test_a_named_label_is_never_a_feature_and_the_rows_do_not_depend_on_it():
    """With ``label=`` the same frame is encoded, and its rows are those of the frame without the label column."""
    frame, y = payments()
    frame = frame.assign(fraud=label_as("yes/no", y))
    named = encoder(label="fraud", positive="yes")
    np.testing.assert_array_equal(named.labels(frame), y)  # the encoder's own positive
    rows = named.fit_transform(frame, labels=named.labels(frame))
    plain = encoder()
    alone = plain.fit_transform(frame.drop(columns=["fraud"]), labels=y)
    np.testing.assert_array_equal(rows.indices, alone.indices)
    np.testing.assert_array_equal(rows.values, alone.values)
    assert "fraud" not in named.columns


def test_labels_are_checked_against_the_rows():
    frame, y = payments()
    enc = encoder()
    with pytest.raises(ValueError, match=f"the table has {N} rows but y has {N - 1} labels"):
        enc.fit_transform(frame, labels=y[:-1])
    with pytest.raises(ValueError, match="labels must be -1 and \\+1"):
        enc.fit_transform(frame, labels=np.where(y > 0, 1, 0) * 3)
    assert enc.columns == {"ts": "datetime", "payment_id": "dropped"}


def test_load_table_refuses_a_copy_of_the_label_under_another_name():
    frame, y = payments()
    frame = frame.assign(fraud=label_as("yes/no", y), chargeback=label_as("0/1", y))
    with pytest.raises(ValueError, match="'chargeback' is 1 on every positive row") as caught:
        load_table(frame, "fraud", positive="yes", drop=["payment_id"], datetime=["ts"], bits=10)
    assert "drop=['chargeback'] (--drop chargeback)" in str(caught.value)
    X, labels, enc = load_table(
        frame, "fraud", positive="yes", drop=["payment_id", "chargeback"], datetime=["ts"], bits=10
    )
    np.testing.assert_array_equal(labels, y)
    assert enc.positive == "yes"
    assert X.shape[0] == N


# -- positive, saved ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("positive", "kept"),
    [
        ("yes", "yes"),
        (["yes", "maybe"], ("yes", "maybe")),
        (2, 2),
        (np.int64(2), 2),
        ([1, 3], (1, 3)),
        ([1, 2.5], (1.0, 2.5)),
        (0.5, 0.5),
        (True, True),
        (None, None),
    ],
)
def test_positive_round_trips_through_the_state(tmp_path, positive, kept):
    enc = TableEncoder(label="fraud", positive=positive)
    assert enc.positive == kept
    assert type(enc.positive) is type(kept)
    state = enc.state_dict()
    np.savez(tmp_path / "enc.npz", **state)
    with np.load(tmp_path / "enc.npz", allow_pickle=False) as f:
        loaded = TableEncoder.from_state_dict(dict(f))
    assert loaded.positive == kept
    assert type(loaded.positive) is type(kept)
    if isinstance(kept, tuple):
        assert [type(v) for v in loaded.positive] == [type(v) for v in kept]
    assert repr(loaded) == repr(enc)


def test_positive_needs_a_label_and_a_label_kind():
    with pytest.raises(ValueError, match="label='COLUMN'"):
        TableEncoder(positive="yes")
    with pytest.raises(ValueError, match="mixes labels of several kinds"):
        TableEncoder(label="fraud", positive=["yes", 1])
    with pytest.raises(ValueError, match="non-empty list"):
        TableEncoder(label="fraud", positive=[])
    with pytest.raises(TypeError, match="positive must be a label"):
        TableEncoder(label="fraud", positive={"yes": 1})
    with pytest.raises(ValueError, match="'positive' must be a label or a 1-D array of labels"):
        TableEncoder.from_state_dict(TableEncoder(label="fraud").state_dict() | {"positive": np.zeros((2, 2))})


def test_a_version_2_state_loads_with_no_positive():
    frame, y = payments()
    enc = encoder(label="fraud")
    enc.fit_transform(frame, labels=y)
    state = {k: v for k, v in enc.state_dict().items() if k != "positive"} | {"version": np.array(2)}
    old = TableEncoder.from_state_dict(state)
    assert old.positive is None
    assert old.columns == enc.columns
    np.testing.assert_array_equal(old.labels(frame), y)
    with pytest.raises(ValueError, match=r"version 3: keys \['positive'\] are missing"):
        TableEncoder.from_state_dict(state | {"version": np.array(3)})


# -- the live learner --------------------------------------------------------------------------------------------


def snapshot(live) -> tuple:
    return (
        live.encoder.state_dict(),
        [np.asarray(a).copy() for a in jax.tree.leaves(live.states)],
        live.counts.copy(),
        [np.asarray(a).copy() for a in jax.tree.leaves(live.board)],
        live.events,
        len(live.store),
    )


def assert_unchanged(live, before) -> None:
    state, leaves, counts, board, events, pending = before
    assert same_state(live.encoder.state_dict(), state)
    for a, b in zip(leaves, jax.tree.leaves(live.states), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(counts, live.counts)
    for a, b in zip(board, jax.tree.leaves(live.board), strict=True):
        np.testing.assert_array_equal(a, b)
    assert (live.events, len(live.store)) == (events, pending)


def test_live_learning_a_table_with_its_label_unnamed_is_refused_and_changes_nothing():
    frame, y = payments()
    live = jcsol.Live(LEARNER, encoder=encoder())
    with pytest.raises(ValueError, match="'fraud' is 1 on every positive row"):
        live.learn(frame, y)  # the first batch: the encoder infers nothing
    assert live.encoder.columns == {"ts": "datetime", "payment_id": "dropped"}
    live.learn(frame.iloc[:40].drop(columns=["fraud"]).assign(fraud=0), y[:40] * 0 - 1)  # one class: a constant
    live.predict(frame.iloc[40:50], ids=range(40, 50))
    before = snapshot(live)
    with pytest.raises(ValueError, match="'fraud' is 1 on every positive row") as caught:
        live.learn(frame.iloc[50:], y[50:])
    assert "label='fraud'" in str(caught.value)
    assert "drop=['fraud']" in str(caught.value)
    assert_unchanged(live, before)
    with pytest.raises(TypeError, match="give the labels, learn\\(table, y\\), or name the column"):
        live.learn(frame.iloc[50:])  # no label named: the labels cannot be read
    assert_unchanged(live, before)


def test_live_reads_a_named_label_and_learns_as_if_it_were_absent(tmp_path):
    """``learn(frame)`` with ``label=`` equals ``learn(frame_without_label, y)``, bit for bit; the encoder's
    ``positive`` is saved with the learner."""
    frame, y = payments()
    frame = frame.assign(fraud=label_as("yes/no", y))
    named = jcsol.Live(LEARNER, encoder=encoder(label="fraud", positive="yes"))
    given = jcsol.Live(LEARNER, encoder=encoder())
    for a, b in ((0, 70), (70, N)):
        named.learn(frame.iloc[a:b])
        given.learn(frame.iloc[a:b].drop(columns=["fraud"]), y[a:b])
    for p, q in zip(jax.tree.leaves(named.states), jax.tree.leaves(given.states), strict=True):
        np.testing.assert_array_equal(p, q)
    np.testing.assert_array_equal(named.counts, given.counts)
    assert named.events == N
    named.save(tmp_path / "live.npz")
    loaded = jcsol.Live.load(tmp_path / "live.npz", LEARNER)
    assert loaded.encoder.positive == "yes"
    assert same_state(loaded.encoder.state_dict(), named.encoder.state_dict())
    more, y_more = payments(30, seed=1)
    more = more.assign(fraud=label_as("yes/no", y_more))
    for each in (named, loaded):
        each.learn(more)
    for p, q in zip(jax.tree.leaves(named.states), jax.tree.leaves(loaded.states), strict=True):
        np.testing.assert_array_equal(p, q)
