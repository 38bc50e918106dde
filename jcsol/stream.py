"""The data a run consumes: dense rows or fixed-width sparse rows, and the checks made before a run.

Every check here raises with a message that names the problem, so bad input never reaches a compiled scan
(where a NaN would silently poison every later round).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple, Self, overload

import numpy as np


class _SparseRowsFields(NamedTuple):
    indices: np.ndarray
    values: np.ndarray
    n_features: int


class SparseRows(_SparseRowsFields):
    """Rows as fixed-width ``(indices, values)`` pairs, padded with index 0 and value 0.

    Attributes:
        indices: ``(n, k)`` int32 column indices (0-based).
        values: ``(n, k)`` floats; padding entries are 0, so they add nothing to any dot product.
        n_features: the dimension ``d`` of the dense rows.

    Rows are selected as NumPy selects them, and stay sparse rows: ``X[i:j]``, ``X[order]`` (an integer array)
    and ``X[mask]`` (a boolean array of ``len(X)``) are :class:`SparseRows`; ``len(X)`` is the number of rows.
    ``X[i]`` with one integer is refused (a :class:`TypeError`): one row is ``X[i : i + 1]`` or ``X[[i]]``, and
    the fields are ``X.indices``, ``X.values`` and ``X.n_features``. The three fields are still those of a named
    tuple for iteration and unpacking (``indices, values, d = X``).

    >>> import numpy as np, jcsol
    >>> X = jcsol.SparseRows(np.array([[0, 2], [1, 0], [2, 0]]), np.array([[1.0, 2.0], [3.0, 0.0], [4.0, 0.0]]), 3)
    >>> len(X), X[1:].todense().tolist(), X[np.array([True, False, True])].indices.tolist()
    (3, [[0.0, 3.0, 0.0], [0.0, 0.0, 4.0]], [[0, 2], [2, 0]])
    """

    __slots__ = ()

    def __len__(self) -> int:
        return self.indices.shape[0]

    def __getitem__(self, rows: Any) -> SparseRows:  # type: ignore[override]
        if isinstance(rows, (int, np.integer)):  # bool is an int too
            raise TypeError(
                f"SparseRows[{rows!r}]: one integer selects no rows here; row i as SparseRows is X[i : i + 1] or "
                "X[[i]], and the fields are X.indices, X.values and X.n_features"
            )
        if not isinstance(rows, slice):
            key = np.asarray(rows)
            if key.size == 0:
                key = key.astype(np.intp)  # [] reads as float64
            if key.ndim != 1 or key.dtype.kind not in "iub":
                raise TypeError(
                    "SparseRows selects rows only, by a slice, a 1-D integer array or a 1-D boolean mask; got "
                    f"{type(rows).__name__}" + (f" of shape {key.shape} and dtype {key.dtype}" if key.ndim else "")
                )
            rows = key
        return SparseRows(self.indices[rows], self.values[rows], self.n_features)

    # len() counts rows, so the named tuple's own helpers, which count fields with it, are given their fields here
    @classmethod
    def _make(cls, iterable: Iterable[Any]) -> Self:  # type: ignore[override]
        fields = tuple(iterable)
        if len(fields) != 3:
            raise TypeError(f"SparseRows takes 3 fields (indices, values, n_features), got {len(fields)}")
        return cls(*fields)

    def __getnewargs__(self) -> tuple[np.ndarray, np.ndarray, int]:
        return (self.indices, self.values, self.n_features)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.indices.shape[0], self.n_features)

    @classmethod
    def from_scipy(cls, matrix) -> SparseRows:
        """The rows of a SciPy sparse matrix or array (CSR, CSC, COO, …): each row's stored entries in column
        order, duplicates summed (as the matrix means them), padded to the longest row."""
        csr = matrix.tocsr(copy=True)
        csr.sum_duplicates()  # also sorts each row's columns
        n, d = csr.shape
        counts = np.diff(csr.indptr)
        width = max(int(counts.max(initial=0)), 1)
        rows = np.repeat(np.arange(n), counts)
        slots = np.arange(csr.nnz) - np.repeat(csr.indptr[:-1], counts)
        indices = np.zeros((n, width), np.int64)
        values = np.zeros((n, width), csr.dtype)
        indices[rows, slots], values[rows, slots] = csr.indices, csr.data
        return cls(indices, values, int(d))

    def to_scipy(self):
        """The rows as a SciPy CSR matrix, the padding's zeros stored (the inverse of :meth:`from_scipy` up to
        them): a product with dense weights then costs O(nnz)."""
        import scipy.sparse

        n, width = np.shape(self.indices)
        row_starts = np.arange(0, n * width + 1, width)
        return scipy.sparse.csr_matrix(
            (np.asarray(self.values).ravel(), np.asarray(self.indices).ravel(), row_starts), shape=self.shape
        )

    def todense(self) -> np.ndarray:
        out = np.zeros(self.shape, self.values.dtype)
        rows = np.repeat(np.arange(self.shape[0]), self.indices.shape[1])
        np.add.at(out, (rows, self.indices.ravel()), self.values.ravel())
        return out


@overload
def check_features(X: SparseRows, *, columns_once: bool = True) -> SparseRows: ...
@overload
def check_features(X: Any, *, columns_once: bool = True) -> np.ndarray | SparseRows: ...
def check_features(X: Any, *, columns_once: bool = True) -> np.ndarray | SparseRows:
    """``X`` as a 2-D float array (or :class:`SparseRows`), refusing NaN and infinite values.

    ``columns_once=False`` accepts sparse rows naming a column twice: what scoring alone needs, since a score
    adds a row's entries as its dense row would, where learning also takes norms entry by entry. A SciPy sparse
    matrix or array becomes :class:`SparseRows` (:meth:`SparseRows.from_scipy`).
    """
    if is_scipy_sparse(X):
        X = SparseRows.from_scipy(X)
    if isinstance(X, SparseRows):
        values = np.asarray(X.values)
        indices = np.asarray(X.indices)
        if values.shape != indices.shape or values.ndim != 2:
            raise ValueError(f"SparseRows: indices {indices.shape} and values {values.shape} must be equal 2-D shapes")
        if indices.dtype.kind not in "iu":
            raise TypeError(f"SparseRows: indices must be integers, got dtype {indices.dtype}")
        if (
            isinstance(X.n_features, bool)
            or not isinstance(X.n_features, (int, np.integer))
            or not 1 <= X.n_features < 2**31
        ):
            raise ValueError(
                f"SparseRows: n_features must be an integer in [1, 2**31) (int32 indices), got {X.n_features!r}"
            )
        if values.dtype.kind not in "iuf":
            raise TypeError(f"SparseRows: values must be real numbers, got dtype {values.dtype}")
        if values.size > FEW_ENTRIES or not _few_entries_pass(indices, values, X.n_features, columns_once):
            if indices.size and (indices.min() < 0 or indices.max() >= X.n_features):
                raise ValueError(f"SparseRows: indices must lie in [0, {X.n_features})")
            _check_finite(values)
            if columns_once:
                _check_unique_columns(indices, values)
        return SparseRows(indices.astype(np.int32), values, int(X.n_features))
    X = as_numbers(X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (examples × features), got shape {X.shape}")
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
        raise TypeError(f"X must hold real numbers, got dtype {X.dtype}")
    if X.shape[1] == 0:
        raise ValueError(f"X has no features (shape {X.shape})")
    _check_finite(X)
    return X


#: Integers beyond this magnitude are rounded by float64 (and so by every dtype jcsol computes in): a column of
#: them is an id or a timestamp in nanoseconds, no feature.
EXACT_INTEGERS = 2**53


def inexact_integers(values: np.ndarray) -> np.ndarray:
    """Where ``values`` holds an integer that float64 would round, beyond ±:data:`EXACT_INTEGERS` (a boolean mask
    of its shape): a NumPy integer array at once, Python or NumPy ints of an object array one by one (bools are
    no integers here); arrays of other dtypes hold none."""
    if values.dtype.kind in "iu":
        beyond = values > EXACT_INTEGERS
        if values.dtype.kind == "i":
            beyond |= values < -EXACT_INTEGERS
        return beyond
    if values.dtype == object:
        return np.frompyfunc(
            lambda v: (
                isinstance(v, (int, np.integer))
                and not isinstance(v, (bool, np.bool_))
                and abs(int(v)) > EXACT_INTEGERS
            ),
            1,
            1,
        )(values).astype(bool)
    return np.zeros(values.shape, bool)


def _refuse_inexact_integers(values: np.ndarray, what: str) -> None:
    """Refuses integers (a NumPy integer array, or Python ints in an object array) beyond :data:`EXACT_INTEGERS`,
    naming the first, its row and, for a matrix, its column."""
    beyond = inexact_integers(values)
    if beyond.any():
        at = np.unravel_index(int(np.argmax(beyond)), values.shape)
        where = f"row {at[0]}, column {at[1]}" if len(at) == 2 else f"row {at[0]}"
        raise ValueError(
            f"{what} holds the integer {values[at]} at {where}, beyond 2**53: float64 cannot hold it exactly; an id "
            "or a timestamp in nanoseconds is no feature: drop the column, or convert it to a number of useful scale"
        )


def as_numbers(values: Any, what: str) -> np.ndarray:
    """``values`` as a NumPy array, refusing with a message naming ``what`` what NumPy would refuse or misread.

    * ragged nested lists are refused (NumPy's message names no argument);
    * a pandas DataFrame: every column must hold numbers (NumPy's, or pandas' nullable ``Int64``/``Float64``,
      whose missing values become NaN, refused by the checks that follow); a column of booleans or datetimes is
      refused naming the column, one of objects (text, categories) entry by entry as below (encode such
      columns with :class:`jcsol.TableEncoder`);
    * an object array (pandas' ``.values`` of mixed columns) becomes float64 when every entry is a real number
      (a missing value, ``None`` or ``pd.NA``, becomes NaN); an entry of another type (a string, a bool, a
      date) is refused, naming it and its row.
    """
    if type(values).__module__.startswith("pandas") and hasattr(values, "dtypes") and hasattr(values, "columns"):
        columns = []
        for j, (name, dtype) in enumerate(values.dtypes.items()):  # by position: a repeated name is one column
            column = values.iloc[:, j]
            kind = getattr(dtype, "kind", "O")
            if kind in "iu":
                exact = column.to_numpy(dtype=np.int64 if kind == "i" else np.uint64, na_value=0)  # at once
                _refuse_inexact_integers(exact, f"{what}: column {name!r}")
            if kind in "iuf":
                columns.append(column.to_numpy(dtype=np.float64, na_value=np.nan))
            elif kind == "O":  # text, categories, Python objects: numbers only, each entry checked
                columns.append(as_numbers(column.to_numpy(dtype=object), f"{what}: column {name!r}"))
            else:
                raise TypeError(
                    f"{what}: column {name!r} holds {dtype} values, not numbers; encode it first "
                    "(jcsol.TableEncoder) or drop it"
                )
        return np.column_stack(columns) if columns else np.zeros((len(values), 0))
    try:
        array = np.asarray(values)
    except ValueError:
        raise ValueError(f"{what} is ragged: its rows must all have the same length") from None
    _refuse_inexact_integers(array, what)
    if array.dtype != object:
        return array
    flat = array.ravel()
    missing = np.frompyfunc(_is_missing, 1, 1)(flat).astype(bool) if flat.size else np.zeros(0, bool)
    real = np.frompyfunc(_is_real, 1, 1)(flat).astype(bool) if flat.size else np.zeros(0, bool)
    bad = ~(missing | real)
    if bad.any():
        at = first_not_a_number(flat, np.flatnonzero(bad))
        row = np.unravel_index(at, array.shape)[0] if array.ndim else 0
        raise TypeError(
            f"{what} must hold real numbers; its object entries include {flat[at]!r} "
            f"({type(flat[at]).__name__}) at row {row}"
        )
    out = np.empty(flat.shape, np.float64)
    out[missing] = np.nan
    out[real] = [float(v) for v in flat[real]]
    return out.reshape(array.shape)


def first_not_a_number(values: Any, refused: Iterable[int]) -> int:
    """The position to name of the entries of ``values`` refused as no numbers (``refused``, in order): the first
    one that is not the text of a number either, else the first. A CSV reader makes a whole column text for one
    cell that is no number, and the cells before it, which read as numbers, are not what the user must fix."""
    refused = list(refused)
    for at in refused:
        if not _reads_as_number(values[at]):
            return int(at)
    return int(refused[0])


def _reads_as_number(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


def _is_missing(value: Any) -> bool:
    return value is None or type(value).__name__ in ("NAType", "NaTType") and not isinstance(value, np.generic)


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def is_scipy_sparse(X) -> bool:
    """Whether ``X`` is a SciPy sparse matrix or array (told without importing SciPy)."""
    return type(X).__module__.startswith("scipy.sparse") and hasattr(X, "tocsr")


#: Sparse batches of at most this many entries are checked in Python first: for a few rows (events served one
#: at a time) that is faster than NumPy's calls.
FEW_ENTRIES = 64


def _few_entries_pass(indices: np.ndarray, values: np.ndarray, n_features: int, columns_once: bool) -> bool:
    """Whether a few sparse rows pass every check (indices in range, finite values, and with ``columns_once``
    no column twice with non-zero values); ``False`` leaves the message to the checks made with NumPy."""
    flat_i, flat_v = indices.ravel().tolist(), values.ravel().tolist()
    if flat_i and (min(flat_i) < 0 or max(flat_i) >= n_features) or not all(map(math.isfinite, flat_v)):
        return False
    if not columns_once:
        return True
    k = max(indices.shape[1], 1)
    for a in range(0, len(flat_i), k):
        named = [i for i, v in zip(flat_i[a : a + k], flat_v[a : a + k]) if v != 0]
        if len(set(named)) != len(named):
            return False
    return True


def _check_unique_columns(indices: np.ndarray, values: np.ndarray) -> None:
    """Refuses a row naming one column twice with non-zero values: dot products would add them up while a
    row norm computed entry by entry would not (L2 normalisation would then leave a norm other than 1)."""
    k = indices.shape[1]
    if k < 2:
        return
    indices = indices.astype(np.int32, copy=False)  # in [0, n_features), n_features < 2**31
    ordered = np.sort(indices, axis=1).ravel()  # compared flat: NumPy is slow on short strided rows
    same = ordered[1:] == ordered[:-1]
    same[k - 1 :: k] = False  # the last entry of a row against the next row's first
    if not same.any():
        return  # no index twice, whatever the values (the common case: one sort)
    rows = np.unique(np.flatnonzero(same) // k)  # the rows naming an index twice
    # their entries as keys, padding (value 0) made distinct negative ones
    key = np.where(values[rows] != 0, indices[rows], -1 - np.arange(k, dtype=np.int32))
    key.sort(axis=1)
    repeated = (key[:, 1:] == key[:, :-1]) & (key[:, 1:] >= 0)
    if repeated.any():
        row, at = np.argwhere(repeated)[0]
        raise ValueError(
            f"SparseRows: row {int(rows[row])} holds column {int(key[row, at])} twice with non-zero values; "
            "merge them (add the values) first"
        )


def _check_finite(values: np.ndarray) -> None:
    bad = ~np.isfinite(values)
    if bad.any():
        rows = np.unique(np.nonzero(bad)[0])
        kind = "NaN" if np.isnan(values[bad]).any() else "infinite"
        raise ValueError(
            f"X has {int(bad.sum())} {kind} value(s) (NaN or inf), in {len(rows)} row(s), the first at row "
            f"{int(rows[0])}; remove or impute them before running"
        )


def check_fits(values: np.ndarray, dtype, what: str = "X", first_row: int = 0) -> None:
    """Refuses finite ``values`` beyond the largest number of the float ``dtype`` they are to be cast to (float64
    values past about 3.4e38 for float32), which the cast would make infinite; ``first_row``: the stream's row of
    ``values[0]``, for the message."""
    limit = np.finfo(dtype).max
    if values.dtype.kind != "f" or values.size == 0 or np.finfo(values.dtype).max <= limit:
        return
    beyond = np.abs(values) > limit
    if beyond.any():
        where = np.nonzero(beyond)
        first = tuple(int(i[0]) for i in where)
        raise ValueError(
            f"{what} has {int(beyond.sum())} value(s) beyond the range of {np.dtype(dtype).name} (±{limit:.4g}), "
            f"the first at row {first_row + first[0]} ({float(values[first])!r}); scale them down, or use float64"
        )


def held_out_rows(X, n_features: int | None = None) -> np.ndarray | SparseRows:
    """Rows to score: an array, :class:`SparseRows` or a SciPy sparse matrix (as :class:`SparseRows`), checked as a
    run's rows are (no NaN or infinite value; a column named twice in a sparse row adds its entries, as a score
    does), of ``n_features`` columns when given (the models' dimension)."""
    X = check_features(X, columns_once=False)
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features; the models learnt from rows of {n_features}")
    return X


def dense_features(X, dtype, n_features: int | None = None) -> np.ndarray:
    """:func:`held_out_rows` as dense ``dtype`` rows, none beyond ``dtype``."""
    X = held_out_rows(X, n_features)
    X = X.todense() if isinstance(X, SparseRows) else X
    check_fits(X, dtype)
    return X.astype(dtype, copy=False)


def check_labels(y) -> np.ndarray:
    """``y`` as an int8 array of ±1 (+1 the rare class), the one rule of :func:`jcsol.run`, :meth:`jcsol.Live.learn`
    and every other stream's labels: labels in ``{-1, +1}`` are kept, labels in ``{0, 1}`` are read as
    ``1 → +1`` and ``0 → −1``; anything else (booleans, other values, both encodings mixed) is refused, naming the
    values."""
    raw = np.asarray(y) if type(y).__module__.startswith("pandas") else y
    if isinstance(raw, np.ndarray) and raw.dtype.kind in "USO" and raw.size and isinstance(raw.flat[0], str):
        raise TypeError(
            f"y must be numeric ±1 labels, got text labels ({str(raw.flat[0])!r}, …); map them first, e.g. with "
            "jcsol.datasets.binarize(y, positive=...)"
        )
    y = as_numbers(raw, "y")
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    if y.dtype == bool:
        raise ValueError("y is boolean; map it to ±1 explicitly (+1 is the rare class), e.g. np.where(y, 1, -1)")
    if not np.issubdtype(y.dtype, np.number) or np.issubdtype(y.dtype, np.complexfloating):
        raise TypeError(f"y must be numeric ±1 labels, got dtype {y.dtype}")
    if y.size and not np.all(np.isfinite(y)):
        row = int(np.argmax(~np.isfinite(y)))
        raise ValueError(f"y has NaN (a missing label) or infinite labels, the first at row {row} ({float(y[row])})")
    labels = np.unique(y)
    if np.isin(labels, (-1, 1)).all():
        return y.astype(np.int8)
    if np.isin(labels, (0, 1)).all():
        return np.where(y == 1, 1, -1).astype(np.int8)
    shown = ", ".join(str(v) for v in labels[:10]) + (", …" if labels.size > 10 else "")
    raise ValueError(
        f"labels must be -1 and +1 (+1 the rare class), or 0 and 1 (read as -1 and +1), got {{{shown}}}; map "
        "them first, e.g. with jcsol.datasets.binarize(y, positive=...)"
    )


def check_stream(X, y) -> tuple[np.ndarray | SparseRows, np.ndarray]:
    """Checks a whole stream: features, labels, equal lengths, not empty."""
    X = check_features(X)
    return X, check_stream_labels(y, X.shape[0])


def check_stream_labels(y, n: int) -> np.ndarray:
    """The labels of a stream of ``n`` rows checked (:func:`check_labels`): one per row, and not none."""
    y = check_labels(y)
    if n != len(y):
        raise ValueError(f"X has {n} rows but y has {len(y)} labels")
    if len(y) == 0:
        raise ValueError("the stream is empty: X and y have no rows")
    return y


def check_costs(costs, n: int) -> np.ndarray:
    """Example costs as a float array of length ``n``, refusing negative, NaN or infinite values."""
    try:
        costs = np.asarray(costs, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"costs must be real numbers, one per example, got {type(costs).__name__}") from None
    if costs.shape != (n,):
        raise ValueError(f"costs must have one value per example, shape ({n},), got {costs.shape}")
    if not np.all(np.isfinite(costs)):
        raise ValueError("costs has NaN or infinite values")
    if np.any(costs < 0):
        raise ValueError(f"costs must be >= 0, found {costs.min()} at row {int(np.argmin(costs))}")
    return costs


def check_flags(**flags) -> None:
    """Refuses a yes/no option given anything but a bool, naming it: ``rerun="no"`` or ``return_scores=1`` would
    otherwise read as true."""
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {value!r}")


def _count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_run_options(
    *, key, curve_points, record_scores, chunk_size, checkpoint, checkpoint_every, progress, on_chunk
) -> str | None:
    """Checks :func:`jcsol.run`'s options before any work (a float, bool or zero where a count is meant would
    otherwise be rounded or replaced silently, and a bad checkpoint path found only after the first chunk);
    returns the checkpoint path as a string (``None`` without one)."""
    import jax

    from .checkpoint import check_checkpoint_path

    if isinstance(key, bool) or not isinstance(key, (int, np.integer, jax.Array)):
        raise TypeError(f"key must be an int seed or a jax.random.key, got {key!r}")
    if isinstance(key, (int, np.integer)) and not 0 <= key < 2**32:  # JAX keeps 32 bits: 2**32 would equal 0
        raise ValueError(f"key must be a seed in [0, 2**32), got {key}")
    if isinstance(key, jax.Array):
        typed = jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)
        if not ((typed and key.shape == ()) or (key.dtype == np.uint32 and key.shape == (2,))):
            raise ValueError(f"key must be one jax.random.key (or a raw (2,) uint32 key), got {key.dtype} {key.shape}")
    _count("curve_points", curve_points, 0)
    if chunk_size is not None:
        _count("chunk_size", chunk_size, 1)
    _count("checkpoint_every", checkpoint_every, 1)
    check_flags(record_scores=record_scores, **({} if progress is None else {"progress": progress}))
    if on_chunk is not None and not callable(on_chunk):
        raise TypeError(f"on_chunk must be callable, got {type(on_chunk).__name__}")
    return None if checkpoint is None else check_checkpoint_path(checkpoint)
