"""Devices the engine spreads runs over.

The engine splits the permutation axis of a run over ``jax.local_devices()``. On a GPU or TPU host that is
every accelerator. On a CPU, JAX shows one device by default, which runs each compiled loop on one core; so
``import jcsol`` asks JAX for one CPU device per core (:func:`use_cpu_cores`), and the runs of a protocol proceed
on all cores at once with no set-up call. It does so only while JAX has not started (the device count is fixed
once it has) and only when nothing else chose the count: neither ``jax_num_cpu_devices`` nor
``--xla_force_host_platform_device_count`` in ``XLA_FLAGS``. ``JCSOL_CPU_DEVICES=n`` in the environment sets the
count (``1`` keeps JAX's default of one device; anything but a whole number >= 1 is refused at import); where one
of the settings above chose another count, or JAX has started, that count stays and a ``RuntimeWarning`` says
that ``JCSOL_CPU_DEVICES`` is ignored, naming what won. Other JAX code in the process is unaffected (its default
device stays ``cpu:0``) except that ``jax.devices("cpu")`` lists one device per core.

Several hosts: start each process with :func:`jcsol.distributed.initialize` and make the same call of
:func:`jcsol.run` in each; the runs are laid over the devices of every process, and every process returns the
whole result (``docs/distributed.md``).
"""

from __future__ import annotations

import os
import re
import warnings

import jax
import numpy as np

ENV_CPU_DEVICES = "JCSOL_CPU_DEVICES"
_FLAG = "--xla_force_host_platform_device_count"


def cpu_cores() -> int:
    """The cores this process may run on (its CPU affinity, which containers and ``taskset`` restrict)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def use_cpu_cores(n: int | None = None) -> int:
    """Exposes ``n`` CPU devices to JAX, so that :func:`jcsol.run` uses every core; returns the number of CPU
    devices.

    ``import jcsol`` already does this when it can (see the module's docstring); call it to choose another
    count. ``n`` is a whole number >= 1 (a float, a bool or 0 is refused, never rounded or read as the default).
    Without ``n``, the count already chosen is kept — ``jax_num_cpu_devices``, then
    ``--xla_force_host_platform_device_count`` in ``XLA_FLAGS``, then ``JCSOL_CPU_DEVICES`` — else one device
    per core. An ``n`` other than the count ``XLA_FLAGS`` sets wins over it (``jax_num_cpu_devices`` overrides the
    flag), with a ``RuntimeWarning`` naming both. Must be called before JAX runs anything (it sets
    ``jax_num_cpu_devices``); afterwards the device count is fixed for the process and a ``RuntimeError`` says so.
    """
    if n is not None:
        n = _device_count("use_cpu_cores: n", n)
    configured = jax.config.jax_num_cpu_devices  # type: ignore[attr-defined]  # a dynamic flag
    flagged = xla_flags_device_count()
    if n is None:
        if configured in (-1, None) and flagged is not None:
            return len(jax.devices("cpu"))
        n = configured if configured not in (-1, None) else _env_count() or cpu_cores()
    elif flagged is not None and _differs(n, flagged):
        warnings.warn(
            f"use_cpu_cores({n}) overrides XLA_FLAGS' {_FLAG}={flagged} (jax_num_cpu_devices wins over it)",
            RuntimeWarning,
            stacklevel=2,
        )
    if configured == n and backends_started():
        return len(jax.devices("cpu"))
    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError as err:
        raise RuntimeError(
            "use_cpu_cores() must be called before JAX runs any computation in this process "
            f"(JAX already has {len(jax.devices('cpu'))} CPU device(s))"
        ) from err
    return len(jax.devices("cpu"))


def _env_count() -> int | None:
    """The count ``JCSOL_CPU_DEVICES`` sets (decimal digits, a whole number >= 1; anything else refused), ``None``
    when it is not set."""
    wanted = os.environ.get(ENV_CPU_DEVICES, "").strip()
    if not wanted:
        return None
    if re.fullmatch(r"[0-9]+", wanted) is None or int(wanted) < 1:
        raise ValueError(f"{ENV_CPU_DEVICES} must be a whole number >= 1, got {wanted!r}")
    return int(wanted)


def _device_count(what: str, value) -> int:
    """``value`` as a device count: a whole number >= 1, refused naming ``what`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be a whole number >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{what} must be a whole number >= 1, got {value!r}")
    return int(value)


def xla_flags_device_count() -> str | None:
    """The count ``--xla_force_host_platform_device_count=N`` in ``XLA_FLAGS`` sets, as written (the last one
    given), ``None`` without one."""
    counts = re.findall(_FLAG + r"=(\S*)", os.environ.get("XLA_FLAGS", ""))
    return counts[-1] if counts else None


def _differs(count: int, written: str) -> bool:
    """Whether the count ``written`` as text is another than ``count``."""
    return not (written.isdecimal() and int(written) == int(count))


def backends_started() -> bool:
    from jax._src import xla_bridge  # no public way to ask without starting them

    return bool(getattr(xla_bridge, "_backends", None))


def configure_cpu_devices_on_import() -> None:
    """One CPU device per core (or ``JCSOL_CPU_DEVICES``), when JAX has not started and nobody chose a count.

    Where ``jax_num_cpu_devices`` or ``XLA_FLAGS`` already chose another count than ``JCSOL_CPU_DEVICES``, or JAX
    has started, that count is kept and a ``RuntimeWarning`` names what ``JCSOL_CPU_DEVICES`` lost to.
    """
    wanted = _env_count()
    configured = jax.config.jax_num_cpu_devices  # type: ignore[attr-defined]  # a dynamic flag
    flagged = xla_flags_device_count()
    if configured not in (-1, None):
        other = None if configured == wanted else f"jax_num_cpu_devices is {configured}"
    elif flagged is not None:
        other = None if wanted is not None and not _differs(wanted, flagged) else f"XLA_FLAGS sets {_FLAG}={flagged}"
    elif backends_started():
        other = None if wanted == len(jax.devices("cpu")) else "JAX started before jcsol was imported"
    else:
        n = wanted or cpu_cores()
        if n > 1:
            try:
                jax.config.update("jax_num_cpu_devices", n)
            except RuntimeError:  # JAX started in a way the check above could not see: keep its devices
                pass
        return
    if wanted is not None and other is not None:
        warnings.warn(f"{ENV_CPU_DEVICES}={wanted} is ignored: {other}", RuntimeWarning, stacklevel=3)


#: cgroup files (v2, then v1) holding the memory limit of this process's container, and its usage
_CGROUP_MEMORY = (
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
)


def _read_int(path: str) -> int | None:
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max": no limit


def _host_available() -> int:
    """Bytes the host can still give this process: the kernel's ``MemAvailable`` (free memory plus the page
    cache it can drop), less where the process's cgroup (a container's limit, whose excess the OOM killer ends)
    leaves less; the physical memory where neither can be read."""
    have = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    have = int(line.split()[1]) * 1024
    except OSError:
        pass
    for limit_file, usage_file in _CGROUP_MEMORY:
        limit, usage = _read_int(limit_file), _read_int(usage_file)
        if limit is not None and usage is not None and limit < 2**60:
            have = max(0, limit - usage) if have is None else min(have, max(0, limit - usage))
    if have is None:
        have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return have


def available_memory(device: jax.Device | None = None) -> int:
    """Bytes free on ``device`` (default: the first local one): an accelerator's allocator limit less what it
    holds; on the CPU, what the host can still give this process (``MemAvailable``, bounded by the cgroup's
    limit less its usage), not the total."""
    device = jax.local_devices()[0] if device is None else device
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    return _host_available()
