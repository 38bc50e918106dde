"""The cost-sensitive protocols of the papers, each one a few :func:`jcsol.run` calls over a grid.

Every protocol runs its hyperparameter grid, its folds or its cost weights as *one* vmapped computation wherever
the axis is a float (a pytree leaf): learning rates, γ, the objective's α_p or c_n, the weight of the new
covariance in ACOG's mean step, the training folds as explicit row orders. Only static choices (ρ offline or
Laplace, the objective's type) take separate runs. The papers: Wang, Zhao, Hoi, *Cost-Sensitive Online
Classification* (IEEE ICDM 2012); Zhao, Zhuang, Wu, Li, Hoi, *Cost-Sensitive Online Classification with Adaptive
Regularization and Its Applications* (IEEE ICDM 2015); Zhao, Zhang, Wu, Hoi, Tan, Huang, *Adaptive
Cost-Sensitive Online Classification* (IEEE TKDE 2019), "the ACOG paper".
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
from numpy.typing import ArrayLike

from .. import algorithms, metrics
from ..algorithms.acog import ACOG
from ..base import Learner
from ..checked import Stream
from ..datasets.rowstore import RowStore
from ..engine import run
from ..grids import decades
from ..grids import grid as product_grid
from ..objective import Cost, Objective, Sum
from ..result import Result
from ..stream import check_flags
from .splits import cv_splits

__all__ = [
    "default_grid",
    "select_and_rerun",
    "Selection",
    "cross_validate",
    "CrossValidation",
    "varying_weights",
    "VaryingWeights",
    "sensitivity",
    "Sensitivity",
    "old_vs_new_sigma",
    "OldVsNew",
    "offline_vs_laplace",
    "OfflineVsLaplace",
]

#: The step size of each shipped learner class by class name, and the classes without one: read from the
#: classes, which declare it (:attr:`jcsol.Learner.step_size`); :func:`default_grid` reads the learner's own class.
_SHIPPED = [c for c in map(vars(algorithms).get, algorithms.__all__) if isinstance(c, type) and issubclass(c, Learner)]
STEP_SIZE = {c.__name__: c.step_size for c in _SHIPPED if c.step_size}
FIXED = {c.__name__ for c in _SHIPPED if not c.step_size}


# ---------------------------------------------------------------------------------------------------------
# helpers


def default_grid(learner: Learner) -> dict[str, np.ndarray]:
    """The papers' selection grid for ``learner``: its step size (η, λ or C, the field its class names as
    :attr:`jcsol.Learner.step_size`) over ``decades()``, or nothing.

    >>> import jcsol
    >>> sorted(default_grid(jcsol.ACOG()))
    ['eta']
    >>> default_grid(jcsol.AROW())
    {}
    """
    name = learner.step_size
    return {name: decades()} if name else {}


def on_stream(X, y, run_kwargs: dict[str, Any]) -> tuple[Any, None, dict[str, Any]]:
    """``(X, y, run_kwargs)`` for a protocol's calls of :func:`jcsol.run`: rows in memory as one
    :class:`jcsol.Stream` (with the ``costs`` and ``dtype`` of ``run_kwargs``), checked and placed once for all the
    protocol's calls; a stream or a row store as given."""
    if isinstance(X, (Stream, RowStore)):
        return X, y, run_kwargs
    kwargs = dict(run_kwargs)
    stream = Stream(X, y, kwargs.pop("costs", None), dtype=kwargs.pop("dtype", None))
    return stream, None, kwargs


def labels_of(X, y) -> np.ndarray:
    """The labels of a protocol's stream: a :class:`jcsol.Stream`'s own, else ``y``."""
    return X.y if isinstance(X, Stream) else np.asarray(y)


def protocol_run(learner: Learner, X, y, **kwargs: Any) -> Result:
    """:func:`jcsol.run`, whose result a protocol needs in every process that calls it."""
    res = run(learner, X, y, **kwargs)
    if res is None:
        raise ValueError('the protocols need the result in every process: run them with gather="all"')
    return res


def _is_grid(obj) -> bool:
    return any(np.ndim(v) > 0 for v in obj.hyperparameters().values())


