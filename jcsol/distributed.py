"""Sweeps over several processes and hosts, on JAX's distributed runtime.

Start every process with :func:`initialize` (or ``jax.distributed.initialize``), then call :func:`jcsol.run`
with the same arguments in each. The runs of the sweep (grid points × permutations) are laid over one mesh of
every process's devices, in the order of the processes, as *units*: a unit is one permutation and one of the
``grid_blocks`` blocks of grid points (the whole grid by default). With ``U`` units and ``D`` devices in all,
device ``j`` runs the units ``j·U/D … (j+1)·U/D`` (``U`` padded to a multiple of ``D``), exactly as ``D``
devices of one process would, so the result is bit-identical to the same call in one process. Each process
feeds its devices only their runs (the row orders, the keys, the counts of each class) and the stream: the
arrays held in memory are replicated; a :class:`jcsol.datasets.RowStore` on a shared file system is read by
each process, for its own runs' rows only. After the last chunk, the counts, curves, scores and final
states of every run are gathered, so every process returns the same whole :class:`jcsol.Result` (or, with
``gather="first"``, process 0 alone, the others ``None``).

The processes meet after every chunk (a small all-gather), so they stay in step, a checkpoint is written by
all of them for the same chunk, and a process that died or cannot be reached surfaces on every other one as a
:class:`DistributedError` within a chunk; one that hangs without dying ends the others' wait with
:class:`jcsol.StallError` after ``stall_timeout``. Behind both, JAX's runtime ends every process within
``heartbeat_timeout`` seconds of one of them dying.
"""

from __future__ import annotations

import functools
import math
import sys
import threading
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .watchdog import StallError, watch

#: Seconds every process waits for all the others to join, by default.
DEFAULT_JOIN_TIMEOUT = 300.0

#: Seconds without a heartbeat after which JAX's runtime counts a process as dead and ends the others.
DEFAULT_HEARTBEAT_TIMEOUT = 60.0

#: Seconds JAX's own deadline for joining is given beyond ``join_timeout``, so that the message naming the
#: missing processes comes first.
_JOIN_GRACE = 5


