"""The measures of online binary classification, in one place: their names, which way is better, and how each
is computed.

* From confusion counts (NumPy): the weighted *sum* of sensitivity and specificity, the *cost*, sensitivity,
  specificity, accuracy, balanced accuracy (J. Wang, P. Zhao, S. C. H. Hoi, *Cost-Sensitive Online
  Classification*, IEEE ICDM 2012, eqs. (1) and (2)). Counts are kept in the order ``(tp, fn, fp, tn)`` along
  the last axis: ``fn = M_p`` (missed positives), ``fp = M_n`` (false alarms). Each function applies equally to
  a run's final counts and to its online curve (counts at sampled rounds).
* From scores: :func:`auc` (JAX, so it jits and vmaps over runs) and its NumPy twin :func:`auc_numpy`;
  :func:`cvar` of margins.

:data:`MEASURES` names the measures a :class:`jcsol.Result` gives (``example_cost`` is the example costs summed
over the mistakes, kept by the run itself); :data:`HIGHER_IS_BETTER` says which way each is better, and
:func:`check_measure` is the one check of a measure's name.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

TP, FN, FP, TN = range(4)
MEASURES = ("sum", "sensitivity", "specificity", "accuracy", "balanced_accuracy", "cost", "example_cost")
HIGHER_IS_BETTER = {
    "sum": True,
    "sensitivity": True,
    "specificity": True,
    "accuracy": True,
    "balanced_accuracy": True,
    "cost": False,
    "example_cost": False,
}
RATES = ("sum", "sensitivity", "specificity", "accuracy", "balanced_accuracy")  # fractions, printed as %


def check_measure(name) -> str:
    """``name`` when it is one of :data:`MEASURES`; otherwise a ``ValueError`` listing the valid names."""
    if not isinstance(name, str) or name not in HIGHER_IS_BETTER:
        raise ValueError(f"unknown measure {name!r}; choose from {', '.join(MEASURES)}")
    return name


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num, den = np.asarray(num, np.float64), np.asarray(den, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def sensitivity(counts: np.ndarray) -> np.ndarray:
    """``(T_p − M_p)/T_p``; NaN where the stream has no positive example.

    Counts are ``(…, 4)`` arrays in the order ``TP, FN, FP, TN``:

    >>> from jcsol import metrics
    >>> float(metrics.sensitivity([8, 2, 30, 60])), float(metrics.specificity([8, 2, 30, 60]))
    (0.8, 0.6666666666666666)
    >>> float(metrics.weighted_sum([8, 2, 30, 60], alpha_p=0.5))
    0.7333333333333334
    """
    c = np.asarray(counts)
    return _ratio(c[..., TP], c[..., TP] + c[..., FN])


def specificity(counts: np.ndarray) -> np.ndarray:
    """``(T_n − M_n)/T_n``; NaN where the stream has no negative example."""
    c = np.asarray(counts)
    return _ratio(c[..., TN], c[..., TN] + c[..., FP])


def accuracy(counts: np.ndarray) -> np.ndarray:
    """``(T − M_p − M_n)/T``."""
    c = np.asarray(counts)
    return _ratio(c[..., TP] + c[..., TN], c.sum(-1))


def weighted_sum(counts: np.ndarray, alpha_p=0.5) -> np.ndarray:
    """*sum* ``= α_p·sensitivity + α_n·specificity``, ``α_n = 1 − α_p``."""
    alpha_p = np.asarray(alpha_p, np.float64)
    return alpha_p * sensitivity(counts) + (1.0 - alpha_p) * specificity(counts)


def balanced_accuracy(counts: np.ndarray) -> np.ndarray:
    """*sum* with ``α_p = α_n = ½``."""
    return weighted_sum(counts, 0.5)


def weighted_cost(counts: np.ndarray, c_p=0.9) -> np.ndarray:
    """*cost* ``= c_p·M_p + c_n·M_n``, ``c_n = 1 − c_p``, unscaled (the papers print it in various scalings)."""
    c = np.asarray(counts, np.float64)
    c_p = np.asarray(c_p, np.float64)
    return c_p * c[..., FN] + (1.0 - c_p) * c[..., FP]


def cvar(values: np.ndarray, epsilon: float, axis: int = -1) -> np.ndarray:
    """CVaR_ε: the mean of the lowest ``ceil(ε·n)`` values along ``axis`` (Ali, Collins-Thompson, *Robust
    Cost-Sensitive Confidence-Weighted Classification*, Table III, applies it to margins ``y·f``; higher is
    better)."""
    values = np.sort(np.asarray(values, np.float64), axis=axis)
    if not 0 < epsilon <= 1:
        raise ValueError(f"epsilon must be in (0, 1], got {epsilon}")
    k = max(1, int(np.ceil(epsilon * values.shape[axis])))
    return np.take(values, np.arange(k), axis=axis).mean(axis=axis)


def measure(name: str, counts: np.ndarray, alpha_p=0.5, c_p=0.9) -> np.ndarray:
    """The measure ``name`` of ``counts``: any of :data:`MEASURES` but ``example_cost``, which counts cannot give."""
    check_measure(name)
    if name == "example_cost":
        raise ValueError(
            "example_cost is not a function of the counts: it is the example costs summed over the "
            "mistakes, Result.mistake_cost"
        )
    if name == "sum":
        return weighted_sum(counts, alpha_p)
    if name == "cost":
        return weighted_cost(counts, c_p)
    functions = {
        "sensitivity": sensitivity,
        "specificity": specificity,
        "accuracy": accuracy,
        "balanced_accuracy": balanced_accuracy,
    }
    return functions[name](counts)


def auc(scores: jax.Array, y: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """AUC of ``scores`` for labels ``y`` (``> 0`` positive), ties ½; entries where ``mask`` is False are ignored.

    ``P(s⁺ > s⁻) + ½ P(s⁺ = s⁻)`` over all (positive, negative) pairs, from one sort of the negatives' scores
    (``O(n log n)``), counted in integers. A JAX function: it jits and vmaps over runs. Infinite scores are
    ordered as any others; NaN when a class is absent or a counted score is NaN (a diverged model's). The
    scores are sorted as integers of the same order (:func:`_order_keys`): on a CPU, XLA sorts 11 rows of
    10,000 float32 in about 20 ms, and as many int32 in about 3.

    The count of pairs, twice the AUC's numerator, passes 2**31 from about 33,000 positives and as many
    negatives; it is summed exactly in two 32-bit integers (:func:`_sum_base_2_16`), with or without
    ``jax_enable_x64``. The AUC is the correctly rounded float32 of the exact count up to about 1.5 million
    events, and within one unit of its last place up to about 16 million.
    """
    scores = jnp.asarray(scores)
    y = jnp.asarray(y)
    mask = jnp.ones(scores.shape, bool) if mask is None else jnp.asarray(mask, bool)
    pos = (y > 0) & mask
    neg = (y <= 0) & mask
    n_neg = jnp.sum(neg)
    keys = _order_keys(scores)
    last = jnp.iinfo(keys.dtype).max
    negatives = jnp.sort(jnp.where(neg, keys, last))  # the other entries after the negatives' scores
    below = jnp.minimum(jnp.searchsorted(negatives, keys, side="left"), n_neg)  # (NaN or +inf: not the
    upto = jnp.minimum(jnp.searchsorted(negatives, keys, side="right"), n_neg)  # other entries)
    high, low = _sum_base_2_16(jnp.where(pos, below + upto, 0))  # 2·(#less) + (#equal)
    twice = high.astype(jnp.float32) * 65536.0 + low.astype(jnp.float32)  # one rounding: the product is exact
    pairs = jnp.sum(pos).astype(jnp.float32) * n_neg.astype(jnp.float32)
    return jnp.where(jnp.any((pos | neg) & jnp.isnan(scores)), jnp.nan, twice / (2.0 * pairs))


def _order_keys(scores: jax.Array) -> jax.Array:
    """Signed integers of the floats' width, in the floats' order (``-0.0`` and ``0.0`` one key): a float's bits
    read as an integer order the non-negative floats, and the negative ones once their magnitude bits are
    flipped."""
    scores = jnp.where(scores == 0, jnp.zeros_like(scores), scores)
    ints = {2: jnp.int16, 4: jnp.int32, 8: jnp.int64}[scores.dtype.itemsize]
    bits = jax.lax.bitcast_convert_type(scores, ints)
    return bits ^ ((bits >> (8 * scores.dtype.itemsize - 1)) & jnp.iinfo(ints).max)


def _sum_base_2_16(counts: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(high, low)``, ``low < 2**16``, with ``high · 2**16 + low`` the exact sum of non-negative int32
    ``counts``: each count is split in two 16-bit digits and the pairs are added with their carry, so neither
    sum overflows below a total of 2**47."""
    counts = counts.astype(jnp.int32)

    def add(a, b):
        low = a[1] + b[1]
        return a[0] + b[0] + (low >> 16), low & 0xFFFF

    zero = jnp.zeros((), jnp.int32)
    return jax.lax.reduce((counts >> 16, counts & 0xFFFF), (zero, zero), add, tuple(range(counts.ndim)))


def auc_numpy(scores, y) -> float:
    """:func:`auc` in float64 NumPy, from average ranks (Mann–Whitney), without a mask; ties count ½ (NaN where a
    class is absent or a score is NaN).

    >>> from jcsol import metrics
    >>> metrics.auc_numpy([0.9, 0.4, 0.4, 0.1], [1, 1, -1, -1])
    0.875
    """
    scores = np.asarray(scores, np.float64)
    y = np.asarray(y)
    if np.isnan(scores).any():
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    ranks = np.empty(len(scores), np.float64)
    start = 0
    while start < len(scores):
        stop = start
        while stop + 1 < len(scores) and sorted_scores[stop + 1] == sorted_scores[start]:
            stop += 1
        ranks[order[start : stop + 1]] = 0.5 * (start + stop) + 1.0
        start = stop + 1
    n_pos = int(np.sum(y > 0))
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    return float((ranks[y > 0].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))