def _with_grid(learner: Learner, grid: Mapping[str, ArrayLike] | None) -> tuple[Learner, tuple[str, ...]]:
    """``learner`` turned into a product grid over ``grid`` (default: :func:`default_grid`), and the axes."""
    if grid is None and _is_grid(learner):
        return learner, tuple(k for k, v in learner.hyperparameters().items() if np.ndim(v) > 0)
    axes = dict(default_grid(learner) if grid is None else grid)
    if not axes:
        return learner, ()
    return product_grid(learner, **axes), tuple(axes)


def _default_measure(objective: Objective | None) -> str:
    return "cost" if isinstance(objective, Cost) else "sum"


def _fresh_key(key):
    """The key of the re-run: ``key + 1`` for an integer seed, ``fold_in(key, 1)`` for a JAX key."""
    if isinstance(key, (int, np.integer)):
        return int(key) + 1
    return jax.random.fold_in(key, 1)


def _numpy_rng(key) -> np.random.Generator:
    if isinstance(key, (int, np.integer)):
        return np.random.default_rng(int(key))
    return np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel().tolist())


def _argbest(values: np.ndarray, measure: str, axis=None):
    """Index of the best mean (along ``axis``, or of all of ``values``) by :func:`jcsol.metrics.best_index`'s
    rule: NaN never chosen, ties to the first, and a ``ValueError`` naming the measure where none is better."""
    values = np.asarray(values, np.float64)
    if axis is None:
        return metrics.best_index(values, measure)
    return np.apply_along_axis(metrics.best_index, axis, values, measure)


def _params_at(result: Result, index: tuple[int, ...], names: Sequence[str]) -> dict[str, float]:
    params = result.params
    return {k: float(params[k][index]) for k in names}


def _add_axis(obj, position: int):
    """``obj`` with a length-1 axis inserted at ``position`` (counted from the end) in every array leaf."""
    changes = {}
    for k, v in obj.hyperparameters().items():
        if np.ndim(v) > 0:
            v = np.asarray(v)
            changes[k] = np.expand_dims(v, v.ndim + 1 + position if position < 0 else position)
    return obj.replace(**changes) if changes else obj  # a pairing of every array field is kept


# ---------------------------------------------------------------------------------------------------------
# selection of hyperparameters


@dataclasses.dataclass(frozen=True)
class Selection:
    """Outcome of :func:`select_and_rerun`.

    Attributes:
        name: the learner's name.
        measure: the measure the selection maximised (minimised for *cost*).
        chosen: the selected value of each grid axis (empty when there was nothing to select).
        index: the selected grid point's index in ``sweep``.
        sweep: every grid point × the selection permutations.
        result: the chosen values re-run on fresh permutations (grid shape ``()``); the sweep's runs at the
            chosen point when ``rerun=False`` or when there was no grid.
    """

    name: str
    measure: str
    chosen: dict[str, float]
    index: tuple[int, ...]
    sweep: Result
    result: Result

    @property
    def values(self) -> np.ndarray:
        """The selected measure of the reported runs, shape ``(P,)``."""
        return self.result.measure(self.measure)

    @property
    def setting(self) -> str:
        return ", ".join(f"{k}={v:g}" for k, v in self.chosen.items()) or "-"


