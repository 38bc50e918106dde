"""The one-device backend of a live learner (:class:`Packed`): the whole grid's states and the board held on one
device as a few flat buffers, learnt and scored by two compiled calls.

Between calls the learner states and the board are held as a few flat buffers (:class:`Packing`: each large
array alone, the small ones concatenated by dtype), donated to ``learn``: every buffer passed in and out of a
call costs about a microsecond of dispatch, more than the arithmetic of one event. One event is one call of one
executable for ``learn`` (the engine's round and the board's update fused; XLA removes a scan of length 1) and
one for ``predict``; they are ``jax.jit`` functions, called through JAX's C++ dispatch. Over sparse rows on the
CPU, the buffers of a sparse-step learner's large state vectors are held in the engine's configurations-minor
layout (:func:`jcsol.core.layout.configs_minor`), laid out again only when the stream switches between sparse
and dense rows.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.layout import Format, Layout

from .. import whole_loops
from ..compiled import CompiledCache
from ..core.layout import carry_formats, is_format
from ..core.programs import signature
from ..core.rounds import init_carry
from ..distributed import Spread
from ..scoring import grid_scores, grid_weights, is_linear, sparse_dot
from ..xla_cpu import compile_options
from .backend import (
    batch_choices,
    batch_rounds,
    batch_signature,
    flat_counts,
    restore_whole,
    whole_carry_leaves,
    working_labels,
)
from .board import Board, Selection, advance_board, choice, halve_when_full, init_board, served_score

_COMPILED: CompiledCache[Any] = CompiledCache()

#: A leaf of more than this many elements is a buffer of its own in a :class:`Packing`.
SMALL_LEAF = 4096


class Packed:
    """A live learner's grid on one device (:class:`jcsol.live.backend.Backend`): the states and the board as
    the flat buffers of a :class:`Packing`, and the compiled learn and predict of those buffers.

    Args:
        learners, objective: each learner's flat grid (hyperparameter leaves of shape ``(size,)``) and the whole
            grid's flat objective (leaves of shape ``(G,)``).
        sizes: each learner's grid size.
        key: the key of the learners' initial states (:func:`jcsol.run`'s).
        selection, dtype: the board's rule and the working dtype.
        path: the chunk backend of the batches, as :func:`jcsol.run` takes it (:func:`batch_choices`).
        scales: each learner's scaling of the rows inside the round, as :func:`jcsol.run` takes it
            (:mod:`jcsol.core.scaling`): its statistics are part of the learner's carry.
    """

    spread: Spread | None = None  # one process holds the whole grid

    def __init__(
        self,
        learners: tuple,
        objective,
        sizes: tuple[int, ...],
        key: jax.Array,
        selection: Selection,
        dtype,
        path: Any,
        scales: tuple,
    ):
        self.shared = jax.device_put((learners, objective))
        self._shared_signature = signature(self.shared)  # the learners' part of the learn call's key
        # the calls take the learners and the objective as their leaves: JAX's dispatch flattens a tuple of arrays
        # in C++, a learner's dataclass by a Python call (about 6 µs a call, more than one event's arithmetic)
        leaves, self._shared_tree = jax.tree.flatten(self.shared)
        self._shared_leaves = tuple(leaves)
        self._learner_leaves = self._shared_leaves[: len(jax.tree.leaves(learners))]
        self.sizes, self.key, self.selection, self.dtype, self.path = sizes, key, selection, dtype, path
        self.scales = scales
        self._choices: dict[tuple[int, bool], tuple] = {}  # by (d, sparse rows): each learner's chunk backend
        self.buffers: tuple | None = None
        self.packing: Packing | None = None
        self.calls: Calls | None = None  # the compiled learn and predict of the buffers' packing and formats
        self.sparse_rows = False  # the kind of rows the buffers are laid out for (the last seen)
        self.d = 0

    @property
    def started(self) -> bool:
        return self.buffers is not None

    def start(self, d: int, sparse_rows: bool, description: dict) -> None:
        keys = jax.random.split(self.key, 1)
        carry = []
        for flat, size, scale in zip(self.shared[0], self.sizes, self.scales):
            init = _compiled(
                ("init", signature((flat, keys)), d, str(self.dtype), size, scale, sparse_rows),
                lambda size=size, flat=flat, scale=scale: jax.jit(
                    functools.partial(
                        init_carry,
                        n_grid=size,
                        n_curve=0,
                        d=d,
                        dtype=self.dtype,
                        scale=scale,
                        sparse_rows=sparse_rows,
                    ),
                    compiler_options=compile_options(),
                ).lower(flat, keys),
            )
            carry.append(init(flat, keys))
        self.d, self.sparse_rows = d, sparse_rows
        self.hold(tuple(carry), jax.device_put(init_board(sum(self.sizes), self.selection, self.dtype)))

    def hold(self, carry: tuple, board: Board) -> None:
        """Keeps ``(carry, board)`` (carries as :meth:`carry` gives them) as the buffers of their packing."""
        device = next(iter(jax.tree.leaves(carry)[0].devices()))
        vectors = tuple(  # only the states' leaves have formats of their own (carry_formats)
            jax.tree.map(lambda _: False, c)._replace(
                state=jax.tree.map(
                    lambda f: f is not None, carry_formats(c, learner, (device,), True).state, is_leaf=is_format
                )
            )
            for c, learner in zip(carry, self.shared[0])
        )
        packing = Packing.of((carry, board), (vectors, jax.tree.map(lambda _: False, board)))
        self.calls = self._calls_for(packing, device, self.sparse_rows)
        self.packing = packing
        self.buffers = jax.device_put(_pack((carry, board), packing=self.packing), self.calls.formats)

    def learn(self, rows, y, arrival, served, length) -> jax.Array:
        calls = self._laid_out_for(rows)
        key = lambda: (self._shared_signature, batch_signature(rows, y, arrival, served, length))  # noqa: E731
        self.buffers, scores = calls.learn(key, self.buffers, self._shared_leaves, rows, y, arrival, served, length)
        return scores

    def score(self, rows, grid: bool) -> tuple[jax.Array | None, jax.Array]:
        calls = self._laid_out_for(rows)
        return calls.predict(self.buffers, self._learner_leaves, rows, grid)

    def carry(self) -> tuple:
        return _unpack(self.buffers, packing=self.packing)[0]

    def board(self) -> Board:
        assert self.packing is not None
        return _unpack(self.buffers, packing=self.packing, keep=_kept(self.packing, "board"))[1]

    def counts(self) -> np.ndarray:
        assert self.packing is not None
        return flat_counts(_unpack(self.buffers, packing=self.packing, keep=_kept(self.packing, "counts"))[0])

    def saved_carry(self) -> list[np.ndarray]:
        return whole_carry_leaves(self)

    def layout(self) -> None:
        return None

    def restore(self, arrays: Mapping[str, np.ndarray], path: str) -> None:
        restore_whole(self, arrays, path)

    def _laid_out_for(self, rows) -> Calls:
        """The compiled calls for a batch of these rows, the buffers laid out for their kind (sparse or dense)
        first if the last batch was of the other kind."""
        assert self.buffers is not None and self.packing is not None and self.calls is not None
        sparse = isinstance(rows, tuple)
        if sparse != self.sparse_rows:
            device = next(iter(self.buffers[0].devices()))
            self.calls = self._calls_for(self.packing, device, sparse)  # first: it refuses a path for these rows
            self.sparse_rows = sparse
            self.buffers = jax.device_put(self.buffers, self.calls.formats)
        return self.calls

    def _calls_for(self, packing: Packing, device, sparse: bool) -> Calls:
        if (self.d, sparse) not in self._choices:
            self._choices[self.d, sparse] = batch_choices(
                self.path,
                self.shared[0],
                self.shared[1],
                self.sizes,
                d=self.d,
                dtype=self.dtype,
                sparse_rows=sparse,
                platform=device.platform,
            )
        choices = self._choices[self.d, sparse]
        return _calls(packing, self._shared_tree, device, self.d, self.selection, self.sizes, sparse, choices)


class Calls(NamedTuple):
    """The compiled calls of a live learner's buffers, and the buffers' formats (their layouts on the device)."""

    learn: Any  # (key, buffers, leaves of (learners, objective), rows, y, arrival, served, length) -> (buffers, scores)
    predict: Any  # (buffers, the learners' leaves, rows, grid) -> (scores or None, served scores)
    formats: tuple  # per buffer: a Format (configurations minor), or the device's sharding (the default layout)


class Packing(NamedTuple):
    """Where each leaf of a pytree of arrays lies in a few flat buffers: a leaf of more than ``SMALL_LEAF``
    elements is a buffer of its own, the others are concatenated, one buffer per dtype."""

    treedef: Any
    slots: tuple  # per leaf: (buffer, offset, shape)
    buffers: tuple  # per buffer: (dtype name, size) of a concatenation, or None for a leaf of its own
    vectors: tuple  # per buffer: whether it is a state vector of its own, laid out for sparse rows

    @classmethod
    def of(cls, tree, vectors) -> Packing:
        """The packing of ``tree``; ``vectors``, a tree of booleans of the same structure, marks the state vectors
        laid out configurations-minor for sparse rows (each a buffer of its own when large)."""
        leaves, treedef = jax.tree.flatten(tree)
        buffers: list[Any] = []  # per buffer: [dtype name, size], or None
        own_vectors: list[bool] = []
        groups: dict[str, int] = {}
        slots: list[tuple[int, int, tuple[int, ...]]] = []
        for leaf, vector in zip(leaves, jax.tree.leaves(vectors), strict=True):
            shape, dtype = tuple(leaf.shape), np.dtype(leaf.dtype)
            if int(np.prod(shape)) > SMALL_LEAF:
                slots.append((len(buffers), 0, shape))
                buffers.append(None)
                own_vectors.append(bool(vector))
                continue
            if dtype.name not in groups:
                groups[dtype.name] = len(buffers)
                buffers.append([dtype.name, 0])
                own_vectors.append(False)
            at = groups[dtype.name]
            slots.append((at, buffers[at][1], shape))
            buffers[at][1] += int(np.prod(shape))
        return cls(treedef, tuple(slots), tuple(None if b is None else tuple(b) for b in buffers), tuple(own_vectors))


@functools.lru_cache(maxsize=64)
def _calls(
    packing: Packing, shared, device, d: int, selection: Selection, sizes: tuple, sparse_rows: bool, choices: tuple
) -> Calls:
    """:func:`_learn` and :func:`_predict` jitted for the buffers of ``packing`` and the learners and objective of
    tree ``shared`` (given as its leaves) on ``device``, for sparse rows or dense ones: over sparse rows, the
    buffers that hold a sparse-step learner's state vectors are taken and given in the engine's
    configurations-minor layout (:func:`jcsol.core.layout.configs_minor`), so that no call lays them out again.
    Every buffer is placed on ``device`` (committed), as the calls give them back: placed with no device, the
    first call's buffers would be another signature than the next call's, and each call would be compiled twice.
    ``choices``: each learner's chunk backend (:func:`jcsol.live.backend.batch_choices`)."""
    sharding = jax.sharding.SingleDeviceSharding(device)
    minor = Format(Layout((0, 2, 1)), sharding)
    formats = tuple(minor if vector and sparse_rows else sharding for vector in packing.vectors)
    learn = whole_loops.Marked(
        jax.jit(
            functools.partial(
                _learn, packing=packing, shared_tree=shared, d=d, selection=selection, sizes=sizes, choices=choices
            ),
            donate_argnums=0,
            in_shardings=(formats, *(None,) * 6),
            out_shardings=(formats, None),
            compiler_options=compile_options(),
        )
    )
    predict = jax.jit(
        functools.partial(
            _predict, packing=packing, learners_tree=shared.children()[0], d=d, rule=selection.rule, sizes=sizes
        ),
        static_argnums=3,
        in_shardings=(formats, None, None),
        compiler_options=compile_options(),
    )
    return Calls(learn, predict, formats)


