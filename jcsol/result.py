"""The outcome of :func:`jcsol.run`: per-run counts, the measures derived from them, curves, timings.

A :class:`Result` is data: it imports nothing of the reporting. Tables, records, CSV, JSON and data frames of
results are :mod:`jcsol.report`'s (``jcsol.table(res)``, ``jcsol.report.records(res)``,
``jcsol.report.to_pandas(res)``, ``jcsol.report.write_json(res, path)``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import jax
import numpy as np

from . import metrics
from .metrics import FN, FP, TN, TP
from .model import Model, scores_by_run
from .objective import Cost
from .scoring import per_run, scoring_rows


class Best(NamedTuple):
    """The grid point selected by :meth:`Result.best`."""

    params: dict[str, float]  # hyperparameter values at the selected point
    index: tuple[int, ...]  # type: ignore[assignment]  # its index in the grid (shadows tuple.index)
    result: Result  # the runs at that point (grid shape ``()``)

    def model(self, run: int = 0, *, data: str | None = None, measure: str | None = None) -> Model:
        """The selected configuration's model: permutation ``run``'s final state (:meth:`Result.model`)."""
        model = self.result.model(run=run, data=data, measure=measure)
        return model.replace(provenance={**model.provenance, "index": list(self.index)})


def _run_of(a, grid_shape: tuple[int, ...], run: int) -> np.ndarray:
    """Run ``run``'s entry of ``a``, whose leading axes are ``grid_shape + (P,)``, as a NumPy array."""
    return np.asarray(a[(slice(None),) * len(grid_shape) + (run,)])


def scalar_at(obj, grid_shape: tuple[int, ...], index: tuple[int, ...]):
    """``obj`` (a learner or objective of a grid of ``grid_shape``) with each hyperparameter its value at the point
    ``index``, a float."""
    leaves, treedef = jax.tree.flatten(obj)
    return jax.tree.unflatten(treedef, [float(np.broadcast_to(np.asarray(l), grid_shape)[index]) for l in leaves])


def grid_index(index: Any, grid_shape: tuple[int, ...]) -> tuple[int, ...]:
    """``index`` (flat, or one integer per axis; negative from the end) as a tuple of non-negative integers
    addressing one point of ``grid_shape``, or an ``IndexError`` naming it."""
    integer = lambda i: isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))
    n = math.prod(grid_shape)
    if integer(index):
        if not -n <= index < n:
            raise IndexError(f"index {index} is outside [-{n}, {n}) for a grid of {n} point(s) {grid_shape}")
        return tuple(int(i) for i in np.unravel_index(int(index) % n, grid_shape))
    if not isinstance(index, tuple) or not all(map(integer, index)) or len(index) != len(grid_shape):
        raise IndexError(
            f"index {index!r} does not address one point of a grid of shape {grid_shape}: give a flat integer "
            f"index or a tuple of {len(grid_shape)} integer(s)"
        )
    for axis, (i, size) in enumerate(zip(index, grid_shape)):
        if not -size <= i < size:
            raise IndexError(f"index {index} is outside the grid of shape {grid_shape} on axis {axis}")
    return tuple(int(i) % size for i, size in zip(index, grid_shape))


