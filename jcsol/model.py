"""A trained model to deploy: one configuration, or a whole grid of one learner, with what its rows need.

:class:`Model` holds a learner's final states (from :meth:`jcsol.Result.model`, :meth:`jcsol.Best.model` or
``jcsol run --save``) and everything that scoring new rows takes besides: the online standardisation's statistics
(``scale="online"``), a table encoder (rows may then be tables) or how plain rows were prepared (L2 norm, the
constant feature), the alert rule (a score threshold, or a share of rows to alert on), and the scores the model
gave while it learnt, which the alert budget's running quantile starts from. ``scores`` gives a model's scores of
new rows, ``alerts`` its decisions, ``save`` writes it to one file and :func:`load` reads it back (or a live
learner's file, told apart by its contents)::

    res = jcsol.run(jcsol.ACOG(eta=jcsol.decades(), loss="II"), X, y, perms="stream", record_scores=True)
    model = res.best("sum").model()          # the selected η, learnt on the stream in its own order
    model.save("model.npz")
    scores = jcsol.load("model.npz").scores(X_new)

**Bits.** A model scores rows through :func:`jcsol.scoring.scoring_rows` and
:func:`jcsol.scoring.run_scores` one configuration at a time, as :meth:`jcsol.Result.score` scores each run, so
a model exported from a result scores every row bit for bit as ``Result.score`` does for that run, before and
after a save and a load.

**The file** is one ``.npz`` archive, written atomically (:func:`jcsol.files.atomic_write`), no pickles: ``meta``
(JSON text: ``kind`` ``"jcsol.Model"``, ``format`` :data:`FORMAT`, the jcsol version, the learner and objective
as :func:`jcsol.live.files.describe` gives them, the grid shape, dimension, dtype, scaling, threshold, budget,
row preparation, encoder class and provenance) and the arrays ``state/<i>`` (the states' leaves),
``scaler/<i>`` (the statistics' leaves), ``encoder/<name>`` (:meth:`jcsol.TableEncoder.state_dict`) and
``history``, all under one SHA-256 (:func:`jcsol.checkpoint.file_digest`, as a live learner's file): no field
or array can change without the file being refused. Reading it back rebuilds the learner and objective from
their description (:func:`jcsol.live.files.undescribe`: a class of jcsol, options that are Python literals), or
checks those given against it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
from typing import Any, cast

import jax
import numpy as np

from .base import Learner
from .checkpoint import file_digest, open_archive, write_archive
from .core import scaling
from .files import ARCHIVE_ERRORS, check_writable
from .objective import Objective
from .scoring import per_run, run_scores, scoring_rows
from .stream import SparseRows, is_scipy_sparse

KIND = "jcsol.Model"
FORMAT = 1

_SCALERS = {"dense": scaling.DenseScaler, "sparse": scaling.SparseScaler}


class ModelFileError(RuntimeError):
    """A model file that cannot be loaded: unreadable, corrupted, of another kind or format, or whose learner
    cannot be rebuilt from it; the message names the file and why."""


def scores_by_run(states, learner, rows, d: int, scaler=None) -> np.ndarray:
    """``(R, n)``: the scores of ``rows`` (as :func:`jcsol.scoring.scoring_rows` gives them) under each of ``R``
    models — ``states``' and ``scaler``'s leaves of leading axis ``(R,)``, ``learner``'s hyperparameter leaves
    one entry per model (:func:`jcsol.scoring.per_run`) — each computed by its own call of
    :func:`jcsol.scoring.run_scores` on that model alone. A model's scores are then the same bits however many
    models are scored beside it (one compiled product of the rows with several models' weights rounds each
    model's sums by the number of models and rows)."""
    leaves = jax.tree.leaves(states)
    runs = leaves[0].shape[0]
    n = len(rows[1] if isinstance(rows, tuple) else rows)
    out = np.empty((runs, n), leaves[0].dtype)
    placed = jax.device_put(rows)  # once for every model's call
    for r in range(runs):
        one = lambda tree, r=r: jax.tree.map(lambda a: a[r : r + 1], tree)
        out[r] = np.asarray(run_scores(one(states), one(learner), placed, d, one(scaler)))[:, 0]
    return out


def _is_table(X) -> bool:
    """Whether ``X`` is neither rows (an array, :class:`jcsol.SparseRows`, a SciPy sparse matrix) nor a
    NumPy-like matrix: a table for an encoder (a data frame, an Arrow table, records)."""
    return not isinstance(X, (np.ndarray, SparseRows, jax.Array)) and not is_scipy_sparse(X)


def _json_able(value: Any, what: str) -> Any:
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what} must be JSON-able (numbers, text, lists, dicts): {err}") from None


