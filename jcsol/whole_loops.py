"""jcsol's loops of rounds compiled as one kernel each by XLA's CPU compiler, in jcsol's programs alone.

XLA compiles a loop for the CPU, by default, as a sequence of small kernels ("thunks"), each called once per
round: about 20 for one round of a learner's step over a grid, about 1 µs a round spent calling them rather than
computing. XLA compiles a loop whole, into one kernel, only where the loop's buffers are under 1 kB (its
``xla_cpu_small_while_loop_byte_threshold``, which it reads from ``XLA_FLAGS`` once for every program of the
process: the opt-in of :mod:`jcsol.xla_cpu`). It does so by wrapping the loop in a call marked with the frontend
attribute ``xla_cpu_small_call``, whose callee its CPU compiler then emits as one kernel.

jcsol marks its own loops the same way, in its own programs. A loop of rounds is traced as a call
(:func:`one_kernel`: the engine's chunks and a padded batch's rounds, :mod:`jcsol.core.scan`) while its program
is lowered in :func:`marking`, and :func:`compiled` gives that call XLA's mark (:func:`whole_kernels`) before it
compiles the program; the live learner's and the estimator's jitted calls compile so through :class:`Marked`.
The process's other programs compile as they would without jcsol. A loop holding an operation XLA cannot emit
inside one kernel (a scatter, a sort, a call to its runtime: :data:`UNAVAILABLE`) stays a loop of small kernels,
as XLA leaves it. The marks are made on an x86-64 CPU, where jcsol's programs compile without FMA
(:func:`jcsol.xla_cpu.compile_options`), so that the one kernel rounds the same whatever the code around it;
not under ``JCSOL_XLA_CPU=default``, and not where the opt-in compiles every loop whole already. A marked loop
has the bits of XLA's own whole loop under the opt-in; against the loop of small kernels, some of its
reductions sum in another order (the states of sparse rows and of a few dense learners differ in their last
bits), which is why every way of running a round (the engine, the live learner, the estimator) marks its loop.

Inside a marked loop the sparse updates of :mod:`jcsol.linalg` are written without scatter (:func:`whole`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Mapping
from typing import Any

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
from jax.experimental.xla_metadata import set_xla_metadata

from . import xla_cpu

#: Operations that XLA's CPU compiler cannot emit inside one kernel (it leaves them to its runtime): a marked call
#: holding one is left unmarked.
UNAVAILABLE = frozenset(
    f"stablehlo.{name}"
    for name in (
        "scatter",
        "select_and_scatter",
        "sort",
        "custom_call",
        "rng",
        "rng_bit_generator",
        "fft",
        "triangular_solve",
        "cholesky",
        "all_reduce",
        "all_gather",
        "all_to_all",
        "reduce_scatter",
        "collective_permute",
        "collective_broadcast",
        "infeed",
        "outfeed",
        "send",
        "recv",
    )
)
#: Custom calls that only annotate the program for XLA's passes, none left when it is emitted.
ANNOTATIONS = frozenset({"LayoutConstraint", "Sharding"})
#: Operands of a marked call under this many bytes go in packed in one buffer (:func:`one_kernel`, :func:`packed`);
#: larger ones (the rows, a large state) as they are.
PACKED_BYTES = 1 << 20
DISABLED = "xla_disable_hlo_passes"  # the compiler option that names passes XLA skips
THREADED_OPERATIONS = "cpu-parallel-task-assigner"
_MARK = "jcsol_one_kernel"  # one_kernel's mark; whole_kernels turns it into XLA's
_ATTRIBUTES = "mhlo.frontend_attributes"
_MARKING = contextvars.ContextVar("jcsol_marking", default=False)
_INSIDE = contextvars.ContextVar("jcsol_inside_one_kernel", default=False)


def marks() -> bool:
    """Whether jcsol's programs mark their loops (:func:`marking`): on an x86-64 CPU, unless
    ``JCSOL_XLA_CPU=default`` or the opt-in compiles every loop whole already."""
    return xla_cpu.is_x86() and xla_cpu.setting() != "default" and not xla_cpu.loop_kernels


@contextlib.contextmanager
def marking():
    """The programs traced in this context have their loops of rounds marked by :func:`one_kernel` where
    :func:`marks`; yields whether they are (the lowered program is then compiled by :func:`compiled`)."""
    on = marks()
    token = _MARKING.set(on)
    try:
        yield on
    finally:
        _MARKING.reset(token)


def whole() -> bool:
    """Whether the rounds traced now are inside a call to be compiled as one kernel (:func:`one_kernel`), whatever
    their number: a kernel of one round writes a sparse row's entries as slices too, as a longer loop does (XLA
    still removes a loop of one round, and a few learners' last bits may then differ: :mod:`jcsol.engine`)."""
    return _INSIDE.get()


