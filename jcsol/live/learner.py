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
way (padding rows are scored and dropped; scoring changes no state).

The states and the board are held by a backend (:class:`jcsol.live.backend.Backend`): on one device as a few
flat buffers (:mod:`jcsol.live.packed`), or, with ``grid_blocks > 1`` or over several processes, as the grid's
blocks laid over the devices (:mod:`jcsol.live.units`). A batch given to ``Live.learn`` goes through

1. :mod:`jcsol.live.learner` (``Live.learn``): rows checked (a table encoded), labels checked
   (:func:`jcsol.live.batches.labels`), the pending events' rows taken from :mod:`jcsol.live.store`;
2. :mod:`jcsol.live.batches`: cut into the calls' pieces and each padded to its compiled size;
3. the backend (:mod:`jcsol.live.packed` or :mod:`jcsol.live.units`): its states laid out for the rows' kind,
   one compiled call that runs the engine's rounds (:func:`jcsol.live.backend.batch_rounds`, over
   :mod:`jcsol.core.rounds`) and the board's update (:mod:`jcsol.live.board`).

``save`` and ``load`` write and read the file :mod:`jcsol.live.files` describes.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from typing import Any

import jax
import numpy as np

from ..base import Learner, beyond_row_scales
from ..batches import bucket
from ..core.checks import check_grid_blocks, check_memory, flatten_grid, require_memory, resolve_dtype
from ..core.chunks import check_path
from ..files import check_writable
from ..grids import check_grid
from ..metrics import sensitivity, specificity, weighted_cost, weighted_sum
from ..objective import Objective, Sum
from ..stream import SparseRows, check_features, check_fits, check_flags, is_scipy_sparse
from . import files
from .arguments import batch_sizes_of, count, encoder_of, key_of, n_features_of, on_full_of, scales_of
from .backend import Backend
from .batches import MAX_BATCH, device_rows, is_matrix, labels, pad, pieces, sum_is_finite, take
from .board import Board, Selection, window_measures
from .leaderboard import Leaderboard, grid_params
from .packed import Packed
from .store import PendingStore, check_ids
from .units import Units


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
        path: the chunk backend a batch is learnt on, as for :func:`jcsol.run`: ``"auto"`` (the GPU kernel on a
            GPU where it covers a learner and the batch's rows are dense, the scan elsewhere), ``"scan"``,
            ``"kernel"``, or a :class:`jcsol.Scan` or :class:`jcsol.Kernel`; the bits are those of ``run`` on the
            same backend. A backend named that does not cover a learner is refused when the learner's
            dimension is known (at the first batch, or here given ``n_features`` or an encoder). Not saved: a
            loaded learner takes ``"auto"``.
        scale: ``"online"`` standardises each feature inside the round, as :func:`jcsol.run` does: every
            event is scaled by the statistics of the labelled events learnt before it, for learning and for
            predicting (:mod:`jcsol.core.scaling`); the kind of the rows the learner starts with (sparse rows,
            or a table encoder's, scaled without centring; dense rows centred and scaled) fixes the definition.
            The statistics are saved with the learner. ``None`` (default): the rows as given. For a list of
            learners, a list of one value a learner: ``Live([learner, learner], scale=[None, "online"])`` serves
            the same grid on the rows as given and on scaled rows from one board.

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
        path: Any = "auto",
        scale: str | None = None,
    ):
        objective = Sum(rho="laplace") if objective is None else objective
        check_path(path, jax.default_backend())
        learners = tuple(learner) if isinstance(learner, (list, tuple)) else (learner,)
        if not learners:
            raise ValueError("learner: an empty list of learners")
        scales = scales_of(scale, len(learners))
        self.scale = scale if scale is None or isinstance(scale, str) else list(scales)
        self._learner_scales = scales
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
        self._flat_objective = jax.tree.map(lambda *a: np.concatenate(a), *(obj for _, _, obj in grids))
        # the leaderboard's weights of the measures, as given: the board's are rounded to the working dtype
        exact = [flatten_grid(each, objective, np.float64)[2].measure_weights() for each in learners]
        self._measure_weights = tuple(
            np.concatenate([np.broadcast_to(np.asarray(w[i], np.float64), (n,)) for w, n in zip(exact, self._sizes)])
            for i in (0, 1)
        )
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
        flat = tuple(flat for _, flat, _ in grids)
        init_key = jax.random.split(jax.random.key(self.key))[1]  # as jcsol.run derives it from key
        held = (self._flat_objective, self._sizes)
        self._backend: Backend = (
            Units(flat, *held, self.grid_blocks, init_key, self.selection, self.dtype, path, scales)
            if self.grid_blocks > 1 or jax.process_count() > 1
            else Packed(flat, *held, init_key, self.selection, self.dtype, path, scales)
        )
        self._scales: dict[int, tuple[float, float]] = {}  # the rows' scales every learner holds on, per width
        self._saves = 0  # the generation of a share saved over several processes
        self._events = 0  # labelled events learnt (a Python int: the device's int32 counts are halved in time)
        self.n_features: int | None = None
        if d is not None:
            self._start(d, sparse_rows=encoder is not None)

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
        measures count the predictions they were given then). A table ``X`` may come without ``y`` when the
        encoder names its label column (``TableEncoder(label="fraud", positive=...)``): the labels are read from
        it (:meth:`jcsol.features.TableEncoder.labels`), and it is never a feature. A table's labels are given to
        the encoder, which refuses a column it would encode whose values are the labels (the label column left
        unnamed, or a copy of it). Returns every configuration's pre-update scores ``(n, G)`` when
        ``return_scores``. A refused call (bad rows, labels or ids) changes nothing.
        """
        if (X is None) == (ids is None) or (y is None and ids is not None):
            raise TypeError("call learn(X, y) or learn(ids=ids, y=y)")
        check_flags(return_scores=return_scores)
        y = labels(self._table_labels(X) if y is None else y)
        keys = None
        arrival: np.ndarray | None
        served: np.ndarray | None
        with self._encoder_kept_on_error(ids is None):
            if ids is not None:
                keys = check_ids(ids, len(y))
                rows, arrival, served = self.store.get(keys)
            else:
                rows = self._rows(X, update=True, y=y)
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
        cuts = pieces(len(y), self.batch_sizes)
        out, start = [], 0
        for size in cuts:
            window = slice(start, start + size)
            whole = bucket(size, self.batch_sizes)
            part = rows if len(cuts) == 1 else take(rows, start, start + size)
            scores = self._backend.learn(
                device_rows(pad(part, whole)),
                pad(y if len(cuts) == 1 else y[window], whole),
                None if arrival is None else pad(arrival[window], whole),
                None if served is None else pad(served[window], whole),
                None if whole == size else np.int32(size),  # a padded batch's loop stops after its events
            )
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
        return self._backend.carry()

    @property
    def board(self) -> Board:
        """The leaderboard's and the selection's state (:class:`jcsol.live.board.Board`)."""
        self._require_started()
        return self._backend.board()

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
        return self._backend.counts().reshape(self.grid_shape + (4,))

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
        alpha_p, c_p = self._measure_weights
        params = grid_params(self.learners, self._sizes, self.objective)
        if len(set(self._learner_scales)) > 1:  # the same learner on the rows as given and on scaled ones
            scaled = np.repeat([scale or "none" for scale in self._learner_scales], self._sizes)
            params = {"learner": params["learner"], "scale": scaled, **params}
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
        arrays = files.contents(
            self._backend.saved_carry(), self.board, self.store.arrays(), self._events, self.encoder
        )
        layout = self._backend.layout()
        if layout is not None:
            self._saves += 1
        files.write(path, files.description(self), arrays, self._backend.spread, layout, self._saves)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike,
        learner: Learner | list[Learner] | tuple[Learner, ...] | files.FromFile = files.FROM_FILE,
        objective: Objective | None = None,
    ) -> Live:
        """The learner saved at ``path``, continuing exactly where it stopped.

        ``learner`` and ``objective`` default to those the file describes, rebuilt from it
        (:func:`jcsol.live.files.undescribe`: a class of jcsol, options that are Python literals); given, they must
        be those it was built with, and are checked against the file. ``jcsol.load(path)`` opens a live learner's
        file as well as a :class:`jcsol.Model`'s. Over several processes every process calls it, each reads its
        own share, and they continue from the latest save every process holds a share of; a learner saved by
        another number of processes is refused.

        Raises:
            LiveFileError: the file is unreadable or corrupted, of another format version, or of another
                learner, grid or objective, or saved by another number of processes, or its learner cannot be
                rebuilt from it (a class outside jcsol, an option that is no literal: give the learner) — the
                message says which.
        """
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file path, got {type(path).__name__}")
        path = os.fsdecode(os.fspath(path))
        rebuilt = isinstance(learner, files.FromFile)
        for each in () if rebuilt else learner if isinstance(learner, (list, tuple)) else (learner,):
            if not isinstance(each, Learner):  # None given is refused: leave the learner out to rebuild it
                raise TypeError(f"learner must be a jcsol learner or a list of them, got {type(each).__name__}")
        given: Any = None if rebuilt else learner
        if objective is not None and not isinstance(objective, Objective):
            raise TypeError(f"objective must be jcsol.Sum(...) or jcsol.Cost(...), got {type(objective).__name__}")
        meta, arrays = files.read(path, given, objective)
        if given is None:
            given = files.undescribe(meta["learner"], path, "learner")
        if objective is None:
            objective = files.undescribe(meta["objective"], path, "objective")
        live = cls(given, objective, **files.arguments(meta, arrays, path))
        files.check_layout(meta, live._backend.layout(), path)
        live._backend.restore(arrays, path)
        live._saves = int(meta.get("generation", 0))
        live.store.restore(files.section(arrays, "store"))
        live._events = int(arrays["events"])
        return live

    # -- inside -------------------------------------------------------------------------------------------
    def _start(self, d: int, sparse_rows: bool) -> None:
        """Starts the learner for rows of ``d`` features, its states laid out for sparse rows or dense ones."""
        for learner, size in zip(self.learners, self._sizes):
            check_memory(learner, d, size, self.dtype)
        self._backend.start(d, sparse_rows, files.description(self) | {"n_features": d})
        self.n_features = d

    def _require_started(self) -> None:
        if not self._backend.started:
            raise RuntimeError("the live learner has seen no event yet (give n_features=… to start it empty)")

    def _table_labels(self, X) -> np.ndarray:
        """The labels of a table learnt without ``y``: its label column, read by the encoder that names it."""
        if not _is_table(X):
            raise TypeError("call learn(X, y) or learn(ids=ids, y=y)")
        if self.encoder is None or getattr(self.encoder, "label", None) is None:
            raise TypeError(
                "learn(table) without y reads the labels from the encoder's label column, and there is none: give "
                "the labels, learn(table, y), or name the column, Live(..., encoder=jcsol.TableEncoder(..., "
                "label='COLUMN', positive=...))"
            )
        return self.encoder.labels(X)

    def _rows(self, X, *, update: bool, y=None):
        """A batch as checked dense rows or :class:`SparseRows` of this learner's dtype and dimension; ``update``:
        rows to learn from (now or when their labels come), which also updates a table encoder's statistics.
        ``y``: the batch's ±1 labels, given to a :class:`jcsol.features.TableEncoder` that encodes it, which
        refuses a column whose values are the labels."""
        if (
            isinstance(X, np.ndarray)
            and X.dtype == self.dtype
            and X.ndim == 2
            and X.shape[1] == self.n_features
            and sum_is_finite(X)
        ):
            return X  # the common case, checked in one pass (a non-finite sum gets check_features' message)
        if _is_table(X):
            if self.encoder is None:
                raise TypeError(
                    f"a batch of type {type(X).__name__} needs an encoder (Live(..., encoder="
                    "jcsol.features.TableEncoder(...))); without one give an array, jcsol.SparseRows or a SciPy sparse "
                    "matrix"
                )
            if not update:
                X = self.encoder.transform(X)
            elif y is not None and _takes_labels(self.encoder):
                X = self.encoder.fit_transform(X, labels=y)
            else:
                X = self.encoder.fit_transform(X)
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
        if values.shape[0] == 1:  # one event: a whole-array reduction, several µs cheaper than one by rows
            top = float(np.abs(values).max(initial=0))
            beyond = top > hi or 0 < top < lo
        else:
            tops = np.abs(values).max(axis=1, initial=0)
            beyond = bool((tops > hi).any() or ((tops > 0) & (tops < lo)).any())
        if beyond:
            for each in self.learners:
                message = beyond_row_scales(each, values, self.dtype)
                if message:
                    warnings.warn(message, RuntimeWarning, stacklevel=3)

    def _start_for(self, rows) -> None:
        """Starts the learner on the first batch it accepts (its dimension, its kind of rows)."""
        if not self._backend.started:
            self._start(rows.shape[1], sparse_rows=isinstance(rows, SparseRows))

    def _encoder_kept_on_error(self, update: bool):
        """Around a call whose rows update the encoder's statistics (``update``): a call that fails after the
        rows were encoded (refused for their count, their ids, …) leaves the encoder as it was."""
        return _UNGUARDED if self.encoder is None or not update else _KeptOnError(self.encoder)

    def _score(self, rows, *, grid: bool = True) -> tuple[np.ndarray | None, np.ndarray]:
        """``(every configuration's scores (n, G) or None unless grid, served scores (n,))``."""
        n = rows.shape[0]
        cuts = pieces(n)
        if len(cuts) > 1:
            starts = np.cumsum([0, *cuts])
            parts = [self._score(take(rows, a, b), grid=grid) for a, b in zip(starts[:-1], starts[1:])]
            return (np.concatenate([p[0] for p in parts]) if grid else None), np.concatenate([p[1] for p in parts])
        size = bucket(n, self.batch_sizes)
        scores, served = self._backend.score(device_rows(pad(rows, size)), grid)
        if size == n:
            return (np.asarray(scores) if grid else None), np.asarray(served)
        return (np.asarray(scores)[:n] if grid else None), np.asarray(served)[:n]


def _is_table(X) -> bool:
    """Whether a batch is a table for the encoder (a data frame, an Arrow table, records), not rows."""
    return not isinstance(X, (np.ndarray, SparseRows, jax.Array)) and not is_matrix(X) and not is_scipy_sparse(X)


def _takes_labels(encoder) -> bool:
    """Whether the encoder checks a table against its labels (a :class:`jcsol.features.TableEncoder`; an encoder
    of another class is called as it was)."""
    from ..features import TableEncoder

    return isinstance(encoder, TableEncoder)


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