@dataclasses.dataclass(frozen=True)
class Result:
    """All runs of one :func:`jcsol.run` call.

    Arrays of runs have shape ``grid_shape + (P,)``: one entry per grid point and permutation.

    Attributes:
        learner, objective: as given to :func:`jcsol.run` (array fields are the grid).
        grid_shape: shape of the hyperparameter grid, ``()`` for a single point.
        orders: ``(P, L)`` row orders of the runs.
        counts: ``grid_shape + (P, 4)`` final confusion counts ``(tp, fn, fp, tn)``.
        curve: ``grid_shape + (P, K, 4)`` counts after rounds ``curve_t``, or ``None``.
        curve_t: ``(K,)`` the rounds (1-based) at which ``curve`` was recorded.
        states: final learner states, every leaf with leading axes ``grid_shape + (P,)``: arrays on the device
            when the runs took one device, NumPy arrays when they were split over several (fetched shard by
            shard) or over processes (gathered).
        time_compile: seconds spent compiling (0 when the computation was already compiled).
        time_run: seconds of execution of all runs together, after compilation (of this process only, when
            the run was resumed from a checkpoint: its rounds from ``resumed_at`` on). A point taken from a
            sweep (:meth:`at`, :meth:`best`) keeps the sweep's: its runs were executed together with the
            sweep's others, and took no time of their own.
        mistake_cost: ``grid_shape + (P,)`` the example costs summed over each run's mistakes (the class
            weights ``ρ_t`` unless the run was given ``costs``).
        scores: ``grid_shape + (P, L)`` every round's pre-update score, when the run recorded them.
        resumed_at: the round from which this process continued a checkpointed run (0: from the start).
        n_features: the dimension ``d`` of the rows the runs learnt from.
        labels: the stream's labels (±1, one per row of ``X``; round ``t`` of permutation ``p`` has
            ``labels[orders[p, t]]``), which the measures of :attr:`scores` need (``average_precision``,
            ``precision_at_K%``); ``None`` when not kept.
        sweep_runs: for a point taken from a sweep (:meth:`at`, :meth:`best`), the number of runs the sweep
            executed together in ``time_run``; ``None`` otherwise (:attr:`runs_timed` reads it).
        scaler: with ``jcsol.run(..., scale="online")``, every run's final statistics of its features
            (:mod:`jcsol.core.scaling`; leaves with leading axes ``grid_shape + (P,)``), with which
            :meth:`score` scales new rows; ``None`` when the rows were learnt as given.
    """

    learner: Any
    objective: Any
    grid_shape: tuple[int, ...]
    orders: np.ndarray
    counts: np.ndarray
    curve: np.ndarray | None
    curve_t: np.ndarray | None
    states: Any
    time_compile: float
    time_run: float
    mistake_cost: np.ndarray | None = None
    scores: np.ndarray | None = None
    resumed_at: int = 0
    n_features: int | None = None
    labels: np.ndarray | None = None
    sweep_runs: int | None = None
    scaler: Any = None

    def __repr__(self) -> str:
        """One line: the runs and their mean measures, not the arrays (``jcsol.table(res)`` shows them all)."""
        grid = "×".join(map(str, self.grid_shape)) or "1"
        main = "cost" if isinstance(self.objective, Cost) else "sum"
        with np.errstate(invalid="ignore"):
            shown = ", ".join(
                f"{name} {np.nanmean(self.measure(name)):.4g}" for name in (main, "sensitivity", "specificity")
            )
        together = "" if self.runs_timed == self.n_runs else f" for the sweep's {self.runs_timed} runs"
        return (
            f"Result({self.learner.name}: {grid} grid point(s) × {self.n_perms} permutation(s) × "
            f"{self.orders.shape[1]} rounds; mean {shown}; run {self.time_run:.3g} s{together})"
        )

    # -- sizes and timings ------------------------------------------------------------------------------
    @property
    def n_perms(self) -> int:
        return self.orders.shape[0]

    @property
    def n_runs(self) -> int:
        return math.prod(self.grid_shape) * self.n_perms

    @property
    def runs_timed(self) -> int:
        """The number of runs executed together in :attr:`time_run`: :attr:`n_runs`, or, for a point taken from a
        sweep (:meth:`at`, :meth:`best`), the sweep's."""
        return self.n_runs if self.sweep_runs is None else int(self.sweep_runs)

    @property
    def time_per_run(self) -> float:
        """The time per run of the computation the runs were part of: :attr:`time_run` divided by the number of
        runs it executed together (:attr:`runs_timed`). A point of a sweep has the sweep's time per run, never its
        runs' share of the sweep counted as if they had run alone."""
        return self.time_run / self.runs_timed

    @property
    def updates_per_second(self) -> float:
        """Example-updates per second of that computation: :attr:`runs_timed` × the rounds timed (those from
        :attr:`resumed_at` on) / :attr:`time_run`, the same for every point of a sweep; NaN when no execution
        time was measured (``time_run`` 0: nothing left to run)."""
        if not self.time_run > 0:
            return math.nan
        return self.runs_timed * (self.orders.shape[1] - self.resumed_at) / self.time_run

    # -- counts and measures ----------------------------------------------------------------------------
    tp = property(lambda self: self.counts[..., TP])
    fn = property(lambda self: self.counts[..., FN])
    fp = property(lambda self: self.counts[..., FP])
    tn = property(lambda self: self.counts[..., TN])

    def _weights(self) -> tuple[np.ndarray, np.ndarray]:
        alpha_p, c_p = self.objective.measure_weights()
        expand = lambda v: np.broadcast_to(np.asarray(v, np.float64), self.grid_shape)[..., None]
        return expand(alpha_p), expand(c_p)

    def measure(self, name: str) -> np.ndarray:
        """Measure ``name`` (see :func:`jcsol.metrics.check_measure`) of every run, shape ``grid_shape + (P,)``.

        *sum* weighs sensitivity by the objective's ``α_p`` under :class:`jcsol.Sum` (½ otherwise); *cost* uses
        the objective's ``c_p`` under :class:`jcsol.Cost` (0.9 otherwise); *example_cost* is
        :attr:`mistake_cost`, the example costs summed over the mistakes. ``precision``, ``f1`` and
        ``alerts_per_catch`` come from the counts too; ``average_precision`` and ``precision_at_K%`` (the top K %
        of the scores reviewed) from each run's recorded scores and labels (:func:`jcsol.metrics.score_measure`).
        ``docs/measures.md`` defines each, with its value where a denominator is 0.
        """
        name = metrics.check_measure(name)
        if name == "example_cost":
            if self.mistake_cost is None:
                raise ValueError("this result has no example costs (mistake_cost)")
            return self.mistake_cost
        if metrics.of_scores(name):
            if self.scores is None:
                raise ValueError(f"{name} is a measure of the scores: run with record_scores=True to record them")
            if self.labels is None:
                raise ValueError(f"{name} needs each round's label, and this result holds scores but no labels")
            return metrics.score_measure(name, self.scores, np.asarray(self.labels)[self.orders])
        alpha_p, c_p = self._weights()
        return metrics.measure(name, self.counts, alpha_p, c_p)

    def curve_of(self, name: str) -> np.ndarray:
        """Online curve of measure ``name`` (a measure of the counts): ``grid_shape + (P, K)``, at rounds
        ``curve_t``."""
        if metrics.of_scores(name):
            raise ValueError(f"{name} is a measure of the scores: it has no online curve (curves hold counts)")
        if self.curve is None:
            raise ValueError("this result has no curves; run with curve_points > 0")
        alpha_p, c_p = self._weights()
        return metrics.measure(name, self.curve, alpha_p[..., None], c_p[..., None])

    sensitivity = property(lambda self: self.measure("sensitivity"))
    specificity = property(lambda self: self.measure("specificity"))
    accuracy = property(lambda self: self.measure("accuracy"))
    balanced_accuracy = property(lambda self: self.measure("balanced_accuracy"))
    sum = property(lambda self: self.measure("sum"))
    cost = property(lambda self: self.measure("cost"))
    precision = property(lambda self: self.measure("precision"))
    f1 = property(lambda self: self.measure("f1"))
    alerts_per_catch = property(lambda self: self.measure("alerts_per_catch"))
    average_precision = property(lambda self: self.measure("average_precision"))

    # -- grid access ------------------------------------------------------------------------------------
    @property
    def params(self) -> dict[str, np.ndarray]:
        """Every hyperparameter of the learner and objective, broadcast to ``grid_shape``."""
        out = {}
        for part in (self.learner, self.objective):
            for name, value in part.hyperparameters().items():
                out[name] = np.broadcast_to(np.asarray(value, np.float64), self.grid_shape)
        return out

    def at(self, index) -> Result:
        """The runs at one grid point, as a :class:`Result` of grid shape ``()``.

        ``index``: the point's flat index in ``[-n, n)`` for a grid of ``n`` points (negative from the end, as
        Python counts), or a tuple of one integer per axis, each in ``[-size, size)``; ``()`` for a grid of shape
        ``()``. Anything else (a float, a bool, an index out of range) is an ``IndexError`` naming it."""
        index = grid_index(index, self.grid_shape)
        take = lambda a: None if a is None else a[index]
        return dataclasses.replace(
            self,
            learner=scalar_at(self.learner, self.grid_shape, index),
            objective=scalar_at(self.objective, self.grid_shape, index),
            grid_shape=(),
            counts=self.counts[index],
            curve=take(self.curve),
            states=jax.tree.map(lambda a: a[index], self.states),
            mistake_cost=take(self.mistake_cost),
            scores=take(self.scores),
            sweep_runs=self.runs_timed,
            scaler=jax.tree.map(lambda a: a[index], self.scaler),
        )

    def best(self, measure: str = "sum") -> Best:
        """The grid point with the best mean ``measure`` over permutations (highest; lowest for the costs and
        alerts per catch), by :func:`jcsol.metrics.best_index`'s rule: a NaN mean (the measure undefined in a
        run of that point) is never chosen, exact ties go to the first point in C order, and a ``ValueError``
        names the measure when no point is better than another (every mean NaN, or every defined one infinitely
        bad: alerts per catch where every point has a run that caught nothing). A grid of shape ``()`` is its
        one point, whatever its mean."""
        metrics.check_measure(measure)
        mean = self.measure(measure).mean(axis=-1)
        if not self.grid_shape:
            return Best({k: float(v) for k, v in self.params.items()}, (), self)
        flat = metrics.best_index(mean, measure)
        index = tuple(int(i) for i in np.unravel_index(flat, self.grid_shape))
        return Best({k: float(v[index]) for k, v in self.params.items()}, index, self.at(index))

    # -- models -----------------------------------------------------------------------------------------
    def model(self, index: Any = None, *, run: int = 0, data: str | None = None, measure: str | None = None) -> Model:
        """The model to deploy: permutation ``run``'s final state at the grid point ``index`` (as :meth:`at` takes
        it), or of the whole grid (``None``), as a :class:`jcsol.Model`.

        The model holds that run's final states, its online statistics (:attr:`scaler`) taken the same way,
        :attr:`n_features`, the states' dtype, and as its history that run's recorded scores (:attr:`scores`) in
        round order when the result recorded them. Its scores of new rows are :meth:`score`'s for that run, bit
        for bit. A run over random permutations learnt the rows in its own order; ``perms="stream"`` runs learnt
        the stream in its own order, once — the model to deploy on the stream that follows. ``data`` and
        ``measure`` (the data's name, the measure the configuration was selected by) go into its provenance
        beside the rows learnt and their order."""
        if isinstance(run, bool) or not isinstance(run, (int, np.integer)) or not -self.n_perms <= run < self.n_perms:
            raise IndexError(f"run {run!r} is none of this result's {self.n_perms} permutation(s) [0, {self.n_perms})")
        run = int(run) % self.n_perms
        if self.n_features is None:
            raise ValueError("this result does not record the dimension of its rows (n_features)")
        point = self if index is None else self.at(index)
        where = None if index is None else list(grid_index(index, self.grid_shape))
        take = lambda tree: jax.tree.map(lambda a: _run_of(a, point.grid_shape, run), tree)
        states = take(point.states)
        order = np.asarray(self.orders[run])
        in_order = bool(np.array_equal(order, np.arange(len(order))))
        provenance = {
            "rows": int(len(order)),
            "order": "the stream's own" if in_order else f"permutation {run} of {self.n_perms}",
            "run": run,
            "index": where,
            "measure": measure,
            "data": data,
        }
        history = None if point.scores is None else _run_of(np.asarray(point.scores), point.grid_shape, run)
        return Model(
            learner=point.learner,
            objective=point.objective,
            grid_shape=point.grid_shape,
            states=states,
            scaler=None if point.scaler is None else take(point.scaler),
            n_features=int(self.n_features),
            dtype=next(l.dtype for l in jax.tree.leaves(states) if np.issubdtype(l.dtype, np.floating)),
            history=history,
            provenance=provenance,
        )

    def score(self, X) -> np.ndarray:
        """Scores of held-out rows ``X`` ``(n, d)`` under every run's final model: ``grid_shape + (P, n)``.

        ``X`` is checked as :func:`jcsol.run` checks its rows (a dense array, :class:`jcsol.SparseRows` or a
        SciPy sparse matrix; no NaN or infinite value, none beyond the states' dtype) and must have the
        dimension the runs learnt from. Sparse rows scored by a linear model cost O(nnz) per run, never a dense
        copy of the rows (:func:`jcsol.scoring.grid_scores`: the same sums as a dense row's, in another order).
        Runs that scaled their rows (:attr:`scaler`) score each row scaled by their final statistics. Each run is
        scored by a call of its own (:func:`jcsol.model.scores_by_run`), so that a run's scores are the same bits
        whatever the number of runs, and those of its :meth:`model`."""
        dtype = jax.tree.leaves(self.states)[0].dtype
        rows, d = scoring_rows(X, dtype, self.n_features)
        n = len(rows[1] if isinstance(rows, tuple) else rows)

        def runs(tree):
            return jax.tree.map(lambda a: a.reshape((self.n_runs,) + a.shape[len(self.grid_shape) + 1 :]), tree)

        learner = per_run(self.learner, self.grid_shape, self.n_perms)
        scores = scores_by_run(runs(self.states), learner, rows, d, runs(self.scaler))
        return scores.reshape(self.grid_shape + (self.n_perms, n))
