"""The learner contract every jcsol algorithm follows.

A learner is a frozen dataclass registered as a JAX pytree. Its float hyperparameters (η, γ, C, …) are
pytree *leaves*: giving one an array of values turns the learner into a grid that :func:`jcsol.run` vmaps
over. Its discrete choices (loss type, diagonal or full covariance, sketch size, budgets) are *static*
fields: they change shapes or code, so they are part of the compiled computation's identity.

Three pure methods make the contract:

``init(d, key, dtype) -> State``
    The model before the first example (a NamedTuple of arrays, ``w_1 = 0``, ``Σ_1 = I``).
``step(state, example) -> (State, StepInfo)``
    One online round: score ``x_t`` with the model *before* the update, then update. ``StepInfo.score``
    is that pre-update score, from which the engine derives the prediction (``score >= 0`` predicts +1).
``score(state, X) -> scores``
    Scores of held-out rows under a trained model.

Steps never branch in Python on data: updates that happen "only when the loss is positive" multiply the
change by a 0/1 mask, which vmaps and costs no extra pass over the state.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from typing import Any, ClassVar, Generic, NamedTuple, Self, TypeVar, cast, dataclass_transform

import jax
import jax.numpy as jnp
import numpy as np


class Example(NamedTuple):
    """One round of the stream, as a learner's ``step`` sees it.

    Attributes:
        x: features, shape ``(d,)``.
        y: label, ``+1.0`` (the rare class) or ``-1.0``, in the dtype of ``x``.
        rho: ``ρ_t``, the cost-sensitive weight of this example: ``ρ`` for a positive example,
            ``1`` for a negative one, with ``ρ`` set by the objective (offline, Laplace or cost ratio).
        cost: ``c(x_t) >= 0``, the example's own cost when the stream carries one, else ``ρ_t``; the engine
            always sets it (``None`` only in examples built by hand).
    """

    x: jax.Array
    y: jax.Array
    rho: jax.Array
    cost: jax.Array | None = None


class StepInfo(NamedTuple):
    """What a step reports about its round, computed with the model before the update.

    Attributes:
        score: ``f_t``; the prediction is ``+1`` when ``f_t >= 0``.
        loss: the learner's own loss at this round (``0`` where it did not update).
    """

    score: jax.Array
    loss: jax.Array


#: Where a learner's count of examples stops rather than wrap past int32 (a live stream has no end). A reservoir
#: then admits with probability N/(2**31 - 1), and a running mean weighs each example 1/(2**31 - 1): float32
#: arithmetic no longer tells either from the exact value.
COUNT_MAX = 2**31 - 1


def count_one(counts: jax.Array, index: Any = (), when: Any = True) -> jax.Array:
    """int32 ``counts`` with one more at ``index`` (where ``when``), saturating at :data:`COUNT_MAX`."""
    return counts.at[index].add(jnp.where(jnp.asarray(when) & (counts[index] < COUNT_MAX), 1, 0))


def hyperparameter(default: Any = dataclasses.MISSING, *, positive: bool = True) -> Any:
    """A float hyperparameter: a pytree leaf, so an array of values makes a grid.

    ``positive=True`` refuses values ``<= 0`` when they are concrete (not under a JAX transformation).
    """
    return dataclasses.field(default=default, metadata={"static": False, "positive": positive})


def choice(default: Any, *options: Any) -> Any:
    """A discrete, static option (part of the compiled computation), restricted to ``options``."""
    return dataclasses.field(default=default, metadata={"static": True, "options": options})


def concrete_values(value: Any) -> np.ndarray | None:
    """``value`` as a float array if it is concrete, ``None`` under tracing, for non-numeric leaves, and for
    arrays split over several processes (checked before they were placed)."""
    if isinstance(value, jax.core.Tracer):
        return None
    if isinstance(value, jax.Array) and not value.is_fully_addressable:
        return None
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, float, np.ndarray, np.generic, jax.Array)):
        try:
            return np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            return None
    return None


_REAL_KINDS = "iuf"  # numpy dtype kinds of real numbers (not bool, complex, strings or objects)


def _refuse_non_real(owner: str, name: str, value: Any) -> None:
    """Refuses a float hyperparameter that is not a real number or an array of real numbers: text, a bool, a
    complex number, ``None``, an object, or an array of those (a cast would read ``"1e-2"`` as an error deep in a
    compiled scan, ``True`` as 1.0 and ``1+2j`` as 1.0). Values being traced pass: JAX checks their use."""
    if isinstance(value, jax.core.Tracer):
        return
    if isinstance(value, (bool, np.bool_)):
        kind = type(value).__name__
    elif isinstance(value, (int, float, np.integer, np.floating)):
        return
    elif isinstance(value, (np.ndarray, jax.Array)):
        if np.dtype(value.dtype).kind in _REAL_KINDS:
            return
        kind = f"dtype {value.dtype}"
    else:
        kind = type(value).__name__
    got = "None" if value is None else f"{kind} {value!r}"
    raise TypeError(f"{owner}: {name} must be a real number or an array of real numbers, got {got}")


def _check_static(owner: str, f: dataclasses.Field, value: Any) -> None:
    """Static options: one of the declared ``options``; a non-negative integer where the default is an integer
    (budgets, sketch sizes, degrees: a float would be truncated); a finite real number where the default is a
    float."""
    options = f.metadata.get("options", ())
    if options:

        def same(o) -> bool:  # equal, and both flags or both not (1 is not True)
            return isinstance(value, (bool, np.bool_)) == isinstance(o, bool) and bool(value == o)

        try:
            known = any(same(o) for o in options)
        except (TypeError, ValueError):  # an array compared to the options
            known = False
        if not known:
            raise ValueError(f"{owner}: {f.name}={value!r} is not one of {', '.join(map(repr, options))}")
        return
    default = f.default
    if isinstance(default, int) and not isinstance(default, bool):  # the learner checks its own lower bound
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{owner}: {f.name} must be a non-negative integer, got {value!r}")
    elif isinstance(default, float):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float, np.integer, np.floating))
            or not np.isfinite(value)
        ):
            raise ValueError(f"{owner}: {f.name} must be a finite real number, got {value!r}")


class Configurable:
    """Validation and access shared by learners and objectives (frozen pytree dataclasses).

    The constructor is the one place where hyperparameters are checked: JAX rebuilds these objects from their
    leaves without calling it (:func:`pytree_dataclass`), so placeholders and traced values of a transformation
    never meet the checks, and the checks can refuse everything that is not a valid value.
    """

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("static"):
                _check_static(owner, f, value)
                continue
            if isinstance(value, (list, tuple)):  # a list of values is a grid, and must be one pytree leaf
                try:
                    grid = np.asarray(value)
                except ValueError:
                    raise ValueError(
                        f"{owner}: {f.name} must be a rectangular array of numbers, got {value!r}"
                    ) from None
                _refuse_non_real(owner, f.name, grid)
                value = grid.astype(np.float64)
                object.__setattr__(self, f.name, value)
            _refuse_non_real(owner, f.name, value)
            arr = concrete_values(value)
            if arr is None:
                continue
            if arr.size == 0:
                raise ValueError(f"{owner}: {f.name} is an empty array: a grid needs at least one value")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{owner}: {f.name} must be finite, got {value!r}")
            if f.metadata.get("positive") and np.any(arr <= 0):
                raise ValueError(f"{owner}: {f.name} must be > 0, got {value!r}")

    def hyperparameters(self) -> dict[str, Any]:
        """The float hyperparameters (pytree leaves) by name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if not f.metadata.get("static")}

    def options(self) -> dict[str, Any]:
        """The static choices by name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.metadata.get("static")}

    @property
    def pairings(self) -> tuple[frozenset[str], ...]:
        """The groups of hyperparameters that :func:`jcsol.paired` made take their values in step, which
        :func:`jcsol.grids.check_grid` lets share a grid axis. Kept by :meth:`replace` (a group while none or all
        of its fields change), copies and pickles; a learner rebuilt from its pytree leaves has none."""
        return self.__dict__.get(_PAIRINGS, ())

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes``, checked by the constructor; a pairing is kept unless only some of its fields
        change."""
        new = dataclasses.replace(self, **changes)
        changed = set(changes)
        kept = tuple(g for g in self.pairings if not g & changed or g <= changed)
        if kept:
            object.__setattr__(new, _PAIRINGS, kept)
        return new


