"""Chunk backends: the ways the engine runs a chunk of rounds, in one registry (:data:`BACKENDS`).

A backend supplies how rows and states are laid out and looped over, never the round's arithmetic, which is
:func:`jcsol.core.rounds.run_round` for every backend:

- ``"scan"`` (:mod:`jcsol.core.scan`, options :class:`jcsol.Scan`): one ``lax.scan`` that XLA compiles, on every
  platform, for every learner;
- ``"kernel"`` (:mod:`jcsol.core.triton`, options :class:`jcsol.Kernel`): one Pallas kernel on Pallas' Triton
  backend, preferred on a GPU.

Whether a backend covers a learner is its :meth:`ChunkBackend.refusal`, decided when a run is planned from the
learner and its state's shapes, and stated nowhere else: :func:`choose`'s errors, ``jcsol.learners()``'s
``paths`` column and the docs' table (:func:`coverage`) all read it. A Mosaic GPU or TPU kernel is one more module
with its options class and one more entry of :data:`BACKENDS`.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import jax
import numpy as np

from ..objective import Sum
from ..paths import GPU_KERNEL, GPU_SCAN, Kernel, Scan
from . import rounds, scan, triton
from .checks import flatten_grid


class ChunkBackend(Protocol):
    """One way to run a chunk of rounds."""

    #: what ``path=`` calls it
    name: str
    #: its options class (frozen, hashable: part of a compiled program's identity)
    options: type
    #: the platforms where ``path="auto"`` prefers it
    preferred_on: tuple[str, ...]
    #: whether its compiled chunk takes the number of rounds to run (one program for every chunk, the last padded)
    takes_rounds: bool

    def unavailable(self) -> str | None:
        """Why this installation cannot run it, or ``None``."""

    def refusal(self, learner, state: Callable[[], Any], *, d: int, dense_rows: bool) -> str | None:
        """Why it does not run ``learner`` on these rows, or ``None``; ``state()`` gives the shapes of one run's
        state (traced when first called, so that a backend that needs no shapes traces nothing)."""

    def default_options(self, platform: str) -> Any:
        """Its options on ``platform`` when asked for by name."""

    def options_refusal(self, options, platform: str) -> str | None:
        """Why ``options`` cannot run on ``platform``, or ``None``."""

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """Dense rows laid out as its chunks read them, once, before they are placed."""

    def chunk(self, options, *, d: int, per_unit: bool, record_scores: bool, platform: str | None) -> Callable:
        """``(carry, learner, objective, data, n_pos, n_neg, idx, slots[, n_rounds]) -> (carry, scores)``."""

    def prefix(self, options, *, d: int, per_unit: bool, report: str = "score") -> Callable:
        """The live learner's batches and the estimator's steps: ``(carry, learner, objective, data, n_pos, n_neg,
        idx, slots, length, weights=None) -> (carry, values)``, the first ``length`` rounds of ``idx`` (a traced
        scalar; ``None``: all of them) over rows not laid out by :meth:`rows`, each row's ``ρ_t`` times its weight
        where ``weights`` are given; ``values`` the step's ``report`` field of every round, 0 after ``length``."""


class _ScanBackend:
    name: str = "scan"
    options: type = Scan
    preferred_on: tuple[str, ...] = ()
    takes_rounds: bool = False

    def unavailable(self) -> str | None:
        return None

    def refusal(self, learner, state: Callable[[], Any], *, d: int, dense_rows: bool) -> str | None:
        return None

    def default_options(self, platform: str) -> Scan:
        return GPU_SCAN if platform == "gpu" else Scan()

    def options_refusal(self, options: Scan, platform: str) -> str | None:
        return None

    def rows(self, rows):
        return rows

    def chunk(self, options: Scan, *, d, per_unit, record_scores, platform, late=(1, True)):
        unroll = options.unroll
        return functools.partial(
            scan.scan_chunk,
            d=d,
            per_unit=per_unit,
            unroll=unroll,
            platform=platform,
            record_scores=record_scores,
            late=late,
        )

    def prefix(self, options: Scan, *, d, per_unit, report="score"):
        def rounds(carry, learner, objective, data, n_pos, n_neg, idx, slots, length, weights=None):
            args = (carry, learner, objective, data, n_pos, n_neg, idx, slots)
            if length is None and weights is None and report == "score":
                return scan.scan_chunk(*args, d=d, per_unit=per_unit, unroll=options.unroll)
            length = idx.shape[1] if length is None else length
            return scan.scan_prefix(*args, d=d, length=length, per_unit=per_unit, weights=weights, report=report)

        return rounds


class _TritonBackend:
    name: str = "kernel"
    options: type = Kernel
    preferred_on: tuple[str, ...] = ("gpu",)
    takes_rounds: bool = True

    def unavailable(self) -> str | None:
        return triton.unavailable()

    def refusal(self, learner, state: Callable[[], Any], *, d: int, dense_rows: bool) -> str | None:
        return triton.refusal(learner, state, d=d, dense_rows=dense_rows)

    def default_options(self, platform: str) -> Kernel:
        return GPU_KERNEL

    def options_refusal(self, options: Kernel, platform: str) -> str | None:
        if options.interpret is False and platform != "gpu":
            return (
                f"jcsol.Kernel(interpret=False) compiles the kernel for a GPU, and this run's platform is {platform}: "
                "leave interpret=None (Pallas' interpreter off a GPU) or run on a GPU"
            )
        return None

    def rows(self, rows):
        return triton.padded_rows(rows)

    def chunk(self, options: Kernel, *, d, per_unit, record_scores, platform):
        return functools.partial(
            triton.kernel_chunk, d=d, per_unit=per_unit, options=options, record_scores=record_scores
        )

    def prefix(self, options: Kernel, *, d, per_unit, report="score"):
        return functools.partial(triton.kernel_prefix, d=d, per_unit=per_unit, options=options, report=report)


