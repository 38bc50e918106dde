"""The a9a stream and the ρ of an objective, shared by the learners' tests.

a9a: the Adult data of the LIBSVM collection, train and test concatenated (48,842 rows, 123 binary features),
read from the shared data folder of ``tests/conftest.py``; a test that asks for it is skipped where it is absent.
"""

from __future__ import annotations

import functools

import numpy as np
from conftest import shared_data

import jcsol


def a9a() -> tuple[np.ndarray, np.ndarray]:
    """a9a train + test, loaded once per process."""
    return _a9a(shared_data("a9a.gz"), shared_data("a9a.t.gz"))


@functools.cache
def _a9a(train, test):
    parts = [jcsol.datasets.load(path, n_features=123) for path in (train, test)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def objective_rho(y, objective) -> float:
    """The ρ the engine hands a learner over the labels ``y``: ``c_p/c_n`` for a Cost, ``T_n/T_p`` for the Sum."""
    if isinstance(objective, jcsol.Cost):
        return float(objective.c_p / objective.c_n)
    return float((y < 0).sum() / (y > 0).sum())