#: The instance attribute that holds :attr:`Configurable.pairings` (not a field: no pytree leaf, no option).
_PAIRINGS = "_jcsol_pairings"

_Obj = TypeVar("_Obj", bound=Configurable)


def with_pairing(obj: _Obj, names: Iterable[str]) -> _Obj:
    """A copy of ``obj`` recorded as taking the values of its fields ``names`` in step (see
    :attr:`Configurable.pairings`); :func:`jcsol.paired` builds such grids."""
    group = frozenset(names)
    unknown = sorted(group - set(obj.hyperparameters()))
    if unknown:
        raise ValueError(f"{type(obj).__name__} has no hyperparameter {unknown}")
    paired = copy.copy(obj)
    object.__setattr__(paired, _PAIRINGS, (*obj.pairings, group))
    return paired


def in_dtype(obj: _Obj, dtype: Any, what: str = "the hyperparameters") -> _Obj:
    """``obj`` with its hyperparameters cast to ``dtype``, as a run computes with them, checked by its constructor
    once more: a value valid as given can be 0 or infinite in float32 (``eta=1e-46``, ``gamma=1e39``). This is the
    one check of a hyperparameter that only a run can make, knowing its dtype; refused naming ``what``."""
    dtype = np.dtype(dtype)
    with np.errstate(over="ignore", under="ignore"):
        try:
            return obj.replace(**{k: np.asarray(v, dtype) for k, v in obj.hyperparameters().items()})
        except ValueError as err:
            raise ValueError(f"{what} in {dtype.name}: {err} ({dtype.name} rounds the value given to this)") from None


