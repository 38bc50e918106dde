"""Arithmetic of a round that the engine's two time loops share (the scan of :mod:`jcsol.engine` and the kernel of
:mod:`jcsol.kernel`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def compensated_add(total: jax.Array, lost: jax.Array, value: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``total + value`` and what its rounding lost, ``lost`` carried beside the sum: Neumaier's compensated
    summation (A. Neumaier, *Rundungsfehleranalyse einiger Verfahren zur Summation endlicher Summen*, ZAMM 1974).
    ``total + lost`` is within a unit or two in the last place of the exact sum, whatever the number of terms;
    plainly summed in float32, a sum stops growing by terms of 1 at 2**24 and loses any term below half a unit in
    its last place. Adding 0 leaves both as they are."""
    t = total + value
    lost = lost + jnp.where(jnp.abs(total) >= jnp.abs(value), (total - t) + value, (value - t) + total)
    return t, lost
