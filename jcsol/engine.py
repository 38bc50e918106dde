"""The engine: one stream scanned, many runs vmapped, one compiled computation.

A *run* is one pass of a learner over one ordering of the stream. :func:`run` executes all runs of a
protocol at once — every point of the hyperparameter grid times every permutation — as one compiled
``lax.scan`` over rounds, vmapped over grid points (inner) and *run units* (outer): a unit is one permutation
and one block of consecutive grid points (the whole grid unless ``grid_blocks`` cuts it), and the units are
split over the local devices, or over the devices of every process of a distributed run
(:mod:`jcsol.distributed`). Rows are gathered by index at each round (``X[idx[t]]``): no permuted copy of
``X`` is ever made. Confusion counts are carried through the scan and online curves are sampled at
``curve_points`` rounds, so memory does not grow with the length of the stream times the number of runs.

The scan is driven from Python in chunks of rounds, the carry (learner states, counts, curves) passed from
one chunk to the next. One mechanism gives progress reports, checkpoints that resume a killed run exactly,
and data streamed from disk (a :class:`jcsol.datasets.RowStore`: each chunk reads the rows it needs); each
chunk runs under a watchdog that ends a run whose chunk stops making progress (:mod:`jcsol.watchdog`). Every
chunk scans the same compiled step (a shorter last chunk gets its own scan of it), so the result does not
depend on the chunk size, bit for bit. No round is ever masked: a masked round would cost a copy of every
run's state, which for sparse rows is O(d) where the step itself is O(nnz) (the live learner's padded batches
run a loop that stops after their last real round instead).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple, overload

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.layout import Format, Layout, with_layout_constraint
from jax.sharding import Mesh, PartitionSpec

from . import kernel
from .base import Example, Learner, beyond_row_scales, check_hyperparameters
from .checkpoint import CheckpointError, load_checkpoint, load_share, save_checkpoint, save_share
from .compiled import CompiledCache
from .datasets.rowstore import RowStore
from .devices import available_memory
from .distributed import Spread, global_devices
from .grids import check_grid
from .linalg import SparseVector, densify, in_rounds
from .metrics import FN, FP, TN, TP
from .objective import Objective, Sum
from .paths import CompilerOptions, Kernel, Path, Scan, choose
from .result import Result
from .rounds import compensated_add
from .stream import SparseRows, check_costs, check_fits, check_labels, check_run_options, check_stream
from .watchdog import resolve_timeout, watch
from .xla_cpu import compile_options

DEFAULT_CHUNK = 16384
_COMPILED: CompiledCache[Any] = CompiledCache()


class ChunkDone(NamedTuple):
    """What :func:`run` reports to ``on_chunk`` after each chunk."""

    chunks_done: int
    n_chunks: int
    rounds_done: int
    states: Any  # learner states of every run, leading axes grid_shape + (P,); None off process 0 with gather="first"
    counts: Any = None  # confusion counts so far (tp, fn, fp, tn), grid_shape + (P, 4); None where states are None


@overload
def run(
    learner: Learner,
    X,
    y,
    *,
    perms=20,
    objective: Objective | None = None,
    costs=None,
    key: int | jax.Array = 0,
    curve_points: int = 0,
    record_scores: bool = False,
    dtype: str | np.dtype | None = None,
    chunk_size: int | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int = 1,
    progress: bool | None = None,
    on_chunk: Callable[[ChunkDone], None] | None = None,
    stall_timeout: float | str | None = "auto",
    grid_blocks: int = 1,
    gather: Literal["all"] = "all",
    path: str | Path = "auto",
) -> Result: ...


@overload
def run(
    learner: Learner,
    X,
    y,
    *,
    perms=20,
    objective: Objective | None = None,
    costs=None,
    key: int | jax.Array = 0,
    curve_points: int = 0,
    record_scores: bool = False,
    dtype: str | np.dtype | None = None,
    chunk_size: int | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int = 1,
    progress: bool | None = None,
    on_chunk: Callable[[ChunkDone], None] | None = None,
    stall_timeout: float | str | None = "auto",
    grid_blocks: int = 1,
    gather: str,
    path: str | Path = "auto",
) -> Result | None: ...


def run(
    learner: Learner,
    X,
    y,
    *,
    perms=20,
    objective: Objective | None = None,
    costs=None,
    key: int | jax.Array = 0,
    curve_points: int = 0,
    record_scores: bool = False,
    dtype: str | np.dtype | None = None,
    chunk_size: int | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int = 1,
    progress: bool | None = None,
    on_chunk: Callable[[ChunkDone], None] | None = None,
    stall_timeout: float | str | None = "auto",
    grid_blocks: int = 1,
    gather: str = "all",
    path: str | Path = "auto",
) -> Result | None:
    """Runs ``learner`` over permutations of the stream ``(X, y)``, for every point of its grid, in one jit.

    Args:
        learner: a learner; hyperparameters given as arrays form a grid (their shapes broadcast together with
            the objective's, see :func:`jcsol.grid`).
        X: features, ``(T, d)`` array or :class:`jcsol.SparseRows` (normalise beforehand if wanted;
            :func:`jcsol.datasets.load` does by default), or a :class:`jcsol.datasets.RowStore` on disk, whose
            rows are read chunk by chunk so that memory holds one chunk of rows, not the data.
        y: labels in ``{-1, +1}``, ``+1`` the rare class.
        perms: a number of random permutations (reproducible from ``key``), or ``"stream"``: one run per grid
            point over the rows in the order given (prequential evaluation in the stream's own order, the
            protocol of a drifting stream), or an explicit integer array of shape ``(P, L)`` (or ``(L,)``) whose
            rows are the orders of the examples in each run; a row may also be any sequence of row indices (a
            training fold, say).
        objective: :class:`jcsol.Sum` (default) or :class:`jcsol.Cost`; sets ``ρ`` and the measures' weights.
        costs: example-dependent costs ``c(x_t) >= 0``, shape ``(T,)``, given to the learners (the CW-CVaR
            family uses them) and summed over mistakes in :attr:`jcsol.Result.mistake_cost`; by default an
            example's cost is its class weight ``ρ_t``.
        key: seed (int) or ``jax.random.key`` for the permutations and the learners' initial states.
        curve_points: number of rounds, evenly spaced and ending at the last, at which the online counts are
            recorded (0: none; ``L`` gives every round).
        record_scores: keep every round's pre-update score (:attr:`jcsol.Result.scores`, ``grid_shape +
            (P, L)``): memory grows with runs × rounds.
        dtype: ``"float32"`` (default) or ``"float64"`` (needs ``jax.config.update("jax_enable_x64", True)``).
        chunk_size: rounds per compiled scan (default: 16384); the carry passes from chunk to chunk, and
            the result is bit-identical whatever the chunk size.
        checkpoint: a file where the carry is saved (atomically) every ``checkpoint_every`` chunks; when the
            file exists, the run resumes from it — after checking it belongs to this very run. Over several
            processes, each writes its share to ``PATH.<process>-of-<processes>`` and a resume needs the same
            process layout (``docs/distributed.md``).
        progress: show a progress bar of the rounds (``tqdm``: on stderr, or a widget in a notebook); by
            default shown when there are several chunks and stderr is a terminal or the code runs in a
            Jupyter/IPython kernel.
        on_chunk: called with a :class:`ChunkDone` after each chunk (and its checkpoint): progress, and the
            learner states and confusion counts of every run at that point (a running measure:
            ``jcsol.metrics.measure("sum", done.counts)``).
        stall_timeout: seconds a chunk may go without progress before the run ends with
            :class:`jcsol.StallError` naming the chunk and the device layout (its last checkpoint stays valid for a
            resume). On the CPU, progress is the process doing work (see :mod:`jcsol.watchdog`), so a slow chunk
            never trips it, a deadlocked one does; on an accelerator, the chunk finishing. ``"auto"`` (default):
            300 s on the CPU, no limit on accelerators; ``None``: no limit.
        grid_blocks: the grid's points are cut into this many blocks of consecutive points (the last padded with
            copies of the last point, computed and dropped), and each permutation of each block is a unit that
            devices hold apart: with fewer permutations than devices, ``grid_blocks > 1`` puts the idle devices
            to work; such units go at least two to a device (``docs/distributed.md`` says why). The result is
            bit-identical for any number of devices and processes given the same ``grid_blocks``; between two
            values it may differ in the last bits, as a block's grid points share each round's row in one
            matrix–vector product whose rounding depends on the block's size. Default 1: a device holds the
            whole grid of its permutations (the fastest on one device).
        gather: where the result of a run over several processes is gathered: ``"all"`` (default) gives every
            process the same whole :class:`jcsol.Result`; ``"first"`` gives it to process 0 only, and every other
            process returns ``None`` (and its ``on_chunk`` receives ``states=None``), for results too large to
            hold in every process. In one process, both return the result.
        path: how a chunk of rounds runs (:mod:`jcsol.paths`): ``"auto"`` (default) takes the one-kernel time
            loop on a GPU where it covers the learner (:class:`jcsol.Kernel`: dense rows in memory, a learner whose
            ``kernel_steps`` is true), a ``lax.scan`` elsewhere (:class:`jcsol.Scan`); ``"scan"`` or ``"kernel"``
            force one, and a :class:`jcsol.Scan` or :class:`jcsol.Kernel` also sets its options (unroll, block,
            warps, XLA options of the compilations). Off a GPU the kernel runs in Pallas' interpreter, for tests.
            The kernel sums a row's products in another order than XLA's dot: its states agree with the scan's to
            float32 rounding, not bit for bit.

    Returns:
        A :class:`jcsol.Result` with per-run counts and measures of shape ``grid_shape + (P,)`` (``None`` on the
        processes other than 0 with ``gather="first"``).
    """
    objective = Sum() if objective is None else objective
    if not isinstance(learner, Learner):
        raise TypeError(f"learner must be a jcsol learner, got {type(learner).__name__}")
    if not isinstance(objective, Objective):
        raise TypeError(f"objective must be jcsol.Sum(...) or jcsol.Cost(...), got {type(objective).__name__}")
    check_hyperparameters(learner)
    check_hyperparameters(objective)
    check_grid(learner, objective)
    if gather not in ("all", "first"):
        raise ValueError(f'gather must be "all" or "first", got {gather!r}')
    checkpoint = check_run_options(
        key=key,
        curve_points=curve_points,
        record_scores=record_scores,
        chunk_size=chunk_size,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        progress=progress,
        on_chunk=on_chunk,
    )
    platform = jax.local_devices()[0].platform
    stall_after = resolve_timeout(stall_timeout, platform)
    store = X if isinstance(X, RowStore) else None
    if store is not None:
        y = check_labels(y)
        if len(y) != store.shape[0]:
            raise ValueError(f"the row store has {store.shape[0]} rows but y has {len(y)} labels")
    else:
        X, y = check_stream(X, y)
    dtype = _resolve_dtype(dtype)
    chosen = choose(path, learner, dense_rows=store is None and not isinstance(X, SparseRows), platform=platform)
    if store is None:
        check_fits(X.values if isinstance(X, SparseRows) else X, dtype)
    costs = None if costs is None else check_costs(costs, len(y))
    if costs is not None:
        check_fits(costs, dtype, "costs")
    key = jax.random.key(key) if isinstance(key, (int, np.integer)) else key
    perm_key, init_key = jax.random.split(key)
    idx = _orders(perms, len(y), perm_key)
    n_perm, length = idx.shape
    n_pos = (y[idx] > 0).sum(axis=1).astype(np.int32)
    n_neg = (length - n_pos).astype(np.int32)
    if objective.needs_both_classes() and (np.any(n_pos == 0) or np.any(n_neg == 0)):
        which = "positive" if np.any(n_pos == 0) else "negative"
        raise ValueError(
            f"a run's stream has no {which} example, so ρ = α_p·T_n/(α_n·T_p) of Sum(rho='offline') is undefined; "
            "use Sum(rho='laplace') or Cost(...)"
        )
    d = X.shape[1]
    grid_shape, flat_learner, flat_objective = _flatten_grid(learner, objective, dtype)
    blocks = _check_grid_blocks(grid_blocks, math.prod(grid_shape))
    block = -(-math.prod(grid_shape) // blocks)  # grid points per unit
    n_units = n_perm * blocks
    runs_here = block * _runs_here(n_units)
    itemsize = dtype.itemsize
    rows_bytes = (
        0
        if store is not None  # one chunk of rows at a time
        else X.indices.nbytes + X.values.size * itemsize
        if isinstance(X, SparseRows)
        else X.size * itemsize
    )
    # a run's curve, its chunk's scores (kept for every round with record_scores), counts and keys
    per_run_bytes = (
        16 * min(int(curve_points), length)
        + (2 * length if record_scores else min(length, chunk_size or DEFAULT_CHUNK)) * itemsize
        + 256
    )
    stream_bytes = rows_bytes + 2 * length * itemsize + 16 * n_units * length  # rows, labels, costs, orders
    _check_memory(learner, d, runs_here, dtype, stream_bytes + runs_here * per_run_bytes)

    n_curve = int(curve_points)
    if not 0 <= n_curve <= length:
        raise ValueError(f"curve_points must be in [0, {length}] for runs of {length} rounds, got {curve_points}")
    chunk = min(length, int(chunk_size or DEFAULT_CHUNK))
    if chunk < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    if checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be >= 1, got {checkpoint_every}")
    n_chunks = -(-length // chunk)
    slots, curve_t = _curve_slots(length, n_curve)

    # units with their own hyperparameters go at least two to a device: XLA's CPU kernels of some JAX versions
    # (0.8, 0.10.0) round a device's products differently when its units' hyperparameters form an axis of one
    at_least = 2 if blocks > 1 else 1
    devices = _devices_for(n_units, at_least)
    n_devices = len(devices)
    # one block: every unit shares the whole grid's hyperparameters (not mapped over the units); several: each
    # unit holds its block's
    hyper: Any = (flat_learner, flat_objective)
    per_unit: tuple = (
        jnp.repeat(jax.random.split(init_key, n_perm), blocks, axis=0),
        np.repeat(idx, blocks, axis=0),
        np.repeat(n_pos, blocks),
        np.repeat(n_neg, blocks),
    )
    if blocks > 1:
        hyper, *per_unit = _pad_runs((_blocked(hyper, n_perm, blocks, block), *per_unit), n_devices, at_least)
    else:
        per_unit = _pad_runs(per_unit, n_devices)
    keys, idx_padded, n_pos_d, n_neg_d = per_unit
    n_runs_per_device = block * idx_padded.shape[0] // n_devices
    spread = (
        Spread(devices, idx_padded.shape[0], timeout=stall_after, on_cpu=platform == "cpu")
        if jax.process_count() > 1
        else None
    )
    everywhere = gather == "all" or spread is None or spread.process == 0
    chunks = (_ResidentChunks if store is None else _StoredChunks)(
        store if store is not None else X, y, costs, np.asarray(idx_padded), chunk, dtype, spread
    )
    if spread is None:
        hyper, n_runs = jax.device_put((hyper, (n_pos_d, n_neg_d)))
    else:  # every input a global array: each process places its own devices' part
        hyper = spread.split(hyper) if blocks > 1 else spread.whole(hyper)
        n_runs, keys = spread.split(((n_pos_d, n_neg_d), keys))
    fingerprint = (
        _fingerprint(
            learner,
            objective,
            store.fingerprint if store is not None else X,
            y if costs is None else (y, costs),
            idx,
            dtype,
            n_curve,
            chunk,
            init_key,
            blocks,
        )
        if checkpoint is not None or spread is not None
        else ""
    )  # "": nothing compares it
    if spread is not None:
        spread.same_call(
            fingerprint,
            record_scores=record_scores,
            on_chunk=on_chunk is not None,
            checkpoint_every=checkpoint_every if checkpoint is not None else 0,
            gather=gather == "first",
        )
    if checkpoint is None:
        restored = None
    elif spread is None:
        restored = load_checkpoint(checkpoint, fingerprint, n_chunks)
    else:
        restored = _resume_point(spread, checkpoint, fingerprint, n_chunks)
    if restored is not None and record_scores:
        raise ValueError(
            f"record_scores needs every round of the run, but checkpoint {checkpoint} resumes it after "
            f"{restored[0]} chunks; delete the checkpoint or leave out record_scores"
        )
    first = 0 if restored is None else restored[0]
    saved = first if checkpoint is not None else None  # chunks the checkpoint on disk holds
    pending = chunks.get(first) if first < n_chunks else chunks.get(0)

    init_fn, carry_shape, time_compile = _compiled_init(
        hyper[0],
        keys,
        n_grid=block,
        n_curve=n_curve,
        d=d,
        dtype=dtype,
        devices=devices,
        per_unit=blocks > 1,
        sparse_rows=isinstance(pending[0][0], tuple),
        compiler_options=chosen.compiler_options,
    )
    if restored is None:
        carry = init_fn(hyper[0], keys)
    elif spread is None:
        carry = _restore_carry(carry_shape, restored[1], n_units, n_devices, at_least, checkpoint)
    else:
        carry = spread.from_local(carry_shape, restored[1])
    show = _Progress(n_chunks, first, length, chunk, enabled=progress, name=learner.name)
    time_run, chunk_scores_seen = 0.0, []
    for k in range(first, n_chunks):
        window = slice(k * chunk, (k + 1) * chunk)
        data, order = pending if k == first else chunks.get(k)
        chunk_slots = slots[window]
        if isinstance(chosen, Kernel):  # one compiled kernel for every chunk: a short one padded, its length given
            rounds = len(chunk_slots)
            order, chunk_slots = _padded_chunk(order, chunk), np.pad(chunk_slots, (0, chunk - rounds))
        args = (*hyper, data, *n_runs, order, chunk_slots if spread is None else spread.whole(chunk_slots))
        if isinstance(chosen, Kernel):
            args += (np.int32(rounds) if spread is None else spread.whole(np.int32(rounds)),)
        advance_fn, seconds = _compiled_advance(
            carry_shape, args, d=d, devices=devices, per_unit=blocks > 1, path=chosen, record_scores=record_scores
        )
        time_compile += seconds
        start = time.perf_counter()
        carry, chunk_scores = watch(
            functools.partial(_advance_blocking, advance_fn, carry, args),
            timeout=stall_after,
            on_cpu=platform == "cpu",
            describe=functools.partial(
                _stalled, k, n_chunks, chunk, length, devices, n_runs_per_device, learner, d, checkpoint, saved
            ),
        )
        time_run += time.perf_counter() - start
        if record_scores:
            chunk_scores_seen.append(
                np.asarray(chunk_scores)
                if spread is None
                else spread.gather(chunk_scores, f"gathering the scores of chunk {k + 1}", everywhere=everywhere)
            )
        if checkpoint is not None and ((k + 1) % checkpoint_every == 0 or k + 1 == n_chunks):
            if spread is None:
                save_checkpoint(
                    checkpoint, fingerprint, k + 1, n_chunks, [np.asarray(a)[:n_units] for a in jax.tree.leaves(carry)]
                )
            else:
                save_share(checkpoint, fingerprint, k + 1, n_chunks, spread.local(carry), layout=spread.layout())
            saved = k + 1
        if spread is not None:  # no process starts a chunk before all saved the last: their shares stay in step
            spread.barrier(k + 1, f"the end of chunk {k + 1} of {n_chunks}")
        show.update(k + 1)
        if on_chunk is not None:
            seen = (carry.state, carry.counts)
            states, counts = (
                _on_host(seen, devices)
                if spread is None
                else spread.gather(seen, f"gathering the states of chunk {k + 1}", everywhere=everywhere)
            ) or (None, None)
            on_chunk(
                ChunkDone(
                    k + 1,
                    n_chunks,
                    min((k + 1) * chunk, length),
                    None if states is None else _grid_major(states, grid_shape, n_perm, blocks),
                    None if counts is None else np.asarray(_grid_major(counts, grid_shape, n_perm, blocks)),
                )
            )
    show.close()

    final = (
        _on_host(carry, devices)
        if spread is None
        else spread.gather(carry, "gathering the results", everywhere=everywhere)
    )
    if not everywhere:
        return None
    final = _grid_major(final, grid_shape, n_perm, blocks)
    scores = None
    if record_scores:  # never resumed, so every chunk's scores are here
        per_round = np.concatenate([a[:n_units] for a in chunk_scores_seen], axis=-1)[..., :length]
        scores = _grid_major(per_round, grid_shape, n_perm, blocks)
    _warn_diverged(learner, final.state, math.prod(grid_shape) * n_perm)
    if store is None:
        _warn_scale(learner, X, dtype)
    return Result(
        learner=learner,
        objective=objective,
        grid_shape=grid_shape,
        orders=np.array(idx),  # the drawn orders are shared between calls: the result holds its own
        counts=np.asarray(final.counts),
        curve=np.asarray(final.curve) if n_curve else None,
        curve_t=curve_t if n_curve else None,
        states=final.state,
        mistake_cost=_total_cost(np.asarray(final.mistake_cost)),
        scores=scores,
        labels=np.array(y) if record_scores else None,  # the measures of the scores read each round's label
        time_compile=time_compile,
        time_run=time_run,
        resumed_at=min(first * chunk, length),
        n_features=int(d),
    )


def _padded_chunk(order, chunk: int):
    """A chunk's row orders ``(units, rounds)`` padded with row 0 to ``chunk`` rounds (never run)."""
    rounds = order.shape[1]
    if rounds == chunk:
        return order
    if isinstance(order, np.ndarray):
        return np.pad(order, ((0, 0), (0, chunk - rounds)))
    return jnp.pad(order, ((0, 0), (0, chunk - rounds)))