@dataclasses.dataclass(frozen=True, eq=False, kw_only=True)
class Model:
    """A trained model: one configuration of a learner, or a whole grid of one learner.

    Attributes:
        learner, objective: the learner and objective (hyperparameter arrays of a grid broadcast to
            ``grid_shape``).
        grid_shape: the grid's shape, ``()`` for one configuration.
        states: the learner's states, every leaf with leading axes ``grid_shape`` (NumPy arrays).
        scaler: the online standardisation's statistics (:mod:`jcsol.core.scaling`; leaves of leading axes
            ``grid_shape``), by which every row is scaled before it is scored, or ``None`` for rows scored as
            given.
        encoder: a :class:`jcsol.TableEncoder`, or ``None``: with one, rows may be tables (data frames, Arrow
            tables, records), encoded by its ``transform`` — its statistics frozen, a label column ignored.
        rows: how plain rows were prepared when the model was trained from a LIBSVM file by the command line,
            ``{"normalize": bool, "bias": bool}`` (:meth:`prepare` applies it), else ``None``.
        n_features: the rows' dimension ``d``.
        dtype: the states' float dtype, in which rows are scored.
        threshold: the alert rule's threshold: a row whose score is ``>= threshold`` is an alert (default 0.0,
            the learners' own rule: a score ``>= 0`` predicts +1).
        budget: a share of rows in (0, 1) to alert on (the online budget of :func:`jcsol.alerts.budget_alerts`),
            which :meth:`alerts` applies instead of the threshold when set; ``None`` by default.
        history: the scores the model gave while it learnt, in order, ``(L,)`` (a grid: ``grid_shape + (L,)``),
            or ``None``: where the budget's running quantile starts from.
        provenance: a JSON-able dict of where the model comes from (rows learnt, their order, the selecting
            measure, the data's name, …).
    """

    learner: Any
    objective: Any
    grid_shape: tuple[int, ...] = ()
    states: Any
    scaler: Any = None
    encoder: Any = None
    rows: dict | None = None
    n_features: int
    dtype: Any = np.float32
    threshold: float = 0.0
    budget: float | None = None
    history: np.ndarray | None = None
    provenance: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)
        for each in self.learner if isinstance(self.learner, (list, tuple)) else (self.learner,):
            if not isinstance(each, Learner):
                raise TypeError(f"Model: learner must be a jcsol learner (of one grid), got {type(each).__name__}")
        if not isinstance(self.objective, Objective):
            raise TypeError(f"Model: objective must be jcsol.Sum(...) or jcsol.Cost(...), got {self.objective!r}")
        shape = tuple(self.grid_shape) if isinstance(self.grid_shape, (tuple, list)) else None
        if shape is None or not all(isinstance(s, numbers.Integral) and s >= 1 for s in shape):
            raise ValueError(f"Model: grid_shape must be a tuple of sizes >= 1, got {self.grid_shape!r}")
        shape = tuple(int(s) for s in shape)
        set_("grid_shape", shape)
        values = [np.shape(v) for part in (self.learner, self.objective) for v in part.hyperparameters().values()]
        try:
            if np.broadcast_shapes(shape, *values) != shape:
                raise ValueError
        except ValueError:
            raise ValueError(f"Model: hyperparameters of shapes {values} do not make a grid of shape {shape}") from None
        if isinstance(self.n_features, bool) or not isinstance(self.n_features, numbers.Integral):
            raise TypeError(f"Model: n_features must be an integer, got {self.n_features!r}")
        if self.n_features < 1:
            raise ValueError(f"Model: n_features must be >= 1, got {self.n_features}")
        set_("n_features", int(self.n_features))
        try:
            dtype = np.dtype(self.dtype)
        except TypeError:
            raise TypeError(f"Model: dtype must be float32 or float64, got {self.dtype!r}") from None
        if dtype not in (np.float32, np.float64):
            raise ValueError(f"Model: dtype must be float32 or float64, got {dtype}")
        set_("dtype", dtype)
        set_("states", self._checked_tree(self.states, self._state_template(), "states"))
        if self.scaler is not None:
            kind = next((k for k, c in _SCALERS.items() if isinstance(self.scaler, c)), None)
            if kind is None:
                raise TypeError(
                    f"Model: scaler must be the statistics of jcsol.core.scaling, got {type(self.scaler).__name__}"
                )
            set_("scaler", self._checked_tree(self.scaler, self._scaler_template(kind), "scaler"))
        if self.encoder is not None:
            from .features import TableEncoder

            if not isinstance(self.encoder, TableEncoder):
                raise TypeError(f"Model: encoder must be a jcsol.TableEncoder, got {type(self.encoder).__name__}")
            if self.encoder.n_features != self.n_features:
                raise ValueError(
                    f"Model: the encoder makes rows of {self.encoder.n_features} features; n_features is "
                    f"{self.n_features}"
                )
            if self.rows is not None:
                raise ValueError("Model: a model with an encoder encodes its rows: rows must be None")
        if self.rows is not None:
            if not isinstance(self.rows, dict) or set(self.rows) != {"normalize", "bias"}:
                raise ValueError(f"Model: rows must be {{'normalize': bool, 'bias': bool}} or None, got {self.rows!r}")
            if not all(isinstance(v, (bool, np.bool_)) for v in self.rows.values()):
                raise TypeError(f"Model: rows' normalize and bias must be True or False, got {self.rows!r}")
            set_("rows", {k: bool(v) for k, v in self.rows.items()})
        set_("threshold", self._checked_threshold(self.threshold))
        set_("budget", self._checked_budget(self.budget))
        if self.history is not None:
            history = np.array(self.history)
            if history.dtype.kind != "f" or history.ndim != len(shape) + 1 or history.shape[:-1] != shape:
                raise ValueError(
                    f"Model: history must be the float scores learnt, of shape grid_shape + (L,) = {shape} + (L,), "
                    f"got {history.dtype} of shape {history.shape}"
                )
            history.setflags(write=False)
            set_("history", history)
        if not isinstance(self.provenance, dict):
            raise TypeError(f"Model: provenance must be a dict, got {type(self.provenance).__name__}")
        set_("provenance", _json_able(self.provenance, "Model: provenance"))

    # -- checks -----------------------------------------------------------------------------------------
    def _state_template(self):
        return _state_template(self.learner, self.grid_shape, self.n_features, self.dtype)

    def _scaler_template(self, kind: str):
        return _scaler_template(kind, self.n_features, self.dtype)

    def _checked_tree(self, tree, template, what: str):
        """``tree`` as NumPy arrays, refused unless it has ``template``'s structure, its leaves the template's
        shapes (after the leading ``grid_shape``) and dtypes."""
        leaves, treedef = jax.tree.flatten(tree)
        shapes, expected = jax.tree.flatten(template)
        treedef = cast(Any, treedef)
        if treedef != expected:
            raise ValueError(f"Model: {what} are not {self.learner_name}'s (structure {treedef}, expected {expected})")
        out = []
        for leaf, want in zip(leaves, shapes):
            leaf = np.asarray(leaf)
            if leaf.shape != self.grid_shape + want.shape or leaf.dtype != want.dtype:
                raise ValueError(
                    f"Model: {what} hold an array of {leaf.dtype} {leaf.shape}, where {self.learner_name} over "
                    f"{self.n_features} features in {self.dtype} has {want.dtype} {self.grid_shape + want.shape}"
                )
            out.append(leaf)
        return jax.tree.unflatten(treedef, out)

    @staticmethod
    def _checked_threshold(threshold) -> float:
        if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, (numbers.Real, np.floating)):
            raise TypeError(f"threshold must be a real number, got {threshold!r}")
        if not math.isfinite(float(threshold)):
            raise ValueError(f"threshold must be finite, got {threshold!r}")
        return float(threshold)

    @staticmethod
    def _checked_budget(budget) -> float | None:
        if budget is None:
            return None
        if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, (numbers.Real, np.floating)):
            raise TypeError(f"budget must be a share of rows in (0, 1) or None, got {budget!r}")
        if not 0 < float(budget) < 1:
            raise ValueError(f"budget must be a share of rows in (0, 1), got {budget!r}")
        return float(budget)

    # -- what it is -------------------------------------------------------------------------------------
    @property
    def learner_name(self) -> str:
        return self.learner.name if isinstance(self.learner, Learner) else type(self.learner).__name__

    @property
    def n_configurations(self) -> int:
        return math.prod(self.grid_shape)

    @property
    def params(self) -> dict[str, np.ndarray | float]:
        """Every hyperparameter of the learner and objective: a float for one configuration, else an array
        broadcast to ``grid_shape``."""
        out: dict[str, np.ndarray | float] = {}
        for part in (self.learner, self.objective):
            for name, value in part.hyperparameters().items():
                grid = np.broadcast_to(np.asarray(value, np.float64), self.grid_shape)
                out[name] = float(grid) if not self.grid_shape else grid
        return out

    def __repr__(self) -> str:
        if self.grid_shape:
            what = f"a grid of {'×'.join(map(str, self.grid_shape))} configurations"
        else:
            what = ", ".join(f"{k}={v:g}" for k, v in self.params.items() if k in self.learner.hyperparameters())
        rule = f"budget {self.budget:.4g}" if self.budget is not None else f"threshold {self.threshold:g}"
        rows = self.provenance.get("rows")
        learnt = f"; learnt from {rows:,} rows" if isinstance(rows, int) else ""
        return (
            f"Model({self.learner_name} {what}: {self.n_features} features, {self.dtype.name}"
            + (", scaled online" if self.scaler is not None else "")
            + (", a table encoder" if self.encoder is not None else "")
            + f"; {rule}{learnt})"
        )

    def replace(self, **changes) -> Model:
        """A copy with ``changes`` (``threshold=``, ``budget=``, ``encoder=``, …), checked as a new model is."""
        return dataclasses.replace(self, **changes)

    def at(self, index) -> Model:
        """The configuration at ``index`` of the grid (a flat index, or a tuple of one integer per axis, as
        :meth:`jcsol.Result.at` takes it), as a model of one configuration."""
        from .result import grid_index, scalar_at

        index = grid_index(index, self.grid_shape)
        take = lambda tree: jax.tree.map(lambda a: a[index], tree)
        return dataclasses.replace(
            self,
            learner=scalar_at(self.learner, self.grid_shape, index),
            objective=scalar_at(self.objective, self.grid_shape, index),
            grid_shape=(),
            states=take(self.states),
            scaler=None if self.scaler is None else take(self.scaler),
            history=None if self.history is None else self.history[index],
            provenance={**self.provenance, "index": list(index)},
        )

    # -- scoring ----------------------------------------------------------------------------------------
    def prepare(self, X):
        """Plain rows (a dense array or :class:`jcsol.SparseRows`, as read from a LIBSVM file) prepared as the
        model's training rows were (:attr:`rows`): L2-normalised with ``normalize``, the constant feature 1
        appended with ``bias`` (:func:`jcsol.datasets.load`'s order); the rows themselves when :attr:`rows` is
        ``None``."""
        if self.rows is None:
            return X
        from .datasets import add_bias, l2_normalize
        from .stream import check_features, check_fits

        X = check_features(X)
        if self.rows["normalize"]:
            X = l2_normalize(X)
        values = X.values if isinstance(X, SparseRows) else X
        check_fits(values, self.dtype)
        X = X._replace(values=values.astype(self.dtype)) if isinstance(X, SparseRows) else X.astype(self.dtype)
        return add_bias(X) if self.rows["bias"] else X

    def _encoded(self, X):
        if self.encoder is not None and _is_table(X):
            return self.encoder.transform(X)
        return X

    def scores(self, X) -> np.ndarray:
        """The scores of rows ``X`` ``(n, d)``: ``(n,)`` for one configuration, ``grid_shape + (n,)`` for a grid.

        ``X`` is checked as :meth:`jcsol.Result.score` checks it (a dense array, :class:`jcsol.SparseRows` or a
        SciPy sparse matrix of :attr:`n_features` columns; no NaN or infinite value, none beyond :attr:`dtype`);
        with an :attr:`encoder`, ``X`` may be a table, encoded with the encoder's statistics as they are (a label
        column is ignored). Each row is scaled by :attr:`scaler` when the model has one. The scores are those
        ``Result.score`` gives for the run the model was taken from, bit for bit (:func:`scores_by_run`)."""
        rows, d = scoring_rows(self._encoded(X), self.dtype, self.n_features)
        n = len(rows[1] if isinstance(rows, tuple) else rows)
        flat = lambda tree: jax.tree.map(
            lambda a: a.reshape((self.n_configurations,) + a.shape[len(self.grid_shape) :]), tree
        )
        learner = per_run(self.learner, self.grid_shape, 1)
        scores = scores_by_run(flat(self.states), learner, rows, d, None if self.scaler is None else flat(self.scaler))
        return scores.reshape(self.grid_shape + (n,))

    def alerts(self, X, *, threshold: float | None = None, budget: float | None = None) -> np.ndarray:
        """Which rows of ``X`` are alerts, a boolean ``(n,)`` (a model of one configuration: take one of a grid
        with :meth:`at`): by ``threshold``, rows whose score is ``>= threshold``
        (:func:`jcsol.alerts.threshold_alerts`), or by ``budget``, a share in (0, 1) of the rows, the online
        budget of :func:`jcsol.alerts.budget_alerts` starting from :attr:`history`. Neither given: the model's
        own :attr:`budget` when it has one, else its :attr:`threshold`."""
        return self.alerts_of(self.scores(X), threshold=threshold, budget=budget)

    def alerts_of(self, scores, *, threshold: float | None = None, budget: float | None = None) -> np.ndarray:
        """:meth:`alerts` of scores already computed (``model.scores(X)``, rows in order)."""
        if self.grid_shape:
            raise ValueError(
                f"alerts decide for one configuration, and this model holds a grid of shape {self.grid_shape}: "
                "take one with model.at(index)"
            )
        if threshold is not None and budget is not None:
            raise ValueError("give a threshold or a budget, not both")
        scores = np.asarray(scores)
        if scores.ndim != 1:
            raise ValueError(f"scores must be one score per row, (n,), got shape {scores.shape}")
        if threshold is None and budget is None:
            threshold, budget = (None, self.budget) if self.budget is not None else (self.threshold, None)
        from .alerts import budget_alerts, threshold_alerts

        share = self._checked_budget(budget)
        if share is not None:
            return np.asarray(budget_alerts(scores, share, history=self.history), bool)
        return np.asarray(threshold_alerts(scores, self._checked_threshold(threshold)), bool)

    # -- the file ---------------------------------------------------------------------------------------
    def _meta(self) -> dict:
        from .live.files import describe

        scaler = None
        if self.scaler is not None:
            scaler = next(k for k, c in _SCALERS.items() if isinstance(self.scaler, c))
        encoder = self.encoder
        return {
            "kind": KIND,
            "format": FORMAT,
            "jcsol": _version(),
            "learner": describe(self.learner),
            "objective": describe(self.objective),
            "grid_shape": list(self.grid_shape),
            "n_features": self.n_features,
            "dtype": self.dtype.name,
            "scale": None if scaler is None else "online",
            "scaler": scaler,
            "threshold": self.threshold,
            "budget": self.budget,
            "rows": self.rows,
            "encoder": None if encoder is None else f"{type(encoder).__module__}.{type(encoder).__qualname__}",
            "history": self.history is not None,
            "provenance": self.provenance,
        }

    def _arrays(self) -> dict[str, np.ndarray]:
        arrays = {f"state/{i}": np.asarray(a) for i, a in enumerate(jax.tree.leaves(self.states))}
        if self.scaler is not None:
            arrays.update({f"scaler/{i}": np.asarray(a) for i, a in enumerate(jax.tree.leaves(self.scaler))})
        if self.encoder is not None:
            arrays.update({f"encoder/{k}": np.asarray(v) for k, v in self.encoder.state_dict().items()})
        if self.history is not None:
            arrays["history"] = np.asarray(self.history)
        return arrays

    def save(self, path: str | os.PathLike) -> None:
        """Writes the model to one ``.npz`` file at ``path``, atomically (the module's docstring has its
        contents); a path where no file can be written is refused before anything is written."""
        path = check_writable(path, "model file")
        meta, arrays = self._meta(), self._arrays()
        write_archive(path, meta, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike, learner: Any = None, objective: Any = None) -> Model:
        """The model saved at ``path``. ``learner`` and ``objective`` are rebuilt from the file when not given
        (:func:`jcsol.live.files.undescribe`), and checked against it when given.

        Raises:
            ModelFileError: the file is unreadable, corrupted (its SHA-256), of another kind or format, holds
                another learner or objective than those given, or one that cannot be rebuilt from it (a class
                outside jcsol, an option that is no literal: give it) — the message names the file and why.
        """
        path = _path(path)
        meta, arrays = _read(path)
        return _from_file(cls, path, meta, arrays, learner, objective)


