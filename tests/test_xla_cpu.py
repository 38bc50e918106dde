"""XLA's CPU options of jcsol's own compilations (no FMA, no YNNPACK fusions), the opt-in that compiles each scan
as one kernel, and the scatter-free sparse writes it needs."""

import os
import platform
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import jaxlib.version
import numpy as np
import pytest

from jcsol import linalg, xla_cpu

OPTION = f"xla_cpu_small_while_loop_byte_threshold={2**63 - 1}"
AVX = {"xla_cpu_max_isa": "AVX"}
NO_YNN = {"xla_cpu_experimental_ynn_fusion_type": ""}
X86 = platform.machine().lower() in ("x86_64", "amd64")
YNN = xla_cpu.version_numbers(jaxlib.version.__version__) >= (0, 8, 1)


@pytest.mark.parametrize(
    ("environ", "machine", "jaxlib_version", "expected"),
    [
        ({}, "x86_64", "0.8.0", AVX),  # XLA would refuse an option it does not know
        ({}, "x86_64", "0.8.1", AVX | NO_YNN),
        ({}, "AMD64", "0.10.2", AVX | NO_YNN),
        ({}, "aarch64", "0.9.0.1", NO_YNN),  # no instruction set without FMA to choose
        ({}, "aarch64", "0.8.0", {}),
        ({"JCSOL_XLA_CPU": "loops"}, "x86_64", "0.10.2", AVX | NO_YNN),
        ({"JCSOL_XLA_CPU": "default"}, "x86_64", "0.10.2", {}),
        ({"JCSOL_XLA_CPU": " Default "}, "x86_64", "0.10.2", {}),
        ({"XLA_FLAGS": "--xla_cpu_max_isa=AVX2"}, "x86_64", "0.10.2", NO_YNN),  # chosen by hand
        ({"XLA_FLAGS": "--xla_cpu_experimental_ynn_fusion_type=dot"}, "x86_64", "0.10.2", AVX),
    ],
)
def test_compile_options_follow_the_machine_jaxlib_and_setting(environ, machine, jaxlib_version, expected):
    assert xla_cpu.compile_options(environ, machine=machine, jaxlib_version=jaxlib_version) == expected


def test_a_bad_setting_is_refused():
    with pytest.raises(ValueError, match="JCSOL_XLA_CPU must be 'loops', 'default' or unset, got 'off'"):
        xla_cpu.compile_options({"JCSOL_XLA_CPU": "off"})


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ("", f"--xla_backend_extra_options={OPTION}"),
        (  # in front: XLA stops reading at a word that is not a flag
            "--xla_cpu_multi_thread_eigen=false stray",
            f"--xla_backend_extra_options={OPTION} --xla_cpu_multi_thread_eigen=false stray",
        ),
        (
            "--xla_backend_extra_options=a=1 --xla_dump_to=/tmp/x",
            f"--xla_backend_extra_options=a=1,{OPTION} --xla_dump_to=/tmp/x",
        ),
    ],
)
def test_the_loop_limit_is_added_to_what_is_there(flags, expected):
    environ = {"XLA_FLAGS": flags}
    assert xla_cpu.add_loop_flag(environ, machine="x86_64")
    assert environ["XLA_FLAGS"] == expected
    assert xla_cpu.asks_for_loop_kernels(expected)


@pytest.mark.parametrize(
    ("machine", "started", "message"),
    [
        ("aarch64", False, "loop kernels need an x86-64 CPU \\(this one is 'aarch64'\\)"),
        ("x86_64", True, "use_loop_kernels\\(\\) must be called before JAX runs any computation"),
    ],
)
def test_the_loop_limit_is_refused_where_it_cannot_hold(machine, started, message):
    environ = {"XLA_FLAGS": "--xla_dump_to=/tmp/x"}
    with pytest.raises(RuntimeError, match=message):
        xla_cpu.add_loop_flag(environ, machine=machine, started=started)
    assert environ == {"XLA_FLAGS": "--xla_dump_to=/tmp/x"}


