"""The rounds compiled for a placement: a run's initial carry and its chunk of rounds on a chunk backend
(:mod:`jcsol.core.chunks`), each compiled once per signature and kept in :data:`COMPILED`; a chunk lowered for
an accelerator on any machine (:func:`lowered_chunk`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
from jax.sharding import PartitionSpec

from .. import whole_loops
from ..compiled import CompiledCache
from ..objective import Sum
from ..paths import CompilerOptions, Scan
from ..xla_cpu import compile_options
from . import checks, chunks, layout, placement
from .chunks import BACKENDS, Choice
from .rounds import init_carry

#: The compiled inits and chunks of :func:`jcsol.run`, by signature (:func:`signature`).
COMPILED: CompiledCache[Any] = CompiledCache()


def signature(tree, *static) -> tuple:
    """A compiled program's key: the tree's structure, its leaves' abstract values, and ``static``."""
    leaves, treedef = jax.tree.flatten(tree)
    return (treedef, tuple(jax.typeof(leaf) for leaf in leaves), *static)


def compiled_init(
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
    scale: str | None = None,
    awaited: int = 0,
):
    """``(init, carry shapes, compile seconds)``, compiled once per signature and cached; the carry is laid out
    for sparse rows or dense ones (:func:`jcsol.core.layout.carry_formats`), and holds the features' statistics
    of ``scale`` and room for the served scores of ``awaited`` rows awaiting their labels
    (:func:`jcsol.core.rounds.init_carry`)."""
    key = signature(
        (learner, keys),
        "init",
        n_grid,
        n_curve,
        d,
        np.dtype(dtype),
        devices,
        per_unit,
        sparse_rows,
        compiler_options,
        scale,
        awaited,
    )

    def build():
        split, whole = PartitionSpec("runs"), PartitionSpec()
        init = placement.sharded(
            functools.partial(
                init_carry,
                n_grid=n_grid,
                n_curve=n_curve,
                d=d,
                dtype=dtype,
                per_unit=per_unit,
                scale=scale,
                sparse_rows=sparse_rows,
                awaited=awaited,
            ),
            devices,
            (split if per_unit else whole, split),
        )
        shape = jax.eval_shape(init, learner, keys)
        formats = layout.carry_formats(shape, learner, devices, sparse_rows)
        with placement.precision(devices):
            lowered = jax.jit(init, out_shardings=formats, compiler_options=compile_options()).lower(learner, keys)
        return lowered.compile(dict(compiler_options) or None), shape  # the path's options win

    (compiled, carry_shape), seconds = COMPILED.get_or_build(key, build)
    return compiled, carry_shape, seconds


def compiled_chunk(
    carry_shape,
    args,
    *,
    d: int,
    devices: tuple,
    per_unit: bool,
    path: Choice | None = None,
    record_scores: bool = True,
    late: tuple[int, bool] | None = None,
):
    """``(chunk, compile seconds)`` for a chunk of these shapes on ``path`` (default: the scan with its options
    here), compiled once per signature and cached; ``late``: with late labels, the rows a round scores in place
    and whether some round scores more (:attr:`jcsol.core.delay.Schedule.scoring`)."""
    path = path or Choice(BACKENDS["scan"], Scan())
    key = signature(
        (carry_shape, args), "chunk", d, devices, per_unit, path.backend.name, path.options, record_scores, late
    )

    def build():
        program = chunk_program(
            carry_shape,
            args,
            d=d,
            devices=devices,
            per_unit=per_unit,
            path=path,
            record_scores=record_scores,
            late=late,
        )
        with placement.precision(devices), whole_loops.marking():
            lowered = program.lower(carry_shape, *args)
        return whole_loops.compiled(lowered, path.options.compiler_options)  # the path's options win

    return COMPILED.get_or_build(key, build)


def chunk_program(
    carry_shape,
    args,
    *,
    d: int,
    devices: tuple,
    per_unit: bool,
    path: Choice,
    record_scores: bool = True,
    platform: str | None = None,
    late: tuple[int, bool] | None = None,
):
    """The jitted chunk of rounds that :func:`jcsol.run` compiles on ``path``, not yet lowered: ``(carry, *args)
    -> (carry, scores)``, the carry donated; a backend that takes its number of rounds
    (:attr:`~jcsol.core.chunks.ChunkBackend.takes_rounds`) takes it as the last argument. ``platform`` (default:
    JAX's default backend) is the one the steps are written for, so that a chunk can be lowered for a GPU on a
    machine without one."""
    split, whole = PartitionSpec("runs"), PartitionSpec()
    hyper = split if per_unit else whole
    specs: tuple = (split, hyper, hyper, whole, split, split, split, whole)
    if path.backend.takes_rounds:
        specs += (whole,)
    scoring = {} if late is None else {"late": late}  # late labels run on the scan alone
    impl = path.backend.chunk(
        path.options, d=d, per_unit=per_unit, record_scores=record_scores, platform=platform, **scoring
    )
    chunk = placement.sharded(impl, devices, specs)
    formats = layout.carry_formats(carry_shape, args[0], devices, isinstance(args[2][0], tuple), platform)
    return jax.jit(
        chunk,
        donate_argnums=0,
        in_shardings=(formats, *(None,) * len(args)),
        out_shardings=(formats, None),
        compiler_options=compile_options(),
    )


