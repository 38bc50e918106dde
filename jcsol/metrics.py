"""The measures of online binary classification, in one place: their names, which way is better, and how each
is computed.

* From confusion counts (NumPy): the weighted *sum* of sensitivity and specificity, the *cost*, sensitivity,
  specificity, accuracy, balanced accuracy (J. Wang, P. Zhao, S. C. H. Hoi, *Cost-Sensitive Online
  Classification*, IEEE ICDM 2012, eqs. (1) and (2)); precision, F1 and alerts per catch, what a team that
  reviews the alerts reads. Counts are kept in the order ``(tp, fn, fp, tn)`` along the last axis:
  ``fn = M_p`` (missed positives), ``fp = M_n`` (false alarms). Each function applies equally to a run's final
  counts and to its online curve (counts at sampled rounds).
* From scores: :func:`auc` (the measure ``roc_auc``, also :func:`roc_auc`) and :func:`average_precision` (JAX,
  so they jit and vmap over runs and take a mask), :func:`auc_numpy`, AUC's NumPy twin;
  :func:`precision_at_budget` (NumPy); :func:`cvar` of margins.

:data:`MEASURES` names the measures of counts a :class:`jcsol.Result` gives (``example_cost`` is the example
costs summed over the mistakes, kept by the run itself), :data:`NAMED_SCORE_MEASURES` and ``precision_at_K%``
(see :func:`review_budget`) those of its recorded scores (:data:`SCORE_MEASURES`: those that the records of
scored runs carry by default); :func:`higher_is_better` says which way each is better, and :func:`check_measure`
is the one check of a measure's name.
"""

from __future__ import annotations

import re
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np

from .xla_cpu import compile_options

TP, FN, FP, TN = range(4)
MEASURES = (
    "sum",
    "sensitivity",
    "specificity",
    "accuracy",
    "balanced_accuracy",
    "cost",
    "example_cost",
    "precision",
    "f1",
    "alerts_per_catch",
)
SCORE_MEASURES = ("average_precision",)  # of recorded scores, in the records of scored runs by default
# every measure of recorded scores with a fixed name (and every precision_at_K%, review_budget); roc_auc is
# computed where it is named (Result.measure, Result.best, jcsol.report.records(..., measures=))
NAMED_SCORE_MEASURES = SCORE_MEASURES + ("roc_auc",)
HIGHER_IS_BETTER = {
    "sum": True,
    "sensitivity": True,
    "specificity": True,
    "accuracy": True,
    "balanced_accuracy": True,
    "cost": False,
    "example_cost": False,
    "precision": True,
    "f1": True,
    "alerts_per_catch": False,
    "average_precision": True,
    "roc_auc": True,
}
# fractions, printed as % (as is every precision_at_K%)
RATES = (
    "sum",
    "sensitivity",
    "specificity",
    "accuracy",
    "balanced_accuracy",
    "precision",
    "f1",
    "average_precision",
    "roc_auc",
)
_BUDGET = re.compile(r"precision_at_(\d+(?:\.\d*)?|\.\d+)%")


def review_budget(name) -> Fraction | None:
    """The review budget ``K`` (a percentage, exactly) of a measure named ``precision_at_K%``, e.g.
    ``precision_at_0.5%``; ``None`` for any other name. ``ValueError`` when ``K`` is not in ``(0, 100]``.

    >>> from jcsol import metrics
    >>> metrics.review_budget("precision_at_0.5%"), metrics.review_budget("precision")
    (Fraction(1, 2), None)
    """
    found = _BUDGET.fullmatch(name) if isinstance(name, str) else None
    if found is None:
        return None
    budget = Fraction(found.group(1))
    if not 0 < budget <= 100:
        raise ValueError(f"{name}: the review budget must be in (0, 100]%, got {found.group(1)}%")
    return budget