def select_and_rerun(
    learner: Learner,
    X,
    y=None,
    *,
    grid: Mapping[str, ArrayLike] | None = None,
    measure: str | None = None,
    perms=20,
    objective: Objective | None = None,
    key=0,
    rerun: bool = True,
    rerun_key=None,
    curve_points: int = 0,
    **run_kwargs,
) -> Selection:
    """Hyperparameter selection over a grid, then a re-run of the chosen values on fresh permutations.

    The papers' online protocol (Wang et al., ICDM 2012, §V-A; Zhao et al., ICDM 2015, §IV-A; the ACOG paper,
    §4.1; see ``docs/protocols.md``): every grid point runs one pass over each of ``perms`` random permutations
    — all of them one :func:`jcsol.run` call — the point with the best mean ``measure`` is chosen, and
    (``rerun=True``) the chosen values run again on ``perms`` new permutations (``key + 1``), so that the
    reported numbers are not the maximum of noisy means they were selected by.
    With ``rerun=False`` the reported runs are the selection runs at the chosen point, as in the papers.

    Args:
        learner: a learner; with scalar hyperparameters, ``grid`` (default :func:`default_grid`: its step size
            η, λ or C over ``{1e-5, …, 1e5}``) makes it a product grid; a learner that already holds arrays is
            used as its own grid.
        X, y: the stream (``y`` none with a :class:`jcsol.Stream` as ``X``); rows in memory are checked and
            placed once for both calls (:class:`jcsol.Stream`).
        grid: ``{name: values}`` of the axes to select, ``{}`` for none.
        measure: the selection measure (default: *sum*, or *cost* under :class:`jcsol.Cost`).
        perms, objective, key, run_kwargs: as for :func:`jcsol.run`.
        rerun: re-run the chosen values on fresh permutations.
        rerun_key: seed of the re-run (default ``key + 1``).
        curve_points: online curves of the reported runs (recorded by the re-run, or by the sweep at every grid
            point when ``rerun=False``).

    Returns:
        A :class:`Selection`.
    """
    measure = metrics.check_measure(measure or _default_measure(objective))
    check_flags(rerun=rerun)
    learner_grid, axes = _with_grid(learner, grid)
    X, y, run_kwargs = on_stream(X, y, run_kwargs)
    if not axes:
        res = protocol_run(
            learner, X, y, perms=perms, objective=objective, key=key, curve_points=curve_points, **run_kwargs
        )
        return Selection(learner.name, measure, {}, (), res, res)
    # without a re-run the sweep itself records the curves (grid × P × curve_points counts)
    sweep = protocol_run(
        learner_grid,
        X,
        y,
        perms=perms,
        objective=objective,
        key=key,
        curve_points=0 if rerun else curve_points,
        **run_kwargs,
    )
    best = sweep.best(measure)
    chosen = {k: best.params[k] for k in axes}
    if rerun:
        again = rerun_key if rerun_key is not None else _fresh_key(key)
        result = protocol_run(
            best.result.learner,
            X,
            y,
            perms=perms,
            objective=best.result.objective,
            key=again,
            curve_points=curve_points,
            **run_kwargs,
        )
    else:
        result = best.result
    return Selection(learner.name, measure, chosen, best.index, sweep, result)


# ---------------------------------------------------------------------------------------------------------
# cross-validation (the ACOG paper's Table III)


@dataclasses.dataclass(frozen=True)
class CrossValidation:
    """Outcome of :func:`cross_validate`.

    Attributes:
        name: the learner's name.
        measure: the selection and evaluation measure.
        train: the online training passes, one run per (repeat, fold) along the permutation axis, for every
            grid point: a :class:`jcsol.Result` of shape ``grid_shape + (repeats·folds,)``.
        test: the same runs' *held-out* confusion counts (final model on the held-out fold, ``score >= 0``
            predicts +1), as a :class:`jcsol.Result` (so ``test.sum`` etc. work): its measures of counts are
            the held-out fold's; it keeps no scores and its mistake costs are NaN, as the runs' scores and
            costs are those of their training passes.
        fold_of: ``(repeats, n)`` the fold of every example in each repeat.
        dropped: ``(repeats·folds,)`` training examples left out of each run to make all runs equally long.
        chosen_index: the grid point used for each run (by the online *training* measure of that run).
    """

    name: str
    measure: str
    train: Result
    test: Result
    fold_of: np.ndarray
    dropped: np.ndarray
    chosen_index: tuple[tuple[int, ...], ...]

    @property
    def chosen(self) -> list[dict[str, float]]:
        """The hyperparameters used for each fold (grid axes only)."""
        axes = [k for k, v in self.train.params.items() if np.unique(v).size > 1]
        return [_params_at(self.train, i, axes) for i in self.chosen_index]

    @property
    def setting(self) -> str:
        """The choices over folds, most frequent first, e.g. ``eta=10 (4/5), eta=1 (1/5)``."""
        texts = [", ".join(f"{k}={v:g}" for k, v in c.items()) or "-" for c in self.chosen]
        counts = Counter(texts)
        if len(counts) == 1:
            return texts[0]
        return "; ".join(f"{t} ({n}/{len(texts)})" for t, n in counts.most_common())

    def held_out(self, measure: str | None = None) -> np.ndarray:
        """``measure`` (default: the protocol's) of each run's final model on its held-out fold, ``(P,)``."""
        values = self.test.measure(measure or self.measure)
        return np.array([values[i + (p,)] for p, i in enumerate(self.chosen_index)])

    @property
    def held_out_result(self) -> Result:
        """The held-out counts at the chosen points as a Result of grid shape ``()`` (for tables); its learner
        carries the most frequent choice."""
        mode = Counter(self.chosen_index).most_common(1)[0][0]
        counts = np.stack([self.test.counts[i + (p,)] for p, i in enumerate(self.chosen_index)])
        point = self.test.at(mode) if self.test.grid_shape else self.test
        return dataclasses.replace(point, counts=counts, curve=None, curve_t=None)

    @property
    def result(self) -> Result:
        return self.held_out_result


