"""Tables as a hostile user gives them (``jcsol.features``): refused calls that change nothing, one rule for the
values of records, pandas and Arrow, empty batches, odd Arrow types, saved states checked field by field, and what
a fraud team's tables hold (database ids, timestamps, amounts as text, every kind of missing value, unicode)."""

import datetime as dt
import decimal
import math
import re

import numpy as np
import pytest
from conftest import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jcsol.features import TableEncoder, hash_features, load_table, read_table
from jcsol.stream import EXACT_INTEGERS

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

BITS = 12
FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def state_equal(a: dict, b: dict) -> bool:
    """Two ``state_dict()``s equal leaf by leaf: the same keys, each array of the same dtype, shape and bits."""
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and np.array_equal(a[k], b[k]) for k in a
    )


def outcome(encoder: TableEncoder, table, method: str = "fit_transform"):
    """What a call gives: ``("rows", indices, values)`` or ``("refused", type, message)``; anything but a
    ``ValueError`` or ``TypeError`` (a crash from inside NumPy, pandas or pyarrow) fails the test."""
    try:
        rows = getattr(encoder, method)(table)
    except (ValueError, TypeError) as err:
        return ("refused", type(err).__name__, str(err))
    if isinstance(rows, np.ndarray):  # labels
        return ("labels", rows.tolist())
    return ("rows", rows.indices.tolist(), rows.values.tolist())


def as_arrow(records):
    """The records as an Arrow table, or ``None`` where Arrow cannot hold them in one type per column, or holds
    other values (``True`` in a float column becomes ``1.0``)."""
    try:
        table = pa.Table.from_pylist(records)
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        return None
    for record, held in zip(records, table.to_pylist()):
        if any(type(v) is not type(held[c]) or v != held[c] for c, v in record.items() if v is not None):
            return None
    return table


def as_pandas(records):
    """The records as a data frame, or ``None`` where pandas cannot hold them (text that is not valid Unicode in
    pandas' Arrow-backed strings)."""
    try:
        return pd.DataFrame(records)
    except (pa.ArrowException, ValueError):
        return None


def key(column: str, value: str) -> tuple[int, float]:
    index, sign = hash_features([f"{column}={value}"], BITS)
    return int(index[0]), float(sign[0])


# -- generated tables: one rule for records, pandas and Arrow -------------------------------------------------------

SMALL = st.integers(-1000, 1000)
BIG = st.one_of(
    st.integers(-(2**64), 2**64),
    st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 2**63 - 1, 2**63 + 1, 1_709_251_200_123_456_789]),
)
FLOATS = st.floats(-1e20, 1e20, allow_nan=False, allow_infinity=False)
TEXT = st.text(alphabet="abcé日🙂 ", max_size=4)
VALUES = {
    "small": SMALL,
    "big": BIG,
    "float": FLOATS,
    "bool": st.booleans(),
    "text": TEXT,
    "int_float": st.one_of(SMALL, FLOATS, st.sampled_from([1, 1.0, 0, 0.0])),
    "int_bool": st.one_of(st.sampled_from([0, 1, 2]), st.booleans()),
    "int_text": st.one_of(st.sampled_from([0, 1, 1.0]), st.sampled_from(["1", "0", "x"])),
    "equal_across_kinds": st.sampled_from([2**60, float(2**60), 2**53, float(2**53), 7, 7.0, True, 1, 1.0]),
}


@st.composite
def tables(draw):
    """Records of 1 to 25 rows over 1 to 4 columns of a generated kind each, some values missing (``None``), and
    an encoder's column lists: declared (each column numeric or categorical) or left to be inferred."""
    n = draw(st.integers(1, 25))
    kinds = draw(st.lists(st.sampled_from(sorted(VALUES)), min_size=1, max_size=4))
    columns = {}
    for j, kind in enumerate(kinds):
        values = draw(st.lists(VALUES[kind], min_size=n, max_size=n))
        if draw(st.booleans()):
            missing = draw(st.lists(st.booleans(), min_size=n, max_size=n))
            values = [None if m else v for v, m in zip(values, missing)]
        columns[f"c{j}"] = values
    records = [{c: columns[c][t] for c in columns} for t in range(n)]
    declared = draw(st.booleans())
    roles = {c: draw(st.sampled_from(["numeric", "categorical"])) for c in columns} if declared else {}
    return records, roles


def encoder_for(roles: dict) -> TableEncoder:
    return TableEncoder(
        [c for c, r in roles.items() if r == "numeric"],
        [c for c, r in roles.items() if r == "categorical"],
        bits=BITS,
    )


def pandas_rounded(records, frame) -> list:
    """The columns that pandas holds as float64 though they hold integers from 2**53 on (an integer column with a
    missing value or a float): rounded before jcsol sees them, they cannot give the records' rows."""
    return [
        c
        for c in frame.columns
        if frame[c].dtype.kind == "f"
        and any(isinstance(r[c], int) and not isinstance(r[c], bool) and abs(r[c]) >= EXACT_INTEGERS for r in records)
    ]