class DistributedError(RuntimeError):
    """A process of a distributed run died, left, or cannot be reached by the others."""


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    local_device_ids=None,
    join_timeout: float = DEFAULT_JOIN_TIMEOUT,
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT,
) -> None:
    """Joins this process to a distributed run (``jax.process_index()`` then tells which process it is).

    ``jax.distributed.initialize`` with what jcsol needs: CPU collectives over TCP (``gloo``, so that CPU-only
    processes can gather their results), a bounded wait for the others to join, and a heartbeat timeout.
    Arguments left out are found by JAX from the cluster's environment (SLURM, Open MPI, Cloud TPU), or from
    ``JAX_COORDINATOR_ADDRESS``; see ``docs/distributed.md``. Must be called before JAX runs anything; it
    starts nothing itself, so JAX options (``use_cpu_cores``, say) can still be set after it.

    Args:
        coordinator_address: ``host:port`` of process 0, where it serves the coordination service.
        num_processes: how many processes take part.
        process_id: this process's index in ``[0, num_processes)``.
        local_device_ids: the accelerators this process uses (default: all it sees).
        join_timeout: seconds to wait for every process to join; past it, this process prints which wait
            failed and JAX ends it (a process that never starts cannot leave the others waiting for ever).
        heartbeat_timeout: seconds after which a process that stopped answering counts as dead, and JAX
            ends every other process.
    """
    for name, value in (("join_timeout", join_timeout), ("heartbeat_timeout", heartbeat_timeout)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value < math.inf:
            raise ValueError(f"{name} must be a number of seconds >= 1, got {value!r}")
    if jax.distributed.is_initialized():
        raise RuntimeError("jcsol.distributed.initialize was already called in this process")
    from jax._src import xla_bridge  # no public way to ask without starting the backends

    if xla_bridge.backends_are_initialized():
        raise RuntimeError(
            "jcsol.distributed.initialize must be called before JAX runs anything in this process "
            "(before any computation, jax.devices() or jax.device_put)"
        )
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    where = coordinator_address or "the coordinator"
    who = "this process" if process_id is None else f"process {process_id}"
    of = "" if num_processes is None else f" of {num_processes}"

    def not_joined():
        print(
            f"jcsol.distributed: {who}{of} waited {join_timeout:g} s for every process to join at {where}: "
            "a process did not start, failed before joining, or cannot reach the coordinator (check the address, "
            "the port and the process count). JAX ends this process now.",
            file=sys.stderr,
            flush=True,
        )

    timer = threading.Timer(join_timeout, not_joined)
    timer.daemon = True
    timer.start()
    try:
        jax.distributed.initialize(
            coordinator_address,
            num_processes,
            process_id,
            local_device_ids=local_device_ids,
            initialization_timeout=math.ceil(join_timeout) + _JOIN_GRACE,
            heartbeat_timeout_seconds=math.ceil(heartbeat_timeout),
        )
    finally:
        timer.cancel()


def global_devices() -> tuple:
    """Every device of every process, ordered by process, then by device id within a process."""
    return tuple(sorted(jax.devices(), key=lambda d: (d.process_index, d.id)))


class Spread:
    """Runs laid over the devices of several processes: the engine's placement of inputs and gathering of
    outputs when ``jax.process_count() > 1``.

    ``n_padded`` run units (a permutation and a block of grid points each, padded to a multiple of the device
    count) are split in equal blocks over
    ``devices`` (all of them, in :func:`global_devices` order). Collectives run under the engine's watchdog
    (``timeout`` seconds of no progress end them with :class:`jcsol.StallError`) and turn a peer's failure into
    :class:`DistributedError`.
    """

    def __init__(self, devices: tuple, n_padded: int, *, timeout: float | None, on_cpu: bool):
        self.devices, self.n_padded = devices, n_padded
        self.mesh = Mesh(np.array(devices), ("runs",))
        self.timeout, self.on_cpu = timeout, on_cpu
        self.process, self.n_processes = jax.process_index(), jax.process_count()
        per_device = n_padded // len(devices)
        mine = [j for j, d in enumerate(devices) if d.process_index == self.process]
        self.runs = slice(mine[0] * per_device, (mine[-1] + 1) * per_device)  # this process's runs, contiguous

    def layout(self) -> dict:
        """The process layout, recorded in checkpoints: processes, devices of each, and this process's runs."""
        per_process = [sum(d.process_index == p for d in self.devices) for p in range(self.n_processes)]
        return {
            "processes": self.n_processes,
            "process": self.process,
            "devices": per_process,
            "runs": [self.runs.start, self.runs.stop],
            "padded_runs": self.n_padded,
        }

    def split(self, tree) -> Any:
        """Arrays whose first axis is the runs' (the same on every process), as global arrays split over the
        devices: each process places only its own devices' blocks."""
        return self._place(tree, PartitionSpec("runs"))

    def whole(self, tree) -> Any:
        """Arrays every device reads whole, as global arrays replicated on every device."""
        return self._place(tree, PartitionSpec())

    def _place(self, tree, spec) -> Any:
        sharding = NamedSharding(self.mesh, spec)

        def one(a):
            if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
                return jax.random.wrap_key_data(one(jax.random.key_data(a)), impl=jax.random.key_impl(a))
            host = np.asarray(a)
            return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])

        return jax.tree.map(one, tree)

    def local(self, tree) -> list[np.ndarray]:
        """The leaves of a split tree, each cut to this process's runs (its devices' blocks, in order)."""

        def one(a):
            if a.size == 0:  # no data: its shards are not laid out by the runs (and need not be)
                return np.zeros((self.runs.stop - self.runs.start,) + a.shape[1:], a.dtype)
            shards = sorted(a.addressable_shards, key=lambda s: s.index[0].start or 0)
            return np.concatenate([np.asarray(s.data) for s in shards])

        return [one(a) for a in jax.tree.leaves(tree)]

    def from_local(self, shapes, leaves: list[np.ndarray]) -> Any:
        """A split tree of ``shapes`` from this process's runs of each leaf (what :meth:`local` gave)."""
        sharding = NamedSharding(self.mesh, PartitionSpec("runs"))

        def block(a, index):
            first, last, _ = index[0].indices(self.n_padded)
            return a[(slice(first - self.runs.start, last - self.runs.start),) + index[1:]]

        made = [
            jax.make_array_from_callback(s.shape, sharding, functools.partial(block, a))
            for s, a in zip(jax.tree.leaves(shapes), leaves)
        ]
        return jax.tree.unflatten(jax.tree.structure(shapes), made)

    def gather(self, tree, what: str, *, everywhere: bool = True) -> Any:
        """A split tree gathered whole (as NumPy arrays) on every process; with ``everywhere`` False, kept on
        process 0 only (``None`` elsewhere), gathered one leaf at a time so that no other process holds more
        than one gathered array at once."""
        if everywhere:
            return self.collective(lambda: multihost_utils.process_allgather(tree, tiled=True), what)
        leaves, treedef = jax.tree.flatten(tree)
        kept = []
        for leaf in leaves:
            whole = self.collective(functools.partial(multihost_utils.process_allgather, leaf, tiled=True), what)
            kept.append(whole if self.process == 0 else None)
            del whole
        return jax.tree.unflatten(treedef, kept) if self.process == 0 else None

    def agree(self, values, what: str) -> np.ndarray:
        """The small integer vectors ``values`` of every process, stacked in process order."""
        mine = np.asarray(values, dtype=np.int64)
        return np.asarray(self.collective(lambda: multihost_utils.process_allgather(mine), what))

    def same_call(self, fingerprint: str, **options: int) -> None:
        """Refuses, on every process, a run whose processes were called with different arguments: the
        ``fingerprint`` of the run (learner, objective, data, costs, permutations, key, dtype, curve points,
        chunk size, grid blocks) and the ``options`` that decide which collectives a run makes must agree."""
        mine = [int(fingerprint[:15], 16), *(int(v) for v in options.values())]
        table = self.agree(mine, "comparing the calls of jcsol.run")
        differ = [
            name
            for j, name in enumerate(
                [
                    "learner, objective, data, costs, permutations, key, dtype, curve points, chunk size or "
                    "grid blocks",
                    *options,
                ]
            )
            if np.any(table[:, j] != table[0, j])
        ]
        if differ:
            raise ValueError(
                f"process {self.process} of {self.n_processes}: the processes called jcsol.run with "
                f"different arguments ({'; '.join(differ)} differ): every process must make the same "
                "call, with the same data"
            )

    def barrier(self, step: int, what: str) -> None:
        """Waits for every process to reach ``step``; a process at another step is an error."""
        steps = self.agree([step], what)[:, 0]
        if np.any(steps != step):
            raise DistributedError(
                f"process {self.process} of {self.n_processes} reached {what} at step {step}, "
                f"but the processes are at steps {steps.tolist()}: they run different calls"
            )

    def collective(self, fn: Callable[[], Any], what: str) -> Any:
        """``fn()``, a computation every process takes part in: a stall past the timeout raises
        :class:`jcsol.StallError`, a failure (a peer that died or left) :class:`DistributedError`, naming ``what``."""

        def describe(timeout: float) -> str:
            return (
                f"process {self.process} of {self.n_processes} waited {timeout:g} s for the others at {what}: "
                "another process hangs or is much slower; the last checkpoint stays valid for a resume"
            )

        try:
            return watch(fn, timeout=self.timeout, on_cpu=self.on_cpu, describe=describe)
        except StallError:
            raise
        except (ValueError, RuntimeError) as err:
            raise DistributedError(
                f"process {self.process} of {self.n_processes}: {what} failed, as another process died, left or "
                f"cannot be reached ({str(err).splitlines()[0] if str(err) else type(err).__name__}); restart "
                "every process to resume from the last checkpoint"
            ) from err
