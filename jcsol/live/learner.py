"""The live learner: a whole hyperparameter grid learning from an unbounded stream, serving as it learns.

:class:`Live` holds the states of every configuration of a learner's grid (or of several learners' grids)
on the device. ``learn`` passes a
batch of labelled events through every configuration by the engine's own round (:func:`jcsol.run`'s scan, the
same compiled step): learning a stream batch by batch gives the same bits — states, pre-update scores,
counts — as one :func:`jcsol.run` over the concatenated stream, whatever the batch split. ``predict``
scores events with the configuration the board serves (:mod:`jcsol.live.board`). Labels may come late:
``predict(X, ids=...)`` keeps each event's features and the scores it was given in a bounded store
(:mod:`jcsol.live.store`), and ``learn(ids=..., y=...)`` learns from them when the labels arrive.

Batches of any size run on executables compiled once for a few sizes: a batch (up to 16384 events, larger
ones take several calls) is padded to the next power of 2 and learnt by one call, whose loop over the events
stops after the last real one — no masked round exists, the padding is never learnt — and scored the same
way (padding rows are scored and dropped; scoring changes no state). One event is one call of one executable
for ``learn`` (the engine's round and the board's update fused; XLA removes a scan of length 1) and one for
``predict``; they are ``jax.jit`` functions, called through JAX's C++ dispatch. Between calls the learner
states and the board are held as a few flat buffers (:class:`_Layout`: each large array alone, the small
ones concatenated by dtype), donated to ``learn``: every buffer passed in and out of a call costs about a
microsecond of dispatch, more than the arithmetic of one event. Over sparse rows on the CPU, the buffers of a
sparse-step learner's large state vectors are held in the engine's configurations-minor layout
(:func:`jcsol.core.layout.configs_minor`), laid out again only when the stream switches between sparse and dense
rows.

With ``grid_blocks > 1``, or over several processes, the grid is cut into blocks laid over the devices
(:mod:`jcsol.live.units`), and the states and the board are held as two trees of arrays placed on them.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import math
import os
import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.layout import Format, Layout

from ..base import Learner, beyond_row_scales
from ..batches import bucket
from ..checkpoint import PREVIOUS, agreed_generation, file_digest, other_process_counts, share_path
from ..compiled import CompiledCache
from ..core.checks import check_grid_blocks, check_memory, flatten_grid, require_memory, resolve_dtype
from ..core.layout import carry_formats, is_format
from ..core.programs import signature
from ..core.rounds import init_carry
from ..distributed import Spread, global_devices
from ..files import ARCHIVE_ERRORS, atomic_write, check_writable
from ..grids import check_grid
from ..metrics import sensitivity, specificity, weighted_cost, weighted_sum
from ..objective import Objective, Sum
from ..scoring import grid_scores, is_linear
from ..stream import SparseRows, check_features, check_fits, check_labels, is_scipy_sparse
from ..watchdog import resolve_timeout
from ..xla_cpu import compile_options
from .arguments import batch_sizes_of, count, encoder_of, key_of, n_features_of, on_full_of
from .board import (
    Board,
    Selection,
    advance_board,
    choice,
    halve_when_full,
    init_board,
    served_score,
    window_measures,
)
from .leaderboard import Leaderboard
from .store import PendingStore, check_ids
from .units import Units, batch_rounds, served_linear_scores, working_labels

FORMAT = 4  # 2: the events learnt are saved as a count of their own, the board keeps its window's slot;
# 3: the engine's carries hold each configuration's mistake cost with its rounding error; 4: every field of the
# metadata under the digest, the pending ids saved as UTF-8 text with their kind (integers of any size)
_INT8 = np.dtype(np.int8)
MAX_BATCH = 16384  # events per call of a compiled learn or predict; larger batches take several calls
_COMPILED: CompiledCache[Any] = CompiledCache()


class LiveFileError(RuntimeError):
    """A saved live learner that cannot be loaded: unreadable, corrupted, of another format or learner."""


class Live:
    """A learner's whole grid, learning from a live stream and serving the configuration the board picks.

    Args:
        learner: a jcsol learner, hyperparameter arrays making the grid (``ACOG(eta=jcsol.decades())``), or a
            list of learners whose grids are laid side by side (configurations numbered learner by learner).
        objective: :class:`jcsol.Sum` with ``rho="laplace"`` (default: ρ estimated online, as the whole
            stream's class counts are unknowable live) or :class:`jcsol.Cost` (fixed costs).
        select: ``"ftl"`` (follow the leader with a switching ``margin``, in units of the objective's measure)
            or ``"hedge"`` (an exponentially weighted vote, learning ``rate``); see :mod:`jcsol.live.board`.
            The default, FTL with no margin and no forgetting, had the least regret against the best fixed
            η in hindsight over a9a, ijcnn1, w8a, german and a drifting stream (``benchmarks/live_selection.py``;
            with ``forgetting=0.999`` FTL did best on the drifting stream).
        forgetting: ``γ`` in (0, 1]: the recent measures and Hedge's weights discount the past by ``γ`` per
            event (1: no forgetting).
        auc_window: the leaderboard's AUC and average precision are exact over each configuration's last
            ``auc_window`` events.
        encoder: a table encoder (:class:`jcsol.features.TableEncoder`): tables (data frames, records) are
            then accepted wherever rows are, and the encoder is saved with the learner.
        n_features: ``d``; by default the encoder's, or the first batch's.
        store_size, on_full: the capacity of the store of events awaiting their labels, and what happens when
            it is full (``"evict"`` the oldest, or ``"raise"``); see :mod:`jcsol.live.store`.
        batch_sizes: the sizes batches usually come in (``(1000,)``): a batch of such a size is learnt and
            scored by calls compiled for it, instead of padded to the next power of 2, and a larger batch is
            cut into such sizes first (any split gives the same states, scores and counts — but Hedge's log
            weights are shifted to a maximum of 0 after each call, so their last bits follow the split). Saved
            with the learner.
        grid_blocks: cut each learner's grid into this many blocks, laid over the devices
            (:mod:`jcsol.live.units`): several devices of this process, or, under
            ``jax.distributed.initialize()``, every device of every process — each advances its blocks, and
            every process holds the same board. The bits are those of :func:`jcsol.run` with the same
            ``grid_blocks``, for any number of devices and processes. Over several processes every process must
            make the same calls with the same events, and ``save`` writes one share per process.
        dtype, key: as for :func:`jcsol.run` (the same key gives the same initial states as ``run``); ``key`` is
            an int seed in ``[0, 2**32)``.

    Every argument is checked when the learner is made, and a refusal names it (:mod:`jcsol.live.arguments`).
    A refused call of ``predict``, ``learn``, ``pending`` or ``scores`` changes nothing: the states, the board,
    the events learnt, the pending events and the encoder's statistics are those before it.
    """

    def __init__(
        self,
        learner: Learner,
        objective: Objective | None = None,
        *,
        select: str = "ftl",
        margin: float = 0.0,
        rate: float = 0.05,
        forgetting: float = 1.0,
        auc_window: int = 10_000,
        encoder=None,
        n_features: int | None = None,
        store_size: int = 100_000,
        on_full: str = "evict",
        batch_sizes=(),
        grid_blocks: int = 1,
        dtype: str = "float32",
        key: int = 0,
    ):
        objective = Sum(rho="laplace") if objective is None else objective
        learners = tuple(learner) if isinstance(learner, (list, tuple)) else (learner,)
        if not learners:
            raise ValueError("learner: an empty list of learners")
        for each in learners:
            if not isinstance(each, Learner):
                raise TypeError(f"learner must be a jcsol learner or a list of them, got {type(each).__name__}")
        if not isinstance(objective, Objective):
            raise TypeError(f"objective must be jcsol.Sum(...) or jcsol.Cost(...), got {type(objective).__name__}")
        if objective.needs_both_classes():
            raise ValueError(
                "Sum(rho='offline') needs the whole stream's class counts, which a live stream never "
                "has; use Sum(rho='laplace') or Cost(...)"
            )
        try:
            self.dtype = resolve_dtype(dtype)
        except TypeError:
            raise ValueError(f"dtype must be float32 or float64, got {dtype!r}") from None
        self.batch_sizes = batch_sizes_of(batch_sizes)
        most_per_call = max((MAX_BATCH, *self.batch_sizes))
        self.selection = Selection(select, margin, rate, forgetting, auc_window).check(self.dtype, most_per_call)
        self.key = key_of(key)
        store_size, on_full = count("store_size", store_size), on_full_of(on_full)
        d = n_features_of(n_features, encoder_of(encoder))
        self.learner, self.objective, self.encoder = learner, objective, encoder
        self.learners = learners
        for each in learners:
            check_grid(each, objective)
        grids = [flatten_grid(each, objective, self.dtype) for each in learners]
        self._sizes = tuple(int(np.prod(shape)) for shape, _, _ in grids)
        self.n_grid = sum(self._sizes)
        # one learner: its grid's shape; a list: the configurations of all, one after the other
        self.grid_shape = grids[0][0] if len(learners) == 1 else (self.n_grid,)
        self._flat_learner = tuple(flat for _, flat, _ in grids)
        self._flat_objective = jax.tree.map(lambda *a: np.concatenate(a), *(obj for _, _, obj in grids))
        window = self.selection.window  # the board's scores of the last events, every configuration's
        require_memory(
            self.n_grid * window * np.dtype(self.dtype).itemsize + window,
            f"auc_window={window} keeps the last {window} scores of each of {self.n_grid} configurations: ",
            "give a smaller auc_window",
        )
        for size in self._sizes:
            check_grid_blocks(grid_blocks, size)
        self.grid_blocks = int(grid_blocks)
        self.store = PendingStore(store_size, self.n_grid, on_full, self.dtype)
        self._shared = jax.device_put((self._flat_learner, self._flat_objective))
        self._buffers: tuple | None = None
        self._layout: _Layout | None = None
        self._calls: _Calls | None = None  # the compiled learn and predict of the buffers' layout and formats
        self._sparse_rows = encoder is not None  # the kind of rows the buffers are laid out for (the last seen)
        # blocks over devices (or processes): the carries and the board as two trees, not packed buffers
        self._units = (
            Units(self._flat_learner, self._flat_objective, self._sizes, self.grid_blocks, self._init_key())
            if self.grid_blocks > 1 or jax.process_count() > 1
            else None
        )
        self._scales: dict[int, tuple[float, float]] = {}  # the rows' scales every learner holds on, per width
        self._saves = 0  # the generation of a share saved over several processes
        self._events = 0  # labelled events learnt (a Python int: the device's int32 counts are halved in time)
        self.n_features: int | None = None
        if d is not None:
            self._start(d)

    # -- the stream ---------------------------------------------------------------------------------------
    def predict(self, X, ids=None) -> np.ndarray:
        """The served scores of a batch of events (``+1`` predicted where the score is ``>= 0``).

        With ``ids`` (integers of any size or strings, :func:`jcsol.live.store.check_ids`), the events are kept
        (features and every configuration's score) until ``learn(ids=..., y=...)`` brings their labels, and a
        table's numeric statistics are updated with them (each event arrives once); without, nothing changes. A
        refused call (bad rows or ids) changes nothing: every check is made before the store, the encoder or the
        learner is touched.
        """
        keys = None
        if ids is not None:
            keys = check_ids(ids)
            self.store.check_new(keys)
        with self._encoder_kept_on_error(keys is not None):
            rows = self._rows(X, update=keys is not None)
            n = rows.shape[0]
            if keys is not None:
                if len(keys) != n:
                    raise ValueError(f"{len(keys)} ids for {n} events")
                self.store.check_rows(rows)
                self.store.check_room(n, rows)
            if not n:
                return np.zeros(0, self.dtype)
            self._start_for(rows)
            scores, served = self._score(rows, grid=keys is not None)
            if keys is not None:
                assert scores is not None  # grid=True
                self.store.put(keys, rows, scores, served)
        return served

    def scores(self, X) -> np.ndarray:
        """Every configuration's score of a batch of events, ``(n, G)`` (nothing changes)."""
        rows = self._rows(X, update=False)
        if not rows.shape[0]:
            return np.zeros((0, self.n_grid), self.dtype)
        self._start_for(rows)
        scores, _ = self._score(rows)
        assert scores is not None  # grid=True
        return scores

    def learn(self, X=None, y=None, *, ids=None, return_scores: bool = False):
        """Learns a batch of labelled events, in order, in every configuration.

        Either ``learn(X, y)`` (features given now; the progressive measures count the pre-update predictions
        of this pass) or ``learn(ids=ids, y=y)`` (events predicted earlier with ``predict(X, ids=...)``; the
        measures count the predictions they were given then). Returns every configuration's pre-update
        scores ``(n, G)`` when ``return_scores``. A refused call (bad rows, labels or ids) changes nothing.
        """
        if y is None or (X is None) == (ids is None):
            raise TypeError("call learn(X, y) or learn(ids=ids, y=y)")
        y = _labels(y)
        keys = None
        arrival: np.ndarray | None
        served: np.ndarray | None
        with self._encoder_kept_on_error(ids is None):
            if ids is not None:
                keys = check_ids(ids, len(y))
                rows, arrival, served = self.store.get(keys)
            else:
                rows = self._rows(X, update=True)
                if rows.shape[0] != len(y):
                    raise ValueError(f"X has {rows.shape[0]} rows but y has {len(y)} labels")
                arrival = served = None
            if not len(y):
                return np.zeros((0, self.n_grid), self.dtype) if return_scores else None
            self._start_for(rows)
        self._warn_scale(rows)
        out = self._learn_rows(rows, y, arrival, served, return_scores)
        if keys is not None:
            self.store.remove(keys)
        if return_scores:
            return np.concatenate([np.asarray(s) for s in out])
        return None

    def _learn_rows(self, rows, y, arrival, served, return_scores: bool) -> list:
        """Learns checked rows in the calls of their pieces; each call's scores when ``return_scores``."""
        pieces = _pieces(len(y), self.batch_sizes)
        out, start = [], 0
        for size in pieces:
            window = slice(start, start + size)
            whole = bucket(size, self.batch_sizes)
            part = rows if len(pieces) == 1 else _take(rows, start, start + size)
            batch = (
                _device_rows(_pad(part, whole)),
                _pad(y if len(pieces) == 1 else y[window], whole),
                None if arrival is None else _pad(arrival[window], whole),
                None if served is None else _pad(served[window], whole),
                None if whole == size else np.int32(size),  # a padded batch's loop stops after its events
            )
            calls = self._laid_out_for(rows)
            if self._units is not None:
                assert self._buffers is not None and self.n_features is not None
                carries, board = self._buffers
                carries, board, scores = self._units.learn(
                    carries, board, *batch, d=self.n_features, selection=self.selection
                )
                self._buffers = (carries, board)
            else:
                assert calls is not None
                self._buffers, scores = calls.learn(self._buffers, *self._shared, *batch)
            self._events += size
            if return_scores:
                out.append(scores[:size])
            start += size
        return out

    def pending(self, ids) -> np.ndarray:
        """Which of ``ids`` await their labels in the store (a boolean mask; ids of the kinds ``predict``
        takes, repeats allowed)."""
        return self.store.pending(ids)

    # -- what it knows ------------------------------------------------------------------------------------
    @property
    def carry(self) -> tuple:
        """Each learner's engine carry (states, counts), leaves of shape ``(1, its grid size, …)`` (over several
        processes, gathered from all: every process must ask for it)."""
        self._require_started()
        if self._units is not None:
            assert self._buffers is not None
            return self._units.gathered(self._buffers[0], "gathering the live learner's states")
        return _unpack(self._buffers, layout=self._layout)[0]

    @property
    def board(self) -> Board:
        """The leaderboard's and the selection's state (:class:`jcsol.live.board.Board`)."""
        self._require_started()
        if self._units is not None:
            assert self._buffers is not None
            return jax.tree.map(np.asarray, self._buffers[1])  # the same on every device and process
        assert self._layout is not None
        return _unpack(self._buffers, layout=self._layout, keep=_kept(self._layout, "board"))[1]

    @property
    def states(self):
        """Every configuration's learner state, leaves of shape ``grid_shape + …`` (a list of learners: the
        list of each learner's states, leaves of shape ``(its grid size, …)``)."""
        self._require_started()
        if len(self.learners) == 1:
            return jax.tree.map(lambda a: np.asarray(a[0]).reshape(self.grid_shape + a.shape[2:]), self.carry[0].state)
        return [jax.tree.map(lambda a: np.asarray(a[0]), c.state) for c in self.carry]

    @property
    def counts(self) -> np.ndarray:
        """The engine's confusion counts of each configuration's pre-update predictions during ``learn`` (halved
        once 2**30 events are counted, as the board's are: :mod:`jcsol.live.board`)."""
        self._require_started()
        if self._units is not None:
            carries = self.carry
        else:
            assert self._layout is not None
            carries = _unpack(self._buffers, layout=self._layout, keep=_kept(self._layout, "counts"))[0]
        counts = np.concatenate([np.asarray(c.counts[0]) for c in carries])
        return counts.reshape(self.grid_shape + (4,))

    @property
    def events(self) -> int:
        """The labelled events learnt so far (every configuration has learnt each of them)."""
        return self._events

    @property
    def served(self) -> int:
        """The flat grid index of the served configuration (FTL), or of the heaviest one (Hedge)."""
        self._require_started()
        if self.selection.rule == "ftl":
            return int(self.board.served)
        return int(np.argmax(np.asarray(self.board.log_weights)))

    def leaderboard(self) -> Leaderboard:
        """Every configuration's progressive measures, and the served stream's."""
        self._require_started()
        on_device = self.board
        board = jax.tree.map(np.asarray, on_device)
        window_auc, window_ap = window_measures(on_device)
        alpha_p, c_p = (
            np.broadcast_to(np.asarray(v, np.float64), (self.n_grid,)) for v in self._flat_objective.measure_weights()
        )
        params = _params(self.learners, self._sizes, self.objective)
        weights = np.exp(board.log_weights.astype(np.float64))
        return Leaderboard(
            params=params,
            counts=board.counts,
            sum=weighted_sum(board.counts, alpha_p),
            sensitivity=sensitivity(board.counts),
            specificity=specificity(board.counts),
            cost=weighted_cost(board.counts, c_p),
            recent_sum=weighted_sum(board.recent, alpha_p),
            recent_cost=weighted_cost(board.recent, c_p),
            auc=np.asarray(window_auc, np.float64),
            average_precision=np.asarray(window_ap, np.float64),
            weights=weights / weights.sum(),
            served=self.served,
            rule=self.selection.rule,
            served_counts=board.served_counts,
            served_sum=float(weighted_sum(board.served_counts, alpha_p[self.served])),
            served_cost=float(weighted_cost(board.served_counts, c_p[self.served])),
            events=self._events,
            pending=len(self.store),
            evicted=self.store.evicted,
        )

    # -- saving -------------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Writes the learner (states, board, pending events, encoder) to one file, atomically.

        Over several processes every process calls it with the same ``path``, and each writes its share,
        ``PATH.<process>-of-<processes>``: its devices' configurations, the board, the pending events and the
        encoder, with the process layout; the share it replaces is kept as ``….previous``, so that a save
        interrupted on some processes leaves a generation every process holds. It returns when every process
        has written its share.
        """
        self._require_started()
        path = check_writable(path, "live learner file")
        spread = None if self._units is None else self._units.spread
        if spread is None:
            carry = [np.asarray(a) for a in jax.tree.leaves(self.carry)]
        else:
            assert self._buffers is not None and self._units is not None
            carry = spread.local(self._buffers[0])
        arrays = {f"carry/{i}": a for i, a in enumerate(carry)}
        arrays.update({f"board/{i}": np.asarray(a) for i, a in enumerate(jax.tree.leaves(self.board))})
        arrays.update({f"store/{k}": v for k, v in self.store.arrays().items()})
        arrays["events"] = np.asarray(self._events, np.int64)
        if self.encoder is not None:
            arrays.update({f"encoder/{k}": np.asarray(v) for k, v in self.encoder.state_dict().items()})
        meta = self._description()
        target = path
        if spread is not None:
            assert self._units is not None
            self._saves += 1
            meta.update(layout=self._units.layout(), generation=self._saves)
            target = share_path(path, spread.process, spread.n_processes)
            if os.path.exists(target):
                os.replace(target, target + PREVIOUS)
        # a share's layout and generation are under the digest: it cannot move to another process or save
        meta["digest"] = file_digest(meta, arrays)
        with atomic_write(target) as fh:
            np.savez(fh, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays)  # type: ignore[arg-type]  # mypy matches **arrays against allow_pickle too
        if spread is not None:
            spread.agree([self._saves], f"saving the live learner to {path}")

    @classmethod
    def load(cls, path: str | os.PathLike, learner: Learner, objective: Objective | None = None) -> Live:
        """The learner saved at ``path``, continuing exactly where it stopped.

        ``learner`` and ``objective`` must be those it was built with (the file holds states, not code). Over
        several processes every process calls it, each reads its own share, and they continue from the
        latest save every process holds a share of; a learner saved by another number of processes is
        refused.

        Raises:
            LiveFileError: the file is unreadable or corrupted, of another format version, or of another
                learner, grid or objective, or saved by another number of processes — the message says which.
        """
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file path, got {type(path).__name__}")
        path = os.fsdecode(os.fspath(path))
        objective = Sum(rho="laplace") if objective is None else objective
        for each in learner if isinstance(learner, (list, tuple)) else (learner,):
            if not isinstance(each, Learner):
                raise TypeError(f"learner must be a jcsol learner or a list of them, got {type(each).__name__}")
        if not isinstance(objective, Objective):
            raise TypeError(f"objective must be jcsol.Sum(...) or jcsol.Cost(...), got {type(objective).__name__}")
        n_processes = jax.process_count()
        if n_processes > 1:
            meta, arrays = _agreed_share(path, learner, objective)
        else:
            _refuse_other_process_counts(path, 1)
            meta, arrays = _read(path, learner, objective)
            if "layout" in meta:
                raise LiveFileError(
                    f"{path} is process {meta['layout']['process']}'s share of a live learner saved over "
                    f"{meta['layout']['processes']} processes: load it with that many processes"
                )
        encoder = None
        if meta["encoder"] is not None:
            module, _, name = meta["encoder"].rpartition(".")
            if not module.startswith("jcsol."):
                raise LiveFileError(f"{path} names an encoder outside jcsol: {meta['encoder']}")
            state = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("encoder/")}
            encoder = getattr(importlib.import_module(module), name).from_state_dict(state)
        sel = meta["selection"]
        live = cls(
            learner,
            objective,
            select=sel["rule"],
            margin=sel["margin"],
            rate=sel["rate"],
            forgetting=sel["forgetting"],
            auc_window=sel["window"],
            encoder=encoder,
            n_features=meta["n_features"],
            store_size=meta["store_size"],
            on_full=meta["on_full"],
            batch_sizes=meta.get("batch_sizes", ()),
            grid_blocks=meta.get("grid_blocks", 1),
            dtype=meta["dtype"],
            key=meta["key"],
        )
        assert live._buffers is not None
        spread = None if live._units is None else live._units.spread
        if spread is None:
            live._hold(_restore(live.carry, arrays, "carry", path), _restore(live.board, arrays, "board", path))
        else:
            assert live._units is not None
            if meta["layout"] != live._units.layout():
                raise LiveFileError(
                    f"{path} was saved with another process layout ({meta['layout']}) than this one's "
                    f"({live._units.layout()}): load it with the processes and devices that saved it"
                )
            carries = live._buffers[0]
            shapes = jax.tree.leaves(carries)
            mine = spread.runs.stop - spread.runs.start
            saved = [arrays.get(f"carry/{i}") for i in range(len(shapes))]
            for i, (a, s) in enumerate(zip(saved, shapes)):
                if a is None or a.shape != (mine,) + s.shape[1:] or a.dtype != s.dtype:
                    raise LiveFileError(
                        f"{path} holds carry arrays of other shapes than this learner's (carry/{i}: "
                        f"{None if a is None else (a.dtype, a.shape)}, expected {(s.dtype, (mine,) + s.shape[1:])})"
                    )
            live._buffers = (
                spread.from_local(carries, [a for a in saved if a is not None]),
                live._units.whole(_restore(live.board, arrays, "board", path, place=False)),
            )
            live._saves = int(meta["generation"])
        live.store.restore({k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("store/")})
        live._events = int(arrays["events"])
        return live

    # -- inside -------------------------------------------------------------------------------------------
    def _description(self) -> dict:
        return {
            "format": FORMAT,
            "jcsol": _version(),
            "learner": _describe(self.learner),
            "objective": _describe(self.objective),
            "selection": self.selection._asdict(),
            "encoder": None
            if self.encoder is None
            else f"{type(self.encoder).__module__}.{type(self.encoder).__qualname__}",
            "n_features": self.n_features,
            "store_size": self.store.capacity,
            "on_full": self.store.on_full,
            "dtype": str(self.dtype),
            "key": self.key,
            "grid_blocks": self.grid_blocks,
            "batch_sizes": list(self.batch_sizes),
        }

    def _init_key(self) -> jax.Array:
        """The key of the learners' initial states, as :func:`jcsol.run` derives it from ``key``."""
        return jax.random.split(jax.random.key(self.key))[1]

    def _start(self, d: int) -> None:
        for learner, size in zip(self.learners, self._sizes):
            check_memory(learner, d, size, self.dtype)
        if self._units is not None:
            self.n_features = d
            self._units.same_call("start", np.frombuffer(json.dumps(self._description()).encode(), np.uint8))
            board = self._units.whole(init_board(self.n_grid, self.selection, self.dtype))
            self._buffers = (self._units.init(d, self.dtype, self._sparse_rows), board)
            return
        keys = jax.random.split(self._init_key(), 1)
        carry = []
        for flat, size in zip(self._shared[0], self._sizes):
            init = _compiled(
                ("init", signature((flat, keys)), d, str(self.dtype), size),
                lambda size=size, flat=flat: jax.jit(
                    functools.partial(init_carry, n_grid=size, n_curve=0, d=d, dtype=self.dtype),
                    compiler_options=compile_options(),
                ).lower(flat, keys),
            )
            carry.append(init(flat, keys))
        self.n_features = d
        self._hold(tuple(carry), jax.device_put(init_board(self.n_grid, self.selection, self.dtype)))

    def _hold(self, carry: tuple, board: Board) -> None:
        """Keeps ``(carry, board)`` (carries as :attr:`carry` gives them) as the buffers of their layout."""
        if self._units is not None:
            self._buffers = (self._units.placed(carry, self._sparse_rows), self._units.whole(board))
            return
        device = next(iter(jax.tree.leaves(carry)[0].devices()))
        vectors = tuple(
            jax.tree.map(lambda f: f is not None, carry_formats(c, learner, (device,), True), is_leaf=is_format)
            for c, learner in zip(carry, self._shared[0])
        )
        self._layout = _Layout.of((carry, board), (vectors, jax.tree.map(lambda _: False, board)))
        assert self.n_features is not None
        self._calls = _calls(self._layout, device, self.n_features, self.selection, self._sizes, self._sparse_rows)
        self._buffers = jax.device_put(_pack((carry, board), layout=self._layout), self._calls.formats)

    def _laid_out_for(self, rows) -> _Calls | None:
        """The compiled calls for a batch of these rows (``None`` over units: :class:`Units` holds them), the
        buffers laid out for their kind (sparse or dense) first if the last batch was of the other kind."""
        assert self._buffers is not None and self.n_features is not None
        sparse = isinstance(rows, SparseRows)
        if sparse != self._sparse_rows:
            self._sparse_rows = sparse
            if self._units is not None:
                carries, board = self._buffers
                self._buffers = (jax.device_put(carries, self._units.formats(carries, sparse)), board)
            else:
                assert self._layout is not None
                device = next(iter(self._buffers[0].devices()))
                self._calls = _calls(self._layout, device, self.n_features, self.selection, self._sizes, sparse)
                self._buffers = jax.device_put(self._buffers, self._calls.formats)
        return self._calls

    def _require_started(self) -> None:
        if self._buffers is None:
            raise RuntimeError("the live learner has seen no event yet (give n_features=… to start it empty)")

    def _rows(self, X, *, update: bool):
        """A batch as checked dense rows or :class:`SparseRows` of this learner's dtype and dimension; ``update``:
        rows to learn from (now or when their labels come), which also updates a table encoder's statistics."""
        if (
            isinstance(X, np.ndarray)
            and X.dtype == self.dtype
            and X.ndim == 2
            and X.shape[1] == self.n_features
            and _sum_is_finite(X)
        ):
            return X  # the common case, checked in one pass (a non-finite sum gets check_features' message)
        if not isinstance(X, (np.ndarray, SparseRows, jax.Array)) and not _is_matrix(X) and not is_scipy_sparse(X):
            if self.encoder is None:
                raise TypeError(
                    f"a batch of type {type(X).__name__} needs an encoder (Live(..., encoder="
                    "jcsol.features.TableEncoder(...))); without one give an array, jcsol.SparseRows or a SciPy sparse "
                    "matrix"
                )
            X = self.encoder.fit_transform(X) if update else self.encoder.transform(X)
        X = check_features(X, columns_once=update)  # rows learnt (now or from the store) name each column once
        check_fits(X.values if isinstance(X, SparseRows) else X, self.dtype)
        if isinstance(X, SparseRows):
            X = SparseRows(X.indices, X.values.astype(self.dtype, copy=False), X.n_features)
        else:
            X = X.astype(self.dtype, copy=False)
        if self.n_features is not None and X.shape[1] != self.n_features:
            raise ValueError(f"events have {X.shape[1]} features; this learner has {self.n_features}")
        return X

    def _warn_scale(self, rows) -> None:
        """A ``RuntimeWarning`` when rows learnt are beyond the scales a learner's arithmetic holds on, as
        :func:`jcsol.run` warns (:func:`jcsol.base.beyond_row_scales`). The range every learner holds on is kept
        per row width, so that rows within it cost one pass of ``max``."""
        values = rows.values if isinstance(rows, SparseRows) else rows
        width = values.shape[1]
        if width not in self._scales:
            ranges = [each.row_scales(width, self.dtype) for each in self.learners]
            self._scales[width] = (max(lo for lo, _ in ranges), min(hi for _, hi in ranges))
        lo, hi = self._scales[width]
        top = np.abs(values).max(axis=1)
        if (top > hi).any() or ((top > 0) & (top < lo)).any():
            for each in self.learners:
                message = beyond_row_scales(each, values, self.dtype)
                if message:
                    warnings.warn(message, RuntimeWarning, stacklevel=3)

    def _start_for(self, rows) -> None:
        """Starts the learner on the first batch it accepts (its dimension, its kind of rows)."""
        if self._buffers is None:
            self._sparse_rows = isinstance(rows, SparseRows)
            self._start(rows.shape[1])

    def _encoder_kept_on_error(self, update: bool):
        """Around a call whose rows update the encoder's statistics (``update``): a call that fails after the
        rows were encoded (refused for their count, their ids, …) leaves the encoder as it was."""
        return _UNGUARDED if self.encoder is None or not update else _KeptOnError(self.encoder)

    def _score(self, rows, *, grid: bool = True) -> tuple[np.ndarray | None, np.ndarray]:
        """``(every configuration's scores (n, G) or None unless grid, served scores (n,))``."""
        n = rows.shape[0]
        pieces = _pieces(n)
        if len(pieces) > 1:
            starts = np.cumsum([0, *pieces])
            parts = [self._score(_take(rows, a, b), grid=grid) for a, b in zip(starts[:-1], starts[1:])]
            return (np.concatenate([p[0] for p in parts]) if grid else None), np.concatenate([p[1] for p in parts])
        size = bucket(n, self.batch_sizes)
        padded = _device_rows(_pad(rows, size))
        calls = self._laid_out_for(rows)
        if self._units is not None:
            assert self._buffers is not None and self.n_features is not None
            carries, board = self._buffers
            rule = self.selection.rule
            scores, served = self._units.predict(
                carries, choice(board, rule), padded, d=self.n_features, rule=rule, grid=grid
            )
        else:
            assert calls is not None
            scores, served = calls.predict(self._buffers, self._shared[0], padded, grid)
        if size == n:
            return (np.asarray(scores) if grid else None), np.asarray(served)
        return (np.asarray(scores)[:n] if grid else None), np.asarray(served)[:n]


# -- compiled computations -------------------------------------------------------------------------------------


def _learn_impl(
    carries: tuple, board: Board, learners: tuple, objective, rows, y, arrival, served, length, *, d, selection, sizes
):
    """The engine's rounds over the first ``length`` events of a padded batch for each learner (a single run,
    its grid vmapped), then the board's; the counts halved if they have counted 2**30 events
    (:func:`~jcsol.live.board.halve_when_full`)."""
    y = working_labels(y, rows)
    new, per_learner, start = [], [], 0
    for carry, learner, size in zip(carries, learners, sizes):
        own = jax.tree.map(lambda a, start=start, size=size: a[start : start + size], objective)
        carry, s = batch_rounds(carry, learner, own, rows, y, length, d=d)
        new.append(carry)
        per_learner.append(s[0].T)  # (n, G of this learner)
        start += size
    scores = jnp.concatenate(per_learner, axis=1)
    board = advance_board(board, objective, scores if arrival is None else arrival, y, served, selection, length)
    carries, board = halve_when_full(tuple(new), board)
    return carries, board, scores


def _learn(
    buffers: tuple, learners: tuple, objective, rows, y, arrival, served, length, *, layout, d, selection, sizes
):
    """:func:`_learn_impl` on the held buffers: ``(new buffers, every configuration's pre-update scores)``."""
    carries, board = _unpacked(buffers, layout=layout)
    carries, board, scores = _learn_impl(
        carries, board, learners, objective, rows, y, arrival, served, length, d=d, selection=selection, sizes=sizes
    )
    return _packed((carries, board), layout=layout), scores


def _predict_impl(states: tuple, chosen, learners: tuple, rows, *, d, rule, grid, sizes):
    """``(every configuration's scores (n, G), or None unless grid; the served scores (n,))``."""
    if not grid and rule == "ftl" and isinstance(rows, tuple) and all(map(is_linear, learners)):
        return None, served_linear_scores(tuple(map(_first_run, states)), learners, sizes, chosen, rows)
    scores = jnp.concatenate(
        [grid_scores(_first_run(state), learner, rows, d) for state, learner in zip(states, learners)],
        axis=1,
    )
    return (scores if grid else None), served_score(chosen, scores, rule)


def _predict(buffers: tuple, learners: tuple, rows, grid, *, layout, d, rule, sizes):
    carries, board = _unpacked(buffers, layout=layout)
    return _predict_impl(_states(carries), choice(board, rule), learners, rows, d=d, rule=rule, grid=grid, sizes=sizes)


def _first_run(state):
    """A state of the engine's carry (leaves ``(1 run, G, …)``) as its grid's (leaves ``(G, …)``)."""
    return jax.tree.map(lambda a: a[0], state)


class _KeptOnError:
    """A context in which an exception restores ``encoder``'s attributes: the encoder replaces its statistics
    when it encodes (it never changes its arrays in place), so keeping its attributes keeps its state."""

    def __init__(self, encoder) -> None:
        self.encoder, self.before = encoder, dict(vars(encoder))

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, value, traceback) -> None:
        if kind is not None:
            vars(self.encoder).clear()
            vars(self.encoder).update(self.before)


_UNGUARDED = contextlib.nullcontext()


class _Calls(NamedTuple):
    """The compiled calls of a live learner's buffers, and the buffers' formats (their layouts on the device)."""

    learn: Any  # (buffers, learners, objective, rows, y, arrival, served, length) -> (buffers, scores)
    predict: Any  # (buffers, learners, rows, grid) -> (scores or None, served scores)
    formats: tuple  # per buffer: a Format (configurations minor), or the device's sharding (the default layout)


@functools.lru_cache(maxsize=64)
def _calls(layout: _Layout, device, d: int, selection: Selection, sizes: tuple, sparse_rows: bool) -> _Calls:
    """:func:`_learn` and :func:`_predict` jitted for the buffers of ``layout`` on ``device``, for sparse rows or
    dense ones: over sparse rows, the buffers that hold a sparse-step learner's state vectors are taken and
    given in the engine's configurations-minor layout (:func:`jcsol.core.layout.configs_minor`), so that no call
    lays them out again. Every buffer is placed on ``device`` (committed), as the calls give them back: placed
    with no device, the first call's buffers would be another signature than the next call's, and each call
    would be compiled twice."""
    sharding = jax.sharding.SingleDeviceSharding(device)
    minor = Format(Layout((0, 2, 1)), sharding)
    formats = tuple(minor if vector and sparse_rows else sharding for vector in layout.vectors)
    learn = jax.jit(
        functools.partial(_learn, layout=layout, d=d, selection=selection, sizes=sizes),
        donate_argnums=0,
        in_shardings=(formats, *(None,) * 7),
        out_shardings=(formats, None),
        compiler_options=compile_options(),
    )
    predict = jax.jit(
        functools.partial(_predict, layout=layout, d=d, rule=selection.rule, sizes=sizes),
        static_argnums=3,
        in_shardings=(formats, None, None),
        compiler_options=compile_options(),
    )
    return _Calls(learn, predict, formats)


#: A leaf of more than this many elements is a buffer of its own in a :class:`_Layout`.
SMALL_LEAF = 4096


class _Layout(NamedTuple):
    """Where each leaf of a pytree of arrays lies in a few flat buffers: a leaf of more than ``SMALL_LEAF``
    elements is a buffer of its own, the others are concatenated, one buffer per dtype."""

    treedef: Any
    slots: tuple  # per leaf: (buffer, offset, shape)
    buffers: tuple  # per buffer: (dtype name, size) of a concatenation, or None for a leaf of its own
    vectors: tuple  # per buffer: whether it is a state vector of its own, laid out for sparse rows

    @classmethod
    def of(cls, tree, vectors) -> _Layout:
        """The layout of ``tree``; ``vectors``, a tree of booleans of the same structure, marks the state vectors
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


def _packed(tree, *, layout: _Layout) -> tuple:
    """The buffers of ``tree`` laid out by ``layout``."""
    leaves = jax.tree.leaves(tree)
    parts: list[list] = [[] for _ in layout.buffers]
    for leaf, (at, _, _) in zip(leaves, layout.slots):
        parts[at].append(leaf if layout.buffers[at] is None else leaf.reshape(-1))
    return tuple(p[0] if b is None else jnp.concatenate(p) for p, b in zip(parts, layout.buffers))


def _unpacked(buffers: tuple, *, layout: _Layout, keep: tuple[bool, ...] | None = None):
    """``(carries, board)`` of the held buffers; with ``keep`` (a flag per leaf), the leaves not kept are ``None``
    and the buffers that hold none of the kept ones go unread (an argument a jitted function does not use is not
    passed): reading the board or the counts copies no state vector out of its layout."""
    kept = (True,) * len(layout.slots) if keep is None else keep
    leaves = [_leaf(buffers, layout, slot) if k else None for slot, k in zip(layout.slots, kept, strict=True)]
    return jax.tree.unflatten(layout.treedef, leaves)


# called on the held buffers; the compiled calls unpack and pack inside their own programs (a jitted function
# with compiler options cannot be called inside another)
_pack = jax.jit(_packed, static_argnames="layout", compiler_options=compile_options())
_unpack = jax.jit(_unpacked, static_argnames=("layout", "keep"), compiler_options=compile_options())


def _leaf(buffers: tuple, layout: _Layout, slot: tuple[int, int, tuple[int, ...]]):
    at, offset, shape = slot
    if layout.buffers[at] is None:
        return buffers[at]
    return buffers[at][offset : offset + int(np.prod(shape))].reshape(shape)


@functools.lru_cache(maxsize=64)
def _kept(layout: _Layout, part: str) -> tuple[bool, ...]:
    """:func:`_unpack`'s ``keep`` for one part of ``(carries, board)``: ``"board"``, or the engine's ``"counts"``."""
    carries, board = jax.tree.unflatten(layout.treedef, [False] * layout.treedef.num_leaves)
    if part == "board":
        board = jax.tree.map(lambda _: True, board)
    else:
        carries = tuple(c._replace(counts=True) for c in carries)
    return tuple(jax.tree.leaves((carries, board)))


def _compiled(key, lower):
    return _COMPILED.get_or_build(key, lambda: lower().compile())[0]


# -- batches, files --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _pieces(n: int, sizes: tuple[int, ...] = ()) -> tuple[int, ...]:
    """The calls a batch of ``n`` events takes: the given ``sizes`` (largest first, as many as fit), then
    ``MAX_BATCH`` as many times as it fits, then the rest."""
    out: list[int] = []
    for b in (*sizes, MAX_BATCH):
        out += [b] * (n // b)
        n -= b * (n // b)
    return (*out, n) if n else tuple(out)


def _pad(rows, size: int):
    """``rows`` (or labels, or scores) with zero rows appended up to ``size``."""
    if size == rows.shape[0]:
        return rows
    if isinstance(rows, SparseRows):
        return SparseRows(_pad(rows.indices, size), _pad(rows.values, size), rows.n_features)
    out = np.zeros((size, *rows.shape[1:]), rows.dtype)  # np.pad costs tens of µs more in Python
    out[: rows.shape[0]] = rows
    return out


def _take(rows, a: int, b: int):
    if isinstance(rows, SparseRows):
        return SparseRows(rows.indices[a:b], rows.values[a:b], rows.n_features)
    return rows[a:b]


def _labels(y) -> np.ndarray:
    """``y`` checked as ±1 labels, as int8 (a fast path for the common case, :func:`check_labels` for the
    message). The compiled calls cast them to the working dtype (:func:`~jcsol.live.units.working_labels`): int8
    labels reach them with no NumPy call, which costs several µs between two XLA calls."""
    if isinstance(y, np.ndarray) and y.ndim == 1 and y.dtype.kind in "if":
        # a few labels are checked faster in Python than by NumPy's calls
        if set(y.tolist()) <= {1, -1} if y.size <= 64 else ((y == 1) | (y == -1)).all():
            return y if y.dtype is _INT8 else y.astype(_INT8)
    return check_labels(y)


def _sum_is_finite(X: np.ndarray) -> bool:
    """Whether the sum of ``X``'s values is finite (then each is; a sum that overflows says no, and the caller's
    full check decides). A few values are summed by Python from the array's buffer: between two XLA calls,
    NumPy's reduction of one event's row costs about twice as much."""
    kind = X.dtype.char
    if 0 < X.size <= 1024 and kind in "fd":
        view = X.data
        if view.c_contiguous:
            return math.isfinite(sum(view.cast("B").cast("f" if kind == "f" else "d")))
    with np.errstate(over="ignore", invalid="ignore"):
        return math.isfinite(X.sum())


def _device_rows(rows):
    return (rows.indices, rows.values) if isinstance(rows, SparseRows) else rows


def _is_matrix(X) -> bool:
    return isinstance(X, (list, tuple)) and len(X) > 0 and not isinstance(X[0], dict)


def _states(carries: tuple) -> tuple:
    return tuple(c.state for c in carries)


def _params(learners: tuple, sizes: tuple, objective: Objective) -> dict[str, np.ndarray]:
    """Each configuration's hyperparameters (NaN where its learner has no such one); with several learners,
    also each configuration's learner name."""
    names = list(dict.fromkeys(k for each in learners for k in each.hyperparameters()))
    out = {k: np.full(sum(sizes), np.nan) for k in names}
    start = 0
    for each, size in zip(learners, sizes):
        shape = flatten_grid(each, objective, np.float64)[0]
        for k, v in each.hyperparameters().items():
            out[k][start : start + size] = np.broadcast_to(np.asarray(v, np.float64), shape).reshape(size)
        start += size
    if len(learners) > 1:
        out = {"learner": np.repeat([each.name for each in learners], sizes), **out}
    return out


def _describe(obj) -> dict | list:
    """A JSON description of a learner (or a list of them) or objective: class, static options, values."""
    if isinstance(obj, (list, tuple)):
        return [_describe(each) for each in obj]
    desc = {
        "class": f"{type(obj).__module__}.{type(obj).__qualname__}",
        "options": {k: repr(v) for k, v in obj.options().items()},
        "hyperparameters": {k: np.asarray(v, np.float64).tolist() for k, v in obj.hyperparameters().items()},
    }
    return json.loads(json.dumps(desc))


def _read(path: str, learner: Learner, objective: Objective) -> tuple[dict, dict[str, np.ndarray]]:
    """``(meta, arrays)`` of a saved live learner, checked: readable, of this format, intact, of this learner
    and objective."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(archive["meta"].tobytes().decode())
            arrays = {k: archive[k] for k in archive.files if k != "meta"}
        if not isinstance(meta, dict):
            raise ValueError("its metadata is not an object")
    except ARCHIVE_ERRORS as err:
        raise LiveFileError(f"{path} is not a readable live-learner file ({err})") from None
    if meta.get("format") != FORMAT:
        raise LiveFileError(
            f"{path} has live-learner format {meta.get('format')} (written by jcsol "
            f"{meta.get('jcsol')}); this jcsol reads format {FORMAT}"
        )
    if meta.get("digest") != file_digest(meta, arrays):
        raise LiveFileError(f"{path} is corrupted: its fields and arrays do not match their SHA-256")
    for what, mine in (("learner", _describe(learner)), ("objective", _describe(objective))):
        if meta[what] != mine:
            raise LiveFileError(f"{path} holds another {what}: saved {meta[what]}, given {mine}")
    return meta, arrays


def _refuse_other_process_counts(path: str, n_processes: int) -> None:
    saved = other_process_counts(path, n_processes)
    if saved:
        raise LiveFileError(
            f"{path} holds a live learner saved by {saved}, and this run has {n_processes}: a live learner saved "
            "over several processes loads only with as many processes (each share holds its own processes' "
            "configurations)"
        )


def _agreed_share(path: str, learner: Learner, objective: Objective) -> tuple[dict, dict[str, np.ndarray]]:
    """This process's share of the latest save that every process holds a share of; every process refuses
    when one of them cannot read its share, so that none goes on alone (:func:`jcsol.checkpoint.agreed_generation`)."""
    devices = global_devices()
    platform = devices[0].platform
    spread = Spread(devices, len(devices), timeout=resolve_timeout("auto", platform), on_cpu=platform == "cpu")
    target = share_path(path, spread.process, spread.n_processes)
    found: dict[int, tuple[dict, dict[str, np.ndarray]]] = {}
    refusal: LiveFileError | None = None
    try:
        _refuse_other_process_counts(path, spread.n_processes)
        for name in (target, target + PREVIOUS):
            if os.path.exists(name):
                meta, arrays = _read(name, learner, objective)
                found[int(meta.get("generation", 0))] = (meta, arrays)
        if not found:
            raise LiveFileError(f"{target} does not exist: no share of a live learner saved at {path} for this process")
    except LiveFileError as err:
        refusal = err
    agreed = agreed_generation(
        spread,
        found,
        refusal,
        name=path,
        generations="saves",
        what=f"loading the live learner {path}",
        error=LiveFileError,
        remedy="saves were interrupted, or the shares are not in one folder every process sees",
    )
    assert agreed is not None  # every process holds a share, or all refused
    return agreed


def _restore(template, arrays: dict[str, np.ndarray], prefix: str, path, *, place: bool = True):
    leaves, treedef = jax.tree.flatten(template)
    saved = [arrays.get(f"{prefix}/{i}") for i in range(len(leaves))]
    if any(s is None or s.shape != a.shape or s.dtype != a.dtype for s, a in zip(saved, leaves)):
        raise LiveFileError(f"{path} holds {prefix} arrays of other shapes than this learner's")
    tree = jax.tree.unflatten(treedef, saved)
    return jax.device_put(tree) if place else tree


def _version() -> str:
    from .. import __version__

    return __version__
