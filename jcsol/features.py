"""Tables in: data frames and dict records as hashed, online-scaled sparse rows.

A :class:`TableEncoder` turns a table — a pandas ``DataFrame``, a pyarrow ``Table`` or a list of dict records —
into :class:`jcsol.SparseRows` of dimension ``2**bits`` that ``jcsol.run`` (and every O(nnz) learner) consumes::

    enc = jcsol.TableEncoder(numeric=["amount", "age"], categorical=["merchant", "country"], bits=18,
                             label="fraud", positive="yes")
    y = enc.labels(frame)                     # the label column as ±1 ("yes" is +1)
    X = enc.fit_transform(frame, labels=y)    # rows in order; the running scaling learns as it goes
    res = jcsol.run(jcsol.ACOG(diagonal=True), X, y, perms=1)

**Hashing** (the hashing trick of Weinberger, Dasgupta, Langford, Smola, Attenberg, *Feature Hashing for Large
Scale Multitask Learning*, ICML 2009, as Vowpal Wabbit uses it). A categorical value ``v`` of column ``c`` is
the feature ``"c=v"``; a numeric column ``c`` is the feature ``"c"``. The feature's UTF-8 bytes are hashed by
MurmurHash3 (x86, 32 bits, seed ``seed``) to ``h``; its slot is ``h mod 2**bits`` (Vowpal Wabbit's mask of the
low bits) and its sign is ``-1`` if ``h``'s top bit is set, else ``+1`` (the sign of ``h`` read as a signed
32-bit integer, scikit-learn's ``FeatureHasher(alternate_sign=True)``). A categorical feature has value
``sign``, a numeric one ``sign · z`` with ``z`` its scaled value. Features of one row that fall into one slot
are summed into a single entry. The hash depends only on the bytes and the seed — never on Python's ``hash``
— so it is the same in every process and version.

**Values: one rule for records, pandas and Arrow** (``docs/tables.md`` has it in full). Categorical values are
written as text before hashing, each by its own type, whatever came before it in the column: strings as they are
(text that is not valid Unicode, a lone surrogate, is refused), booleans ``True``/``False`` (never merged with
``1``/``0``, which compare equal to them), integers of any size exactly in decimal, integral floats below
``2**53`` as integers (``3`` and ``3.0`` are both ``"3"``, so a frame whose column was upcast to float by a
missing value hashes like the records it came from), other floats by ``repr``, ``Decimal`` values as the
integers or floats they are, bytes decoded as UTF-8, anything else by ``str``. A float from ``2**53`` on is
refused (it may be an integer id that pandas rounded), and so are durations and values that are not single
values (lists, Arrow nested types). A numeric column takes numbers (booleans as 0 and 1, ``Decimal`` values as
floats) and refuses anything else and integers beyond ``2**53``, which float64 would round. A refusal names the
column, the value and its row (counted from 0 in the table's order).

**Online scaling.** Each numeric column keeps a running count, mean and (population) variance; in
:meth:`~TableEncoder.fit_transform`, row ``t`` is scaled with the statistics of rows ``1..t`` — itself and the
rows before it, never later ones: ``z_t = (x_t − mean_t) / std_t``, and ``z_t = 0`` while ``std_t = 0`` (so the
first row's numeric features are 0). :meth:`~TableEncoder.transform` scales with the statistics so far and
leaves them as they are. The statistics are sums of ``x − s`` and ``(x − s)²`` about a shift ``s`` (the
column's first value), accumulated in row order, so encoding a stream in one batch or in many gives the same
bits, and a saved encoder continues bit-identically. A value too large for them (its square overflows float64,
from about 1.34e154) is refused, naming its column, its row and itself, before the statistics change; where sums
of values near that limit overflow at a row, the value named is the largest of its column up to that row.

**Datetime columns** (``datetime=["ts"]``) become two categorical features each: the hour of day ``"ts.hour=H"``
(``H`` from 0 to 23) and the day of the week ``"ts.weekday=D"`` (``D`` from 0, Monday, to 6, Sunday: Python's
``datetime.weekday()``, pandas' ``dt.day_of_week``, Arrow's ``day_of_week``), hashed as categorical values are. The
hour is the wall-clock hour in the value's own time zone (an offset or zone is never converted to another); a date
without a time has hour 0. A column may hold pandas or Arrow timestamps or dates, Python ``datetime``/``date``
objects (pandas ``Timestamp`` included), ``numpy.datetime64`` values, or ISO 8601 text (``"2024-03-01"``,
``"2024-03-01T13:45:00+01:00"``: a date ``YYYY-MM-DD`` first, read by ``datetime.fromisoformat``); all three kinds
of table give the same features for the same moments. A missing value adds neither feature.

**Columns never guessed.** Columns are inferred (numeric dtypes numeric, the rest categorical) only when
``numeric`` and ``categorical`` are both empty, from the first table seen, leaving out the label, ``drop`` and
``datetime`` columns. Two kinds of column are then refused rather than encoded, naming each column and the ways
out (``drop=``, ``datetime=``, or the columns named with ``numeric=``/``categorical=``, encoded as declared):

* an **id**: a text or integer column whose values are all distinct, over a table of at least
  :data:`ID_MIN_ROWS` rows, none missing (hashed, each value would be a feature seen once: nothing to learn);
* a **datetime**: a pandas or Arrow timestamp or date dtype, or values that are all datetimes or ISO 8601 text
  (hashed as text, each moment would be a feature seen once).

:attr:`TableEncoder.columns` gives each column's kind (numeric, categorical, datetime, dropped). Every column
the encoder names, of every kind, dropped ones included, must be in each table it encodes: a name that matches no
column is refused, naming the table's columns.

**No label among the features.** Given the table's labels (``fit_transform(table, labels=y)``, as
:func:`load_table` and :class:`jcsol.Live` give them), the encoder refuses — before anything changes, naming the
column and the ways out (``label=``, ``drop=``) — every column it would encode (numeric or categorical, inferred
or declared) whose values are the labels: over the table's rows both classes present, every positive row holds
one value and every negative row another, none missing (a label column ``fraud`` of 0/1, ±1, ``True``/``False``
or ``"yes"``/``"no"`` left unnamed, or a copy of the label under another name). A learner would read each answer
from such a column. A column constant over a table of one class is no such column, nor one that differs from
the labels on a single row; and over a table of fewer than :data:`LABEL_MIN_ROWS` rows of a class (a live
stream's micro-batch) a feature can match the labels by chance, so none is refused there.

**Missing values** (``None``, NaN, a ``Decimal`` NaN, pandas' ``NA`` and ``NaT``, NumPy's ``NaT``, Arrow
nulls) contribute nothing: a missing numeric value is 0 and leaves the column's statistics unchanged; a missing
categorical value adds no feature.

**A table without rows** (an empty micro-batch: no records, a frame or Arrow table of 0 rows) encodes to 0 rows
of the encoder's dimension and changes nothing; its columns are not looked at (a list of no records has none).

**Rows** are L2-normalised after hashing (``normalize=True``, by :func:`jcsol.datasets.l2_normalize`, as
:func:`jcsol.datasets.load` does). Each row has one entry per column (``len(numeric) + len(categorical)``, and two
per datetime column), in column order, made padding (index 0, value 0) where a collision merged it into an earlier
entry or a value is missing, so a step costs O(columns) whatever ``bits`` is.

**Offset.** ``bias=True`` appends, after the normalisation, one more entry to every row: the constant 1 in slot
``2**bits``, past the hashed slots (no feature hashes there), so ``n_features = 2**bits + 1``
(:func:`jcsol.datasets.add_bias`). Without it, a row with no non-zero entry (every value missing, say) scores
exactly 0 and is predicted +1.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import itertools
import math
import numbers
import operator
import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from .datasets import add_bias, binarize, l2_normalize
from .stream import EXACT_INTEGERS, SparseRows, check_flags, first_not_a_number, inexact_integers

#: Version 2 adds ``datetime``, ``drop`` and ``bias``, version 3 ``positive``; a state of an earlier version is
#: read as having none of the settings added after it.
FORMAT_VERSION = 3
MAX_BITS = 30  # slots must fit int32 indices
#: An inferred text or integer column whose values are all distinct is refused as an id from this many rows on.
ID_MIN_ROWS = 20
#: A column whose values are the labels is refused over a table of at least this many rows of each class: over
#: fewer (a live stream's micro-batch of a few events), a feature can match the labels by chance.
LABEL_MIN_ROWS = 10
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)  # the start of the ISO 8601 text read as a datetime
_KIND = "jcsol.TableEncoder"
_STATE_KEYS_V2 = ("datetime", "drop", "bias")
_STATE_KEYS_V3 = ("positive",)
_STATE_KEYS = (
    "kind",
    "version",
    "bits",
    "seed",
    "normalize",
    "dtype",
    "label",
    "numeric",
    "categorical",
    "columns_fixed",
    "count",
    "shift",
    "sum",
    "sum_squares",
)


def _mmh3():
    try:
        import mmh3
    except ImportError:  # pragma: no cover - mmh3 is a dependency of the package
        raise ImportError("jcsol.features needs mmh3 (MurmurHash3): pip install mmh3") from None
    return mmh3


def hash_features(keys: Sequence[str], bits: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Slots and signs of feature names: ``(h mod 2**bits, −1 if h ≥ 2**31 else +1)`` with ``h`` the unsigned
    32-bit MurmurHash3 (x86) of the name's UTF-8 bytes under ``seed``. A name that is not valid Unicode (a lone
    surrogate, which has no UTF-8 bytes) is refused."""
    try:
        data = [key.encode("utf-8") for key in keys]
    except UnicodeEncodeError as err:
        raise ValueError(f"feature name {_shown(err.object)} is not valid Unicode (a lone surrogate)") from None
    h = np.fromiter(map(functools.partial(_mmh3().hash, seed=seed, signed=False), data), np.uint32, len(keys))
    index = (h & np.uint32((1 << bits) - 1)).astype(np.int64)
    sign = np.where(h >> np.uint32(31), -1.0, 1.0)
    return index, sign