def test_a_loop_limit_chosen_by_hand_is_left_alone():
    environ = {"XLA_FLAGS": "--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=1024"}
    assert not xla_cpu.add_loop_flag(environ, machine="x86_64")
    assert environ["XLA_FLAGS"].endswith("=1024")
    assert not xla_cpu.asks_for_loop_kernels(environ["XLA_FLAGS"])


def _child(program: str, **setting: str) -> str:
    """The output of ``program`` in a fresh process, without the test process's XLA settings."""
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JCSOL_XLA_CPU")} | setting
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


# another library's programs: a scan whose carry is over XLA's 1 kB limit of one-kernel loops, and a dot
OTHERS = """
import os, jax, jax.numpy as jnp
scan = jax.jit(lambda w, x: jax.lax.scan(lambda w, x: (w * 0.5 + x, w.sum()), w, x))
dot = jax.jit(lambda x, w: x @ w)
print(os.environ.get("XLA_FLAGS"))
print(scan.lower(jnp.zeros((11, 512)), jnp.ones((50, 11, 512))).compile().as_text())
print(dot.lower(jnp.ones((16, 24)), jnp.ones((24, 8))).compile().as_text())
"""


def test_import_leaves_the_flags_and_other_programs_alone():
    alone, beside = _child(OTHERS), _child("import jcsol" + OTHERS)  # on its first line: the same line numbers
    assert beside.splitlines()[0] == "None"
    assert beside == alone
    assert 'xla_cpu_small_call="true"' not in beside
    assert ("ynn_fusion" in beside) is YNN


SCAN = """
import jax, jax.numpy as jnp, numpy as np
from jcsol.linalg import SparseVector, add_scaled, dot, in_rounds
def step(w, row):
    x = SparseVector(*row)
    m = jax.vmap(lambda w: dot(w, x))(w)
    return jax.vmap(lambda w, m: add_scaled(w, 1.0 - m, x))(w, m), m
f = jax.jit(lambda w, i, v: jax.lax.scan(step, w, (i, v)))
with in_rounds():
    lowered = f.lower(jnp.zeros((11, 4096)), jnp.zeros((50, 10), jnp.int32), jnp.ones((50, 10)))
text = lowered.compile().as_text()
print('one kernel' if 'xla_cpu_small_call="true"' in text else 'several kernels', 'scatter(' in text)
"""


@pytest.mark.skipif(not X86, reason="loop kernels are an x86-64 option")
@pytest.mark.parametrize(
    ("setting", "call", "expected"),
    [
        ({}, "", "several kernels True"),
        ({"JCSOL_XLA_CPU": "loops"}, "", "one kernel False"),
        ({}, "jcsol.xla_cpu.use_loop_kernels()", "one kernel False"),
    ],
)
def test_the_opt_in_compiles_a_sparse_scan_as_one_kernel(setting, call, expected):
    out = _child(f"import os, jcsol\n{call}\nprint(os.environ.get('XLA_FLAGS'))\n" + SCAN, **setting)
    flags, result = out.splitlines()[:2]
    assert (OPTION in flags) is expected.startswith("one"), out
    assert result == expected, out


def test_the_opt_in_is_refused_once_jax_has_started():
    program = (
        "import os, jax.numpy as jnp, jcsol\n"
        "jnp.ones(3).sum().block_until_ready()\n"
        "try:\n"
        "    jcsol.xla_cpu.use_loop_kernels()\n"
        "except RuntimeError as err:\n"
        "    print(err)\n"
        "print(os.environ.get('XLA_FLAGS'), jcsol.xla_cpu.loop_kernels)"
    )
    out = _child(program).splitlines()
    assert out[0].startswith("use_loop_kernels() must be called before JAX"), out
    assert out[1] == "None False", out


JCSOL_PROGRAMS = """
import numpy as np, jax, jax.numpy as jnp, jcsol
rng = np.random.default_rng(0)
X, y = rng.standard_normal((64, 24)).astype(np.float32), np.where(rng.random(64) < 0.3, 1, -1)
jcsol.run(jcsol.COG(eta=np.array([0.1, 1.0])), X, y, perms=2)
live = jcsol.Live(jcsol.COG(eta=np.array([0.1, 1.0])))
live.learn(X[:32], y[:32])
live.predict(X[32:])
jax.jit(lambda x, w: x @ w)(jnp.ones((16, 24)), jnp.ones((24, 8)))  # last: another library's program
"""


