"""The kernel path's machine code, read on a machine without a GPU: registers, spills and the loop over rounds.

Lowers jcsol's one-kernel time loop (:mod:`jcsol.core.triton`) for CUDA here, at the a9a protocol's shapes (11 grid
points × 20 permutations, d = 123, one run a program on one warp), compiles its Triton IR for sm_90 (Hopper)
with the Triton compiler (``pip install triton``: its ptxas, cuobjdump and nvdisasm), and reads the SASS of the
loop over rounds, for each number of rounds an iteration of the loop (:attr:`jcsol.Kernel.unroll`):

* registers and spills a thread (cuobjdump's resource usage);
* instructions a round;
* a model of a round's cycles: one warp issuing the loop's instructions in order, an instruction a cycle at
  most, each waiting until its operands are written (arithmetic 4 cycles, shuffles 24, special functions 18,
  constant loads 20, global loads the ``--latencies`` given). With one warp or two on each of the SM's
  schedulers, as the 220-run protocol has, nothing hides a wait.

The model is fitted to a measured round: the load latency at which the loop taking one round an iteration
takes ``--measured-cycles`` (for ACOG-I-diag by default: the 0.30 µs a round measured on an NVIDIA H200 at
1,980 MHz, ``benchmarks/results/gpu_window-h200-2026-11-27.md``), and each loop's cycles at that latency.

A program of several warps (the full-covariance kernels: Σ spread over its threads' registers) shares its SM's
four schedulers with the other programs resident there: how many fit is set by the registers a thread (65,536
an SM) and 64 warps an SM, and the runs beyond one wave of them wait for the next. The protocol's modelled time
is then ``waves × rounds × max(the one-warp model's cycles, warps a scheduler × instructions a round)`` at the
H200's clock and 132 SMs (``--runs``, ``--rounds``), the second term the schedulers' issue, the load latency
the one fitted to ACOG-I-diag's measured round (``--load-latency`` to set another).

This is the code the pip Triton compiler writes, not necessarily jaxlib's own (the device compiles the kernel
with the Triton that jaxlib's GPU plugin ships), and a model of its timing: ``benchmarks/gpu_window.py`` measures
the loops on the device.

    python benchmarks/kernel_code.py                       # the ACOG-I-diag kernel, 1, 2, 4 and 8 rounds an iteration
    python benchmarks/kernel_code.py --learner COG-I --unroll 1,4 --json out.json
    python benchmarks/kernel_code.py --learner ACOG-II,AROW --unroll 1 --warps 4,8,16   # full Σ, d = 123
    python benchmarks/kernel_code.py --learner all --unroll 1     # every learner the kernel covers
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
if importlib.util.find_spec("jcsol") is None:
    sys.path.insert(0, str(HERE.parent))

#: Cycles until an instruction's result can be read, by opcode (global loads: the latency modelled).
LATENCY = {"SHFL": 24, "MUFU": 18, "LDC": 20, "S2R": 20, "S2UR": 20, "I2F": 8, "F2I": 8, "I2FP": 6, "F2F": 8}
ALU_LATENCY = 4
GLOBAL_LOADS = ("LDG", "LD")
NO_RESULT = ("STG", "ST", "BRA", "EXIT", "RET", "BAR", "NOP", "RED", "ATOM")
PREDICATE_RESULTS = ("FSETP", "ISETP", "DSETP", "PLOP3")
REGISTER = re.compile(r"\b(U?R\d+|U?P\d)\b")
#: A round of ACOG-I-diag's kernel (one run a program on one warp, one round an iteration) measured on an NVIDIA
#: H200: 0.30 µs at 1,980 MHz (``benchmarks/results/gpu_window-h200-2026-11-27.md``).
H200_ROUND_CYCLES = 0.30e-6 * 1.98e9
H200_CLOCK = 1.98e9
H200_SMS = 132
REGISTERS_AN_SM = 65536
WARPS_AN_SM = 64
SCHEDULERS_AN_SM = 4


def triton_ir(learner, *, unroll: int, block: int, warps: int, d: int, perms: int) -> str:
    """The Triton IR of ``learner``'s kernel (its grid as given), lowered for CUDA on this machine."""

    from jax._src.pallas.triton import pallas_call_registration

    import jcsol
    from jcsol.core import programs

    captured: list[str] = []
    lower = pallas_call_registration.lowering.lower_jaxpr_to_triton_module

    def capture(*args, **kwargs):
        result = lower(*args, **kwargs)
        captured.append(result.module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False))
        return result

    pallas_call_registration.lowering.lower_jaxpr_to_triton_module = capture
    try:
        path = jcsol.Kernel(block=block, num_warps=warps, unroll=unroll, interpret=False)
        programs.lowered_chunk(  # without scores, as jcsol.run compiles it
            learner, d=d, rounds=1024, perms=perms, curve_points=0, path=path, record_scores=False
        )
    finally:
        pallas_call_registration.lowering.lower_jaxpr_to_triton_module = lower
    (ir,) = captured
    return ir


