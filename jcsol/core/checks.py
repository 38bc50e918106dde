"""The checks every entry point (:func:`jcsol.run`, :class:`jcsol.Live`, the estimator) makes before any work:
the dtype, the grid and its blocks, and the memory a call would fill."""

from __future__ import annotations

import math

import jax
import numpy as np

from ..base import Learner, in_dtype
from ..devices import available_memory
from ..objective import Objective

#: The share of the free memory a call may plan to fill; the rest stays free for what no estimate counts
#: (compile-time buffers, the allocator's fragmentation, other processes' growth).
MEMORY_USABLE = 0.8


def resolve_dtype(dtype) -> np.dtype:
    """``dtype`` checked: float32 (the default, for ``None``) or float64 with 64-bit JAX enabled."""
    dtype = np.dtype("float32" if dtype is None else dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    if dtype == np.float64 and not jax.config.jax_enable_x64:  # type: ignore[attr-defined]  # a dynamic flag
        raise ValueError('dtype="float64" needs 64-bit JAX: call jax.config.update("jax_enable_x64", True) first')
    return dtype


def check_grid_blocks(grid_blocks, n_grid: int) -> int:
    """``grid_blocks`` checked: a whole number of blocks, none of them empty, for a grid of ``n_grid`` points."""
    valid = [k for k in range(1, n_grid + 1) if (k - 1) * -(-n_grid // k) < n_grid]
    if isinstance(grid_blocks, bool) or not isinstance(grid_blocks, (int, np.integer)) or grid_blocks not in valid:
        shown = ", ".join(map(str, valid)) if len(valid) <= 12 else f"{', '.join(map(str, valid[:11]))}, …"
        raise ValueError(
            f"grid_blocks must cut the grid's {n_grid} point(s) into blocks of equal size, none of them empty: "
            f"one of {shown}; got {grid_blocks!r}"
        )
    return int(grid_blocks)


def flatten_grid(learner: Learner, objective: Objective, dtype) -> tuple[tuple[int, ...], Learner, Objective]:
    """Broadcasts every hyperparameter leaf to the common grid shape and flattens it to one axis, after checking
    the values in ``dtype`` (:func:`jcsol.base.in_dtype`)."""
    leaves, treedef = jax.tree.flatten((in_dtype(learner, dtype), in_dtype(objective, dtype)))
    arrays = [np.asarray(leaf, dtype=dtype) for leaf in leaves]
    try:
        grid_shape = tuple(np.broadcast_shapes(*(a.shape for a in arrays)))
    except ValueError:
        shapes = ", ".join(str(a.shape) for a in arrays)
        raise ValueError(
            f"hyperparameter arrays of shapes {shapes} do not broadcast to one grid; "
            "build product grids with jcsol.grid"
        ) from None
    n = math.prod(grid_shape)
    flat = [np.broadcast_to(a, grid_shape).reshape(n) for a in arrays]
    return grid_shape, *jax.tree.unflatten(treedef, flat)


def check_memory(learner: Learner, d: int, n_runs: int, dtype, extra_bytes: int = 0) -> None:
    """Refuses a run that would not fit in memory with room to spare (:data:`MEMORY_USABLE`).

    Counted per run, the learner's state three times: the scan's carry, the round's temporaries (a full
    covariance update builds the new ``d × d`` matrix beside the old one: CW's does, per run of the vmapped
    round), and the result's copy on the host; plus ``extra_bytes`` for the whole call (the rows on the device,
    the curve, the recorded scores). ``tests/test_hostile_api.py`` checks the estimate against the peak that
    XLA's compiled memory analysis gives for several learners."""
    per_run = state_bytes(learner, d, dtype)
    what = f"{learner.name} with d={d} needs {per_run / 2.0**30:.2f} GiB of state per run; {n_runs} runs need "
    require_memory(3 * per_run * n_runs + int(extra_bytes), what, learner.too_large_hint())


def state_bytes(learner: Learner, d: int, dtype) -> int:
    """The bytes of one run's state of ``learner`` over ``d`` features in ``dtype``: traced once per learner type,
    static options, hyperparameter shapes, ``d`` and ``dtype``."""
    leaves, treedef = jax.tree.flatten(learner)
    key = (treedef, tuple(np.shape(leaf) for leaf in leaves), d, np.dtype(dtype).name)
    if key not in _STATE_BYTES:
        shapes = jax.eval_shape(lambda: learner.init(d, jax.random.key(0), dtype))
        _STATE_BYTES[key] = sum(math.prod(s.shape) * s.dtype.itemsize for s in jax.tree.leaves(shapes))
    return _STATE_BYTES[key]


_STATE_BYTES: dict[tuple, int] = {}


def require_memory(need: int, what: str, hint: str) -> None:
    """Refuses ``need`` bytes beyond :data:`MEMORY_USABLE` of what the device has free
    (:func:`jcsol.devices.available_memory`): ``MemoryError("<what><need> GiB, more than the <usable> GiB
    usable of the <free> GiB available; <hint>")``."""
    have = available_memory()
    usable = int(MEMORY_USABLE * have)
    if need > usable:
        gib = 2.0**30
        raise MemoryError(
            f"{what}{need / gib:.1f} GiB, more than the {usable / gib:.1f} GiB usable of the {have / gib:.1f} GiB "
            f"available; {hint}"
        )
