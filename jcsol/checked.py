"""A stream checked, converted and placed once (:class:`Stream`), and the checks :func:`jcsol.run` makes of the
rows, labels and costs it is given.

:func:`jcsol.run` checks a NumPy array (or a SciPy matrix, or :class:`jcsol.SparseRows`) at every call: the array
may have changed since the last one. A :class:`Stream` holds its own read-only copy, checked and converted when
it is made, its rows placed on the devices by the first call that runs on them and kept there for the next:
calls that reuse it (a sweep, the selection and re-run protocol, cross-validation) pay the checks, the
conversion and the copy to the devices once. Rows given as a ``jax.Array`` cannot change: their checks and their
placement are kept by the array's identity (:func:`rows_of`), as long as the array lives.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any

import jax
import numpy as np

from .base import row_extents
from .core.checks import resolve_dtype
from .core.placement import aligned
from .datasets.rowstore import RowStore
from .stream import (
    SparseRows,
    check_costs,
    check_features,
    check_fits,
    check_labels,
    check_stream,
    check_stream_labels,
)

#: How many placements (device sets and row layouts) a stream keeps.
PLACEMENTS = 4
#: How many values derived from row orders (class totals, placed chunks of orders) a stream keeps.
ORDERS_KEPT = 16


def checked_stream(X, y, costs, dtype):
    """``(X, y, costs, dtype)`` checked: rows in memory or a row store, labels, example costs, and values that the
    dtype holds."""
    store = X if isinstance(X, RowStore) else None
    if store is not None:
        y = check_labels(y)
        if len(y) != store.shape[0]:
            raise ValueError(f"the row store has {store.shape[0]} rows but y has {len(y)} labels")
    else:
        X, y = check_stream(X, y)
    dtype = resolve_dtype(dtype)
    if store is None:
        check_fits(X.values if isinstance(X, SparseRows) else X, dtype)
    return X, y, checked_costs(costs, len(y), dtype), dtype


def checked_costs(costs, n: int, dtype):
    """Example costs checked (:func:`jcsol.stream.check_costs`) and held by ``dtype``; ``None`` stays ``None``."""
    if costs is None:
        return None
    costs = check_costs(costs, n)
    check_fits(costs, dtype, "costs")
    return costs


class Rows:
    """Rows checked and converted to a dtype once: the host's read-only copy, each row's scale
    (:func:`jcsol.base.row_extents`) and the rows placed on the devices, by placement."""

    def __init__(self, X: np.ndarray | SparseRows, dtype: np.dtype) -> None:
        if isinstance(X, SparseRows):
            X = SparseRows(_frozen(X.indices), _frozen(X.values.astype(dtype, copy=False)), X.n_features)
        else:
            X = _frozen(X.astype(dtype, copy=False))
        self.X, self.dtype = X, dtype
        self.extents = row_extents(X.values if isinstance(X, SparseRows) else X)
        self._placed: dict[Hashable, Any] = {}

    def placed(self, key: Hashable, place: Callable[[], Any]) -> Any:
        """The rows placed as ``place()`` places them, once per ``key`` (the devices and the rows' layout)."""
        return _kept(self._placed, key, place, PLACEMENTS)


class Stream:
    """Rows, labels and example costs checked and converted once, for every call of :func:`jcsol.run` (and of the
    protocols) that runs on them: ``jcsol.run(learner, jcsol.Stream(X, y), perms=20)``.

    The checks are :func:`jcsol.run`'s (no NaN or infinite value, values the dtype holds, labels of two classes,
    one cost ``>= 0`` per example), made here; the stream keeps its own read-only copy of the rows in ``dtype``, so
    that a later change to ``X`` changes nothing in it, and the first call on a set of devices places the rows
    there for every later call. ``jcsol.run(learner, X, y)`` with a NumPy array checks and places ``X`` again at
    every call, as the array may have changed; a stream is the way to pay that once.

    Args:
        X: dense rows ``(n, d)`` (NumPy, or a ``jax.Array``), :class:`jcsol.SparseRows`, or a SciPy sparse matrix.
        y: ``n`` labels of two classes (``+1`` the rare one).
        costs: optional example costs, one per row, ``>= 0``.
        dtype: the working dtype (as :func:`jcsol.run`'s).

    Attributes:
        X, y, costs, dtype: the checked stream, read-only.
    """

    def __init__(self, X, y, costs=None, *, dtype=None) -> None:
        if isinstance(X, RowStore):
            raise TypeError("a row store is read from disk chunk by chunk: pass it to jcsol.run, not to a Stream")
        if isinstance(X, Stream):
            raise TypeError("X is a Stream already")
        if isinstance(X, jax.Array):
            self.rows, self.dtype = rows_of(X, dtype), resolve_dtype(dtype)
            y = check_stream_labels(y, len(self.rows.X))
            costs = checked_costs(costs, len(y), self.dtype)
        else:
            X, y, costs, self.dtype = checked_stream(X, y, costs, dtype)
            self.rows = Rows(X, self.dtype)
        self.y = _frozen(y)
        self.costs = None if costs is None else _frozen(costs.astype(self.dtype, copy=False))
        self._labels: dict[Hashable, Any] = {}
        self._of_orders: dict[Hashable, Any] = {}

    @property
    def X(self) -> np.ndarray | SparseRows:
        return self.rows.X

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows.X.shape

    def __len__(self) -> int:
        return len(self.y)

    def __repr__(self) -> str:
        kind = "sparse" if isinstance(self.X, SparseRows) else "dense"
        costs = ", with costs" if self.costs is not None else ""
        return f"Stream({len(self)} {kind} rows of {self.shape[1]} features, {self.dtype.name}{costs})"

    def placed_labels(self, key: Hashable, place: Callable[[], Any]) -> Any:
        """The labels and costs placed as ``place()`` places them, once per ``key``."""
        return _kept(self._labels, key, place, PLACEMENTS)

    def of_orders(self, orders: np.ndarray, what: Hashable, compute: Callable[[], Any]) -> Any:
        """``compute()``, kept for the row orders ``orders`` and ``what`` (their class totals, their chunks placed on
        the devices) when ``orders`` are a key's drawn orders (read-only, the same array object at every call with
        that key); computed anew for orders given as an array, which may change."""
        if orders.flags.writeable:
            return compute()
        kept = _kept(self._of_orders, (id(orders), what), lambda: (orders, compute()), ORDERS_KEPT)
        if kept[0] is not orders:  # another array at the address of one gone
            kept = self._of_orders[(id(orders), what)] = (orders, compute())
        return kept[1]


_ARRAY_ROWS: dict[tuple[int, str], tuple[weakref.ref, Rows]] = {}


def rows_of(X: jax.Array, dtype) -> Rows:
    """The checked :class:`Rows` of a ``jax.Array`` of dense rows, kept by the array's identity while it lives (a
    ``jax.Array`` cannot change): checked, copied to the host once and placed once per placement."""
    dtype = resolve_dtype(dtype)
    key = (id(X), dtype.name)
    found = _ARRAY_ROWS.get(key)
    if found is not None and found[0]() is X:
        return found[1]
    checked = check_features(np.asarray(X))
    assert isinstance(checked, np.ndarray)  # a jax.Array holds dense rows
    if len(checked) == 0:
        raise ValueError("the stream is empty: X has no rows")
    check_fits(checked, dtype)
    rows = Rows(checked, dtype)
    for stale in [k for k, (ref, _) in _ARRAY_ROWS.items() if ref() is None]:
        del _ARRAY_ROWS[stale]
    _ARRAY_ROWS[key] = (weakref.ref(X), rows)
    return rows


def _kept(store: dict, key: Hashable, build: Callable[[], Any], most: int) -> Any:
    """``store[key]``, built on first use; the oldest entry goes when ``store`` holds ``most``."""
    if key not in store:
        if len(store) >= most:
            store.pop(next(iter(store)))
        store[key] = build()
    return store[key]


def _frozen(a: np.ndarray) -> np.ndarray:
    """A read-only copy of ``a`` (the caller's array may change), aligned so that CPU devices read it in place."""
    a = aligned(np.asarray(a), copy=True)
    a.flags.writeable = False
    return a
