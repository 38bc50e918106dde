"""Hyperparameter grids.

A learner (or objective) whose float field holds an array *is* a grid over that field, and the arrays of all
fields broadcast together (NumPy rules) to the run's grid shape. Two ways to build one:

* :func:`grid`: the Cartesian product, one axis per field (``eta`` × ``gamma``: 3 × 2 points);
* :func:`paired`: one axis whose ``k``-th point takes the ``k``-th value of every named field (3 points).

Broadcasting alone would pair any two arrays of equal shape point by point, silently: :func:`check_grid`
(called by :func:`jcsol.run` before any work starts) refuses two fields that vary along the same grid axis unless
:func:`paired` made them, which the object records (:attr:`jcsol.Learner.pairings`), whatever becomes of the
arrays. Arrays shaped to broadcast into a product by hand (``(3, 1)`` and ``(1, 2)``) are accepted, as is a
learner's grid with an objective's on axes of their own.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import jax
import numpy as np
from numpy.typing import ArrayLike

from .base import Configurable, with_pairing

T = TypeVar("T", bound=Configurable)


def decades(low: float = 1e-5, high: float = 1e5) -> np.ndarray:
    """The powers of ten from ``low`` to ``high``: ``decades()`` is the papers' ``{10^-5, …, 10^5}``.

    Each value is the float its literal reads as (``float("1e-5")``, the nearest double to 10⁻⁵), not a power
    computed by NumPy (``10.0 ** np.arange(-5, 6)`` starts at ``9.999999999999999e-06``), so every value compares
    equal to its literal: ``runs.query("eta == 1e-5")`` finds the runs of the first one.

    >>> import jcsol
    >>> jcsol.decades(1e-2, 1e2).tolist()
    [0.01, 0.1, 1.0, 10.0, 100.0]
    """
    for name, value in (("low", low), ("high", high)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float, np.integer, np.floating))
            or not 0 < value < np.inf
        ):
            raise ValueError(f"decades: {name} must be a power of ten > 0, got {value!r}")
    lo, hi = np.log10(low), np.log10(high)
    if not (np.isclose(lo, round(lo)) and np.isclose(hi, round(hi)) and lo <= hi):
        raise ValueError(f"decades needs powers of ten low <= high, got {low}, {high}")
    return np.array([float(f"1e{k}") for k in range(round(lo), round(hi) + 1)])


def grid(obj: T, **axes: ArrayLike) -> T:
    """The Cartesian product of the given values, one grid axis per keyword, in the order given.

    >>> import jcsol
    >>> g = jcsol.grid(jcsol.ACOG(), eta=jcsol.decades(1e-2, 1e2), gamma=[0.5, 1.0])
    >>> g.eta.shape, g.gamma.shape
    ((5, 2), (5, 2))

    Fields not named keep their (scalar) values. To combine a learner's grid with an objective's, give
    them shapes that broadcast, e.g. ``eta`` of shape ``(11, 1)`` and ``alpha_p`` of shape ``(1, 9)``.
    """
    values = _axis_values("grid", obj, axes)
    shape = tuple(len(v) for v in values)
    changes: dict[str, Any] = {}
    for axis, (name, v) in enumerate(zip(axes, values)):
        view = [1] * len(shape)
        view[axis] = len(v)
        changes[name] = np.broadcast_to(v.reshape(view), shape).copy()
    return dataclasses.replace(obj, **changes)


def paired(obj: T, **values: ArrayLike) -> T:
    """One grid axis along which every named field takes its values in step: point ``k`` has the ``k``-th
    value of each (``zip``, where :func:`grid` takes the product).

    >>> import jcsol
    >>> g = jcsol.paired(jcsol.CWCVaR(), alpha=[0.01, 0.1], beta=[0.3, 0.9])
    >>> g.alpha.tolist(), g.beta.tolist()
    ([0.01, 0.1], [0.3, 0.9])

    Every field needs the same number of values; fields not named keep their (scalar) values.
    """
    arrays = _axis_values("paired", obj, values)
    lengths = {name: len(v) for name, v in zip(values, arrays)}
    if len(set(lengths.values())) > 1:
        counts = ", ".join(f"{n}: {k}" for n, k in lengths.items())
        raise ValueError(f"paired needs the same number of values in every field, got {counts}")
    if not arrays:
        return obj
    return with_pairing(dataclasses.replace(obj, **dict(zip(values, arrays))), values)


def check_grid(learner: Any, objective: Any = None) -> None:
    """Refuses, before a run, hyperparameter arrays that would pair their values point by point unasked.

    Every array-valued field of the learner, and the objective's fields as one (an objective's values belong
    together: ``Cost``'s ``c_p`` and ``c_n`` sum to 1), must vary along grid axes of its own; fields made by one
    :func:`paired` call count as one. Fields whose shapes do not broadcast are left to the run's own message.
    """
    owners = [(learner, False)] + ([(objective, True)] if objective is not None else [])
    fields = []  # (owner, name, group, array)
    for obj, as_one in owners:
        for name, value in obj.hyperparameters().items():
            if isinstance(value, jax.core.Tracer) or np.ndim(value) == 0:
                continue
            group = ("objective", id(obj)) if as_one else _pairing(obj, name) or (id(obj), name)
            fields.append((obj, name, group, np.asarray(value, np.float64)))
    if len({f[2] for f in fields}) < 2:
        return
    try:
        shape = np.broadcast_shapes(*(f[3].shape for f in fields))
    except ValueError:
        return
    along: dict[int, dict[Any, tuple]] = {}
    for obj, name, group, a in fields:
        padded = a.reshape((1,) * (len(shape) - a.ndim) + a.shape)
        for axis in range(len(shape)):
            if padded.shape[axis] > 1 and np.ptp(padded, axis=axis).any():
                along.setdefault(axis, {}).setdefault(group, (obj, name, a.shape))
    for axis, groups in sorted(along.items()):
        if len(groups) < 2:
            continue
        clash = list(groups.values())
        labels = " and ".join(f"{type(obj).__name__}.{name}" for obj, name, _ in clash)
        shapes = " and ".join(str(s) for _, _, s in clash)
        message = (
            f"{labels} vary along the same grid axis {axis} (shapes {shapes}), so a run would pair their "
            f"values point by point ({shape[axis]} points), not take every combination "
            f"({shape[axis] ** len(clash)}). "
        )
        if all(obj is learner for obj, _, _ in clash):
            owner = type(learner).__name__
            values = ", ".join(f"{name}=[...]" for _, name, _ in clash)
            message += (
                f"For every combination use jcsol.grid({owner}(...), {values}); to pair them on purpose use "
                f"jcsol.paired({owner}(...), {values})."
            )
        else:
            message += (
                "For every combination give the learner's and the objective's values axes of their own, "
                "e.g. shapes (3, 1) and (1, 4)."
            )
        raise ValueError(message)


# -- helpers ----------------------------------------------------------------------------------------------------


def _pairing(obj: Configurable, name: str) -> tuple[int, frozenset[str]] | None:
    """The :func:`paired` group of ``obj`` that its field ``name`` belongs to, else ``None``."""
    group = next((g for g in obj.pairings if name in g), None)
    return None if group is None else (id(obj), group)


def _axis_values(what: str, obj: Any, axes: dict[str, ArrayLike]) -> list[np.ndarray]:
    """The values of each named field as a flat float array, after checking that ``obj`` has such fields and no
    other array-valued one."""
    names = [f.name for f in dataclasses.fields(obj) if not f.metadata.get("static")]
    unknown = [a for a in axes if a not in names]
    if unknown:
        raise ValueError(f"{type(obj).__name__} has no hyperparameter {unknown}; it has {names}")
    for name in names:
        if name not in axes and np.ndim(getattr(obj, name)) != 0:
            raise ValueError(f"{type(obj).__name__}.{name} is already an array; give its values to {what}() instead")
    values = []
    for name, v in axes.items():
        try:
            array = np.asarray(v)
        except ValueError:
            array = np.asarray(None)
        if array.dtype.kind not in "iuf":
            raise TypeError(f"{what}: {name} must be a sequence of real numbers, got {v!r}")
        if array.ndim > 1:  # flattened, its shape would be lost without a word
            raise ValueError(f"{what}: {name} must be one number or a 1-D sequence, got shape {array.shape}")
        values.append(array.astype(float).ravel())
    return values