@FAST
@given(tables())
def test_records_pandas_and_arrow_give_the_same_rows_or_the_same_refusal(table):
    records, roles = table
    expected = outcome(encoder_for(roles), records)
    arrow = as_arrow(records)
    if arrow is not None:
        assert outcome(encoder_for(roles), arrow) == expected
    frame = pd.DataFrame(records)
    rounded = pandas_rounded(records, frame)
    if rounded:  # their own rule: test_a_rounded_integer_id_is_refused_naming_its_row_and_the_nullable_dtype_keeps_it
        outcome(encoder_for(roles), frame)  # rows or a refusal, never a crash
        records = [{c: v for c, v in r.items() if c not in rounded} for r in records]
        roles = {c: r for c, r in roles.items() if c not in rounded}
        frame = frame.drop(columns=rounded)
        if not len(frame.columns):
            return
        expected = outcome(encoder_for(roles), records)
    assert outcome(encoder_for(roles), frame) == expected


@FAST
@given(tables())
def test_the_order_of_values_does_not_change_their_hash(table):
    """Reversing the rows reverses the rows of a categorical encoding: a value hashes by its own text whatever
    came first (1 and True, 0 and False are never merged)."""
    records, _ = table
    roles = {c: "categorical" for c in records[0]}
    forward, backward = outcome(encoder_for(roles), records), outcome(encoder_for(roles), records[::-1])
    assert forward[0] == backward[0]
    if forward[0] == "rows":
        assert forward[1] == backward[1][::-1]
        assert forward[2] == backward[2][::-1]


# -- refused calls change nothing ----------------------------------------------------------------------------------

HOSTILE = [
    math.inf,
    -math.inf,
    1e200,
    2**60 + 1,
    10**30,
    float(2**60),
    "$1,234.50",
    "\ud800",
    [1, 2],
    {"a": 1},
    dt.timedelta(days=1),
    dt.time(13, 45),
    "yesterday",
    b"\xff\xfe",
    decimal.Decimal("1e400"),
    complex(1, 2),
    object(),
]
BASE = [
    {"amount": float(a), "merchant": m, "device": d, "ts": f"2024-03-0{1 + t % 7}T{t % 24:02d}:00", "y": t % 2}
    for t, (a, m, d) in enumerate(zip(np.linspace(1, 90, 30), ["a", "b", "c"] * 10, [1, 2, True, None, 0] * 6))
]


@FAST
@given(
    declared=st.booleans(),
    fitted=st.booleans(),
    row=st.integers(0, len(BASE) - 1),
    column=st.sampled_from(["amount", "merchant", "device", "ts", "y"]),
    value=st.sampled_from(HOSTILE),
    drop_column=st.booleans(),
    kind=st.sampled_from(["records", "pandas", "arrow"]),
    method=st.sampled_from(["fit_transform", "transform", "labels"]),
)
def test_every_refused_call_leaves_the_state_as_it_was(declared, fitted, row, column, value, drop_column, kind, method):
    numeric, categorical = (["amount"], ["merchant", "device"]) if declared else ([], [])
    encoder = TableEncoder(numeric, categorical, bits=BITS, datetime=["ts"], label="y")
    if fitted:
        encoder.fit_transform(BASE)
    records = [dict(r) for r in BASE]
    records[row][column] = value
    if drop_column:
        for r in records:
            r.pop(column)
    table = {"records": lambda: records, "pandas": lambda: as_pandas(records), "arrow": lambda: as_arrow(records)}[
        kind
    ]()
    table = records if table is None else table
    before = encoder.state_dict()
    result = outcome(encoder, table, method)
    if result[0] == "refused":
        assert state_equal(encoder.state_dict(), before), result
    elif method != "fit_transform":
        assert state_equal(encoder.state_dict(), before)


def test_a_refused_call_after_an_accepted_one_changes_nothing_then_the_stream_goes_on():
    encoder = TableEncoder(["amount"], ["merchant"], bits=BITS)
    reference = TableEncoder(["amount"], ["merchant"], bits=BITS)
    encoder.fit_transform(BASE[:10])
    reference.fit_transform(BASE[:10])
    for bad in ([dict(BASE[10], amount="12,50 €")], [dict(BASE[10], merchant=["a"])], [dict(BASE[10], amount=1e300)]):
        with pytest.raises((ValueError, TypeError)):
            encoder.fit_transform(BASE[10:20] + bad)
    a, b = encoder.fit_transform(BASE[10:]), reference.fit_transform(BASE[10:])
    assert np.array_equal(a.values, b.values)
    assert np.array_equal(a.indices, b.indices)
    assert state_equal(encoder.state_dict(), reference.state_dict())


# -- the value rule ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", [[True, 1, 1.0, "1"], ["1", 1.0, 1, True], [1, True, "True"], [0, False, 0.0]])
def test_values_equal_across_types_hash_by_their_own_text(order):
    encoder = TableEncoder(categorical=["c"], bits=BITS, normalize=False)
    for table in ([{"c": v} for v in order], pd.DataFrame({"c": pd.Series(order, dtype=object)})):
        rows = encoder.transform(table)
        for t, v in enumerate(order):
            text = v if isinstance(v, str) else str(v) if isinstance(v, bool) else str(int(v))
            assert (rows.indices[t, 0], rows.values[t, 0]) == key("c", text)


