"""jcsol's loops of rounds compiled as one kernel each, in its own programs (jcsol.whole_loops): which calls are
marked, what is left to XLA, the packing of a marked call's operands, and the same bits as XLA's own whole loops
(the opt-in ``JCSOL_XLA_CPU=loops``, in a process of its own)."""

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse

import jcsol
from jcsol import whole_loops, xla_cpu
from jcsol.core import programs

pytestmark = pytest.mark.skipif(not whole_loops.marks(), reason="marks are made on x86-64, unless JCSOL_XLA_CPU is set")

MARKED = 'inlineable="false",xla_cpu_small_call="true"'


def _marked_calls(text: str) -> list[str]:
    return [line for line in text.splitlines() if " call(" in line and MARKED in line]


@pytest.mark.parametrize("sparse_rows", [False, True])
def test_a_chunk_compiles_each_of_its_loops_as_one_marked_call(sparse_rows):
    """600 rounds: the whole blocks of 256 gathered rounds in one loop, the rest in another; each loop one call
    marked as XLA marks its own small loops, jcsol's mark dropped everywhere, and a sparse row's entries written
    without scatter (which XLA cannot emit in one kernel)."""
    learner = jcsol.COG(eta=jcsol.decades())
    with whole_loops.marking():
        lowered = programs.lowered_chunk(
            learner, d=40, rounds=600, sparse_rows=sparse_rows, platform="cpu", lowering_platform=None
        )
    text = whole_loops.compiled(lowered).as_text()
    assert len(_marked_calls(text)) == 2
    assert "jcsol_one_kernel" not in text
    assert "scatter(" not in text


def test_a_chunk_of_wide_sparse_rows_is_marked_through_its_layout_constraints(monkeypatch):
    """Over 4,096 features the states are laid out configurations-minor, which the program states as layout
    constraints (custom calls that only annotate it): the loops are marked all the same."""
    compiled, real = [], whole_loops.compiled
    monkeypatch.setattr(
        whole_loops, "compiled", lambda lowered, options=None: compiled.append(real(lowered, options)) or compiled[-1]
    )
    rng = np.random.default_rng(0)
    rows = jcsol.SparseRows(
        np.stack([np.sort(rng.choice(4096, 10, replace=False)) for _ in range(600)]).astype(np.int32),
        rng.random((600, 10), np.float32),
        4096,
    )
    jcsol.run(jcsol.COG(eta=jcsol.decades()), rows, np.where(rng.random(600) < 0.3, 1, -1), perms=2)
    texts = [c.as_text() for c in compiled]
    assert "LayoutConstraint" not in "".join(texts)  # resolved by XLA's layout assignment, none emitted
    assert any(len(_marked_calls(text)) == 2 for text in texts)


def _compiled_text(program, *args) -> str:
    with whole_loops.marking():
        lowered = jax.jit(program).lower(*args)
    return whole_loops.compiled(lowered).as_text()


def _loop(w, x):
    return jax.lax.fori_loop(0, 200, lambda i, w: w * 0.999 + jnp.polyval(jnp.array([1.0, 2.0]), x[i % 8]), w)


def test_a_loop_inside_another_or_holding_a_scatter_is_left_to_xla():
    """Of nested marked loops only the outer is marked; a loop holding a scatter stays XLA's loop of kernels;
    the calls inside a marked one (``polyval``'s) are inlined as they are without the mark."""
    w, x = jnp.ones(4096), jnp.arange(8.0)

    def nested(w, x):
        inner = whole_loops.one_kernel(_loop, "cpu")
        return whole_loops.one_kernel(lambda w, x: jax.lax.fori_loop(0, 3, lambda i, w: inner(w, x), w), "cpu")(w, x)

    text = _compiled_text(nested, w, x)
    assert len(_marked_calls(text)) == 1
    assert text.count(" call(") == 1

    def scattering(w, x):
        body = lambda i, w: w.at[jnp.int32(i % 7) * jnp.arange(3)].add(x[:3])  # noqa: E731
        return whole_loops.one_kernel(lambda w, x: jax.lax.fori_loop(0, 200, body, w), "cpu")(w, x)

    text = _compiled_text(scattering, w, x)
    assert _marked_calls(text) == []
    assert "scatter(" in text