def _on_host(tree, devices: tuple):
    """``tree`` as it is on one device; split over several, fetched to the host shard by shard. An eager
    operation on arrays split over several CPU devices is one program with a collective in it, which XLA's CPU
    runtime can abort on (a participant that never arrives)."""
    return tree if len(devices) == 1 else jax.tree.map(np.asarray, tree)


def _advance_blocking(advance_fn, carry, args):
    return jax.block_until_ready(advance_fn(carry, *args))


def _stalled(
    k: int,
    n_chunks: int,
    chunk: int,
    length: int,
    devices: tuple,
    runs_per_device: int,
    learner,
    d: int,
    checkpoint,
    saved: int | None,
    timeout: float,
) -> str:
    """What :class:`jcsol.StallError` says: the chunk, the device layout, and what can be resumed."""
    kind = devices[0].platform.upper()
    what = "the process did no work" if devices[0].platform == "cpu" else "the chunk did not finish"
    if checkpoint is None:
        resume = "No checkpoint was kept: pass checkpoint=PATH to make a long run resumable."
    elif saved:
        resume = (
            f"The checkpoint {checkpoint} holds the first {saved} chunk(s) and is intact: call jcsol.run "
            "again with the same arguments to resume from it."
        )
    else:
        resume = f"No chunk had finished, so the checkpoint {checkpoint} was not written yet."
    return (
        f"{learner.name} (d={d}) stalled in chunk {k + 1} of {n_chunks} (rounds {k * chunk + 1}–"
        f"{min((k + 1) * chunk, length)} of {length}): {what} for {timeout:g} s, on {len(devices)} {kind} "
        f"device(s) with {runs_per_device} run(s) each. {resume} Pass stall_timeout=None to wait without "
        "limit, or a larger number of seconds."
    )