@pytest.mark.parametrize("order", [[2**60, 2.0**60, 5], [2.0**60, 2**60, 5], [5, 2**60, 2.0**60]])
def test_a_float_from_2_53_on_is_refused_whatever_integer_equal_to_it_came_first(order):
    row = next(t for t, v in enumerate(order) if isinstance(v, float))
    for table in ([{"c": v} for v in order], pd.DataFrame({"c": pd.Series(order, dtype=object)})):
        with pytest.raises(ValueError, match=rf"categorical column 'c' holds 1\.152921504606847e\+18 at row {row}"):
            TableEncoder(categorical=["c"]).fit_transform(table)


def test_pandas_upcasts_keep_the_hash_of_the_records():
    """An int column with a missing value becomes float64, a bool column with one object: same rows."""
    records = [{"n": 3, "b": True}, {"n": None, "b": None}, {"n": 7, "b": False}, {"n": 3, "b": True}]
    frame = pd.DataFrame(records)
    assert frame["n"].dtype == np.float64
    assert frame["b"].dtype == object
    for roles in ({"n": "categorical", "b": "categorical"}, {"n": "numeric", "b": "categorical"}, {}):
        expected = outcome(encoder_for(roles), records)
        assert expected[0] == "rows"
        assert outcome(encoder_for(roles), frame) == expected
        assert outcome(encoder_for(roles), pa.Table.from_pylist(records)) == expected


def test_a_rounded_integer_id_is_refused_naming_its_row_and_the_nullable_dtype_keeps_it():
    ids = [12, 2**60 + 1, None, 2**60 + 3]
    records = [{"account": i} for i in ids]
    frame = pd.DataFrame(records)
    encoder = TableEncoder(categorical=["account"], bits=BITS, normalize=False)
    with pytest.raises(ValueError, match=r"categorical column 'account' holds 1\.152921504606847e\+18 at row 1.*Int64"):
        encoder.fit_transform(frame)
    exact = encoder.fit_transform(records)
    assert outcome(encoder, pd.DataFrame({"account": pd.array(ids, dtype="Int64")})) == outcome(encoder, records)
    assert outcome(encoder, pa.Table.from_pylist(records)) == outcome(encoder, records)
    assert (exact.indices[1, 0], exact.values[1, 0]) == key("account", str(2**60 + 1))
    assert (exact.indices[3, 0], exact.values[3, 0]) == key("account", str(2**60 + 3))


@pytest.mark.parametrize(
    "table",
    [
        lambda v: [{"ts": x} for x in v],
        lambda v: pd.DataFrame({"ts": v}),
        lambda v: pa.table({"ts": pa.array(v, pa.int64())}),
    ],
    ids=["records", "pandas", "arrow"],
)
def test_integers_beyond_2_53_in_a_numeric_column_are_refused_naming_value_and_row(table):
    nanoseconds = [1_709_251_200, 1_709_251_201, 1_709_251_200_123_456_789, 1_709_251_200_123_456_790]
    encoder = TableEncoder(["ts"], bits=BITS)
    with pytest.raises(ValueError, match=r"numeric column 'ts' holds the integer 1709251200123456789 at row 2"):
        encoder.fit_transform(table(nanoseconds))
    assert encoder.n_seen.tolist() == [0]
    assert outcome(encoder, table([2**53, -(2**53)]))[0] == "rows"  # exact in float64


def test_unsigned_64_bit_ids_hash_exactly_from_every_kind_of_table():
    ids = [2**64 - 1, 2**63 + 5, 7]
    expected = [key("id", str(i)) for i in ids]
    encoder = TableEncoder(categorical=["id"], bits=BITS, normalize=False)
    for table in (
        [{"id": i} for i in ids],
        pd.DataFrame({"id": np.array(ids, np.uint64)}),
        pa.table({"id": pa.array(ids, pa.uint64())}),
    ):
        rows = encoder.fit_transform(table)
        assert list(zip(rows.indices[:, 0].tolist(), rows.values[:, 0].tolist())) == expected
    with pytest.raises(ValueError, match=r"numeric column 'id' holds the integer 18446744073709551615 at row 0"):
        TableEncoder(["id"]).fit_transform(pa.table({"id": pa.array(ids, pa.uint64())}))


def test_error_messages_name_the_value_and_its_own_row():
    records = [{"amount": 1.0, "ts": "2024-03-01", "c": "a"} for _ in range(12)]
    records[5] = {"amount": 1.0, "ts": "yesterday", "c": "a"}
    records[8] = {"amount": "$1,234.50", "ts": "2024-03-01", "c": 2.0**60}
    records[10] = {"amount": "$9.99", "ts": "tomorrow", "c": 2.0**61}
    for table in (records, pd.DataFrame(records)):
        with pytest.raises(ValueError, match=r"datetime column 'ts' holds 'yesterday' at row 5"):
            TableEncoder(datetime=["ts"]).fit_transform(table)
        with pytest.raises(
            ValueError, match=r"numeric column 'amount' holds the non-numeric value '\$1,234.50' at row 8"
        ):
            TableEncoder(["amount"]).fit_transform(table)
        with pytest.raises(ValueError, match=r"categorical column 'c' holds 1\.152921504606847e\+18 at row 8"):
            TableEncoder(categorical=["c"]).fit_transform(table)
    infinite = [{"a": 1.0, "b": 1.0}, {"a": 1.0, "b": math.inf}, {"a": -math.inf, "b": 1.0}]
    with pytest.raises(ValueError, match=r"numeric column 'a' has 1 infinite value\(s\), the first at row 2"):
        TableEncoder(["a", "b"]).fit_transform(infinite)