def _path(path) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path, got {type(path).__name__}")
    return os.fsdecode(os.fspath(path))


def _read_meta(path: str) -> tuple[dict, Any]:
    """The metadata of the ``.npz`` file at ``path`` and the open archive (the caller closes it)."""
    return open_archive(path, "jcsol model file", ModelFileError)


def _read(path: str) -> tuple[dict, dict[str, np.ndarray]]:
    """``(meta, arrays)`` of the model file at ``path``, checked: readable, a model, of this format, intact."""
    meta, archive = _read_meta(path)
    try:
        if meta.get("kind") != KIND:
            if "selection" in meta:
                raise ModelFileError(
                    f"{path} is a live learner's file (jcsol.Live.save), not a model: open it with jcsol.load(path) "
                    "or jcsol.Live.load(path)"
                )
            raise ModelFileError(f"{path} is no jcsol model: its kind is {meta.get('kind')!r}, not {KIND!r}")
        if meta.get("format") != FORMAT:
            raise ModelFileError(
                f"{path} has model format {meta.get('format')!r} (written by jcsol {meta.get('jcsol')}); this jcsol "
                f"reads format {FORMAT}"
            )
        try:
            arrays = {k: archive[k] for k in archive.files if k != "meta"}
        except ARCHIVE_ERRORS as err:
            raise ModelFileError(f"{path} is not a readable jcsol model file ({err})") from None
    finally:
        archive.close()
    if meta.get("digest") != file_digest(meta, arrays):
        raise ModelFileError(f"{path} is corrupted: its fields and arrays do not match their SHA-256")
    return meta, arrays


