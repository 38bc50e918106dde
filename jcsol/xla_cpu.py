"""XLA's CPU compiler options that ``import jcsol`` sets: each scan compiled as one kernel, without FMA.

XLA compiles a loop for the CPU, by default, as a sequence of small kernels ("thunks"), each called once per
round: about 20 for one round of a learner's step over a grid, about 1 µs a round spent calling them rather
than computing. A loop whose body holds no scatter, sort or custom call can instead be compiled whole into one
kernel, as XLA does by itself only for loops under 1 kB (its ``xla_cpu_small_while_loop_byte_threshold``).
``import jcsol`` raises that limit to every size; inside a loop of rounds the sparse updates of
:mod:`jcsol.linalg` are written without scatter, so that their loops qualify. On a 2-core CPU
(``benchmarks/live.py``, one core) the engine's scan of ACOG-I-diag × 11 η over a hashed table of 2**18
features ran at 1.8M events/s against 0.68M under XLA's defaults, over a9a's sparse rows at 0.91M against 0.56M.
Where a round is wide and its work is arithmetic, AVX alone (below) costs more than the kernel calls saved:
the papers' protocol on a9a, 220 runs of 123 dense features in one scan (``benchmarks/engine_speed.py``, one
device, three pairs of runs), took 0.53–0.62 s against 0.41–0.50 s for COG-I, 1.04–1.31 s against 0.92–1.01 s
for ACOG-I-diag and 53–68 s against 34–47 s for full ACOG-I (its 123 × 123 matrices: AVX without the one kernel
took 80 s, the one kernel with FMA 57 s). ``JCSOL_XLA_CPU=default`` is the setting for such runs on a CPU.

One kernel for a whole loop body lets LLVM fuse a multiply and an add into one FMA wherever it sees them
together, and where it sees them depends on the code around them: the same round compiled inside a scan over
1,000 events and inside one over 333 would round differently, and jcsol's promises that a chunked run, a resumed
run and a live learner give the bits of one scan would break. So the same import limits XLA's CPU code to AVX
(``xla_cpu_max_isa=AVX``: no FMA instructions), which makes every round compute the same bits wherever it is
compiled. Both options are set together, only on x86-64 (elsewhere there is no instruction set without FMA to
choose, and XLA's defaults are kept), only while JAX has not started (XLA reads ``XLA_FLAGS`` once), and only
when ``XLA_FLAGS`` names neither option. ``JCSOL_XLA_CPU=default`` in the environment keeps XLA's defaults.
They concern XLA's CPU code only: GPU and TPU programs are unaffected.
"""

from __future__ import annotations

import os
import platform
import re

from .devices import _backends_started

ENV = "JCSOL_XLA_CPU"
LOOP_KERNELS = "xla_cpu_small_while_loop_byte_threshold"
NO_FMA = "--xla_cpu_max_isa=AVX"
_EXTRA = "--xla_backend_extra_options"
_X86 = ("x86_64", "amd64", "x86", "i686")

loop_kernels = False  # whether this process's XLA compiles every loop as one kernel: set by ``import jcsol``


def flags_with_loop_kernels(flags: str) -> str:
    """``flags`` (an ``XLA_FLAGS`` value) with both options added in front (XLA stops reading at a word that is
    not a ``--flag``); an existing ``--xla_backend_extra_options`` gets the loop option as one more
    ``key=value`` entry of its list."""
    option = f"{LOOP_KERNELS}={2**63 - 1}"
    pattern = re.compile(rf"{_EXTRA}=(\S*)")
    if pattern.search(flags):
        flags = pattern.sub(lambda m: f"{_EXTRA}={m.group(1)},{option}" if m.group(1) else f"{_EXTRA}={option}", flags)
        return f"{NO_FMA} {flags}".strip()
    return f"{_EXTRA}={option} {NO_FMA} {flags}".strip()


def asks_for_loop_kernels(flags: str) -> bool:
    """Whether ``flags`` (an ``XLA_FLAGS`` value) has XLA compile loops of any size as one kernel: the loop
    option at 2**31 bytes or more, as this module sets it."""
    found = re.search(rf"{LOOP_KERNELS}=(\d+)", flags)
    return found is not None and int(found.group(1)) >= 2**31


def configure_on_import() -> None:
    """Adds both options to ``XLA_FLAGS`` when this module's rules allow, and records in :data:`loop_kernels`
    whether XLA will compile loops as one kernel (by this setting, or by the same one made by hand)."""
    global loop_kernels
    add_flags(os.environ, started=_backends_started())
    loop_kernels = asks_for_loop_kernels(os.environ.get("XLA_FLAGS", ""))


def add_flags(environ, machine: str | None = None, started: bool = False) -> bool:
    """Sets both options in ``environ["XLA_FLAGS"]`` when this module's rules allow; returns whether it did."""
    choice = environ.get(ENV, "").strip().lower()
    if choice not in ("", "default"):
        raise ValueError(f"{ENV} must be 'default' or unset, got {environ[ENV]!r}")
    flags = environ.get("XLA_FLAGS", "")
    if (
        choice == "default"
        or started
        or (machine if machine is not None else platform.machine()).lower() not in _X86
        or LOOP_KERNELS in flags
        or "xla_cpu_max_isa" in flags
    ):
        return False
    environ["XLA_FLAGS"] = flags_with_loop_kernels(flags)
    return True
