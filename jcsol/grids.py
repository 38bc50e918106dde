"""Hyperparameter grids.

A learner (or objective) whose float field holds an array *is* a grid over that field. Arrays in several
fields broadcast together (NumPy rules), which zips them; :func:`grid` builds the Cartesian product instead.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence, TypeVar

import numpy as np

T = TypeVar("T")


def decades(low: float = 1e-5, high: float = 1e5) -> np.ndarray:
    """The powers of ten from ``low`` to ``high``: ``decades()`` is the papers' ``{10^-5, …, 10^5}``."""
    for name, value in (("low", low), ("high", high)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not 0 < value < np.inf:
            raise ValueError(f"decades: {name} must be a power of ten > 0, got {value!r}")
    lo, hi = np.log10(low), np.log10(high)
    if not (np.isclose(lo, round(lo)) and np.isclose(hi, round(hi)) and lo <= hi):
        raise ValueError(f"decades needs powers of ten low <= high, got {low}, {high}")
    return 10.0 ** np.arange(round(lo), round(hi) + 1)


def grid(obj: T, **axes: Sequence[float]) -> T:
    """The Cartesian product of the given values, one grid axis per keyword, in the order given.

    >>> import jcsol
    >>> g = jcsol.grid(jcsol.ACOG(), eta=jcsol.decades(1e-2, 1e2), gamma=[0.5, 1.0])
    >>> g.eta.shape, g.gamma.shape
    ((5, 2), (5, 2))

    Fields not named keep their (scalar) values. To combine a learner's grid with an objective's, give
    them shapes that broadcast, e.g. ``eta`` of shape ``(11, 1)`` and ``alpha_p`` of shape ``(1, 9)``.
    """
    names = [f.name for f in dataclasses.fields(obj) if not f.metadata.get("static")]
    unknown = [a for a in axes if a not in names]
    if unknown:
        raise ValueError(f"{type(obj).__name__} has no hyperparameter {unknown}; it has {names}")
    for name in names:
        if name not in axes and np.ndim(getattr(obj, name)) != 0:
            raise ValueError(f"{type(obj).__name__}.{name} is already an array; give its values to grid() instead")
    values = []
    for name, v in axes.items():
        try:
            array = np.asarray(v)
        except ValueError:
            array = np.asarray(None)
        if array.dtype.kind not in "iuf":
            raise TypeError(f"grid: {name} must be a sequence of real numbers, got {v!r}")
        values.append(array.astype(float).ravel())
    shape = tuple(len(v) for v in values)
    changes: dict[str, Any] = {}
    for axis, (name, v) in enumerate(zip(axes, values)):
        view = [1] * len(shape)
        view[axis] = len(v)
        changes[name] = np.broadcast_to(v.reshape(view), shape).copy()
    return dataclasses.replace(obj, **changes)
