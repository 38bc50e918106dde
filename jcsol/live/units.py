"""A live learner's grid cut into blocks and laid over devices — several of one process, or every device of a
distributed run (:mod:`jcsol.distributed`).

With ``Live(..., grid_blocks=k)``, each learner's flat grid is cut into ``k`` blocks of equal size (the last
padded with copies of its last configuration), exactly as :func:`jcsol.run` cuts it with ``grid_blocks=k``:
a block is a *unit*, and the units are split over the devices, whole, at least two to a device (padded with
copies of the last unit). Under ``jax.distributed.initialize()`` every process's devices take part, in process
order, and a grid of one block is padded to one copy per device. ``learn`` and ``predict`` are then one
compiled program over all devices: each device advances (or scores with) its own units, every
configuration's pre-update scores are gathered to every device (an all-gather), and the board is advanced
on each of them, the same computation on the same numbers, so every process holds the same board.

A unit's arithmetic does not depend on how many devices or processes share the units, so a live learner
over ``P`` processes gives the same bits as one process with the same ``grid_blocks`` and the same number of
units a device — and, over the concatenated stream, as :func:`jcsol.run` with that ``grid_blocks``. The
blocks, not the devices, fix the bits: a learner saved with ``grid_blocks=k`` continues with ``k``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .. import whole_loops
from ..checkpoint import update_digest
from ..core.layout import carry_formats, is_format
from ..core.placement import blocked, devices_for, on_host, pad_runs, sharded
from ..core.programs import compiled_init, signature
from ..distributed import Spread
from ..scoring import grid_scores
from ..watchdog import resolve_timeout
from ..xla_cpu import compile_options, version_numbers
from . import files
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


class Units:
    """A live learner's grid as units over devices (:class:`jcsol.live.backend.Backend`): the carries split over
    the devices, the board whole on each, and the compiled learn and predict of the units.

    Args:
        learners, objective: each learner's flat grid (hyperparameter leaves of shape ``(size,)``) and the whole
            grid's flat objective (leaves of shape ``(G,)``).
        sizes: each learner's grid size.
        blocks: the blocks each learner's grid is cut into.
        key: the key of the learners' initial states (the same as a one-block live learner's).
        selection, dtype: the board's rule and the working dtype.
        path: the chunk backend of the batches, as :func:`jcsol.run` takes it
            (:func:`jcsol.live.backend.batch_choices`).
        scales: each learner's scaling of the rows inside the round, as :func:`jcsol.run` takes it
            (:mod:`jcsol.core.scaling`).
    """

    def __init__(
        self,
        learners: tuple,
        objective,
        sizes: tuple[int, ...],
        blocks: int,
        key: jax.Array,
        selection: Selection,
        dtype,
        path: Any,
        scales: tuple,
    ):
        self.sizes, self.blocks, self.selection, self.dtype = sizes, blocks, selection, dtype
        self.path, self.flat = path, (learners, objective)
        self.scales = scales
        self._choices: dict[tuple[int, bool], tuple] = {}  # by (d, sparse rows): each learner's chunk backend
        self.per_unit = blocks > 1
        at_least = 2 if self.per_unit else 1
        self.devices = devices_for(blocks, at_least)
        self.block_sizes = tuple(-(-size // blocks) for size in sizes)
        keys = jnp.repeat(jax.random.split(key, 1), blocks, axis=0)
        start, hyper = 0, []
        for learner, size, block in zip(learners, sizes, self.block_sizes):
            own = jax.tree.map(lambda a, start=start, size=size: np.asarray(a)[start : start + size], objective)
            hyper.append(blocked((learner, own), 1, blocks, block) if self.per_unit else (learner, own))
            start += size
        if self.per_unit:
            hyper, keys = pad_runs((tuple(hyper), keys), len(self.devices), at_least)
        else:
            keys = pad_runs(keys, len(self.devices))
        self.n_units = keys.shape[0]
        platform = self.devices[0].platform
        self.spread: Spread | None = None
        if jax.process_count() > 1:
            check_jax_for_processes(jax.__version__)
            self.spread = Spread(
                self.devices, self.n_units, timeout=resolve_timeout("auto", platform), on_cpu=platform == "cpu"
            )
        self.mesh = Mesh(np.array(self.devices), ("runs",))
        self.hyper = self.split(tuple(hyper)) if self.per_unit else self.whole(tuple(hyper))
        self.objective = self.whole(objective)
        self._fixed_signature = signature((self.hyper, self.objective))  # the learners' part of the learn call's key
        self._carry_signatures: dict[bool, Any] = {}  # by sparse rows: the carries' part of it
        self.keys = self.split(keys)
        self._formats: dict[bool, tuple] = {}  # by sparse_rows: see formats()
        self.carries: tuple | None = None  # each learner's carry, leaves (units, block, …), split over the devices
        self.whole_board: Board | None = None  # the board, whole on every device
        self.sparse_rows = False  # the kind of rows the carries are laid out for (the last seen)
        self.d = 0

    # -- the backend ----------------------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        return self.carries is not None

    def start(self, d: int, sparse_rows: bool, description: dict) -> None:
        self.same_call("start", np.frombuffer(json.dumps(description).encode(), np.uint8))
        self.d = d
        self.choices(sparse_rows)  # refuses a path for these rows before anything is held
        self.whole_board = self.whole(init_board(sum(self.sizes), self.selection, self.dtype))
        self.d, self.sparse_rows = d, sparse_rows
        self.carries = self.init(d, self.dtype, sparse_rows)

    def learn(self, rows, y, arrival, served, length) -> jax.Array:
        """Every configuration's pre-update scores ``(n, G)``, the carries and the board advanced by the first
        ``length`` events of a padded batch."""
        sparse = isinstance(rows, tuple)
        choices = self.choices(sparse)  # first: it refuses a path for these rows
        carries, board = self._laid_out_for(rows)
        args = (rows, y, arrival, served, length)
        self.same_call("learn", *args)
        args = self._inputs(args)
        formats = self.formats(carries, sparse)
        learn = _unit_learn(self.devices, self.d, self.selection, self.sizes, self.per_unit, formats, choices)
        if sparse not in self._carry_signatures:  # the carries' shapes and structure, not their placement
            leaves, tree = jax.tree.flatten((carries, board))
            self._carry_signatures[sparse] = (tree, tuple((a.shape, a.dtype) for a in leaves))
        key = (self._fixed_signature, self._carry_signatures[sparse], batch_signature(*args))
        self.carries, self.whole_board, scores = self._run(
            lambda: learn(key, carries, board, self.hyper, self.objective, *args), "learning a batch"
        )
        return scores

    def score(self, rows, grid: bool) -> tuple[jax.Array | None, jax.Array]:
        """``(every configuration's scores (n, G) or None unless grid, the served scores (n,))``."""
        carries, board = self._laid_out_for(rows)
        rule = self.selection.rule
        chosen = choice(board, rule)
        self.same_call("predict", rows)
        (rows,) = self._inputs((rows,))
        formats = tuple(f.state for f in self.formats(carries, isinstance(rows, tuple)))
        predict = _unit_predict(self.devices, self.d, rule, self.sizes, self.per_unit, formats)
        states, learners = tuple(c.state for c in carries), tuple(learner for learner, _ in self.hyper)
        scalers = tuple(c.scaler for c in carries)
        return self._run(lambda: predict(states, scalers, chosen, learners, rows, grid), "scoring a batch")

    def carry(self) -> tuple:
        """The carries as a one-block live learner holds them (over several processes, gathered from all: every
        process must ask for them)."""
        assert self.carries is not None
        return self.gathered(self.carries, "gathering the live learner's states")

    def board(self) -> Board:
        return jax.tree.map(np.asarray, self.whole_board)  # the same on every device and process

    def counts(self) -> np.ndarray:
        return flat_counts(self.carry())

    def saved_carry(self) -> list[np.ndarray]:
        """The carry's leaves: this process's units over several processes, else as :meth:`carry` gives them."""
        if self.spread is None:
            return whole_carry_leaves(self)
        return self.spread.local(self.carries)

    def hold(self, carry: tuple, board: Board) -> None:
        self.carries, self.whole_board = self.placed(carry, self.sparse_rows), self.whole(board)

    def restore(self, arrays: Mapping[str, np.ndarray], path: str) -> None:
        if self.spread is None:
            restore_whole(self, arrays, path)
            return
        assert self.carries is not None
        shapes = jax.tree.leaves(self.carries)
        mine = self.spread.runs.stop - self.spread.runs.start
        saved = files.leaves(arrays, "carry", len(shapes))
        for i, (a, s) in enumerate(zip(saved, shapes)):
            if a is None or a.shape != (mine,) + s.shape[1:] or a.dtype != s.dtype:
                raise files.LiveFileError(
                    f"{path} holds carry arrays of other shapes than this learner's (carry/{i}: "
                    f"{None if a is None else (a.dtype, a.shape)}, expected {(s.dtype, (mine,) + s.shape[1:])})"
                )
        self.carries, self.whole_board = (
            self.spread.from_local(self.carries, [a for a in saved if a is not None]),
            self.whole(files.restored(self.board(), arrays, "board", path, place=False)),
        )

    def _laid_out_for(self, rows) -> tuple[tuple, Board]:
        """``(carries, board)``, the carries laid out for a batch of these rows' kind (sparse or dense) first if the
        last batch was of the other kind."""
        assert self.carries is not None and self.whole_board is not None
        sparse = isinstance(rows, tuple)
        if sparse != self.sparse_rows:
            self.sparse_rows = sparse
            self.carries = jax.device_put(self.carries, self.formats(self.carries, sparse))
        return self.carries, self.whole_board

    def choices(self, sparse_rows: bool) -> tuple:
        """Each learner's chunk backend for batches of sparse rows or dense ones
        (:func:`jcsol.live.backend.batch_choices`)."""
        if (self.d, sparse_rows) not in self._choices:
            learners, objective = self.flat
            self._choices[self.d, sparse_rows] = batch_choices(
                self.path,
                learners,
                objective,
                self.sizes,
                d=self.d,
                dtype=self.dtype,
                sparse_rows=sparse_rows,
                platform=self.devices[0].platform,
            )
        return self._choices[self.d, sparse_rows]

    # -- placement ------------------------------------------------------------------------------------------
    def split(self, tree) -> Any:
        """Arrays whose first axis is the units', split over the devices."""
        if self.spread is not None:
            return self.spread.split(tree)
        return jax.device_put(tree, NamedSharding(self.mesh, PartitionSpec("runs")))

    def whole(self, tree) -> Any:
        """Arrays every device holds whole."""
        if self.spread is not None:
            return self.spread.whole(tree)
        return jax.device_put(tree, NamedSharding(self.mesh, PartitionSpec()))

    def init(self, d: int, dtype, sparse_rows: bool) -> tuple:
        """Every learner's initial carry, leaves of shape ``(units, block, …)``, laid out for sparse rows or dense
        ones."""
        carries = []
        for (learner, _), block, scale in zip(self.hyper, self.block_sizes, self.scales):
            init, _, _ = compiled_init(
                learner,
                self.keys,
                n_grid=block,
                n_curve=0,
                d=d,
                dtype=dtype,
                devices=self.devices,
                per_unit=self.per_unit,
                sparse_rows=sparse_rows,
                scale=scale,
            )
            carries.append(init(learner, self.keys))
        return jax.device_put(tuple(carries), self.formats(tuple(carries), sparse_rows))

    def gathered(self, carries: tuple, what: str) -> tuple:
        """The carries as a one-block live learner holds them: leaves of shape ``(1, size, …)``, on the host."""
        if self.spread is not None:
            carries = self.spread.gather(carries, what)
        else:
            carries = on_host(carries, self.devices)

        def one(a, size, block):
            a = np.asarray(a)
            if not self.per_unit:
                return a[:1]
            return a[: self.blocks].reshape((1, self.blocks * block) + a.shape[2:])[:, :size]

        return tuple(
            jax.tree.map(functools.partial(one, size=size, block=block), carry)
            for carry, size, block in zip(carries, self.sizes, self.block_sizes)
        )

    def placed(self, carries: tuple, sparse_rows: bool) -> tuple:
        """Carries held as :meth:`gathered` gives them, cut into units and placed on the devices again, laid out
        for sparse rows or dense ones."""

        def one(a, size, block):
            a = np.asarray(a)[0]
            if self.per_unit:
                a = np.concatenate([a, np.repeat(a[-1:], self.blocks * block - size, axis=0)])
                a = a.reshape((self.blocks, block) + a.shape[1:])
                return np.concatenate([a, np.repeat(a[-1:], self.n_units - self.blocks, axis=0)])
            return np.repeat(a[None], self.n_units, axis=0)

        placed = self.split(
            tuple(
                jax.tree.map(functools.partial(one, size=size, block=block), carry)
                for carry, size, block in zip(carries, self.sizes, self.block_sizes)
            )
        )
        return jax.device_put(placed, self.formats(placed, sparse_rows))

    def layout(self) -> dict | None:
        """The process layout a saved share records (see :meth:`jcsol.distributed.Spread.layout`); ``None`` in one
        process."""
        if self.spread is None:
            return None
        return {**self.spread.layout(), "grid_blocks": self.blocks}

    # -- the compiled calls ---------------------------------------------------------------------------------
    def formats(self, carries: tuple, sparse_rows: bool) -> tuple:
        """Each learner's carry formats for sparse rows or dense ones (:func:`jcsol.core.layout.carry_formats`, the
        other leaves split over the units): the layouts and placements the compiled calls take and give, so
        that no call lays the states out again (a call of the other kind than the last lays them out once) and
        the first call's carries are the same signature as the next ones'. The carries' shapes never change,
        so each kind's are made once."""
        if sparse_rows not in self._formats:
            split = NamedSharding(self.mesh, PartitionSpec("runs"))
            self._formats[sparse_rows] = tuple(  # only the states' leaves have formats of their own
                jax.tree.map(lambda _: split, c)._replace(
                    state=jax.tree.map(
                        lambda f: split if f is None else f,
                        carry_formats(c, learner, self.devices, sparse_rows).state,
                        is_leaf=is_format,
                    )
                )
                for c, (learner, _) in zip(carries, self.hyper)
            )
        return self._formats[sparse_rows]

    def same_call(self, kind: str, *arrays) -> None:
        """Refuses, on every process, a call that the processes did not all make with the same batch."""
        if self.spread is None:
            return
        digest = update_digest(hashlib.blake2b(kind.encode(), digest_size=7), jax.tree.leaves(arrays))
        table = self.spread.agree([int.from_bytes(digest.digest(), "big")], f"comparing the calls of Live.{kind}")
        if np.any(table[:, 0] != table[0, 0]):
            raise ValueError(
                f"process {self.spread.process} of {self.spread.n_processes}: the processes called Live.{kind} "
                "with different batches (or one called another method): every process must make the same calls "
                "of a live learner, with the same events, in the same order"
            )

    def _inputs(self, tree):
        return tree if self.spread is None else self.spread.whole(tree)

    def _run(self, fn, what: str):
        if self.spread is None:
            return fn()
        return self.spread.collective(lambda: jax.block_until_ready(fn()), what)


#: The first JAX that places a live learner's states over several processes: from 0.8.0 to 0.9.0, ``device_put``
#: of the initial states onto the processes' mesh fails ("Unexpected XLA sharding override").
PROCESSES_NEED_JAX = (0, 9, 1)


def check_jax_for_processes(version: str) -> None:
    """Refuses a live learner over several processes under a JAX older than :data:`PROCESSES_NEED_JAX`."""
    if version_numbers(version) < PROCESSES_NEED_JAX:
        need = ".".join(map(str, PROCESSES_NEED_JAX))
        raise RuntimeError(
            f"a live learner over several processes needs jax {need} or later (this is jax {version}, whose "
            f"device_put cannot lay its states over the processes); pip install 'jax>={need}' 'jaxlib>={need}'"
        )


def _all_units(a, gather: bool):
    """``a`` of this device's units, as every device's (an all-gather over the mesh's unit axis)."""
    return jax.lax.all_gather(a, "runs", tiled=True) if gather else a


@functools.lru_cache(maxsize=64)
def _unit_learn(
    devices: tuple, d: int, selection: Selection, sizes: tuple, per_unit: bool, formats: tuple, choices: tuple
):
    """:func:`_learn_units` jitted for these units, each learner on its chunk backend in ``choices``, taking and
    giving the carries in ``formats`` and giving the board whole on every device, as :meth:`Units.whole` places it
    (left to the compiler, a one-device mesh's outputs come back placed otherwise, and the next call would be
    compiled again for them)."""
    whole = NamedSharding(Mesh(np.array(devices), ("runs",)), PartitionSpec())
    learn = functools.partial(
        _learn_units, devices=devices, d=d, selection=selection, sizes=sizes, per_unit=per_unit, choices=choices
    )
    return whole_loops.Marked(
        jax.jit(
            learn,
            donate_argnums=0,
            in_shardings=(formats, *(None,) * 8),
            out_shardings=(formats, whole, None),
            compiler_options=compile_options(),
        )
    )


@functools.lru_cache(maxsize=64)
def _unit_predict(devices: tuple, d: int, rule: str, sizes: tuple, per_unit: bool, formats: tuple):
    """:func:`_predict_units` jitted for these units, taking the states in ``formats``."""
    return jax.jit(
        functools.partial(_predict_units, devices=devices, d=d, rule=rule, sizes=sizes, per_unit=per_unit),
        static_argnums=5,
        in_shardings=(formats, None, None, None, None),
        compiler_options=compile_options(),
    )


def _learn_units(
    carries,
    board,
    hyper,
    objective,
    rows,
    y,
    arrival,
    served,
    length,
    *,
    devices,
    d,
    selection,
    sizes,
    per_unit,
    choices,
):
    split, whole = PartitionSpec("runs"), PartitionSpec()
    body = functools.partial(
        _learn_units_impl,
        d=d,
        selection=selection,
        sizes=sizes,
        per_unit=per_unit,
        gather=len(devices) > 1,
        choices=choices,
    )
    in_specs = (split, whole, split if per_unit else whole, whole, whole, whole, whole, whole, whole)
    return sharded(body, devices, in_specs, (split, whole, whole))(
        carries, board, hyper, objective, rows, y, arrival, served, length
    )


def _learn_units_impl(
    carries,
    board,
    hyper,
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
    per_unit,
    gather,
    choices,
):
    """The engine's rounds over one batch for this device's units of each learner, every configuration's
    scores gathered, then the board's update (as the one-device backend's, :mod:`jcsol.live.packed`, per unit)."""
    y = working_labels(y, rows)
    n = y.shape[0]
    new, per_learner = [], []
    for carry, (learner, own), size, chosen in zip(carries, hyper, sizes, choices):
        carry, s = batch_rounds(carry, learner, own, rows, y, length, d=d, choice=chosen, per_unit=per_unit)
        new.append(carry)
        s = _all_units(s, gather)  # (units, block, n)
        per_learner.append(s.reshape(-1, n)[:size].T)
    scores = jnp.concatenate(per_learner, axis=1)
    board = advance_board(board, objective, scores if arrival is None else arrival, y, served, selection, length)
    carries, board = halve_when_full(tuple(new), board)
    return carries, board, scores


def _predict_units(states, scalers, chosen, learners, rows, grid, *, devices, d, rule, sizes, per_unit):
    split, whole = PartitionSpec("runs"), PartitionSpec()
    body = functools.partial(
        _predict_units_impl, d=d, rule=rule, grid=grid, sizes=sizes, per_unit=per_unit, gather=len(devices) > 1
    )
    in_specs = (split, split, whole, split if per_unit else whole, whole)
    return sharded(body, devices, in_specs, (whole, whole))(states, scalers, chosen, learners, rows)


def _predict_units_impl(states, scalers, chosen, learners, rows, *, d, rule, grid, sizes, per_unit, gather):
    """Every configuration's scores of the rows from this device's units (each scaling the rows by its
    features' statistics, where ``scalers`` holds them), gathered, and the served scores."""
    n = rows[0].shape[0] if isinstance(rows, tuple) else rows.shape[0]
    per_learner = []
    for state, scaler, learner, size in zip(states, scalers, learners, sizes):
        if per_unit:
            s = jax.vmap(lambda st, sc, le: grid_scores(st, le, rows, d, sc))(state, scaler, learner)
        else:
            s = jax.vmap(lambda st, sc, learner=learner: grid_scores(st, learner, rows, d, sc))(state, scaler)
        s = _all_units(s, gather)  # (units, n, block)
        per_learner.append(jnp.swapaxes(s, 0, 1).reshape(n, -1)[:, :size])
    scores = jnp.concatenate(per_learner, axis=1)
    return (scores if grid else None), served_score(chosen, scores, rule)
