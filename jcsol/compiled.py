"""A bounded, least-recently-used cache of compiled computations.

The engine and the live learner compile one executable per signature (learner type and static options, array
shapes and dtypes, devices) and reuse it. A long-lived process that runs many signatures — a notebook sweeping
datasets, a server swapping learners — must not keep every executable it ever built: each holds device code
and, for the engine's init, the shapes of its carry. This cache keeps the ``maxsize`` most recently used ones.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")

#: How many compiled computations each cache keeps; ``JCSOL_COMPILED_CACHE`` overrides it.
DEFAULT_MAXSIZE = 64


def _default_maxsize() -> int:
    text = os.environ.get("JCSOL_COMPILED_CACHE", "")
    if not text:
        return DEFAULT_MAXSIZE
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"JCSOL_COMPILED_CACHE must be a positive integer, got {text!r}") from None
    if value < 1:
        raise ValueError(f"JCSOL_COMPILED_CACHE must be a positive integer, got {text!r}")
    return value


class CompiledCache(Generic[V]):
    """At most ``maxsize`` values by key; the least recently used goes first when a new one arrives."""

    def __init__(self, maxsize: int | None = None) -> None:
        self.maxsize = _default_maxsize() if maxsize is None else maxsize
        if self.maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, got {self.maxsize}")
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def get_or_build(self, key: Hashable, build: Callable[[], V]) -> tuple[V, float]:
        """``(value, seconds spent building it)``: the cached value and ``0.0``, or ``build()`` timed and kept."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key], 0.0
        start = time.perf_counter()
        value = build()
        seconds = time.perf_counter() - start
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)
        return value, seconds

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