def machine_code(ir: str, warps: int, folder: Path) -> dict:
    """The IR compiled for sm_90: ``{"sass", "registers", "spill_bytes", "triton"}``."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import compile as compile_ir

    source = folder / "kernel.ttir"
    source.write_text(ir)
    compiled = compile_ir(str(source), target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    cubin = folder / "kernel.cubin"
    cubin.write_bytes(compiled.asm["cubin"])
    tools = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    usage = subprocess.run(
        [str(tools / "cuobjdump"), "--dump-resource-usage", str(cubin)], capture_output=True, text=True, check=True
    ).stdout
    sass = subprocess.run([str(tools / "nvdisasm"), "-c", str(cubin)], capture_output=True, text=True, check=True)
    return {
        "sass": sass.stdout,
        "registers": int(re.search(r"REG:(\d+)", usage).group(1)),
        "spill_bytes": int(re.search(r"LOCAL:(\d+)", usage).group(1)),
        "triton": triton.__version__,
    }


def instructions(sass: str) -> tuple[list[str], dict[str, int]]:
    """The SASS's instructions in order and the position of each label."""
    out: list[str] = []
    labels: dict[str, int] = {}
    for line in sass.splitlines():
        label = re.match(r"\s*(\.L_x_\d+):", line)
        if label:
            labels[label.group(1)] = len(out)
            continue
        inst = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if inst:
            out.append(inst.group(1))
    return out, labels


def main_loop(sass: str) -> list[str]:
    """The instructions of the longest loop (a predicated branch back to a label above it)."""
    insts, labels = instructions(sass)
    loops = []
    for i, inst in enumerate(insts):
        branch = re.match(r"@!?U?P\d\s+BRA\s+`\((\.L_x_\d+)\)", inst)
        if branch and labels.get(branch.group(1), i + 1) <= i:
            loops.append((labels[branch.group(1)], i + 1))
    if not loops:
        raise ValueError("no loop in the SASS")
    start, end = max(loops, key=lambda loop: loop[1] - loop[0])
    return insts[start:end]


def operands(inst: str) -> tuple[str, list[str], list[str]]:
    """``(opcode, registers written, registers read)`` of one SASS instruction (predicates included)."""
    guard = re.match(r"@!?(U?P\d)\s+(.*)", inst)
    reads: list[str] = [guard.group(1)] if guard else []
    inst = guard.group(2) if guard else inst
    opcode, _, rest = inst.partition(" ")
    args = [a.strip() for a in rest.split(",")] if rest else []
    base = opcode.split(".")[0]
    width = 4 if ".128" in opcode else 2 if (".64" in opcode and base in ("LDG", "LDC", "LDS")) else 1
    predicates_out = next((i for i, a in enumerate(args) if not re.fullmatch(r"U?P(\d|T)", a)), len(args))
    if base in NO_RESULT:
        written, read = [], args
    elif base in PREDICATE_RESULTS:
        written, read = args[:2], args[2:]
    elif base in ("IADD3", "LEA", "IMAD", "UIADD3", "ULEA") and len(args) > 1 and re.fullmatch(r"U?P\d", args[1]):
        written, read = args[:2], args[2:]  # the result, then a carry out
    else:  # predicates out (SHFL's, LOP3's), then the result
        written, read = args[: predicates_out + 1], args[predicates_out + 1 :]
    names = [r for a in written for r in REGISTER.findall(a) if r not in ("PT", "UPT")]
    if names and width > 1:
        first = int(names[0].lstrip("UR"))
        prefix = "UR" if names[0].startswith("UR") else "R"
        names = [f"{prefix}{first + k}" for k in range(width)] + names[1:]
    if ".WIDE" in opcode and names:
        names.append(f"R{int(names[0].lstrip('R')) + 1}")
    reads += [r for a in read for r in REGISTER.findall(a) if r not in ("PT", "UPT")]
    return base, names, reads