class TableEncoder:
    """Hashes categorical columns and scales numeric columns online into sparse rows of dimension ``2**bits``.

    Args:
        numeric: the numeric columns, scaled online and hashed by name to one slot each.
        categorical: the categorical columns, hashed as ``"column=value"``.
        bits: ``2**bits`` hashed slots, ``1 <= bits <= 30``.
        seed: MurmurHash3 seed, ``0 <= seed < 2**32``.
        datetime: datetime columns, each hashed as its hour of day and day of the week (module docstring).
        drop: columns never encoded (ids, timestamps, free text), left out when the columns are inferred; like
            every column the encoder names, each must be in the tables it encodes (a name matching none is a typo).
        bias: append the constant 1 in slot ``2**bits`` to every row, after the normalisation
            (``n_features = 2**bits + 1``): the offset term.
        normalize: divide each row by its L2 norm.
        label: the label column: never a feature, and read by :meth:`labels`.
        positive: the label value(s) of the ``+1`` class, as :meth:`labels` takes them (a value or a list of
            values: text, numbers or booleans), used where :meth:`labels` is given none, and saved with the
            encoder; only with ``label``. ``None``: the label column's own rule (:meth:`labels`).
        dtype: float dtype of the rows' values.

    When ``numeric`` and ``categorical`` are both empty, the columns are inferred from the first table seen
    (real numeric dtypes numeric — booleans excepted —, the rest categorical; the label, ``drop`` and ``datetime``
    columns left out) and fixed from then on; a column that looks like an id or holds datetimes is then refused,
    not encoded (module docstring). Columns of a table that the encoder does not name are ignored.

    Given the labels (``fit_transform(table, labels=y)``), a column the encoder would encode whose values are the
    labels — the label column left unnamed, or a copy of it — is refused (module docstring): name it with
    ``label=`` or leave it out with ``drop=``.
    """

    def __init__(
        self,
        numeric: Sequence[str] = (),
        categorical: Sequence[str] = (),
        bits: int = 18,
        seed: int = 0,
        *,
        datetime: Sequence[str] = (),
        drop: Sequence[str] = (),
        bias: bool = False,
        normalize: bool = True,
        label: str | None = None,
        positive: Any = None,
        dtype: DTypeLike = np.float32,
    ) -> None:
        kinds = {
            kind: _names(option, names)
            for kind, option, names in (
                ("numeric", "numeric", numeric),
                ("categorical", "categorical", categorical),
                ("datetime", "datetime", datetime),
                ("dropped", "drop", drop),
            )
        }
        for (a, names_a), (b, names_b) in itertools.combinations(kinds.items(), 2):
            if set(names_a) & set(names_b):
                raise ValueError(f"columns {sorted(set(names_a) & set(names_b))} are both {a} and {b}")
        if isinstance(bits, bool) or not isinstance(bits, numbers.Integral) or not 1 <= bits <= MAX_BITS:
            raise ValueError(f"bits must be an integer in [1, {MAX_BITS}] (2**bits hashed slots), got {bits!r}")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**32:
            raise ValueError(f"seed must be an integer in [0, 2**32), got {seed!r}")
        if label is not None and not isinstance(label, str):
            raise TypeError(f"label must be a column name (str), got {label!r}")
        if label is not None and label in kinds["numeric"] + kinds["categorical"] + kinds["datetime"]:
            raise ValueError(f"the label column {label!r} cannot also be a feature column")
        if label is not None and label in kinds["dropped"]:
            raise ValueError(f"the label column {label!r} is never a feature: leave it out of drop")
        positive = _positive_of(positive)
        if positive is not None and label is None:
            raise ValueError(
                f"positive={positive!r} picks the +1 class of the label column: name it too, "
                "TableEncoder(..., label='COLUMN', positive=...)"
            )
        check_flags(bias=bias, normalize=normalize)
        try:
            float_dtype = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"dtype must be a float dtype, got {dtype!r}") from None
        if not np.issubdtype(float_dtype, np.floating):
            raise TypeError(f"dtype must be a float dtype, got {float_dtype}")
        self._bits: int = int(bits)
        self._seed: int = int(seed)
        self._datetime: tuple[str, ...] = kinds["datetime"]
        self._drop: tuple[str, ...] = kinds["dropped"]
        self._bias: bool = bool(bias)
        self._normalize: bool = bool(normalize)
        self._label: str | None = label
        self._positive: Any = positive
        self._dtype: np.dtype = float_dtype
        self._set_columns(kinds["numeric"], kinds["categorical"], fixed=bool(numeric or categorical))

    def _set_columns(self, numeric: tuple[str, ...], categorical: tuple[str, ...], fixed: bool) -> None:
        self._numeric: tuple[str, ...] = numeric
        self._categorical: tuple[str, ...] = categorical
        self._fixed: bool = fixed
        m = len(numeric)
        self._count: np.ndarray = np.zeros(m, np.int64)
        self._shift: np.ndarray = np.zeros(m, np.float64)
        self._sum: np.ndarray = np.zeros(m, np.float64)
        self._sum_squares: np.ndarray = np.zeros(m, np.float64)
        self._numeric_slots: tuple[np.ndarray, np.ndarray] = hash_features(numeric, self._bits, self._seed)

    def _with_columns(self, numeric: tuple[str, ...], categorical: tuple[str, ...]) -> TableEncoder:
        """A new encoder of these settings and columns, its statistics fresh."""
        return TableEncoder(
            numeric,
            categorical,
            self._bits,
            self._seed,
            datetime=self._datetime,
            drop=self._drop,
            bias=self._bias,
            normalize=self._normalize,
            label=self._label,
            positive=self._positive,
            dtype=self._dtype,
        )

    # -- configuration ------------------------------------------------------------------------------------------
    @property
    def numeric(self) -> tuple[str, ...]:
        return self._numeric

    @property
    def categorical(self) -> tuple[str, ...]:
        return self._categorical

    @property
    def datetime(self) -> tuple[str, ...]:
        return self._datetime

    @property
    def drop(self) -> tuple[str, ...]:
        return self._drop

    @property
    def columns(self) -> dict[str, str]:
        """Each column the encoder names, with its kind: ``"numeric"``, ``"categorical"``, ``"datetime"`` or
        ``"dropped"``, in that order (before the first table, inferred columns are not there yet)."""
        kinds = (
            ("numeric", self._numeric),
            ("categorical", self._categorical),
            ("datetime", self._datetime),
            ("dropped", self._drop),
        )
        return {column: kind for kind, names in kinds for column in names}

    @property
    def bits(self) -> int:
        return self._bits

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def bias(self) -> bool:
        return self._bias

    @property
    def normalize(self) -> bool:
        return self._normalize

    @property
    def label(self) -> str | None:
        return self._label

    @property
    def positive(self) -> Any:
        """The label value(s) of the ``+1`` class (a value, or a tuple of values of one kind), or ``None``."""
        return self._positive

    @property
    def n_features(self) -> int:
        """``2**bits``, and one more with ``bias``."""
        return (1 << self._bits) + self._bias

    @property
    def n_seen(self) -> np.ndarray:
        """Non-missing values seen so far, per numeric column."""
        return self._count.copy()

    @property
    def mean(self) -> np.ndarray:
        """Running mean of each numeric column (0 before its first value)."""
        n = np.maximum(self._count, 1)
        return np.where(self._count > 0, self._shift + self._sum / n, 0.0)

    @property
    def var(self) -> np.ndarray:
        """Running population variance of each numeric column (0 before its first value)."""
        n = np.maximum(self._count, 1)
        return np.where(self._count > 0, np.maximum(self._sum_squares / n - (self._sum / n) ** 2, 0.0), 0.0)

    def __repr__(self) -> str:
        return (
            f"TableEncoder(numeric={list(self._numeric)}, categorical={list(self._categorical)}, "
            f"bits={self._bits}, seed={self._seed}, datetime={list(self._datetime)}, drop={list(self._drop)}, "
            f"bias={self._bias}, normalize={self._normalize}, label={self._label!r}, positive={self._positive!r})"
        )

    # -- encoding -----------------------------------------------------------------------------------------------
    def fit_transform(self, table, labels=None) -> SparseRows:
        """The table's rows in order, each numeric value scaled with the statistics of the rows up to and
        including its own; the statistics keep what the table added.

        ``labels``: the table's labels, ``±1``, one per row (:meth:`labels` reads them from the label column).
        Given, a column the encoder would encode whose values are the labels is refused before anything changes,
        naming it and the ways out, ``label=`` and ``drop=`` (module docstring): over the table's rows both
        classes present (:data:`LABEL_MIN_ROWS` rows of each at least), every positive row holds one value and
        every negative row another, none missing."""
        return self._encode(table, update=True, labels=labels)

    def transform(self, table) -> SparseRows:
        """The table's rows scaled with the statistics so far, which stay as they are."""
        return self._encode(table, update=False)

    def labels(self, table, positive=None) -> np.ndarray:
        """The label column as int8 ±1. A numeric column follows :func:`jcsol.datasets.binarize` (the LIBSVM
        loader's rule): labels ``{-1, 1}``, ``{0, 1}`` or ``{1, 2}`` map by themselves (``1`` is ``+1``);
        otherwise ``positive`` (a number or a list of them; text such as ``"1"`` is read as a number) becomes
        ``+1`` and the rest ``−1``. A text column needs ``positive`` (a value or a list of values, compared as
        text). ``positive`` not given: the encoder's own (``TableEncoder(positive=...)``)."""
        if self._label is None:
            raise ValueError("this TableEncoder has no label column: TableEncoder(..., label='COLUMN')")
        if positive is None:
            positive = self._positive
        source = _adapt(table)
        if source.n_rows == 0:
            return np.zeros(0, np.int8)
        if self._label not in source.names:
            raise ValueError(f"label column {self._label!r} not in the table, whose columns are {source.names}")
        if source.is_numeric(self._label):
            values = source.numeric(self._label)
            missing = np.isnan(values)
            if positive is not None:
                positive = [_as_number(self._label, p) for p in np.atleast_1d(np.asarray(positive, dtype=object))]
        else:
            codes, uniques = source.factors(self._label)
            texts = [*_texts(self._label, codes, uniques), None]  # code −1: missing
            values = np.array(texts, dtype=object)[codes]
            missing = np.array([t is None for t in texts], dtype=bool)[codes]
            if positive is not None:
                texts = [_positive_text(p) for p in np.atleast_1d(np.asarray(positive, dtype=object))]
                if not texts:
                    raise ValueError(f"positive must be a label or a non-empty list of labels, got {positive!r}")
                positive = texts
        if missing.any():
            raise ValueError(
                f"label column {self._label!r} has {int(missing.sum())} missing value(s), the first at "
                f"row {int(np.argmax(missing))}"
            )
        if values.dtype != object:
            return binarize(values, positive)
        present = sorted(set(values.tolist()))
        if positive is None:
            raise ValueError(
                f"label column {self._label!r} holds text {present[:10]}; pass positive=<value> (here, or "
                "TableEncoder(..., positive=<value>)) to pick the +1 class against the rest"
            )
        absent = [p for p in positive if p not in present]
        if absent:
            raise ValueError(
                f"positive={absent}: not in the label column {self._label!r}, whose labels are {present[:10]}"
            )
        return np.where(np.isin(values, positive), 1, -1).astype(np.int8)

    def _encode(self, table, update: bool, labels=None) -> SparseRows:
        """The rows of ``table``; the columns (when inferred) and statistics are kept only once every row is
        encoded, so a refused table leaves the encoder as it was. With ``labels``, a column whose values are the
        labels is refused (:func:`_refuse_label_columns`)."""
        source = _adapt(table)
        positive_rows = None if labels is None else _positive_rows(labels, source.n_rows)
        if source.n_rows == 0:  # no rows, no columns to look at (a list of no records has none): nothing changes
            return self._no_rows()
        absent = [c for c in self._drop if c not in source.names]
        if absent:
            raise ValueError(f"drop names column(s) {absent} not in the table, whose columns are {source.names}")
        if self._fixed:
            rows, statistics = self._encode_source(source, update, positive_rows)
        else:
            numeric, categorical = self._infer(source)
            encoder = self._with_columns(numeric, categorical)
            rows, statistics = encoder._encode_source(source, update, positive_rows)
            if update:
                self._set_columns(numeric, categorical, fixed=True)
        if statistics is not None:
            self._count, self._shift, self._sum, self._sum_squares = statistics
        return rows

    def _no_rows(self) -> SparseRows:
        """The rows of a table without any: ``(0, entries)`` of this encoder's dimension."""
        entries = len(self._numeric) + len(self._categorical) + 2 * len(self._datetime)
        rows = SparseRows(np.zeros((0, entries), np.int32), np.zeros((0, entries), self._dtype), 1 << self._bits)
        return add_bias(rows) if self._bias else rows

    def _infer(self, source: _Source) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The numeric and categorical columns of the table (module docstring), refusing ids and datetimes."""
        skip = {self._label, *self._drop, *self._datetime}
        numeric: list[str] = []
        categorical: list[str] = []
        refused: dict[str, str] = {}
        times: list[str] = []
        for column in source.names:
            if not isinstance(column, str) or column in skip:
                continue
            _check_name(column)
            if source.is_numeric(column):
                why = _looks_like_id(source, column) if source.is_integer(column) else None
                kind = numeric
            else:
                why = source.datetime_kind(column)
                times += [column] if why else []
                why = why or _looks_like_id(source, column)
                kind = categorical
            if why:
                refused[column] = why
            else:
                kind.append(column)
        if refused:
            ways = [f"Drop them: drop={list(refused)} (--drop {','.join(refused)})"]
            if times:
                ways.append(
                    f"encode the datetimes as hour of day and day of week: datetime={times} (--datetime "
                    f"{','.join(times)})"
                )
            ways.append(
                "or name the columns to encode with their kinds, each encoded as declared: numeric=[...], "
                "categorical=[...] (--numeric, --categorical)"
            )
            raise ValueError(
                "column(s) that jcsol never encodes without being told: "
                + "; ".join(f"{c!r} {why}" for c, why in refused.items())
                + ". "
                + "; ".join(ways)
            )
        if not numeric and not categorical and not self._datetime:
            raise ValueError(f"no feature columns to infer: the table has only {source.names}")
        return tuple(numeric), tuple(categorical)

    def _encode_source(
        self, source: _Source, update: bool, positive_rows: np.ndarray | None = None
    ) -> tuple[SparseRows, tuple | None]:
        """The rows, and with ``update`` the numeric statistics after them (``None`` without), for the caller
        to keep: this encoder is left as it is. ``positive_rows`` (the rows labelled ``+1``, where the labels are
        given): a column whose values are the labels is refused first."""
        missing = [c for c in self._numeric + self._categorical + self._datetime if c not in source.names]
        if missing:
            raise ValueError(f"column(s) {missing} not in the table, whose columns are {source.names}")
        n, m = source.n_rows, len(self._numeric)
        hashed = [(c, *source.factors(c)) for c in self._categorical]  # every check before any update
        X = source.numeric_block(self._numeric) if m else None
        if positive_rows is not None:
            _refuse_label_columns(self._numeric, X, hashed, positive_rows, self._label)
        for column in self._datetime:
            hour, weekday = source.moments(column)
            hashed += [(f"{column}.hour", hour, list(range(24))), (f"{column}.weekday", weekday, list(range(7)))]
        index = np.zeros((n, m + len(hashed)), np.int64)
        value = np.zeros(index.shape, np.float64)
        statistics = None
        if X is not None:
            slot, sign = self._numeric_slots
            index[:, :m] = slot
            z, statistics = self._scale(X, update)
            value[:, :m] = z * sign
        if hashed:
            index[:, m:], value[:, m:] = self._hash_categories(hashed)
        index, value = _merge_collisions(index, value)
        if X is not None:
            _check_encodable(self._numeric, X, z, np.inf if self._normalize else np.finfo(self._dtype).max, update)
        if self._normalize:
            value = l2_normalize(value)
        rows = SparseRows(index.astype(np.int32), value.astype(self._dtype), 1 << self._bits)
        return (add_bias(rows) if self._bias else rows), statistics

    def _hash_categories(self, hashed: list) -> tuple[np.ndarray, np.ndarray]:
        """Slots and signs of the hashed features, ``(n, len(hashed))``, from ``(name, codes, uniques)`` per
        feature column (a categorical column, or a datetime column's hour or weekday): the distinct values of all
        of them hashed as ``"name=value"`` in one call, each once; a missing value (code −1) gets slot 0 and
        value 0."""
        keys, positions, offsets, total = [], [], [], 0
        for name, codes, uniques in hashed:
            for i, text in enumerate(_texts(name, codes, uniques)):
                if text is not None:
                    keys.append(f"{name}={text}")
                    positions.append(total + i)
            offsets.append(total)
            total += len(uniques)
        slot, sign = np.zeros(total + 1, np.int64), np.zeros(total + 1)  # the last entry: missing
        slot[positions], sign[positions] = hash_features(keys, self._bits, self._seed)
        codes = np.column_stack(
            [np.where(codes >= 0, codes + offset, total) for (_, codes, _), offset in zip(hashed, offsets)]
        )
        return slot[codes], sign[codes]

    @np.errstate(over="ignore", invalid="ignore")  # an overflow is refused by name: _check_encodable
    def _scale(self, X: np.ndarray, update: bool) -> tuple[np.ndarray, tuple | None]:
        """``(x − mean) / std`` of each value with the statistics including its row (``update``) or those so far,
        0 where missing or while the standard deviation is 0 (``inf`` where the statistics overflowed); and with
        ``update``, the statistics after the table, ``(count, shift, sum, sum_squares)``, which the caller keeps
        (``None`` without)."""
        present = ~np.isnan(X)
        shift = self._shift.copy()
        statistics = None
        if update:
            unset = (self._count == 0) & present.any(axis=0)
            first = np.argmax(present, axis=0)
            shift[unset] = X[first[unset], np.nonzero(unset)[0]]
            centred = np.where(present, X - shift, 0.0)
            count = self._count + np.cumsum(present, axis=0)
            # np.cumsum adds in row order, continuing from the stored sums (added to the first row before any
            # other): any split of a stream gives the same bits
            squares = centred * centred
            squares[0] += self._sum_squares
            sum_squares = np.cumsum(squares, axis=0)
            sums = centred.copy()
            sums[0] += self._sum
            sums = np.cumsum(sums, axis=0)
            statistics = (count[-1], shift, sums[-1], sum_squares[-1])
        else:
            centred = np.where(present, X - shift, 0.0)
            count, sums, sum_squares = self._count[None], self._sum[None], self._sum_squares[None]
        n = np.maximum(count, 1)
        mean = sums / n
        std = np.sqrt(np.maximum(sum_squares / n - mean * mean, 0.0))
        ok = present & (count > 0) & (std > 0)
        z = np.where(ok, (centred - mean) / np.where(ok, std, 1.0), 0.0)
        return np.where(present & ~np.isfinite(sum_squares), np.inf, z), statistics  # inf: overflowed

    # -- saving -------------------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, np.ndarray]:
        """Configuration and running statistics as arrays (no pickles), for ``np.savez`` and
        :meth:`from_state_dict`."""
        return {
            "kind": np.array(_KIND),
            "version": np.array(FORMAT_VERSION, np.int64),
            "bits": np.array(self._bits, np.int64),
            "seed": np.array(self._seed, np.int64),
            "normalize": np.array(self._normalize),
            "dtype": np.array(self._dtype.name),
            "label": np.array([] if self._label is None else [self._label], dtype=str),
            "positive": np.array([], dtype=str) if self._positive is None else np.array(self._positive),
            "numeric": np.array(self._numeric, dtype=str),
            "categorical": np.array(self._categorical, dtype=str),
            "datetime": np.array(self._datetime, dtype=str),
            "drop": np.array(self._drop, dtype=str),
            "bias": np.array(self._bias),
            "columns_fixed": np.array(self._fixed),
            "count": self._count.copy(),
            "shift": self._shift.copy(),
            "sum": self._sum.copy(),
            "sum_squares": self._sum_squares.copy(),
        }

    @classmethod
    def from_state_dict(cls, state: Mapping[str, np.ndarray]) -> TableEncoder:
        """The encoder :meth:`state_dict` described, every field checked (its type, shape and range, the
        statistics finite and consistent), a state of another kind or version refused, naming the field (a state
        of version 1, before ``datetime``, ``drop`` and ``bias``, is read as having none of them; one of version 1
        or 2, before ``positive``, as having ``positive=None``)."""
        if not isinstance(state, Mapping):
            raise TypeError(f"a TableEncoder state is a mapping of field → array, not a {type(state).__name__}")
        absent = [k for k in ("kind", "version") if k not in state]
        if absent:
            raise ValueError(f"not a TableEncoder state: keys {absent} are missing")
        kind = _state_text(state, "kind")
        if kind != _KIND:
            raise ValueError(f"not a TableEncoder state: its kind is {kind!r}")
        version = _state_integer(state, "version")
        if version not in range(1, FORMAT_VERSION + 1):
            raise ValueError(
                f"TableEncoder state of format version {version}; this jcsol reads version 1 to {FORMAT_VERSION}"
            )
        expected = (
            set(_STATE_KEYS)
            | (set(_STATE_KEYS_V2) if version > 1 else set())
            | (set(_STATE_KEYS_V3) if version > 2 else set())
        )
        absent = sorted(expected - set(state))
        if absent:
            raise ValueError(f"not a TableEncoder state of version {version}: keys {absent} are missing")
        unknown = sorted(map(str, set(state) - expected))
        if unknown:
            raise ValueError(f"TableEncoder state of version {version}: unknown keys {unknown}")
        later = version > 1
        numeric, categorical = _state_names(state, "numeric"), _state_names(state, "categorical")
        label = _state_names(state, "label")
        if len(label) > 1:
            raise ValueError(f"TableEncoder state: 'label' names {len(label)} columns; at most one")
        settings: dict[str, Any] = dict(
            bits=_state_integer(state, "bits"),
            seed=_state_integer(state, "seed"),
            datetime=_state_names(state, "datetime") if later else (),
            drop=_state_names(state, "drop") if later else (),
            bias=_state_flag(state, "bias") if later else False,
            normalize=_state_flag(state, "normalize"),
            label=label[0] if label else None,
            positive=_state_positive(state) if version > 2 else None,
            dtype=_state_text(state, "dtype"),
        )
        try:
            enc = cls(numeric, categorical, **settings)
        except (TypeError, ValueError) as err:  # the settings' own checks, each naming its field
            raise ValueError(f"TableEncoder state: {err}") from None
        fixed = _state_flag(state, "columns_fixed")
        if not fixed and (numeric or categorical):
            raise ValueError(
                "TableEncoder state: 'columns_fixed' is False, yet 'numeric' or 'categorical' names columns"
            )
        enc._set_columns(numeric, categorical, fixed=fixed)
        enc._count, enc._shift, enc._sum, enc._sum_squares = _state_statistics(state, len(numeric))
        return enc


def _state_array(state: Mapping, key: str, scalar: bool) -> np.ndarray:
    try:
        value = np.asarray(state[key])
    except Exception as err:  # an object NumPy cannot take
        raise ValueError(f"TableEncoder state: {key!r} is not an array: {err}") from None
    if scalar and value.shape != ():
        raise ValueError(f"TableEncoder state: {key!r} has shape {value.shape}, expected a scalar ()")
    return value


def _state_text(state: Mapping, key: str) -> str:
    value = _state_array(state, key, scalar=True)
    if value.dtype.kind != "U":
        raise ValueError(f"TableEncoder state: {key!r} must be text, got {value.dtype} {value.tolist()!r}")
    return str(value)


def _state_integer(state: Mapping, key: str) -> int:
    value = _state_array(state, key, scalar=True)
    if value.dtype.kind not in "iu":
        raise ValueError(f"TableEncoder state: {key!r} must be an integer, got {value.dtype} {value.tolist()!r}")
    return int(value)


def _state_flag(state: Mapping, key: str) -> bool:
    value = _state_array(state, key, scalar=True)
    if value.dtype.kind != "b":
        raise ValueError(f"TableEncoder state: {key!r} must be True or False, got {value.dtype} {value.tolist()!r}")
    return bool(value)


def _state_names(state: Mapping, key: str) -> tuple[str, ...]:
    value = _state_array(state, key, scalar=False)
    if value.ndim != 1 or (value.size and value.dtype.kind != "U"):
        raise ValueError(
            f"TableEncoder state: {key!r} must be a 1-D array of column names, got {value.dtype} of shape {value.shape}"
        )
    return tuple(str(v) for v in value.tolist())


def _state_positive(state: Mapping) -> Any:
    """``positive`` of a state: an empty 1-D array for ``None``, a scalar for one label, a 1-D array for a list
    of them (text, booleans, integers or floats)."""
    value = _state_array(state, "positive", scalar=False)
    if value.ndim == 1 and value.size == 0:
        return None
    if value.ndim > 1 or value.dtype.kind not in "Ubiuf":
        raise ValueError(
            "TableEncoder state: 'positive' must be a label or a 1-D array of labels (text, numbers or booleans), "
            f"got {value.dtype} of shape {value.shape}"
        )
    return value.item() if value.ndim == 0 else tuple(value.tolist())


def _state_statistics(state: Mapping, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``count, shift, sum, sum_squares`` of a state, each of shape ``(m,)``: counts non-negative integers, the
    rest finite real numbers, ``sum_squares`` non-negative, all three 0 where the count is."""
    arrays = {}
    for key in ("count", "shift", "sum", "sum_squares"):
        value = _state_array(state, key, scalar=False)
        if value.shape != (m,):
            raise ValueError(f"TableEncoder state: {key!r} has shape {value.shape}, expected ({m},)")
        kinds = "iu" if key == "count" else "iuf"
        if value.size and value.dtype.kind not in kinds:
            what = "integers" if key == "count" else "real numbers"
            raise ValueError(f"TableEncoder state: {key!r} must hold {what}, got {value.dtype}")
        arrays[key] = value
    count = arrays["count"]
    if (count < 0).any():
        raise ValueError(f"TableEncoder state: 'count' holds a negative count {int(count.min())}")
    if (count > np.iinfo(np.int64).max).any():
        raise ValueError(f"TableEncoder state: 'count' holds a count beyond int64 {int(count.max())}")
    count = count.astype(np.int64)
    shift, sums, sum_squares = (arrays[k].astype(np.float64) for k in ("shift", "sum", "sum_squares"))
    for key, value in (("shift", shift), ("sum", sums), ("sum_squares", sum_squares)):
        if not np.isfinite(value).all():
            raise ValueError(f"TableEncoder state: {key!r} holds a value that is not finite: {value.tolist()}")
    if (sum_squares < 0).any():
        raise ValueError("TableEncoder state: 'sum_squares' holds a negative sum of squares")
    unseen = count == 0
    if (shift[unseen] != 0).any() or (sums[unseen] != 0).any() or (sum_squares[unseen] != 0).any():
        raise ValueError("TableEncoder state: 'shift', 'sum' and 'sum_squares' must be 0 where 'count' is 0")
    return count, shift, sums, sum_squares


def _names(option: str, names) -> tuple[str, ...]:
    if isinstance(names, str):
        raise TypeError(f"{option} must be a list of column names, got the string {names!r} (write [{names!r}])")
    try:
        names = tuple(names)
    except TypeError:
        raise TypeError(f"{option} must be a list of column names, got {_shown(names)}") from None
    bad = [c for c in names if not isinstance(c, str)]
    if bad:
        raise TypeError(f"{option} column names must be strings, got {bad}")
    for name in names:
        _check_name(name, option)
    dup = sorted({c for c in names if names.count(c) > 1})
    if dup:
        raise ValueError(f"{option} names columns {dup} more than once")
    return names


def _check_name(name: str, option: str = "a table's") -> None:
    """Refuses a column name that is not valid Unicode (a lone surrogate has no UTF-8 bytes to hash)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{option} column name {_shown(name)} is not valid Unicode (a lone surrogate)") from None


def _merge_collisions(index: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The values of entries of one row that share a slot summed into the first of them (in column order), the
    others made padding (index 0, value 0): every slot appears once, as in a dense row."""
    if index.shape[1] < 2:
        return index, value
    ordered = np.sort(index, axis=1)
    rows = np.nonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))[0]
    if rows.size == 0:
        return index, value
    sub_index, sub_value = index[rows], value[rows]
    alive = np.ones(sub_index.shape, bool)
    for later in range(1, index.shape[1]):  # over pairs of columns, never over rows
        for first in range(later):
            hit = alive[:, first] & (sub_index[:, first] == sub_index[:, later])
            sub_value[hit, first] += sub_value[hit, later]  # at most one live earlier entry holds this slot
            alive[hit, later] = False
    index[rows], value[rows] = np.where(alive, sub_index, 0), np.where(alive, sub_value, 0.0)
    return index, value


