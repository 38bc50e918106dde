"""AUC of held-out scores and the KOIL evaluation protocol (J. Hu et al., *Kernelized Online Imbalanced
Learning*, the KOIL thesis, §3.5).

* :func:`auc` — area under the ROC curve of scores against ±1 labels, ties counted ½, with an optional mask
  (padded entries ignored); a JAX function, so it jits and vmaps over runs. :func:`auc_numpy` is the same in
  NumPy.
* :func:`cv_splits` — 5-fold cross-validation repeated 4 times (20 runs): each run's training stream (its four
  training folds in a random order) and its test fold. Folds are stratified (each fold holds ⌊T±/5⌋ or
  ⌈T±/5⌉ examples of each class). The training streams of a repetition differ in length by at most 2
  examples; :func:`jcsol.run` needs one length, so every stream is **trimmed** to the shortest: the last
  ``L_p − min_p L_p`` rounds of a (randomly ordered) stream are dropped, i.e. at most 2 random training
  examples per run (recorded in ``Splits.dropped``). Test folds are **padded** to the longest with masked
  entries, so the AUC of every test fold is exact.
* :func:`protocol_auc` — the whole protocol as one compiled computation: one :func:`jcsol.run` over the 20
  training streams (times the learner's hyperparameter grid, e.g. σ × C), then every run's final model scores
  its own test fold (vmapped, in batches of runs) and :func:`auc` is taken per run.
* :func:`load_koil` reads the KOIL authors' data files (TAB-separated ``label idx:val`` rows, binarised,
  [0,1]-scaled; ``jcsol.datasets.load`` parses them, no L2 normalisation here) and :func:`koil_synthetic`
  generates Syn1–Syn4 (the KOIL thesis, §3.5).
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

# --------------------------------------------------------------------------------------------------------------
# AUC
# --------------------------------------------------------------------------------------------------------------


def auc(scores: jax.Array, y: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """AUC of ``scores`` for labels ``y`` (``> 0`` positive), ties ½; entries where ``mask`` is False are ignored.

    ``P(s⁺ > s⁻) + ½ P(s⁺ = s⁻)`` over all (positive, negative) pairs, from one sort of the negatives' scores
    (``O(n log n)``), counted in integers. Scores must be finite. NaN when a class is absent.
    """
    scores = jnp.asarray(scores)
    y = jnp.asarray(y)
    mask = jnp.ones(scores.shape, bool) if mask is None else jnp.asarray(mask, bool)
    pos = (y > 0) & mask
    neg = (y <= 0) & mask
    negatives = jnp.sort(jnp.where(neg, scores, jnp.inf))
    below = jnp.searchsorted(negatives, scores, side="left")
    upto = jnp.searchsorted(negatives, scores, side="right")
    twice = jnp.sum(jnp.where(pos, below + upto, 0))              # 2·(#less) + (#equal)
    pairs = jnp.sum(pos).astype(jnp.float32) * jnp.sum(neg).astype(jnp.float32)
    return twice.astype(jnp.float32) / (2.0 * pairs)


def auc_numpy(scores, y) -> float:
    """AUC with ties ½ in float64 NumPy, from average ranks (Mann–Whitney)."""
    scores = np.asarray(scores, np.float64)
    y = np.asarray(y)
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    ranks = np.empty(len(scores), np.float64)
    start = 0
    while start < len(scores):
        stop = start
        while stop + 1 < len(scores) and sorted_scores[stop + 1] == sorted_scores[start]:
            stop += 1
        ranks[order[start:stop + 1]] = 0.5 * (start + stop) + 1.0
        start = stop + 1
    n_pos = int(np.sum(y > 0))
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    return float((ranks[y > 0].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


# --------------------------------------------------------------------------------------------------------------
# cross-validation splits
# --------------------------------------------------------------------------------------------------------------


class Splits(NamedTuple):
    """The runs of a repeated k-fold protocol (``P = folds × repeats`` runs, repetition-major)."""

    train: np.ndarray      # (P, L) int32 training streams (row indices, in online order), trimmed to one length
    test: np.ndarray       # (P, M) int32 test rows, padded with row 0
    test_mask: np.ndarray  # (P, M) bool, False on padding
    dropped: np.ndarray    # (P,) int training examples dropped from the end of each stream by the trimming


def cv_splits(y, n_folds: int = 5, n_repeats: int = 4, seed: int = 0, subset=None) -> Splits:
    """Stratified ``n_folds``-fold cross-validation repeated ``n_repeats`` times (the KOIL thesis: 5 × 4 = 20 runs).

    Args:
        y: labels (``> 0`` positive) of the whole data set.
        seed: seed of the folds and of the training orders.
        subset: row indices to split (default: all rows), e.g. one training stream for an inner
            cross-validation; the returned indices are rows of the whole data set.
    """
    y = np.asarray(y)
    rows = np.arange(len(y)) if subset is None else np.asarray(subset)
    rng = np.random.default_rng(seed)
    train, test = [], []
    for _ in range(n_repeats):
        fold_of = np.empty(len(rows), np.int64)
        for cls in (True, False):
            members = np.flatnonzero((y[rows] > 0) == cls)
            members = members[rng.permutation(len(members))]
            for f, part in enumerate(np.array_split(members, n_folds)):
                fold_of[part] = f
        for f in range(n_folds):
            tr = rows[fold_of != f]
            train.append(tr[rng.permutation(len(tr))])
            test.append(rows[fold_of == f])
    length = min(len(t) for t in train)
    width = max(len(t) for t in test)
    if length == 0 or min(len(t) for t in test) == 0:
        raise ValueError(f"too few examples for {n_folds} folds: {len(rows)} rows")
    test_arr = np.zeros((len(test), width), np.int32)
    mask = np.zeros((len(test), width), bool)
    for p, t in enumerate(test):
        test_arr[p, :len(t)] = t
        mask[p, :len(t)] = True
    return Splits(train=np.stack([t[:length] for t in train]).astype(np.int32), test=test_arr, test_mask=mask,
                  dropped=np.array([len(t) - length for t in train]))


# --------------------------------------------------------------------------------------------------------------
# the protocol
# --------------------------------------------------------------------------------------------------------------


class ProtocolResult(NamedTuple):
    auc: np.ndarray   # grid_shape + (P,) test AUC of every run
    result: Any       # the jcsol.Result of the training runs (online counts, states, timings)
    time_score: float  # seconds spent scoring the test folds and computing the AUCs


def _score_runs(learner, states, X, test, mask, y, batch: int):
    """AUC of each flattened run ``r`` on its own test fold, runs taken ``batch`` at a time."""

    def one(args):
        leaf_learner, state, rows, ok = args
        s = leaf_learner.score(state, X[rows])
        return auc(s, y[rows], ok)

    return jax.lax.map(one, (learner, states, test, mask), batch_size=batch)


_score_runs_jit = jax.jit(_score_runs, static_argnames=("batch",))


def protocol_auc(learner, X, y, splits: Splits, *, key: int | jax.Array = 0, dtype=None, batch: int = 8,
                 **run_kwargs) -> ProtocolResult:
    """Trains ``learner`` (a grid, possibly) on every training stream of ``splits`` in one :func:`jcsol.run`,
    then scores each run's final model on its test fold: the test AUCs, shape ``grid_shape + (P,)``.

    ``batch`` runs are scored at a time (memory: ``batch × 256 × support vectors × d`` kernel entries).
    """
    from .engine import run

    X = np.asarray(X)
    y = np.asarray(y)
    res = run(learner, X, y, perms=splits.train, key=key, dtype=dtype, **run_kwargs)
    start = time.perf_counter()
    grid_shape, P = res.grid_shape, res.n_perms
    n_grid = math.prod(grid_shape)
    float_dtype = np.dtype(dtype or np.float32)
    leaves, treedef = jax.tree.flatten(res.learner)
    per_run = jax.tree.unflatten(treedef, [
        np.repeat(np.broadcast_to(np.asarray(l, float_dtype), grid_shape).reshape(n_grid), P) for l in leaves])
    states = jax.tree.map(lambda a: a.reshape((n_grid * P,) + a.shape[len(grid_shape) + 1:]), res.states)
    tests = np.tile(splits.test, (n_grid, 1))
    masks = np.tile(splits.test_mask, (n_grid, 1))
    Xd = jnp.asarray(X, float_dtype)
    values = _score_runs_jit(per_run, states, Xd, jnp.asarray(tests), jnp.asarray(masks), jnp.asarray(y),
                             batch=batch)
    values = np.asarray(jax.block_until_ready(values)).reshape(grid_shape + (P,))
    return ProtocolResult(auc=values, result=res, time_score=time.perf_counter() - start)


# --------------------------------------------------------------------------------------------------------------
# data of the KOIL experiments
# --------------------------------------------------------------------------------------------------------------

def minmax_scale(X: np.ndarray) -> np.ndarray:
    """Each feature mapped to [0, 1] (a constant feature becomes 0)."""
    X = np.asarray(X, np.float64)
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return (X - lo) / span


def load_koil(name: str, data_dir: str | os.PathLike | None = None, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """A data set of the KOIL authors' repository (``<data_dir>/<name>`` or ``<name>.gz``) as ``(X, y)``.

    The files are TAB-separated ``label idx:val …`` rows with labels ±1 (+1 the minority class), already
    [0,1]-scaled by the authors (except ``poker``, kept as they ship it). No L2 normalisation (the KOIL
    experiments use the scaled features with a Gaussian kernel).
    """
    from .datasets import data_dir as papers_data, load

    base = Path(data_dir) if data_dir is not None else papers_data() / "koil"
    for candidate in (base / name, base / f"{name}.gz"):
        if candidate.exists():
            X, y = load(candidate, normalize=False, dtype=dtype)
            return np.asarray(X), np.asarray(y)
    raise FileNotFoundError(f"no KOIL data set {name!r} in {base}")


SYNTHETIC = {"Syn1": (200, 800), "Syn2": (100, 1000), "Syn3": (100, 5000), "Syn4": (100, 10000)}
SYN_OFFSET = 1.0 / 3.0


def koil_synthetic(n_pos: int, n_neg: int, seed: int = 0, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """The 2-D synthetic data of the KOIL thesis, §3.5 (Fig. 1.1), min-max scaled to [0, 1] like the authors'
    files.

    Positives ~ N((½, ½), 0.1² I); negatives ~ an equal mixture of four Gaussians of the same deviation around
    ``(½, ½ ± ⅓)`` and ``(½ ± ⅓, ½)``. The text copy of the thesis garbles the four means ("(%, %), (5.%), (3.2),
    (3,3)"); this reconstruction rests on (1) the layout of the authors' ``s4`` file (a "+" of four negative
    clusters around the positive one, centres about 3.4 deviations away), (2) the legible "5" (⅚ = ½ + ⅓) and
    (3) the quoted Bayes error "about 4.5%": 4.7% at Syn2's 1:10 ratio (7.1% at 1:4, 1.6% at 1:50). The
    Bayes-optimal AUC of this model is about 0.97. (An offset of 3/8 — Bayes error 4.6% at 1:4, Bayes AUC 0.986 —
    was tried first; KOIL then scored 0.02–0.04 above the thesis's Table 3.2.) Rows come in a random order.
    Syn1–Syn4 are ``koil_synthetic(*SYNTHETIC["SynK"])``.
    """
    rng = np.random.default_rng(seed)
    centres = np.array([[0.5, 0.5 - SYN_OFFSET], [0.5, 0.5 + SYN_OFFSET],
                        [0.5 - SYN_OFFSET, 0.5], [0.5 + SYN_OFFSET, 0.5]])
    pos = rng.normal(0.5, 0.1, (n_pos, 2))
    neg = centres[rng.integers(0, 4, n_neg)] + rng.normal(0.0, 0.1, (n_neg, 2))
    X = np.concatenate([pos, neg])
    y = np.concatenate([np.ones(n_pos, np.int8), -np.ones(n_neg, np.int8)])
    order = rng.permutation(len(y))
    return minmax_scale(X[order]).astype(dtype), y[order]


__all__ = ["auc", "auc_numpy", "Splits", "cv_splits", "ProtocolResult", "protocol_auc", "load_koil",
           "koil_synthetic", "SYNTHETIC", "minmax_scale"]