def cycles_per_iteration(loop: list[str], load_latency: int, iterations: int = 40) -> float:
    """The model's steady-state cycles an iteration of ``loop``: in order, one instruction a cycle at most, each
    waiting for the registers it reads and writes."""
    decoded = [operands(inst) for inst in loop]
    ready: dict[str, int] = {}
    clock, starts = 0, []
    for _ in range(iterations):
        starts.append(clock)
        for base, written, read in decoded:
            issue = max([clock + 1] + [ready.get(r, 0) for r in read + written])
            latency = load_latency if base in GLOBAL_LOADS else LATENCY.get(base, ALU_LATENCY)
            for r in written:
                ready[r] = issue + latency
            clock = issue
    half = len(starts) // 2
    return (starts[-1] - starts[half]) / (len(starts) - 1 - half)


def fitted_latency(loop: list[str], rounds: int, measured_cycles: float) -> int | None:
    """The load latency at which the model's round of ``loop`` takes ``measured_cycles`` (None: not reached
    below 2,000 cycles)."""
    for latency in range(0, 2001, 10):
        if cycles_per_iteration(loop, latency) / rounds >= measured_cycles:
            return latency
    return None


def learner_grid(name: str):
    """``name``'s variant over :func:`jcsol.decades` of its first hyperparameter (the a9a protocol's grid), or a
    tenth apart where decades leave its range (a confidence in (0.5, 1))."""
    import numpy as np

    import jcsol

    learner = jcsol.by_name(name)
    if not learner.kernel_steps:
        raise SystemExit(f"{name} is not one of the kernel path's learners")
    hp = learner.hyperparameters()
    if not hp:
        return learner
    first = next(iter(hp))
    try:
        return learner.replace(**{first: jcsol.decades()})
    except ValueError:
        value = float(np.asarray(hp[first]))
        return learner.replace(**{first: value * np.linspace(0.9, 1.1, 11)})