def one_kernel(fn, platform: str | None):
    """``fn`` (a function of arrays holding a loop of rounds) as a call to be compiled as one kernel
    (:func:`compiled`), where ``platform`` is the CPU and the program is traced in :func:`marking`; ``fn``
    itself elsewhere."""
    if platform != "cpu" or not _MARKING.get():
        return fn

    @functools.wraps(fn)
    def called(*args):
        # fn traced here, so that the values it closes over (the rows, say) are operands of the call like its
        # arguments. XLA emits a call as one kernel only where each operand lies in the buffers the kernel is given:
        # not a constant (which XLA may make of any operand computed from constants alone), not an empty array
        # (which has no buffer), not some small buffers it places otherwise. So values known when tracing go in as
        # constants, empty or unread ones are made inside, and the operands under PACKED_BYTES go in packed in one
        # buffer (packed), which holds the carry's leaves too, never constants alone
        leaves = jax.tree.leaves(args)
        if any(np.dtype(a.dtype).itemsize > 4 for a in leaves):  # 64-bit values (JAX's x64): left to XLA
            return fn(*args)
        token = _INSIDE.set(True)  # fn's steps are traced for one kernel (whole())
        try:
            closed, out_shape = jax.make_jaxpr(
                lambda *a: fn(*jax.tree.unflatten(jax.tree.structure(args), a)), return_shape=True
            )(*leaves)
        finally:
            _INSIDE.reset(token)
        jaxpr = closed.jaxpr
        values = [*closed.consts, *leaves]  # of jaxpr.constvars, then jaxpr.invars
        read = _read_vars(jaxpr)
        given = [
            i
            for i, (v, a) in enumerate(zip([*jaxpr.constvars, *jaxpr.invars], values))
            if isinstance(a, jax.core.Tracer) and a.size and v in read
        ]
        small = [i for i in given if values[i].nbytes < PACKED_BYTES]
        large = [i for i in given if values[i].nbytes >= PACKED_BYTES]

        def inner(words, *taken):
            full = [jnp.zeros(a.shape, a.dtype) if isinstance(a, jax.core.Tracer) else a for a in values]
            for i, a in zip(small, unpacked(words, [values[i] for i in small])):
                full[i] = a
            for i, a in zip(large, taken):
                full[i] = a
            n = len(jaxpr.constvars)
            out = jax.core.eval_jaxpr(jaxpr, full[:n], *full[n:])
            return [o for o in out if o.size]

        with set_xla_metadata(**{_MARK: "true"}):
            out = jax.jit(inner)(packed([values[i] for i in small]), *(values[i] for i in large))
        shapes, out_tree = jax.tree.flatten(out_shape)
        given_out = iter(out)
        return out_tree.unflatten([next(given_out) if o.size else jnp.zeros(o.shape, o.dtype) for o in shapes])

    return called


class Marked:
    """A ``jax.jit`` function whose loops of rounds compile whole: each of its programs is lowered in
    :func:`marking` and compiled by :func:`compiled`, once per ``key`` (the caller's, which must tell
    apart every signature the function is called with, as :func:`jcsol.core.programs.signature` does: its
    arguments' tree structures and abstract values, and its static arguments; or a function that gives it, called
    only where the key is read); where :func:`marks` is off, the jitted function itself."""

    def __init__(self, jitted):
        self.jitted = jitted
        self.on = marks()
        self.programs: dict = {}

    def __call__(self, key, *args, **static):
        if not self.on:
            return self.jitted(*args, **static)
        key = key() if callable(key) else key
        program = self.programs.get(key)
        if program is None:
            with marking():
                lowered = self.jitted.lower(*args, **static)
            program = self.programs[key] = compiled(lowered)
        return program(*args)

    def cache_size(self) -> int:
        """How many programs have been compiled."""
        return len(self.programs) if self.on else self.jitted._cache_size()


def _read_vars(jaxpr) -> set:
    """The variables that ``jaxpr``'s equations or results read."""
    read = {v for v in jaxpr.outvars if not isinstance(v, jax.extend.core.Literal)}
    for eqn in jaxpr.eqns:
        read.update(v for v in eqn.invars if not isinstance(v, jax.extend.core.Literal))
    return read


def packed(arrays) -> jax.Array:
    """``arrays`` (of at most 32 bits a value) as one vector of 32-bit words, one after the other: 32-bit values as
    their bits, narrower ones (booleans, 8- and 16-bit values) widened. Words, not bytes: inside one kernel, XLA's
    CPU compiler fails on 32-bit values put together from bytes (jaxlib 0.10.2)."""
    words = []
    for a in arrays:
        dtype, flat = np.dtype(a.dtype), a.reshape(-1)
        unsigned = np.dtype(f"uint{8 * dtype.itemsize}")
        if dtype != np.bool_ and dtype != unsigned:
            flat = jax.lax.bitcast_convert_type(flat, unsigned)
        words.append(flat.astype(jnp.uint32))
    return jnp.concatenate(words) if words else jnp.zeros(0, jnp.uint32)


