"""Runs placed as *units* over devices and processes, and laid out back in the grid's order.

A unit is one permutation and one block of consecutive grid points (the whole grid unless ``grid_blocks`` cuts
it). A unit is never split: its grid points share each round's row, so a learner's products over them are one
matrix–vector product whose rounding depends on how many grid points it holds (XLA's CPU kernels take its rows in
tiles). Splitting whole units leaves every unit's arithmetic as it is, so a result does not depend on the device
count. Units are laid out first, grid points of the unit's block second.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..distributed import global_devices


def devices_for(n_units: int, at_least: int = 1) -> tuple:
    """The devices a run's units are split over: in one process, its local devices, but no more than leave
    ``at_least`` units to each; over several processes, every device of every process (each process must take
    part, the units padded to ``at_least`` a device)."""
    if jax.process_count() > 1:
        return global_devices()
    return tuple(jax.local_devices()[: max(1, min(n_units // at_least, len(jax.local_devices())))])


def runs_here(n_units: int) -> int:
    """How many of ``n_units`` units this process's devices hold (all of them, in one process)."""
    if jax.process_count() == 1:
        return n_units
    return -(-n_units // jax.device_count()) * jax.local_device_count()


#: The alignment from which XLA's CPU devices read a host array where it lies: ``jax.device_put`` then makes no
#: copy (jaxlib 0.8 to 0.10 alike; an array at a multiple of 16 or 32 bytes is copied).
CPU_ALIGNMENT = 64
#: Host arrays from this size on are placed on CPU devices as one buffer of :func:`aligned` memory that they all
#: read; smaller ones as ``jax.device_put`` places them.
SHARED_BYTES = 1 << 20


def aligned(a: np.ndarray, *, copy: bool = False) -> np.ndarray:
    """``a`` as a C-contiguous array at a multiple of :data:`CPU_ALIGNMENT` bytes: ``a`` itself where it is one
    (and ``copy`` is false), else a copy in memory NumPy allocates, which it asks the kernel to back by huge pages
    when large. XLA's own allocation for a copy of a large array is not, and the first writes to its fresh 4 KiB
    pages cost more than the copy itself: 0.6–0.9 s for the 394 MB of 800,000 rows of 123 float32 features on 2
    cores, against about 0.1 s here."""
    if not copy and a.flags.c_contiguous and a.ctypes.data % CPU_ALIGNMENT == 0:
        return a
    buffer = np.empty(a.nbytes + CPU_ALIGNMENT, np.uint8)
    start = -buffer.ctypes.data % CPU_ALIGNMENT
    out = buffer[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    np.copyto(out, a)
    return out


class Local:
    """Inputs placed on one process's ``devices`` as the compiled programs read them: :meth:`whole` on every
    device, :meth:`split` over the devices by their first axis, the units' (:class:`jcsol.distributed.Spread`
    does the same over several processes).

    An input placed elsewhere than its program expects (on the default device alone, say, when the units are
    split over two) is copied to the program's devices at every call: for the rows, a pass over the whole
    stream for every chunk. Placed here once, they are never moved again.

    On CPU devices a large input placed whole is one host array in :func:`aligned` memory that every device reads
    where it lies, rather than a copy per device: the rows of a stream placed for two devices take the memory and
    the time of one copy, and none for an array already aligned (a :class:`jcsol.Stream`'s own copy is)."""

    def __init__(self, devices: tuple):
        self._whole: jax.sharding.Sharding
        self._split: jax.sharding.Sharding
        self._devices = devices
        self._on_cpus = all(d.platform == "cpu" for d in devices)
        if len(devices) == 1:
            self._whole = self._split = jax.sharding.SingleDeviceSharding(devices[0])
        else:
            mesh = Mesh(np.array(devices), ("runs",))
            self._whole, self._split = NamedSharding(mesh, PartitionSpec()), NamedSharding(mesh, PartitionSpec("runs"))

    def whole(self, tree) -> Any:
        """``tree``'s arrays on every device (all of them read the stream, the slots, a shared grid whole)."""
        if not self._on_cpus:
            return jax.device_put(tree, self._whole)
        return jax.tree.map(self._whole_on_cpus, tree)

    def _whole_on_cpus(self, leaf):
        if not isinstance(leaf, np.ndarray) or leaf.nbytes < SHARED_BYTES:
            return jax.device_put(leaf, self._whole)
        host = aligned(leaf)
        shards = [jax.device_put(host, device) for device in self._devices]
        return jax.make_array_from_single_device_arrays(leaf.shape, self._whole, shards)

    def split(self, tree) -> Any:
        """``tree``'s arrays split over the devices by their first axis, the units'."""
        return jax.device_put(tree, self._split)


def pad_runs(per_unit, n_devices: int, at_least: int = 1):
    """Pads the unit axis (every leaf's first) to a multiple of the device count, with ``at_least`` units a
    device, by repeating the last unit."""
    n = jax.tree.leaves(per_unit)[0].shape[0]
    pad = n_devices * max(at_least, -(-n // n_devices)) - n
    if not pad:
        return per_unit
    return jax.tree.map(lambda a: jnp.concatenate([a, jnp.repeat(a[-1:], pad, axis=0)]), per_unit)


def blocked(tree, n_perm: int, blocks: int, block: int):
    """Hyperparameter leaves of the flat grid as ``(n_perm * blocks, block)``: unit ``u`` holds the grid
    points of block ``u % blocks``, the last block padded with copies of the last point."""

    def one(a):
        padded = np.concatenate([a, np.repeat(a[-1:], blocks * block - a.shape[0])])
        return np.tile(padded.reshape(blocks, block), (n_perm, 1))

    return jax.tree.map(one, tree)


def grid_major(tree, grid_shape: tuple[int, ...], n_perm: int, blocks: int):
    """Leaves laid out (units, grid points of the unit's block, …) as (grid_shape…, permutations, …), the
    padded units and grid points dropped. Unit ``u`` is permutation ``u // blocks``, block ``u % blocks``."""
    n_grid = math.prod(grid_shape)

    def one(a):
        xp = np if isinstance(a, np.ndarray) else jnp
        per_perm = a[: n_perm * blocks].reshape((n_perm, blocks * a.shape[1]) + a.shape[2:])[:, :n_grid]
        return xp.swapaxes(per_perm, 0, 1).reshape(grid_shape + (n_perm,) + a.shape[2:])

    return jax.tree.map(one, tree)


def sharded(fn, devices: tuple, in_specs: tuple, out_specs: Any = None):
    """``fn`` with its unit axis split over ``devices`` (``shard_map`` over a mesh named ``"runs"``; ``fn`` itself
    on one device); the data are replicated, as every run reads the whole stream. The outputs are split over the
    units unless ``out_specs`` says otherwise.

    Arrays with no elements (a carry's curve of no points, say) do not cross the ``shard_map``: ``fn`` gets and
    gives them as zeros made on each side. XLA's CPU compiler of jaxlib 0.11.2 crashed (a segmentation fault in
    its SPMD partitioner) on a program whose split inputs and outputs included one, on 2 devices or more
    (``benchmarks/results/cpu-devices-crash-h200-2026-11-27.json``)."""
    if len(devices) == 1:
        return fn
    mesh = Mesh(np.array(devices), ("runs",))
    out_specs = PartitionSpec("runs") if out_specs is None else out_specs
    n = len(devices)

    def split(*args):
        leaves, treedef = jax.tree.flatten(args)
        arg_specs = leaf_specs(in_specs, args)
        filled = [bool(math.prod(a.shape)) for a in leaves]

        def whole_args(given):
            given = iter(given)
            return jax.tree.unflatten(
                treedef,
                [
                    next(given) if full else jnp.zeros(local_shape(a.shape, spec, n), a.dtype)
                    for a, spec, full in zip(leaves, arg_specs, filled)
                ],
            )

        def kept(xs, keep):
            return tuple(x for x, k in zip(xs, keep) if k)

        def split_map(body, specs):
            return jax.shard_map(body, mesh=mesh, in_specs=kept(arg_specs, filled), out_specs=specs, check_vma=False)

        # the outputs' shapes, traced where fn's collectives have their axis (nothing is compiled)
        outs = jax.eval_shape(split_map(lambda *given: fn(*whole_args(given)), out_specs), *kept(leaves, filled))
        out_leaves, out_def = jax.tree.flatten(outs)
        out_filled = [bool(math.prod(o.shape)) for o in out_leaves]

        def body(*given):
            return kept(jax.tree.leaves(fn(*whole_args(given))), out_filled)

        given = iter(split_map(body, kept(leaf_specs(out_specs, outs), out_filled))(*kept(leaves, filled)))
        return jax.tree.unflatten(
            out_def, [next(given) if full else jnp.zeros(o.shape, o.dtype) for o, full in zip(out_leaves, out_filled)]
        )

    return split


def leaf_specs(specs, tree) -> list:
    """``specs``, a prefix of ``tree`` whose leaves are ``PartitionSpec``s, as one spec per leaf of ``tree``."""
    per_leaf: list = []
    jax.tree.map(
        lambda spec, sub: per_leaf.extend([spec] * len(jax.tree.leaves(sub))),
        specs,
        tree,
        is_leaf=lambda x: isinstance(x, PartitionSpec),
    )
    return per_leaf


def local_shape(shape: tuple, spec: PartitionSpec, n: int) -> tuple:
    """The shape of one device's part of an array of ``shape`` split by ``spec`` over ``n`` devices."""
    return (shape[0] // n, *shape[1:]) if len(spec) and spec[0] == "runs" else tuple(shape)


def on_host(tree, devices: tuple):
    """``tree`` as it is on one device; split over several, fetched to the host shard by shard. An eager
    operation on arrays split over several CPU devices is one program with a collective in it, which XLA's CPU
    runtime can abort on (a participant that never arrives)."""
    return tree if len(devices) == 1 else jax.tree.map(np.asarray, tree)


def precision(devices: tuple):
    """The context a run's programs are traced in, on ``devices`` (none: an accelerator's): float32 products in
    float32 on accelerators, whose default would take TF32's 10-bit mantissas for a matrix product; the CPU
    computes in float32 anyway."""
    on_cpu = bool(devices) and devices[0].platform == "cpu"
    return contextlib.nullcontext() if on_cpu else jax.default_matmul_precision("highest")
