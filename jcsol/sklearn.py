"""scikit-learn estimators: any jcsol learner as an online classifier with ``fit``, ``partial_fit``, ``predict``.

::

    from jcsol.sklearn import OnlineClassifier
    clf = OnlineClassifier(jcsol.ACOG(eta=0.1), class_weight="balanced").fit(X, y)
    clf.partial_fit(X_new, y_new)                     # continue the same online pass
    GridSearchCV(OnlineClassifier(), {"learner__eta": [1e-2, 1e-1, 1.0]}).fit(X, y)

A call to ``fit`` or ``partial_fit`` makes *one pass over its rows in the order given*: the rounds of
:func:`jcsol.run` (one ``learner.step`` per row of positive sample weight, its ``ρ_t`` from the counts so far, on
the chunk backend ``path`` chooses: the GPU kernel on a GPU where it covers the learner, else the scan), in one
jitted call a batch (a sparse batch whose dense rows would
exceed 128 MiB is densified and passed a block of rows at a time, the model and its counts carried from block to
block). The compiled call is cached by JAX on the learner's static options, the feature count, the dtype and the
batch length padded to a power of two (:func:`jcsol.batches.bucket`; only the real rows are stepped), and *not* on
float hyperparameters, which are traced: a grid search over ``learner__eta`` compiles once. ``predict`` and
``decision_function`` use the final model.

Requires scikit-learn (``pip install jcsol[sklearn]``); the rest of jcsol does not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import numbers
import warnings
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy import sparse as _sparse
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets, unique_labels
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from . import whole_loops
from .algorithms import COG
from .base import (
    COUNT_MAX,
    Learner,
    beyond_row_scales,
    hyperparameter,
    in_dtype,
    pytree_dataclass,
)
from .batches import bucket
from .core import chunks, programs, scaling
from .core.checks import check_memory
from .core.chunks import Choice
from .core.rounds import Carry
from .datasets import l2_normalize
from .metrics import FN, FP, TN, TP
from .objective import Cost, Objective, Sum
from .scoring import is_linear
from .stream import EXACT_INTEGERS, SparseRows, check_fits, inexact_integers
from .xla_cpu import compile_options

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:  # pragma: no cover - older scikit-learn

    def _validate_data(estimator, X="no_validation", y="no_validation", reset=True, **kwargs):
        return estimator._validate_data(X, y, reset=reset, **kwargs)


def _sample_weight(sample_weight, X) -> np.ndarray:
    """scikit-learn's sample-weight validation (non-negative, one per row), across its versions."""
    try:
        return _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    except TypeError:  # pragma: no cover - scikit-learn < 1.6 calls it only_non_negative
        return _check_sample_weight(sample_weight, X, dtype=np.float64, only_non_negative=True)


__all__ = ["OnlineClassifier", "EXPECTED_FAILED_CHECKS"]

#: The checks of ``sklearn.utils.estimator_checks`` that cannot pass for an online learner, and why. Pass this
#: dict as ``expected_failed_checks`` to ``check_estimator`` / ``parametrize_with_checks`` (scikit-learn ≥ 1.6;
#: older versions read it from the ``_xfail_checks`` tag of ``_more_tags``).
EXPECTED_FAILED_CHECKS: dict[str, str] = {
    "check_sample_weight_equivalence_on_dense_data": (
        "an online learner's single pass is order- and repetition-dependent: a row with sample_weight k scales "
        "that round's cost ρ_t by k (one update), which is not the same as k consecutive updates on k copies of "
        "the row; only weight 0 ≡ removal holds (it does, exactly: zero-weight rows are skipped)"
    ),
    "check_sample_weight_equivalence_on_sparse_data": (
        "same as check_sample_weight_equivalence_on_dense_data (sparse input is densified per batch)"
    ),
    "check_class_weight_classifiers": (
        "class_weight enters the papers' losses only as ρ = w_pos/w_neg (a margin target in loss I, a step scale "
        "in loss II) of a one-pass linear model without intercept; ρ = 1e7 cannot make such a model "
        "predict class 0 on 87% of that check's very noisy two-blob problem (it predicts class 0 on about half)"
    ),
}

#: Dense rows (in float64, as they are normalised) scanned by one compiled call at most; a larger sparse batch is
#: densified and scanned a block of rows at a time.
BLOCK_BYTES = 2**27


@pytree_dataclass
class _FixedRho(Objective):
    """``ρ_t = rho`` for a positive example, ``1`` for a negative one (the objective ``class_weight`` sets)."""

    rho: Any = hyperparameter(1.0)

    def weight(self, positive, seen_pos, seen_neg, total_pos, total_neg):
        return jnp.where(positive, self.rho, 1.0)

    def measure_weights(self):  # pragma: no cover - not used by the estimator
        return 0.5, 0.9


@functools.partial(jax.jit, compiler_options=compile_options())
def _score(learner, state, X, scaler=None):
    """The model's scores of dense rows ``X``, each scaled by ``scaler`` (the pass's features' statistics) when
    given."""
    if scaler is not None:
        X = jax.vmap(lambda x: scaling.scaled(scaler, x))(X)
    return learner.score(state, X)


#: The smallest batch length compiled: batches are padded to a power of two, at least this
#: (:func:`jcsol.batches.bucket`), so that few scan lengths are compiled.
SMALLEST_BATCH = 16


@functools.partial(jax.jit, compiler_options=compile_options())
def _rhos(objective, positive, seen, totals, weight):
    """Each row's ``ρ`` under ``objective`` (in ``weight``'s dtype) and ``ρ_t = ρ·s_t`` with its sample weight,
    the values the rounds will compute, for the checks made before the pass.

    ``seen`` ``(n, 2)`` counts the positives and negatives of positive weight up to and including each row
    (Laplace's ρ), ``totals`` ``(2,)`` those of the whole pass (offline ρ).
    """
    rho = objective.weight(positive, seen[:, 0], seen[:, 1], totals[0], totals[1]).astype(weight.dtype)
    return rho, rho * weight