def _factorize(column: str, values) -> tuple[np.ndarray, list]:
    """Codes into the distinct values, in order of first appearance (dict look-ups run in C, no Python loop).
    Numbers equal across kinds with different texts (``True == 1``, ``False == 0``, ``2**60 == 2.0**60``: a dict
    merges them under whichever came first) are kept apart by their kind, so each is hashed by its own text."""
    if isinstance(values, np.ndarray):
        values = values.tolist()  # one object per element, so a NaN finds itself again by identity
    keys = values
    if len(set(map(_number_kind, set(map(type, values)))) - {None}) > 1:
        keys = list(zip(map(_number_kind, map(type, values)), values))
    try:
        distinct = list(dict.fromkeys(keys))
    except TypeError:
        row = next(i for i, v in enumerate(values) if _unhashable(v))
        raise TypeError(
            f"column {column!r} holds {_shown(values[row])} at row {row}, which is no single value "
            "(strings, numbers, booleans, dates): give scalars, or drop the column"
        ) from None
    lookup = {u: i for i, u in enumerate(distinct)}
    codes = np.fromiter(map(lookup.__getitem__, keys), np.intp, len(values))
    return codes, [u[1] for u in distinct] if keys is not values else distinct


def _unhashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return True
    return False


def _is_bool_type(t: type) -> bool:
    return issubclass(t, (bool, np.bool_))