def _packed(tree, *, packing: Packing) -> tuple:
    """The buffers of ``tree`` laid out by ``packing``."""
    leaves = jax.tree.leaves(tree)
    parts: list[list] = [[] for _ in packing.buffers]
    for leaf, (at, _, _) in zip(leaves, packing.slots):
        parts[at].append(leaf if packing.buffers[at] is None else leaf.reshape(-1))
    return tuple(p[0] if b is None else jnp.concatenate(p) for p, b in zip(parts, packing.buffers))


def _unpacked(buffers: tuple, *, packing: Packing, keep: tuple[bool, ...] | None = None):
    """``(carries, board)`` of the held buffers; with ``keep`` (a flag per leaf), the leaves not kept are ``None``
    and the buffers that hold none of the kept ones go unread (an argument a jitted function does not use is not
    passed): reading the board or the counts copies no state vector out of its layout."""
    kept = (True,) * len(packing.slots) if keep is None else keep
    leaves = [_leaf(buffers, packing, slot) if k else None for slot, k in zip(packing.slots, kept, strict=True)]
    return jax.tree.unflatten(packing.treedef, leaves)


# called on the held buffers; the compiled calls unpack and pack inside their own programs (a jitted function
# with compiler options cannot be called inside another)
_pack = jax.jit(_packed, static_argnames="packing", compiler_options=compile_options())
_unpack = jax.jit(_unpacked, static_argnames=("packing", "keep"), compiler_options=compile_options())


