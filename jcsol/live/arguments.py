"""The arguments of :class:`jcsol.Live`, checked when it is made, each refusal naming the argument.

A count (``auc_window``, ``store_size``, ``n_features``, ``batch_sizes``) is an integer: a float, a boolean or
a string is refused rather than rounded or read. A rate, margin or discount is a real number that stays what it
is in the working dtype (:func:`real`; the board's rules for them: :meth:`jcsol.live.board.Selection.check`): a
``margin`` of ``1e39`` would be infinite in float32 (FTL would never switch), a ``forgetting`` of ``1e-50``
would be 0. ``key`` is a seed as :func:`jcsol.run` takes it, in ``[0, 2**32)``.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from ..core.scaling import check_scale
from .store import ON_FULL


def count(name: str, value, *, low: int = 1, high: int = 2**31) -> int:
    """``value`` as an int in ``[low, high)``; a boolean, float or string is refused naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    if not low <= value < high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}), got {value}")
    return int(value)


def real(name: str, value, dtype: np.dtype) -> float:
    """``value`` as a float, finite both as given and in ``dtype``; a boolean or string refused naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    with np.errstate(over="ignore"):
        if not np.isfinite(dtype.type(value)):
            raise ValueError(f"{name}={value:g} is beyond the range of {dtype.name} (±{np.finfo(dtype).max:.4g})")
    return value


def batch_sizes_of(batch_sizes) -> tuple[int, ...]:
    """The declared batch sizes, distinct, largest first: a list, tuple, range or array of integers >= 1 (a
    string, or an iterator that checking would consume, is refused)."""
    if isinstance(batch_sizes, (str, bytes)) or not isinstance(batch_sizes, (Sequence, np.ndarray)):
        raise TypeError(
            f"batch_sizes must be a list or tuple of integers, got {type(batch_sizes).__name__} {batch_sizes!r}"
        )
    sizes = [count("batch_sizes", b) for b in np.asarray(batch_sizes, dtype=object).reshape(-1).tolist()]
    return tuple(sorted(set(sizes), reverse=True))


def on_full_of(on_full) -> str:
    if not isinstance(on_full, str) or on_full not in ON_FULL:
        raise ValueError(f"on_full must be one of {', '.join(map(repr, ON_FULL))}, got {on_full!r}")
    return on_full


def key_of(key) -> int:
    """The seed, as :func:`jcsol.run` takes an int seed: in ``[0, 2**32)`` (JAX keeps 32 bits of it)."""
    if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)):
        raise TypeError(f"key must be an int seed in [0, 2**32), got {key!r} ({type(key).__name__})")
    if not 0 <= key < 2**32:
        raise ValueError(f"key must be a seed in [0, 2**32), got {key}")
    return int(key)


def encoder_of(encoder):
    """``encoder`` when it is a table encoder (it encodes, and it is saved: ``fit_transform``, ``transform``,
    ``state_dict``, ``from_state_dict``, ``n_features``), or ``None``."""
    needs = ("fit_transform", "transform", "state_dict", "from_state_dict", "n_features")
    if encoder is not None and not all(hasattr(encoder, a) for a in needs):
        raise TypeError(
            f"encoder must be a jcsol.features.TableEncoder (or an object with {', '.join(needs)}), got "
            f"{type(encoder).__name__}"
        )
    return encoder


def n_features_of(n_features, encoder) -> int | None:
    """``d``: ``n_features`` (an integer in ``[1, 2**31)``), else the encoder's; both given must agree."""
    d = None if n_features is None else count("n_features", n_features)
    if encoder is not None:
        theirs = count("the encoder's n_features", encoder.n_features)
        if d is not None and d != theirs:
            raise ValueError(f"n_features={d}, but the encoder makes rows of {theirs} features")
        d = theirs
    return d


def scales_of(scale, n_learners: int) -> tuple:
    """Each learner's ``scale=`` (:mod:`jcsol.core.scaling`): one value for every learner of the list, or a list of
    one value a learner, so that one board serves the same grid on the rows as given and on scaled rows."""
    if scale is None or isinstance(scale, str) or not isinstance(scale, Sequence):
        check_scale(scale)  # refuses any other value than None and "online"
        return (scale,) * n_learners
    if len(scale) != n_learners:
        raise ValueError(f"scale: a list of {len(scale)} values for {n_learners} learners; give one a learner")
    for each in scale:
        check_scale(each)
    return tuple(scale)