def _consume(*args, choice: Choice):
    """:func:`_consume_rounds` compiled, its loop of rounds as one kernel (:class:`jcsol.whole_loops.Marked`)."""
    return _CONSUME(programs.signature(args, choice), *args, choice=choice)


def _consume_rounds(
    learner, objective, state, scaler, seen, rows, signs, weights, totals, order, length, *, choice: Choice
):
    """The rounds of :func:`jcsol.run` on the chunk backend ``choice``
    (:meth:`jcsol.core.chunks.ChunkBackend.prefix`) over the rows ``order[:length]`` of a block padded to its
    bucket, in that order: one run of one configuration, its ``ρ_t`` from ``objective`` and the counts ``seen``
    (positives and negatives stepped so far) times the row's sample weight in ``weights``.

    ``scaler`` holds the features' statistics of the rows stepped so far (``scale="online"``; ``None``: the rows
    as given). Returns the new state and statistics, the counts after the block and the number of rows stepped
    that had a positive loss and a non-zero row (rows that should move the model).
    """
    one_run = functools.partial(jax.tree.map, lambda a: a[None])  # the hyperparameters of a grid of one
    carry = Carry(
        jax.tree.map(lambda a: a[None, None], state),
        jnp.stack([seen[0], 0, seen[1], 0])[None, None],  # tp, fn, fp, tn: ρ reads tp + fn and fp + tn
        jnp.zeros((1, 1, 0, 4), jnp.int32),
        jnp.zeros((1, 1, 2), rows.dtype),
        jax.tree.map(lambda a: a[None, None], scaler),
    )
    n = len(signs)
    rounds = choice.backend.prefix(choice.options, d=rows.shape[1], per_unit=False, report="loss")
    carry, losses = rounds(
        carry,
        one_run(learner),
        one_run(objective),
        (rows, signs, None),
        totals[:1],
        totals[1:],
        order[None],
        jnp.zeros(n, jnp.int32),
        length,
        weights,
    )
    moving = (losses[0, 0] > 0) & jnp.any(rows != 0, axis=1)[order]  # the rounds after length report 0
    counts = carry.counts[0, 0]
    seen = jnp.stack([counts[TP] + counts[FN], counts[FP] + counts[TN]])
    first = functools.partial(jax.tree.map, lambda a: a[0, 0])
    return first(carry.state), first(carry.scaler), seen, jnp.sum(moving, dtype=jnp.int32)


_CONSUME = whole_loops.Marked(jax.jit(_consume_rounds, static_argnames="choice", compiler_options=compile_options()))


class _Settings(NamedTuple):
    """The parameters a pass uses, checked."""

    learner: Learner
    working: Learner  # its hyperparameters in the working dtype, as the pass computes with them
    dtype: np.dtype
    normalize: bool
    path: Any  # as jcsol.run takes it: the chunk backend is chosen once d is known (_chunk_backend)
    scale: str | None  # the rows' scaling inside the round (jcsol.core.scaling)


class _Batch(NamedTuple):
    """A batch checked and ready to learn from: every refusal comes before one is made."""

    X: Any  # (n, d) float64 array or CSR matrix, not yet normalised
    signs: np.ndarray  # (n,) ±1
    weights: np.ndarray  # (n,) the sample weights in the working dtype; the rows of weight 0 are skipped
    objective: Objective  # the rule of ρ, its hyperparameters in the working dtype
    totals: np.ndarray  # (2,) int32: the batch's positives and negatives of positive weight (offline ρ)
    start: np.ndarray  # (2,) the stream's positives and negatives of positive weight before the batch
    seen: np.ndarray  # (2,) and after it


_INEXACT = (
    ": beyond 2**53, float64 cannot hold it exactly; an id or a timestamp in nanoseconds is no feature: drop the "
    "column, or convert it to a number of useful scale first"
)


def _first_unfit(values: np.ndarray) -> tuple[int, str, str, type[Exception]] | None:
    """The first entry of ``values`` (flat) that scikit-learn's conversion to float64 would round or fail on: its
    index, the value, why (an integer beyond :data:`EXACT_INTEGERS`, a datetime or, in an object or text array, a
    value that is not a number) and the error to raise (``TypeError`` for what is no number nor text, as NumPy)."""
    if values.dtype.kind in "iu":
        beyond = inexact_integers(values)
        if beyond.any():
            k = int(np.argmax(beyond))
            return k, f"the integer {values[k]}", f" ({int(beyond.sum())} such value(s)){_INEXACT}", ValueError
        return None
    if values.dtype.kind in "mM" and values.size:
        return (
            0,
            repr(values[0]),
            ", a datetime or a duration, which is not a number: drop the column, or encode it "
            "first (jcsol.TableEncoder's datetime=[...])",
            TypeError,
        )
    if values.dtype.kind not in "OUS":
        return None
    for k, v in enumerate(values.tolist()):
        if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
            if abs(int(v)) > EXACT_INTEGERS:
                return k, f"the integer {v}", _INEXACT, ValueError
            continue
        if v is None or type(v).__name__ in ("NAType", "NaTType") or (isinstance(v, float) and math.isnan(v)):
            return k, repr(v), ", a missing value: fill or drop it first", ValueError
        try:
            float(v)
        except (TypeError, ValueError, OverflowError) as err:
            return k, repr(v), f", which is not a number ({err})", type(err)
    return None


def _row_in(column: Any, row: int) -> tuple[int, Any]:
    return row, column


