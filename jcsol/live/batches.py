"""A live learner's batches on the host: the calls a batch is cut into (:func:`pieces`), each piece padded to the
size its call is compiled for (:func:`pad`), labels checked as int8 (:func:`labels`), and the fast checks of the
common case of one event between two compiled calls (:func:`sum_is_finite`).

A batch (up to :data:`MAX_BATCH` events, larger ones take several calls) is padded to the next power of 2, or to
one of the sizes batches usually come in (:func:`jcsol.batches.bucket`), and learnt by one call, whose loop over
the events stops after the last real one: the padding is never learnt.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..stream import SparseRows, check_labels

MAX_BATCH = 16384  # events per call of a compiled learn or predict; larger batches take several calls
_INT8 = np.dtype(np.int8)


@functools.lru_cache(maxsize=256)
def pieces(n: int, sizes: tuple[int, ...] = ()) -> tuple[int, ...]:
    """The calls a batch of ``n`` events takes: the given ``sizes`` (largest first, as many as fit), then
    ``MAX_BATCH`` as many times as it fits, then the rest."""
    out: list[int] = []
    for b in (*sizes, MAX_BATCH):
        out += [b] * (n // b)
        n -= b * (n // b)
    return (*out, n) if n else tuple(out)


def pad(rows, size: int):
    """``rows`` (or labels, or scores) with zero rows appended up to ``size``."""
    if size == rows.shape[0]:
        return rows
    if isinstance(rows, SparseRows):
        return SparseRows(pad(rows.indices, size), pad(rows.values, size), rows.n_features)
    out = np.zeros((size, *rows.shape[1:]), rows.dtype)  # np.pad costs tens of µs more in Python
    out[: rows.shape[0]] = rows
    return out


def take(rows, a: int, b: int):
    """Rows ``a`` to ``b`` of dense rows or :class:`~jcsol.stream.SparseRows`."""
    if isinstance(rows, SparseRows):
        return SparseRows(rows.indices[a:b], rows.values[a:b], rows.n_features)
    return rows[a:b]


def labels(y) -> np.ndarray:
    """``y`` checked as ±1 labels, as int8 (a fast path for the common case, :func:`check_labels` for the
    message). The compiled calls cast them to the working dtype (:func:`jcsol.live.backend.working_labels`): int8
    labels reach them with no NumPy call, which costs several µs between two XLA calls."""
    if isinstance(y, np.ndarray) and y.ndim == 1 and y.dtype.kind in "if":
        # a few labels are checked faster in Python than by NumPy's calls
        if set(y.tolist()) <= {1, -1} if y.size <= 64 else ((y == 1) | (y == -1)).all():
            return y if y.dtype is _INT8 else y.astype(_INT8)
    return check_labels(y)


def sum_is_finite(X: np.ndarray) -> bool:
    """Whether the sum of ``X``'s values is finite (then each is; a sum that overflows says no, and the caller's
    full check decides). A few values are summed by Python from the array's buffer: between two XLA calls,
    NumPy's reduction of one event's row costs about twice as much."""
    kind = X.dtype.char
    if 0 < X.size <= 1024 and kind in "fd":
        view = X.data
        if view.c_contiguous:
            return math.isfinite(sum(view.cast("B").cast("f" if kind == "f" else "d")))
    with np.errstate(over="ignore", invalid="ignore"):
        return math.isfinite(X.sum())


def device_rows(rows):
    """Rows as the compiled calls take them: a dense array, or sparse rows' ``(indices, values)``."""
    return (rows.indices, rows.values) if isinstance(rows, SparseRows) else rows


def is_matrix(X) -> bool:
    """Whether ``X`` is a list (or tuple) of rows, not of records (a table's)."""
    return isinstance(X, (list, tuple)) and len(X) > 0 and not isinstance(X[0], dict)
