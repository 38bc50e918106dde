"""Events waiting for their labels: their features and the scores they were served, keyed by id, bounded.

Policy (the same in every call, checked before anything is changed):

* an id is an integer (a Python ``int`` of any size, or a NumPy integer of any dtype: ``uint64`` ids above
  2**63 included) or a string; integers equal in value are one id, and a string is never equal to an integer
  (``"5"`` and ``5`` are two ids). A batch may mix both kinds, and so may the stream over its life; every id
  is saved and loaded exactly. Any other kind (booleans, floats, bytes, ``None``) is refused with a
  ``TypeError`` naming the id as it was given (:func:`check_ids`);
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

from ..core.checks import require_memory
from ..stream import SparseRows

ON_FULL = ("evict", "raise")

#: Stored sparse rows: ``(indices, values, n_features)``, the arrays ``(n_alloc, width)``.
SparseBlock = tuple[np.ndarray, np.ndarray, int]


def check_ids(ids, n: int | None = None, *, unique: bool = True) -> list:
    """``ids`` as a list of keys, each a Python ``int`` or ``str``, refusing any other kind and, with ``unique``,
    an id given twice in the batch; the message names the offending id as it was given.

    Integers of any size and any NumPy integer dtype (``uint64`` above 2**63 included) are the same key when
    their values are equal (``5``, ``np.int64(5)``, ``np.uint64(5)``); a string is a key of its own (``"5"`` and
    ``5`` are two ids). Booleans, floats (``7.0``, NaN), bytes and ``None`` are refused: a float id read from a
    database column would match an integer id by value only where it is exact.
    """
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__len__"):
        raise TypeError(
            f"ids must be a sequence of ids (a list, tuple, range, array or Series), got {type(ids).__name__}"
        )
    if isinstance(ids, (list, tuple, range)):
        keys = [_key(k, i) for i, k in enumerate(ids)]
    else:
        arr = np.asarray(ids)
        if arr.dtype.kind not in "iuUO" and hasattr(ids, "to_numpy"):  # a pandas column with missing ids: as given
            arr = np.asarray(ids.to_numpy(dtype=object))
        if arr.ndim != 1:
            raise ValueError(f"ids must be a 1-D sequence of integers or strings, got shape {arr.shape}")
        if arr.dtype.kind in "iuU":
            keys = arr.tolist()
        else:
            keys = [_key(k, i) for i, k in enumerate(arr.tolist() if arr.dtype.kind != "O" else arr)]
    if n is not None and len(keys) != n:
        raise ValueError(f"{len(keys)} ids for {n} events")
    if unique and len(set(keys)) != len(keys):
        seen, repeated = set(), []
        for k in keys:
            if k in seen:
                repeated.append(k)
            seen.add(k)
        raise ValueError(f"ids repeated within the batch: {_shown(repeated)}")
    return keys


def _key(k, position: int) -> int | str:
    """One id as its key: an ``int`` for any integer, a ``str`` for any string; anything else refused."""
    kind = type(k)
    if kind is int or kind is str:
        return k
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer, str)):
        raise TypeError(
            f"ids must be integers or strings; id {k!r} (at position {position} of the batch) is of type "
            f"{kind.__name__}"
        )
    return str(k) if isinstance(k, str) else int(k)


def _shown(keys: list) -> str:
    return f"{keys[:5]}{' …' if len(keys) > 5 else ''}"


def encode_ids(keys: list) -> dict[str, np.ndarray]:
    """Keys as arrays that hold every one exactly (for a file): their UTF-8 text (integers in decimal, any
    size), where each ends, and which are strings."""
    texts = [(k if isinstance(k, str) else str(k)).encode("utf-8", "surrogatepass") for k in keys]
    return {
        "id_bytes": np.frombuffer(b"".join(texts), np.uint8),
        "id_ends": np.cumsum([len(t) for t in texts], dtype=np.int64),
        "id_is_text": np.array([isinstance(k, str) for k in keys], bool),
    }


def decode_ids(arrays: dict[str, np.ndarray]) -> list:
    """The keys :func:`encode_ids` wrote."""
    raw = arrays["id_bytes"].tobytes()
    ends = arrays["id_ends"].tolist()
    texts = [raw[a:b].decode("utf-8", "surrogatepass") for a, b in zip([0, *ends[:-1]], ends)]
    return [t if is_text else int(t) for t, is_text in zip(texts, arrays["id_is_text"].tolist(), strict=True)]


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
        """Which of ``ids`` are held (a boolean mask; ids checked as :func:`check_ids` checks them, repeats
        allowed)."""
        return np.array([k in self.slots for k in check_ids(ids, unique=False)], bool)

    def check_new(self, keys: list) -> None:
        """Refuses new events whose ids are pending already, or that cannot be stored."""
        n = len(keys)
        held = [k for k in keys if k in self.slots]
        if held:
            raise ValueError(
                f"ids already pending (predicted, not yet labelled): {_shown(held)}; an id names one event"
            )
        if n > self.capacity:
            raise OverflowError(f"a batch of {n} events is larger than the store ({self.capacity} events)")
        if self.on_full == "raise" and len(self.slots) + n > self.capacity:
            raise OverflowError(
                f"the store holds {len(self.slots)} of {self.capacity} pending events; "
                f"{n} more do not fit (label some, or use on_full='evict')"
            )

    def check_rows(self, rows: np.ndarray | SparseRows) -> None:
        """Refuses rows of the other kind (dense or sparse) than the rows already pending (with none pending,
        :meth:`put` takes the new kind; an empty batch stores nothing)."""
        if self.rows is None or not self.slots or not rows.shape[0]:
            return
        if isinstance(self.rows, tuple) == isinstance(rows, SparseRows):
            return
        held, given = ("sparse", "dense") if isinstance(self.rows, tuple) else ("dense", "sparse")
        raise ValueError(
            f"the {len(self.slots)} event(s) awaiting labels hold {held} rows, and this batch has {given} rows: "
            "give one kind of rows with ids until the pending events are learnt"
        )

    def put(self, keys: list, rows: np.ndarray | SparseRows, scores: np.ndarray, served: np.ndarray) -> None:
        """Keeps the events ``keys`` (checked by :meth:`check_new`, :meth:`check_rows` and :meth:`check_room` first)."""
        n = len(keys)
        self.check_new(keys)
        self.check_rows(rows)
        if not n:
            return
        if self.rows is not None and not self.slots and isinstance(self.rows, tuple) != isinstance(rows, SparseRows):
            self.rows = None  # none pending: the store takes the new kind of rows
        self.check_room(n, rows)
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

    def get(self, keys: list) -> tuple[np.ndarray | SparseRows, np.ndarray, np.ndarray]:
        """Rows, scores and served scores of ``keys`` (copies; the events stay until :meth:`remove`), refusing
        ids that are not pending with a ``KeyError`` naming them."""
        unknown = [k for k in keys if k not in self.slots]
        if unknown:
            raise KeyError(
                f"{len(unknown)} id(s) are not pending (never predicted, already labelled, or evicted "
                f"from the full store): {_shown(unknown)}; filter the batch with Live.pending(ids)"
            )
        slots = np.array([self.slots[k] for k in keys], np.int64)
        rows: np.ndarray | SparseRows
        if isinstance(self.rows, tuple):
            indices, values, d = self.rows
            rows = SparseRows(indices[slots], values[slots], d)
        elif self.rows is not None:
            rows = self.rows[slots]
        else:  # nothing was ever stored, and no key asked for
            rows = np.zeros((0, 0), self.scores.dtype)
        return rows, self.scores[slots], self.served[slots]

    def remove(self, keys: list) -> None:
        """Forgets the pending events ``keys`` (their labels learnt)."""
        self.free.extend(self.slots.pop(k) for k in keys)

    def check_room(self, n: int, rows: np.ndarray | SparseRows) -> None:
        """Refuses (before anything changes) ``n`` new events whose rows would grow the store's arrays beyond
        the memory free (:func:`jcsol.core.checks.require_memory`); a store that grows holds its old arrays and
        the new ones at once."""
        evicted = max(len(self.slots) + n - self.capacity, 0)
        needed = n - len(self.free) - evicted
        if needed <= 0:
            return
        allocated, size = self.scores.shape[0], self._grown(needed)
        if isinstance(rows, SparseRows):
            width = max(rows.values.shape[1], self.rows[1].shape[1] if isinstance(self.rows, tuple) else 0)
            per_row = width * (rows.values.dtype.itemsize + 4)  # values and int32 indices
        else:
            width, per_row = rows.shape[1], rows.shape[1] * rows.dtype.itemsize
        per_row += (self.n_grid + 1) * self.scores.dtype.itemsize  # every configuration's score, the served one
        require_memory(
            (allocated + size) * per_row,
            f"keeping {n} more events awaiting labels grows the store to {size} events of {width} entries: ",
            "learn the pending events' labels sooner, or give a smaller store_size",
        )

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
            size = self._grown(needed)
            self._grow(size)
            self.free.extend(range(allocated, size))
        taken, self.free = self.free[:n], self.free[n:]
        return np.array(taken, np.int64)

    def _grown(self, needed: int) -> int:
        """The store's size once grown for ``needed`` more slots: doubled (1024 at least), up to its capacity."""
        allocated = self.scores.shape[0]
        return min(self.capacity, max(allocated + needed, 2 * allocated, 1024))

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
            **encode_ids(keys),
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
        """Takes back the pending events :meth:`arrays` gave (into an empty store)."""
        keys = decode_ids(arrays)
        self.evicted = int(arrays["evicted"])
        if not keys:
            return
        rows = (
            SparseRows(arrays["indices"], arrays["values"], int(arrays["n_features"]))
            if "indices" in arrays
            else arrays["dense"]
        )
        self.put(keys, rows, arrays["scores"], arrays["served"])