def check_measure(name) -> str:
    """``name`` when it is one of :data:`MEASURES`, :data:`NAMED_SCORE_MEASURES` or ``precision_at_K%``; otherwise
    a ``ValueError`` listing the valid names."""
    if isinstance(name, str) and (name in HIGHER_IS_BETTER or review_budget(name) is not None):
        return name
    raise ValueError(
        f"unknown measure {name!r}; choose from {', '.join(MEASURES + NAMED_SCORE_MEASURES)}, or precision_at_K% "
        "(the precision of the top K% of the scores, K in (0, 100])"
    )


def higher_is_better(name: str) -> bool:
    """Which way measure ``name`` is better: ``True`` for the rates, the precisions, F1, AP and the ROC AUC,
    ``False`` for the costs and alerts per catch."""
    return review_budget(check_measure(name)) is not None or HIGHER_IS_BETTER[name]


def best_index(means, name: str) -> int:
    """The flat index (C order) of the best of ``means``, values of measure ``name`` (one per grid point, say):
    the highest, or the lowest where lower is better (:func:`higher_is_better`).

    * NaN is never the best: the measure is undefined there (sensitivity without a positive, the average
      precision of a diverged model's scores);
    * exact ties go to the first in C order (the smallest flat index), as ``np.argmax`` breaks them;
    * when no value is defined, or the best defined one is infinitely bad (alerts per catch where no positive
      was caught, an infinite cost), no value is better than another: a ``ValueError`` naming the measure and
      why, rather than an arbitrary first index.

    >>> from jcsol import metrics
    >>> metrics.best_index([0.7, float("nan"), 0.9, 0.9], "sum"), metrics.best_index([3.0, float("inf")], "cost")
    (2, 0)
    """
    values = np.asarray(means, np.float64).ravel()
    if values.size == 0:
        raise ValueError(f"best {check_measure(name)}: no values to choose from")
    signed = values if higher_is_better(name) else -values
    defined = ~np.isnan(signed)
    if not defined.any():
        raise ValueError(
            f"{name} is undefined (NaN) at every one of the {values.size} point(s), so none is best "
            "(a class is missing from the stream, or every model diverged)"
        )
    top = np.max(signed[defined])
    if top == -np.inf:
        worst = "-inf" if higher_is_better(name) else "+inf"
        why = "at every point a run caught no positive" if name == "alerts_per_catch" else "its worst value"
        raise ValueError(
            f"{name} is {worst} at every point where it is defined ({why}), so none is better than another; "
            "choose by another measure"
        )
    return int(np.flatnonzero(signed == top)[0])


def in_percent(name: str) -> bool:
    """Whether measure ``name`` is a fraction, which tables and figures print in percent."""
    return name in RATES or review_budget(check_measure(name)) is not None


def of_scores(name: str) -> bool:
    """Whether measure ``name`` is computed from scores (:data:`NAMED_SCORE_MEASURES`, ``precision_at_K%``) rather
    than from confusion counts."""
    return name in NAMED_SCORE_MEASURES or review_budget(check_measure(name)) is not None


def check_counts(counts) -> np.ndarray:
    """``counts`` as an array of confusion counts ``(…, 4)`` (``TP, FN, FP, TN``), refusing any other last axis,
    values that are not real numbers, and negative or non-finite counts, each naming the problem."""
    c = np.asarray(counts)
    if c.dtype == bool or not (np.issubdtype(c.dtype, np.integer) or np.issubdtype(c.dtype, np.floating)):
        raise TypeError(f"counts must be numbers (TP, FN, FP, TN), got dtype {c.dtype}")
    if c.ndim == 0 or c.shape[-1] != 4:
        raise ValueError(f"counts must have a last axis of 4 (TP, FN, FP, TN), got shape {c.shape}")
    if c.size and not (np.all(np.isfinite(c)) and np.all(c >= 0)):
        raise ValueError(f"counts must be finite and >= 0, got {c[~(np.isfinite(c) & (c >= 0))].ravel()[0].item()!r}")
    return c


def _weight(name: str, value) -> np.ndarray:
    """A class weight (``alpha_p``, ``c_p``) as float64, refusing values outside ``[0, 1]`` (NaN included)."""
    try:
        weight = np.asarray(value, np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not np.all((weight >= 0) & (weight <= 1)):
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return weight


def _ratio(num: np.ndarray, den: np.ndarray, empty: float = np.nan) -> np.ndarray:
    num, den = np.asarray(num, np.float64), np.asarray(den, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), empty)