def unpacked(words: jax.Array, like) -> list:
    """The arrays of :func:`packed`, of the shapes and dtypes of ``like``."""
    out, at = [], 0
    for a in like:
        dtype = np.dtype(a.dtype)
        part = jax.lax.slice(words, (at,), (at + a.size,))
        if dtype == np.bool_:
            value = part != 0
        else:
            unsigned = np.dtype(f"uint{8 * dtype.itemsize}")
            value = part.astype(unsigned)
            value = value if dtype == unsigned else jax.lax.bitcast_convert_type(value, dtype)
        out.append(value.reshape(a.shape))
        at += a.size
    return out


def compiled(lowered, options: Mapping[str, Any] | None = None):
    """``lowered`` (a ``jax.stages.Lowered``) compiled with ``options``, its marked loops (:func:`whole_kernels`)
    as one kernel each. Where a loop is marked, XLA's assignment of an operation's elements to several threads is
    off for the program (its pass ``cpu-parallel-task-assigner``, which XLA runs before it makes its own small
    loops one kernel each, and whose threaded operations its one kernel cannot hold); the runs are spread over
    the CPU's cores as devices already (:mod:`jcsol.devices`)."""
    options = dict(options or {})
    if whole_kernels(lowered):
        passes = [p for p in options.get(DISABLED, "").split(",") if p]
        options[DISABLED] = ",".join([*passes, THREADED_OPERATIONS])
    return lowered.compile(options or None)


def whole_kernels(lowered) -> bool:
    """Gives each call of ``lowered`` (a ``jax.stages.Lowered``, before it is compiled: its module is changed in
    place) that :func:`one_kernel` marked, where no other marked call holds it and nothing inside it is
    :data:`UNAVAILABLE`, the frontend attributes of XLA's own small loops (``xla_cpu_small_call``, and
    ``inlineable="false"`` so that XLA keeps the call); returns whether it gave them to any. JAX gives a call's
    attributes to every operation lowered inside it too: those are dropped, so that XLA inlines and optimises the
    calls inside as it does without the mark."""
    from jax._src.lib.mlir import ir  # the MLIR bindings of the installed jaxlib, as JAX lowers with them

    module = lowered.compiler_ir("stablehlo")
    funcs = {ir.StringAttr(op.operation.attributes["sym_name"]).value: op.operation for op in module.body.operations}

    def ops(op):
        yield op
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    yield from ops(inner.operation)

    def attributes(op) -> dict:
        if _ATTRIBUTES not in op.attributes:
            return {}
        given = ir.DictAttr(op.attributes[_ATTRIBUTES])
        return {given[i].name: given[i].attr for i in range(len(given))}

    def callee(op) -> str:
        return ir.FlatSymbolRefAttr(op.attributes["callee"]).value

    def unavailable(op) -> bool:  # a custom call that only annotates the program (a layout) is none
        if op.name == "stablehlo.custom_call":
            return ir.StringAttr(op.attributes["call_target_name"]).value not in ANNOTATIONS
        return op.name in UNAVAILABLE

    def called(name: str) -> set[str]:  # the functions that function ``name`` calls, itself included
        seen, stack = set(), [name]
        while stack:
            if (at := stack.pop()) not in seen:
                seen.add(at)
                stack.extend(callee(o) for o in ops(funcs[at]) if o.name == "func.call")
        return seen

    marked = [(name, op) for name, f in funcs.items() for op in ops(f) if _MARK in attributes(op)]
    made = False
    calls = [(name, op, called(callee(op))) for name, op in marked if op.name == "func.call"]
    inside = set().union(*(callees for _, _, callees in calls))
    xla_marks = {"xla_cpu_small_call": "true", "inlineable": "false"}
    with module.context:
        for _, op in marked:
            kept = {k: v for k, v in attributes(op).items() if k != _MARK}
            if kept:
                op.attributes[_ATTRIBUTES] = ir.DictAttr.get(kept)
            else:
                del op.attributes[_ATTRIBUTES]
        for name, op, callees in calls:
            if name not in inside and not any(unavailable(o) for f in callees for o in ops(funcs[f])):
                kept = attributes(op) | {k: ir.StringAttr.get(v) for k, v in xla_marks.items()}
                op.attributes[_ATTRIBUTES] = ir.DictAttr.get(kept)
                made = True
    return made
