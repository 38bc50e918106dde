"""The engine: one stream scanned, many runs vmapped, one compiled computation.

A *run* is one pass of a learner over one ordering of the stream. :func:`run` executes all runs of a
protocol at once — every point of the hyperparameter grid times every permutation — as one compiled
``lax.scan`` over rounds, vmapped over grid points (inner) and *run units* (outer): a unit is one permutation
and one block of consecutive grid points (the whole grid unless ``grid_blocks`` cuts it), and the units are
split over the local devices, or over the devices of every process of a distributed run
(:mod:`jcsol.distributed`). Rows are gathered by index, a block of rounds at a time (``X[idx[t:t + b]]``,
:func:`jcsol.core.scan.scan_chunk`): no permuted copy of ``X`` is ever made. ``X`` is placed once, on every device
where the compiled chunks read it, so that no chunk copies it. Confusion counts are carried through the scan and
online curves are sampled at ``curve_points`` rounds, so memory does not grow with the length of the stream times
the number of runs.

The scan is driven from Python in chunks of rounds, the carry (learner states, counts, curves) passed from
one chunk to the next. One mechanism gives progress reports, checkpoints that resume a killed run exactly,
and data streamed from disk (a :class:`jcsol.datasets.RowStore`: each chunk reads the rows it needs); each
chunk runs under a watchdog that ends a run whose chunk stops making progress (:mod:`jcsol.watchdog`). Every
chunk scans the same compiled step (a shorter last chunk gets its own scan of it), so the result does not
depend on the chunk size, bit for bit, but for one case: XLA removes a loop of one round, and a last chunk of a
single round then rounds a few learners' arithmetic (CW's, SCW-II's) otherwise in the last bits. No round is
ever masked: a masked round would cost a copy of every run's state, which for sparse rows is O(d) where the
step itself is O(nnz) (the live learner's padded batches run a loop that stops after their last real round
instead).

:func:`run` is four steps: ``_plan`` checks the call and sizes it (every refusal comes there, before any work),
``_place`` puts the units on their devices and starts the carry (new, or from a checkpoint), ``_chunk_loop`` runs
the chunks, and ``_result`` gathers the runs in the grid's order. The rounds, their memory layout, the units'
placement, the shared checks and the compiled programs are the engine's core (:mod:`jcsol.core`), which the live
learner shares.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, overload

import jax
import jax.numpy as jnp
import numpy as np

from .base import Learner, beyond_row_scales
from .checked import Stream, checked_stream
from .checkpoint import (
    CheckpointError,
    agreed_generation,
    load_checkpoint,
    load_share,
    save_checkpoint,
    save_share,
    update_digest,
)
from .core import checks, chunks, placement, programs, scaling
from .core.delay import Schedule, check_delay, schedule
from .core.rounds import total_cost
from .core.scan import example_bytes, gathered_rounds
from .datasets.rowstore import RowStore
from .distributed import Spread
from .grids import check_grid
from .objective import Objective, Sum
from .paths import Kernel, Scan
from .result import Result
from .stream import SparseRows, check_run_options
from .watchdog import resolve_timeout, watch
from .xla_cpu import compile_options

DEFAULT_CHUNK = 16384


def default_chunk(length: int, *, platform: str, stored: bool, checkpoint, on_chunk, progress) -> int:
    """The rounds of a chunk when ``chunk_size`` is not given: on an accelerator, the whole run in one chunk (one
    launch, no wait for the host between chunks), unless a checkpoint, ``on_chunk`` or a progress bar asks for
    chunks to stop at, or the rows are read from a row store chunk by chunk; :data:`DEFAULT_CHUNK` elsewhere."""
    whole = platform != "cpu" and not stored and checkpoint is None and on_chunk is None and not progress
    return length if whole else min(length, DEFAULT_CHUNK)


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
    y=None,
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
    path: str | Scan | Kernel = "auto",
    scale: str | None = None,
    delay: Any = None,
    times: Any = None,
) -> Result: ...


@overload
def run(
    learner: Learner,
    X,
    y=None,
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
    path: str | Scan | Kernel = "auto",
    scale: str | None = None,
    delay: Any = None,
    times: Any = None,
) -> Result | None: ...


def run(
    learner: Learner,
    X,
    y=None,
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
    path: str | Scan | Kernel = "auto",
    scale: str | None = None,
    delay: Any = None,
    times: Any = None,
) -> Result | None:
    """Runs ``learner`` over permutations of the stream ``(X, y)``, for every point of its grid, in one jit.

    Args:
        learner: a learner; hyperparameters given as arrays form a grid (their shapes broadcast together with
            the objective's, see :func:`jcsol.grid`).
        X: features, ``(T, d)`` array or :class:`jcsol.SparseRows` (normalise beforehand if wanted;
            :func:`jcsol.datasets.load` does by default), or a :class:`jcsol.datasets.RowStore` on disk, whose
            rows are read chunk by chunk so that memory holds one chunk of rows, not the data; or a
            :class:`jcsol.Stream` (``y``, ``costs`` and ``dtype`` then its own). A NumPy array is checked and
            copied to the devices at every call, as it may have changed since the last; a ``jax.Array`` cannot
            change, and its checks and placement are kept while it lives; a :class:`jcsol.Stream` checks and
            places its rows once for every call on it.
        y: labels in ``{-1, +1}``, ``+1`` the rare class (none with a :class:`jcsol.Stream`).
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
        chunk_size: rounds per compiled scan (default: 16384 on a CPU; on an accelerator the whole run, unless
            ``checkpoint``, ``on_chunk`` or ``progress=True`` asks for chunks, or the rows are a row store); the
            carry passes from chunk to chunk, and the result is bit-identical whatever the chunk size.
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
        path: the chunk backend that runs a chunk of rounds (:mod:`jcsol.core.chunks`, options in
            :mod:`jcsol.paths`): ``"auto"`` (default) takes the GPU kernel on a GPU where it covers the learner
            (:class:`jcsol.Kernel`; ``jcsol.learners()`` says which it covers), a ``lax.scan`` elsewhere
            (:class:`jcsol.Scan`), and the scan with a warning naming why where this JAX cannot build the kernel;
            ``"scan"`` or ``"kernel"`` force one with its options for the platform (``jcsol.paths.GPU_SCAN`` and
            ``GPU_KERNEL`` on a GPU), and a :class:`jcsol.Scan` or :class:`jcsol.Kernel` sets options of its own
            (unroll, block, warps, XLA options of the compilations). Off a GPU the kernel runs in Pallas'
            interpreter, for tests.
            The kernel sums a row's products in another order than XLA's dot: its states agree with the scan's to
            float32 rounding, not bit for bit.
        scale: ``"online"`` standardises each feature inside the round, per run: row ``t`` of a run is scaled by
            the running mean and variance of rows ``1 … t−1`` of that run's order, never a later row, before the
            learner's step (dense rows centred and scaled, as river's ``StandardScaler``; sparse rows scaled
            without centring, so zeros stay zeros; :mod:`jcsol.core.scaling`); :attr:`jcsol.Result.scaler` holds
            the final statistics, and :meth:`jcsol.Result.score` scales new rows with them. ``None`` (default):
            the rows as given.
        delay: labels that come late (:mod:`jcsol.core.delay`): the label of a run's row is known ``delay`` after
            it — in rows, or in the unit of ``times`` — and each row is scored by the model that has learnt only
            the labels known when it arrives (the label of position ``i`` is learnt before position ``a`` is
            scored iff ``i < a`` and ``τ_i + delay <= τ_a``, river's rule: 0 and 1 are the usual protocol); the
            labels still awaited after the last row are learnt at the end. The counts, curves, mistake costs and
            recorded scores are those of the scores each row was served when it arrived; ``ρ_t`` comes from the
            labels learnt so far. Every learner, grid point and permutation in one compiled computation, on the
            scan (the GPU kernel does not take late labels). ``None`` (default): no delay.
        times: with ``delay``, each row's time (numbers, or ``datetime64`` with ``delay`` a
            ``datetime.timedelta``/``numpy.timedelta64``), one per row of ``X``, not decreasing along the run's
            order (``perms="stream"`` on rows in time order, or one order given).

    Returns:
        A :class:`jcsol.Result` with per-run counts and measures of shape ``grid_shape + (P,)`` (``None`` on the
        processes other than 0 with ``gather="first"``).
    """
    plan = _plan(
        learner,
        X,
        y,
        perms=perms,
        objective=Sum() if objective is None else objective,
        costs=costs,
        key=key,
        curve_points=curve_points,
        record_scores=record_scores,
        dtype=dtype,
        chunk_size=chunk_size,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        progress=progress,
        on_chunk=on_chunk,
        stall_timeout=stall_timeout,
        grid_blocks=grid_blocks,
        gather=gather,
        path=path,
        scale=scale,
        delay=delay,
        times=times,
    )
    placed = _place(plan)
    ran = _chunk_loop(plan, placed)
    return _result(plan, placed, ran)


@dataclasses.dataclass(frozen=True)
class _Plan:
    """A call of :func:`run` checked and sized, before any work: the stream, the runs, the chunks, the options."""

    learner: Learner
    objective: Objective
    rows: Any  # the rows: an array, SparseRows or a RowStore
    stream: Stream | None  # the rows' checks and placements, kept for other calls
    y: np.ndarray
    costs: np.ndarray | None
    dtype: np.dtype
    path: chunks.Choice
    platform: str
    stall_after: float | None
    init_key: jax.Array
    idx: np.ndarray  # (P, L) the rows of each permutation's rounds
    n_pos: np.ndarray  # (P,) each permutation's positives
    n_neg: np.ndarray
    grid_shape: tuple[int, ...]
    flat: tuple[Learner, Objective]  # the grid's hyperparameters flattened to one axis
    blocks: int
    block: int  # grid points per unit
    n_curve: int
    chunk: int
    slots: np.ndarray  # each round's curve point
    curve_t: np.ndarray  # each curve point's round
    record_scores: bool
    checkpoint: Any
    checkpoint_every: int
    progress: bool | None
    on_chunk: Callable[[ChunkDone], None] | None
    gather: str
    scale: str | None
    late: Schedule | None  # the rounds of a run whose labels come late, or None

    @property
    def store(self) -> RowStore | None:
        return self.rows if isinstance(self.rows, RowStore) else None

    @property
    def n_perm(self) -> int:
        return self.idx.shape[0]

    @property
    def length(self) -> int:
        return self.idx.shape[1]

    @property
    def d(self) -> int:
        return int(self.rows.shape[1])

    @property
    def n_units(self) -> int:
        return self.n_perm * self.blocks

    @property
    def n_chunks(self) -> int:
        return -(-self.length // self.chunk)


def _plan(
    learner,
    X,
    y,
    *,
    perms,
    objective,
    costs,
    key,
    curve_points,
    record_scores,
    dtype,
    chunk_size,
    checkpoint,
    checkpoint_every,
    progress,
    on_chunk,
    stall_timeout,
    grid_blocks,
    gather,
    path,
    scale,
    delay=None,
    times=None,
) -> _Plan:
    """:func:`run`'s arguments checked, the orders drawn and the memory counted: every refusal comes here, before
    any work."""
    if not isinstance(learner, Learner):
        raise TypeError(f"learner must be a jcsol learner, got {type(learner).__name__}")
    if not isinstance(objective, Objective):
        raise TypeError(f"objective must be jcsol.Sum(...) or jcsol.Cost(...), got {type(objective).__name__}")
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
    chunks.check_path(path, platform)
    scaling.check_scale(scale)
    stall_after = resolve_timeout(stall_timeout, platform)
    stream = _stream(X, y, costs, dtype)
    if stream is not None:
        X, y, costs, dtype = stream.X, stream.y, stream.costs, stream.dtype
    else:
        X, y, costs, dtype = checked_stream(X, y, costs, dtype)
    dense_rows = not isinstance(X, (RowStore, SparseRows))
    key = jax.random.key(key) if isinstance(key, (int, np.integer)) else key
    perm_key, init_key = jax.random.split(key)
    idx = _orders(perms, len(y), perm_key)
    n_perm, length = idx.shape
    late = None
    if delay is not None:
        if not (path in ("auto", "scan") or isinstance(path, Scan)):
            raise ValueError(f"delay runs on the scan (the GPU kernel does not take late labels): path={path!r}")
        path = "scan" if path == "auto" else path
        at, late_by = check_delay(delay, times, len(y), idx)
        late = schedule(length, late_by, at)
    elif times is not None:
        raise ValueError("times are the rows' times for late labels: give delay= beside them")
    n_pos = _class_totals(stream, y, idx)
    n_neg = (length - n_pos).astype(np.int32)
    if objective.needs_both_classes() and (np.any(n_pos == 0) or np.any(n_neg == 0)):
        which = "positive" if np.any(n_pos == 0) else "negative"
        raise ValueError(
            f"a run's stream has no {which} example, so ρ = α_p·T_n/(α_n·T_p) of Sum(rho='offline') is undefined; "
            "use Sum(rho='laplace') or Cost(...)"
        )
    d = X.shape[1]
    grid_shape, flat_learner, flat_objective = checks.flatten_grid(learner, objective, dtype)
    chosen = chunks.choose(
        path,
        learner,
        d=d,
        dtype=dtype,
        dense_rows=dense_rows,
        platform=platform,
        probe=functools.partial(
            programs.probe,
            learner,
            objective,
            flat=(flat_learner, flat_objective),
            d=d,
            dtype=dtype,
            costs=costs is not None,
        ),
    )
    if chunk_size is None:
        chunk_size = default_chunk(
            length,
            platform=platform,
            stored=isinstance(X, RowStore),
            checkpoint=checkpoint,
            on_chunk=on_chunk,
            progress=progress,
        )
    blocks = checks.check_grid_blocks(grid_blocks, math.prod(grid_shape))
    block = -(-math.prod(grid_shape) // blocks)
    _check_run_memory(
        learner,
        X,
        d,
        dtype,
        length,
        block * placement.runs_here(n_perm * blocks),
        n_perm * blocks,
        curve_points,
        record_scores,
        chunk_size,
        costs is not None,
    )
    n_curve = int(curve_points)
    if not 0 <= n_curve <= length:
        raise ValueError(f"curve_points must be in [0, {length}] for runs of {length} rounds, got {curve_points}")
    chunk = min(length, int(chunk_size or DEFAULT_CHUNK))
    if chunk < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    if checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be >= 1, got {checkpoint_every}")
    slots, curve_t = _curve_slots(length, n_curve)
    if late is not None:
        slots = late.slots(slots, chunk)
    return _Plan(
        learner=learner,
        objective=objective,
        rows=X,
        stream=stream,
        y=y,
        costs=costs,
        dtype=dtype,
        path=chosen,
        platform=platform,
        stall_after=stall_after,
        init_key=init_key,
        idx=idx,
        n_pos=n_pos,
        n_neg=n_neg,
        grid_shape=grid_shape,
        flat=(flat_learner, flat_objective),
        blocks=blocks,
        block=block,
        n_curve=n_curve,
        chunk=chunk,
        slots=slots,
        curve_t=curve_t,
        record_scores=record_scores,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        progress=progress,
        on_chunk=on_chunk,
        gather=gather,
        scale=scale,
        late=late,
    )


def _class_totals(stream: Stream | None, y, idx) -> np.ndarray:
    """Each run's positives over its orders ``idx``; a stream keeps them for the orders of its next calls."""

    def count():
        return (y[idx] > 0).sum(axis=1).astype(np.int32)

    return count() if stream is None else stream.of_orders(idx, "class totals", count)