def _leaf(buffers: tuple, packing: Packing, slot: tuple[int, int, tuple[int, ...]]):
    at, offset, shape = slot
    if packing.buffers[at] is None:
        return buffers[at]
    return buffers[at][offset : offset + int(np.prod(shape))].reshape(shape)


@functools.lru_cache(maxsize=64)
def _kept(packing: Packing, part: str) -> tuple[bool, ...]:
    """:func:`_unpack`'s ``keep`` for one part of ``(carries, board)``: ``"board"``, or the engine's ``"counts"``."""
    carries, board = jax.tree.unflatten(packing.treedef, [False] * packing.treedef.num_leaves)
    if part == "board":
        board = jax.tree.map(lambda _: True, board)
    else:
        carries = tuple(c._replace(counts=True) for c in carries)
    return tuple(jax.tree.leaves((carries, board)))


def _compiled(key, lower):
    return _COMPILED.get_or_build(key, lambda: lower().compile())[0]


# -- compiled computations -------------------------------------------------------------------------------------


def _learn_impl(
    carries: tuple,
    board: Board,
    learners: tuple,
    objective,
    rows,
    y,
    arrival,
    served,
    length,
    *,
    d,
    selection,
    sizes,
    choices,
):
    """The engine's rounds over the first ``length`` events of a padded batch for each learner (a single run,
    its grid vmapped, on its chunk backend in ``choices``), then the board's; the counts halved if they have
    counted 2**30 events (:func:`~jcsol.live.board.halve_when_full`)."""
    y = working_labels(y, rows)
    new, per_learner, start = [], [], 0
    for carry, learner, size, chosen in zip(carries, learners, sizes, choices):
        own = jax.tree.map(lambda a, start=start, size=size: a[start : start + size], objective)
        carry, s = batch_rounds(carry, learner, own, rows, y, length, d=d, choice=chosen)
        new.append(carry)
        per_learner.append(s[0].T)  # (n, G of this learner)
        start += size
    scores = jnp.concatenate(per_learner, axis=1)
    board = advance_board(board, objective, scores if arrival is None else arrival, y, served, selection, length)
    carries, board = halve_when_full(tuple(new), board)
    return carries, board, scores