def lowered_chunk(
    learner,
    objective=None,
    *,
    d: int = 9,
    rounds: int = 50,
    perms: int = 2,
    curve_points: int = 3,
    sparse_rows: bool = False,
    path: Any = None,
    platform: str = "gpu",
    lowering_platform: str | None = "cuda",
    dtype="float32",
    costs: bool = False,
    record_scores: bool = True,
) -> jax.stages.Lowered:
    """The chunk of rounds :func:`jcsol.run` would compile for ``learner`` on ``platform``, lowered for
    ``lowering_platform`` on whatever machine this is (``None``: for this machine's own): an operation the
    accelerator's compiler cannot lower fails here, not on the accelerator. ``path`` as :func:`jcsol.run` takes it
    (default: the scan). Shapes only: a stream of ``rounds`` rows of ``d`` features (sparse rows of ``d`` entries
    when ``sparse_rows``; with example costs when ``costs``), ``perms`` permutations, the learner's whole grid in
    one block, its scores written when ``record_scores``; by default none of the sizes a power of 2, as a GPU
    kernel's blocks must be (the kernel pads them)."""
    objective = Sum() if objective is None else objective
    dtype = np.dtype(dtype)
    grid_shape, flat_learner, flat_objective = checks.flatten_grid(learner, objective, dtype)
    n_grid = math.prod(grid_shape)
    if not isinstance(path, Choice):
        path = chunks.choose(
            "scan" if path is None else path, learner, d=d, dtype=dtype, dense_rows=not sparse_rows, platform=platform
        )
    keys = jax.random.split(jax.random.key(0), perms)
    carry_shape = jax.eval_shape(
        functools.partial(init_carry, n_grid=n_grid, n_curve=curve_points, d=d, dtype=dtype),
        flat_learner,
        keys,
    )
    rows: Any = (
        (jax.ShapeDtypeStruct((rounds, d), np.int32), jax.ShapeDtypeStruct((rounds, d), dtype))
        if sparse_rows
        else jax.ShapeDtypeStruct((rounds, path.backend.rows(np.zeros((1, d), dtype)).shape[1]), dtype)
    )
    counts = jax.ShapeDtypeStruct((perms,), np.int32)
    column = jax.ShapeDtypeStruct((rounds,), dtype)
    args: tuple = (
        flat_learner,
        flat_objective,
        (rows, column, column if costs else None),
        counts,
        counts,
        jax.ShapeDtypeStruct((perms, rounds), np.int32),
        jax.ShapeDtypeStruct((rounds,), np.int32),
    )
    if path.backend.takes_rounds:
        args += (jax.ShapeDtypeStruct((), np.int32),)
    device, scores = jax.local_devices()[0], record_scores
    program = chunk_program(
        carry_shape, args, d=d, devices=(device,), per_unit=False, path=path, platform=platform, record_scores=scores
    )
    with placement.precision((device,) if platform == "cpu" else ()):
        traced = program.trace(carry_shape, *args)
        return traced.lower() if lowering_platform is None else traced.lower(lowering_platforms=(lowering_platform,))


def probe(learner, objective, choice: Choice, *, d: int, dtype, costs: bool = False, flat=None) -> None:
    """Lowers ``learner``'s chunk on ``choice`` for this machine's accelerator, once per signature (``flat``: the
    flattened grid's learner and objective, :func:`jcsol.core.checks.flatten_grid`'s, computed if not given):
    raises where the backend's compiler refuses it (:func:`jcsol.core.chunks.choose`'s ``probe``, which then takes
    the scan)."""
    if flat is None:
        flat = checks.flatten_grid(learner, Sum() if objective is None else objective, np.dtype(dtype))[1:]

    def lowered() -> bool:
        lowered_chunk(
            learner,
            objective,
            d=d,
            path=choice,
            platform=jax.default_backend(),
            lowering_platform=None,
            dtype=dtype,
            costs=costs,
        )
        return True

    COMPILED.get_or_build(
        signature(flat, "probe", choice.backend.name, choice.options, d, np.dtype(dtype), costs), lowered
    )