def test_jcsols_programs_are_compiled_with_its_options(tmp_path):
    _child(JCSOL_PROGRAMS, XLA_FLAGS=f"--xla_dump_to={tmp_path}", JCSOL_CPU_DEVICES="1")
    debug = {p.name.split(".")[1]: p.read_text() for p in sorted(Path(tmp_path).glob("*.debug_options"))}
    ours = ["jit__shuffle_keys", "jit_init_carry", "jit_scan_chunk", "jit__learn", "jit__predict"]
    assert set(ours) <= set(debug), sorted(debug)
    for name in ours:
        assert ('xla_cpu_max_isa: "AVX"' in debug[name]) is X86, (name, debug[name])
    assert "xla_cpu_max_isa" not in debug["jit__lambda"]
    # a batch's scores: a dot outside a loop, which YNNPACK's fusions would take (jaxlib 0.8.1 and later)
    hlo = {p.name.split(".")[1]: p.read_text() for p in sorted(Path(tmp_path).glob("*.cpu_after_optimizations.txt"))}
    assert " dot(" in hlo["jit__predict"], hlo["jit__predict"]
    assert "ynn_fusion" not in hlo["jit__predict"], hlo["jit__predict"]
    assert ("ynn_fusion" in hlo["jit__lambda"]) is YNN


def _nested(add, w, indices, values):
    """``add`` mapped over permutations (each its own rows) and, inside, over configurations (sharing them)."""
    per_permutation = lambda w, i, v: jax.vmap(lambda w, v: add(w, i, v))(w, v)  # noqa: E731
    return jax.jit(jax.vmap(per_permutation))(w, indices, values)


@pytest.mark.parametrize(
    ("loop_kernels", "looped", "unrolled"), [(True, True, 128), (True, True, 4), (False, True, 128), (True, False, 128)]
)  # slice writes; the scatter beyond the limit, without loop kernels, or outside a loop of rounds
def test_add_at_is_scatter_add_under_every_mapping(monkeypatch, loop_kernels, looped, unrolled):
    monkeypatch.setattr(linalg, "UNROLLED_ENTRIES", unrolled)
    monkeypatch.setattr(xla_cpu, "loop_kernels", loop_kernels)
    with linalg.in_rounds(looped):
        _check_add_at(slices=loop_kernels and looped and unrolled == 128)


def _check_add_at(slices: bool):
    rng = np.random.default_rng(0)
    perms, configs, d, k = 3, 4, 40, 6
    w = jnp.asarray(rng.standard_normal((perms, configs, d)), jnp.float32)
    indices = np.stack([rng.choice(d, k, replace=False) for _ in range(perms)]).astype(np.int32)
    indices[:, -2:] = indices[:, :1]  # a padded row repeats an index
    indices = jnp.asarray(indices)
    values = jnp.asarray(rng.standard_normal((perms, configs, k)), jnp.float32)
    scatter = lambda w, i, v: w.at[i].add(v)  # noqa: E731
    np.testing.assert_array_equal(_nested(linalg.add_at, w, indices, values), _nested(scatter, w, indices, values))
    jaxpr = str(jax.make_jaxpr(lambda w, i, v: _nested(linalg.add_at, w, i, v))(w, indices, values))
    assert ("scatter-add" not in jaxpr) is slices
    # configurations outside, permutations inside; values shared by the configurations
    swap = lambda add: jax.jit(  # noqa: E731
        jax.vmap(lambda w: jax.vmap(lambda w, i, v: add(w, i, v))(w, indices, values[:, 0]), in_axes=1, out_axes=1)
    )
    np.testing.assert_array_equal(swap(linalg.add_at)(w), swap(scatter)(w))
    np.testing.assert_array_equal(
        jax.jit(lambda w, i, v: linalg.add_at(w, i, v))(w[0, 0], indices[0], values[0, 0]),
        w[0, 0].at[indices[0]].add(values[0, 0]),
    )