def cross_validate(
    learner: Learner,
    X,
    y=None,
    *,
    folds: int = 5,
    repeats: int = 1,
    grid: Mapping[str, ArrayLike] | None = None,
    objective: Objective | None = None,
    measure: str = "sum",
    key=0,
    stratify: bool = True,
    **run_kwargs,
) -> CrossValidation:
    """k-fold generalisation of the final online model (the ACOG paper, §4.4.5, Table III).

    Each example is assigned to one of ``folds`` folds by :func:`jcsol.protocols.cv_splits` (``stratify=True``:
    positives and negatives dealt round-robin after shuffling, so every fold has the class ratio of the stream;
    the folds and training orders come from ``key``). For each fold, the learner
    makes **one online pass** over the other folds in a random order, and its final model scores the held-out
    fold; ``score >= 0`` predicts +1, and the held-out confusion counts give the *sum* (or any measure).

    All ``repeats × folds`` training passes — times every point of the grid — are **one** :func:`jcsol.run`
    call, with explicit ``perms`` rows = the shuffled training-fold indices. Fold sizes differ by at most one
    example, so training sets do too: every training order is trimmed to the shortest one, i.e. a run whose
    training set is one example longer leaves out the last example of its random order (``dropped`` says
    which runs did). With ``n`` examples that is at most one of ``n·(k−1)/k`` training examples.

    Hyperparameters: with a grid (default :func:`default_grid`), each run uses the grid point with the best
    online *training* measure of that very run (progressive validation on its own training stream), so the
    held-out fold never takes part in the choice. Give scalar hyperparameters and ``grid={}`` to fix them.

    Returns:
        A :class:`CrossValidation`; ``.held_out()`` is the per-fold held-out measure, ``.setting`` the choices.
    """
    metrics.check_measure(measure)
    check_flags(stratify=stratify)
    X, y, run_kwargs = on_stream(X, y, run_kwargs)
    y_arr = labels_of(X, y)
    splits = cv_splits(y_arr, folds, repeats, _numpy_rng(key), stratify=stratify)
    learner_grid, _ = _with_grid(learner, grid)
    tests = np.zeros((len(splits.train), len(y_arr)), bool)  # (P, n) the held-out rows of each run
    for p, (rows, held_out) in enumerate(zip(splits.test, splits.test_mask)):
        tests[p, rows[held_out]] = True
    train = protocol_run(learner_grid, X, y, perms=splits.train, objective=objective, key=key, **run_kwargs)
    scores = train.score(X.X if isinstance(X, Stream) else X)  # grid + (P, n)
    pred = scores >= 0
    label = (y_arr > 0)[None, :]
    cells = [(pred & label), (~pred & label), (pred & ~label), (~pred & ~label)]  # TP, FN, FP, TN
    counts = np.stack([(c & tests).sum(-1) for c in cells], axis=-1).astype(np.int32)
    # the held-out figures are the counts alone: the runs' scores and mistake costs are their training passes'
    test = dataclasses.replace(
        train,
        counts=counts,
        curve=None,
        curve_t=None,
        scores=None,
        labels=None,
        mistake_cost=np.full(train.counts.shape[:-1], np.nan),
    )
    if train.grid_shape:
        online = train.measure(measure).reshape(-1, train.n_perms)  # (G, P)
        flat = _argbest(online, measure, axis=0)
        chosen = tuple(tuple(int(i) for i in np.unravel_index(int(f), train.grid_shape)) for f in flat)
    else:
        chosen = tuple(() for _ in range(train.n_perms))
    return CrossValidation(learner.name, measure, train, test, splits.fold_of, splits.dropped, chosen)


# ---------------------------------------------------------------------------------------------------------
# varying weights (the ACOG paper's Figs. 2 and 4)