def _from_file(cls, path: str, meta: dict, arrays: dict[str, np.ndarray], learner, objective) -> Model:
    from .live.files import describe, section, undescribe

    parts = {}
    for what, given in (("learner", learner), ("objective", objective)):
        if given is None:
            parts[what] = undescribe(meta.get(what), path, what, ModelFileError)
            continue
        try:
            mine = describe(given)
        except AttributeError:
            raise TypeError(f"{what} must be a jcsol {what}, got {type(given).__name__}") from None
        if meta.get(what) != mine:
            raise ModelFileError(f"{path} holds another {what}: saved {meta.get(what)}, given {mine}")
        parts[what] = given
    try:
        grid_shape = tuple(meta["grid_shape"])
        n_features, dtype = meta["n_features"], np.dtype(meta["dtype"])
        if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
            raise ValueError(f"n_features is {n_features!r}")
        if dtype not in (np.float32, np.float64):
            raise ValueError(f"dtype is {dtype}")
        template = _state_template(parts["learner"], grid_shape, n_features, dtype)
        states = _restored(template, arrays, "state", grid_shape, path)
        scaler = None
        if meta["scaler"] is not None:
            if meta["scaler"] not in _SCALERS:
                raise ValueError(f"scaler {meta['scaler']!r} is none of {sorted(_SCALERS)}")
            template = _scaler_template(meta["scaler"], n_features, dtype)
            scaler = _restored(template, arrays, "scaler", grid_shape, path)
        encoder = None
        if meta["encoder"] is not None:
            module, _, name = str(meta["encoder"]).rpartition(".")
            if not module.startswith("jcsol."):
                raise ModelFileError(f"{path} names an encoder outside jcsol: {meta['encoder']}")
            import importlib

            encoder = getattr(importlib.import_module(module), name).from_state_dict(section(arrays, "encoder"))
        if meta["history"] and "history" not in arrays:
            raise ValueError("its history is missing")
        return cls(
            learner=parts["learner"],
            objective=parts["objective"],
            grid_shape=grid_shape,
            states=states,
            scaler=scaler,
            encoder=encoder,
            rows=meta["rows"],
            n_features=n_features,
            dtype=dtype,
            threshold=meta["threshold"],
            budget=meta["budget"],
            history=arrays["history"] if meta["history"] else None,
            provenance=meta["provenance"],
        )
    except ModelFileError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, ImportError) as err:
        raise ModelFileError(
            f"{path} does not hold a model this jcsol can rebuild ({type(err).__name__}: {err})"
        ) from None


