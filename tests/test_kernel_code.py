"""``benchmarks/kernel_code.py`` reads SASS and models a loop's cycles: its reading of instructions and its model,
on hand-written SASS (compiling the kernel needs the Triton compiler, which the tests do not install)."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import kernel_code


@pytest.mark.parametrize(
    ("inst", "written", "read"),
    [
        ("LDG.E.128 R12, desc[UR22][R12.64]", ["R12", "R13", "R14", "R15"], ["UR22", "R12"]),
        ("@!P2 STG.E desc[UR22][R2.64], R43", [], ["P2", "UR22", "R2", "R43"]),
        ("FSETP.GT.AND P1, PT, R28, RZ, PT", ["P1"], ["R28"]),
        ("IMAD.WIDE R2, R3, 0x4, R4", ["R2", "R3"], ["R3", "R4"]),
        ("IADD3 R38, P0, R38, 0x1, RZ", ["R38", "P0"], ["R38"]),
        ("SHFL.BFLY PT, R46, R45, 0x10, 0x1f", ["R46"], ["R45"]),  # a predicate out (PT: none), then the result
        ("LOP3.LUT P0, RZ, R3, 0x1, RZ, 0xc0, !PT", ["P0"], ["R3"]),
    ],
)
def test_operands(inst, written, read):
    assert kernel_code.operands(inst)[1:] == (written, read)


LOOPS = """
        /*0000*/                   MOV R6, RZ ;
.L_x_0:
        /*0010*/                   FADD R7, R7, 1 ;
        /*0020*/               @P1 BRA `(.L_x_0) ;
.L_x_1:
        /*0030*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0040*/                   FADD R6, R6, R5 ;
        /*0050*/                   FADD R6, R6, R5 ;
        /*0060*/                   MOV R5, R4 ;
        /*0070*/               @P0 BRA `(.L_x_1) ;
        /*0080*/                   EXIT ;
"""


def test_the_longest_loop_is_read():
    assert kernel_code.main_loop(LOOPS) == [
        "LDG.E R4, desc[UR4][R2.64]",
        "FADD R6, R6, R5",
        "FADD R6, R6, R5",
        "MOV R5, R4",
        "@P0 BRA `(.L_x_1)",
    ]


def test_a_loop_that_moves_a_row_loaded_the_same_iteration_waits_for_the_load():
    loop = kernel_code.main_loop(LOOPS)
    at = {latency: kernel_code.cycles_per_iteration(loop, latency) for latency in (0, 100, 300)}
    assert at[300] - at[100] == pytest.approx(200)  # a cycle of latency is a cycle of the iteration
    assert at[0] == pytest.approx(9)  # the two dependent adds (4 + 4) and the branch's issue


def test_a_load_is_hidden_by_the_arithmetic_before_its_use():
    adds = [f"        /*{16 * (i + 1):04x}*/                   FADD R6, R6, R6 ;" for i in range(50)]
    sass = "\n".join(
        [".L_x_1:", "        /*0000*/                   LDG.E R4, desc[UR4][R2.64] ;"]
        + adds
        + ["        /*0400*/                   FADD R6, R6, R4 ;", "        /*0410*/               @P0 BRA `(.L_x_1) ;"]
    )
    loop = kernel_code.main_loop(sass)
    # 50 dependent adds take 200 cycles: a load of up to about that long costs nothing, a longer one its excess
    assert kernel_code.cycles_per_iteration(loop, 0) == kernel_code.cycles_per_iteration(loop, 150)
    assert kernel_code.cycles_per_iteration(loop, 400) - kernel_code.cycles_per_iteration(loop, 300) == 100


def test_the_fitted_latency_gives_the_measured_round():
    loop = kernel_code.main_loop(LOOPS)
    latency = kernel_code.fitted_latency(loop, 1, 500.0)
    assert kernel_code.cycles_per_iteration(loop, latency) >= 500.0
    assert kernel_code.cycles_per_iteration(loop, latency - 10) < 500.0
