"""XLA's CPU compiler options of jcsol's own programs (no FMA, no dot handed to YNNPACK), and the opt-in that
compiles every loop of the process as one kernel.

Every program jcsol compiles gets :func:`compile_options`, as the ``compiler_options`` of its ``jax.jit`` or of
its ``.compile()``; ``import jcsol`` leaves ``XLA_FLAGS``, and so every other JAX program of the process, as
they were.

On x86-64 the options limit XLA's code to AVX (``xla_cpu_max_isa=AVX``: no FMA instructions). Where LLVM fuses
a multiply and an add into one FMA depends on the code around them, and a round that rounds once here and twice
there breaks jcsol's promises that a chunked run, a resumed run and a live learner give the bits of one scan.
Elsewhere there is no instruction set without FMA to choose, and XLA's default is kept.

From jaxlib 0.8.1 on, XLA can hand a dot outside a loop (a batch's scores, say) to YNNPACK, a library of
hand-written kernels that chooses its kernel and how to split the work when it runs. The scores of the same
weights then came out in other bits in one process of two devices than in two processes of one device each
(jaxlib 0.10.2), and jcsol's promise that a job over several processes gives the bits of one process would
break. So the options turn these fusions off (``xla_cpu_experimental_ynn_fusion_type`` set to no type) on every
CPU, when the installed jaxlib knows the option (0.8.1 and later; 0.8.0 refuses an option it does not know);
XLA's own code then computes those dots.

An option that ``XLA_FLAGS`` names is left to it; ``JCSOL_XLA_CPU=default`` in the environment keeps XLA's
defaults for both. A GPU or TPU compiler ignores them.

**Loop kernels.** XLA compiles a loop for the CPU, by default, as a sequence of small kernels ("thunks"), each
called once per round: about 20 for one round of a learner's step over a grid, about 1 µs a round spent calling
them rather than computing. A loop whose body holds no scatter, sort or custom call can instead be compiled whole
into one kernel, as XLA does by itself only for loops under 1 kB (its ``xla_cpu_small_while_loop_byte_threshold``).
jcsol's own loops of rounds (the engine's chunks, a live learner's batches, the estimator's passes) are compiled
that way in jcsol's programs alone, on x86-64 (:mod:`jcsol.whole_loops`). XLA's limit itself is not an option of
one compilation: XLA reads it from ``XLA_FLAGS`` once, when JAX starts, for every program of the process.
``JCSOL_XLA_CPU=loops`` in the environment (read by ``import jcsol``) or :func:`use_loop_kernels` (after
``import jcsol``, before JAX's first computation) raise it to every size, on x86-64 only, so that every loop of
the process compiles whole (jcsol's too, with the same bits as its own marks give them); inside a loop of rounds
the sparse updates of :mod:`jcsol.linalg` are then written without scatter (:data:`loop_kernels`), so that their
loops qualify. jcsol's programs keep AVX, so that the one kernel rounds the same in a scan of any length (with
FMA, LLVM would fuse a multiply and an add wherever the code around them lets it); the process's other programs
get whole loops too, with XLA's own instruction set.

What the opt-in bought before jcsol marked its own loops, on a 2-core x86-64 CPU (best of 3, each setting in its
own processes, alternated). The engine's
scan of ACOG-I-diag × 11 η, one core (``python benchmarks/live.py``, its ``engine`` column): 1.86–1.89M
events/s against 0.61–0.63M over a hashed table of 2**18 features (3.0×), 1.08–1.11M against 0.55–0.56M over
a9a's sparse rows (2.0×), 1.52M against 0.59M over a9a's dense rows; a live learner's batches of 1,000 ran
1.7–2.5× as fast. The papers' protocol on a9a, 11 η × 20 permutations of 123 dense features over both devices
(``python benchmarks/host_overhead.py``'s runs, best of 5 in each process): COG-I 0.23–0.26 s against
0.36–0.46 s, ACOG-I-diag 0.57–0.61 s against 0.70–0.76 s; full ACOG-I (123 × 123 matrices, 11 η × 2
permutations) 1.35–1.38 s against 1.71–1.81 s. One event at a time (a live learner's ``predict`` + ``learn``
over a9a's dense rows) took 57 µs at the median either way: a loop of one round has no calls to save.
Without the opt-in, jcsol's programs ran as fast as under XLA's own defaults (``JCSOL_XLA_CPU=default``:
COG-I 0.37 s, ACOG-I-diag 0.70–0.72 s, full ACOG-I 1.71–1.82 s).

jcsol's marks now give its own loops those kernels by default (``python benchmarks/cpu_default.py`` compares
them with the opt-in); the opt-in adds the loops of the process's other programs.
"""

from __future__ import annotations

import os
import platform
import re
import warnings
from collections.abc import Mapping

import jaxlib.version  # imported with JAX already (reading it starts nothing)

from .devices import backends_started

ENV = "JCSOL_XLA_CPU"
SETTINGS = ("", "loops", "default")
LOOP_KERNELS = "xla_cpu_small_while_loop_byte_threshold"
MAX_ISA = "xla_cpu_max_isa"
LIBRARY_FUSIONS = "xla_cpu_experimental_ynn_fusion_type"
_EXTRA = "--xla_backend_extra_options"
_FIRST_WITH_LIBRARY_FUSIONS = (0, 8, 1)  # the first jaxlib whose XLA knows the option
_X86 = ("x86_64", "amd64", "x86", "i686")

loop_kernels = False  # whether this process's XLA compiles every loop as one kernel (set by the opt-in)


