"""No run waits without end: the registry under one CPU device per core, and the stall watchdog.

jaxlib 0.10's CPU LAPACK kernels split a batch of matrices over XLA's intra-op thread pool and block a pool
thread until the pieces are done; with runs laid over one device per core, every pool thread could end up
blocked so, and the process waited forever (SACOG's QR, CW-CVaR's solve). Each registered learner runs here in
a child process under a time limit, so a hang fails the test instead of hanging the suite.
"""

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcsol
from jcsol.algorithms import VARIANTS
from jcsol.base import Example, Learner, StepInfo, pytree_dataclass
from jcsol.linalg import add_scaled, dot, one_matrix_at_a_time

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax, jcsol
    from jcsol.algorithms import VARIANTS

    cfg = json.loads(sys.argv[1])
    rng = np.random.default_rng(0)
    T, d = cfg["rounds"], cfg["d"]
    y = np.where(rng.random(T) < 0.3, 1, -1).astype(np.int8)
    y[:2] = (1, -1)
    if cfg["sparse"]:
        k = cfg["nnz"]
        idx = np.stack([rng.choice(d, k, replace=False) for _ in range(T)]).astype(np.int32)
        val = rng.standard_normal((T, k)).astype(np.float32)
        X = jcsol.SparseRows(idx, val / np.linalg.norm(val, axis=1, keepdims=True), d)
    else:
        X = rng.standard_normal((T, d)).astype(np.float32)
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    print("devices", len(jax.devices()), flush=True)
    for name in cfg["names"]:
        print("start", name, flush=True)
        try:
            jcsol.run(jcsol.by_name(name), X, y, perms=cfg["perms"], stall_timeout=None)
            print("done", name, flush=True)
        except MemoryError:
            print("refused", name, flush=True)  # too large for this machine: refused before any work
