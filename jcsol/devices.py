"""Devices the engine spreads runs over.

The engine splits the permutation axis of a run over ``jax.local_devices()``. On a GPU or TPU host that is
every accelerator. On a CPU, JAX shows one device by default, which runs each compiled loop on one core; so
``import jcsol`` asks JAX for one CPU device per core (:func:`use_cpu_cores`), and the runs of a protocol proceed
on all cores at once with no set-up call. It does so only while JAX has not started (the device count is fixed
once it has) and only when nothing else chose the count: neither ``jax_num_cpu_devices`` nor
``--xla_force_host_platform_device_count`` in ``XLA_FLAGS``. ``JCSOL_CPU_DEVICES=n`` in the environment sets the
count (``1`` keeps JAX's default of one device). Other JAX code in the process is unaffected (its default
device stays ``cpu:0``) except that ``jax.devices("cpu")`` lists one device per core.

Several hosts: start each process with :func:`jcsol.distributed.initialize` and make the same call of
:func:`jcsol.run` in each; the runs are laid over the devices of every process, and every process returns the
whole result (``docs/distributed.md``).
"""

from __future__ import annotations

import os
import warnings

import jax

ENV_CPU_DEVICES = "JCSOL_CPU_DEVICES"


def cpu_cores() -> int:
    """The cores this process may run on (its CPU affinity, which containers and ``taskset`` restrict)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def use_cpu_cores(n: int | None = None) -> int:
    """Exposes ``n`` CPU devices (default: one per core) to JAX, so that :func:`jcsol.run` uses every core.

    ``import jcsol`` already does this when it can (see the module's docstring); call it to choose another
    count. Must be called before JAX runs anything (it sets ``jax_num_cpu_devices``); afterwards the device
    count is fixed for the process and a ``RuntimeError`` says so. Returns the number of CPU devices.
    """
    n = int(n or cpu_cores())
    if n < 1:
        raise ValueError(f"use_cpu_cores needs n >= 1, got {n}")
    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return len(jax.devices("cpu"))
    if jax.config.jax_num_cpu_devices == n and _backends_started():  # type: ignore[attr-defined]  # a dynamic flag
        return len(jax.devices("cpu"))
    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError as err:
        raise RuntimeError(
            "use_cpu_cores() must be called before JAX runs any computation in this process "
            f"(JAX already has {len(jax.devices('cpu'))} CPU device(s))"
        ) from err
    return len(jax.devices("cpu"))


def _backends_started() -> bool:
    from jax._src import xla_bridge  # no public way to ask without starting them

    return bool(getattr(xla_bridge, "_backends", None))


def configure_cpu_devices_on_import() -> None:
    """One CPU device per core (or ``JCSOL_CPU_DEVICES``), when JAX has not started and nobody chose a count."""
    wanted = os.environ.get(ENV_CPU_DEVICES, "").strip()
    if wanted:
        try:
            n = int(wanted)
            if n < 1:
                raise ValueError
        except ValueError:
            raise ValueError(f"{ENV_CPU_DEVICES} must be a whole number >= 1, got {wanted!r}") from None
    else:
        n = cpu_cores()
    chosen_elsewhere = (
        jax.config.jax_num_cpu_devices not in (-1, None)  # type: ignore[attr-defined]  # a dynamic flag
        or "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")
    )
    if chosen_elsewhere or _backends_started():
        if wanted and not chosen_elsewhere:
            warnings.warn(
                f"{ENV_CPU_DEVICES}={wanted} is ignored: JAX started before jcsol was imported",
                RuntimeWarning,
                stacklevel=3,
            )
        return
    if n > 1:
        try:
            jax.config.update("jax_num_cpu_devices", n)
        except RuntimeError:  # JAX started in a way the check above could not see: keep its devices
            pass
