"""Events waiting for their labels: their features and the scores they were served, keyed by id, bounded.

Policy (the same in every call, checked before anything is changed):

* an id names one event: predicting an id that is still pending, or giving one id twice in a batch, is an
  error (``ValueError``);
* a label whose id is not pending (never predicted, already labelled, or evicted) is an error (``KeyError``)
  naming the ids; :meth:`PendingStore.pending` tells which ids of a batch are still held, to filter first;
* when a batch of predictions would exceed the capacity, the oldest pending events are evicted to make
  room (``on_full="evict"``, counted in :attr:`PendingStore.evicted`), or the batch is refused
  (``on_full="raise"``, ``OverflowError``). A batch larger than the whole store is always refused.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import DTypeLike

from ..stream import SparseRows

ON_FULL = ("evict", "raise")

#: Stored sparse rows: ``(indices, values, n_features)``, the arrays ``(n_alloc, width)``.
SparseBlock = tuple[np.ndarray, np.ndarray, int]


def check_ids(ids, n: int | None = None) -> list:
    """``ids`` as a list of Python ints or strs (one kind), refusing repeats within the batch."""
    arr = np.asarray(ids)
    if arr.ndim != 1:
        raise ValueError(f"ids must be a 1-D sequence of integers or strings, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iuU":
        raise TypeError(f"ids must be integers or strings, got dtype {arr.dtype}")
    if arr.dtype.kind == "U" and not isinstance(ids, np.ndarray) and not all(isinstance(k, str) for k in ids):
        # NumPy writes the integers of a mixed list as text: 1 would become "1", an id other than 1
        raise TypeError("ids mix integers and strings; give one kind (an id is an integer or a string)")
    if n is not None and arr.size != n:
        raise ValueError(f"{arr.size} ids for {n} events")
    keys = arr.tolist()
    if len(set(keys)) != len(keys):
        seen, repeated = set(), []
        for k in keys:
            if k in seen:
                repeated.append(k)
            seen.add(k)
        raise ValueError(f"ids repeated within the batch: {repeated[:5]}{' …' if len(repeated) > 5 else ''}")
    return keys


class PendingStore:
    """A bounded table of pending events (rows, per-configuration scores, served score), keyed by id."""

    def __init__(self, capacity: int, n_grid: int, on_full: str = "evict", dtype: DTypeLike = np.float32) -> None:
        if int(capacity) < 1:
            raise ValueError(f"store capacity must be >= 1, got {capacity}")
        if on_full not in ON_FULL:
            raise ValueError(f"on_full must be one of {', '.join(map(repr, ON_FULL))}, got {on_full!r}")
        self.capacity, self.n_grid, self.on_full = int(capacity), n_grid, on_full
        self.slots: dict = {}  # id -> slot, in arrival order
        self.free: list[int] = []
        self.evicted = 0
        self.rows: np.ndarray | SparseBlock | None = None  # (n_alloc, d) array, or sparse, from the first put
        self.scores = np.zeros((0, n_grid), dtype)
        self.served = np.zeros(0, dtype)

    def __len__(self) -> int:
        return len(self.slots)

    def pending(self, ids) -> np.ndarray:
        """Which of ``ids`` are held (a boolean mask)."""
        return np.array([k in self.slots for k in np.asarray(ids).tolist()], bool)

    def check_new(self, keys: list) -> None:
        """Refuses new events whose ids are pending already, or that cannot be stored."""
        n = len(keys)
        held = [k for k in keys if k in self.slots]
        if held:
            raise ValueError(
                f"ids already pending (predicted, not yet labelled): {held[:5]}"
                f"{' …' if len(held) > 5 else ''}; an id names one event"
            )
        if n > self.capacity:
            raise OverflowError(f"a batch of {n} events is larger than the store ({self.capacity} events)")
        if self.on_full == "raise" and len(self.slots) + n > self.capacity:
            raise OverflowError(
                f"the store holds {len(self.slots)} of {self.capacity} pending events; "
                f"{n} more do not fit (label some, or use on_full='evict')"
            )

    def check_rows(self, rows: np.ndarray | SparseRows) -> None:
        """Refuses rows of the other kind (dense or sparse) than the rows already pending; with none pending, the
        store takes the new kind."""
        if self.rows is None or isinstance(self.rows, tuple) == isinstance(rows, SparseRows):
            return
        if not self.slots:
            self.rows = None
            return
        held, given = ("sparse", "dense") if isinstance(self.rows, tuple) else ("dense", "sparse")
        raise ValueError(
            f"the {len(self.slots)} event(s) awaiting labels hold {held} rows, and this batch has {given} rows: "
            "give one kind of rows with ids until the pending events are learnt"
        )

    def put(self, keys: list, rows: np.ndarray | SparseRows, scores: np.ndarray, served: np.ndarray) -> None:
        n = len(keys)
        self.check_new(keys)
        self.check_rows(rows)
        over = len(self.slots) + n - self.capacity
        if over > 0:
            for k in list(self.slots)[:over]:
                self.free.append(self.slots.pop(k))
            self.evicted += over
        slots = self._allocate(n, rows)
        for k, s in zip(keys, slots):
            self.slots[k] = s
        if isinstance(rows, SparseRows):
            assert isinstance(self.rows, tuple)
            indices, values, _ = self.rows
            width = rows.indices.shape[1]
            indices[slots, :width], values[slots, :width] = rows.indices, rows.values
            indices[slots, width:], values[slots, width:] = 0, 0
        else:
            assert isinstance(self.rows, np.ndarray)
            self.rows[slots] = rows
        self.scores[slots], self.served[slots] = scores, served

    def take(self, keys: list) -> tuple[np.ndarray | SparseRows, np.ndarray, np.ndarray]:
        """Rows, scores and served scores of ``keys``, removed from the store."""
        unknown = [k for k in keys if k not in self.slots]
        if unknown:
            raise KeyError(
                f"{len(unknown)} id(s) are not pending (never predicted, already labelled, or evicted "
                f"from the full store): {unknown[:5]}{' …' if len(unknown) > 5 else ''}; filter the "
                "batch with Live.pending(ids)"
            )
        slots = np.array([self.slots.pop(k) for k in keys], np.int64)
        self.free.extend(slots.tolist())
        rows: np.ndarray | SparseRows
        if isinstance(self.rows, tuple):
            indices, values, d = self.rows
            rows = SparseRows(indices[slots], values[slots], d)
        else:
            assert self.rows is not None
            rows = self.rows[slots]
        return rows, self.scores[slots], self.served[slots]

    def _allocate(self, n: int, rows: np.ndarray | SparseRows) -> np.ndarray:
        if self.rows is None:
            allocated = self.scores.shape[0]
            self.rows = (
                (
                    np.zeros((allocated, rows.indices.shape[1]), np.int32),
                    np.zeros((allocated, rows.values.shape[1]), rows.values.dtype),
                    rows.n_features,
                )
                if isinstance(rows, SparseRows)
                else np.zeros((allocated, rows.shape[1]), rows.dtype)
            )
        if (
            isinstance(self.rows, tuple)
            and isinstance(rows, SparseRows)
            and rows.indices.shape[1] > self.rows[0].shape[1]
        ):
            indices, values, d = self.rows
            extra = rows.indices.shape[1] - indices.shape[1]
            self.rows = (np.pad(indices, ((0, 0), (0, extra))), np.pad(values, ((0, 0), (0, extra))), d)
        allocated = self.scores.shape[0]
        needed = n - len(self.free)
        if needed > 0:  # len(slots) + n <= capacity, so allocated + needed <= capacity
            size = min(self.capacity, max(allocated + needed, 2 * allocated, 1024))
            self._grow(size)
            self.free.extend(range(allocated, size))
        taken, self.free = self.free[:n], self.free[n:]
        return np.array(taken, np.int64)

    def _grow(self, size: int) -> None:
        pad = lambda a: np.concatenate([a, np.zeros((size - a.shape[0],) + a.shape[1:], a.dtype)])
        self.rows = (
            (pad(self.rows[0]), pad(self.rows[1]), self.rows[2]) if isinstance(self.rows, tuple) else pad(self.rows)
        )
        self.scores, self.served = pad(self.scores), pad(self.served)

    # -- saving -----------------------------------------------------------------------------------------
    def arrays(self) -> dict[str, np.ndarray]:
        """The pending events, oldest first, as arrays (for :meth:`jcsol.Live.save`)."""
        keys = list(self.slots)
        slots = np.array([self.slots[k] for k in keys], np.int64)
        out = {
            "ids": np.array(keys) if keys else np.zeros(0, np.int64),
            "scores": self.scores[slots],
            "served": self.served[slots],
            "evicted": np.array(self.evicted, np.int64),
        }
        if isinstance(self.rows, tuple):
            out.update(
                indices=self.rows[0][slots], values=self.rows[1][slots], n_features=np.array(self.rows[2], np.int64)
            )
        elif self.rows is not None:
            out["dense"] = self.rows[slots]
        return out

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        keys = arrays["ids"].tolist()
        self.evicted = int(arrays["evicted"])
        if not keys:
            return
        rows = (
            SparseRows(arrays["indices"], arrays["values"], int(arrays["n_features"]))
            if "indices" in arrays
            else arrays["dense"]
        )
        self.put(keys, rows, arrays["scores"], arrays["served"])