#: The state of a learner: a NamedTuple of arrays (a pytree).
StateT = TypeVar("StateT")


class Learner(Configurable, Generic[StateT]):
    """Base of every learner; ``Learner[S]`` is a learner whose state type is ``S``.

    Subclasses are declared with :func:`pytree_dataclass`, define ``init`` and ``step``, and, for linear
    models, keep their weight vector in the state field named by ``weights_field``. Their float
    hyperparameters are typed ``ArrayLike`` (a number, or an array of values that makes a grid).
    """

    weights_field: ClassVar[str] = "w"

    #: The hyperparameter that the papers' protocols select from ``decades()`` (η, λ or C: "chosen from
    #: {10^-5, …, 10^5}", Wang, Zhao and Hoi, *Cost-Sensitive Online Classification*, IEEE ICDM 2012, and the
    #: ACOG paper), read by :func:`jcsol.protocols.default_grid`; ``None`` for a learner whose values the
    #: papers keep (no step size, or a confidence level).
    step_size: ClassVar[str | None] = None

    @property
    def sparse_steps(self) -> bool:
        """True when ``step`` accepts a :class:`jcsol.linalg.SparseVector` row and costs O(nnz) on it."""
        return False

    @property
    def kernel_steps(self) -> bool:
        """True when ``step`` runs inside the GPU kernel's loop over rounds (:mod:`jcsol.core.triton`) on dense
        rows: its products of a row go through :mod:`jcsol.linalg` (no matrix, gather or custom batching rule of
        its own). The kernel also needs a state of vectors of length ``d`` and scalars, which it checks itself."""
        return False

    # -- the contract -----------------------------------------------------------------------------------
    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> StateT:
        raise NotImplementedError

    def step(self, state: StateT, example: Example) -> tuple[StateT, StepInfo]:
        raise NotImplementedError

    def weights(self, state: StateT) -> jax.Array:
        """The linear predictor ``w`` (or the mean ``μ``) of a state."""
        return getattr(state, self.weights_field)

    def score(self, state: StateT, X: jax.Array) -> jax.Array:
        """Scores ``X @ w`` of held-out dense rows ``X`` (shape ``(n, d)``) under the one model in ``state``.

        For the states of many runs at once, use :meth:`jcsol.Result.score`.
        """
        return jnp.asarray(X) @ self.weights(state)

    def row_scales(self, d: int, dtype: Any) -> tuple[float, float]:
        """The range of a row's largest absolute entry over which this learner's steps on rows of at most ``d``
        non-zero entries, in the float ``dtype``, compute what exact arithmetic would to rounding;
        :func:`jcsol.run` warns of rows beyond it (``RuntimeWarning``), where a step or a score underflows to 0 or
        overflows to ``∞`` and the learner stops learning or predicts one class. :func:`normal_row_scales` by
        default. For a learner whose scale is a row's L2 norm (:meth:`row_norm_scales`), the range of the largest
        entry that keeps the norm within that range whatever the row (``[lo, hi/√d]``, as ``‖x‖ <= √d·max|xᵢ|``):
        a quick test, which the warning refines by the rows' norms.
        """
        norms = self.row_norm_scales(dtype)
        if norms is None:
            return normal_row_scales(dtype)
        lo, hi = norms
        return lo, hi / float(np.sqrt(max(1, int(d))))

    def row_norm_scales(self, dtype: Any) -> tuple[float, float] | None:
        """For a learner that compares whole rows (a kernel's ``‖x − x'‖²`` or ``x·x'``), the range of a row's L2
        norm over which its steps in the float ``dtype`` compute what exact arithmetic would to rounding, whatever
        the number of its entries; :func:`jcsol.run` then warns of rows whose norm is beyond it, as their
        largest entry says nothing of their distances (an L2-normalised row of many entries has small ones).
        ``None`` (default): the learner's scale is the rows' largest entry, :meth:`row_scales`."""
        return None

    # -- conveniences -----------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return type(self).__name__

    def too_large_hint(self) -> str:
        """Advice printed when the states of a run would not fit in memory."""
        return "use fewer runs (permutations × grid points)"


