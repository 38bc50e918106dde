"""The engine: one stream scanned, many runs vmapped, one compiled computation.

A *run* is one pass of a learner over one ordering of the stream. :func:`run` executes all runs of a
protocol at once — every point of the hyperparameter grid times every permutation — as a single jitted
``lax.scan`` over rounds, vmapped over permutations (inner) and grid points (outer). Rows are gathered by
index at each round (``X[idx[t]]``): no permuted copy of ``X`` is ever made. Confusion counts are carried
through the scan, and online curves are sampled at ``curve_points`` rounds, so memory does not grow with
the length of the stream times the number of runs.
"""

from __future__ import annotations

import functools
import math
import os
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from .base import Example, Learner
from .metrics import FN, FP, TN, TP
from .objective import Objective, Sum
from .result import Result
from .stream import SparseRows, check_stream

_COMPILED: dict[Any, Any] = {}
_TRACES = 0


def trace_count() -> int:
    """How many times the engine has traced its computation (a new trace means a new compilation)."""
    return _TRACES


def run(learner: Learner, X, y, *, perms=20, objective: Objective | None = None, key: int | jax.Array = 0,
        curve_points: int = 0, dtype: str | np.dtype | None = None) -> Result:
    """Runs ``learner`` over permutations of the stream ``(X, y)``, for every point of its grid, in one jit.

    Args:
        learner: a learner; hyperparameters given as arrays form a grid (their shapes broadcast together with
            the objective's, see :func:`jcsol.grid`).
        X: features, ``(T, d)`` array or :class:`jcsol.SparseRows`; normalise beforehand if wanted
            (:func:`jcsol.datasets.load` does by default).
        y: labels in ``{-1, +1}``, ``+1`` the rare class.
        perms: a number of random permutations (reproducible from ``key``), or an explicit integer array of
            shape ``(P, L)`` (or ``(L,)``) whose rows are the orders of the examples in each run; a row may
            also be any sequence of row indices (a training fold, say).
        objective: :class:`jcsol.Sum` (default) or :class:`jcsol.Cost`; sets ``ρ`` and the measures' weights.
        key: seed (int) or ``jax.random.key`` for the permutations and the learners' initial states.
        curve_points: number of rounds, evenly spaced and ending at the last, at which the online counts are
            recorded (0: none; ``L`` gives every round).
        dtype: ``"float32"`` (default) or ``"float64"`` (needs ``jax.config.update("jax_enable_x64", True)``).

    Returns:
        A :class:`jcsol.Result` with per-run counts and measures of shape ``grid_shape + (P,)``.
    """
    objective = Sum() if objective is None else objective
    if not isinstance(learner, Learner):
        raise TypeError(f"learner must be a jcsol learner, got {type(learner).__name__}")
    if not isinstance(objective, Objective):
        raise TypeError(f"objective must be jcsol.Sum(...) or jcsol.Cost(...), got {type(objective).__name__}")
    X, y = check_stream(X, y)
    dtype = _resolve_dtype(dtype)
    key = jax.random.key(key) if isinstance(key, (int, np.integer)) else key
    perm_key, init_key = jax.random.split(key)
    idx = _orders(perms, len(y), perm_key)
    n_pos = (y[idx] > 0).sum(axis=1).astype(np.int32)
    n_neg = (idx.shape[1] - n_pos).astype(np.int32)
    if objective.needs_both_classes() and (np.any(n_pos == 0) or np.any(n_neg == 0)):
        which = "positive" if np.any(n_pos == 0) else "negative"
        raise ValueError(
            f"a run's stream has no {which} example, so ρ = α_p·T_n/(α_n·T_p) of Sum(rho='offline') is undefined; "
            "use Sum(rho='laplace') or Cost(...)"
        )
    d = X.shape[1]
    grid_shape, flat_learner, flat_objective = _flatten_grid(learner, objective, dtype)
    n_grid, n_perm = math.prod(grid_shape), idx.shape[0]
    _check_memory(learner, d, n_grid * n_perm, dtype)

    n_curve = min(int(curve_points), idx.shape[1])
    if n_curve < 0:
        raise ValueError(f"curve_points must be >= 0, got {curve_points}")
    slots = (np.arange(idx.shape[1]) * n_curve // idx.shape[1]).astype(np.int32)
    curve_t = np.searchsorted(slots, np.arange(n_curve), side="right").astype(np.int64)

    data = ((X.indices, X.values.astype(dtype)) if isinstance(X, SparseRows) else X.astype(dtype))
    per_perm = _pad_runs((idx, jax.random.split(init_key, n_perm), n_pos, n_neg), len(jax.local_devices()))
    args = jax.device_put((flat_learner, flat_objective, data, y.astype(dtype), *per_perm, slots))
    compiled, time_compile = _compiled(args, n_curve=n_curve, d=d)
    start = time.perf_counter()
    outputs = jax.block_until_ready(compiled(*args))
    time_run = time.perf_counter() - start
    states, counts, curve = jax.tree.map(lambda a: a[:, :n_perm], outputs)

    unflat = lambda a: np.asarray(a).reshape(grid_shape + a.shape[1:])
    return Result(
        learner=learner, objective=objective, grid_shape=grid_shape, orders=idx,
        counts=unflat(counts), curve=unflat(curve) if n_curve else None, curve_t=curve_t if n_curve else None,
        states=jax.tree.map(lambda a: a.reshape(grid_shape + a.shape[1:]), states),
        time_compile=time_compile, time_run=time_run,
    )


def _resolve_dtype(dtype) -> np.dtype:
    dtype = np.dtype("float32" if dtype is None else dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    if dtype == np.float64 and not jax.config.jax_enable_x64:
        raise ValueError('dtype="float64" needs 64-bit JAX: call jax.config.update("jax_enable_x64", True) first')
    return dtype


def _orders(perms, n: int, key: jax.Array) -> np.ndarray:
    """The ``(P, L)`` int32 matrix of row orders, one row per run."""
    if isinstance(perms, (int, np.integer)) and not isinstance(perms, bool):
        if perms < 1:
            raise ValueError(f"perms must be >= 1, got {perms}")
        keys = jax.random.split(key, int(perms))
        return np.asarray(jax.vmap(lambda k: jax.random.permutation(k, n))(keys), dtype=np.int32)
    orders = np.asarray(perms)
    if orders.ndim == 1:
        orders = orders[None, :]
    if orders.ndim != 2 or not np.issubdtype(orders.dtype, np.integer):
        raise ValueError(f"perms must be a count or an integer array of shape (P, L), got {orders.dtype} {orders.shape}")
    if orders.shape[0] == 0 or orders.shape[1] == 0:
        raise ValueError(f"perms has shape {orders.shape}: every run needs at least one example")
    if orders.min() < 0 or orders.max() >= n:
        raise ValueError(f"perms holds row indices outside [0, {n}) for a stream of {n} examples")
    return orders.astype(np.int32)


def _flatten_grid(learner: Learner, objective: Objective, dtype) -> tuple[tuple[int, ...], Learner, Objective]:
    """Broadcasts every hyperparameter leaf to the common grid shape and flattens it to one axis."""
    leaves, treedef = jax.tree.flatten((learner, objective))
    arrays = [np.asarray(leaf, dtype=dtype) for leaf in leaves]
    try:
        grid_shape = tuple(np.broadcast_shapes(*(a.shape for a in arrays)))
    except ValueError:
        shapes = ", ".join(str(a.shape) for a in arrays)
        raise ValueError(f"hyperparameter arrays of shapes {shapes} do not broadcast to one grid; "
                         "build product grids with jcsol.grid") from None
    n = math.prod(grid_shape)
    flat = [np.broadcast_to(a, grid_shape).reshape(n) for a in arrays]
    return grid_shape, *jax.tree.unflatten(treedef, flat)


def _available_bytes() -> int:
    device = jax.devices()[0]
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _check_memory(learner: Learner, d: int, n_runs: int, dtype) -> None:
    """Refuses a run whose learner states (twice: the scan carries old and new) would not fit in memory."""
    shapes = jax.eval_shape(lambda: learner.init(d, jax.random.key(0), dtype))
    per_run = sum(math.prod(s.shape) * s.dtype.itemsize for s in jax.tree.leaves(shapes))
    need, have = 2 * per_run * n_runs, _available_bytes()
    if need > have:
        gib = 2.0**30
        raise MemoryError(
            f"{learner.name} with d={d} needs {per_run / gib:.2f} GiB of state per run; {n_runs} runs need "
            f"{need / gib:.1f} GiB, more than the {have / gib:.1f} GiB available; {learner.too_large_hint()}"
        )


def _pad_runs(per_perm: tuple, n_devices: int) -> tuple:
    """Pads the permutation axis to a multiple of the device count by repeating the last permutation."""
    pad = -per_perm[0].shape[0] % n_devices
    if not pad:
        return per_perm
    return tuple(jnp.concatenate([a, jnp.repeat(a[-1:], pad, axis=0)]) for a in per_perm)


def _compiled(args, *, n_curve: int, d: int):
    """The compiled computation for these argument shapes, compiled once and cached (with its compile time).

    With several local devices the permutation axis is split across them (``shard_map`` over a one-axis
    mesh named ``"runs"``); the data and the grid are replicated, as every run reads the whole stream.
    """
    leaves, treedef = jax.tree.flatten(args)
    devices = tuple(jax.local_devices())
    signature = (treedef, tuple(jax.typeof(leaf) for leaf in leaves), n_curve, d, devices)
    if signature not in _COMPILED:
        start = time.perf_counter()
        body = functools.partial(_simulate_impl, n_curve=n_curve, d=d)
        if len(devices) > 1:
            mesh = Mesh(np.array(devices), ("runs",))
            split, whole = PartitionSpec("runs"), PartitionSpec()
            body = jax.shard_map(body, mesh=mesh, in_specs=(whole,) * 4 + (split,) * 4 + (whole,),
                                 out_specs=PartitionSpec(None, "runs"), check_vma=False)
        compiled = jax.jit(body).lower(*args).compile()
        _COMPILED[signature] = (compiled, time.perf_counter() - start)
        return _COMPILED[signature]
    return _COMPILED[signature][0], 0.0


def _row(data, i, d: int) -> jax.Array:
    if isinstance(data, tuple):
        indices, values = data
        return jnp.zeros(d, values.dtype).at[indices[i]].add(values[i])
    return data[i]


def _simulate_impl(learner, objective, data, y, idx, keys, n_pos, n_neg, slots, *, n_curve, d):
    global _TRACES
    _TRACES += 1
    dtype = y.dtype
    one_hot = jnp.arange(4)

    def one_run(learner, objective, order, key, total_pos, total_neg):
        def body(carry, inputs):
            state, counts, curve = carry
            i, slot = inputs
            label = y[i]
            positive = label > 0
            seen_pos = counts[TP] + counts[FN] + positive
            seen_neg = counts[FP] + counts[TN] + (~positive)
            rho = objective.weight(positive, seen_pos, seen_neg, total_pos, total_neg).astype(dtype)
            state, info = learner.step(state, Example(_row(data, i, d), label, rho))
            predicted_negative = info.score < 0
            cell = 2 * (~positive) + predicted_negative  # TP=0, FN=1, FP=2, TN=3
            counts = counts + (one_hot == cell)
            if n_curve:
                curve = curve.at[slot].set(counts)
            return (state, counts, curve), None

        init = (learner.init(d, key, dtype), jnp.zeros(4, jnp.int32), jnp.zeros((n_curve, 4), jnp.int32))
        (state, counts, curve), _ = jax.lax.scan(body, init, (order, slots))
        return state, counts, curve

    # Permutations outermost: each round gathers one row per permutation, shared by the whole grid, and
    # the batched products over (P, G, d) states need no transposes.
    over_grid = jax.vmap(one_run, in_axes=(0, 0, None, None, None, None))
    over_perms = jax.vmap(over_grid, in_axes=(None, None, 0, 0, 0, 0))
    runs = over_perms(learner, objective, idx, keys, n_pos, n_neg)
    return jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), runs)

