"""Synthetic streams with the shapes and class ratios of datasets that are not available offline.

They are for scale and numerical tests (memory, time, float32 against float64), not for accuracy claims.
"""

from __future__ import annotations

import numpy as np


def linear_stream(
    n_rows: int, n_features: int, positive_fraction: float, *, noise: float = 1.0, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian rows labelled by a noisy linear rule, thresholded to the given share of positives.

    Rows are L2-normalised float32; labels int8 ±1 with ``round(positive_fraction · n_rows)`` positives.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows, n_features)) @ (
        np.eye(n_features) + 0.3 * rng.standard_normal((n_features, n_features))
    )
    score = X @ rng.standard_normal(n_features) + noise * rng.standard_normal(n_rows)
    y = np.where(score >= np.quantile(score, 1.0 - positive_fraction), 1, -1).astype(np.int8)
    return _normalised(X), y


def covtype_like(n_rows: int = 581_012, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A stream shaped like covtype.binary: 54 features — 10 correlated continuous ones, a one-hot of 4
    (wilderness area) and a one-hot of 40 (soil type) — and balanced classes (1:1), L2-normalised."""
    rng = np.random.default_rng(seed)
    continuous = rng.standard_normal((n_rows, 10)) @ (np.eye(10) + 0.5 * rng.standard_normal((10, 10)))
    area = rng.integers(0, 4, n_rows)
    soil = np.minimum(rng.geometric(0.12, n_rows) - 1, 39)
    X = np.zeros((n_rows, 54))
    X[:, :10] = continuous
    X[np.arange(n_rows), 10 + area] = 1.0
    X[np.arange(n_rows), 14 + soil] = 1.0
    score = (
        continuous @ rng.standard_normal(10)
        + rng.standard_normal(4)[area]
        + rng.standard_normal(40)[soil]
        + 1.5 * rng.standard_normal(n_rows)
    )
    y = np.where(score >= np.median(score), 1, -1).astype(np.int8)
    return _normalised(X), y


def _normalised(X: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return (X / np.where(norms > 0, norms, 1.0)).astype(np.float32)