def normal_row_scales(dtype: Any, power: int = 2) -> tuple[float, float]:
    """``[(tiny/ε)^(1/p), (ε·max)^(1/p)]`` of the float ``dtype``, ``p = power``: the rows whose ``p``-th powers
    and products of ``p`` entries are normal numbers with a margin of ``1/ε`` for the weights' growth and the
    rows' width. With ``p = 2`` (``‖x‖²``, ``w·x`` with weights on the rows' scale), about 3e-16 to 6e15 in
    float32 and 1e-146 to 2e146 in float64."""
    info = np.finfo(dtype)
    return float((info.tiny / info.eps) ** (1 / power)), float((info.eps * info.max) ** (1 / power))


def covariance_row_scales(dtype: Any) -> tuple[float, float]:
    """:func:`normal_row_scales` capped at ``1/√ε`` (about 2,900 in float32, 6.7e7 in float64): the rows of a
    learner whose covariance update ``Σ − Σx xᵀΣ / (r + xᵀΣx)`` has ``r`` of order 1 (γ, ``1/C``, ``1/φ``). Beyond,
    ``xᵀΣx`` exceeds ``r/ε``, the subtraction cancels every digit of ``Σ`` along ``x``, and the learner's later
    steps follow the rounding: in float32 its predictions part from float64's on rows of entries near 1e4."""
    lo, _ = normal_row_scales(dtype)
    return lo, float(1 / np.sqrt(np.finfo(dtype).eps))


class RowExtents(NamedTuple):
    """What :func:`beyond_row_scales` compares with a learner's range, from one pass over the rows
    (:func:`row_extents`)."""

    top: np.ndarray  # (n,) each row's largest |entry|, float64
    widest: int  # the most non-zero entries of a row (at least 1)
    norms: np.ndarray  # (n,) each row's L2 norm, float64


#: Entries a block of :func:`row_extents` holds: small enough that its reductions read it from the cache, once
#: from memory.
_EXTENT_BLOCK = 2**17