def _stream(X, y, costs, dtype) -> Stream | None:
    """The :class:`jcsol.Stream` a call runs on: ``X`` itself, or one made of a ``jax.Array``'s rows (their checks
    and placements kept by the array's identity); ``None`` for rows checked at this call."""
    if isinstance(X, Stream):
        given = [name for name, value in (("y", y), ("costs", costs), ("dtype", dtype)) if value is not None]
        if given:
            raise ValueError(
                f"X is a jcsol.Stream, which holds its own labels, costs and dtype: {', '.join(given)} "
                "must not be given beside it (make the stream with them)"
            )
        return X
    if y is None:
        raise TypeError("y, the labels, is missing (only a jcsol.Stream holds its own)")
    return Stream(X, y, costs, dtype=dtype) if isinstance(X, jax.Array) else None


def _check_run_memory(
    learner,
    X,
    d: int,
    dtype,
    length: int,
    runs_here: int,
    n_units: int,
    curve_points,
    record_scores,
    chunk_size,
    with_costs: bool,
) -> None:
    """Refuses a run whose states, rows, orders, curves, scores and gathered examples would not fit in memory
    (:func:`jcsol.core.checks.check_memory`)."""
    itemsize = dtype.itemsize
    rows_bytes = (
        0
        if isinstance(X, RowStore)  # one chunk of rows at a time
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

    # the examples each device gathers at once (core.scan.scan_chunk), for its units
    def shape(*dims, of=dtype):
        return jax.ShapeDtypeStruct((1, *dims), of)

    if isinstance(X, (RowStore, SparseRows)):
        rows: Any = (shape(X.indices.shape[1], of=X.indices.dtype), shape(X.indices.shape[1]))
    else:
        rows = shape(d)
    row = example_bytes((rows, shape(), shape() if with_costs else None))
    units_here = placement.runs_here(n_units)
    n_devices = len(placement.devices_for(n_units))
    per_device = -(-units_here // n_devices)
    gathered = n_devices * per_device * row * gathered_rounds(per_device, row, min(length, chunk_size or DEFAULT_CHUNK))
    checks.check_memory(learner, d, runs_here, dtype, stream_bytes + runs_here * per_run_bytes + gathered)


class _Placed(NamedTuple):
    """A planned run's units on their devices, the chunks' data, and its first carry (new, or resumed)."""

    devices: tuple
    runs_per_device: int
    spread: Spread | None
    place: Any  # placement.Local, or the Spread over several processes: where the inputs go
    everywhere: bool  # whether this process returns the result
    hyper: Any  # (learner, objective): the grid's, or each unit's block of it
    n_runs: Any  # each unit's (positives, negatives)
    chunks: Any  # _ResidentChunks or _StoredChunks
    fingerprint: str
    first: int  # the first chunk to run
    pending: Any  # the first chunk's (data, orders), read before the carry's init is compiled
    carry_shape: Any
    carry: Any
    time_compile: float


def _place(plan: _Plan) -> _Placed:
    """Places the units over the devices (and processes), the data beside them, and starts the carry: from the
    learners' initial states, or from the checkpoint the processes agree on."""
    # units with their own hyperparameters go at least two to a device: XLA's CPU kernels of some JAX versions
    # (0.8, 0.10.0) round a device's products differently when its units' hyperparameters form an axis of one
    blocks, n_perm = plan.blocks, plan.n_perm
    at_least = 2 if blocks > 1 else 1
    devices = placement.devices_for(plan.n_units, at_least)
    n_devices = len(devices)
    # one block: every unit shares the whole grid's hyperparameters (not mapped over the units); several: each
    # unit holds its block's
    hyper: Any = plan.flat
    per_unit: tuple = (jax.random.split(plan.init_key, n_perm), plan.idx, plan.n_pos, plan.n_neg)
    if blocks > 1:  # each permutation's orders, once per block
        per_unit = tuple(
            np.repeat(a, blocks, axis=0) if isinstance(a, np.ndarray) else jnp.repeat(a, blocks, axis=0)
            for a in per_unit
        )
    if blocks > 1:
        blocked = placement.blocked(hyper, n_perm, blocks, plan.block)
        hyper, *per_unit = placement.pad_runs((blocked, *per_unit), n_devices, at_least)
    else:
        per_unit = placement.pad_runs(per_unit, n_devices)
    keys, idx_padded, n_pos_d, n_neg_d = per_unit
    spread = (
        Spread(devices, idx_padded.shape[0], timeout=plan.stall_after, on_cpu=plan.platform == "cpu")
        if jax.process_count() > 1
        else None
    )
    place = placement.Local(devices) if spread is None else spread
    everywhere = plan.gather == "all" or spread is None or spread.process == 0
    # a key's drawn orders are read-only, the same at every call (a stream keeps what it derives from them)
    orders = plan.idx if idx_padded is plan.idx else np.array(idx_padded)
    chunks = (
        _ResidentChunks(plan, orders, place, devices)
        if plan.store is None
        else _StoredChunks(plan.store, plan.y, plan.costs, orders, plan.chunk, plan.dtype, place, spread, plan.late)
    )
    hyper = place.split(hyper) if blocks > 1 else place.whole(hyper)
    n_runs, keys = place.split(((n_pos_d, n_neg_d), keys))
    fingerprint = _run_fingerprint(plan) if plan.checkpoint is not None or spread is not None else ""
    if spread is not None:
        spread.same_call(
            fingerprint,
            record_scores=plan.record_scores,
            on_chunk=plan.on_chunk is not None,
            checkpoint_every=plan.checkpoint_every if plan.checkpoint is not None else 0,
            gather=plan.gather == "first",
        )
    if plan.checkpoint is None:
        restored = None
    elif spread is None:
        restored = load_checkpoint(plan.checkpoint, fingerprint, plan.n_chunks)
    else:
        restored = _resume_point(spread, plan.checkpoint, fingerprint, plan.n_chunks)
    if restored is not None and plan.record_scores:
        raise ValueError(
            f"record_scores needs every round of the run, but checkpoint {plan.checkpoint} resumes it after "
            f"{restored[0]} chunks; delete the checkpoint or leave out record_scores"
        )
    first = 0 if restored is None else restored[0]
    pending = chunks.get(first) if first < plan.n_chunks else chunks.get(0)
    init_fn, carry_shape, time_compile = programs.compiled_init(
        hyper[0],
        keys,
        n_grid=plan.block,
        n_curve=plan.n_curve,
        d=plan.d,
        dtype=plan.dtype,
        devices=devices,
        per_unit=blocks > 1,
        sparse_rows=isinstance(pending[0][0], tuple),
        compiler_options=plan.path.options.compiler_options,
        scale=plan.scale,
        awaited=0 if plan.late is None else plan.late.ring,
    )
    if restored is None:
        carry = init_fn(hyper[0], keys)
    elif spread is None:
        carry = _restore_carry(carry_shape, restored[1], plan.n_units, n_devices, at_least, plan.checkpoint)
    else:
        carry = spread.from_local(carry_shape, restored[1])
    return _Placed(
        devices=devices,
        runs_per_device=plan.block * idx_padded.shape[0] // n_devices,
        spread=spread,
        place=place,
        everywhere=everywhere,
        hyper=hyper,
        n_runs=n_runs,
        chunks=chunks,
        fingerprint=fingerprint,
        first=first,
        pending=pending,
        carry_shape=carry_shape,
        carry=carry,
        time_compile=time_compile,
    )


def _run_fingerprint(plan: _Plan) -> str:
    """:func:`_fingerprint` of a planned run."""
    store = plan.store
    return _fingerprint(
        plan.learner,
        plan.objective,
        store.fingerprint if store is not None else plan.rows,
        plan.y if plan.costs is None else (plan.y, plan.costs),
        plan.idx,
        plan.dtype,
        plan.n_curve,
        plan.chunk,
        plan.init_key,
        plan.blocks,
        plan.scale,
        plan.late,
    )


class _Ran(NamedTuple):
    """What the chunk loop leaves: the last carry, every chunk's scores (when recorded) and the times."""

    carry: Any
    chunk_scores: list
    time_compile: float
    time_run: float


def _chunk_loop(plan: _Plan, placed: _Placed) -> _Ran:
    """Runs the chunks from the first not done, each under the watchdog; after each, saves the checkpoint when
    due, keeps the processes in step, and reports progress and ``on_chunk``."""
    carry, time_compile, time_run, chunk_scores = placed.carry, placed.time_compile, 0.0, []
    saved = placed.first if plan.checkpoint is not None else None  # chunks the checkpoint on disk holds
    show = _Progress(
        plan.n_chunks, placed.first, plan.length, plan.chunk, enabled=plan.progress, name=plan.learner.name
    )

    def read_after(k: int) -> bool:  # whether anything reads the carry or the scores after chunk k
        due = plan.checkpoint is not None and (k + 1) % plan.checkpoint_every == 0
        looked_at = show.bar is not None or plan.on_chunk is not None or plan.record_scores
        return k + 1 == plan.n_chunks or due or looked_at or placed.spread is not None

    queued_since: tuple[float, float] | None = None  # when the first chunk not waited for started; compile time then
    for k in range(placed.first, plan.n_chunks):
        started = time.perf_counter()
        data, order = placed.pending if k == placed.first else placed.chunks.get(k)
        wait = read_after(k)
        carry, scores, seconds, took = _run_chunk(plan, placed, k, carry, data, order, saved, wait)
        time_compile += seconds
        if queued_since is None and not wait:
            queued_since = (started, time_compile - seconds)
        if wait and queued_since is not None:  # the queued chunks ran while the host read the next: the span's time
            since, compiled = queued_since
            time_run += time.perf_counter() - since - (time_compile - compiled)
            queued_since = None
        elif wait:
            time_run += took
        if plan.record_scores:
            chunk_scores.append(
                np.asarray(scores)
                if placed.spread is None
                else placed.spread.gather(
                    scores, f"gathering the scores of chunk {k + 1}", everywhere=placed.everywhere
                )
            )
        if plan.checkpoint is not None and ((k + 1) % plan.checkpoint_every == 0 or k + 1 == plan.n_chunks):
            _save(plan, placed, k + 1, carry)
            saved = k + 1
        if placed.spread is not None:  # no process starts a chunk before all saved the last: their shares stay in step
            placed.spread.barrier(k + 1, f"the end of chunk {k + 1} of {plan.n_chunks}")
        show.update(k + 1)
        if plan.on_chunk is not None:
            plan.on_chunk(_chunk_done(plan, placed, k + 1, carry))
    show.close()
    return _Ran(carry, chunk_scores, time_compile, time_run)


def _run_chunk(plan: _Plan, placed: _Placed, k: int, carry, data, order, saved: int | None, wait: bool):
    """Chunk ``k`` compiled (once per signature) and run: ``(carry, scores, compile seconds, run seconds)``. With
    ``wait``, the chunk (and every chunk queued before it) runs to its end under the watchdog; without, it is
    queued behind them and the call returns at once: no device waits for the host between chunks that nothing
    reads (a row store's next chunk is read while the last runs)."""
    chunk_slots = plan.slots[k * plan.chunk : (k + 1) * plan.chunk]
    takes_rounds = plan.path.backend.takes_rounds
    if takes_rounds:  # one compiled program for every chunk: a short one padded, its length given
        rounds = len(chunk_slots)
        order, chunk_slots = _padded_chunk(order, plan.chunk), np.pad(chunk_slots, (0, plan.chunk - rounds))
    args = (*placed.hyper, data, *placed.n_runs, order, placed.place.whole(chunk_slots))
    if takes_rounds:
        args += (placed.place.whole(np.int32(rounds)),)
    chunk_fn, seconds = programs.compiled_chunk(
        placed.carry_shape,
        args,
        d=plan.d,
        devices=placed.devices,
        per_unit=plan.blocks > 1,
        path=plan.path,
        record_scores=plan.record_scores,
        late=None if plan.late is None else plan.late.scoring,
    )
    start = time.perf_counter()
    if not wait:
        carry, scores = chunk_fn(carry, *args)
        return carry, scores, seconds, time.perf_counter() - start
    carry, scores = watch(
        functools.partial(_run_blocking, chunk_fn, carry, args),
        timeout=plan.stall_after,
        on_cpu=plan.platform == "cpu",
        describe=functools.partial(
            _stalled,
            k,
            plan.n_chunks,
            plan.chunk,
            plan.length,
            placed.devices,
            placed.runs_per_device,
            plan.learner,
            plan.d,
            plan.checkpoint,
            saved,
        ),
    )
    return carry, scores, seconds, time.perf_counter() - start


def _save(plan: _Plan, placed: _Placed, done: int, carry) -> None:
    """Saves the carry after ``done`` chunks (this process's share of it, over several processes)."""
    if placed.spread is None:
        leaves = [np.asarray(a)[: plan.n_units] for a in jax.tree.leaves(carry)]
        save_checkpoint(plan.checkpoint, placed.fingerprint, done, plan.n_chunks, leaves)
    else:
        spread = placed.spread
        save_share(
            plan.checkpoint, placed.fingerprint, done, plan.n_chunks, spread.local(carry), layout=spread.layout()
        )


def _chunk_done(plan: _Plan, placed: _Placed, done: int, carry) -> ChunkDone:
    """What ``on_chunk`` receives after ``done`` chunks: the states and counts in the grid's order."""
    seen = (carry.state, carry.counts)
    states, counts = (
        placement.on_host(seen, placed.devices)
        if placed.spread is None
        else placed.spread.gather(seen, f"gathering the states of chunk {done}", everywhere=placed.everywhere)
    ) or (None, None)
    grid = functools.partial(placement.grid_major, grid_shape=plan.grid_shape, n_perm=plan.n_perm, blocks=plan.blocks)
    return ChunkDone(
        done,
        plan.n_chunks,
        min(done * plan.chunk, plan.length),
        None if states is None else grid(states),
        None if counts is None else np.asarray(grid(counts)),
    )


def _result(plan: _Plan, placed: _Placed, ran: _Ran) -> Result | None:
    """The runs' final carry gathered in the grid's order as a :class:`jcsol.Result` (``None`` on the processes
    that do not receive it), with the warnings of diverged runs and of rows beyond the learner's scales."""
    final = (
        placement.on_host(ran.carry, placed.devices)
        if placed.spread is None
        else placed.spread.gather(ran.carry, "gathering the results", everywhere=placed.everywhere)
    )
    if not placed.everywhere:
        return None
    grid = functools.partial(placement.grid_major, grid_shape=plan.grid_shape, n_perm=plan.n_perm, blocks=plan.blocks)
    final = grid(final)
    scores = None
    if plan.record_scores:  # never resumed, so every chunk's scores are here
        per_round = np.concatenate([a[: plan.n_units] for a in ran.chunk_scores], axis=-1)[..., : plan.length]
        scores = grid(per_round)
    _warn_diverged(plan.learner, final.state, math.prod(plan.grid_shape) * plan.n_perm)
    if plan.store is None:
        _warn_scale(plan.learner, plan.rows, plan.dtype, None if plan.stream is None else plan.stream.rows.extents)
    return Result(
        learner=plan.learner,
        objective=plan.objective,
        grid_shape=plan.grid_shape,
        orders=np.array(plan.idx),  # the drawn orders are shared between calls: the result holds its own
        counts=np.asarray(final.counts),
        curve=np.asarray(final.curve) if plan.n_curve else None,
        curve_t=plan.curve_t if plan.n_curve else None,
        states=final.state,
        scaler=final.scaler,
        mistake_cost=total_cost(np.asarray(final.mistake_cost)),
        scores=scores,
        labels=np.array(plan.y) if plan.record_scores else None,  # the measures of the scores read each round's label
        time_compile=ran.time_compile,
        time_run=ran.time_run,
        resumed_at=min(placed.first * plan.chunk, plan.length),
        n_features=int(plan.d),
    )


def _padded_chunk(order, chunk: int):
    """A chunk's row orders ``(units, rounds)`` padded with row 0 to ``chunk`` rounds (never run)."""
    rounds = order.shape[1]
    if rounds == chunk:
        return order
    if isinstance(order, np.ndarray):
        return np.pad(order, ((0, 0), (0, chunk - rounds)))
    return jnp.pad(order, ((0, 0), (0, chunk - rounds)))


def _run_blocking(chunk_fn, carry, args):
    return jax.block_until_ready(chunk_fn(carry, *args))


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
            stacklevel=4,
        )


def _warn_scale(learner: Learner, X, dtype, extents=None) -> None:
    """A ``RuntimeWarning`` when rows are beyond the scales the learner's arithmetic holds on
    (:func:`jcsol.base.beyond_row_scales`; ``extents``: the rows' :func:`jcsol.base.row_extents`, where known)."""
    message = beyond_row_scales(learner, X.values if isinstance(X, SparseRows) else X, dtype, extents)
    if message:
        warnings.warn(message, RuntimeWarning, stacklevel=4)


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
        checks.require_memory(16 * int(perms) * n, f"perms={perms} runs of {n} rounds need ", "give fewer permutations")
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
        draw = _sorted_on_host if jax.default_backend() == "cpu" else _draw_permutations
        drawn = np.asarray(draw(key, perms, n), dtype=np.int32)
        drawn.flags.writeable = False
        _DRAWN[found] = drawn
    return _DRAWN[found]


_DRAWN: dict[tuple, np.ndarray] = {}


@functools.partial(jax.jit, static_argnums=(1, 2), compiler_options=compile_options())
def _draw_permutations(key: jax.Array, perms: int, n: int) -> jax.Array:
    """``jax.random.permutation(k, n)`` for each ``k`` of ``jax.random.split(key, perms)``."""
    return jax.vmap(lambda k: jax.random.permutation(k, n))(jax.random.split(key, perms))


def _sorted_on_host(key: jax.Array, perms: int, n: int) -> np.ndarray:
    """:func:`_draw_permutations`' orders, bit for bit, their sorts made by NumPy: ``jax.random.permutation`` sorts
    ``arange(n)`` by fresh random 32-bit keys, stably, in ``ceil(3 ln n / ln(2**32 - 1))`` rounds (the rounds
    make ties between keys as rare as a perfect shuffle needs), each round's keys from a split of the last
    round's key. The keys are drawn by JAX, the stable sorts by NumPy: 0.13 s for a9a's 20 orders on 2 cores,
    where XLA's CPU sort took 0.44 s."""
    rounds = int(np.ceil(3 * np.log(max(1, n)) / np.log(np.iinfo(np.uint32).max)))
    order = np.broadcast_to(np.arange(n, dtype=np.int32), (perms, n))
    if rounds == 0:
        return order.copy()
    sort_keys = np.asarray(_shuffle_keys(jax.random.split(key, perms), n, rounds))  # (perms, rounds, n)
    for r in range(rounds):
        order = np.take_along_axis(order, np.argsort(sort_keys[:, r], axis=1, kind="stable"), axis=1)
    return order


@functools.partial(jax.jit, static_argnums=(1, 2), compiler_options=compile_options())
def _shuffle_keys(keys: jax.Array, n: int, rounds: int) -> jax.Array:
    """Each key's sort keys of ``jax.random.permutation``'s rounds: ``(len(keys), rounds, n)`` uint32."""

    def of(key):
        drawn = []
        for _ in range(rounds):
            key, round_key = jax.random.split(key)
            drawn.append(jax.random.bits(round_key, (n,), jnp.uint32))
        return jnp.stack(drawn)

    return jax.vmap(of)(keys)


def _curve_slots(length: int, n_curve: int) -> tuple[np.ndarray, np.ndarray]:
    """For each round, the curve point it writes its counts to; and each point's round (1-based)."""
    slots = (np.arange(length) * n_curve // length).astype(np.int32) if n_curve else np.zeros(length, np.int32)
    return slots, np.searchsorted(slots, np.arange(n_curve), side="right").astype(np.int64)


class _ResidentChunks:
    """Data placed once, whole on every device of the run; each chunk's rounds index into it. A stream's
    placements are kept for its next calls (:class:`jcsol.Stream`)."""

    def __init__(self, plan: _Plan, idx, place, devices: tuple):
        X, dtype, backend = plan.rows, plan.dtype, plan.path.backend

        def rows():
            if isinstance(X, SparseRows):
                return place.whole((X.indices, X.values.astype(dtype, copy=False)))
            return place.whole(backend.rows(X.astype(dtype, copy=False)))

        def labels():
            costs = None if plan.costs is None else plan.costs.astype(dtype, copy=False)
            return place.whole((plan.y.astype(dtype, copy=False), costs))

        if plan.stream is None:
            placed_rows, placed_labels = rows(), labels()
        else:
            key = (devices, type(place).__name__, backend.name)
            placed_rows, placed_labels = plan.stream.rows.placed(key, rows), plan.stream.placed_labels(key, labels)
        self.data = (placed_rows, *placed_labels)
        self.idx, self.chunk, self.place, self.stream, self.late = idx, plan.chunk, place, plan.stream, plan.late
        self.key = (devices, type(place).__name__, plan.chunk, None if plan.late is None else plan.late.awaited)

    def get(self, k: int):
        def placed():
            return self.place.split(_chunk_orders(self.idx, k, self.chunk, self.late))

        orders = placed() if self.stream is None else self.stream.of_orders(self.idx, (self.key, k), placed)
        return self.data, orders


class _StoredChunks:
    """Data on disk: each chunk reads the rows its rounds need, in the order the runs need them.

    Over several processes, each reads only its own runs' rows: the chunk's arrays keep their whole size, so
    that every device indexes them as in one process, but the other processes' rows stay zero. No device
    reads them: each run indexes only its own rows.
    """

    def __init__(
        self, store: RowStore, y, costs, idx, chunk: int, dtype, place, spread: Spread | None = None, late=None
    ):
        self.store, self.idx, self.chunk, self.dtype, self.late = store, idx, chunk, dtype, late
        self.place, self.spread = place, spread
        self.y, self.costs = y.astype(dtype), None if costs is None else costs.astype(dtype)

    def get(self, k: int):
        window = _chunk_orders(self.idx, k, self.chunk, self.late)
        rows = window.ravel()
        local = np.arange(rows.size, dtype=np.int32).reshape(window.shape)
        if self.spread is None:
            indices, values = self.store.take(rows)
            costs = None if self.costs is None else self.costs[rows]
            data = ((indices, values.astype(self.dtype)), self.y[rows], costs)
            return self.place.whole(data), self.place.split(local)
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


def _chunk_orders(idx, k: int, chunk: int, late: Schedule | None):
    """The rows of chunk ``k``'s rounds: ``idx``'s, or with late labels the chunk's window of rows to learn and to
    score (:meth:`jcsol.core.delay.Schedule.window`)."""
    return idx[:, k * chunk : (k + 1) * chunk] if late is None else late.window(np.asarray(idx), k, chunk)


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
    padded = placement.pad_runs(tuple(leaves), n_devices, at_least)
    return jax.device_put(jax.tree.unflatten(jax.tree.structure(shapes), list(padded)))


class _Progress:
    """A progress bar over the rounds of a run (``tqdm.auto``: text on a terminal, a widget in a notebook).

    Shown by default for runs of several chunks when stderr is a terminal or the code runs in a Jupyter or
    IPython kernel (a notebook, Colab); ``enabled`` True or False forces it on or off.
    """

    def __init__(self, n_chunks: int, first: int, length: int, chunk: int, enabled: bool | None, name: str):
        self.length, self.chunk = length, chunk
        if enabled is None:
            enabled = n_chunks > 1 and (sys.stderr.isatty() or _in_notebook())
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


def _in_notebook() -> bool:
    """Whether the code runs in a Jupyter or IPython kernel (a notebook, Colab), where stderr is no terminal."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and "IPKernelApp" in shell.config


def _fingerprint(
    learner,
    objective,
    X,
    y,
    idx,
    dtype,
    n_curve: int,
    chunk: int,
    init_key,
    blocks: int,
    scale: str | None = None,
    late: Schedule | None = None,
) -> str:
    """A digest of everything that determines a run's carry, so a checkpoint is used only by its own run:
    learner and objective (static options and values), data, labels and costs, row orders, the key of the
    learners' initial states, dtype, curve points, chunk size, grid blocks, the rows' scaling and the schedule of
    late labels."""
    digest = hashlib.sha256()
    digest.update(np.asarray(jax.random.key_data(init_key)).tobytes())
    leaves, treedef = jax.tree.flatten((learner, objective))
    digest.update(repr(treedef).encode())
    if isinstance(X, str):
        digest.update(X.encode())
    update_digest(digest, (*leaves, *(X if isinstance(X, SparseRows) else () if isinstance(X, str) else (X,)), y, idx))
    digest.update(f"{np.dtype(dtype)}|{n_curve}|{chunk}|{blocks}".encode())
    if scale is not None:  # unscaled runs keep the digest they always had
        digest.update(f"|scale={scale}".encode())
    if late is not None:  # so do runs without late labels
        digest.update(b"|late")
        update_digest(digest, (late.first, late.arrivals))
    return digest.hexdigest()


def _resume_point(spread: Spread, path, fingerprint: str, n_chunks: int) -> tuple[int, list[np.ndarray]] | None:
    """``(chunks done, this process's leaves)`` of the latest chunk every process holds a checkpoint share of;
    ``None`` when no process has any. The processes agree on it before any work, or all refuse."""
    found: dict[int, tuple[int, list[np.ndarray]]] = {}
    refusal = None
    try:
        shares = load_share(path, fingerprint, n_chunks, layout=spread.layout())
        found = {done: (done, leaves) for done, leaves in shares.items()}
    except CheckpointError as err:
        refusal = err
    return agreed_generation(
        spread,
        found,
        refusal,
        name=f"checkpoint {path}",
        generations="chunks",
        what=f"checking checkpoint {path}",
        error=CheckpointError,
        remedy=f"shares were deleted, or not written to one folder that every process sees; delete {path}.* to "
        "start over",
    )