#: Every chunk backend, by the name ``path=`` gives it; ``path="auto"`` tries those preferred on the platform in this
#: order, then the scan.
BACKENDS: dict[str, ChunkBackend] = {b.name: b for b in (_TritonBackend(), _ScanBackend())}


class Choice(NamedTuple):
    """The backend a run takes and its options."""

    backend: ChunkBackend
    options: Any


def state_shapes(learner, *, d: int, dtype) -> Any:
    """The shapes of one run's state of ``learner`` (its grid flattened), for :meth:`ChunkBackend.refusal`: traced,
    not computed."""
    grid_shape, flat_learner, _ = flatten_grid(learner, Sum(), np.dtype(dtype))
    keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), 1))
    init = functools.partial(rounds.init_carry, n_grid=math.prod(grid_shape), n_curve=0, d=d, dtype=dtype)
    carry = jax.eval_shape(init, flat_learner, keys)
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape[2:], a.dtype), carry.state)


def choose(path: Any, learner, *, d: int, dtype, dense_rows: bool, platform: str, probe=None) -> Choice:
    """The backend a run takes: ``path`` as given to :func:`jcsol.run`, for ``learner`` on rows of ``d`` features in
    ``dtype``, dense and in memory (``dense_rows``) or not, on ``platform``.

    ``"auto"`` takes the first backend preferred on ``platform`` that covers the learner, else the scan; a
    preferred backend that covers it but cannot run here (not importable, or ``probe(choice)`` raising: its
    compiler refuses the learner) gives one warning naming why. A backend named, or given by its options, that
    does not cover the learner is refused, naming why."""
    check_path(path)
    state = functools.cache(functools.partial(state_shapes, learner, d=d, dtype=dtype))
    owners = [b for b in BACKENDS.values() if isinstance(path, b.options)]
    if owners:
        chosen = Choice(owners[0], path)
    elif path == "auto":
        return _automatic(learner, state, d=d, dense_rows=dense_rows, platform=platform, probe=probe)
    else:
        chosen = Choice(BACKENDS[path], BACKENDS[path].default_options(platform))
    why = (
        chosen.backend.options_refusal(chosen.options, platform)
        or chosen.backend.refusal(learner, state, d=d, dense_rows=dense_rows)
        or chosen.backend.unavailable()
    )
    if why is not None:
        raise ValueError(
            f"path={chosen.backend.name!r} cannot run {learner.name} here: {why}; use path='scan' or 'auto'"
        )
    return chosen


def check_path(path: Any, platform: str | None = None) -> None:
    """Refuses a ``path=`` that names no backend, or whose options cannot run on ``platform`` (where given), before
    anything is known of the learner or its rows."""
    owners = [b for b in BACKENDS.values() if isinstance(path, b.options)]
    if owners:
        why = None if platform is None else owners[0].options_refusal(path, platform)
        if why is not None:
            raise ValueError(f"path={path!r}: {why}")
        return
    if isinstance(path, str) and (path == "auto" or path in BACKENDS):
        return
    names = ", ".join(f'"{name}"' for name in BACKENDS)
    options = " or ".join(f"jcsol.{b.options.__name__}(...)" for b in BACKENDS.values())
    raise ValueError(f'path must be "auto", {names}, {options}, got {path!r}')


def _automatic(learner, state, *, d, dense_rows, platform, probe) -> Choice:
    for backend in BACKENDS.values():
        if platform not in backend.preferred_on or backend.refusal(learner, state, d=d, dense_rows=dense_rows):
            continue
        choice = Choice(backend, backend.default_options(platform))
        why = backend.unavailable() or _probed(probe, choice)
        if why is None:
            return choice
        warnings.warn(
            f'path="auto" runs {learner.name} on the scan, not on the {backend.name} backend: {why}',
            RuntimeWarning,
            stacklevel=5,  # jcsol.run's caller
        )
    return Choice(BACKENDS["scan"], BACKENDS["scan"].default_options(platform))


def _probed(probe, choice: Choice) -> str | None:
    if probe is None:
        return None
    try:
        probe(choice)
    except Exception as err:  # whatever the backend's compiler raises on a learner it refuses
        return f"its compiler refused the chunk ({type(err).__name__}: {err})"
    return None


def coverage(learner, *, d: int = 8, dtype=np.float32) -> dict[str, str | None]:
    """Each backend's refusal of ``learner`` on dense rows held in memory (``None`` where it covers it)."""
    state = functools.cache(functools.partial(state_shapes, learner, d=d, dtype=dtype))
    return {name: b.refusal(learner, state, d=d, dense_rows=True) for name, b in BACKENDS.items()}
