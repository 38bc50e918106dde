"""How the engine runs a chunk of rounds: the options of each chunk backend (:mod:`jcsol.core.chunks` holds the
backends themselves, in one registry).

On a CPU, a round of the scan costs about what its arithmetic costs (a microsecond of calls to XLA's small
kernels, none with whole-loop kernels: :mod:`jcsol.xla_cpu`). On a GPU, XLA runs the body of a loop as a few
kernels launched from the host at every round, several microseconds a round whatever the work (a round of a
first-order learner over a grid is a few hundred multiply–adds). The GPU kernel runs a whole chunk of rounds in
one launch: each program owns a block of grid points of one permutation, keeps their states in registers, and
reads each round's row itself.

``jcsol.run(..., path=...)`` takes ``"auto"`` (the default: the GPU kernel on a GPU where it covers the learner,
the scan elsewhere), a backend's name (``"scan"``, ``"kernel"``: each with its options for the platform,
:data:`GPU_SCAN` and :data:`GPU_KERNEL` on a GPU), or a :class:`Scan` or :class:`Kernel` with options of its own.
Which learners each backend covers is ``jcsol.learners()``'s ``paths`` column; off a GPU the kernel runs in
Pallas' interpreter (slow: for tests).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

CompilerOptions = tuple[tuple[str, Any], ...]


def _options(owner: str, value: Mapping[str, Any] | CompilerOptions) -> CompilerOptions:
    """XLA options of one compilation as a sorted tuple of ``(name, value)`` (hashable: part of the compiled
    program's identity)."""
    pairs = tuple(value.items()) if isinstance(value, Mapping) else tuple(value)
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
            raise TypeError(f"{owner}: compiler_options must map XLA option names to values, got {value!r}")
        if not isinstance(pair[1], (str, bool, int, float)):
            raise TypeError(
                f"{owner}: compiler option {pair[0]} must be a string, bool or number, got {type(pair[1]).__name__}"
            )
    return tuple(sorted(pairs))


def _whole(owner: str, name: str, value: Any, *, power_of_two: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{owner}: {name} must be a whole number >= 1, got {value!r}")
    if power_of_two and value & (value - 1):
        raise ValueError(f"{owner}: {name} must be a power of 2, got {value!r}")


@dataclasses.dataclass(frozen=True)
class Scan:
    """A chunk as one ``lax.scan`` over its rounds, every run's round vmapped inside (:mod:`jcsol.core.scan`).

    Args:
        unroll: rounds per iteration of the compiled loop (``lax.scan``'s ``unroll``): fewer iterations, a
            larger body. The bits do not change.
        compiler_options: XLA options of these compilations alone (e.g. ``{"xla_gpu_enable_command_buffer":
            "FUSION,WHILE"}``), given to ``.compile(compiler_options=...)``.
    """

    unroll: int = 1
    compiler_options: Mapping[str, Any] | CompilerOptions = ()

    def __post_init__(self) -> None:
        _whole("Scan", "unroll", self.unroll)
        object.__setattr__(self, "compiler_options", _options("Scan", self.compiler_options))


@dataclasses.dataclass(frozen=True)
class Kernel:
    """A chunk as one Pallas kernel on Pallas' Triton backend (:mod:`jcsol.core.triton`): a program per block of grid
    points of a permutation, looping over the chunk's rounds itself.

    Args:
        block: grid points a program holds (a power of 2; ``None``: every grid point of its permutation, the
            grid padded to a power of 2). Smaller blocks make more programs, each reading the same rows.
        num_warps: warps a program runs on (Triton's ``num_warps``; ``None``: one for states of vectors and
            scalars, and for a ``(d, d)`` matrix enough warps, up to 8, that it takes at most 64 registers a
            thread: :func:`jcsol.core.triton.warps`).
        num_stages: Triton's software-pipelining stages.
        interpret: run in Pallas' interpreter (default: off a GPU only).
        compiler_options: XLA options of these compilations alone.
        unroll: rounds per iteration of a program's loop over the rounds. The rows of an iteration's rounds are
            loaded during the iteration before, so a row's load has ``unroll`` rounds of arithmetic to arrive in;
            a round that uses a row loaded during its own iteration waits for it whenever the load takes longer
            than the round. The last ``n mod unroll`` rounds of a chunk run one an iteration. Each round runs the
            same operations, in the same order, as one round an iteration does. ``None``: 2 for states of vectors
            and scalars, 1 with a ``(d, d)`` matrix (:func:`jcsol.core.triton.rounds_an_iteration`).

    The defaults for states of vectors and scalars, one run per program on one warp, are the fastest shape
    measured on an NVIDIA H200 (JAX 0.11.2,
    ``python benchmarks/gpu_window.py``; ``benchmarks/results/gpu_window-h200-2026-11-27.md``). A round's time is
    the latency of one run's step, as every program runs at once: ACOG-I-diag over a9a (48,842 rounds), 11 η × 20
    permutations, took 14.5–16.0 ms (0.30–0.33 µs a round) against 23.7 ms with 4 runs a program, 29.4 ms with 2,
    and 27.8 ms with the whole grid of a permutation on 4 warps; its 2,420-run η × γ grid 27.5–28.3 ms against
    37.5 ms with 4 runs a program and 3.65 s with the whole grid on 4 warps. More warps, more pipelining stages
    (2, 3) and rows loaded further ahead (2 or 4 rounds) were as fast or slower. ``unroll`` above 1 was not among
    the shapes measured: its default is the machine code's model's (``benchmarks/kernel_code.py``), until a
    device measures it.
    """

    block: int | None = 1
    num_warps: int | None = None
    num_stages: int = 1
    interpret: bool | None = None
    compiler_options: Mapping[str, Any] | CompilerOptions = ()
    unroll: int | None = None

    def __post_init__(self) -> None:
        if self.block is not None:
            _whole("Kernel", "block", self.block, power_of_two=True)
        if self.num_warps is not None:
            _whole("Kernel", "num_warps", self.num_warps, power_of_two=True)
        _whole("Kernel", "num_stages", self.num_stages)
        if self.unroll is not None:
            _whole("Kernel", "unroll", self.unroll)
        if self.interpret is not None and not isinstance(self.interpret, bool):
            raise ValueError(f"Kernel: interpret must be True, False or None, got {self.interpret!r}")
        object.__setattr__(self, "compiler_options", _options("Kernel", self.compiler_options))


Path = Scan | Kernel

#: The GPU's kernel options (see :class:`Kernel`'s defaults).
GPU_KERNEL = Kernel()

#: The GPU's scan options: eight rounds an iteration. On an NVIDIA H200 (JAX 0.11.2, ``python
#: benchmarks/gpu_window.py``; ``benchmarks/results/gpu_window-h200-2026-11-27.md``) the a9a protocol's 220 runs of
#: ACOG-I-diag took 227 ms against 480 ms a round at a time (its 2,420-run grid 235 ms against 761 ms), full ACOG-I
#: 220 runs at d = 357 1.28 s against 3.26 s (65% of the card's peak memory bandwidth against 26%), at d = 123 0.63 s
#: against 1.61 s, KOIL's 8,820-run grid on letter 15.7 s against 28.8 s; compilation took about 1 s longer (KOIL's
#: 7.0 s against 1.1 s). XLA's command buffers (``xla_gpu_enable_command_buffer``) made the scan slower: 1.51 s for
#: the 220 runs, 1.00 s for the 2,420.
GPU_SCAN = Scan(unroll=8)
