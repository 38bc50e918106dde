"""Running jcsol's COG and ACOG against ``reference_cog``: random orders, one run sampled at every round, each
round's prediction read from the online curve, and one run compared with one reference trace.

``F32_TOL`` is the tolerance of float32 runs on german (the docstring of ``test_steps_cog.py`` derives it).
"""

from __future__ import annotations

import functools

import numpy as np
import reference_cog as ref

import jcsol

F32_TOL = 1e-4  # rtol, and atol relative to max|w_ref|, for float32 runs on german


def f32(v: float) -> float:
    return float(np.float32(v))


def orders_for(n: int, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(n) for _ in range(count)])


@functools.cache
def german():
    return jcsol.datasets.load("german")


def run_jcsol(learner, X, y, orders, objective, dtype=None):
    res = jcsol.run(learner, X, y, perms=orders, objective=objective, curve_points=orders.shape[1], dtype=dtype)
    np.testing.assert_array_equal(res.curve_t, np.arange(1, orders.shape[1] + 1))
    return res


def per_round_predictions(res, y, orders) -> np.ndarray:
    """``(grid_shape + (P, L))`` predictions in ``{-1, +1}``, checking each round's label against ``y[order]``."""
    curve = np.asarray(res.curve)
    cells = np.diff(curve, axis=-2, prepend=np.zeros_like(curve[..., :1, :]))
    assert np.all((cells == 0) | (cells == 1)), "a round is not exactly one cell"
    assert np.all(cells.sum(-1) == 1), "a round is not exactly one cell"
    cell = cells.argmax(-1)
    labels = np.where(cell <= 1, 1, -1)  # tp=0, fn=1: a positive example
    np.testing.assert_array_equal(
        labels,
        np.broadcast_to(y[orders], labels.shape),
        err_msg="the engine did not process the rows in the given order",
    )
    np.testing.assert_array_equal(curve[..., -1, :], res.counts)
    return np.where((cell == 0) | (cell == 2), 1, -1)


def final_state(res):
    s = res.states
    if hasattr(s, "mu"):
        return np.asarray(s.mu), np.asarray(s.sigma)
    return np.asarray(s.w), None


def first_difference(a, b) -> int | None:
    idx = np.flatnonzero(np.asarray(a) != np.asarray(b))
    return int(idx[0]) if idx.size else None


def assert_same_run(pred, counts, w, sigma, tr: ref.Trace, kind: str, tol: float, what: str):
    """One jcsol run (its predictions, counts and final state) against one reference trace."""
    t = first_difference(pred, tr.predictions)
    assert t is None, (
        f"{what}: prediction differs first at round {t} (jcsol {int(pred[t]):+d}, reference "
        f"{int(tr.predictions[t]):+d}); reference score {float(tr.scores[t])!r}; {_closest_call(tr, kind, t)}"
    )
    np.testing.assert_array_equal(counts, ref.confusion(tr.labels, tr.predictions), err_msg=what)
    scale = max(1.0, float(np.max(np.abs(tr.w))))
    np.testing.assert_allclose(w, tr.w, rtol=tol, atol=tol * scale, err_msg=f"{what}: final weights")
    if tr.sigma is not None:
        np.testing.assert_allclose(
            sigma, tr.sigma, rtol=tol, atol=tol * float(np.max(np.abs(tr.sigma))), err_msg=f"{what}: final Σ"
        )


def _closest_call(tr: ref.Trace, kind: str, upto: int) -> str:
    """The earlier round whose update decision was closest to the boundary (a float32 near-tie suspect)."""
    if upto == 0:
        return "no earlier round"
    arg = tr.hinge_argument(kind)[:upto]
    i = int(np.argmin(np.abs(arg)))
    return (
        f"closest earlier update decision: round {i}, loss argument (I: ρ−yf, II: 1−yf) {float(arg[i])!r}, "
        f"margin y·f {float(tr.labels[i] * tr.scores[i])!r}"
    )


def learner_of(name: str, **hp):
    return jcsol.by_name(name, **hp)


def hand_stream():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    y = np.array([1, -1, 1, 1])
    rho = lambda labels: np.where(labels > 0, 0.2, 1.0)  # noqa: E731
    return X, y, np.arange(4), rho