@dataclasses.dataclass(frozen=True)
class VaryingWeights:
    """Outcome of :func:`varying_weights`.

    Attributes:
        name: the learner's name.
        kind: ``"sum"`` (the weights are α_n) or ``"cost"`` (the weights are c_n).
        weights: ``(W,)`` the α_n or c_n values.
        result: all runs, grid shape ``learner grid + (W,)``.
        chosen: for each weight, the learner's selected hyperparameters (empty dicts without a grid).
        values: ``(W, P)`` the measure at each weight, at its selected point.
    """

    name: str
    kind: str
    weights: np.ndarray
    result: Result
    chosen: list[dict[str, float]]
    values: np.ndarray

    @property
    def measure(self) -> str:
        return self.kind

    @property
    def mean(self) -> np.ndarray:
        return self.values.mean(-1)

    @property
    def std(self) -> np.ndarray:
        return self.values.std(-1, ddof=1) if self.values.shape[-1] > 1 else np.zeros(len(self.weights))


def varying_weights(
    learner: Learner,
    X,
    y,
    *,
    kind: str = "sum",
    weights: Sequence[float] | None = None,
    grid: Mapping[str, ArrayLike] | None = None,
    rho: str = "offline",
    perms=20,
    key=0,
    **run_kwargs,
) -> VaryingWeights:
    """*sum* under varying α_n, or *cost* under varying c_n, as one run (the ACOG paper's Figs. 2 and 4;
    Zhao et al., ICDM 2015, Figs. 3 and 4).

    ``kind="sum"``: the objective is ``Sum(alpha_p=1 − α_n)`` with α_n over ``weights`` (default 0.1, …, 0.9);
    ``kind="cost"``: ``Cost(c_p=1 − c_n, c_n=c_n)``. The weights are the objective's float field as an array —
    an axis of the grid — so every weight, every point of the learner's grid (default: its step size over
    ``{1e-5, …, 1e5}``, selected per weight by the mean measure as in the papers' protocol; ``grid={}`` keeps
    the learner's values) and every permutation run in a single :func:`jcsol.run` call. At each weight, *sum*
    uses that weight's α_p and *cost* that weight's c_p.
    """
    if kind not in ("sum", "cost"):
        raise ValueError(f"kind must be 'sum' or 'cost', got {kind!r}")
    w = np.round(np.arange(1, 10) / 10, 2) if weights is None else np.asarray(weights, np.float64).ravel()
    if np.any(w <= 0) or np.any(w >= 1):
        raise ValueError(f"weights must be in (0, 1), got {w.tolist()}")
    learner_grid, axes = _with_grid(learner, grid)
    lead = np.broadcast_shapes(*(np.shape(v) for v in learner_grid.hyperparameters().values()))
    learner_grid = _add_axis(learner_grid, -1) if lead else learner_grid
    shaped = w.reshape((1,) * len(lead) + (len(w),))
    objective = Sum(alpha_p=1.0 - shaped, rho=rho) if kind == "sum" else Cost(c_p=1.0 - shaped, c_n=shaped)
    res = protocol_run(learner_grid, X, y, perms=perms, objective=objective, key=key, **run_kwargs)
    values = res.measure(kind)  # lead + (W, P)
    if lead:
        flat = values.reshape((-1,) + values.shape[-2:])  # (G, W, P)
        best = _argbest(flat.mean(-1), kind, axis=0)  # (W,)
        chosen_idx = [tuple(int(i) for i in np.unravel_index(int(b), lead)) for b in best]
        picked = np.stack([flat[b, j] for j, b in enumerate(best)])
        chosen = [_params_at(res, idx + (j,), axes) for j, idx in enumerate(chosen_idx)]
    else:
        picked, chosen = values, [{} for _ in w]
    return VaryingWeights(learner.name, kind, w, res, chosen, picked)


# ---------------------------------------------------------------------------------------------------------
# sensitivity to η and γ (the ACOG paper's Figs. 5 and 6)


