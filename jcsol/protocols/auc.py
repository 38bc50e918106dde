"""The KOIL evaluation protocol (J. Hu, *Kernelized Online Imbalanced Learning*, thesis, The Chinese
University of Hong Kong, §3.5; J. Hu, H. Yang, I. King, M. R. Lyu, A. M.-C. So, *Kernelized Online Imbalanced
Learning with Fixed Budgets*, AAAI 2015): 5-fold cross-validation repeated 4 times (20 runs, from
:func:`jcsol.protocols.cv_splits`); each run makes one online pass over its training folds, and the AUC of its
final model's scores on its test fold is reported.

:func:`protocol_auc` runs it as one compiled computation: one :func:`jcsol.run` over the 20 training streams
(times the learner's hyperparameter grid, e.g. σ × C), then every run's final model scores its own test fold
(vmapped, in batches of runs) and :func:`jcsol.metrics.auc` is taken per run.
"""

from __future__ import annotations

import math
import time
from typing import Any, NamedTuple

import jax
import numpy as np

from ..metrics import auc
from ..scoring import grid_scores, per_run, scoring_rows
from ..xla_cpu import compile_options
from .cost_sensitive import protocol_run
from .splits import Splits

__all__ = ["ProtocolResult", "fold_auc", "protocol_auc"]


class ProtocolResult(NamedTuple):
    """Outcome of :func:`protocol_auc`."""

    auc: np.ndarray  # grid_shape + (P,) test AUC of every run
    result: Any  # the jcsol.Result of the training runs (online counts, states, timings)
    time_score: float  # seconds spent scoring the test folds and computing the AUCs


def _score_runs(learner, states, rows, test, mask, y, d: int, batch: int):
    """AUC of each flattened run ``r`` on its own test fold, runs taken ``batch`` at a time."""

    def one(args):
        run_learner, state, fold, ok = args
        held_out = jax.tree.map(lambda a: a[fold], rows)
        s = grid_scores(*jax.tree.map(lambda a: a[None], (state, run_learner)), held_out, d)[:, 0]
        return auc(s, y[fold], ok)

    return jax.lax.map(one, (learner, states, test, mask), batch_size=batch)


_score_runs_jit = jax.jit(_score_runs, static_argnames=("d", "batch"), compiler_options=compile_options())


def protocol_auc(
    learner, X, y, splits: Splits, *, key: int | jax.Array = 0, dtype=None, batch: int = 8, **run_kwargs
) -> ProtocolResult:
    """Trains ``learner`` (a grid, possibly) on every training stream of ``splits`` in one :func:`jcsol.run`,
    then scores each run's final model on its test fold: the test AUCs, shape ``grid_shape + (P,)``.

    ``batch`` runs are scored at a time (memory: ``batch × 256 × support vectors × d`` kernel entries).
    """
    if not isinstance(splits, Splits):
        raise TypeError(f"splits must come from jcsol.protocols.cv_splits, got {type(splits).__name__}")
    y = np.asarray(y)
    res = protocol_run(learner, X, y, perms=splits.train, key=key, dtype=dtype, **run_kwargs)
    start = time.perf_counter()
    values = fold_auc(res, X, y, splits, dtype=dtype, batch=batch)
    return ProtocolResult(auc=values, result=res, time_score=time.perf_counter() - start)


def fold_auc(result, X, y, splits: Splits, *, scorer=None, dtype=None, batch: int = 8) -> np.ndarray:
    """The AUC of each final model of ``result`` (trained on ``splits.train``) on its own test fold, shape
    ``grid_shape + (P,)``.

    ``scorer`` (default: the trained learner) scores the final states in place of the trained learner: the same
    class and hyperparameters, another static option of how it scores (e.g. KOIL-MKL's ``combine``), so that
    one training gives the AUCs of several readings.

    ``X`` is dense, :class:`jcsol.SparseRows` or a SciPy sparse matrix, checked as :meth:`jcsol.Result.score`
    checks held-out rows; sparse rows are scored as they are (O(nnz) per row under a linear learner), never
    densified on the host (:func:`jcsol.scoring.grid_scores`).
    """
    learner = result.learner
    if scorer is not None:
        if type(scorer) is not type(learner) or not _same_structure(scorer.replace(**learner.options()), learner):
            raise ValueError(
                f"fold_auc: the scorer must be the trained {type(learner).__name__} with other static options, "
                f"got {type(scorer).__name__}"
            )
        learner = jax.tree.unflatten(jax.tree.structure(scorer), jax.tree.leaves(learner))
    y = np.asarray(y)
    grid_shape, P = result.grid_shape, result.n_perms
    float_dtype = np.dtype(dtype or np.float32)
    rows, d = scoring_rows(X, float_dtype, result.n_features)
    runs = per_run(learner, grid_shape, P, float_dtype)
    states = jax.tree.map(lambda a: a.reshape((result.n_runs,) + a.shape[len(grid_shape) + 1 :]), result.states)
    n_grid = math.prod(grid_shape)
    tests, masks = np.tile(splits.test, (n_grid, 1)), np.tile(splits.test_mask, (n_grid, 1))
    values = _score_runs_jit(runs, states, rows, tests, masks, y, d=d, batch=batch)
    return np.asarray(jax.block_until_ready(values)).reshape(grid_shape + (P,))


def _same_structure(a, b) -> bool:
    return bool(jax.tree.structure(a) == jax.tree.structure(b))  # type: ignore[operator]  # PyTreeDef has ==, untyped
