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

import dataclasses
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class Example(NamedTuple):
    """One round of the stream, as a learner's ``step`` sees it.

    Attributes:
        x: features, shape ``(d,)``.
        y: label, ``+1.0`` (the rare class) or ``-1.0``, in the dtype of ``x``.
        rho: ``ρ_t``, the cost-sensitive weight of this example (SPEC §3): ``ρ`` for a positive example,
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


def hyperparameter(default: Any = dataclasses.MISSING, *, positive: bool = True) -> Any:
    """A float hyperparameter: a pytree leaf, so an array of values makes a grid.

    ``positive=True`` refuses values ``<= 0`` when they are concrete (not under a JAX transformation).
    """
    return dataclasses.field(default=default, metadata={"static": False, "positive": positive})


def choice(default: Any, *options: Any) -> Any:
    """A discrete, static option (part of the compiled computation), restricted to ``options``."""
    return dataclasses.field(default=default, metadata={"static": True, "options": options})


def concrete_values(value: Any) -> np.ndarray | None:
    """``value`` as a float array if it is concrete, ``None`` under tracing or for non-numeric leaves."""
    if isinstance(value, jax.core.Tracer):
        return None
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, float, np.ndarray, np.generic, jax.Array)):
        try:
            return np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            return None
    return None


class Configurable:
    """Validation and access shared by learners and objectives (frozen pytree dataclasses)."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("static"):
                options = f.metadata.get("options", ())
                if options and value not in options:
                    raise ValueError(
                        f"{type(self).__name__}: {f.name}={value!r} is not one of {', '.join(map(repr, options))}"
                    )
                continue
            if isinstance(value, (list, tuple)):  # a list of values is a grid, and must be one pytree leaf
                value = np.asarray(value, dtype=np.float64)
                object.__setattr__(self, f.name, value)
            arr = concrete_values(value)
            if arr is None:
                continue
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{type(self).__name__}: {f.name} must be finite, got {value!r}")
            if f.metadata.get("positive") and np.any(arr <= 0):
                raise ValueError(f"{type(self).__name__}: {f.name} must be > 0, got {value!r}")

    def hyperparameters(self) -> dict[str, Any]:
        """The float hyperparameters (pytree leaves) by name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if not f.metadata.get("static")}

    def options(self) -> dict[str, Any]:
        """The static choices by name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.metadata.get("static")}

    def replace(self, **changes: Any) -> "Configurable":
        return dataclasses.replace(self, **changes)


class Learner(Configurable):
    """Base of every learner.

    Subclasses are declared with :func:`pytree_dataclass`, define ``init`` and ``step``, and, for linear
    models, keep their weight vector in the state field named by ``weights_field``.
    """

    weights_field: ClassVar[str] = "w"
    #: True when ``step`` accepts a :class:`jcsol.linalg.SparseVector` row and costs O(nnz) on it.
    sparse_steps: ClassVar[bool] = False

    # -- the contract -----------------------------------------------------------------------------------
    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> NamedTuple:
        raise NotImplementedError

    def step(self, state: NamedTuple, example: Example) -> tuple[NamedTuple, StepInfo]:
        raise NotImplementedError

    def weights(self, state: NamedTuple) -> jax.Array:
        """The linear predictor ``w`` (or the mean ``μ``) of a state."""
        return getattr(state, self.weights_field)

    def score(self, state: NamedTuple, X: jax.Array) -> jax.Array:
        """Scores ``X @ w`` of held-out dense rows ``X`` (shape ``(n, d)``) under the one model in ``state``.

        For the states of many runs at once, use :meth:`jcsol.Result.score`.
        """
        return jnp.asarray(X) @ self.weights(state)

    # -- conveniences -----------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return type(self).__name__

    def too_large_hint(self) -> str:
        """Advice printed when the states of a run would not fit in memory."""
        return "use fewer runs (permutations × grid points)"


def pytree_dataclass(cls: type) -> type:
    """Class decorator: a frozen dataclass registered as a pytree, hyperparameters as leaves."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    fields = dataclasses.fields(cls)
    jax.tree_util.register_dataclass(
        cls,
        data_fields=[f.name for f in fields if not f.metadata.get("static")],
        meta_fields=[f.name for f in fields if f.metadata.get("static")],
    )
    return cls
