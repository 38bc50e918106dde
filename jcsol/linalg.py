"""Vector operations a step needs, for dense rows and for sparse rows alike.

A learner that writes its step with these functions (and sets ``sparse_steps = True``) runs on
:class:`jcsol.SparseRows` at O(nnz) per round: the engine hands it each row as a :class:`SparseVector` instead
of a dense ``(d,)`` array, and nothing of size ``d`` is touched but the entries the row names.

A sparse row's entries are added by :func:`add_at`, a slice write per entry rather than a scatter: XLA compiles
a scan whose body holds a scatter as one small kernel per operation, a scan without one as a single kernel where
it is marked to (:mod:`jcsol.whole_loops`) or whole-loop kernels are on (:func:`jcsol.xla_cpu.use_loop_kernels`),
at two to three times the events/s for a sparse step. Where XLA keeps its small kernels (an unmarked loop, or
one compiled for an accelerator), the slice writes would be more of them than one scatter, and :func:`add_at`
scatters.

Inside a GPU kernel's own loop over rounds (:mod:`jcsol.core.triton`, :func:`in_gpu_kernel`), the inner products
of a dense row are written as elementwise products and a sum: a GPU kernel language lowers those for any block
of runs, where a matrix–vector product of a few runs has no instruction to map to.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
from collections.abc import Callable
from typing import NamedTuple, TypeVar

import jax
import jax.numpy as jnp
from jax import lax

from . import whole_loops, xla_cpu

F = TypeVar("F", bound=Callable)


class SparseVector(NamedTuple):
    """One sparse row: ``values`` at ``indices``; padding entries have value 0 (their index is irrelevant)."""

    indices: jax.Array  # (k,) int32
    values: jax.Array  # (k,)


Vector = jax.Array | SparseVector

UNROLLED_ENTRIES = 128  # above this many entries a step, add_at scatters: the slice writes would bloat the program


def add_at(w: jax.Array, indices: jax.Array, values: jax.Array) -> jax.Array:
    """``w`` with ``values[j]`` added at ``indices[j]``, one entry after the other (``w.at[indices].add(values)``,
    repeated indices included).

    Under ``vmap`` the same holds over the mapped axes: where the indices are shared (the grid's configurations
    update the same entries of their own vectors) each entry is one slice across those axes; where they are mapped
    too (each permutation has its own row) one slice per mapped position. The writes are unrolled in the program
    up to :data:`UNROLLED_ENTRIES` entries a step and left to a scatter beyond. They are written only where XLA
    compiles the rounds as one kernel for the CPU: inside a call marked to be one (:func:`jcsol.whole_loops.whole`),
    or in a loop of rounds (:func:`in_rounds`) under the opt-in (``jcsol.xla_cpu.loop_kernels``); elsewhere each
    write would be a kernel of its own, and one scatter is quicker.
    """
    slices = whole_loops.whole() or (_IN_ROUNDS.get() and xla_cpu.loop_kernels)
    return _add_at((), slices)(w, indices, values)


_IN_ROUNDS = contextvars.ContextVar("jcsol_in_rounds", default=False)
_IN_GPU_KERNEL = contextvars.ContextVar("jcsol_in_gpu_kernel", default=False)


@contextlib.contextmanager
def in_rounds(looped: bool = True, platform: str = "cpu"):
    """Steps traced in this context run in a loop of rounds that XLA keeps as a loop (not one of a single round,
    which it removes), compiled for ``platform``: :func:`add_at` writes slices there when it is the CPU."""
    token = _IN_ROUNDS.set(looped and platform == "cpu")
    try:
        yield
    finally:
        _IN_ROUNDS.reset(token)


@contextlib.contextmanager
def in_gpu_kernel():
    """Steps traced in this context run inside a GPU kernel's own loop over rounds (:mod:`jcsol.core.triton`): the
    inner products of dense rows are elementwise products and a sum."""
    token = _IN_GPU_KERNEL.set(True)
    try:
        yield
    finally:
        _IN_GPU_KERNEL.reset(token)


def tracing_gpu_kernel() -> bool:
    """Whether the step being traced runs inside a GPU kernel's loop (:func:`in_gpu_kernel`)."""
    return _IN_GPU_KERNEL.get()