# -- empty batches ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "empty",
    [
        [],
        pd.DataFrame(),
        pd.DataFrame(
            {
                "amount": pd.Series([], dtype=float),
                "merchant": pd.Series([], dtype="string"),
                "device": pd.Series([], dtype="Int64"),
                "ts": pd.Series([], dtype="datetime64[ns, UTC]"),
                "y": pd.Series([], dtype=bool),
            }
        ),
        pa.table({}),
        pa.table(
            {
                "amount": pa.array([], pa.float64()),
                "merchant": pa.array([], pa.large_string()),
                "device": pa.array([], pa.uint64()),
                "ts": pa.array([], pa.timestamp("ns", tz="UTC")),
                "y": pa.array([], pa.bool_()),
            }
        ),
    ],
    ids=["records", "pandas-bare", "pandas-typed", "arrow-bare", "arrow-typed"],
)
@pytest.mark.parametrize("declared", [True, False])
def test_an_empty_batch_gives_no_rows_and_changes_nothing(empty, declared):
    numeric, categorical = (["amount"], ["merchant", "device"]) if declared else ([], [])
    for bias in (False, True):
        encoder = TableEncoder(numeric, categorical, bits=BITS, datetime=["ts"], label="y", bias=bias)
        encoder.fit_transform(BASE) if declared else None
        before = encoder.state_dict()
        for method in ("fit_transform", "transform"):
            rows = getattr(encoder, method)(empty)
            assert rows.shape == (0, encoder.n_features)
            assert rows.indices.shape[0] == 0
            assert rows.values.dtype == np.float32
        assert encoder.labels(empty).shape == (0,)
        assert state_equal(encoder.state_dict(), before)
    with pytest.raises(ValueError, match="the table is empty"):
        load_table(empty, "y")


# -- odd Arrow types -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("array", "kind", "message"),
    [
        (pa.array([[1], [2]]), "categorical", r"column 'x' has the Arrow type list<item: int64>"),
        (pa.array([{"a": 1}, {"a": 2}]), "categorical", r"column 'x' has the Arrow type struct"),
        (
            pa.array([[("k", 1)], []], pa.map_(pa.string(), pa.int64())),
            "categorical",
            "column 'x' has the Arrow type map",
        ),
        (
            pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()), [pa.array([1, 2]), pa.array(["a", "b"])]),
            "categorical",
            "column 'x' has the Arrow type sparse_union",
        ),
        (pa.array([[1], [2]]), "numeric", r"numeric column 'x' holds the non-numeric value \[1\] at row 0"),
        (pa.array([[1], [2]]), "inferred", r"column 'x' has the Arrow type list"),
        (pa.array([dt.timedelta(1), None]), "categorical", "'x' holds datetime.timedelta.* at row 0: a duration"),
        (pa.array([dt.timedelta(1), None]), "numeric", "'x' holds the non-numeric value .* at row 0 .a duration"),
        (pa.array([dt.time(1), None]), "datetime", "datetime column 'x' holds datetime.time.* at row 0"),
        (pa.array(["1.5", "2"]), "numeric", "numeric column 'x' holds the non-numeric value '1.5' at row 0"),
        (
            pa.array(np.array(["2024-03-01", "20000-01-01"], "datetime64[D]")),
            "categorical",
            "column 'x' holds a moment of the year 20000 at row 1, beyond Python's dates",
        ),
        (pa.array([2**64 - 1, 1], pa.uint64()), "numeric", "holds the integer 18446744073709551615 at row 0"),
    ],
)
def test_odd_arrow_types_end_in_a_clear_refusal_naming_the_column(array, kind, message):
    roles = {"numeric": {"numeric": ["x"]}, "categorical": {"categorical": ["x"]}, "datetime": {"datetime": ["x"]}}
    encoder = TableEncoder(**roles.get(kind, {}), bits=BITS)
    with pytest.raises((ValueError, TypeError), match=message):
        encoder.fit_transform(pa.table({"x": array, "y": pa.array([0.5, 1.5])}))


