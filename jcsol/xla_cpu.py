"""XLA's CPU compiler options that ``import jcsol`` sets: each scan compiled as one kernel, without FMA, and no
dot handed to YNNPACK.

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
when ``XLA_FLAGS`` names neither option.

From jaxlib 0.8.1 on, XLA can hand a dot outside a loop (a batch's scores, say) to YNNPACK, a library of
hand-written kernels that chooses its kernel and how to split the work when it runs. The scores of the same
weights then came out in other bits in one process of two devices than in two processes of one device each
(jaxlib 0.10.2), and jcsol's promise that a job over several processes gives the bits of one process would
break. So the same import turns these fusions off (``xla_cpu_experimental_ynn_fusion_type`` set to no type), on
every CPU, when the installed jaxlib knows the option (0.8.1 and later; 0.8.0 stops on a flag it does not know)
and ``XLA_FLAGS`` does not name it; XLA's own code then computes those dots.

The options are set only while JAX has not started; ``JCSOL_XLA_CPU=default`` in the environment keeps XLA's
defaults for all of them. They concern XLA's CPU code only: GPU and TPU programs are unaffected.
"""

from __future__ import annotations

import os
import platform
import re

import jaxlib.version  # imported with JAX already (reading it starts nothing)

from .devices import _backends_started

ENV = "JCSOL_XLA_CPU"
LOOP_KERNELS = "xla_cpu_small_while_loop_byte_threshold"
NO_FMA = "--xla_cpu_max_isa=AVX"
_EXTRA = "--xla_backend_extra_options"
LIBRARY_FUSIONS = "xla_cpu_experimental_ynn_fusion_type"
NO_LIBRARY_FUSIONS = f"--{LIBRARY_FUSIONS}="
_FIRST_WITH_LIBRARY_FUSIONS = (0, 8, 1)  # the first jaxlib whose XLA knows the option
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
    """Adds the options to ``XLA_FLAGS`` that this module's rules allow, and records in :data:`loop_kernels`
    whether XLA will compile loops as one kernel (by this setting, or by the same one made by hand)."""
    global loop_kernels
    add_flags(os.environ, started=_backends_started())
    loop_kernels = asks_for_loop_kernels(os.environ.get("XLA_FLAGS", ""))


def add_flags(environ, machine: str | None = None, started: bool = False, jaxlib_version: str | None = None) -> bool:
    """Sets the options in ``environ["XLA_FLAGS"]`` that this module's rules allow (``machine`` and
    ``jaxlib_version`` default to this machine's and the installed jaxlib's); returns whether it set any."""
    choice = environ.get(ENV, "").strip().lower()
    if choice not in ("", "default"):
        raise ValueError(f"{ENV} must be 'default' or unset, got {environ[ENV]!r}")
    if choice == "default" or started:
        return False
    flags = before = environ.get("XLA_FLAGS", "")
    x86 = (machine if machine is not None else platform.machine()).lower() in _X86
    if x86 and LOOP_KERNELS not in flags and "xla_cpu_max_isa" not in flags:
        flags = flags_with_loop_kernels(flags)
    if LIBRARY_FUSIONS not in flags and _knows_library_fusions(jaxlib_version):
        flags = f"{NO_LIBRARY_FUSIONS} {flags}".strip()
    if flags == before:
        return False
    environ["XLA_FLAGS"] = flags
    return True


def _knows_library_fusions(jaxlib_version: str | None) -> bool:
    """Whether XLA in jaxlib ``jaxlib_version`` (the installed one when ``None``) reads the fusions option."""
    if jaxlib_version is None:
        jaxlib_version = jaxlib.version.__version__
    return version_numbers(jaxlib_version) >= _FIRST_WITH_LIBRARY_FUSIONS


def version_numbers(version: str) -> tuple[int, ...]:
    """The first three numbers of a version string (``"0.9.0.1"``, ``"0.11.0.dev20270101"``), to compare with a
    tuple such as ``(0, 8, 1)``."""
    return tuple(int(n) for n in re.findall(r"\d+", version)[:3])