def setting(environ: Mapping[str, str] | None = None) -> str:
    """``JCSOL_XLA_CPU`` of ``environ`` (default: the process's): ``""``, ``"loops"`` or ``"default"``."""
    environ = os.environ if environ is None else environ
    choice = environ.get(ENV, "").strip().lower()
    if choice not in SETTINGS:
        raise ValueError(f"{ENV} must be 'loops', 'default' or unset, got {environ[ENV]!r}")
    return choice


def compile_options(
    environ: Mapping[str, str] | None = None, machine: str | None = None, jaxlib_version: str | None = None
) -> dict[str, str]:
    """The ``compiler_options`` of every program jcsol compiles: ``xla_cpu_max_isa="AVX"`` on x86-64 and
    ``xla_cpu_experimental_ynn_fusion_type=""`` where jaxlib knows it, each unless ``XLA_FLAGS`` names it; none
    under ``JCSOL_XLA_CPU=default``. ``environ``, ``machine`` and ``jaxlib_version`` default to the process's
    environment, this machine and the installed jaxlib."""
    environ = os.environ if environ is None else environ
    if setting(environ) == "default":
        return {}
    flags = environ.get("XLA_FLAGS", "")
    options = {}
    if is_x86(machine) and MAX_ISA not in flags:
        options[MAX_ISA] = "AVX"
    if LIBRARY_FUSIONS not in flags and _knows_library_fusions(jaxlib_version):
        options[LIBRARY_FUSIONS] = ""
    return options


def use_loop_kernels() -> bool:
    """Has XLA compile every loop of this process as one kernel (the module's docstring says when it pays), as
    ``JCSOL_XLA_CPU=loops`` does. Call it after ``import jcsol`` and before JAX's first computation: XLA reads
    the setting once, when JAX starts, and a ``RuntimeError`` says so afterwards. x86-64 only (elsewhere the one
    kernel would round differently in each loop, see the module's docstring); a loop limit that ``XLA_FLAGS``
    sets already is left to it. Returns whether loops are compiled as one kernel."""
    global loop_kernels
    if not asks_for_loop_kernels(os.environ.get("XLA_FLAGS", "")):
        add_loop_flag(os.environ, started=backends_started())
    loop_kernels = asks_for_loop_kernels(os.environ.get("XLA_FLAGS", ""))
    return loop_kernels


def configure_on_import() -> None:
    """Checks ``JCSOL_XLA_CPU``; under ``loops`` adds the loop limit to ``XLA_FLAGS`` (with a warning instead
    where JAX started before jcsol was imported). Records in :data:`loop_kernels` whether XLA will compile loops
    as one kernel (by this setting, or by the same one made by hand)."""
    global loop_kernels
    if setting() == "loops":
        if backends_started():
            warnings.warn(
                f"{ENV}=loops is ignored: JAX started before jcsol was imported", RuntimeWarning, stacklevel=3
            )
        else:
            add_loop_flag(os.environ)
    loop_kernels = asks_for_loop_kernels(os.environ.get("XLA_FLAGS", ""))


def add_loop_flag(environ, machine: str | None = None, started: bool = False) -> bool:
    """Adds the loop limit to ``environ["XLA_FLAGS"]`` unless it names one already; returns whether it added it.
    A ``RuntimeError`` where JAX has ``started`` or ``machine`` (default: this one) is not x86-64."""
    if started:
        raise RuntimeError(
            "use_loop_kernels() must be called before JAX runs any computation in this process "
            "(XLA read its loop limit when JAX started)"
        )
    if not is_x86(machine):
        raise RuntimeError(
            f"loop kernels need an x86-64 CPU (this one is {machine or platform.machine()!r}): elsewhere XLA has no "
            "instruction set without FMA, and one kernel per loop would round differently in each loop"
        )
    flags = environ.get("XLA_FLAGS", "")
    if LOOP_KERNELS in flags:
        return False
    environ["XLA_FLAGS"] = flags_with_loop_kernels(flags)
    return True


def flags_with_loop_kernels(flags: str) -> str:
    """``flags`` (an ``XLA_FLAGS`` value) with the loop limit at every size added in front (XLA stops reading at
    a word that is not a ``--flag``); an existing ``--xla_backend_extra_options`` gets it as one more
    ``key=value`` entry of its list."""
    option = f"{LOOP_KERNELS}={2**63 - 1}"
    pattern = re.compile(rf"{_EXTRA}=(\S*)")
    if pattern.search(flags):
        return pattern.sub(lambda m: f"{_EXTRA}={m.group(1)},{option}" if m.group(1) else f"{_EXTRA}={option}", flags)
    return f"{_EXTRA}={option} {flags}".strip()


def asks_for_loop_kernels(flags: str) -> bool:
    """Whether ``flags`` (an ``XLA_FLAGS`` value) has XLA compile loops of any size as one kernel: the loop
    limit at 2**31 bytes or more, as this module sets it."""
    found = re.search(rf"{LOOP_KERNELS}=(\d+)", flags)
    return found is not None and int(found.group(1)) >= 2**31


def is_x86(machine: str | None = None) -> bool:
    """Whether ``machine`` (default: this one) is x86-64, where jcsol's programs can keep AVX and loop kernels
    are offered."""
    return (machine if machine is not None else platform.machine()).lower() in _X86


def _knows_library_fusions(jaxlib_version: str | None) -> bool:
    """Whether XLA in jaxlib ``jaxlib_version`` (the installed one when ``None``) reads the fusions option."""
    if jaxlib_version is None:
        jaxlib_version = jaxlib.version.__version__
    return version_numbers(jaxlib_version) >= _FIRST_WITH_LIBRARY_FUSIONS


def version_numbers(version: str) -> tuple[int, ...]:
    """The first three numbers of a version string (``"0.9.0.1"``, ``"0.11.0.dev20270101"``), to compare with a
    tuple such as ``(0, 8, 1)``."""
    return tuple(int(n) for n in re.findall(r"\d+", version)[:3])