ARROW_COLUMNS = {
    "int8": lambda: pa.array([1, None, -3], pa.int8()),
    "uint64": lambda: pa.array([2**64 - 1, None, 0], pa.uint64()),
    "float16": lambda: pa.array(np.array([1.5, np.nan, 2], np.float16)),
    "decimal256": lambda: pa.array([decimal.Decimal("1" * 70), None, decimal.Decimal(0)], pa.decimal256(72, 0)),
    "bool": lambda: pa.array([True, None, False]),
    "large_string": lambda: pa.array(["a", None, "b"], pa.large_string()),
    "binary": lambda: pa.array([b"a", None, b"\xff"]),
    "fixed_size_binary": lambda: pa.array([b"ab", None, b"cd"], pa.binary(2)),
    "date64": lambda: pa.array([dt.date(2024, 3, 1), None, dt.date(1, 1, 1)], pa.date64()),
    "timestamp_tz": lambda: pa.array(
        [dt.datetime(2024, 3, 1, 13), None, dt.datetime(2024, 3, 2)], pa.timestamp("s", "Europe/Paris")
    ),
    "time64": lambda: pa.array([dt.time(1), None, dt.time(2)], pa.time64("us")),
    "duration": lambda: pa.array([dt.timedelta(1), None, dt.timedelta(0)]),
    "interval": lambda: pa.array([(1, 2, 3), None, (0, 0, 0)], pa.month_day_nano_interval()),
    "large_list": lambda: pa.array([[1], None, []], pa.large_list(pa.int64())),
    "fixed_size_list": lambda: pa.array([[1, 2], None, [3, 4]], pa.list_(pa.int64(), 2)),
    "dictionary_int": lambda: pa.array([1, None, 2**60]).dictionary_encode(),
    "null": lambda: pa.array([None, None, None]),
}
PANDAS_COLUMNS = {
    "UInt64": lambda: pd.array([2**64 - 1, None, 0], "UInt64"),
    "boolean": lambda: pd.array([True, None, False], "boolean"),
    "string_pyarrow": lambda: pd.array(["a", None, "b"], "string[pyarrow]"),
    "category_int": lambda: pd.Categorical([1, None, 2]),
    "datetime_tz": lambda: pd.to_datetime(["2024-03-01 13:00", None, "2024-03-02 00:00"]).tz_localize("Asia/Tokyo"),
    "timedelta": lambda: pd.to_timedelta([1, None, 2], unit="s"),
    "period": lambda: pd.period_range("2024-01", periods=3, freq="M"),
    "interval": lambda: pd.interval_range(0, 3),
    "sparse": lambda: pd.arrays.SparseArray([1.0, np.nan, 0.0]),
    "complex": lambda: np.array([1j, 2, 3]),
    "int64_pyarrow": lambda: pd.array([1, None, 2**60], "int64[pyarrow]"),
    "list_pyarrow": lambda: pd.array([[1], None, [2]], pd.ArrowDtype(pa.list_(pa.int64()))),
    "object_mixed": lambda: np.array([1, "a", True], dtype=object),
    "object_missing": lambda: np.array([np.nan, None, pd.NA], dtype=object),
}


@pytest.mark.parametrize("kind", ["numeric", "categorical", "datetime", "inferred", "label"])
@pytest.mark.parametrize("column", [f"arrow {k}" for k in ARROW_COLUMNS] + [f"pandas {k}" for k in PANDAS_COLUMNS])
def test_every_column_type_gives_rows_or_a_clear_refusal_that_changes_nothing(column, kind):
    source, name = column.split(" ")
    if source == "arrow":
        table = pa.table({"x": ARROW_COLUMNS[name](), "y": pa.array([1, 0, 1])})
    else:
        table = pd.DataFrame({"x": PANDAS_COLUMNS[name](), "y": [1, 0, 1]})
    roles = {"numeric": dict(numeric=["x"]), "categorical": dict(categorical=["x"]), "datetime": dict(datetime=["x"])}
    encoder = TableEncoder(**roles.get(kind, {}), bits=BITS, label="x" if kind == "label" else "y")
    for method in ("labels",) if kind == "label" else ("fit_transform", "transform"):
        before = encoder.state_dict()
        result = outcome(encoder, table, method)
        if result[0] == "refused":
            assert "'x'" in result[2], result
            assert state_equal(encoder.state_dict(), before), result


@pytest.mark.parametrize("kind", ["categorical", "datetime", "inferred"])
def test_a_pandas_column_of_arrow_lists_is_refused_naming_the_value_and_row(kind):
    frame = pd.DataFrame({"x": pd.array([[1], None, [2]], pd.ArrowDtype(pa.list_(pa.int64()))), "y": [1.0, 2.0, 3.0]})
    encoder = TableEncoder(**({kind: ["x"]} if kind != "inferred" else {}), bits=BITS)
    with pytest.raises(TypeError, match=r"column 'x' holds array\(\[1\]\) at row 0, which is no single value"):
        encoder.fit_transform(frame)


def test_decimal_dictionary_large_string_and_zoned_timestamps_encode_as_their_values():
    records = [
        {"amount": decimal.Decimal("12.50"), "code": "FR", "ts": dt.datetime(2024, 3, 1, 13, tzinfo=dt.UTC)},
        {"amount": decimal.Decimal("3"), "code": "DE", "ts": None},
    ]
    arrow = pa.table(
        {
            "amount": pa.array([r["amount"] for r in records], pa.decimal128(10, 2)),
            "code": pa.array(["FR", "DE"], pa.large_string()).dictionary_encode(),
            "ts": pa.array([r["ts"] for r in records], pa.timestamp("us", tz="UTC")),
        }
    )
    encoder = lambda: TableEncoder(["amount"], ["code"], bits=BITS, datetime=["ts"])  # noqa: E731
    expected = outcome(encoder(), records)
    assert expected[0] == "rows"
    assert outcome(encoder(), arrow) == expected
    assert outcome(encoder(), pd.DataFrame(records)) == expected
    as_numbers = pa.table({"amount": pa.array([1, 2, 1]).dictionary_encode()})
    assert outcome(TableEncoder(["amount"], bits=BITS), as_numbers) == outcome(
        TableEncoder(["amount"], bits=BITS), [{"amount": v} for v in (1, 2, 1)]
    )