def _warn_diverged(learner: Learner, states, n_runs: int) -> None:
    """A ``RuntimeWarning`` when runs end with non-finite weights: a diverged learner scores NaN, which the
    prediction rule (−1 iff score < 0) turns into +1 on every later round, so its counts look like a
    classifier that flags everything rather than a failure."""
    weights = getattr(states, learner.weights_field, None)
    if weights is None or not jnp.issubdtype(weights.dtype, jnp.floating):
        return
    xp = np if isinstance(weights, np.ndarray) else jnp
    finite = np.asarray(xp.isfinite(weights).reshape(n_runs, -1).all(axis=1))  # reduced where the runs are
    diverged = n_runs - int(finite.sum())
    if diverged:
        warnings.warn(
            f"{diverged} of {n_runs} runs of {learner.name} ended with non-finite weights (the learner "
            "diverged, and a NaN score predicts +1, so their counts are not a classifier's): lower its "
            "step size or scale the costs down",
            RuntimeWarning,
            stacklevel=3,
        )


def _warn_scale(learner: Learner, X, dtype) -> None:
    """A ``RuntimeWarning`` when rows are beyond the scales the learner's arithmetic holds on
    (:func:`jcsol.base.beyond_row_scales`)."""
    message = beyond_row_scales(learner, X.values if isinstance(X, SparseRows) else X, dtype)
    if message:
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _total_cost(pairs: np.ndarray) -> np.ndarray:
    """The mistake costs of :func:`_add_cost`'s pairs ``(…, 2)``: each sum with what its rounding lost added."""
    return pairs[..., 0] + pairs[..., 1]


