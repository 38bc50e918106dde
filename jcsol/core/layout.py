"""The memory layout of a carry's state vectors: configurations minor for sparse-step learners on sparse rows.

The grid's values of one feature side by side, so that a round reading and writing a row's few features touches a
few memory lines, not one per configuration (rounds 2–3× faster on a CPU; dense rows are faster in the default
layout, and on accelerators the default layout is kept until measured). Only the memory layout changes, not the
arithmetic: the rounds constrain their carry to it (:func:`configs_minor`), the compiled calls take and give it
(:func:`carry_formats`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.layout import Format, Layout, with_layout_constraint
from jax.sharding import Mesh, PartitionSpec

#: State vectors shorter than this keep the default layout: their grid's state stays in the caches, and the
#: configurations-minor layout was measured no faster (0.9–1.1× at d = 123, 1.05–1.13× at 256, 1.5–1.6× at 1024).
MINOR_LAYOUT_MIN_D = 256


def minor_layout(learner, sparse_rows: bool, platform: str | None = None) -> bool:
    """Whether a carry's state vectors are laid out configurations minor: for a sparse-step learner on sparse
    rows, on the CPU (the one place both the rounds' layout constraint and the compiled calls' formats ask);
    ``platform`` defaults to JAX's default backend."""
    return bool(learner.sparse_steps and sparse_rows and (platform or jax.default_backend()) == "cpu")


def configs_minor(carry, *, minor: bool):
    """``carry`` (a :class:`jcsol.core.rounds.Carry`) with its state vectors (leaves ``(units, grid, d)``) laid
    out configurations minor when ``minor`` (:func:`minor_layout`)."""
    if not minor:
        return carry
    return carry._replace(state=jax.tree.map(_config_minor_leaf, carry.state))


def _config_minor_leaf(a):
    return with_layout_constraint(a, Layout((0, 2, 1))) if is_state_vector(a) else a


def is_state_vector(a) -> bool:
    """Whether a carry's leaf is a state vector ``(units, grid, d)`` long enough to be laid out apart."""
    return a.ndim == 3 and jnp.issubdtype(a.dtype, jnp.floating) and a.shape[-1] >= MINOR_LAYOUT_MIN_D


def is_format(x) -> bool:
    """A leaf of :func:`carry_formats`' tree: a ``Format``, or ``None`` (the default)."""
    return x is None or isinstance(x, Format)


def carry_formats(carry_shape, learner, devices: tuple, sparse_rows: bool, platform: str | None = None):
    """The formats (layout and placement) of a carry for a compiled init or advance over sparse rows or dense
    ones: :func:`configs_minor`'s layout on its state vectors, ``None`` (the default) elsewhere."""
    none = jax.tree.map(lambda _: None, carry_shape)
    if not minor_layout(learner, sparse_rows, platform):
        return none
    sharding: Any
    if len(devices) == 1:
        sharding = jax.sharding.SingleDeviceSharding(devices[0])
    else:
        sharding = jax.sharding.NamedSharding(Mesh(np.array(devices), ("runs",)), PartitionSpec("runs"))
    fmt = Format(Layout((0, 2, 1)), sharding)
    state = jax.tree.map(lambda a: fmt if is_state_vector(a) else None, carry_shape.state)
    return none._replace(state=state)