# -- what a fraud team's tables hold ---------------------------------------------------------------------------------


def test_every_kind_of_missing_value_is_missing():
    kinds = [None, math.nan, np.float32("nan"), pd.NA, pd.NaT, np.datetime64("NaT"), decimal.Decimal("NaN")]
    records = [{"amount": 2.0, "c": "a", "ts": "2024-03-01T10:00"}] + [
        {"amount": k if not isinstance(k, np.datetime64) else None, "c": k, "ts": k} for k in kinds
    ]
    rows = TableEncoder(["amount"], ["c"], bits=BITS, datetime=["ts"]).fit_transform(records)
    assert (rows.values[1:] == 0).all()
    frame = pd.DataFrame({"c": pd.Series(["a", None, math.nan, pd.NA, pd.NaT], dtype=object)})
    assert (TableEncoder(categorical=["c"], bits=BITS).fit_transform(frame).values[1:] == 0).all()


def test_columns_all_missing_add_nothing_and_leave_the_statistics():
    records = [{"amount": None, "c": None, "ts": None, "k": 1.0 * t} for t in range(25)]
    for table in (records, pd.DataFrame(records), pa.Table.from_pylist(records)):
        encoder = TableEncoder(["amount", "k"], ["c"], bits=BITS, datetime=["ts"], normalize=False)
        rows = encoder.fit_transform(table)
        assert encoder.n_seen.tolist() == [0, 25]
        assert (rows.values[:, [0, 2, 3, 4]] == 0).all()
        assert outcome(TableEncoder(bits=BITS), table) == outcome(TableEncoder(bits=BITS), records)


def test_unicode_is_hashed_as_its_utf8_bytes_and_broken_text_is_refused():
    nfc, nfd = "caf\u00e9", "cafe\u0301"  # the same word, composed and decomposed: two features (no normalisation)
    rows = TableEncoder(categorical=["m"], bits=BITS, normalize=False).fit_transform(
        [{"m": nfc}, {"m": nfd}, {"m": "🙂"}, {"m": "日本"}]
    )
    assert [(rows.indices[t, 0], rows.values[t, 0]) for t in range(4)] == [
        key("m", v) for v in (nfc, nfd, "🙂", "日本")
    ]
    encoder = TableEncoder(categorical=["m"], bits=BITS)
    with pytest.raises(ValueError, match=r"categorical column 'm' holds '\\ud83d' at row 1: .*not valid Unicode"):
        encoder.fit_transform([{"m": "ok"}, {"m": "\ud83d"}])  # half an emoji, as a bad decoder leaves it
    with pytest.raises(ValueError, match="not valid Unicode"):
        hash_features(["m=\udcff"], BITS)
    with pytest.raises(ValueError, match="column name '\\\\udcff' is not valid Unicode"):
        TableEncoder(bits=BITS).fit_transform([{"\udcff": "x"}])
    with pytest.raises(ValueError, match="categorical column name"):
        TableEncoder(categorical=["\udcff"])


def test_very_long_strings_are_one_feature():
    long_text = "x" * 1_000_000 + "é"
    rows = TableEncoder(categorical=["note"], bits=BITS, normalize=False).fit_transform([{"note": long_text}])
    assert (rows.indices[0, 0], rows.values[0, 0]) == key("note", long_text)
    with pytest.raises(ValueError, match=r"holds the non-numeric value 'xxxx.*… \(\d+ characters\) at row 0"):
        TableEncoder(["note"]).fit_transform([{"note": long_text}])


def test_timestamps_of_every_kind_give_the_same_hour_and_weekday():
    moment = dt.datetime(2024, 3, 1, 13, 45, tzinfo=dt.timezone(dt.timedelta(hours=9)))  # a Friday
    kinds = [
        [{"ts": moment}],
        [{"ts": moment.isoformat()}],
        [{"ts": pd.Timestamp(moment)}],
        pd.DataFrame({"ts": pd.to_datetime([moment.isoformat()])}),
        pa.table({"ts": pa.array([moment], pa.timestamp("ns", tz="+09:00"))}),
    ]
    expected = outcome(TableEncoder(datetime=["ts"], bits=BITS, normalize=False), [{"ts": "2024-03-01T13:00"}])
    for table in kinds:
        assert outcome(TableEncoder(datetime=["ts"], bits=BITS, normalize=False), table) == expected
    for epoch in (1_709_268_300, 1_709_268_300_000, 1_709_268_300_000_000_000):  # seconds, ms, ns: no unit to tell
        with pytest.raises(ValueError, match=f"datetime column 'ts' holds {epoch} at row 1"):
            TableEncoder(datetime=["ts"]).fit_transform([{"ts": moment}, {"ts": epoch}])