def residency(registers: int, warps: int) -> int:
    """Programs of ``warps`` warps at ``registers`` a thread (allocated 8 at a time) resident on one SM."""
    allocated = -(-registers // 8) * 8
    return max(0, min(REGISTERS_AN_SM // (allocated * 32 * warps), WARPS_AN_SM // warps))


def protocol_ms(cycles_one_warp: float, instructions: float, registers: int, warps: int, runs: int, rounds: int):
    """``(waves, warps a scheduler, modelled ms)`` of ``runs`` programs of one run over ``rounds`` rounds."""
    per_sm = residency(registers, warps)
    if per_sm == 0:
        return 0, 0.0, float("inf")
    waves = -(-runs // (per_sm * H200_SMS))
    resident = min(runs, per_sm * H200_SMS) / H200_SMS
    per_scheduler = max(1.0, resident * warps / SCHEDULERS_AN_SM)
    cycles = max(cycles_one_warp, per_scheduler * instructions)
    return waves, per_scheduler, 1e3 * waves * rounds * cycles / H200_CLOCK


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--learner", default="ACOG-I-diag", help="names, comma-separated, or 'all' covered")
    parser.add_argument("--unroll", default="1,2,4,8", help="rounds an iteration compared (default 1,2,4,8)")
    parser.add_argument("--block", type=int, default=1)
    parser.add_argument("--warps", default="", help="warps a program, comma-separated (default: the kernel's own)")
    parser.add_argument("--d", type=int, default=123, help="features (default 123, a9a's)")
    parser.add_argument("--runs", type=int, default=220, help="runs of the protocol modelled (default 220)")
    parser.add_argument("--rounds", type=int, default=48_842, help="rounds of the protocol modelled (a9a's)")
    parser.add_argument("--latencies", default="0,200,400,600,800", help="global load latencies modelled, cycles")
    parser.add_argument(
        "--load-latency",
        type=int,
        help="the load latency of the protocol's model (default: fitted to ACOG-I-diag's round on the H200)",
    )
    parser.add_argument(
        "--measured-cycles",
        type=float,
        help="a round's measured cycles, one round an iteration (default: the H200's for ACOG-I-diag, 1 run a "
        "program on 1 warp; none for other kernels)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if importlib.util.find_spec("triton") is None:
        print("the Triton compiler is not installed: pip install triton", file=sys.stderr)
        return 2
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # fused multiply-adds: Triton's default before 3.10
    import jcsol
    from jcsol.core import chunks, triton

    names = (
        sorted(n for n in jcsol.VARIANTS if jcsol.by_name(n).kernel_steps)
        if args.learner == "all"
        else [n.strip() for n in args.learner.split(",")]
    )
    latencies = [int(v) for v in args.latencies.split(",")]
    unrolls = [int(v) for v in args.unroll.split(",")]
    if args.load_latency is None:
        ir = triton_ir(learner_grid("ACOG-I-diag"), unroll=1, block=1, warps=1, d=123, perms=20)
        with tempfile.TemporaryDirectory() as tmp:
            args.load_latency = fitted_latency(main_loop(machine_code(ir, 1, Path(tmp))["sass"]), 1, H200_ROUND_CYCLES)
    print(f"global load latency of the protocol's model: {args.load_latency} cycles")
    records = []
    for name in names:
        learner = learner_grid(name)
        if args.warps:
            warp_counts = [int(v) for v in args.warps.split(",")]
        else:
            state = chunks.state_shapes(learner, d=args.d, dtype="float32")
            leaves = [jax_shape((1, 1) + leaf.shape) for leaf in jcsol_leaves(state)]
            warp_counts = [triton.warps(jcsol.Kernel(), leaves, args.d)]
        for warps in warp_counts:
            records.append(measure(name, learner, args, unrolls, warps, latencies))
    for record in records:
        report(record, latencies)
    if args.json:
        out = records[0] if len(records) == 1 else records
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


def jcsol_leaves(tree):
    import jax

    return jax.tree.leaves(tree)


def jax_shape(shape):
    import jax

    return jax.ShapeDtypeStruct(shape, "float32")


def measure(name: str, learner, args, unrolls: list[int], warps: int, latencies: list[int]) -> dict:
    """One kernel shape's machine code and model, for each number of rounds an iteration."""
    measured = args.measured_cycles
    if measured is None and (name, args.block, warps) == ("ACOG-I-diag", 1, 1):
        measured = H200_ROUND_CYCLES
    record: dict = {"learner": name, "block": args.block, "warps": warps, "d": args.d, "loops": {}}
    loops = {}
    for unroll in unrolls:
        ir = triton_ir(learner, unroll=unroll, block=args.block, warps=warps, d=args.d, perms=20)
        with tempfile.TemporaryDirectory() as tmp:
            code = machine_code(ir, warps, Path(tmp))
        loops[unroll] = main_loop(code["sass"])
        record["triton"] = code["triton"]
        per_round = len(loops[unroll]) / unroll
        cycles = {lat: cycles_per_iteration(loops[unroll], lat) / unroll for lat in latencies}
        one_warp = cycles_per_iteration(loops[unroll], args.load_latency) / unroll
        waves, per_scheduler, ms = protocol_ms(
            one_warp, per_round, code["registers"], warps, args.runs // args.block, args.rounds
        )
        record["loops"][unroll] = {
            "registers": code["registers"],
            "spill_bytes": code["spill_bytes"],
            "instructions_a_round": per_round,
            "cycles_a_round": cycles,
            "programs_an_sm": residency(code["registers"], warps),
            "waves": waves,
            "warps_a_scheduler": per_scheduler,
            "load_latency": args.load_latency,
            "protocol_ms": ms,
        }
    fitted = None
    if measured is not None and 1 in loops:
        fitted = record["fitted_load_latency"] = fitted_latency(loops[1], 1, measured)
        record["measured_cycles"] = measured
    if fitted is not None:
        for unroll, loop in loops.items():
            record["loops"][unroll]["cycles_a_round_at_fitted_latency"] = cycles_per_iteration(loop, fitted) / unroll
    return record


def report(record: dict, latencies: list[int]) -> None:
    print(
        f"{record['learner']}, d = {record['d']}, {record['block']} run(s) a program on {record['warps']} warp(s), "
        f"sm_90, Triton {record['triton']}"
    )
    fitted = record.get("fitted_load_latency")
    if fitted is not None:
        print(
            f"fitted global load latency: {fitted} cycles "
            f"(a round of one an iteration = {record['measured_cycles']:.0f})"
        )
    header = "unroll  registers  spills  instr/round  " + "  ".join(f"L={lat:<4d}" for lat in latencies)
    print(header + "  programs/SM  waves  ms" + ("  fitted" if fitted is not None else ""))
    for unroll, row in record["loops"].items():
        cells = "  ".join(f"{row['cycles_a_round'][lat]:6.0f}" for lat in latencies)
        ms = row["protocol_ms"]
        tail = f"  {row['cycles_a_round_at_fitted_latency']:6.0f}" if fitted is not None else ""
        print(
            f"{unroll:6d}  {row['registers']:9d}  {row['spill_bytes']:6d}  {row['instructions_a_round']:11.0f}  "
            f"{cells}  {row['programs_an_sm']:11d}  {row['waves']:5d}  {ms:5.1f}{tail}"
        )


if __name__ == "__main__":
    sys.exit(main())