def test_nothing_is_marked_outside_marking_off_the_cpu_or_where_jcsol_xla_cpu_is_default(monkeypatch):
    assert whole_loops.one_kernel(_loop, "cpu") is _loop
    with whole_loops.marking() as on:
        assert on
        assert whole_loops.one_kernel(_loop, "gpu") is _loop
        assert whole_loops.one_kernel(_loop, "cpu") is not _loop
    monkeypatch.setenv(xla_cpu.ENV, "default")
    with whole_loops.marking() as on:
        assert not on
        assert whole_loops.one_kernel(_loop, "cpu") is _loop


def test_a_marked_call_gives_what_the_function_gives():
    """Constants, empty arrays, unread operands, operands of every dtype and one past the packed size: the call's
    results are the function's, bit for bit (NaN, -0.0 and inf included)."""
    rng = np.random.default_rng(0)
    floats = rng.standard_normal(50).astype(np.float32)
    floats[:3] = [np.nan, -0.0, np.inf]
    args = (
        jnp.asarray(floats),
        jnp.asarray(rng.integers(-(2**31), 2**31 - 1, 20), jnp.int32),
        jnp.asarray(rng.integers(0, 2, 9).astype(bool)),
        jnp.asarray(rng.integers(-128, 127, 11), jnp.int8),
        jnp.asarray(rng.standard_normal(7), jnp.float16),
        jnp.zeros((3, 0), jnp.float32),
        jnp.ones(whole_loops.PACKED_BYTES // 4 + 1, jnp.float32),  # a large operand, passed as it is
        jnp.arange(5.0),  # unread
    )
    constant = jnp.asarray(np.arange(4, dtype=np.int8))  # closed over: known when tracing

    def fn(f, i, b, i8, h, empty, big, unread):
        def body(t, c):
            f, i, b, i8, h, big = c
            return (f * 1.5, i ^ (i >> 3), ~b, i8 + constant[t % 4], h * 2, big + f[5])

        out = jax.lax.fori_loop(0, 4, body, (f, i, b, i8, h, big))
        return (*out, empty + 1.0, jnp.zeros((0, 2)))

    def marked(*args):
        return whole_loops.one_kernel(fn, "cpu")(*args)

    with whole_loops.marking():
        lowered = jax.jit(marked).lower(*args)
    compiled = whole_loops.compiled(lowered)
    assert len(_marked_calls(compiled.as_text())) == 1
    got, expected = compiled(*args), jax.jit(fn)(*args)
    for a, b in zip(got, expected, strict=True):
        assert a.shape == b.shape
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a).view(np.uint8), np.asarray(b).view(np.uint8))


# sparse steps (COG-II), the full covariance (ACOG-II), and two whose dense states a loop of small kernels rounds
# otherwise; the live learner's and the estimator's tests check the others' bits against the engine's
LEARNERS = ("COG-II", "ACOG-II", "SCW-II", "OptaxCOG-I-adam")

OPT_IN = """
import json, sys, numpy as np, jax, jcsol, scipy.sparse as sp
names, sparse = json.loads(sys.argv[1]), sys.argv[2] == "sparse"
X, y = jcsol.datasets.load("german")[:2]
X, y = np.asarray(X[:600], np.float32), y[:600]
rows = sp.csr_matrix(X) if sparse else X
out = {}
for name in names:
    r = jcsol.run(jcsol.by_name(name), rows, y, perms=2, key=0, curve_points=5, chunk_size=300)
    out[name] = [np.asarray(a).tolist() for a in jax.tree.leaves((r.states, r.counts, r.curve, r.mistake_cost))]
print(json.dumps(out))
"""


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_marked_runs_have_the_bits_of_xlas_own_whole_loops(kind):
    """The same runs (600 rounds in chunks of 300, 2 permutations, curve points) with jcsol's marks in this process,
    and with XLA's own whole-loop kernels for every loop in a process under the opt-in: the same bits."""
    env = {**os.environ, xla_cpu.ENV: "loops"}
    done = subprocess.run(
        [sys.executable, "-c", OPT_IN, json.dumps(LEARNERS), kind], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    opt_in = json.loads(done.stdout)
    X, y = jcsol.datasets.load("german")[:2]
    X, y = np.asarray(X[:600], np.float32), y[:600]
    rows = scipy.sparse.csr_matrix(X) if kind == "sparse" else X
    for name in LEARNERS:
        r = jcsol.run(jcsol.by_name(name), rows, y, perms=2, key=0, curve_points=5, chunk_size=300)
        leaves = jax.tree.leaves((r.states, r.counts, r.curve, r.mistake_cost))
        for got, expected in zip(leaves, opt_in[name], strict=True):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(expected, np.asarray(got).dtype), err_msg=name)