def test_amounts_as_text_with_a_currency_are_refused_in_a_numeric_column_and_text_when_inferred():
    amounts = ["$1,234.50", "€12,50", "12.00 USD", None] * 6
    with pytest.raises(ValueError, match=r"numeric column 'amount' holds the non-numeric value '\$1,234.50' at row 0"):
        TableEncoder(["amount"]).fit_transform([{"amount": a} for a in amounts])
    encoder = TableEncoder(bits=BITS)
    encoder.fit_transform([{"amount": a} for a in amounts])
    assert encoder.columns == {"amount": "categorical"}


def test_database_ids_from_every_kind_of_table_are_refused_when_inferred_and_exact_when_declared():
    ids = [10**15 + i for i in range(30)] + [2**63 - 1]
    records = [{"id": i, "amount": float(i % 7)} for i in ids]
    for table in (records, pd.DataFrame(records), pa.Table.from_pylist(records)):
        with pytest.raises(ValueError, match="'id' looks like an id"):
            TableEncoder(bits=BITS).fit_transform(table)
        assert outcome(TableEncoder(["amount"], ["id"], bits=BITS), table) == outcome(
            TableEncoder(["amount"], ["id"], bits=BITS), records
        )


# -- files -----------------------------------------------------------------------------------------------------------


def test_a_csv_with_a_repeated_header_is_refused_naming_the_column(tmp_path):
    path = tmp_path / "payments.csv"
    path.write_text("amount,country,amount,fraud\n1.5,FR,2.5,0\n3.0,DE,1.0,1\n")
    with pytest.raises(ValueError, match=r"header names column\(s\) \['amount'\] more than once.*'amount.1'"):
        read_table(path)
    with pytest.raises(ValueError, match=r"\['amount'\] more than once"):
        load_table(path, "fraud")
    path.write_text(",,amount,fraud\n1,2,1.5,0\n")  # blank names: pandas' "Unnamed: i", no clash
    assert list(read_table(path).columns) == ["Unnamed: 0", "Unnamed: 1", "amount", "fraud"]


def test_damaged_files_are_refused_naming_them(tmp_path):
    import gzip

    truncated = tmp_path / "payments.csv.gz"
    truncated.write_bytes(gzip.compress(b"amount,fraud\n" + b"1.5,0\n" * 1000)[:40])
    not_parquet = tmp_path / "payments.parquet"
    not_parquet.write_bytes(b"PAR1 and then nothing of the kind")
    for path, message in ((truncated, "not a readable CSV table"), (not_parquet, "not a readable Parquet table")):
        with pytest.raises(ValueError, match=re.escape(str(path)) + ": " + message):
            load_table(path, "fraud")
    with pytest.raises(IsADirectoryError, match="it is a folder"):
        read_table(tmp_path)
    bom = tmp_path / "excel.csv"
    bom.write_bytes("\ufeffamount,fraud\n1.5,0\n2.5,1\n".encode())  # a spreadsheet's byte order mark
    assert list(read_table(bom).columns) == ["amount", "fraud"]


def test_hostile_labels_are_refused_naming_the_label_column():
    records = [{"x": 1.0, "y": v} for v in (True, 1, False, 0)]
    encoder = TableEncoder(["x"], label="y")
    with pytest.raises(ValueError, match=r"label column 'y' holds text \['0', '1', 'False', 'True'\]"):
        encoder.labels(records)  # booleans and integers apart: four labels, not two
    assert encoder.labels(records, positive=[True, 1]).tolist() == [1, 1, -1, -1]
    with pytest.raises(ValueError, match=re.escape("positive='\\udcff': text that is not valid Unicode")):
        encoder.labels([{"x": 1.0, "y": "a"}], positive="\udcff")
    with pytest.raises(ValueError, match=r"label column 'y' has 1 missing value\(s\), the first at row 1"):
        encoder.labels([{"x": 1.0, "y": 1}, {"x": 1.0, "y": pd.NA}])


def test_a_csv_integer_column_with_a_missing_value_keeps_its_integers(tmp_path):
    path = tmp_path / "ids.csv"
    records = [{"account": 2**60 + 1, "fraud": 0}, {"account": None, "fraud": 1}, {"account": 5, "fraud": 0}]
    path.write_text(
        "account,fraud\n" + "".join(f"{'' if r['account'] is None else r['account']},{r['fraud']}\n" for r in records)
    )
    X, y, _ = load_table(path, "fraud", categorical=["account"], bits=BITS)
    expected = TableEncoder(categorical=["account"], bits=BITS, label="fraud").fit_transform(records)
    assert np.array_equal(X.indices, expected.indices)
    assert np.array_equal(X.values, expected.values)
    assert y.tolist() == [-1, 1, -1]


# -- saved states --------------------------------------------------------------------------------------------------


