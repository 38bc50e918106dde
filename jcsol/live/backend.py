"""What a live learner asks of the states it holds (:class:`Backend`), and the rounds both backends run.

Two backends hold a live learner's states and its board, and compile its calls:

- :class:`jcsol.live.packed.Packed`: the whole grid on one device, held between calls as a few flat buffers;
- :class:`jcsol.live.units.Units`: the grid cut into blocks laid over the devices of this process, or of every
  process of a distributed run.

:class:`jcsol.Live` checks a batch, cuts and pads it (:mod:`jcsol.live.batches`), and hands each piece to its
backend; the backend lays its states out for the kind of rows (sparse or dense) it is given and runs the
compiled call.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Protocol

import jax
import jax.numpy as jnp
import numpy as np

from ..core import chunks, programs
from ..core.chunks import Choice
from ..distributed import Spread
from . import files
from .board import Board


class Backend(Protocol):
    """The states and the board of a live learner, and the calls that advance and read them.

    ``rows`` are given as the compiled calls take them (:func:`jcsol.live.batches.device_rows`): a dense array,
    or sparse rows' ``(indices, values)``; a backend lays its states out for their kind before its call.
    """

    #: the processes that hold the grid with this one; ``None`` where this process holds all of it
    spread: Spread | None

    @property
    def started(self) -> bool:
        """Whether the states are held (the learner has its dimension)."""
        ...

    def start(self, d: int, sparse_rows: bool, description: dict) -> None:
        """Holds the initial states of ``d`` features (as :func:`jcsol.run` makes them) and an empty board, laid
        out for sparse rows or dense ones; ``description`` is the learner's, which every process must share."""
        ...

    def learn(self, rows, y, arrival, served, length) -> jax.Array:
        """Learns the first ``length`` events of a padded batch (all of them when ``length`` is ``None``) in every
        configuration, then advances the board with ``arrival`` (the scores given when the events arrived; by
        default those of this pass) and ``served``; gives every configuration's pre-update scores ``(n, G)``."""
        ...

    def score(self, rows, grid: bool) -> tuple[jax.Array | None, jax.Array]:
        """``(every configuration's scores (n, G), or None unless grid; the served scores (n,))``; nothing
        changes."""
        ...

    def carry(self) -> tuple:
        """Each learner's engine carry, leaves of shape ``(1, its grid size, …)``."""
        ...

    def board(self) -> Board:
        """The board."""
        ...

    def counts(self) -> np.ndarray:
        """The engine's confusion counts of every configuration, ``(G, 4)``."""
        ...

    def hold(self, carry: tuple, board: Board) -> None:
        """Holds ``carry`` (as :meth:`carry` gives it) and ``board`` in place of the states and the board."""
        ...

    def saved_carry(self) -> list[np.ndarray]:
        """The carry's leaves as this process saves them."""
        ...

    def layout(self) -> dict | None:
        """The process layout a share of a save records; ``None`` where this process holds the whole grid."""
        ...

    def restore(self, arrays: Mapping[str, np.ndarray], path: str) -> None:
        """Holds the carry and the board saved in ``arrays``, the arrays of the file ``path``
        (:mod:`jcsol.live.files`; the carry as :meth:`saved_carry` gives it), refusing them
        (:class:`jcsol.live.files.LiveFileError`) if they are not this learner's."""
        ...


def whole_carry_leaves(backend: Backend) -> list[np.ndarray]:
    """The leaves of ``backend``'s carry, as a process that holds the whole grid saves them."""
    return [np.asarray(a) for a in jax.tree.leaves(backend.carry())]


def restore_whole(backend: Backend, arrays: Mapping[str, np.ndarray], path: str) -> None:
    """Holds the carry and the board that ``arrays`` (those of the file ``path``) save for a process that holds
    the whole grid, each checked against ``backend``'s own (:func:`jcsol.live.files.restored`)."""
    backend.hold(
        files.restored(backend.carry(), arrays, "carry", path), files.restored(backend.board(), arrays, "board", path)
    )


def flat_counts(carries: tuple) -> np.ndarray:
    """The engine's counts of each learner's carry (leaves ``(1, its grid size, …)``), side by side: ``(G, 4)``."""
    return np.concatenate([np.asarray(c.counts[0]) for c in carries])


def working_labels(y, rows):
    """The labels of a batch, given to a call as int8 (one byte an event), in the rows' dtype."""
    return y.astype((rows[1] if isinstance(rows, tuple) else rows).dtype)


def batch_signature(rows, y, arrival, served, length) -> tuple:
    """What tells a batch's learn calls apart (the part of their :class:`jcsol.whole_loops.Marked` key that
    changes from batch to batch): the rows' kind, shapes and dtypes, the labels', and which of the optional
    arguments are given, with their shapes. Cheaper than the whole signature, as a call per event needs."""
    return (
        tuple((r.shape, r.dtype) for r in (rows if isinstance(rows, tuple) else (rows,))),
        isinstance(rows, tuple),
        y.shape,
        y.dtype,
        *(None if a is None else (np.shape(a), np.result_type(a)) for a in (arrival, served, length)),
    )


def batch_rounds(carry, learner, objective, rows, y, length, *, d: int, choice: Choice, per_unit: bool = False):
    """The engine's rounds over a batch in every unit, the events in their order, on the chunk backend ``choice``
    (:meth:`jcsol.core.chunks.ChunkBackend.prefix`): all of them when ``length`` is ``None``, else the first
    ``length`` of a padded batch: ``(carry, every run's pre-update scores (units, grid, n))``."""
    n = y.shape[0]
    units = jax.tree.leaves(carry)[0].shape[0]
    none = jnp.zeros(units, jnp.int32)
    order = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32), (units, n))
    slots = jnp.zeros(n, jnp.int32)
    rounds = choice.backend.prefix(choice.options, d=d, per_unit=per_unit)
    return rounds(carry, learner, objective, (rows, y, None), none, none, order, slots, length)


def batch_choices(
    path, learners: tuple, objective, sizes: tuple, *, d: int, dtype, sparse_rows: bool, platform: str
) -> tuple:
    """The chunk backend of each learner's batches (:func:`jcsol.core.chunks.choose`, as :func:`jcsol.run` takes
    it for ``path``): on a GPU the kernel where it covers the learner and its rows, else the scan. ``learners`` are
    the flat grids of ``sizes`` configurations, ``objective`` the whole grid's flat objective."""
    choices, start = [], 0
    for learner, size in zip(learners, sizes):
        own = jax.tree.map(lambda a, start=start, size=size: a[start : start + size], objective)
        probe = functools.partial(programs.probe, learner, own, d=d, dtype=dtype)
        choices.append(
            chunks.choose(path, learner, d=d, dtype=dtype, dense_rows=not sparse_rows, platform=platform, probe=probe)
        )
        start += size
    return tuple(choices)