""")

# (rows, d, permutations, devices): devices None = one per core, as `import jcsol` sets up. Dense rows of d = 400 on
# more devices than cores block the pool hardest; at d = 30,000 the full-covariance learners are refused by the
# memory check, and the others run their sparse steps.
LAYOUTS = [
    ("dense", 400, 3, 4),
    ("sparse", 30_000, 4, None),
]


def _run_registry(rows: str, d: int, perms: int, devices, names, limit: float) -> list[str]:
    cfg = dict(sparse=rows == "sparse", d=d, nnz=40, rounds=48, perms=perms, names=list(names))
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    env.pop("JCSOL_CPU_DEVICES", None)
    if devices is not None:
        env["JCSOL_CPU_DEVICES"] = str(devices)
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(cfg)], capture_output=True, text=True, timeout=limit, env=env
        )
    except subprocess.TimeoutExpired as err:
        out = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        started = [line.split()[1] for line in out.splitlines() if line.startswith("start")]
        pytest.fail(
            f"{started[-1] if started else 'the set-up'} did not finish within {limit:.0f} s on {rows} "
            f"rows, d={d}, {perms} permutations, devices={devices or 'one per core'}"
        )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


@pytest.mark.slow
@pytest.mark.parametrize(("rows", "d", "perms", "devices"), LAYOUTS, ids=lambda v: str(v))
def test_every_registered_learner_finishes_on_cpu_devices(rows, d, perms, devices):
    lines = _run_registry(rows, d, perms, devices, VARIANTS, limit=900)
    assert int(lines[0].split()[1]) == (devices or jcsol.devices.cpu_cores()), lines[0]
    finished = {line.split()[1] for line in lines if line.split()[0] in ("done", "refused")}
    assert finished == set(VARIANTS)
    if d <= 400:  # everything fits at these sizes: nothing may be refused
        assert not [line for line in lines if line.startswith("refused")]
    assert {"SACOG-I", "SSACOG-I"} <= {line.split()[1] for line in lines if line.startswith("done")}


def test_one_matrix_at_a_time_gives_the_batched_numbers():
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.standard_normal((3, 4, 60, 5)).astype(np.float32))
    qr = one_matrix_at_a_time(lambda m: jnp.linalg.qr(m))
    for u, v in zip(jax.jit(jax.vmap(jax.vmap(jnp.linalg.qr)))(a), jax.jit(jax.vmap(jax.vmap(qr)))(a)):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
    m = rng.standard_normal((6, 9, 9)).astype(np.float32)
    m = jnp.asarray(m @ np.swapaxes(m, 1, 2) + 9 * np.eye(9, dtype=np.float32))
    b = jnp.asarray(rng.standard_normal(9).astype(np.float32))
    solve = one_matrix_at_a_time(lambda u, v: jnp.linalg.solve(u, v))
    np.testing.assert_array_equal(
        np.asarray(jax.vmap(jnp.linalg.solve, (0, None))(m, b)), np.asarray(jax.vmap(solve, (0, None))(m, b))
    )  # an unbatched argument
    lowered = jax.jit(jax.vmap(jax.vmap(qr))).lower(a).as_text()
    assert "lapack" in lowered
    assert "while" in lowered  # still LAPACK, called in a loop over the runs


# --- the watchdog -------------------------------------------------------------------------------------------

GATE = threading.Event()  # a round whose index is BLOCK_AT waits on it: a computation that stops working
BLOCK_AT = {"round": -1}
BUSY_SECONDS = {"per_round": 0.0}  # every round spins this long on the host: a computation slow but working


def _host_round(t):
    if int(t) == BLOCK_AT["round"]:
        GATE.wait(120)
    end = time.perf_counter() + BUSY_SECONDS["per_round"]
    while time.perf_counter() < end:
        pass
    return np.zeros((), np.float32)


@pytree_dataclass
class Blocking(Learner):
    """The Perceptron, with a host call each round that can be made to wait or to spin (the round counted in the
    state)."""

    def init(self, d, key, dtype=jnp.float32):
        return (jnp.zeros(d, dtype), jnp.zeros((), jnp.int32))

    def step(self, state, ex: Example):
        w, t = state
        pause = jax.pure_callback(_host_round, jax.ShapeDtypeStruct((), jnp.float32), t, vmap_method="sequential")
        f = dot(w, ex.x) + pause
        mistake = (jnp.where(f >= 0, 1.0, -1.0) != ex.y).astype(w.dtype)
        return (add_scaled(w, mistake * ex.y, ex.x), t + 1), StepInfo(score=f, loss=mistake)

    def weights(self, state):
        return state[0]


def test_a_stalled_chunk_ends_in_a_clear_error_and_its_checkpoint_resumes(german, tmp_path):
    X, y = german
    path = tmp_path / "stalled.ckpt"
    GATE.clear()
    BLOCK_AT["round"] = 250  # in the third chunk of 100 rounds
    try:
        with pytest.raises(jcsol.StallError) as err:
            jcsol.run(Blocking(), X, y, perms=1, chunk_size=100, checkpoint=path, stall_timeout=2)
    finally:
        BLOCK_AT["round"] = -1
        GATE.set()  # lets the abandoned chunk finish in the background
    message = str(err.value)
    assert "chunk 3 of 10 (rounds 201–300 of 1000)" in message
    assert "1 CPU device(s) with 1 run(s) each" in message
    assert f"checkpoint {path} holds the first 2 chunk(s)" in message
    resumed = jcsol.run(Blocking(), X, y, perms=1, chunk_size=100, checkpoint=path)
    assert resumed.resumed_at == 200
    plain = jcsol.run(Blocking(), X, y, perms=1)
    np.testing.assert_array_equal(resumed.counts, plain.counts)
    np.testing.assert_array_equal(np.asarray(resumed.states[0]), np.asarray(plain.states[0]))


def test_a_slow_chunk_that_works_is_not_a_stall(german):
    X, y = german
    BUSY_SECONDS["per_round"] = 0.002  # 300 rounds: 0.6 s of work, twelve times the stall timeout
    try:
        res = jcsol.run(Blocking(), X[:300], y[:300], perms=1, stall_timeout=0.05)
    finally:
        BUSY_SECONDS["per_round"] = 0.0
    assert res.time_run > 0.5
    plain = jcsol.run(Blocking(), X[:300], y[:300], perms=1)
    np.testing.assert_array_equal(res.counts, plain.counts)


@pytest.mark.parametrize("bad", ["never", 0, -1.0, True, float("nan")])
def test_stall_timeout_is_checked(german, bad):
    X, y = german
    with pytest.raises(ValueError, match="stall_timeout"):
        jcsol.run(jcsol.COG(eta=1.0), X, y, perms=1, stall_timeout=bad)