def sensitivity(counts: np.ndarray) -> np.ndarray:
    """``(T_p − M_p)/T_p``; NaN where the stream has no positive example.

    Counts are ``(…, 4)`` arrays in the order ``TP, FN, FP, TN``:

    >>> from jcsol import metrics
    >>> float(metrics.sensitivity([8, 2, 30, 60])), float(metrics.specificity([8, 2, 30, 60]))
    (0.8, 0.6666666666666666)
    >>> float(metrics.weighted_sum([8, 2, 30, 60], alpha_p=0.5))
    0.7333333333333334
    """
    c = check_counts(counts)
    return _ratio(c[..., TP], c[..., TP] + c[..., FN])


def specificity(counts: np.ndarray) -> np.ndarray:
    """``(T_n − M_n)/T_n``; NaN where the stream has no negative example."""
    c = check_counts(counts)
    return _ratio(c[..., TN], c[..., TN] + c[..., FP])


def accuracy(counts: np.ndarray) -> np.ndarray:
    """``(T − M_p − M_n)/T``."""
    c = check_counts(counts)
    return _ratio(c[..., TP] + c[..., TN], c.sum(-1))


def weighted_sum(counts: np.ndarray, alpha_p=0.5) -> np.ndarray:
    """*sum* ``= α_p·sensitivity + α_n·specificity``, ``α_n = 1 − α_p``."""
    alpha_p = _weight("alpha_p", alpha_p)
    return alpha_p * sensitivity(counts) + (1.0 - alpha_p) * specificity(counts)


def balanced_accuracy(counts: np.ndarray) -> np.ndarray:
    """*sum* with ``α_p = α_n = ½``."""
    return weighted_sum(counts, 0.5)


def weighted_cost(counts: np.ndarray, c_p=0.9) -> np.ndarray:
    """*cost* ``= c_p·M_p + c_n·M_n``, ``c_n = 1 − c_p``, unscaled (the papers print it in various scalings)."""
    c = check_counts(counts).astype(np.float64)
    c_p = _weight("c_p", c_p)
    return c_p * c[..., FN] + (1.0 - c_p) * c[..., FP]


def precision(counts: np.ndarray) -> np.ndarray:
    """``tp/(tp + fp)``: the share of the alerts (predicted positives) that are positive; **0** where nothing was
    flagged, the value scikit-learn's ``precision_score`` gives by default (its ``zero_division="warn"`` acts as
    0), so that a learner that never alerts ranks last rather than out of the table.

    >>> from jcsol import metrics
    >>> float(metrics.precision([8, 2, 30, 60])), float(metrics.precision([0, 10, 0, 90]))
    (0.21052631578947367, 0.0)
    """
    c = check_counts(counts)
    return _ratio(c[..., TP], c[..., TP] + c[..., FP], empty=0.0)


def f1(counts: np.ndarray) -> np.ndarray:
    """``2·tp/(2·tp + fp + fn)``, the harmonic mean of precision and sensitivity; 0 where there is neither a
    positive nor an alert (scikit-learn's ``f1_score`` default, as for :func:`precision`)."""
    c = check_counts(counts)
    return _ratio(2 * c[..., TP], 2 * c[..., TP] + c[..., FP] + c[..., FN], empty=0.0)


def alerts_per_catch(counts: np.ndarray) -> np.ndarray:
    """``(tp + fp)/tp``: the alerts raised per positive caught, the reciprocal of :func:`precision`; **infinite**
    where no positive was caught (the reciprocal of that precision's 0, alerts or none). Lower is better.

    >>> from jcsol import metrics
    >>> float(metrics.alerts_per_catch([8, 2, 30, 60])), float(metrics.alerts_per_catch([0, 10, 5, 85]))
    (4.75, inf)
    """
    c = check_counts(counts)
    return _ratio(c[..., TP] + c[..., FP], c[..., TP], empty=np.inf)