def _state_template(learner, grid_shape: tuple[int, ...], n_features: int, dtype):
    """The shapes and dtypes of one configuration's state (every point of a grid has its first point's)."""
    from .result import scalar_at

    point = scalar_at(learner, grid_shape, (0,) * len(grid_shape))
    return jax.eval_shape(lambda key: point.init(n_features, key, dtype), jax.random.key(0))


def _scaler_template(kind: str, n_features: int, dtype):
    """The shapes and dtypes of one configuration's statistics of ``kind`` (``"dense"`` or ``"sparse"``)."""
    return jax.eval_shape(lambda: scaling.init_scaler("online", n_features, dtype, kind == "sparse"))


def _restored(template, arrays: dict[str, np.ndarray], prefix: str, grid_shape: tuple[int, ...], path: str):
    """The tree of ``template``'s structure whose leaves are the arrays ``<prefix>/<i>``."""
    shapes, treedef = jax.tree.flatten(template)
    saved = [arrays.get(f"{prefix}/{i}") for i in range(len(shapes))]
    extra = [k for k in arrays if k.startswith(f"{prefix}/") and not k[len(prefix) + 1 :].isdigit()]
    count = sum(1 for k in arrays if k.startswith(f"{prefix}/"))
    if any(s is None for s in saved) or extra or count != len(shapes):
        raise ModelFileError(f"{path} holds {count} {prefix} arrays, where its learner's have {len(shapes)}")
    for s, want in zip(saved, shapes):
        assert s is not None
        if s.shape != grid_shape + want.shape or s.dtype != want.dtype:
            raise ModelFileError(
                f"{path} holds a {prefix} array of {s.dtype} {s.shape}, where its learner's is "
                f"{want.dtype} {grid_shape + want.shape}"
            )
    return jax.tree.unflatten(treedef, saved)


