"""Batches padded to a few compiled sizes: a stream of batches of every length compiles a few programs, not one
per length (the live learner, :class:`jcsol.Live`, and the estimator, :class:`jcsol.sklearn.OnlineClassifier`)."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=256)
def bucket(n: int, sizes: tuple[int, ...] = (), *, at_least: int = 1) -> int:
    """The compiled size a batch of ``n`` rows is padded to: ``n`` itself when it is one of ``sizes``, else the
    next power of 2, and never below ``at_least``."""
    return n if n in sizes else max(at_least, 1 << max(n - 1, 0).bit_length())