def cvar(values: np.ndarray, epsilon: float, axis: int = -1) -> np.ndarray:
    """CVaR_ε: the mean of the lowest ``k = ceil(ε·n)`` of the ``n`` values along ``axis`` (Ali, Collins-Thompson,
    *Robust Cost-Sensitive Confidence-Weighted Classification*, Table III, applies it to margins ``y·f``; higher
    is better).

    ``k`` is counted exactly, ``ε`` taken as the decimal it is written as: ``ε = 0.07`` of 100 values is the
    lowest 7, not the 8 that the float product ``0.07·100 = 7.000000000000001`` would round up to. NaN where a
    value along the axis is NaN (a diverged model's margin: NaN has no place in the order); infinite values are
    ordered as any others.

    >>> from jcsol import metrics
    >>> float(metrics.cvar([5.0, -1.0, 3.0, -4.0], 0.5)), float(metrics.cvar([1.0, float("nan")], 1.0))
    (-2.5, nan)
    """
    share = _budget(epsilon, "epsilon", 1)
    values = np.asarray(values, np.float64)
    if values.ndim == 0:
        raise ValueError("cvar needs values along an axis, got a single number")
    if values.shape[axis] == 0:
        raise ValueError(f"cvar of no values: axis {axis} of shape {values.shape} is empty")
    n = values.shape[axis]
    k = max(1, -((-share.numerator * n) // share.denominator))  # ceil(ε·n), in integers
    lowest = np.take(np.sort(values, axis=axis), np.arange(k), axis=axis).mean(axis=axis)
    return np.where(np.isnan(values).any(axis=axis), np.nan, lowest)


def measure(name: str, counts: np.ndarray, alpha_p=0.5, c_p=0.9) -> np.ndarray:
    """The measure ``name`` of ``counts``: any of :data:`MEASURES` but ``example_cost``, which counts cannot give
    (nor the measures of scores: :func:`of_scores`)."""
    check_measure(name)
    if name == "example_cost":
        raise ValueError(
            "example_cost is not a function of the counts: it is the example costs summed over the "
            "mistakes, Result.mistake_cost"
        )
    if of_scores(name):
        raise ValueError(f"{name} is a measure of the scores, not of the confusion counts")
    if name == "sum":
        return weighted_sum(counts, alpha_p)
    if name == "cost":
        return weighted_cost(counts, c_p)
    functions = {
        "sensitivity": sensitivity,
        "specificity": specificity,
        "accuracy": accuracy,
        "balanced_accuracy": balanced_accuracy,
        "precision": precision,
        "f1": f1,
        "alerts_per_catch": alerts_per_catch,
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
    _same_shape(scores.shape, y.shape, "auc")
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


def roc_auc(scores: jax.Array, y: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """The measure ``roc_auc``: the area under the ROC curve of ``scores`` for labels ``y`` (``> 0`` positive),
    :func:`auc` itself — ``P(s⁺ > s⁻) + ½ P(s⁺ = s⁻)`` over the (positive, negative) pairs, the Mann–Whitney
    statistic divided by the number of pairs; NaN where the labels hold one class only (or a counted score is
    NaN). A JAX function of one run, as :func:`average_precision`; :func:`score_measure` vmaps it over runs.

    >>> from jcsol import metrics
    >>> float(metrics.roc_auc([0.9, 0.4, 0.4, 0.1], [1, 1, -1, -1])), float(metrics.roc_auc([0.2, 0.5], [1, 1]))
    (0.875, nan)
    """
    return auc(scores, y, mask)


def _same_shape(scores_shape: tuple, y_shape: tuple, what: str) -> None:
    """Refuses labels of another shape than the scores' (broadcasting would pair each score with a wrong label or
    fail inside NumPy or JAX)."""
    if tuple(scores_shape) != tuple(y_shape):
        raise ValueError(f"{what}: scores of shape {tuple(scores_shape)} and labels of shape {tuple(y_shape)} differ")


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


def average_precision(scores: jax.Array, y: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """Average precision (the area under the precision–recall curve, step-wise) of ``scores`` for labels ``y``
    (``> 0`` positive); entries where ``mask`` is False are ignored.

    ``AP = Σ_n (R_n − R_{n−1}) P_n`` over the distinct scores ``s_n`` taken as thresholds from the highest down,
    with ``P_n`` and ``R_n`` the precision and recall of flagging every score ``>= s_n`` — scikit-learn's
    ``average_precision_score``, tied scores one threshold (no interpolation). Equivalently the mean, over the
    positives, of the precision of flagging every score at least theirs: ``(1/T_p) Σ_{i: y_i > 0}
    #{positives with s >= s_i} / #{s >= s_i}``, which is how it is computed — two sorts (``O(n log n)``), the
    counts in integers, their ratios summed in the scores' float type (float32: within a few units of its last
    place of the exact value). A JAX function: it jits and vmaps over runs. NaN when there is no positive
    (scikit-learn then warns and gives 0: recall is undefined) or a counted score is NaN; 1 when every counted
    entry is positive.

    >>> from jcsol import metrics
    >>> round(float(metrics.average_precision([0.5, 0.5, 0.2, 0.9], [1, -1, 1, -1])), 6)
    0.416667
    """
    scores = jnp.asarray(scores)
    y = jnp.asarray(y)
    _same_shape(scores.shape, y.shape, "average_precision")
    mask = jnp.ones(scores.shape, bool) if mask is None else jnp.asarray(mask, bool)
    pos = (y > 0) & mask
    n_pos, n = jnp.sum(pos), jnp.sum(mask)
    keys = _order_keys(scores)
    last = jnp.iinfo(keys.dtype).max  # the other entries after every counted score
    flagged = n - jnp.searchsorted(jnp.sort(jnp.where(mask, keys, last)), keys, side="left")  # #{s >= s_i}
    caught = n_pos - jnp.searchsorted(jnp.sort(jnp.where(pos, keys, last)), keys, side="left")  # positives
    dtype = jnp.result_type(scores.dtype, jnp.float32)
    precisions = jnp.where(pos, caught.astype(dtype) / jnp.maximum(flagged, 1).astype(dtype), 0.0)
    ap = jnp.sum(precisions) / n_pos.astype(dtype)
    return jnp.where((n_pos == 0) | jnp.any(mask & jnp.isnan(scores)), jnp.nan, ap)


def precision_at_budget(scores, y, budget) -> np.ndarray:
    """The precision of reviewing the top ``budget`` % of ``scores`` (over the last axis), labels ``y`` (``> 0``
    positive): what a team that can look at ``budget`` % of the events finds.

    * ``m = ceil(budget · n / 100)`` events are reviewed (at least one), ``budget`` taken as the decimal it is
      written as (``0.1`` is exactly a tenth: 1000 events review 1, not 2);
    * the highest scores first; where the ``m``-th score is tied with others, the tied events share the
      remaining reviews equally, so their positives count in proportion: the precision is its expectation over
      the orders that tie-break at random, ``(p_> + (m − n_>)·p_=/n_=) / m`` with ``n_>``, ``p_>`` the events and
      positives scored above that score and ``n_=``, ``p_=`` those tied with it (as the AUC counts ties ½).

    NumPy, float64; NaN where a score is NaN or there is no event.

    >>> from jcsol import metrics
    >>> float(metrics.precision_at_budget([0.9, 0.5, 0.5, 0.1], [1, 1, -1, -1], 50))
    0.75
    """
    scores = np.asarray(scores, np.float64)
    labels = np.asarray(y)
    if labels.ndim == 0 or labels.shape != scores.shape[scores.ndim - labels.ndim :]:
        _same_shape(scores.shape, labels.shape, "precision_at_budget")
    positive = np.broadcast_to(labels > 0, scores.shape)
    budget = _budget(budget)
    n = scores.shape[-1]
    m = -((-budget.numerator * n) // (budget.denominator * 100))  # ceil, in integers
    if m == 0:
        return np.full(scores.shape[:-1], np.nan)
    cut = -np.partition(-scores, m - 1, axis=-1)[..., m - 1 : m]  # the m-th highest score
    above, tied = scores > cut, scores == cut
    n_above, n_tied = above.sum(-1), tied.sum(-1)
    p_above, p_tied = (above & positive).sum(-1), (tied & positive).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = (p_above + (m - n_above) * p_tied / n_tied) / m
    return np.where(np.isnan(scores).any(-1), np.nan, value)


def _budget(budget, what: str = "the review budget", most: int = 100) -> Fraction:
    """A review budget (a percentage: a number, its decimal text or a :class:`~fractions.Fraction`) in
    ``(0, 100]``, exactly as written; anything else refused naming it. ``what`` and ``most`` name another share
    so taken (:func:`cvar`'s ``epsilon``, in ``(0, 1]``)."""
    unit = "a number of percent" if most == 100 else "a number"
    if isinstance(budget, Fraction):
        value = budget
    elif isinstance(budget, (int, float, np.integer, np.floating, str)) and not isinstance(budget, (bool, np.bool_)):
        try:
            value = Fraction(str(budget))
        except ValueError:  # text that is no decimal number, NaN, infinities
            raise ValueError(f"{what} must be {unit} in (0, {most}], got {budget!r}") from None
    else:
        raise TypeError(f"{what} must be {unit} in (0, {most}], got {budget!r}")
    if not 0 < value <= most:
        if most == 100:
            raise ValueError(f"{what} must be in (0, 100]%, got {float(value)}%")
        raise ValueError(f"{what} must be in (0, {most}], got {budget!r}")
    return value


_BY_RUN = {
    "average_precision": jax.jit(jax.vmap(average_precision), compiler_options=compile_options()),
    "roc_auc": jax.jit(jax.vmap(auc), compiler_options=compile_options()),
}


def score_measure(name: str, scores, y) -> np.ndarray:
    """Measure ``name`` of :func:`of_scores` (``average_precision``, ``roc_auc`` or ``precision_at_K%``) of every
    row of ``scores`` ``(…, n)`` with labels ``y`` (broadcast to it), as float64 ``(…)``.

    >>> from jcsol import metrics
    >>> metrics.score_measure("roc_auc", [[0.9, 0.4, 0.4, 0.1], [0.1, 0.2, 0.3, 0.4]], [1, 1, -1, -1]).tolist()
    [0.875, 0.0]
    """
    budget = review_budget(check_measure(name))
    if budget is None and name not in NAMED_SCORE_MEASURES:
        raise ValueError(f"{name} is a measure of the confusion counts, not of the scores")
    scores = np.asarray(scores)
    if scores.ndim == 0:
        raise ValueError(f"{name} needs scores of shape (…, n), got a single number")
    labels = np.asarray(y)
    if labels.ndim == 0 or labels.shape != scores.shape[scores.ndim - labels.ndim :]:
        _same_shape(scores.shape, labels.shape, name)
    if budget is not None:
        return precision_at_budget(scores, y, budget)
    flat = scores.reshape(-1, scores.shape[-1])
    labels = np.broadcast_to(labels, scores.shape).reshape(flat.shape)
    if flat.shape[0] == 0:
        return np.zeros(scores.shape[:-1])
    return np.asarray(_BY_RUN[name](flat, labels), np.float64).reshape(scores.shape[:-1])


def auc_numpy(scores, y) -> float:
    """:func:`auc` in float64 NumPy, from average ranks (Mann–Whitney), without a mask; ties count ½ (NaN where a
    class is absent or a score is NaN).

    >>> from jcsol import metrics
    >>> metrics.auc_numpy([0.9, 0.4, 0.4, 0.1], [1, 1, -1, -1])
    0.875
    """
    try:
        scores = np.asarray(scores, np.float64)
    except (TypeError, ValueError):
        raise TypeError("auc_numpy: scores must be real numbers") from None
    y = np.asarray(y)
    if scores.ndim != 1:
        raise ValueError(f"auc_numpy: scores must be 1-D, got shape {scores.shape}")
    _same_shape(scores.shape, y.shape, "auc_numpy")
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