def _grid_major(tree, grid_shape: tuple[int, ...], n_perm: int, blocks: int):
    """Leaves laid out (units, grid points of the unit's block, …) as (grid_shape…, permutations, …), the
    padded units and grid points dropped. Unit ``u`` is permutation ``u // blocks``, block ``u % blocks``."""
    n_grid = math.prod(grid_shape)

    def one(a):
        xp = np if isinstance(a, np.ndarray) else jnp
        per_perm = a[: n_perm * blocks].reshape((n_perm, blocks * a.shape[1]) + a.shape[2:])[:, :n_grid]
        return xp.swapaxes(per_perm, 0, 1).reshape(grid_shape + (n_perm,) + a.shape[2:])

    return jax.tree.map(one, tree)


def _check_grid_blocks(grid_blocks, n_grid: int) -> int:
    """``grid_blocks`` checked: a whole number of blocks, none of them empty, for a grid of ``n_grid`` points."""
    valid = [k for k in range(1, n_grid + 1) if (k - 1) * -(-n_grid // k) < n_grid]
    if isinstance(grid_blocks, bool) or not isinstance(grid_blocks, (int, np.integer)) or grid_blocks not in valid:
        shown = ", ".join(map(str, valid)) if len(valid) <= 12 else f"{', '.join(map(str, valid[:11]))}, …"
        raise ValueError(
            f"grid_blocks must cut the grid's {n_grid} point(s) into blocks of equal size, none of them empty: "
            f"one of {shown}; got {grid_blocks!r}"
        )
    return int(grid_blocks)


def _blocked(tree, n_perm: int, blocks: int, block: int):
    """Hyperparameter leaves of the flat grid as ``(n_perm * blocks, block)``: unit ``u`` holds the grid
    points of block ``u % blocks``, the last block padded with copies of the last point."""

    def one(a):
        padded = np.concatenate([a, np.repeat(a[-1:], blocks * block - a.shape[0])])
        return np.tile(padded.reshape(blocks, block), (n_perm, 1))

    return jax.tree.map(one, tree)


def _resolve_dtype(dtype) -> np.dtype:
    dtype = np.dtype("float32" if dtype is None else dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    if dtype == np.float64 and not jax.config.jax_enable_x64:  # type: ignore[attr-defined]  # a dynamic flag
        raise ValueError('dtype="float64" needs 64-bit JAX: call jax.config.update("jax_enable_x64", True) first')
    return dtype


def _orders(perms, n: int, key: jax.Array) -> np.ndarray:
    """The ``(P, L)`` int32 matrix of row orders, one row per run."""
    if n >= 2**31:
        raise ValueError(
            f"a stream of {n} examples: a run indexes its rows and counts its rounds in int32, below 2**31 "
            "(jcsol.Live learns an unbounded stream batch by batch)"
        )
    if isinstance(perms, str):
        if perms != "stream":
            raise ValueError(f'perms must be a count, "stream" or an integer array of row orders, got {perms!r}')
        return np.arange(n, dtype=np.int32)[None]
    if isinstance(perms, (int, np.integer)) and not isinstance(perms, bool):
        if perms < 1:
            raise ValueError(f"perms must be >= 1, got {perms}")
        # the orders, their copies for the devices and the draw's sort keys: 16 bytes a round of a run
        _require_memory(16 * int(perms) * n, f"perms={perms} runs of {n} rounds need ", "give fewer permutations")
        return _permutations(key, int(perms), n)
    try:
        orders = np.asarray(perms)
    except ValueError:  # NumPy's message for rows of different lengths names no argument
        raise ValueError("perms: the rows of an array of orders must all have the same length") from None
    if orders.ndim == 1:
        orders = orders[None, :]
    if orders.ndim != 2 or not np.issubdtype(orders.dtype, np.integer):
        raise ValueError(
            f"perms must be a count or an integer array of shape (P, L), got {orders.dtype} {orders.shape}"
        )
    if orders.shape[0] == 0 or orders.shape[1] == 0:
        raise ValueError(f"perms has shape {orders.shape}: every run needs at least one example")
    if orders.min() < 0 or orders.max() >= n:
        raise ValueError(f"perms holds row indices outside [0, {n}) for a stream of {n} examples")
    return orders.astype(np.int32)


def _permutations(key: jax.Array, perms: int, n: int) -> np.ndarray:
    """``perms`` random orders of ``n`` rows drawn from ``key`` (read-only), drawn once per key and size: the
    papers' protocol runs every learner on the same orders, and drawing a9a's 20 took longer than the compiled
    sweep of a first-order learner over them (XLA's CPU sort of the random keys)."""
    found = (np.asarray(jax.random.key_data(key)).tobytes(), perms, n)
    if found not in _DRAWN:
        if len(_DRAWN) >= 8:
            _DRAWN.pop(next(iter(_DRAWN)))
        drawn = np.asarray(_draw_permutations(key, perms, n), dtype=np.int32)
        drawn.flags.writeable = False
        _DRAWN[found] = drawn
    return _DRAWN[found]


_DRAWN: dict[tuple, np.ndarray] = {}


@functools.partial(jax.jit, static_argnums=(1, 2), compiler_options=compile_options())
def _draw_permutations(key: jax.Array, perms: int, n: int) -> jax.Array:
    return jax.vmap(lambda k: jax.random.permutation(k, n))(jax.random.split(key, perms))


def _flatten_grid(learner: Learner, objective: Objective, dtype) -> tuple[tuple[int, ...], Learner, Objective]:
    """Broadcasts every hyperparameter leaf to the common grid shape and flattens it to one axis."""
    leaves, treedef = jax.tree.flatten((learner, objective))
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


def _check_memory(learner: Learner, d: int, n_runs: int, dtype, extra_bytes: int = 0) -> None:
    """Refuses a run that would not fit in memory with room to spare (:data:`MEMORY_USABLE`).

    Counted per run, the learner's state three times: the scan's carry, the round's temporaries (a full
    covariance update builds the new ``d × d`` matrix beside the old one: CW's does, per run of the vmapped
    round), and the result's copy on the host; plus ``extra_bytes`` for the whole call (the rows on the device,
    the curve, the recorded scores). ``tests/test_hostile_api.py`` checks the estimate against the peak that
    XLA's compiled memory analysis gives for several learners."""
    shapes = jax.eval_shape(lambda: learner.init(d, jax.random.key(0), dtype))
    per_run = sum(math.prod(s.shape) * s.dtype.itemsize for s in jax.tree.leaves(shapes))
    what = f"{learner.name} with d={d} needs {per_run / 2.0**30:.2f} GiB of state per run; {n_runs} runs need "
    _require_memory(3 * per_run * n_runs + int(extra_bytes), what, learner.too_large_hint())


#: The share of the free memory a call may plan to fill; the rest stays free for what no estimate counts
#: (compile-time buffers, the allocator's fragmentation, other processes' growth).
MEMORY_USABLE = 0.8


def _require_memory(need: int, what: str, hint: str) -> None:
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


def _curve_slots(length: int, n_curve: int) -> tuple[np.ndarray, np.ndarray]:
    """For each round, the curve point it writes its counts to; and each point's round (1-based)."""
    slots = (np.arange(length) * n_curve // length).astype(np.int32) if n_curve else np.zeros(length, np.int32)
    return slots, np.searchsorted(slots, np.arange(n_curve), side="right").astype(np.int64)


class _ResidentChunks:
    """Data held on the device whole; each chunk's rounds index into it."""

    def __init__(self, X, y, costs, idx, chunk: int, dtype, spread: Spread | None = None):
        rows = (
            (X.indices, X.values.astype(dtype, copy=False))
            if isinstance(X, SparseRows)
            else X.astype(dtype, copy=False)
        )
        data = (rows, y.astype(dtype, copy=False), None if costs is None else costs.astype(dtype, copy=False))
        self.data = jax.device_put(data) if spread is None else spread.whole(data)
        self.idx, self.chunk, self.spread = idx, chunk, spread

    def get(self, k: int):
        order = self.idx[:, k * self.chunk : (k + 1) * self.chunk]
        return self.data, order if self.spread is None else self.spread.split(order)


class _StoredChunks:
    """Data on disk: each chunk reads the rows its rounds need, in the order the runs need them.

    Over several processes, each reads only its own runs' rows: the chunk's arrays keep their whole size, so
    that every device indexes them as in one process, but the other processes' rows stay zero. No device
    reads them: each run indexes only its own rows.
    """

    def __init__(self, store: RowStore, y, costs, idx, chunk: int, dtype, spread: Spread | None = None):
        self.store, self.idx, self.chunk, self.dtype, self.spread = store, idx, chunk, dtype, spread
        self.y, self.costs = y.astype(dtype), None if costs is None else costs.astype(dtype)

    def get(self, k: int):
        window = self.idx[:, k * self.chunk : (k + 1) * self.chunk]
        rows = window.ravel()
        local = np.arange(rows.size, dtype=np.int32).reshape(window.shape)
        if self.spread is None:
            indices, values = self.store.take(rows)
            costs = None if self.costs is None else self.costs[rows]
            return ((indices, values.astype(self.dtype)), self.y[rows], costs), local
        mine = slice(self.spread.runs.start * window.shape[1], self.spread.runs.stop * window.shape[1])
        indices = np.zeros((rows.size, self.store.width), self.store.indices.dtype)
        values = np.zeros((rows.size, self.store.width), self.dtype)
        indices[mine], read = self.store.take(rows[mine])
        values[mine] = read
        y = np.zeros(rows.size, self.dtype)
        y[mine] = self.y[rows[mine]]
        costs = None
        if self.costs is not None:
            costs = np.zeros(rows.size, self.dtype)
            costs[mine] = self.costs[rows[mine]]
        return self.spread.whole(((indices, values), y, costs)), self.spread.split(local)


def _pad_runs(per_unit, n_devices: int, at_least: int = 1):
    """Pads the unit axis (every leaf's first) to a multiple of the device count, with ``at_least`` units a
    device, by repeating the last unit."""
    n = jax.tree.leaves(per_unit)[0].shape[0]
    pad = n_devices * max(at_least, -(-n // n_devices)) - n
    if not pad:
        return per_unit
    return jax.tree.map(lambda a: jnp.concatenate([a, jnp.repeat(a[-1:], pad, axis=0)]), per_unit)


def _restore_carry(shapes, leaves: list[np.ndarray], n_units: int, n_devices: int, at_least: int, path) -> Any:
    """The carry saved in a checkpoint (unpadded units), checked against this run's shapes and padded again."""
    expected = jax.tree.leaves(shapes)
    ok = len(leaves) == len(expected) and all(
        a.shape == (n_units,) + e.shape[1:] and a.dtype == e.dtype for a, e in zip(leaves, expected)
    )
    if not ok:
        raise CheckpointError(
            f"checkpoint {path} holds a carry of other shapes than this run's; delete it to start over"
        )
    padded = _pad_runs(tuple(leaves), n_devices, at_least)
    return jax.device_put(jax.tree.unflatten(jax.tree.structure(shapes), list(padded)))


class _Progress:
    """A progress bar over the rounds of a run (``tqdm.auto``: text on a terminal, a widget in a notebook).

    Shown by default for runs of several chunks when stderr is a terminal or the code runs in a Jupyter or
    IPython kernel (a notebook, Colab); ``enabled`` True or False forces it on or off.
    """

    def __init__(self, n_chunks: int, first: int, length: int, chunk: int, enabled: bool | None, name: str):
        self.length, self.chunk = length, chunk
        if enabled is None:
            enabled = n_chunks > 1 and (sys.stderr.isatty() or _in_kernel())
        enabled = enabled and jax.process_index() == 0  # one bar for a run over several processes
        self.bar: Any = None  # a tqdm bar
        if enabled:
            from tqdm.auto import tqdm  # in a kernel this imports the notebook widgets: only when a bar is shown

            self.bar = tqdm(total=length, initial=min(first * chunk, length), desc=name, unit="round", file=sys.stderr)

    def update(self, done: int) -> None:
        if self.bar is not None:
            self.bar.update(min(done * self.chunk, self.length) - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _in_kernel() -> bool:
    """Whether the code runs in a Jupyter or IPython kernel (a notebook, Colab), where stderr is no terminal."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and "IPKernelApp" in shell.config


def _fingerprint(learner, objective, X, y, idx, dtype, n_curve: int, chunk: int, init_key, blocks: int) -> str:
    """A digest of everything that determines a run's carry, so a checkpoint is used only by its own run:
    learner and objective (static options and values), data, labels and costs, row orders, the key of the
    learners' initial states, dtype, curve points, chunk size and grid blocks."""
    digest = hashlib.sha256()
    digest.update(np.asarray(jax.random.key_data(init_key)).tobytes())
    leaves, treedef = jax.tree.flatten((learner, objective))
    digest.update(repr(treedef).encode())
    if isinstance(X, str):
        digest.update(X.encode())
    for part in (*leaves, *(X if isinstance(X, SparseRows) else () if isinstance(X, str) else (X,)), y, idx):
        arr = np.ascontiguousarray(np.asarray(part))
        digest.update(f"{arr.dtype}{arr.shape}".encode())
        digest.update(arr.tobytes())
    digest.update(f"{np.dtype(dtype)}|{n_curve}|{chunk}|{blocks}".encode())
    return digest.hexdigest()


def _devices_for(n_units: int, at_least: int = 1) -> tuple:
    """The devices a run's units are split over: in one process, its local devices, but no more than leave
    ``at_least`` units to each; over several processes, every device of every process (each process must take
    part, the units padded to ``at_least`` a device).

    A unit (one permutation, one block of grid points) is never split: its grid points share each round's row,
    so a learner's products over them are one matrix–vector product whose rounding depends on how many grid
    points it holds (XLA's CPU kernels take its rows in tiles). Splitting whole units leaves every unit's
    arithmetic as it is, so the result does not depend on the device count."""
    if jax.process_count() > 1:
        return global_devices()
    return tuple(jax.local_devices()[: max(1, min(n_units // at_least, len(jax.local_devices())))])


def _runs_here(n_units: int) -> int:
    """How many of ``n_units`` units this process's devices hold (all of them, in one process)."""
    if jax.process_count() == 1:
        return n_units
    return -(-n_units // jax.device_count()) * jax.local_device_count()


def _resume_point(spread: Spread, path, fingerprint: str, n_chunks: int) -> tuple[int, list[np.ndarray]] | None:
    """``(chunks done, this process's leaves)`` of the latest chunk every process holds a checkpoint share of;
    ``None`` when no process has any. The processes agree on it before any work, or all refuse."""
    try:
        found, refusal = load_share(path, fingerprint, n_chunks, layout=spread.layout()), None
    except CheckpointError as err:
        found, refusal = {}, err
    held = sorted(found, reverse=True)
    table = spread.agree([int(refusal is not None), *(held + [0, 0])[:2]], f"checking checkpoint {path}")
    if refusal is not None:
        raise refusal
    if table[:, 0].any():
        which = np.flatnonzero(table[:, 0]).tolist()
        raise CheckpointError(
            f"checkpoint {path}: process(es) {which} refused their share of it (their error says "
            "why); every process refuses, so that none starts alone"
        )
    held_by = [set(row[1:].tolist()) - {0} for row in table]
    if not any(held_by):
        return None
    common = set.intersection(*held_by)
    if not common:
        raise CheckpointError(
            f"checkpoint {path}: the processes hold shares of different chunks ({[sorted(h) for h in held_by]} "
            "chunks, by process): shares were deleted, or not written to one folder that every process sees; "
            f"delete {path}.* to start over"
        )
    return max(common), found[max(common)]


def _signature(tree, *static) -> tuple:
    leaves, treedef = jax.tree.flatten(tree)
    return (treedef, tuple(jax.typeof(leaf) for leaf in leaves), *static)


def _sharded(fn, devices: tuple, in_specs: tuple, out_specs: Any = None):
    """``fn`` with its unit axis split over ``devices`` (``shard_map`` over a mesh named ``"runs"``; ``fn`` itself
    on one device); the data are replicated, as every run reads the whole stream. The outputs are split over the
    units unless ``out_specs`` says otherwise."""
    if len(devices) == 1:
        return fn
    mesh = Mesh(np.array(devices), ("runs",))
    out_specs = PartitionSpec("runs") if out_specs is None else out_specs
    return jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)


def _compiled_init(
    learner,
    keys,
    *,
    n_grid: int,
    n_curve: int,
    d: int,
    dtype,
    devices: tuple,
    per_unit: bool,
    sparse_rows: bool,
    compiler_options: Mapping[str, Any] | CompilerOptions = (),
):
    """``(init, carry shapes, compile seconds)``, compiled once per signature and cached; the carry is laid out
    for sparse rows or dense ones (:func:`_carry_formats`)."""
    signature = _signature(
        (learner, keys), "init", n_grid, n_curve, d, np.dtype(dtype), devices, per_unit, sparse_rows, compiler_options
    )

    def build():
        split, whole = PartitionSpec("runs"), PartitionSpec()
        init = _sharded(
            functools.partial(_init_impl, n_grid=n_grid, n_curve=n_curve, d=d, dtype=dtype, per_unit=per_unit),
            devices,
            (split if per_unit else whole, split),
        )
        shape = jax.eval_shape(init, learner, keys)
        formats = _carry_formats(shape, learner, devices, sparse_rows)
        with _precision(devices):
            lowered = jax.jit(init, out_shardings=formats, compiler_options=compile_options()).lower(learner, keys)
        return lowered.compile(dict(compiler_options) or None), shape  # the path's options win

    (compiled, carry_shape), seconds = _COMPILED.get_or_build(signature, build)
    return compiled, carry_shape, seconds


def _compiled_advance(
    carry_shape, args, *, d: int, devices: tuple, per_unit: bool, path: Path | None = None, record_scores: bool = True
):
    """``(advance, compile seconds)`` for a chunk of these shapes on ``path`` (default: the scan), compiled once
    per signature and cached."""
    path = Scan() if path is None else path
    signature = _signature((carry_shape, args), "advance", d, devices, per_unit, path, record_scores)

    def build():
        program = advance_program(
            carry_shape, args, d=d, devices=devices, per_unit=per_unit, path=path, record_scores=record_scores
        )
        with _precision(devices):
            lowered = program.lower(carry_shape, *args)
        return lowered.compile(dict(path.compiler_options) or None)  # the path's options win

    return _COMPILED.get_or_build(signature, build)


def advance_program(
    carry_shape,
    args,
    *,
    d: int,
    devices: tuple,
    per_unit: bool,
    path: Path,
    record_scores: bool = True,
    platform: str | None = None,
):
    """The jitted chunk of rounds that :func:`run` compiles for ``path``, not yet lowered: ``(carry, *args) ->
    (carry, scores)``, the carry donated. A :class:`jcsol.Kernel` path takes the chunk's number of rounds as the
    last argument. ``platform`` (default: JAX's default backend) is the one the steps are written for, so that a
    chunk can be lowered for a GPU on a machine without one."""
    split, whole = PartitionSpec("runs"), PartitionSpec()
    hyper = split if per_unit else whole
    specs: tuple = (split, hyper, hyper, whole, split, split, split, whole)
    if isinstance(path, Kernel):
        impl: Callable = functools.partial(
            _advance_kernel, d=d, per_unit=per_unit, options=path, record_scores=record_scores
        )
        specs += (whole,)
    else:
        impl = functools.partial(_advance_impl, d=d, per_unit=per_unit, unroll=path.unroll, platform=platform)
    advance = _sharded(impl, devices, specs)
    formats = _carry_formats(carry_shape, args[0], devices, isinstance(args[2][0], tuple), platform)
    return jax.jit(
        advance,
        donate_argnums=0,
        in_shardings=(formats, *(None,) * len(args)),
        out_shardings=(formats, None),
        compiler_options=compile_options(),
    )


def lowered_chunk(
    learner: Learner,
    objective: Objective | None = None,
    *,
    d: int = 9,
    rounds: int = 50,
    perms: int = 2,
    curve_points: int = 3,
    sparse_rows: bool = False,
    path: Path | None = None,
    platform: str = "gpu",
    lowering_platform: str = "cuda",
    dtype="float32",
) -> jax.stages.Lowered:
    """The chunk of rounds :func:`run` would compile for ``learner`` on ``platform``, lowered for
    ``lowering_platform`` on whatever machine this is: an operation the accelerator's compiler cannot lower fails
    here, not on the accelerator. Shapes only: a stream of ``rounds`` rows of ``d`` features (sparse rows of ``d``
    entries when ``sparse_rows``), ``perms`` permutations, the learner's whole grid in one block; by default none
    of the sizes a power of 2, as a GPU kernel's blocks must be (the kernel path pads them)."""
    objective = Sum() if objective is None else objective
    path = Scan() if path is None else path
    dtype = np.dtype(dtype)
    grid_shape, flat_learner, flat_objective = _flatten_grid(learner, objective, dtype)
    keys = jax.random.split(jax.random.key(0), perms)
    carry_shape = jax.eval_shape(
        functools.partial(_init_impl, n_grid=math.prod(grid_shape), n_curve=curve_points, d=d, dtype=dtype),
        flat_learner,
        keys,
    )
    rows: Any = (
        (jax.ShapeDtypeStruct((rounds, d), np.int32), jax.ShapeDtypeStruct((rounds, d), dtype))
        if sparse_rows
        else jax.ShapeDtypeStruct((rounds, d), dtype)
    )
    counts = jax.ShapeDtypeStruct((perms,), np.int32)
    args: tuple = (
        flat_learner,
        flat_objective,
        (rows, jax.ShapeDtypeStruct((rounds,), dtype), None),
        counts,
        counts,
        jax.ShapeDtypeStruct((perms, rounds), np.int32),
        jax.ShapeDtypeStruct((rounds,), np.int32),
    )
    if isinstance(path, Kernel):
        args += (jax.ShapeDtypeStruct((), np.int32),)
    device = jax.local_devices()[0]
    program = advance_program(carry_shape, args, d=d, devices=(device,), per_unit=False, path=path, platform=platform)
    with _precision((device,) if platform == "cpu" else ()):
        return program.trace(carry_shape, *args).lower(lowering_platforms=(lowering_platform,))


def _precision(devices: tuple):
    """The context a run's programs are traced in, on ``devices`` (none: an accelerator's): float32 products in
    float32 on accelerators, whose default would take TF32's 10-bit mantissas for a matrix product; the CPU
    computes in float32 anyway."""
    on_cpu = bool(devices) and devices[0].platform == "cpu"
    return contextlib.nullcontext() if on_cpu else jax.default_matmul_precision("highest")


def _advance_kernel(
    carry, learner, objective, data, n_pos, n_neg, idx, slots, n_rounds, *, d, per_unit, options, record_scores
):
    """:func:`_advance_impl`'s chunk in one kernel (:func:`jcsol.kernel.advance`); the scores are empty unless
    recorded."""
    parts, scores = kernel.advance(
        tuple(carry),
        learner,
        objective,
        data,
        n_pos,
        n_neg,
        idx,
        slots,
        n_rounds,
        d=d,
        per_unit=per_unit,
        options=options,
        record_scores=record_scores,
    )
    if scores is None:
        scores = jnp.zeros(carry.counts.shape[:2] + (0,), data[1].dtype)
    return _Carry(*parts), scores


def _row(rows, i, d: int, sparse_steps: bool):
    """Row ``i``: dense, or as a :class:`SparseVector` for learners whose steps cost O(nnz)."""
    if isinstance(rows, tuple):
        row = SparseVector(rows[0][i], rows[1][i])
        return row if sparse_steps else densify(row, d)
    return rows[i]


# Runs are laid out units first, grid points of the unit's block second: each round gathers one row per unit,
# shared by the block, and the batched products over (units, block, d) states need no transposes.


class _Carry(NamedTuple):
    """What a run carries from round to round (and from chunk to chunk, and into checkpoints)."""

    state: Any
    counts: jax.Array  # (4,) int32: tp, fn, fp, tn
    curve: jax.Array  # (K, 4) int32: counts after the rounds of the curve points
    mistake_cost: jax.Array  # (2,): the example costs c_t summed over the rounds predicted wrongly (_add_cost)


def _add_cost(total: jax.Array, cost: jax.Array) -> jax.Array:
    """``total`` ``(2,)``, a sum and what its rounding lost, with ``cost`` added (:func:`jcsol.rounds.compensated_add`):
    a run's mistake cost stays within a unit or two in the last place of the exact sum, whatever the number of
    mistakes."""
    return jnp.stack(compensated_add(total[0], total[1], cost))


def _init_impl(learner, keys, *, n_grid, n_curve, d, dtype, per_unit=False):
    """Every unit's initial carry; ``learner`` holds each unit's hyperparameters when ``per_unit``, else the
    grid's, shared by every unit."""

    def one(learner, key):
        return _Carry(
            learner.init(d, key, dtype),
            jnp.zeros(4, jnp.int32),
            jnp.zeros((n_curve, 4), jnp.int32),
            jnp.zeros(2, dtype),
        )

    # axis_size: a learner without float hyperparameters has no leaf to map over
    over_grid = jax.vmap(one, in_axes=(0, None), axis_size=n_grid)
    return jax.vmap(over_grid, in_axes=(0 if per_unit else None, 0))(learner, keys)


def _advance_impl(
    carry,
    learner,
    objective,
    data,
    n_pos,
    n_neg,
    idx,
    slots,
    *,
    d,
    per_unit=False,
    length=None,
    unroll: int = 1,
    platform: str | None = None,
):
    """Scans one chunk of rounds for every run.

    ``data`` is ``(X, y, costs)``, ``costs`` ``None`` when the example cost is the class weight ``ρ_t``;
    ``learner`` and ``objective`` hold each unit's hyperparameters when ``per_unit``, else the grid's, shared by
    every unit (mapped over the units, shared hyperparameters would round some products differently with the
    number of units a device holds, on some XLA versions). Returns the new carry and every round's pre-update
    score.

    ``length`` (a traced scalar; the live learner's padded batches) runs only the first ``length`` rounds of
    ``idx``, in a loop that stops there (the same round, so the same bits as a scan of those rounds); the
    scores of the rounds after it are 0. ``unroll`` rounds make one iteration of the compiled scan; ``platform``
    (default: JAX's default backend) is the one the steps are written for (:func:`jcsol.linalg.in_rounds`).
    """
    rows, y, costs = data
    dtype = y.dtype
    one_hot = jnp.arange(4)

    def round_(carry, learner, objective, i, slot, total_pos, total_neg):  # one run's round
        label = y[i]
        positive = label > 0
        seen_pos = carry.counts[TP] + carry.counts[FN] + positive
        seen_neg = carry.counts[FP] + carry.counts[TN] + (~positive)
        rho = objective.weight(positive, seen_pos, seen_neg, total_pos, total_neg).astype(dtype)
        cost = rho if costs is None else costs[i]
        state, info = learner.step(carry.state, Example(_row(rows, i, d, learner.sparse_steps), label, rho, cost))
        wrong = positive == (info.score < 0)
        cell = 2 * (~positive) + (info.score < 0)  # TP=0, FN=1, FP=2, TN=3
        counts = carry.counts + (one_hot == cell)
        curve = carry.curve.at[slot].set(counts) if carry.curve.shape[0] else carry.curve
        return _Carry(state, counts, curve, _add_cost(carry.mistake_cost, jnp.where(wrong, cost, 0))), info.score

    over_grid = jax.vmap(round_, in_axes=(0, 0, 0, None, None, None, None))
    hyper = 0 if per_unit else None
    every_run = jax.vmap(over_grid, in_axes=(0, hyper, hyper, 0, None, 0, 0))
    laid_out = functools.partial(_configs_minor, minor=_minor_layout(learner, isinstance(rows, tuple), platform))

    def step(carry, inputs):  # every run's round: (units, grid) scores
        i, slot = inputs
        carry, score = every_run(laid_out(carry), learner, objective, i, slot, n_pos, n_neg)
        return laid_out(carry), score

    def counted(t, both):
        carry, scores = both
        carry, score = step(carry, (idx[:, t], slots[t]))
        return carry, scores.at[t].set(score)

    with in_rounds(idx.shape[1] > 1, platform or jax.default_backend()):  # XLA removes a loop of one round
        if length is None:
            carry, scores = jax.lax.scan(step, carry, (idx.T, slots), unroll=unroll)
        else:
            units, n_grid = carry.counts.shape[:2]
            zeros = jnp.zeros((idx.shape[1], units, n_grid), dtype)
            carry, scores = jax.lax.fori_loop(0, length, counted, (carry, zeros))
    return carry, jnp.moveaxis(scores, 0, -1)


def _minor_layout(learner, sparse_rows: bool, platform: str | None = None) -> bool:
    """Whether a carry's state vectors are laid out configurations minor: for a sparse-step learner on sparse
    rows, on the CPU (the one place both the rounds' layout constraint and the compiled calls' formats ask);
    ``platform`` defaults to JAX's default backend."""
    return bool(learner.sparse_steps and sparse_rows and (platform or jax.default_backend()) == "cpu")


def _configs_minor(carry, *, minor: bool):
    """``carry`` with its state vectors (leaves ``(units, grid, d)``) laid out configurations minor when
    ``minor`` (:func:`_minor_layout`): the grid's values of one feature side by side, so that a round reading
    and writing a row's few features touches a few memory lines, not one per configuration (rounds 2–3× faster
    on a CPU; dense rows are faster in the default layout, and on accelerators the default layout is kept
    until measured). Only the memory layout changes, not the arithmetic."""
    if not minor:
        return carry
    return carry._replace(state=jax.tree.map(_config_minor_leaf, carry.state))


def _config_minor_leaf(a):
    return with_layout_constraint(a, Layout((0, 2, 1))) if _is_state_vector(a) else a


#: State vectors shorter than this keep the default layout: their grid's state stays in the caches, and the
#: configurations-minor layout was measured no faster (0.9–1.1× at d = 123, 1.05–1.13× at 256, 1.5–1.6× at 1024).
MINOR_LAYOUT_MIN_D = 256


def _is_state_vector(a) -> bool:
    return a.ndim == 3 and jnp.issubdtype(a.dtype, jnp.floating) and a.shape[-1] >= MINOR_LAYOUT_MIN_D


def _is_format(x) -> bool:
    """A leaf of :func:`_carry_formats`' tree: a ``Format``, or ``None`` (the default)."""
    return x is None or isinstance(x, Format)


def _carry_formats(carry_shape, learner, devices: tuple, sparse_rows: bool, platform: str | None = None):
    """The formats (layout and placement) of a carry for a compiled init or advance over sparse rows or dense
    ones: :func:`_configs_minor`'s layout on its state vectors, ``None`` (the default) elsewhere."""
    none = jax.tree.map(lambda _: None, carry_shape)
    if not _minor_layout(learner, sparse_rows, platform):
        return none
    if len(devices) == 1:
        sharding: Any = jax.sharding.SingleDeviceSharding(devices[0])
    else:
        sharding = jax.sharding.NamedSharding(Mesh(np.array(devices), ("runs",)), PartitionSpec("runs"))
    fmt = Format(Layout((0, 2, 1)), sharding)
    state = jax.tree.map(lambda a: fmt if _is_state_vector(a) else None, carry_shape.state)
    return none._replace(state=state)