def check_feature_values(X) -> None:
    """Refuses, naming the row and the column, what scikit-learn's conversion of features to float64 would round
    silently or fail on without saying where: integers beyond ``2**53`` (float64 cannot hold them exactly; such a
    column is an id or a timestamp in nanoseconds, which no linear model should weigh) and, in object or text
    columns, values that are not numbers. ``X``: a dense array, a SciPy sparse matrix, a pandas frame or an Arrow
    table (each column as it is, before any upcast) or a list of rows."""
    located: list[tuple[np.ndarray, Callable[[int], tuple[Any, Any]]]]  # values, and the row and column of one
    if _sparse.issparse(X):
        coo = X.tocoo()
        located = [(coo.data, lambda k: (coo.row[k], coo.col[k]))]
    elif hasattr(X, "columns") and hasattr(X, "iloc"):  # a pandas frame
        located = [
            (np.asarray(X.iloc[:, j].to_numpy()), functools.partial(_row_in, name)) for j, name in enumerate(X.columns)
        ]
    elif hasattr(X, "column_names") and hasattr(X, "column"):  # an Arrow table
        located = [
            (np.asarray(X.column(j).to_numpy()), functools.partial(_row_in, name))
            for j, name in enumerate(X.column_names)
        ]
    else:
        try:
            dense = np.asarray(X)
        except (ValueError, TypeError):  # ragged or odd input: scikit-learn's validation names the problem
            return
        if dense.ndim != 2:
            return
        width = dense.shape[1]
        located = [(dense.ravel(), lambda k: divmod(k, width))]
    for values, locate in located:
        unfit = _first_unfit(values)
        if unfit is not None:
            k, what, why, error = unfit
            row, column = locate(k)
            column = column.item() if isinstance(column, np.generic) else column
            raise error(f"X holds {what} at row {int(row)}, column {column!r}{why}")


def _check_range(X, dtype) -> None:
    """:func:`jcsol.stream.check_fits` of dense rows or of a CSR matrix's stored values (naming the row)."""
    if not _sparse.issparse(X):
        check_fits(X, dtype)
        return
    limit = np.finfo(dtype).max
    beyond = np.abs(X.data) > limit
    if beyond.any():
        k = int(np.argmax(beyond))
        row = int(np.searchsorted(X.indptr, k, side="right")) - 1
        raise ValueError(
            f"X has {int(beyond.sum())} value(s) beyond the range of {np.dtype(dtype).name} (±{limit:.4g}), "
            f"the first at row {row} ({float(X.data[k])!r}); scale them down, or use float64"
        )


def _warn_row_scales(learner: Learner, X, dtype) -> None:
    """A ``RuntimeWarning`` when rows not normalised (dense or sparse) are beyond the scales the learner's
    arithmetic in ``dtype`` holds on (:func:`jcsol.base.beyond_row_scales`, the rule :func:`jcsol.run` warns by).
    Normalised rows, of largest entry in ``[1/√d, 1]``, are always inside."""
    message = beyond_row_scales(learner, SparseRows.from_scipy(X).values if _sparse.issparse(X) else X, dtype)
    if message:
        warnings.warn(f"{message}, or give normalize=True", RuntimeWarning, stacklevel=4)