def _number_kind(t: type) -> str | None:
    """``"bool"``, ``"integer"`` or ``"number"`` (floats, decimals, …): kinds whose equal values are written as
    different texts; ``None`` for a type that is no number."""
    if _is_bool_type(t):
        return "bool"
    if issubclass(t, numbers.Integral):
        return "integer"
    return "number" if issubclass(t, (numbers.Number, decimal.Decimal)) else None


def _missing_types() -> set[type]:
    """Types whose every value is missing: ``None``'s and pandas' ``NA`` and ``NaT``."""
    pandas = sys.modules.get("pandas")
    return {type(None)} | ({type(pandas.NA), type(pandas.NaT)} if pandas is not None else set())


def _is_missing(value) -> bool:
    """``None``, a NaN (float, NumPy or ``Decimal``), pandas' ``NA`` and ``NaT``, NumPy's ``NaT``."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return math.isnan(value)
    if isinstance(value, decimal.Decimal):
        return value.is_nan()
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return bool(np.isnat(value))
    pandas = sys.modules.get("pandas")
    return pandas is not None and (value is pandas.NA or value is pandas.NaT)


def _shown(value) -> str:
    """A value for an error message: its ``repr``, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}… ({len(text)} characters)"


def _is_duration(value) -> bool:
    return isinstance(value, (dt.timedelta, np.timedelta64))


