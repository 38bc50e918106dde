"""Stratified k-fold cross-validation, repeated: the one splitter of :func:`jcsol.protocols.cross_validate` and of
the KOIL AUC protocol (:func:`jcsol.protocols.protocol_auc`).

Within a repetition, the positives and then the negatives, each shuffled, are dealt round-robin to the folds, so
every fold holds ``⌊n/k⌋`` or ``⌈n/k⌉`` rows and ``⌊n_c/k⌋`` or ``⌈n_c/k⌉`` rows of each class ``c`` — the fold
sizes per class of scikit-learn's ``StratifiedKFold``. Each run trains on the other folds in a random order and
tests on its fold. :func:`jcsol.run` needs one stream length, and training sets differ by at most one row, so
every training stream is **trimmed** to the shortest: a run whose training set is one row longer leaves out the
last row of its random order (``Splits.dropped``). Test folds are **padded** to the longest with masked
entries (``Splits.test_mask``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..stream import check_flags, check_labels

__all__ = ["Splits", "cv_splits"]


class Splits(NamedTuple):
    """The runs of a repeated k-fold cross-validation: ``P = folds × repeats`` runs, repetition-major (run ``p``
    tests fold ``p % folds`` of repetition ``p // folds``)."""

    train: np.ndarray  # (P, L) int32 training streams (row indices, in online order), trimmed to one length
    test: np.ndarray  # (P, M) int32 test rows (ascending), padded with row 0
    test_mask: np.ndarray  # (P, M) bool, False on padding
    dropped: np.ndarray  # (P,) training rows left out at the end of each stream by the trimming
    fold_of: np.ndarray  # (repeats, n) the fold of every split row in each repetition


def _count(value, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    return int(value)


def cv_splits(y, folds: int = 5, repeats: int = 1, seed=0, *, subset=None, stratify: bool = True) -> Splits:
    """Stratified ``folds``-fold cross-validation repeated ``repeats`` times (the module's docstring says how).

    Args:
        y: labels (``> 0`` positive) of the whole data set.
        folds, repeats: e.g. 5 × 4 = 20 runs in the KOIL thesis, 5 × 1 for the ACOG paper's Table III.
        seed: seed of the folds and of the training orders (an int, or a ``numpy.random.Generator``).
        subset: row indices to split (default: all rows), e.g. one training stream for an inner
            cross-validation; the returned indices are rows of the whole data set.
        stratify: deal each class to the folds separately (default); ``False`` deals all rows together.

    Raises:
        ValueError: ``folds < 2``, ``repeats < 1``, fewer rows than folds, a negative ``seed``, or labels that
            :func:`jcsol.stream.check_labels` refuses (text, booleans, values other than ±1 or 0/1).
    """
    folds = _count(folds, "folds", 2)
    repeats = _count(repeats, "repeats", 1)
    check_flags(stratify=stratify)
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one label per row, got shape {y.shape}")
    y = check_labels(y)  # the one label rule of every stream: text, booleans or other values refused
    rows = np.arange(len(y)) if subset is None else np.asarray(subset, np.int64).ravel()
    n = len(rows)
    if n < folds:
        raise ValueError(f"{folds} folds need at least {folds} rows, got {n}")
    if (
        isinstance(seed, bool)
        or not isinstance(seed, (int, np.integer, np.random.Generator))
        or (not isinstance(seed, np.random.Generator) and seed < 0)
    ):
        raise ValueError(f"seed must be an int >= 0 or a numpy.random.Generator, got {seed!r}")
    rng = np.random.default_rng(seed)
    positive = y[rows] > 0
    fold_of = np.empty((repeats, n), np.int32)
    train, test = [], []
    for r in range(repeats):
        if stratify:
            seq = np.concatenate(
                [rng.permutation(np.flatnonzero(positive)), rng.permutation(np.flatnonzero(~positive))]
            )
        else:
            seq = rng.permutation(n)
        fold_of[r, seq] = np.arange(n) % folds
        for k in range(folds):
            train.append(rows[rng.permutation(np.flatnonzero(fold_of[r] != k))])
            test.append(rows[fold_of[r] == k])
    length = min(len(t) for t in train)
    width = max(len(t) for t in test)
    test_arr = np.zeros((len(test), width), np.int32)
    mask = np.zeros((len(test), width), bool)
    for p, t in enumerate(test):
        test_arr[p, : len(t)] = t
        mask[p, : len(t)] = True
    return Splits(
        train=np.stack([t[:length] for t in train]).astype(np.int32),
        test=test_arr,
        test_mask=mask,
        dropped=np.array([len(t) - length for t in train]),
        fold_of=fold_of,
    )