@dataclasses.dataclass(frozen=True)
class Sensitivity:
    """Outcome of :func:`sensitivity`: the measure over a product grid of hyperparameters.

    Attributes:
        name: the learner's name.
        measure: the measure.
        axes: ``{name: values}`` of the product grid, in grid order.
        defaults: the learner's values of the axes before the grid replaced them (γ = 1, say).
        result: all runs, grid shape ``tuple(len(v) for v in axes.values())``.
    """

    name: str
    measure: str
    axes: dict[str, np.ndarray]
    defaults: dict[str, float]
    result: Result

    @property
    def mean(self) -> np.ndarray:
        return self.result.measure(self.measure).mean(-1)

    @property
    def std(self) -> np.ndarray:
        v = self.result.measure(self.measure)
        return v.std(-1, ddof=1) if v.shape[-1] > 1 else np.zeros(v.shape[:-1])

    def curve(
        self, axis: str, at: Mapping[str, float] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """``(values, mean, std, fixed)``: the measure along ``axis`` with the other axes fixed.

        By default another axis is fixed at the learner's own value when the grid holds it (γ = 1 for the
        η curve of Fig. 5), except the step size (η), which is fixed at its best value for the η curve's
        defaults (the γ curve of Fig. 6 uses the η chosen at γ = 1). ``at`` overrides these choices.
        """
        names = list(self.axes)
        if axis not in names:
            raise ValueError(f"{axis!r} is not an axis of this grid ({', '.join(names)})")
        at = dict(at or {})
        mean = self.mean
        step = [n for n in names if n in ("eta", "C", "learning_rate", "lambda_")]

        def default_index(n: str) -> int | None:
            value = at.get(n, self.defaults.get(n))
            if value is None:
                return None
            hits = np.flatnonzero(np.isclose(self.axes[n], value))
            return int(hits[0]) if len(hits) else None

        # axes given in `at`, and non-step axes whose default is in the grid, are fixed there
        index = {n: default_index(n) for n in names if n != axis and (n in at or n not in step)}
        index = {n: i for n, i in index.items() if i is not None}
        free = [n for n in names if n != axis and n not in index]
        if free:
            # the remaining axes (the step size, say) at their best, with `axis` at its default when it has one
            choose = dict(index)
            own = default_index(axis) if axis not in at else None
            if own is not None:
                choose[axis] = own
            sub = mean[tuple(choose.get(n, slice(None)) for n in names)]
            rest = [n for n in names if n not in choose]
            best = np.unravel_index(int(_argbest(sub.reshape(-1), self.measure)), sub.shape)
            for n in free:
                index[n] = int(best[rest.index(n)])
        take = tuple(slice(None) if n == axis else index[n] for n in names)
        fixed = {n: float(self.axes[n][index[n]]) for n in names if n != axis}
        return self.axes[axis], mean[take], self.std[take], fixed


def sensitivity(
    learner: Learner,
    X,
    y,
    *,
    axes: Mapping[str, ArrayLike] | None = None,
    measure: str | None = None,
    perms=20,
    objective: Objective | None = None,
    key=0,
    **run_kwargs,
) -> Sensitivity:
    """The measure over a product grid of hyperparameters, one run (the ACOG paper, §4.4.1–4.4.2, Figs. 5 and 6).

    Default axes: η and γ each over ``{1e-4, …, 1e4}`` (the ranges of Figs. 5 and 6), restricted to the
    learner's hyperparameters. The product grid is built by :func:`jcsol.grid`; every point × every
    permutation is one :func:`jcsol.run` call. :meth:`Sensitivity.curve` gives the figures' slices: the
    measure against η at γ = 1 (Fig. 5), against γ at the η selected at γ = 1 (Fig. 6).
    """
    measure = metrics.check_measure(measure or _default_measure(objective))
    if axes is None:
        axes = {k: decades(1e-4, 1e4) for k in ("eta", "gamma") if k in learner.hyperparameters()}
    values = {k: np.asarray(v, np.float64).ravel() for k, v in axes.items()}
    if not values:
        raise ValueError(f"{learner.name} has none of the default axes eta, gamma; pass axes={{name: values}}")
    defaults = {
        k: float(np.asarray(v)) for k, v in learner.hyperparameters().items() if k in values and np.ndim(v) == 0
    }
    res = protocol_run(product_grid(learner, **values), X, y, perms=perms, objective=objective, key=key, **run_kwargs)
    return Sensitivity(learner.name, measure, values, defaults, res)


# ---------------------------------------------------------------------------------------------------------
# old Σ_t vs new Σ_{t+1} (the ACOG paper's Fig. 7)


@dataclasses.dataclass(frozen=True)
class OldVsNew:
    """Outcome of :func:`old_vs_new_sigma`.

    Attributes:
        name: the ACOG variant, e.g. ``"ACOG-I"``.
        measure: the measure.
        result: all runs, grid shape ``(len(eta), 2)``; the last axis is (old Σ_t, new Σ_{t+1}).
        eta: the η grid.
        chosen_eta: ``{"old": η, "new": η}`` selected for each rule.
        values: ``{"old": (P,), "new": (P,)}`` the measure at each rule's selected η (same permutations).
    """

    name: str
    measure: str
    result: Result
    eta: np.ndarray
    chosen_eta: dict[str, float]
    values: dict[str, np.ndarray]

    def curves(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """``{rule: (mean, std)}`` of the measure against η for each rule."""
        v = self.result.measure(self.measure)
        std = lambda a: a.std(-1, ddof=1) if a.shape[-1] > 1 else np.zeros(a.shape[:-1])
        return {rule: (v[:, j].mean(-1), std(v[:, j])) for j, rule in enumerate(("old", "new"))}


def old_vs_new_sigma(
    X,
    y,
    *,
    loss: str = "I",
    diagonal: bool = False,
    eta: ArrayLike | None = None,
    gamma: float = 1.0,
    measure: str | None = None,
    perms=20,
    objective: Objective | None = None,
    key=0,
    **run_kwargs,
) -> OldVsNew:
    """ACOG's mean step along the old Σ_t (AROW-style) vs the new Σ_{t+1} (ACOG), one run (the ACOG
    paper, §4.4.3, Fig. 7).

    Uses :class:`jcsol.ACOG`, whose float hyperparameter ``new_sigma`` is the
    weight of Σ_{t+1} in the step (0: old rule, 1: ACOG exactly): the grid η × ``new_sigma ∈ {0, 1}`` is one
    :func:`jcsol.run` call, so both rules see the same permutations (a paired comparison). Each rule's η is
    selected by its mean measure over those permutations, as in the papers' figures.
    """
    measure = metrics.check_measure(measure or _default_measure(objective))
    etas = decades() if eta is None else np.asarray(eta, np.float64).ravel()
    learner = ACOG(gamma=gamma, loss=loss, diagonal=diagonal)
    res = protocol_run(
        product_grid(learner, eta=etas, new_sigma=[0.0, 1.0]),
        X,
        y,
        perms=perms,
        objective=objective,
        key=key,
        **run_kwargs,
    )
    v = res.measure(measure)  # (E, 2, P)
    best = _argbest(v.mean(-1), measure, axis=0)  # (2,)
    name = f"ACOG-{loss}" + ("-diag" if diagonal else "")
    rules = ("old", "new")
    return OldVsNew(
        name,
        measure,
        res,
        etas,
        {r: float(etas[best[j]]) for j, r in enumerate(rules)},
        {r: v[best[j], j] for j, r in enumerate(rules)},
    )


# ---------------------------------------------------------------------------------------------------------
# offline vs Laplace ρ (the ACOG paper's Fig. 8)


@dataclasses.dataclass(frozen=True)
class OfflineVsLaplace:
    """Outcome of :func:`offline_vs_laplace`: one :class:`Selection` per way of setting ρ."""

    name: str
    offline: Selection
    laplace: Selection

    @property
    def values(self) -> dict[str, np.ndarray]:
        return {"offline": self.offline.values, "laplace": self.laplace.values}


def offline_vs_laplace(
    learner: Learner,
    X,
    y,
    *,
    alpha_p: float = 0.5,
    grid=None,
    perms=20,
    key=0,
    rerun: bool = True,
    curve_points: int = 0,
    **run_kwargs,
) -> OfflineVsLaplace:
    """*sum* with ρ = α_p T_n/(α_n T_p) from the whole stream vs the Laplace estimate (the ACOG paper, §4.4.4,
    Fig. 8).

    The Laplace estimate is ``ρ_t = α_p (n_t + 1)/(α_n (p_t + 1))`` over the examples seen so far. ``rho`` is a
    static choice of :class:`jcsol.Sum` (it changes the computation), so these are two
    :func:`select_and_rerun` calls — each selecting the step size over its grid in one run — with the same
    keys, hence the same permutations: a paired comparison.
    """
    kw = dict(grid=grid, perms=perms, key=key, rerun=rerun, curve_points=curve_points, **run_kwargs)
    off = select_and_rerun(learner, X, y, objective=Sum(alpha_p=alpha_p, rho="offline"), **kw)
    lap = select_and_rerun(learner, X, y, objective=Sum(alpha_p=alpha_p, rho="laplace"), **kw)
    return OfflineVsLaplace(learner.name, off, lap)