def load(path: str | os.PathLike, learner: Any = None, objective: Any = None):
    """A model's file (:meth:`Model.save`) as a :class:`Model`, or a live learner's (:meth:`jcsol.Live.save`) as a
    :class:`jcsol.Live`, told apart by the file's own metadata (a live learner's has its ``selection``, a model's
    its ``kind``). ``learner`` and ``objective`` are rebuilt from the file when not given, and checked against it
    when given.

    Raises:
        ModelFileError: the file is unreadable, neither a model nor a live learner, or refused as
            :meth:`Model.load` refuses it; a live learner's file is refused as :meth:`jcsol.Live.load` refuses it
            (:class:`jcsol.live.LiveFileError`).
    """
    path = _path(path)
    probe = path
    if not os.path.exists(path) and jax.process_count() > 1:  # a live learner saved over several processes
        from .checkpoint import share_path

        probe = share_path(path, jax.process_index(), jax.process_count())
    meta, archive = _read_meta(probe)
    archive.close()
    if "selection" in meta and meta.get("kind") is None:
        from .live import Live
        from .live.files import FROM_FILE

        return Live.load(path, FROM_FILE if learner is None else learner, objective)
    if meta.get("kind") == KIND:
        return Model.load(path, learner, objective)
    raise ModelFileError(
        f"{path} is neither a jcsol model nor a live learner's file (its metadata has no kind {KIND!r} and no "
        "selection)"
    )


def _version() -> str:
    from . import __version__

    return __version__
