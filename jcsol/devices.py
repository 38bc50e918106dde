"""Devices the engine spreads runs over.

The engine splits the permutation axis of a run over ``jax.local_devices()``. On a GPU or TPU host that is
every accelerator. On a CPU, JAX shows one device that runs each compiled loop on one core; call
:func:`use_cpu_cores` before any JAX computation to expose one CPU device per core, so the runs of a
protocol proceed on all cores at once. Several hosts: start each with ``jax.distributed.initialize()``;
each host then runs its share of the permutations on its local devices.
"""

from __future__ import annotations

import os

import jax


def use_cpu_cores(n: int | None = None) -> int:
    """Exposes ``n`` CPU devices (default: one per core) to JAX, so that :func:`jcsol.run` uses every core.

    Must be called before JAX runs anything (it sets ``jax_num_cpu_devices``); afterwards the device
    count is fixed for the process and a ``RuntimeError`` says so. Returns the number of CPU devices.
    """
    n = int(n or os.cpu_count() or 1)
    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return len(jax.devices("cpu"))
    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError as err:
        raise RuntimeError(
            "use_cpu_cores() must be called before JAX runs any computation in this process "
            f"(JAX already has {len(jax.devices('cpu'))} CPU device(s))"
        ) from err
    return len(jax.devices("cpu"))