def _learn(
    buffers: tuple,
    shared_leaves: tuple,
    rows,
    y,
    arrival,
    served,
    length,
    *,
    packing,
    shared_tree,
    d,
    selection,
    sizes,
    choices,
):
    """:func:`_learn_impl` on the held buffers and the leaves of ``shared_tree`` (the learners, the objective):
    ``(new buffers, every configuration's pre-update scores)``."""
    learners, objective = jax.tree.unflatten(shared_tree, shared_leaves)
    carries, board = _unpacked(buffers, packing=packing)
    carries, board, scores = _learn_impl(
        carries,
        board,
        learners,
        objective,
        rows,
        y,
        arrival,
        served,
        length,
        d=d,
        selection=selection,
        sizes=sizes,
        choices=choices,
    )
    return _packed((carries, board), packing=packing), scores


def _predict_impl(states: tuple, scalers: tuple, chosen, learners: tuple, rows, *, d, rule, grid, sizes):
    """``(every configuration's scores (n, G), or None unless grid; the served scores (n,))``, the rows scaled by
    each configuration's features' statistics where the learner scales them (``scalers``)."""
    unscaled = all(scaler is None for scaler in scalers)
    if not grid and rule == "ftl" and isinstance(rows, tuple) and all(map(is_linear, learners)) and unscaled:
        return None, _served_linear_scores(tuple(map(_first_run, states)), learners, sizes, chosen, rows)
    scores = jnp.concatenate(
        [
            grid_scores(_first_run(state), learner, rows, d, scaler=_first_run(scaler))
            for state, scaler, learner in zip(states, scalers, learners)
        ],
        axis=1,
    )
    return (scores if grid else None), served_score(chosen, scores, rule)


def _predict(buffers: tuple, learner_leaves: tuple, rows, grid, *, packing, learners_tree, d, rule, sizes):
    """:func:`_predict_impl` on the held buffers and the leaves of ``learners_tree``."""
    learners = jax.tree.unflatten(learners_tree, learner_leaves)
    carries, board = _unpacked(buffers, packing=packing)
    states, scalers = tuple(c.state for c in carries), tuple(c.scaler for c in carries)
    chosen = choice(board, rule)
    return _predict_impl(states, scalers, chosen, learners, rows, d=d, rule=rule, grid=grid, sizes=sizes)


def _first_run(state):
    """A state of the engine's carry (leaves ``(1 run, G, …)``) as its grid's (leaves ``(G, …)``)."""
    return jax.tree.map(lambda a: a[0], state)


def _served_linear_scores(states: tuple, learners: tuple, sizes: tuple, chosen, rows) -> jax.Array:
    """``(n,)`` scores of sparse rows under one configuration, ``chosen`` in the learners' grids laid side by
    side (their sizes ``sizes``), every learner linear: the weights of the rows' features are gathered for that
    configuration alone, the same values :func:`grid_scores` gives in its column."""
    served = None
    start = 0
    for state, learner, size in zip(states, learners, sizes):
        own = jnp.clip(chosen - start, 0, size - 1)
        scores = sparse_dot(rows, grid_weights(state, learner).T[rows[0], own][..., None])[:, 0]
        served = scores if served is None else jnp.where(chosen >= start, scores, served)
        start += size
    assert served is not None
    return served