def saved() -> dict:
    encoder = TableEncoder(["amount"], ["merchant"], bits=BITS, datetime=["ts"], label="y", bias=True)
    encoder.fit_transform(BASE)
    return encoder.state_dict()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(kind=np.array("jcsol.Live")), "its kind is 'jcsol.Live'"),
        (dict(kind=np.array(3)), "'kind' must be text"),
        (dict(version=np.array(7)), "format version 7"),
        (dict(version=np.array("2")), "'version' must be an integer"),
        (dict(version=np.array([2, 2])), r"'version' has shape \(2,\), expected a scalar"),
        (dict(bits=np.array(18.0)), "'bits' must be an integer"),
        (dict(bits=np.array(31)), r"bits must be an integer in \[1, 30\]"),
        (dict(seed=np.array(-1)), r"seed must be an integer in \[0, 2\*\*32\)"),
        (dict(normalize=np.array(1)), "'normalize' must be True or False"),
        (dict(bias=np.array("yes")), "'bias' must be True or False"),
        (dict(columns_fixed=np.array(0.0)), "'columns_fixed' must be True or False"),
        (dict(columns_fixed=np.array(False)), "'columns_fixed' is False, yet"),
        (dict(dtype=np.array("int32")), "dtype must be a float dtype"),
        (dict(dtype=np.array("floaty")), "dtype must be a float dtype, got 'floaty'"),
        (dict(label=np.array(["a", "b"])), "'label' names 2 columns"),
        (dict(numeric=np.array([1])), "'numeric' must be a 1-D array of column names"),
        (dict(numeric=np.array([["amount"]])), "'numeric' must be a 1-D array of column names"),
        (dict(drop=np.array(["merchant"])), r"columns \['merchant'\] are both categorical and dropped"),
        (dict(categorical=np.array(["\udcff"])), "not valid Unicode"),
        (dict(count=np.array([-3])), "'count' holds a negative count -3"),
        (dict(count=np.array([2.5])), "'count' must hold integers"),
        (dict(count=np.array([1, 2])), r"'count' has shape \(2,\), expected \(1,\)"),
        (dict(shift=np.array([np.nan])), "'shift' holds a value that is not finite"),
        (dict(sum=np.array([np.inf])), "'sum' holds a value that is not finite"),
        (dict(sum_squares=np.array([-1.0])), "'sum_squares' holds a negative sum of squares"),
        (dict(sum_squares=np.array(["1"])), "'sum_squares' must hold real numbers"),
        (dict(count=np.array([0])), "must be 0 where 'count' is 0"),
        (dict(extra=np.array(1)), r"unknown keys \['extra'\]"),
        (dict(sum=None), r"keys \['sum'\] are missing"),
    ],
)
def test_a_saved_state_is_checked_field_by_field(change, message):
    state = saved()
    state.update(change)
    state = {k: v for k, v in state.items() if v is not None}
    with pytest.raises(ValueError, match=message):
        TableEncoder.from_state_dict(state)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(numeric=None), "numeric must be a list of column names, got None"),
        (dict(categorical=3), "categorical must be a list of column names, got 3"),
        (dict(drop="id"), "drop must be a list of column names, got the string 'id'"),
        (dict(datetime=[1]), r"datetime column names must be strings, got \[1\]"),
        (dict(bits=8.0), r"bits must be an integer in \[1, 30\]"),
        (dict(seed=True), r"seed must be an integer in \[0, 2\*\*32\)"),
        (dict(dtype="floaty"), "dtype must be a float dtype, got 'floaty'"),
        (dict(dtype=np.int32), "dtype must be a float dtype, got int32"),
        (dict(label=["y"]), "label must be a column name"),
    ],
)
def test_constructor_arguments_are_refused_naming_the_argument(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=message):
        TableEncoder(**kwargs)


def test_a_version_1_state_has_no_version_2_keys():
    state = {k: v for k, v in saved().items() if k not in ("datetime", "drop", "bias", "positive")}
    state.update(version=np.array(1), numeric=np.array(["amount"]))
    TableEncoder.from_state_dict(state)
    with pytest.raises(ValueError, match=r"unknown keys \['bias'\]"):
        TableEncoder.from_state_dict(dict(state, bias=np.array(True)))
    with pytest.raises(TypeError, match="a mapping"):
        TableEncoder.from_state_dict([("kind", "jcsol.TableEncoder")])


def test_the_command_line_refuses_a_hostile_csv_in_one_line(tmp_path, capsys):
    repeated = tmp_path / "repeated.csv"
    repeated.write_text("amount,country,amount,fraud\n1.5,FR,2.5,0\n3.0,DE,1.0,1\n")
    empty = tmp_path / "empty.csv"
    empty.write_text("amount,fraud\n")
    nanoseconds = tmp_path / "ns.csv"
    nanoseconds.write_text("ts,amount,fraud\n1709251200123456789,1,0\n1709251200123456790,2,1\n")
    for path, extra, message in (
        (repeated, [], r"\['amount'\] more than once"),
        (empty, [], "the table is empty"),
        (nanoseconds, ["--numeric", "ts,amount"], "numeric column 'ts' holds the integer 1709251200123456789 at row 0"),
    ):
        rc, out, err = run_cli(["run", "--data", str(path), "--label", "fraud", *extra], capsys)
        assert rc == 2
        assert out == ""
        assert len(err.strip().splitlines()) == 1, err
        assert re.search(message, err), err