def row_extents(values: np.ndarray) -> RowExtents:
    """Each row's largest |entry| and L2 norm and the most non-zero entries of a row (at least 1), of dense rows
    or the padded ``values`` of sparse ones: what :func:`beyond_row_scales` compares with a learner's range. The
    rows are read in blocks that fit in the cache, so the norms cost no second pass over them from memory. A
    norm is summed in the rows' dtype, and for a row whose squares could underflow or overflow there, from the
    row divided by its largest entry, in float64."""
    block = max(1, _EXTENT_BLOCK // max(1, values.shape[1]))  # rows at a time: no copy of a large X
    tops, norms, widest = [], [], 1
    for i in range(0, len(values), block):
        part = values[i : i + block]
        top = np.maximum(part.max(axis=1), -part.min(axis=1))
        tops.append(top.astype(np.float64))
        norms.append(np.sqrt(np.einsum("ij,ij->i", part, part)).astype(np.float64))
        widest = max(widest, int(np.count_nonzero(part, axis=1).max()))
    if not tops:
        return RowExtents(np.zeros(0), widest, np.zeros(0))
    top, norm = np.concatenate(tops), np.concatenate(norms)
    if values.dtype.kind == "f":
        info = np.finfo(values.dtype)
        safe = (top == 0) | ((top >= np.sqrt(info.tiny / info.eps)) & (top <= np.sqrt(info.max / values.shape[1])))
        for row in np.flatnonzero(~safe).tolist():
            scaled = np.asarray(values[row], np.float64) / top[row]
            norm[row] = top[row] * float(np.sqrt(scaled @ scaled))
    return RowExtents(top, widest, norm)


def beyond_row_scales(
    learner: Learner, values: np.ndarray | None, dtype: Any, extents: tuple | None = None
) -> str | None:
    """What to tell a user whose rows ``values`` (dense rows, or the padded ``values`` of sparse ones; or their
    :func:`row_extents`, given as ``extents``) are outside the learner's range in ``dtype`` — the count, the
    first such row and what to do — or ``None`` when every non-zero row is within it. The range is that of a
    row's L2 norm for a learner that has one (:meth:`Learner.row_norm_scales`, a kernel learner's), else that of
    its largest entry (:meth:`Learner.row_scales`). Rows of zeros are not beyond any scale."""
    if extents is None:
        assert values is not None
        if values.size == 0:
            return None
        extents = row_extents(values)
    top, widest = np.asarray(extents[0], np.float64), int(extents[1])  # float64: a range beyond the rows' dtype
    if top.size == 0:
        return None
    norm_range = learner.row_norm_scales(dtype)
    if norm_range is not None:
        if len(extents) > 2:
            size = np.asarray(extents[2], np.float64)
        elif values is not None:
            size = row_extents(values).norms
        else:  # a norm is between the largest entry and √widest times it: the rows surely beyond
            size = np.where(top > norm_range[1], top, np.minimum(top * np.sqrt(widest), norm_range[1]))
        lo, hi = norm_range
        what = "L2 norm"
    else:
        size = top
        lo, hi = learner.row_scales(widest, dtype)
        what = "largest |entry|"
    outside = (size > hi) | ((size > 0) & (size < lo))
    if not outside.any():
        return None
    row = int(np.argmax(outside))
    if norm_range is not None:
        why = (
            f"there {learner.name}'s {np.dtype(dtype).name} kernel values underflow, overflow or lose their digits "
            "(a kernel compares whole rows: its scale is a row's L2 norm, not its largest |entry|)"
        )
        remedy = (
            "L2-normalise the rows (normalize=True) or standardise the features, give the kernel parameters "
            'on the rows\' scale (sigma), or use dtype="float64"'
        )
    else:
        why = f"there {learner.name}'s {np.dtype(dtype).name} arithmetic underflows or overflows"
        remedy = 'standardise the features (each column to unit variance) or use dtype="float64"'
    return (
        f"{int(outside.sum())} of {len(top)} rows of X have their {what} outside [{lo:.3g}, {hi:.3g}], "
        f"the first at row {row} ({float(size[row]):.3g}): {why}, and it may stop learning or predict one class "
        f"where exact arithmetic would not; {remedy}"
    )


_C = TypeVar("_C", bound=type)


@dataclass_transform(frozen_default=True)
def pytree_dataclass(cls: _C) -> _C:
    """Class decorator: a frozen dataclass registered as a pytree, hyperparameters as leaves, static options as
    the tree's auxiliary data.

    JAX rebuilds an instance from its leaves (under ``jit``, ``vmap``, ``tree.map``) without calling its
    constructor, as equinox's generated unflatten does (``equinox/_module/_flatten.py``): the leaves may then be
    tracers, placeholders or ``None``, which the constructor's checks would refuse. The tree has the structure,
    key paths and printed form of ``jax.tree_util.register_dataclass``'s.
    """
    cls = cast(_C, dataclasses.dataclass(frozen=True)(cls))
    fields = dataclasses.fields(cls)
    data = tuple(f.name for f in fields if not f.metadata.get("static"))
    meta = tuple(f.name for f in fields if f.metadata.get("static"))
    keys = tuple(jax.tree_util.GetAttrKey(name) for name in data)

    def flatten(obj: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return tuple(getattr(obj, n) for n in data), tuple(getattr(obj, n) for n in meta)

    def flatten_with_keys(obj: Any) -> tuple[tuple[tuple[Any, Any], ...], tuple[Any, ...]]:
        return tuple(zip(keys, (getattr(obj, n) for n in data))), tuple(getattr(obj, n) for n in meta)

    def unflatten(aux: tuple[Any, ...], children: Any) -> Any:
        obj: Any = object.__new__(cls)
        for name, value in zip(data, children):
            object.__setattr__(obj, name, value)
        for name, value in zip(meta, aux):
            object.__setattr__(obj, name, value)
        return obj

    jax.tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)
    return cls
