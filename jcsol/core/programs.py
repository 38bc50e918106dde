"""The rounds compiled for a placement: a run's initial carry and its chunk of rounds, on the scan or the
one-kernel time loop (:mod:`jcsol.paths`), each compiled once per signature and kept in :data:`COMPILED`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from .. import kernel
from ..compiled import CompiledCache
from ..paths import CompilerOptions, Kernel, Path, Scan
from ..xla_cpu import compile_options
from . import layout, placement, rounds

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
):
    """``(init, carry shapes, compile seconds)``, compiled once per signature and cached; the carry is laid out
    for sparse rows or dense ones (:func:`jcsol.core.layout.carry_formats`)."""
    key = signature(
        (learner, keys), "init", n_grid, n_curve, d, np.dtype(dtype), devices, per_unit, sparse_rows, compiler_options
    )

    def build():
        split, whole = PartitionSpec("runs"), PartitionSpec()
        init = placement.sharded(
            functools.partial(rounds.init_carry, n_grid=n_grid, n_curve=n_curve, d=d, dtype=dtype, per_unit=per_unit),
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


def compiled_advance(
    carry_shape, args, *, d: int, devices: tuple, per_unit: bool, path: Path | None = None, record_scores: bool = True
):
    """``(advance, compile seconds)`` for a chunk of these shapes on ``path`` (default: the scan), compiled once
    per signature and cached."""
    path = Scan() if path is None else path
    key = signature((carry_shape, args), "advance", d, devices, per_unit, path, record_scores)

    def build():
        program = advance_program(
            carry_shape, args, d=d, devices=devices, per_unit=per_unit, path=path, record_scores=record_scores
        )
        with placement.precision(devices):
            lowered = program.lower(carry_shape, *args)
        return lowered.compile(dict(path.compiler_options) or None)  # the path's options win

    return COMPILED.get_or_build(key, build)


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
    """The jitted chunk of rounds that :func:`jcsol.run` compiles for ``path``, not yet lowered: ``(carry, *args)
    -> (carry, scores)``, the carry donated. A :class:`jcsol.Kernel` path takes the chunk's number of rounds as the
    last argument. ``platform`` (default: JAX's default backend) is the one the steps are written for, so that a
    chunk can be lowered for a GPU on a machine without one."""
    split, whole = PartitionSpec("runs"), PartitionSpec()
    hyper = split if per_unit else whole
    specs: tuple = (split, hyper, hyper, whole, split, split, split, whole)
    impl: Callable
    if isinstance(path, Kernel):
        impl = functools.partial(advance_kernel, d=d, per_unit=per_unit, options=path, record_scores=record_scores)
        specs += (whole,)
    else:
        impl = functools.partial(
            rounds.advance,
            d=d,
            per_unit=per_unit,
            unroll=path.unroll,
            platform=platform,
            record_scores=record_scores,
        )
    advance = placement.sharded(impl, devices, specs)
    formats = layout.carry_formats(carry_shape, args[0], devices, isinstance(args[2][0], tuple), platform)
    return jax.jit(
        advance,
        donate_argnums=0,
        in_shardings=(formats, *(None,) * len(args)),
        out_shardings=(formats, None),
        compiler_options=compile_options(),
    )


def chunk_rows(rows, path: Path):
    """Dense rows (a NumPy array) laid out as ``path``'s chunks read them, once, before they are placed: the
    kernel's features padded to a power of 2 (:func:`jcsol.kernel.padded_rows`), the scan's as they are."""
    return kernel.padded_rows(rows) if isinstance(path, Kernel) else rows


def advance_kernel(
    carry, learner, objective, data, n_pos, n_neg, idx, slots, n_rounds, *, d, per_unit, options, record_scores
):
    """:func:`jcsol.core.rounds.advance`'s chunk in one kernel (:func:`jcsol.kernel.advance`); the scores are
    empty unless recorded."""
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
    return rounds.Carry(*parts), scores
