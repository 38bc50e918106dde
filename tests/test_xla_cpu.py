"""XLA's CPU options set on import (each scan one kernel, no FMA, no YNNPACK fusions), and the scatter-free sparse
writes they need."""

import os
import platform
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jcsol import linalg, xla_cpu

OPTION = f"xla_cpu_small_while_loop_byte_threshold={2**63 - 1}"
NO_YNN = "--xla_cpu_experimental_ynn_fusion_type="


@pytest.mark.parametrize(
    "flags, expected",
    [
        ("", f"--xla_backend_extra_options={OPTION} --xla_cpu_max_isa=AVX"),
        (  # in front: XLA stops reading at a word that is not a flag
            "--xla_cpu_multi_thread_eigen=false stray",
            f"--xla_backend_extra_options={OPTION} --xla_cpu_max_isa=AVX --xla_cpu_multi_thread_eigen=false stray",
        ),
        (
            "--xla_backend_extra_options=a=1 --xla_dump_to=/tmp/x",
            f"--xla_cpu_max_isa=AVX --xla_backend_extra_options=a=1,{OPTION} --xla_dump_to=/tmp/x",
        ),
    ],
)
def test_flags_are_added_to_what_is_there(flags, expected):
    assert xla_cpu.flags_with_loop_kernels(flags) == expected


@pytest.mark.parametrize(
    "environ, machine, started",
    [
        ({"JCSOL_XLA_CPU": "default"}, "x86_64", False),
        ({}, "x86_64", True),  # JAX started: XLA has read its flags already
        ({}, "aarch64", False),  # no instruction set without FMA to choose
        ({"XLA_FLAGS": "--xla_cpu_max_isa=AVX2"}, "x86_64", False),
        ({"XLA_FLAGS": "--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=0"}, "x86_64", False),
    ],
)
def test_flags_are_left_alone_when_someone_chose_or_it_is_too_late(environ, machine, started):
    before = dict(environ)
    assert not xla_cpu.add_flags(environ, machine=machine, started=started, jaxlib_version="0.8.0")
    assert environ == before


@pytest.mark.parametrize("jaxlib_version, ynn", [("0.8.0", False), ("0.8.1", True), ("0.10.2", True)])
def test_flags_are_set_on_x86_when_free(jaxlib_version, ynn):
    environ = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}
    assert xla_cpu.add_flags(environ, machine="x86_64", started=False, jaxlib_version=jaxlib_version)
    assert OPTION in environ["XLA_FLAGS"] and "--xla_cpu_max_isa=AVX" in environ["XLA_FLAGS"]
    assert (NO_YNN in environ["XLA_FLAGS"].split()) is ynn


@pytest.mark.parametrize(
    "environ, jaxlib_version, expected",
    [
        ({}, "0.8.0", None),  # XLA would stop on a flag it does not know
        ({}, "0.8.1", NO_YNN),
        ({}, "0.9.0.1", NO_YNN),
        ({"XLA_FLAGS": "--xla_dump_to=/tmp/x"}, "0.10.2", f"{NO_YNN} --xla_dump_to=/tmp/x"),
        ({"XLA_FLAGS": "--xla_cpu_experimental_ynn_fusion_type=dot"}, "0.10.2", None),  # chosen by hand
        ({"JCSOL_XLA_CPU": "default"}, "0.10.2", None),
    ],
)
def test_ynnpack_fusions_are_turned_off_on_every_machine_where_xla_knows_the_option(environ, jaxlib_version, expected):
    before = dict(environ)
    assert xla_cpu.add_flags(environ, machine="aarch64", jaxlib_version=jaxlib_version) is (expected is not None)
    assert environ == (before if expected is None else before | {"XLA_FLAGS": expected})


@pytest.mark.parametrize(
    "flags, asks",
    [
        ("", False),
        (f"--xla_backend_extra_options={OPTION}", True),
        ("--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=1024", False),
    ],
)
def test_loop_kernels_are_read_from_the_flags(flags, asks):
    assert xla_cpu.asks_for_loop_kernels(flags) is asks


def test_a_bad_setting_is_refused():
    with pytest.raises(ValueError, match="JCSOL_XLA_CPU must be 'default' or unset, got 'off'"):
        xla_cpu.add_flags({"JCSOL_XLA_CPU": "off"}, machine="x86_64")


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


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="set on x86-64 only")
@pytest.mark.parametrize("setting, expected", [({}, "one kernel False"), ({"JCSOL_XLA_CPU": "default"}, "several")])
def test_import_compiles_a_sparse_scan_as_one_kernel(setting, expected):
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JCSOL_XLA_CPU")} | setting
    done = subprocess.run(
        [sys.executable, "-c", "import jcsol\n" + SCAN], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(expected), done.stdout


def test_import_leaves_a_dot_to_xlas_own_code():
    # YNNPACK's dot gave one process of two devices other bits than two processes of one (jaxlib 0.10.2)
    program = (
        "import jcsol, jax, jax.numpy as jnp\n"
        "f = jax.jit(lambda x, w: x @ w)\n"
        "print(f.lower(jnp.ones((16, 24)), jnp.ones((24, 8))).compile().as_text())"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JCSOL_XLA_CPU")}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert " dot(" in done.stdout and "ynn_fusion" not in done.stdout, done.stdout


def _nested(add, w, indices, values):
    """``add`` mapped over permutations (each its own rows) and, inside, over configurations (sharing them)."""
    per_permutation = lambda w, i, v: jax.vmap(lambda w, v: add(w, i, v))(w, v)  # noqa: E731
    return jax.jit(jax.vmap(per_permutation))(w, indices, values)


@pytest.mark.parametrize(
    "loop_kernels, looped, unrolled", [(True, True, 128), (True, True, 4), (False, True, 128), (True, False, 128)]
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