def _text(value) -> str | None:
    """A categorical value as the text that is hashed (module docstring); ``None`` when missing. A value no rule
    fits raises ``ValueError`` saying why."""
    if _is_missing(value):
        return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("text that is not valid Unicode (a lone surrogate): decode the source as UTF-8") from None
        return value
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, decimal.Decimal) and value.is_finite() and value == value.to_integral_value():
        return str(int(value))
    if isinstance(value, (numbers.Real, decimal.Decimal)):
        value = float(value)
        if abs(value) >= EXACT_INTEGERS:
            raise ValueError(
                "a float of 2**53 or more, where floats no longer hold every integer: it may be an integer id "
                "rounded on the way (pandas turns an integer column with a missing value into floats); give "
                "the column as integers (pandas' dtype 'Int64') or as text"
            )
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    if _is_duration(value):
        raise ValueError("a duration: give it as a number (of seconds, say) in a numeric column")
    return str(value)


def _texts(column: str, codes: np.ndarray, uniques: Sequence) -> list[str | None]:
    """The text of each distinct value of a column, a value no rule fits refused naming the column and its
    first row."""
    texts = []
    for i, value in enumerate(uniques):
        try:
            texts.append(_text(value))
        except ValueError as err:
            row = int(np.argmax(codes == i))
            raise ValueError(f"categorical column {column!r} holds {_shown(value)} at row {row}: {err}") from None
    return texts


def _positive_text(value) -> str | None:
    try:
        return _text(value)
    except ValueError as err:
        raise ValueError(f"positive={_shown(value)}: {err}") from None