def _inner(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a · b`` over the last axis."""
    return jnp.sum(a * b, axis=-1) if _IN_GPU_KERNEL.get() else a @ b


@functools.cache
def _add_at(index_axes: tuple[int, ...], slices: bool):
    """:func:`add_at` for ``w (*lead, d)``, ``values (*lead, k)`` and ``indices`` mapped over the ``index_axes``
    of ``lead`` only: ``indices (*[lead[a] for a in index_axes], k)``."""

    @jax.custom_batching.custom_vmap
    def add(w, indices, values):
        return _add_entries(index_axes, w, indices, values, slices)

    @add.def_vmap
    def add_mapped(axis_size, in_batched, w, indices, values):
        w_mapped, indices_mapped, values_mapped = in_batched
        if not w_mapped:
            w = jnp.broadcast_to(w, (axis_size, *w.shape))
        if not values_mapped:
            values = jnp.broadcast_to(values, (axis_size, *values.shape))
        shifted = tuple(a + 1 for a in index_axes)
        return _add_at((0, *shifted) if indices_mapped else shifted, slices)(w, indices, values), True

    return add


def _add_entries(index_axes: tuple[int, ...], w, indices, values, slices: bool):
    lead = w.shape[:-1]
    if indices.size > UNROLLED_ENTRIES or not slices:
        add = lambda w, i, v: w.at[i].add(v)  # noqa: E731
        for a in reversed(range(len(lead))):
            add = jax.vmap(add, in_axes=(0, 0 if a in index_axes else None, 0))
        return add(w, indices, values)
    sizes = (*(1 if a in index_axes else n for a, n in enumerate(lead)), 1)
    for where in itertools.product(*(range(lead[a]) for a in index_axes)):
        fixed = dict(zip(index_axes, where))
        start = tuple(fixed.get(a, 0) for a in range(len(lead)))
        for j in range(indices.shape[-1]):
            at = (*start, indices[(*where, j)])
            entry = lax.slice(values, (*start, j), tuple(b + n for b, n in zip((*start, j), sizes)))
            w = lax.dynamic_update_slice(w, lax.dynamic_slice(w, at, sizes) + entry, at)
    return w


def dot(w: jax.Array, x: Vector) -> jax.Array:
    """``w · x``."""
    if isinstance(x, SparseVector):
        return w[x.indices] @ x.values
    return _inner(w, x)


def matvec(m: jax.Array, x: jax.Array, *, symmetric: bool = False) -> jax.Array:
    """``M x`` of a dense ``(d, d)`` matrix and a dense vector. Inside a GPU kernel (:func:`in_gpu_kernel`) it is
    elementwise products and a sum — over the columns (row sums), or, for a ``symmetric`` ``M``, over the rows
    (column sums, which a program reduces across its threads' registers with fewer shuffles): no matrix
    instruction, whose float32 products a GPU may round through TF32's 10-bit mantissas."""
    if not _IN_GPU_KERNEL.get():
        return m @ x
    return jnp.sum(m * x[:, None], axis=0) if symmetric else jnp.sum(m * x, axis=-1)


def vecmat(x: jax.Array, m: jax.Array) -> jax.Array:
    """``xᵀ M`` of a dense vector and a dense ``(d, d)`` matrix; inside a GPU kernel, column sums of products."""
    return jnp.sum(m * x[:, None], axis=0) if _IN_GPU_KERNEL.get() else x @ m


def add_scaled(w: jax.Array, coef: jax.Array, x: Vector) -> jax.Array:
    """``w + coef · x``."""
    if isinstance(x, SparseVector):
        return add_at(w, x.indices, coef * x.values)
    return w + coef * x


def squared_norm(x: Vector) -> jax.Array:
    """``‖x‖²``."""
    if isinstance(x, SparseVector):
        return x.values @ x.values
    return _inner(x, x)


def weighted_squared_norm(s: jax.Array, x: Vector) -> jax.Array:
    """``Σ_i s_i x_i²``: ``xᵀ diag(s) x``."""
    if isinstance(x, SparseVector):
        return s[x.indices] @ (x.values * x.values)
    return _inner(s * x, x)


def add_scaled_product(w: jax.Array, coef: jax.Array, s: jax.Array, x: Vector) -> jax.Array:
    """``w + coef · (s ∘ x)``."""
    if isinstance(x, SparseVector):
        return add_at(w, x.indices, coef * s[x.indices] * x.values)
    return w + coef * s * x


def add_scaled_square(s: jax.Array, coef: jax.Array, t: jax.Array, x: Vector) -> jax.Array:
    """``s + coef · (t ∘ x)²``."""
    if isinstance(x, SparseVector):
        v = t[x.indices] * x.values
        return add_at(s, x.indices, coef * v * v)
    v = t * x
    return s + coef * v * v


def densify(x: Vector, d: int) -> jax.Array:
    """``x`` as a dense ``(d,)`` array."""
    if isinstance(x, SparseVector):
        return add_at(jnp.zeros(d, x.values.dtype), x.indices, x.values)
    return x


def one_matrix_at_a_time(fn: F) -> F:
    """``fn`` (a dense factorisation or solve: a LAPACK call on the CPU) vmapped as a loop over the batch.

    Under ``vmap`` — the engine maps every step over grid points and permutations — each LAPACK call then gets one
    matrix (batch size 1) instead of the whole batch. jaxlib 0.10's CPU LAPACK kernels split a batch over XLA's
    intra-op thread pool and *block* a pool thread until the pieces finish; when every pool thread is running such
    a kernel — as happens when runs are laid over one CPU device per core and each device's program reaches its
    batched call — no thread is left to run the pieces, and the process waits forever (the stacks show every
    ``tf_XLAEigen`` thread in ``jax::ParallelBatchMap`` → ``BlockingCounter::Wait``). A batch of one runs inline,
    on the calling thread. Each matrix is factored by the same LAPACK routine as in a batch, so the numbers are
    the same; only the batch's own split over threads (unused anyway when the devices already take every core)
    is given up. Compiled for an accelerator, the batch goes to its batched solver in one call, as ``vmap`` gives it.
    """
    wrapped = jax.custom_batching.custom_vmap(fn)

    @wrapped.def_vmap
    def _loop(axis_size, in_batched, *args):
        mapped = [a for a, b in zip(args, in_batched) if b]

        def one(xs):
            it = iter(xs)
            return wrapped(*(next(it) if b else a for a, b in zip(args, in_batched)))

        if jax.default_backend() != "cpu":
            out = jax.vmap(fn, in_axes=tuple(0 if b else None for b in in_batched))(*args)
        else:
            out = jax.lax.map(one, mapped)
        return out, jax.tree.map(lambda _: True, out)

    return wrapped  # type: ignore[return-value]