def _dense_blocks(X, normalize: bool, dtype) -> Iterator[np.ndarray]:
    """The rows of ``X`` (dense or CSR) as ``dtype`` arrays, normalised if asked, in blocks of at most
    :data:`BLOCK_BYTES` of float64 rows (a block of one row at least)."""
    n, d = X.shape
    step = max(1, BLOCK_BYTES // (8 * d))
    for lo in range(0, n, step):
        block = X[lo : lo + step]
        block = np.asarray(block.toarray() if _sparse.issparse(block) else block, dtype=np.float64)
        yield (l2_normalize(block) if normalize else block).astype(dtype)


def _state_dtype(state) -> np.dtype:
    """The float dtype of a model's state."""
    return next(np.dtype(leaf.dtype) for leaf in jax.tree.leaves(state) if np.dtype(leaf.dtype).kind == "f")


def _same_label(given: Any, label: Any) -> bool:
    """Whether a ``pos_label`` given names ``label``: equal, one value, and a bool exactly when ``label`` is one
    (``True == 1`` in Python, yet ``True`` does not name the class ``1``)."""
    flag = (bool, np.bool_)
    return np.ndim(given) == 0 and isinstance(given, flag) == isinstance(label, flag) and bool(given == label)


def _or_default(name: str, value: Any) -> Any:
    """The parameter ``name`` (``"learner"`` or ``"objective"``) given as ``value``, or its default for ``None``."""
    if value is not None:
        return value
    return COG() if name == "learner" else Sum()


class OnlineClassifier(ClassifierMixin, BaseEstimator):
    """A jcsol learner as a scikit-learn binary classifier, trained by one online pass per call.

    Args:
        learner: a jcsol learner with scalar hyperparameters (default ``jcsol.COG()``: COG-I, η = 0.01). For a
            grid, use :func:`jcsol.run`, or search here with ``GridSearchCV``.
        objective: ``jcsol.Sum(...)`` or ``jcsol.Cost(...)``: how ``ρ`` is set (default ``Sum(alpha_p=0.5)``,
            balanced accuracy). Mutually exclusive with ``class_weight``.
        normalize: divide each row by its L2 norm before use, in training and prediction.
        pos_label: the label that becomes the +1 (rare) class; default: see *Labels*.
        class_weight: ``None``, ``"balanced"`` or a dict ``{label: weight}`` (missing labels weigh 1).
        dtype: ``"float32"`` (default) or ``"float64"`` (needs 64-bit JAX).
        random_state: seed of the learner's initial state (``None``, an int in ``[0, 2**32)`` or a
            ``numpy.random.RandomState``); the learners of the papers start from ``w = 0`` and ignore it.
        path: the chunk backend of the pass, as for :func:`jcsol.run` (``"auto"``: the GPU kernel on a GPU where
            it covers the learner, the scan elsewhere; ``"scan"``, ``"kernel"``, :class:`jcsol.Scan`,
            :class:`jcsol.Kernel`); the bits are those of ``run`` on the same backend. A named backend that
            does not cover the learner is refused before the pass.
        scale: ``"online"`` standardises each feature inside the pass, as :func:`jcsol.run` does: each row by the
            running mean and variance of the rows stepped before it (their dense values, centred and scaled; rows
            of weight 0 are not among them), carried from call to call in ``scaler_`` and used by ``predict`` and
            ``decision_function``; ``None`` (default): the rows as given (after ``normalize``).

    **When the parameters are checked.** As scikit-learn's convention asks, ``__init__`` and ``set_params`` store
    what they are given; ``fit`` and ``partial_fit`` check every parameter first, before they look at the data
    or touch the model, and refuse a bad one with an error naming it. Nested fields are the exception:
    ``set_params(learner__eta=-1)`` builds a new learner, whose own constructor refuses the value at once.
    ``set_params`` sets all its parameters or, refusing one, none. ``predict``, ``decision_function`` and
    ``score`` use the fitted model (``learner_``, ``state_``) and check only ``normalize``.

    **Refused calls.** A call that raises leaves the estimator exactly as it was: the fitted attributes
    (``state_``, ``classes_``, ``n_features_in_``, ``n_seen_``, …) and the parameters. Every argument is checked
    before the model is touched, and an interruption during the pass restores the attributes held before it.
    So a ``partial_fit`` after a refused first call is a first call. ``partial_fit`` refuses to continue a model
    with a learner of another kind or other static options, or another ``dtype``, ``normalize`` (kept in
    ``normalize_``) or ``scale`` (changing float hyperparameters, e.g. ``learner__eta``, continues it), and a
    ``pos_label`` other than ``pos_label_``.

    **Labels.** Any two labels; ``classes_`` holds them sorted. The +1 (rare) class of the learner is
    ``pos_label`` when given; otherwise, in ``fit``, the class with fewer rows in ``y`` (a tie: ``classes_[1]``);
    in ``partial_fit``, the class with fewer rows in the *first* call's ``y`` (a tie, e.g. when absent from both
    counts: ``classes_[1]``), kept for the rest of the stream. The choice is in ``pos_label_``. Pass
    ``pos_label`` for streams whose first batch is not representative; it must equal a class and be a bool
    exactly when the classes are (``True`` does not name the class ``1``).
    ``predict`` returns ``pos_label_`` where the score ``f = w·x >= 0`` (a score of exactly 0 predicts the +1
    class). ``decision_function`` follows scikit-learn's convention: positive means ``classes_[1]``,
    i.e. it is ``f`` if ``pos_label_ == classes_[1]`` and ``−f`` otherwise.

    **Features.** Dense arrays, data frames and SciPy sparse matrices of any format (densified a block of rows
    at a time, at most 128 MiB of rows a block), of real numbers. NaN, infinite values, complex numbers and empty
    batches (0 rows, as scikit-learn's ``SGDClassifier`` refuses them) are refused by scikit-learn's validation.
    Refused naming the row and the column: integers beyond ``2**53`` (ids, timestamps in nanoseconds), which
    float64 cannot hold exactly, datetimes and durations, and, in object or text columns, values that are not
    numbers (text, missing values, other objects). With ``normalize=False``, values beyond the range of
    ``dtype`` are refused, and rows whose largest entry lies outside the learner's
    :meth:`~jcsol.base.Learner.row_scales` (where its arithmetic underflows or overflows) warn, as in
    :func:`jcsol.run`; normalised rows learn the same at any scale. No intercept is fitted (append a constant
    feature, e.g. in a ``Pipeline``, to get one).

    **ρ.** ``ρ_t = ρ`` for a +1 example and ``1`` for a −1 example, times the row's sample weight:

    * ``Sum(alpha_p, rho="offline")`` (the default): ``ρ = α_p T_n / (α_n T_p)`` with ``T_p, T_n`` counted over
      the rows given to ``fit`` (rows of weight 0 excluded; ``fit`` refuses a ``y`` reduced to one class). In
      ``partial_fit`` the whole stream is unknown, so the Laplace estimate ``α_p (n_t + 1)/(α_n (p_t + 1))`` is
      used, with ``p_t, n_t`` the positives and negatives consumed since the last ``fit`` or the first
      ``partial_fit``, this round included (counts in ``n_seen_``).
    * ``Sum(alpha_p, rho="laplace")``: the Laplace estimate, in ``fit`` (counts from 0) and ``partial_fit``
      (counts carried over calls). ``fit(X, y)`` then equals ``partial_fit`` over the same rows in batches.
    * ``Cost(c_p, c_n)``: ``ρ = c_p / c_n``.
    * ``class_weight={pos: w_p, neg: w_n}``: ``ρ = w_p / w_n`` (the class weights are costs; only their ratio
      matters to the papers' losses). ``class_weight="balanced"`` is the *sum* rule with ``α_p = ½`` (offline
      counts in ``fit``, Laplace in ``partial_fit``), i.e. ``w_c ∝ n / (2 n_c)``.

    **sample_weight.** A row's weight ``s_t >= 0`` multiplies its ``ρ_t`` (so the type-II loss and its step are
    scaled by ``s_t``; the type-I margin target becomes ``s_t ρ_t``). A weight of 0 skips the row entirely: no
    step, and the row counts neither in ``T_p, T_n`` nor in the Laplace counts — zero weight ≡ removal, exactly.
    It is *not* equivalent to repeating the row ``s_t`` times (that would be ``s_t`` steps). A positive weight
    whose ``ρ_t = s_t·ρ`` is not a normal number of ``dtype`` (below about 1.2e-38 in float32, e.g. ``1e-46``,
    which float32 rounds to 0: its step would underflow and the row teach nothing; or beyond its range) is
    refused before the pass, naming the row, as is a ``ρ`` of ``class_weight`` or ``objective`` out of that
    range. A pass after which the model is still ``w = 0`` although rows had a positive loss (updates that
    underflowed) warns (``RuntimeWarning``), as does one that ends with non-finite weights (a diverged learner).

    **Hyperparameter search.** ``get_params(deep=True)`` lists the fields of the learner and of the objective
    as ``learner__<field>`` and ``objective__<field>`` (of the defaults when they are ``None``), and
    ``set_params(learner__eta=0.1)`` replaces the frozen learner by ``learner.replace(eta=0.1)``; so
    ``GridSearchCV(clf, {"learner__eta": [...]})`` works, and so does a grid over whole learners,
    ``{"learner": [jcsol.COG(), jcsol.ACOG()]}``, or both at once.

    **scikit-learn checks.** Passes ``sklearn.utils.estimator_checks.check_estimator`` except the checks listed,
    with the reason, in :data:`EXPECTED_FAILED_CHECKS`:

    * ``check_sample_weight_equivalence_on_dense_data`` and ``..._on_sparse_data``: an online pass is
      order- and repetition-dependent, so an integer weight is not the same as repeated rows;
    * ``check_class_weight_classifiers``: ``class_weight`` sets ρ, which reweights the updates of a one-pass
      linear model without intercept; it cannot shift the decision threshold far enough for that
      check's very noisy blobs (87% of predictions in the heavy class).

    References: J. Wang, P. Zhao, S. C. H. Hoi, *Cost-Sensitive Online Classification*, ICDM 2012 (ρ and the
    losses); P. Zhao et al., *Adaptive Cost-Sensitive Online Classification*, TKDE (Laplace estimate of ρ).
    """

    def __init__(
        self,
        learner=None,
        objective=None,
        normalize=True,
        pos_label=None,
        class_weight=None,
        dtype="float32",
        random_state=None,
        path="auto",
        scale=None,
    ):
        self.learner = learner
        self.objective = objective
        self.normalize = normalize
        self.pos_label = pos_label
        self.class_weight = class_weight
        self.dtype = dtype
        self.random_state = random_state
        self.path = path
        self.scale = scale

    # -- scikit-learn plumbing ---------------------------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = True
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"binary_only": True, "_xfail_checks": dict(EXPECTED_FAILED_CHECKS)}

    _NESTED = ("learner", "objective")

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters; with ``deep``, also ``learner__<field>`` and ``objective__<field>``."""
        params = super().get_params(deep=False)
        if deep:
            for name in self._NESTED:
                value = _or_default(name, getattr(self, name))
                if dataclasses.is_dataclass(value) and not isinstance(value, type):
                    for f in dataclasses.fields(value):
                        params[f"{name}__{f.name}"] = getattr(value, f.name)
        return params

    def set_params(self, **params: Any) -> OnlineClassifier:
        """Sets parameters; ``learner__<field>=v`` replaces the (frozen) learner by ``learner.replace(<field>=v)``.

        Whole objects (``learner=...``) are set first, then nested fields, so both may be given together. All
        are set, or none: an unknown name or a value a learner refuses raises before anything is set.
        """
        valid = super().get_params(deep=False)
        new: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {name: {} for name in self._NESTED}
        for key, value in params.items():
            head, sep, field = key.partition("__")
            if sep and head in nested:
                nested[head][field] = value
            elif key in valid:
                new[key] = value
            else:
                raise ValueError(
                    f"Invalid parameter {key!r} for estimator {type(self).__name__}. "
                    f"Valid parameters are: {sorted(valid)!r}."
                )
        for name, changes in nested.items():
            if not changes:
                continue
            base = _or_default(name, new[name] if name in new else getattr(self, name))
            if not (dataclasses.is_dataclass(base) and not isinstance(base, type)):
                raise ValueError(
                    f"cannot set {', '.join(name + '__' + k for k in changes)}: {name}={base!r} is not a jcsol {name}"
                )
            known = {f.name for f in dataclasses.fields(base)}
            unknown = sorted(set(changes) - known)
            if unknown:
                raise ValueError(
                    f"invalid parameter {name}__{unknown[0]} for {type(base).__name__}; "
                    f"valid: {', '.join(sorted(known))}"
                )
            new[name] = dataclasses.replace(base, **changes)
        for key, value in new.items():
            setattr(self, key, value)
        return self

    # -- validation --------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _all_or_nothing(self) -> Iterator[None]:
        """A call that raises (a refusal, or an interruption during the pass) leaves every attribute as it was;
        the attributes' arrays are replaced, never written in place, so their references are enough."""
        before = dict(self.__dict__)
        try:
            yield
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    def _settings(self) -> _Settings:
        """Every parameter checked, before any data is looked at."""
        learner = _or_default("learner", self.learner)
        if not isinstance(learner, Learner):
            raise TypeError(f"learner must be a jcsol learner (e.g. jcsol.COG()), got {learner!r}")
        grids = {k: np.shape(v) for k, v in learner.hyperparameters().items() if np.ndim(v) != 0}
        if grids:
            raise ValueError(
                f"{learner.name} has array hyperparameters {grids}: OnlineClassifier trains one model; "
                "use jcsol.run for grids, or GridSearchCV over scalar values"
            )
        self._check_rho_parameters()
        rs = self.random_state
        if not (
            rs is None
            or isinstance(rs, np.random.RandomState)
            or (isinstance(rs, (int, np.integer)) and not isinstance(rs, (bool, np.bool_)) and 0 <= rs < 2**32)
        ):
            raise ValueError(f"random_state must be None, an int in [0, 2**32) or a numpy RandomState, got {rs!r}")
        dtype = self._dtype()
        chunks.check_path(self.path, jax.default_backend())
        scaling.check_scale(self.scale)
        working = in_dtype(learner, dtype, f"learner={learner!r}")
        return _Settings(learner, working, dtype, self._normalize(), self.path, self.scale)

    @staticmethod
    def _chunk_backend(settings: _Settings, d: int) -> Choice:
        """The chunk backend of a pass over rows of ``d`` features (dense blocks, held in memory), refused if
        ``path`` names one that does not cover the learner."""
        probe = functools.partial(programs.probe, settings.working, None, d=d, dtype=settings.dtype)
        return chunks.choose(
            settings.path,
            settings.working,
            d=d,
            dtype=settings.dtype,
            dense_rows=True,
            platform=jax.default_backend(),
            probe=probe,
        )

    def _normalize(self) -> bool:
        if not isinstance(self.normalize, (bool, np.bool_)):
            raise ValueError(f"normalize must be True or False, got {self.normalize!r}")
        return bool(self.normalize)

    def _dtype(self) -> np.dtype:
        try:
            dtype = np.dtype(self.dtype)
        except (TypeError, ValueError):
            dtype = None
        if dtype not in (np.float32, np.float64):
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype!r}")
        if dtype == np.float64 and not jax.config.jax_enable_x64:  # type: ignore[attr-defined]  # a dynamic flag
            raise ValueError('dtype="float64" needs 64-bit JAX: jax.config.update("jax_enable_x64", True)')
        return dtype

    def _check_rho_parameters(self) -> None:
        """``objective`` and ``class_weight`` as far as they can be checked without the classes."""
        if self.class_weight is not None and self.objective is not None:
            raise ValueError("give either class_weight or objective, not both: both set ρ")
        cw = self.class_weight
        if isinstance(cw, str) and cw != "balanced" or not isinstance(cw, (str, dict, type(None))):
            raise ValueError(f"class_weight must be None, 'balanced' or a dict, got {cw!r}")
        if isinstance(cw, dict):
            for value in cw.values():
                if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating)):
                    raise ValueError(f"class_weight values must be numbers, got {cw!r}")
                if not (math.isfinite(float(value)) and float(value) > 0):
                    raise ValueError(f"class_weight values must be finite and > 0, got {cw!r}")
        objective = self.objective
        if objective is None:
            return
        if not isinstance(objective, (Sum, Cost)):
            raise TypeError(f"objective must be jcsol.Sum(...) or jcsol.Cost(...), got {objective!r}")
        if any(np.ndim(v) != 0 for v in objective.hyperparameters().values()):
            raise ValueError("the objective's hyperparameters must be scalars here; use jcsol.run for grids")

    def _rho_source(self) -> str:
        """What sets ρ, for messages."""
        return f"class_weight={self.class_weight!r}" if self.class_weight is not None else "the objective"

    def _rho_rule(self, incremental: bool) -> Objective:
        """The objective whose ``weight`` gives ``ρ_t`` (before the sample weight), per the class docstring."""
        mode = "laplace" if incremental else "offline"
        cw = self.class_weight
        if cw == "balanced" or (cw is None and self.objective is None):
            return Sum(alpha_p=0.5, rho=mode)
        if isinstance(cw, dict):
            unknown = [k for k in cw if k not in self.classes_.tolist()]
            if unknown:
                raise ValueError(f"class_weight has labels {unknown} that are not classes {self.classes_.tolist()}")
            rho = float(cw.get(self.pos_label_, 1.0)) / float(cw.get(self.neg_label_, 1.0))
            if not 0 < rho < math.inf:
                raise ValueError(f"ρ = {rho:.4g} set by class_weight={cw!r} is not a positive finite number")
            return _FixedRho(rho=rho)
        if isinstance(self.objective, Sum) and incremental:
            return dataclasses.replace(self.objective, rho="laplace")
        return self.objective

    def _targets(self, X, y, reset: bool):
        """``X`` (a float array or CSR matrix) and ``y``, validated."""
        check_feature_values(X)
        X, y = _validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32], reset=reset)
        check_classification_targets(y)
        return X, y

    @staticmethod
    def _binary_only(classes, what: str) -> None:
        if len(classes) > 2:
            raise ValueError(
                f"Only binary classification is supported. The type of the target is multiclass: "
                f"{what} holds {len(classes)} classes"
            )

    def _stream_classes(self, classes) -> tuple[np.ndarray, bool]:
        """The stream's two labels and whether this is its first call (scikit-learn's ``partial_fit`` rule)."""
        given = None
        if classes is not None:
            if np.ndim(classes) != 1:
                raise ValueError(f"classes must be a 1-D sequence of the stream's two labels, got {classes!r}")
            if any(isinstance(c, float) and math.isnan(c) for c in list(classes)):
                raise ValueError(f"classes={classes!r} holds NaN, which is no label")
            try:
                given = unique_labels(classes)
            except ValueError as err:
                raise ValueError(f"classes={classes!r} are not labels: {err}") from None
            self._binary_only(given, "classes")
            if len(given) < 2:
                raise ValueError(f"classes must hold both classes of the stream, got {given.tolist()}")
        if not hasattr(self, "classes_"):
            if given is None:
                raise ValueError("classes must be passed on the first call to partial_fit.")
            return given, True
        if given is not None and given.tolist() != self.classes_.tolist():
            raise ValueError(
                f"classes={given.tolist()} is not the same as on the last call to partial_fit, was: "
                f"{self.classes_.tolist()}"
            )
        return self.classes_, False

    def _choose_labels(self, classes: np.ndarray, y: np.ndarray) -> None:
        if self.pos_label is not None:
            same = [i for i, c in enumerate(classes) if _same_label(self.pos_label, c)]
            if not same:
                raise ValueError(f"pos_label={self.pos_label!r} is not one of the classes {classes.tolist()}")
            i = same[0]
        else:
            n0, n1 = (np.sum(y == c) for c in classes)
            i = 0 if n0 < n1 else 1
        self.pos_label_ = classes[i]
        self.neg_label_ = classes[1 - i]

    def _check_continues(self, learner: Learner, dtype: np.dtype) -> None:
        """Refuses a ``partial_fit`` whose parameters cannot continue the model fitted so far: another ``dtype``,
        a learner of another kind or other static options (even one whose state has the same layout), another
        ``normalize`` or ``scale``, or another ``pos_label``."""
        model = _state_dtype(self.state_)
        if dtype != model:
            raise ValueError(
                f"dtype={self.dtype!r} differs from the model's {model.name}: call fit to start over in {dtype.name}"
            )
        if type(learner) is not type(self.learner_) or learner.options() != self.learner_.options():
            raise ValueError(
                f"learner={learner!r} cannot continue the model of {self.learner_!r}: another learner, or other "
                "static options (only float hyperparameters may change between calls); call fit to start over with it"
            )
        fitted = getattr(self, "normalize_", None)  # None: fitted by a version that did not keep it
        if fitted is not None and bool(self.normalize) != fitted:
            raise ValueError(
                f"normalize={self.normalize!r} differs from the model's {fitted!r}: its rows were normalised "
                "otherwise; call fit to start over with it"
            )
        fitted_scale = "online" if getattr(self, "scaler_", None) is not None else None
        if self.scale != fitted_scale:
            raise ValueError(
                f"scale={self.scale!r} differs from the model's {fitted_scale!r}: its rows were scaled otherwise; "
                "call fit to start over with it"
            )
        if self.pos_label is not None and not _same_label(self.pos_label, self.pos_label_):
            chosen = np.asarray(self.pos_label_).tolist()
            raise ValueError(
                f"pos_label={self.pos_label!r} differs from pos_label_={chosen!r}, the +1 class of the stream so far; "
                "call fit to start over with it"
            )

    def _batch(self, X, y, sample_weight, incremental: bool, settings: _Settings) -> _Batch:
        """Checks the sample weights and each row's ``ρ_t``, and the rows' range, before the model is touched."""
        dtype = settings.dtype
        if not settings.normalize:
            _check_range(X, dtype)
        sw = _sample_weight(sample_weight, X)
        check_fits(sw, dtype, "sample_weight")
        signs = np.where(y == self.pos_label_, 1, -1).astype(np.int8)
        active = sw > 0
        positive = signs > 0
        totals = np.array([np.sum(active & positive), np.sum(active & ~positive)], np.int64)
        objective = self._rho_rule(incremental)
        if objective.needs_both_classes() and (totals == 0).any():
            which = self.pos_label_ if totals[0] == 0 else self.neg_label_
            raise ValueError(
                f"no row of class {which!r} has a positive sample_weight, so ρ = α_p·T_n/(α_n·T_p) "
                "is undefined with a single class; use Sum(rho='laplace'), Cost(...) or class_weight"
            )
        start = self.n_seen_ if incremental and hasattr(self, "n_seen_") else np.zeros(2, np.int64)
        seen = start + np.cumsum(np.stack([active & positive, active & ~positive], axis=1), axis=0)
        n, pad = len(signs), bucket(len(signs), at_least=SMALLEST_BATCH) - len(signs)
        objective = in_dtype(objective, dtype, f"ρ set by {self._rho_source()}")
        weights = sw.astype(dtype)
        counted = np.minimum(totals, COUNT_MAX).astype(np.int32)
        rho, rho_t = _rhos(
            objective,
            np.pad(positive, (0, pad)),
            np.pad(np.minimum(seen, COUNT_MAX), ((0, pad), (0, 0))).astype(np.int32),
            counted,
            np.pad(weights, (0, pad)),
        )
        rho, rho_t = np.asarray(rho)[:n], np.asarray(rho_t)[:n]
        info = np.finfo(dtype)
        bad = active & ~((rho >= info.tiny) & (rho <= info.max))
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(
                f"ρ = {float(rho[i]):.4g} set by {self._rho_source()} for row {i} is not a normal {dtype.name} number "
                f"(from {info.tiny:.4g} to {info.max:.4g}): make the costs less extreme, or use float64"
            )
        bad = active & ~((rho_t >= info.tiny) & (rho_t <= info.max))
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(
                f"sample_weight has {int(bad.sum())} positive value(s) whose ρ_t = s_t·ρ is not a normal "
                f"{dtype.name} number (from {info.tiny:.4g} to {info.max:.4g}): the first at row {i}, "
                f"s_t = {float(sw[i])!r}, ρ_t = {float(rho_t[i]):.4g}, whose update would "
                f"{'underflow to 0 and teach nothing' if rho_t[i] < info.tiny else 'overflow'}; rescale the "
                "weights, give 0 to skip a row, or use float64"
            )
        return _Batch(X, signs, weights, objective, counted, start, start + totals)

    # -- training ----------------------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        """A fresh model trained by one online pass over the rows of ``X`` in order.

        Args:
            X: ``(n, d)`` features (dense or sparse).
            y: ``(n,)`` labels, two classes.
            sample_weight: ``(n,)`` non-negative weights multiplying each row's ``ρ_t``; 0 skips the row.

        Returns:
            self
        """
        with self._all_or_nothing():
            settings = self._settings()
            X, y = self._targets(X, y, reset=True)
            classes = np.unique(y)
            self._binary_only(classes, "y")
            if len(classes) < 2:
                raise ValueError(
                    f"y holds a single class ({classes[0]!r}); fit needs both classes. To start a stream "
                    "with one class, use partial_fit(X, y, classes=[a, b])"
                )
            self.classes_ = classes
            self._choose_labels(classes, y)
            batch = self._batch(X, y, sample_weight, False, settings)
            choice = self._chunk_backend(settings, X.shape[1])
            self._start(settings, X.shape[1])
            self._learn(batch, settings, choice)
        return self

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Continues the online pass over the rows of ``X`` in order, keeping the model of earlier calls.

        Args:
            X: ``(n, d)`` features (dense or sparse).
            y: ``(n,)`` labels.
            classes: the two labels of the whole stream; required on the first call (scikit-learn's
                convention), optional afterwards (then it must equal ``classes_``).
            sample_weight: as in :meth:`fit`.

        Returns:
            self
        """
        with self._all_or_nothing():
            settings = self._settings()
            classes, first = self._stream_classes(classes)
            X, y = self._targets(X, y, reset=first)
            known = set(classes.tolist())
            unknown = sorted({label for label in np.unique(y).tolist() if label not in known}, key=repr)
            if unknown:
                raise ValueError(f"y holds labels {unknown} not in classes {classes.tolist()}")
            if first:
                self.classes_ = classes
                self._choose_labels(classes, y)
            else:
                self._check_continues(settings.learner, settings.dtype)
            batch = self._batch(X, y, sample_weight, True, settings)
            choice = self._chunk_backend(settings, X.shape[1])
            if first:
                self._start(settings, X.shape[1])
            self._learn(batch, settings, choice)
        return self

    def _start(self, settings: _Settings, d: int) -> None:
        """The model before the first row (the last step before the pass: it draws from ``random_state``)."""
        check_memory(settings.learner, d, 1, settings.dtype)  # one model, as a run of one
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        state = settings.learner.init(d, jax.random.key(seed), settings.dtype)
        self.state_ = jax.tree.map(np.asarray, state)
        self.scaler_ = jax.tree.map(np.asarray, scaling.init_scaler(settings.scale, d, settings.dtype, False))
        self.normalize_ = settings.normalize
        self.n_seen_ = np.zeros(2, np.int64)

    def _learn(self, batch: _Batch, settings: _Settings, choice: Choice) -> None:
        """The pass over a checked batch, a block of rows per compiled call on the chunk backend ``choice``;
        warns of rows beyond the learner's scales, and of a model that underflowed (still ``w = 0`` after rows
        with a positive loss) or diverged."""
        learner, dtype = settings.learner, settings.dtype
        if not settings.normalize:
            _warn_row_scales(learner, batch.X, dtype)
        state, scaler, seen, pushing, lo = self.state_, self.scaler_, batch.start, 0, 0
        still = not np.any(np.asarray(learner.weights(state)))
        for rows in _dense_blocks(batch.X, settings.normalize, dtype):
            hi = lo + len(rows)
            size = bucket(len(rows), at_least=SMALLEST_BATCH)
            stepped = np.flatnonzero(batch.weights[lo:hi] > 0)
            state, scaler, seen, pushed = _consume(
                settings.working,
                batch.objective,
                state,
                scaler,
                np.minimum(seen, COUNT_MAX - len(rows)).astype(np.int32),  # int32 counts that cannot overflow
                np.pad(rows, ((0, size - len(rows)), (0, 0))),
                np.pad(batch.signs[lo:hi], (0, size - len(rows))).astype(dtype),
                np.pad(batch.weights[lo:hi], (0, size - len(rows))),
                batch.totals,
                np.pad(stepped, (0, size - len(stepped))).astype(np.int32),
                np.int32(len(stepped)),
                choice=choice,
            )
            pushing, lo = pushing + int(pushed), hi
        self.state_ = jax.tree.map(np.asarray, state)
        self.scaler_ = jax.tree.map(np.asarray, scaler)
        self.n_seen_ = batch.seen
        self.learner_ = learner
        weights = np.asarray(learner.weights(self.state_))
        if not np.all(np.isfinite(weights)):
            warnings.warn(
                f"{learner.name} ended this pass with non-finite weights (the learner diverged: its scores are "
                "NaN and its predictions meaningless): lower its step size, normalise the rows or rescale the "
                "sample weights",
                RuntimeWarning,
                stacklevel=3,
            )
        elif still and pushing and not np.any(weights):
            warnings.warn(
                f"{learner.name} is still w = 0 after {pushing} row(s) with a positive loss: their updates "
                f"underflowed to 0 in {dtype.name} (rows, sample weights or step size too small); rescale them, "
                "or use float64",
                RuntimeWarning,
                stacklevel=3,
            )

    # -- prediction --------------------------------------------------------------------------------------
    def _scores(self, X) -> np.ndarray:
        """``f = w·x`` of the rows of ``X`` (positive: the +1 class ``pos_label_``)."""
        check_is_fitted(self, "state_")
        normalize = self._normalize()
        check_feature_values(X)
        X = _validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False)
        dtype = _state_dtype(self.state_)
        if not normalize:
            _check_range(X, dtype)
        scaler = getattr(self, "scaler_", None)
        blocks = [_score(self.learner_, self.state_, rows, scaler) for rows in _dense_blocks(X, normalize, dtype)]
        return np.concatenate([np.asarray(b, dtype=np.float64) for b in blocks])

    def decision_function(self, X) -> np.ndarray:
        """Scores oriented as scikit-learn's: ``> 0`` means ``classes_[1]``. Shape ``(n,)``."""
        f = self._scores(X)
        return f if self.pos_label_ == self.classes_[1] else -f

    def predict(self, X) -> np.ndarray:
        """``pos_label_`` where ``f = w·x >= 0``, the other class elsewhere."""
        f = self._scores(X)
        return np.where(f >= 0, self.pos_label_, self.neg_label_).astype(self.classes_.dtype)

    @property
    def coef_(self) -> np.ndarray:
        """The weights ``(1, d)`` of a linear learner, oriented like :meth:`decision_function`.

        They apply to the features as the learner sees them: L2-normalised rows when ``normalize=True``. A
        kernel learner (KOIL, the budget learners) has none: ``AttributeError``.
        """
        check_is_fitted(self, "state_")
        if not is_linear(self.learner_):
            raise AttributeError(
                f"coef_: {self.learner_.name} scores by a kernel over stored rows, not by weights of the features"
            )
        w = np.asarray(self.learner_.weights(self.state_), dtype=np.float64)
        return (w if self.pos_label_ == self.classes_[1] else -w)[None, :]