def _positive_of(positive) -> Any:
    """``positive`` as an encoder keeps it: ``None``, one label (text, a boolean, an integer, a float), or a tuple
    of labels of one kind (integers and floats together as floats), each a Python value; anything else refused,
    naming it."""
    if positive is None:
        return None
    if isinstance(positive, np.ndarray) and positive.ndim == 0:
        positive = positive.item()
    if not isinstance(positive, (list, tuple, np.ndarray)):
        return _positive_label(positive)
    values = [_positive_label(v) for v in (positive.tolist() if isinstance(positive, np.ndarray) else positive)]
    if not values:
        raise ValueError(f"positive must be a label or a non-empty list of labels, got {positive!r}")
    kinds = {type(v) for v in values}
    if kinds == {int, float}:
        values = [float(v) for v in values]
    elif len(kinds) > 1:
        raise ValueError(
            f"positive={positive!r} mixes labels of several kinds ({', '.join(sorted(k.__name__ for k in kinds))}): "
            "give text, numbers or booleans"
        )
    return tuple(values)


def _positive_label(value) -> str | bool | int | float:
    """One label of ``positive`` as a Python value: text (valid Unicode), a boolean, an integer within int64 or
    a finite float."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, str):
        _positive_text(value)  # text that is not valid Unicode is refused
        return str(value)
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        if not -(2**63) <= int(value) < 2**63:
            raise ValueError(f"positive={_shown(value)}: an integer label beyond int64")
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(float(value)):
        return float(value)
    raise TypeError(f"positive must be a label (text, a number or a boolean) or a list of labels, got {_shown(value)}")


def _positive_rows(labels, n_rows: int) -> np.ndarray:
    """The rows labelled ``+1`` of ``labels``: ``±1``, one per row of a table of ``n_rows`` rows."""
    y = np.asarray(labels)
    if y.ndim != 1:
        raise ValueError(f"labels must be one ±1 label per row of the table (1-D), got shape {y.shape}")
    if len(y) != n_rows:
        raise ValueError(f"the table has {n_rows} rows but y has {len(y)} labels (labels=: one ±1 label per row)")
    if y.dtype.kind not in "iuf" or not np.isin(y, (-1, 1)).all():
        found = sorted({str(v) for v in y.tolist()})
        raise ValueError(f"labels must be -1 and +1, one per row of the table; got {found[:10]}")
    return y > 0


def _refuse_label_columns(
    numeric: Sequence[str], X: np.ndarray | None, categorical: Sequence, positive_rows: np.ndarray, label: str | None
) -> None:
    """Refuses the columns to encode whose values are the labels: both classes present (:data:`LABEL_MIN_ROWS` rows
    of each at least), every positive row of one value and every negative row of another, none missing. Each
    column is compared with its value on the first positive and the first negative row: ``numeric`` names the
    columns of ``X`` (float64, NaN missing), ``categorical`` holds ``(column, codes, uniques)`` of the categorical
    ones (codes −1 missing)."""
    pos = positive_rows
    n_pos = int(pos.sum())
    if min(n_pos, len(pos) - n_pos) < LABEL_MIN_ROWS:
        return  # one class (a constant column is no label), or too few rows of one to tell a label from chance
    first_pos, first_neg = int(np.argmax(pos)), int(np.argmax(~pos))
    found: list[tuple[str, Any, Any]] = []
    if X is not None and X.shape[1]:
        at_pos, at_neg = X[first_pos], X[first_neg]
        copies = (at_pos != at_neg) & np.where(pos[:, None], X == at_pos, X == at_neg).all(axis=0)  # NaN: never
        found += [(numeric[j], _number(at_pos[j]), _number(at_neg[j])) for j in np.flatnonzero(copies).tolist()]
    for column, codes, uniques in categorical:
        code_pos, code_neg = int(codes[first_pos]), int(codes[first_neg])
        if code_pos < 0 or code_neg < 0 or code_pos == code_neg:
            continue
        if not (codes == np.where(pos, code_pos, code_neg)).all():
            continue
        try:
            hashed_alike = _text(uniques[code_pos]) == _text(uniques[code_neg])  # 3 and 3.0: one feature
        except ValueError:
            continue  # a value no rule fits: refused by the encoding, naming it
        if not hashed_alike:
            found.append((column, *(_python(uniques[code]) for code in (code_pos, code_neg))))
    if not found:
        return
    names = [column for column, _, _ in found]
    held = "; ".join(
        f"{column!r} is {_shown(p)} on every positive row and {_shown(n)} on every negative one"
        for column, p, n in found
    )
    drop = f"drop={names} (--drop {','.join(names)})"
    if label is None:
        ways = f"Name the label column: label={names[0]!r} (--label {names[0]}), or leave it out: {drop}"
    else:
        ways = (
            f"The label column is {label!r}: leave the copy out, {drop}, or, if it is the label column, name it: "
            f"label={names[0]!r} (--label {names[0]})"
        )
    raise ValueError(f"column(s) holding the labels, which a learner would read each answer from: {held}. {ways}")


def _python(value) -> Any:
    """A NumPy scalar as the Python value it holds (for a message: ``1``, not ``np.int64(1)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _number(value: float) -> int | float:
    """A float as an error message shows it: an integer's digits when it is one."""
    value = float(value)
    return int(value) if value.is_integer() and abs(value) < EXACT_INTEGERS else value


def _as_number(column: str, value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"positive={value!r}: the label column {column!r} is numeric; give a number") from None


_NUMBER_TYPES = (numbers.Real, np.bool_, decimal.Decimal)


def _numeric_from_objects(column: str, values) -> np.ndarray:
    """Python objects of a numeric column as float64 (missing → NaN), refusing anything not a number and an
    integer beyond 2**53, naming the value and its row."""
    types = set(map(type, values))
    bad_types = {t for t in types if not (t is type(None) or issubclass(t, _NUMBER_TYPES))}
    if bad_types:
        missing = [_is_missing(v) for v in values]
        bad = [i for i, v in enumerate(values) if type(v) in bad_types and not missing[i]]
        if bad:
            row = first_not_a_number(values, bad)
            value = values[row]
            why = " (a duration: give it as a number of seconds, say)" if _is_duration(value) else ""
            raise ValueError(
                f"numeric column {column!r} holds the non-numeric value {_shown(value)} at row {row}{why}; list "
                "the column as categorical, or clean it"
            )
        values = [None if m else v for v, m in zip(values, missing)]
    try:
        X = np.array(values, dtype=np.float64)
    except (OverflowError, ValueError):  # an integer beyond float64, a signalling Decimal NaN
        X = np.array([_float_or_inf(v) for v in values], dtype=np.float64)
    _check_exact(column, X, values)
    return X


def _float_or_inf(value) -> float:
    try:
        return float(value) if value is not None else math.nan
    except OverflowError:
        return math.inf if value > 0 else -math.inf
    except (TypeError, ValueError):
        return math.nan


def _check_exact(column: str, X: np.ndarray, values) -> None:
    """Refuses an integer that float64 cannot hold exactly (beyond 2**53), naming the value and its row."""
    candidates = np.nonzero(np.abs(np.nan_to_num(X)) >= EXACT_INTEGERS)[0]
    for row in candidates.tolist():
        value = values[row]
        if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
            if abs(int(value)) > EXACT_INTEGERS:
                _refuse_inexact(column, value, row)


def _refuse_inexact(column: str, value, row: int) -> None:
    raise ValueError(
        f"numeric column {column!r} holds the integer {_shown(int(value))} at row {row}, beyond 2**53: float64 would "
        "round it. Give it in coarser units (seconds for epoch nanoseconds), declare it categorical=[…] "
        "(an id), or drop it"
    )


#: About 1.34e154: a value beyond it has a square beyond float64, which the running statistics cannot hold.
_SQUARE_LIMIT = math.sqrt(sys.float_info.max)


def _check_encodable(columns, X: np.ndarray, z: np.ndarray, limit: float, update: bool) -> None:
    """Refuses a numeric value too large to encode, naming its column, its row and itself: a scaled value that
    overflowed float64 or exceeds ``limit`` (the rows' dtype's largest number, when they are not normalised), and,
    where the statistics learn (``update``), a value whose square overflows float64 (beyond about 1.34e154). A
    running sum of squares can still overflow at a row whose own value is ordinary (values near the limit, summed):
    then the value named is the largest in magnitude of its column up to that row."""
    size = np.where(np.isnan(z), np.inf, np.abs(z))
    bad = np.isinf(size) | (size > limit)
    huge = np.abs(np.nan_to_num(X)) > _SQUARE_LIMIT if update else np.zeros(X.shape, bool)
    bad |= huge
    if bad.any():
        row = int(np.argmax(bad.any(axis=1)))
        j = int(np.argmax(bad[row]))
        if update and not huge[row, j]:  # the sums overflowed here: name the value that took them there
            row = int(np.argmax(np.abs(np.nan_to_num(X[: row + 1, j]))))
        raise ValueError(
            f"numeric column {columns[j]!r} has a value too large to encode at row {row} ({float(X[row, j])!r}): "
            "scaled, it overflows; give the column in larger units, or its logarithm"
        )


def _checked_numeric(column: str, values: np.ndarray) -> np.ndarray:
    infinite = np.isinf(values)
    if infinite.any():
        row = int(np.argmax(infinite))
        raise ValueError(
            f"numeric column {column!r} has {int(infinite.sum())} infinite value(s), the first at row {row} "
            f"({float(values[row])!r})"
        )
    return values


def _looks_like_id(source: _Source, column: str) -> str | None:
    """Why the column looks like an id (its values all distinct, none missing, over :data:`ID_MIN_ROWS` rows or
    more), else ``None``."""
    if source.n_rows < ID_MIN_ROWS:
        return None
    codes, uniques = source.factors(column)
    if len(uniques) != source.n_rows or (codes < 0).any():
        return None
    return f"looks like an id (its {source.n_rows} values are all distinct)"


def _iso_datetime(text: str) -> dt.datetime | None:
    """ISO 8601 text starting with a date ``YYYY-MM-DD`` as a ``datetime`` (by ``datetime.fromisoformat``), else
    ``None``."""
    if _ISO_DATE.match(text) is None:
        return None
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return None


def _moment(value) -> dt.date | None:
    """A datetime value as a ``datetime`` or ``date``; ``None`` when it is not one (nor ISO 8601 text)."""
    if isinstance(value, dt.date):  # datetime and pandas' Timestamp too
        return value
    if isinstance(value, np.datetime64):
        value = value.astype("datetime64[us]").item()  # an int where a datetime cannot hold the moment
        return value if isinstance(value, dt.datetime) else None
    if isinstance(value, str):
        return _iso_datetime(value)
    return None


def _hour_and_weekday(column: str, codes: np.ndarray, uniques: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """Hour of day and day of the week (Monday 0) of each row from codes into the distinct values, −1 where
    missing; a value that is no datetime is refused, naming its column and row."""
    hours, weekdays = np.full(len(uniques) + 1, -1), np.full(len(uniques) + 1, -1)  # the last entry: missing
    for i, value in enumerate(uniques):
        if _is_missing(value):
            continue
        moment = _moment(value)
        if moment is None:
            row = int(np.argmax(codes == i))
            raise ValueError(
                f"datetime column {column!r} holds {value!r} at row {row}, which is not a datetime: give "
                "datetimes, dates or ISO 8601 text (YYYY-MM-DD[THH:MM[:SS]][offset])"
            )
        hours[i] = moment.hour if isinstance(moment, dt.datetime) else 0
        weekdays[i] = moment.weekday()
    return hours[codes], weekdays[codes]


class _Source:
    """A table seen column by column: ``names``, ``n_rows``, ``is_numeric(c)``, ``is_integer(c)``, ``numeric(c)``
    (float64, NaN missing, every value checked), ``numeric_block(columns)`` (their ``(n, m)`` array),
    ``objects(c)`` (a sequence of Python values), ``factorize(c)`` (codes into the distinct values, −1 where
    missing; each source its fastest way; ``factors(c)`` keeps them for the call), ``datetime_kind(c)`` (what makes
    a column a datetime, or ``None``) and ``moments(c)`` (hour of day and day of the week, −1 where missing)."""

    names: list
    n_rows: int

    def is_numeric(self, column: str) -> bool:
        return _all_numbers(self.objects(column), numbers.Real)

    def is_integer(self, column: str) -> bool:
        return _all_numbers(self.objects(column), numbers.Integral)

    def numeric(self, column: str) -> np.ndarray:
        return _checked_numeric(column, _numeric_from_objects(column, self.objects(column)))

    def objects(self, column: str) -> Sequence:
        raise NotImplementedError

    def numeric_block(self, columns) -> np.ndarray:
        return np.column_stack([self.numeric(c) for c in columns])

    def factorize(self, column) -> tuple[np.ndarray, list]:
        return _factorize(column, self.objects(column))

    @functools.cached_property
    def _factors(self) -> dict[str, tuple[np.ndarray, list]]:
        return {}

    def factors(self, column) -> tuple[np.ndarray, list]:
        if column not in self._factors:
            self._factors[column] = self.factorize(column)
        return self._factors[column]

    def datetime_kind(self, column: str) -> str | None:
        """``"holds datetimes (…)"`` when every value present is a datetime, a date or ISO 8601 text."""
        _, uniques = self.factors(column)
        present = [u for u in uniques if not _is_missing(u)]
        if not present or (isinstance(present[0], str) and _ISO_DATE.match(present[0]) is None):
            return None  # the common case of text, told at its first value
        if all(isinstance(u, (dt.date, np.datetime64)) for u in present):
            return "holds datetimes (datetime values)"
        if all(isinstance(u, str) and _iso_datetime(u) is not None for u in present):
            return "holds datetimes (ISO 8601 text)"
        return None

    def moments(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        return _hour_and_weekday(column, *self.factors(column))


def _all_numbers(values, kind: type) -> bool:
    """Whether the values present are all numbers of ``kind`` (``Decimal`` counted as real) and not booleans."""
    types = set(map(type, values)) - _missing_types()
    kinds = (kind, decimal.Decimal) if kind is numbers.Real else (kind,)
    return bool(types) and all(issubclass(t, kinds) and not _is_bool_type(t) for t in types)


class _Pandas(_Source):
    def __init__(self, frame):
        self.frame, self.names, self.n_rows = frame, list(frame.columns), len(frame)
        if not frame.columns.is_unique:
            duplicated = frame.columns[frame.columns.duplicated()].unique().tolist()
            raise ValueError(f"the data frame has duplicate column names: {duplicated}")

    def _dtype(self, column):
        return self.frame[column].dtype

    def is_numeric(self, column):
        from pandas.api.types import is_bool_dtype, is_complex_dtype, is_numeric_dtype, is_object_dtype

        dtype = self._dtype(column)
        if is_object_dtype(dtype):
            return super().is_numeric(column)  # numbers in an object column, as records hold them
        return is_numeric_dtype(dtype) and not is_bool_dtype(dtype) and not is_complex_dtype(dtype)

    def is_integer(self, column):
        from pandas.api.types import is_bool_dtype, is_integer_dtype, is_object_dtype

        dtype = self._dtype(column)
        if is_object_dtype(dtype):
            return super().is_integer(column)
        return is_integer_dtype(dtype) and not is_bool_dtype(dtype)

    def _is_datetime_dtype(self, column) -> bool:
        from pandas.api.types import is_datetime64_any_dtype

        return is_datetime64_any_dtype(self._dtype(column))

    def datetime_kind(self, column):
        if self._is_datetime_dtype(column):
            return f"holds datetimes (pandas dtype {self._dtype(column)})"
        return super().datetime_kind(column)

    def moments(self, column):
        if not self._is_datetime_dtype(column):
            return super().moments(column)
        stamps = self.frame[column].dt
        hour, weekday = (
            np.nan_to_num(part.to_numpy(dtype=np.float64, na_value=np.nan), nan=-1.0).astype(np.int64)
            for part in (stamps.hour, stamps.day_of_week)
        )
        return hour, weekday

    def numeric(self, column):
        from pandas.api.types import is_bool_dtype, is_complex_dtype, is_float_dtype, is_integer_dtype

        series = self.frame[column]
        if is_complex_dtype(series.dtype):
            raise ValueError(f"numeric column {column!r} holds complex numbers; give their real parts, or clean it")
        if is_integer_dtype(series.dtype) and not is_bool_dtype(series.dtype):
            beyond = (series > EXACT_INTEGERS) | (series < -EXACT_INTEGERS)
            if beyond.any():
                row = int(np.argmax(beyond.to_numpy(dtype=bool, na_value=False)))
                _refuse_inexact(column, series.iloc[row], row)
        elif not (is_float_dtype(series.dtype) or is_bool_dtype(series.dtype)):
            return super().numeric(column)  # objects, datetimes, text: each value checked, named where refused
        return _checked_numeric(column, series.to_numpy(dtype=np.float64, na_value=np.nan))

    def objects(self, column):
        return self.frame[column].to_numpy(dtype=object)

    def factorize(self, column):
        import pandas as pd
        from pandas.api.types import is_object_dtype

        series = self.frame[column]
        if is_object_dtype(series.dtype):
            return super().factorize(column)  # pandas' own merges 1 and True
        try:
            codes, uniques = pd.factorize(series, use_na_sentinel=True)
        except (TypeError, ValueError, NotImplementedError):  # values pandas cannot factorize (Arrow lists, …)
            return super().factorize(column)  # refused, naming the value and its row
        return codes, list(uniques)


#: Arrow types that hold several values per row; a column of one is refused.
def _is_nested(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_nested(kind) or pa.types.is_union(kind)


class _Arrow(_Source):
    def __init__(self, table):
        self.table, self.names, self.n_rows = table, list(table.column_names), table.num_rows
        duplicated = sorted({c for c in self.names if self.names.count(c) > 1})
        if duplicated:
            raise ValueError(f"the Arrow table has duplicate column names: {duplicated}")

    def _type(self, column):
        import pyarrow as pa

        kind = self.table.schema.field(column).type
        return kind, pa.types

    def _column(self, column):
        """The column, a dictionary-encoded one decoded."""
        import pyarrow as pa

        col = self.table.column(column)
        return col.cast(col.type.value_type) if pa.types.is_dictionary(col.type) else col

    def is_numeric(self, column):
        kind, types = self._type(column)
        return types.is_integer(kind) or types.is_floating(kind) or types.is_decimal(kind)

    def is_integer(self, column):
        kind, types = self._type(column)
        return types.is_integer(kind)

    def datetime_kind(self, column):
        kind, types = self._type(column)
        if types.is_timestamp(kind) or types.is_date(kind):
            return f"holds datetimes (Arrow type {kind})"
        return super().datetime_kind(column)

    def moments(self, column):
        import pyarrow.compute as pc

        col = self._column(column)
        types = self._type(column)[1]
        if not (types.is_timestamp(col.type) or types.is_date(col.type)):
            return super().moments(column)
        weekday = pc.day_of_week(col).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        if types.is_date(col.type):  # a date has hour 0
            return np.where(weekday >= 0, 0, -1), weekday
        return pc.hour(col).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64), weekday

    def numeric(self, column):
        import pyarrow as pa

        col = self._column(column)
        types = pa.types
        if types.is_integer(col.type):
            exact = col.fill_null(0).to_numpy()  # int64 or uint64: every value as it is
            beyond = inexact_integers(exact)
            if beyond.any():
                row = int(np.argmax(beyond))
                _refuse_inexact(column, exact[row], row)
            values = np.where(col.is_null().to_numpy(zero_copy_only=False), np.nan, exact.astype(np.float64))
        elif types.is_floating(col.type) or types.is_decimal(col.type) or types.is_boolean(col.type):
            try:
                values = col.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False)
            except pa.ArrowException as err:
                raise ValueError(f"numeric column {column!r} of Arrow type {col.type} is not float64: {err}") from None
        elif types.is_null(col.type):
            values = np.full(len(col), np.nan)
        else:
            return super().numeric(column)  # text, timestamps, nested values: refused, naming the value and row
        return _checked_numeric(column, np.asarray(values, dtype=np.float64))

    def objects(self, column):
        return _python_values(column, self._column(column))

    def factorize(self, column):
        import pyarrow as pa

        col = self._column(column)
        if _is_nested(col.type):
            raise TypeError(
                f"column {column!r} has the Arrow type {col.type}, not one of single values (nested, or a "
                "union): give scalars, or drop the column"
            )
        try:
            encoded = col.combine_chunks().dictionary_encode()
        except pa.ArrowNotImplementedError:
            return super().factorize(column)
        codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.intp)
        return codes, _python_values(column, encoded.dictionary, codes)


def _python_values(column: str, array, codes: np.ndarray | None = None) -> list:
    """An Arrow array's values as Python objects; a date or time beyond Python's (years 1 to 9999) is refused,
    naming the column and its row (through ``codes`` when the array holds a column's distinct values)."""
    import pyarrow.compute as pc

    try:
        return array.to_pylist()
    except OverflowError:
        years = pc.year(array).to_numpy(zero_copy_only=False)
        where = int(np.argmax((years < 1) | (years > 9999)))
        row = where if codes is None else int(np.argmax(codes == where))
        raise ValueError(
            f"column {column!r} holds a moment of the year {int(years[where])} at row {row}, beyond Python's dates "
            "(years 1 to 9999)"
        ) from None


class _Records(_Source):
    def __init__(self, records: Sequence) -> None:
        self.records, self.n_rows = records, len(records)
        if not all(issubclass(t, Mapping) for t in set(map(type, records))):
            row = next(i for i, r in enumerate(records) if not isinstance(r, Mapping))
            raise TypeError(f"records must be dicts (column → value); row {row} is a {type(records[row]).__name__}")
        self.names = list(dict.fromkeys(itertools.chain.from_iterable(records)))
        self._columns: dict[str, list] = {}

    def objects(self, column):
        if column not in self._columns:
            self._columns[column] = list(map(operator.methodcaller("get", column), self.records))
        return self._columns[column]

    def numeric_block(self, columns):
        values = [self.objects(c) for c in columns]
        types = set(map(type, itertools.chain.from_iterable(values)))
        if all(t is float or t is int or t is type(None) for t in types):  # the common case, in one go
            try:
                X = np.array(values, dtype=np.float64).T
            except OverflowError:  # an integer beyond float64: refused by name below
                return super().numeric_block(columns)
            if np.isinf(X).any() or (np.abs(np.nan_to_num(X)) >= EXACT_INTEGERS).any():
                return super().numeric_block(columns)  # per column, to name the column and row at fault
            return X
        return super().numeric_block(columns)


def _adapt(table) -> _Source:
    module = type(table).__module__.split(".")[0]
    if module == "pandas" and type(table).__name__ == "DataFrame":
        return _Pandas(table)
    if module == "pyarrow" and type(table).__name__ == "Table":
        return _Arrow(table)
    if isinstance(table, (list, tuple)):
        return _Records(table)
    raise TypeError(
        f"a table is a pandas DataFrame, a pyarrow Table or a list of dict records, not a "
        f"{type(table).__module__}.{type(table).__name__}"
    )


def read_table(path: str | os.PathLike):
    """A CSV file (plain or compressed, via pandas) or a Parquet file (via pyarrow) as a table.

    A CSV is read with pandas' nullable dtypes (``dtype_backend="numpy_nullable"``), so that an integer column with
    a missing value stays integers (``Int64``) rather than floats that round integers beyond 2**53; a header that
    names a column twice is refused (pandas would rename the copy ``x.1``). A damaged file (a truncated compressed
    CSV, a file that is no Parquet) is refused with a ``ValueError`` naming it."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no table {path!r}: no such file")
    if os.path.isdir(path):
        raise IsADirectoryError(f"no table {path!r}: it is a folder")
    if path.endswith((".parquet", ".pq")):
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ImportError("reading Parquet needs pyarrow: pip install pyarrow (or jcsol[tables])") from None
        try:
            return pq.read_table(path)
        except (pa.ArrowException, OSError) as err:
            raise ValueError(f"{path}: not a readable Parquet table: {err}") from None
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("reading CSV needs pandas: pip install pandas (or jcsol[tables])") from None
    try:
        names = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False).iloc[0].tolist()
        repeated = sorted({name for name in names if name and names.count(name) > 1})  # blanks: "Unnamed: i"
        if repeated:
            raise ValueError(
                f"{path}: the header names column(s) {repeated} more than once (pandas would rename the copy "
                f"{repeated[0]!r} to {repeated[0] + '.1'!r}): give each column its own name"
            )
        return pd.read_csv(path, dtype_backend="numpy_nullable")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, EOFError) as err:
        raise ValueError(f"{path}: not a readable CSV table: {err}") from None
    except OSError as err:  # a damaged compressed file
        if isinstance(err, PermissionError):
            raise
        raise ValueError(f"{path}: not a readable CSV table: {err}") from None


def load_table(
    path_or_table,
    label: str,
    *,
    positive=None,
    numeric: Sequence[str] = (),
    categorical: Sequence[str] = (),
    bits: int = 18,
    seed: int = 0,
    datetime: Sequence[str] = (),
    drop: Sequence[str] = (),
    bias: bool = False,
    normalize: bool = True,
) -> tuple[SparseRows, np.ndarray, TableEncoder]:
    """A labelled table (a file as :func:`read_table` reads it, or a table) as ``(X, y, encoder)``: the rows
    encoded in order by a new :class:`TableEncoder` of these settings (columns inferred when neither list is
    given, ids and datetimes refused unless dropped or declared), the labels as ±1 by
    :meth:`TableEncoder.labels` (``positive`` kept by the encoder), and the encoder, whose statistics have seen the
    whole table and whose :attr:`~TableEncoder.columns` say how each column was taken. A column it would encode
    whose values are the labels — a copy of the label under another name — is refused, naming it
    (:meth:`TableEncoder.fit_transform` given the labels)."""
    encoder = TableEncoder(
        numeric,
        categorical,
        bits,
        seed,
        datetime=datetime,
        drop=drop,
        bias=bias,
        normalize=normalize,
        label=label,
        positive=positive,
    )  # first: bad settings are refused before the file is read
    table = read_table(path_or_table) if isinstance(path_or_table, (str, os.PathLike)) else path_or_table
    if _adapt(table).n_rows == 0:
        raise ValueError("the table is empty: it has no rows to learn from")
    y = encoder.labels(table)  # a missing label column is refused before any encoding
    return encoder.fit_transform(table, labels=y), y, encoder  # a copy of the label under another name refused
