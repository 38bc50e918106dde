"""SACOG and sparse SACOG (Zhao et al., *Adaptive Cost-Sensitive Online Classification*, TKDE 2019, Alg. 2–6):
against the float64 NumPy reference, against each other, and the sketch's properties (convergence to the data's
subspace, orthonormality), plus the O(nnz) structure of the sparse step.

Tolerances
----------
* SACOG (float32) against ``tests/algorithms/reference_sacog.py`` (float64, fed the float32 data and the same ``V_0``):
  predictions equal at every round; final μ within ``1e-4·max|μ|`` (observed ≈3e-6·max|μ| on german after
  1000 rounds: every round re-orthonormalises ``V``, so rounding does not accumulate beyond ``≈ t·ε``).
* Sparse SACOG against SACOG, float32: the two representations round differently. ``V = F Z`` is stored with
  ``Z``, whose conditioning grows with ``t`` (a power iteration), so its error is ``≈ ε·cond(Z)·√t`` (1e-4
  after 10⁴ rounds of mushrooms/usps) against ``≈ t·ε`` for SACOG. A prediction differs only at a near-tie
  (``|f_t|`` or the loss argument within that error of 0), and then for the few rounds until the two means
  meet again; we allow 0.1% of the rounds (observed: 0 to 2 per 4 × 8124 rounds).
* float64 (a subprocess with ``jax_enable_x64``): sparse SACOG and SACOG predict alike at every round; the
  sparse learner in float64 tracks the subspace like SACOG.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference_sacog as ref
from conftest import shared_data

import jcsol
from jcsol.algorithms.sacog import SACOG, SSACOG, gram_schmidt, initial_directions
from jcsol.base import Example
from jcsol.linalg import SparseVector

ETA = 1.0  # exact in float32; η = 1 updates often on german, mushrooms and usps (a demanding comparison)


def init_keys(key: int, n_perm: int) -> jax.Array:
    """The learner keys jcsol.run derives for its runs from ``key`` (as tests/test_contract.py does)."""
    return jax.random.split(jax.random.split(jax.random.key(key))[1], n_perm)


def initial_v(learner, d: int, key: jax.Array) -> np.ndarray:
    return np.asarray(learner.sketch(learner.init(d, key))[0], np.float64)


def mean_of(learner, states) -> np.ndarray:
    return np.asarray(jax.vmap(learner.weights)(states), np.float64)


def sketch_of(learner, states) -> tuple[np.ndarray, np.ndarray]:
    V, lam = jax.vmap(learner.sketch)(states)
    return np.asarray(V, np.float64), np.asarray(lam, np.float64)


def orders_for(n: int, count: int, seed: int, length: int | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(n)[:length] for _ in range(count)])


def updates(scores: np.ndarray, y: np.ndarray, orders: np.ndarray, loss: str) -> np.ndarray:
    """Whether each round's loss is positive (the mean moves), from the pre-update scores; offline ρ."""
    labels = y[orders].astype(np.float64)
    rho = (labels < 0).sum(-1, keepdims=True) / (labels > 0).sum(-1, keepdims=True)
    margin = labels * scores
    return np.where(labels > 0, rho, 1.0) - margin > 0 if loss == "I" else 1.0 - margin > 0


def largest_principal_sine(V: np.ndarray, B: np.ndarray) -> float:
    """sin of the largest principal angle between the row spaces of ``V`` and of the orthonormal ``B``."""
    q = np.linalg.qr(V.T)[0]
    return float(np.linalg.norm(q - B.T @ (B @ q), 2))


def subspace_stream(n: int, d: int = 40, m: int = 5, seed: int = 0):
    """Rows ``c B`` in the row space of a random orthonormal ``B`` (m × d), anisotropic ``c``, L2-normalised."""
    rng = np.random.default_rng(seed)
    B = np.linalg.qr(rng.standard_normal((d, m)))[0].T
    coef = rng.standard_normal((n, m)) * np.linspace(1.0, 0.6, m)
    X = coef @ B
    X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    y = np.where(coef[:, 0] + 0.3 * rng.standard_normal(n) > 0.8, 1, -1).astype(np.int8)
    return X, y, B


# ----------------------------------------------------------------------------------------------------------
# the reference by hand
# ----------------------------------------------------------------------------------------------------------


def test_reference_sacog_by_hand():
    # d = 2, m = 1, V_0 = [1, 0], γ = 1, type I with ρ = 1 (one positive, one negative).
    # r1: f = 0 (→ +1), ℓ = 1; t = 1: V x̂ = 1, Λ = 1, V = orth([1,0] + [1,0]) = [1,0]; tΛ = 1, S = [1,0],
    #     H = 1/2, so Σ = I − SᵀHS = diag(1/2, 1) (ACOG's Σ after x = e1) and μ = −η Σ g = η [1/2, 0].
    # r2: x = e2, y = −1: f = 0, ℓ = 1; t = 2: V x̂ = 0, Λ = 1/2, V unchanged, tΛ = 1: Σ = diag(1/2, 1);
    #     g = −y x = e2: μ = η [1/2, 0] − η [0, 1].
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    tr = ref.sacog(X, np.array([1, -1]), np.arange(2), np.array([[1.0, 0.0]]), eta=0.5, loss="I")
    np.testing.assert_allclose(tr.scores, [0.0, 0.0])
    np.testing.assert_allclose(tr.losses, [1.0, 1.0])
    np.testing.assert_allclose(tr.mu, [0.25, -0.5])
    np.testing.assert_allclose(tr.lam, [0.5])
    np.testing.assert_allclose(tr.V, [[1.0, 0.0]])


def test_reference_oja_step_and_decompose_by_hand():
    # One Oja step from V_0 = I_2 (d = 2, m = 2) with x̂ = [1, 1]/√2 at t = 1: V + V x̂ x̂ᵀ = [[1.5, .5], [.5, 1.5]],
    # whose row Gram–Schmidt is [[3, 1]/√10, [−1, 3]/√10]; Λ = (V x̂)² = [1/2, 1/2].
    X = np.array([[1.0, 1.0]]) / np.sqrt(2)
    tr = ref.sacog(X, np.array([1]), np.arange(1), np.eye(2), eta=1.0)
    np.testing.assert_allclose(tr.V, np.array([[3.0, 1.0], [-1.0, 3.0]]) / np.sqrt(10), atol=1e-12)
    np.testing.assert_allclose(tr.lam, [0.5, 0.5])
    # Decompose (Alg. 6): L Q = F, Q K Qᵀ = I, L lower triangular with a positive diagonal
    rng = np.random.default_rng(0)
    F, Z = rng.standard_normal((4, 4)), rng.standard_normal((4, 9))
    L, Q = ref.decompose(F, Z @ Z.T)
    np.testing.assert_allclose(L @ Q, F, atol=1e-12)
    np.testing.assert_allclose(Q @ Z @ Z.T @ Q.T, np.eye(4), atol=1e-12)
    np.testing.assert_allclose(np.triu(L, 1), 0.0)
    assert np.all(np.diag(L) > 0)
    # and Q Z is the row Gram–Schmidt of F Z
    np.testing.assert_allclose(Q @ Z, ref.gram_schmidt_rows(F @ Z), atol=1e-12)


def test_reference_sparse_sacog_is_sacog_only_with_the_correction_on_every_round(german):
    """Alg. 4–6 (K, Decompose, F^{-1}) equal Alg. 2–3 in float64 — when ``w ← w − x̂ δᵀ b`` runs every round."""
    X, y = german
    order = orders_for(len(y), 1, 3, length=300)[0]
    V0 = np.linalg.qr(np.random.default_rng(1).standard_normal((X.shape[1], 5)))[0].T
    dense = ref.sacog(X, y, order, V0, eta=ETA)
    sparse = ref.sparse_sacog(X, y, order, V0, eta=ETA)
    np.testing.assert_array_equal(sparse.predictions, dense.predictions)
    np.testing.assert_allclose(sparse.scores, dense.scores, atol=1e-9)
    np.testing.assert_allclose(sparse.V, dense.V, atol=1e-9)
    np.testing.assert_allclose(sparse.mu, dense.mu, atol=1e-9)
    literal = ref.sparse_sacog(X, y, order, V0, eta=ETA, correct_every_round=False)
    assert np.abs(literal.mu - dense.mu).max() > 1e-2  # the paper's text, read literally, drifts away


# ----------------------------------------------------------------------------------------------------------
# SACOG against the reference
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loss", ["I", "II"])
def test_sacog_equals_reference_round_by_round(german, loss):
    X, y = german
    orders = orders_for(len(y), 2, 7)
    learner = SACOG(eta=ETA, loss=loss)
    res = jcsol.run(learner, X, y, perms=orders, key=4, record_scores=True)
    mu = mean_of(learner, res.states)
    V, lam = sketch_of(learner, res.states)
    for p, (order, key) in enumerate(zip(orders, init_keys(4, len(orders)))):
        tr = ref.sacog(X, y, order, initial_v(learner, X.shape[1], key), eta=ETA, loss=loss)
        predictions = np.where(res.scores[p] >= 0, 1, -1)
        bad = np.flatnonzero(predictions != tr.predictions)
        assert bad.size == 0, f"run {p}: first differing round {bad[0]}, reference score {tr.scores[bad[0]]}"
        np.testing.assert_allclose(res.scores[p], tr.scores, atol=1e-4 * np.abs(tr.scores).max())
        scale = np.abs(tr.mu).max()
        np.testing.assert_allclose(mu[p], tr.mu, rtol=1e-4, atol=1e-4 * scale)
        np.testing.assert_allclose(V[p], tr.V, atol=1e-4)
        np.testing.assert_allclose(lam[p], tr.lam, rtol=1e-4)
        assert tr.losses.astype(bool).sum() > 100  # the mean moved often: a demanding comparison


def test_sacog_sketch_every_m_rounds_equals_reference(german):
    X, y = german
    order = orders_for(len(y), 1, 8)
    learner = SACOG(eta=ETA, loss="I", sketch_every=5)
    res = jcsol.run(learner, X, y, perms=order, key=2, record_scores=True)
    tr = ref.sacog(X, y, order[0], initial_v(learner, X.shape[1], init_keys(2, 1)[0]), eta=ETA, sketch_every=5)
    np.testing.assert_array_equal(np.where(res.scores[0] >= 0, 1, -1), tr.predictions)
    np.testing.assert_allclose(mean_of(learner, res.states)[0], tr.mu, rtol=1e-4, atol=1e-4 * np.abs(tr.mu).max())
    every_round = ref.sacog(X, y, order[0], initial_v(learner, X.shape[1], init_keys(2, 1)[0]), eta=ETA)
    assert np.abs(every_round.mu - tr.mu).max() > 1e-3  # the option changes the model, not just the time


# ----------------------------------------------------------------------------------------------------------
# sparse SACOG against SACOG
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.slow  # whole data sets; the long-stream sketch tests below compare the two learners in the default run
@pytest.mark.parametrize(
    ("name", "path", "positive", "loss"),
    [
        ("mushrooms", "mushrooms", None, "I"),
        ("usps", "usps_esl.gz", 0, "II"),
    ],
)
def test_sparse_sacog_predicts_as_sacog(name, path, positive, loss):
    X, y = jcsol.datasets.load(shared_data(path), positive=positive, sparse=True)
    orders = orders_for(len(y), 4, 11)  # usps_esl is sorted by class: always permute
    dense = jcsol.run(SACOG(eta=ETA, loss=loss), X, y, perms=orders, record_scores=True)
    sparse_learner = SSACOG(eta=ETA, loss=loss)
    sparse = jcsol.run(sparse_learner, X, y, perms=orders, record_scores=True)
    differ = (dense.scores >= 0) != (sparse.scores >= 0)
    updates_differ = updates(dense.scores, y, orders, loss) != updates(sparse.scores, y, orders, loss)
    print(
        f"{name}: rounds predicted differently per run: {differ.sum(-1).tolist()}, rounds updated differently: "
        f"{updates_differ.sum(-1).tolist()} of {orders.shape[1]}"
    )
    assert differ.sum() <= 1e-3 * differ.size
    np.testing.assert_allclose(sparse.sum, dense.sum, atol=1e-3)
    agree = ~(differ | updates_differ).any(-1)
    assert agree.sum() >= 2
    # in the runs that took the same decisions everywhere, the means agree to the representations' rounding
    mu_d, mu_s = mean_of(SACOG(), dense.states), mean_of(sparse_learner, sparse.states)
    np.testing.assert_allclose(mu_s[agree], mu_d[agree], atol=1e-3 * np.abs(mu_d).max())
    (V_d, lam_d), (V_s, lam_s) = sketch_of(SACOG(), dense.states), sketch_of(sparse_learner, sparse.states)
    np.testing.assert_allclose(V_s, V_d, atol=2e-3)
    np.testing.assert_allclose(lam_s, lam_d, atol=1e-3 * lam_d.max())
    for v in V_s:
        assert np.abs(v @ v.T - np.eye(5)).max() < 2e-3


# ----------------------------------------------------------------------------------------------------------
# properties of the sketch
# ----------------------------------------------------------------------------------------------------------


def _track(learner, X, y, B, chunk):
    sines, orth = [], []

    def inspect(done):
        V, _ = jax.vmap(learner.sketch)(done.states)
        V = np.asarray(V[0], np.float64)
        sines.append(largest_principal_sine(V, B))
        orth.append(np.abs(V @ V.T - np.eye(V.shape[0])).max())

    jcsol.run(learner, X, y, perms=1, chunk_size=chunk, on_chunk=inspect)
    return np.array(sines), np.array(orth)


def test_sacog_sketch_converges_to_the_data_subspace_and_stays_orthonormal():
    # γ = 0.1: x̂ = x/√γ, Oja's gain per direction ∝ λ_i/γ, so the part of V outside the subspace decays
    # like t^{-λ_min/γ} (≈ t^{-1.2} here); with γ = 1 it would take ≈10⁶ rounds.
    X, y, B = subspace_stream(8_000)
    sines, orth = _track(SACOG(eta=ETA, gamma=0.1), X, y, B, chunk=500)
    print("SACOG, γ = 0.1: sin of the largest principal angle per 500 rounds:", np.round(sines, 5))
    assert np.all(np.diff(sines) <= 1e-6), sines
    assert sines[-1] < 2e-3
    assert sines[-1] < sines[0] / 20
    assert orth.max() < 1e-5, orth


def test_sparse_sacog_sketch_in_float32_over_a_long_stream():
    # γ = 1 (the papers' setting): the sketch approaches the subspace slowly but monotonically, as SACOG's does,
    # and V = F Z stays orthonormal to the sparse representation's rounding (≈ ε·cond(Z) per round).
    X, y, B = subspace_stream(8_000)
    sines, orth = _track(SSACOG(eta=ETA), X, y, B, chunk=500)
    dense_sines, _ = _track(SACOG(eta=ETA), X, y, B, chunk=500)
    print("sparse SACOG, γ = 1: sines", np.round(sines, 5), "‖VVᵀ − I‖", orth)
    assert np.all(np.diff(sines) <= 1e-5), sines
    assert sines[-1] < sines[0] - 0.03, sines
    np.testing.assert_allclose(sines, dense_sines, atol=1e-4)
    assert orth.max() < 1e-3, orth


def test_initial_directions_are_orthonormal_reproducible_and_key_dependent():
    a = np.asarray(initial_directions(jax.random.key(0), 1000, 5))
    np.testing.assert_allclose(a.T @ a, np.eye(5), atol=1e-6)
    np.testing.assert_array_equal(a, np.asarray(initial_directions(jax.random.key(0), 1000, 5)))
    b = np.asarray(initial_directions(jax.random.key(1), 1000, 5))
    assert largest_principal_sine(a.T, np.linalg.qr(b)[0].T) > 0.5  # another run, another start
    q, r = gram_schmidt(jnp.asarray(np.random.default_rng(0).standard_normal((7, 3)), jnp.float32))
    assert np.all(np.diag(np.asarray(r)) > 0)
    assert np.allclose(np.tril(np.asarray(r), -1), 0)


def test_options_are_checked():
    with pytest.raises(ValueError, match="sketch size"):
        SACOG(m=0)
    with pytest.raises(ValueError, match="sketch_every"):
        SACOG(sketch_every=0)
    with pytest.raises(ValueError, match=r"m must be in \[1, d\]"):
        SSACOG(m=6).init(5, jax.random.key(0))
    with pytest.raises(ValueError, match="eta"):
        SSACOG(eta=-1.0)


# ----------------------------------------------------------------------------------------------------------
# O(nnz): nothing of size d is computed but the two sparse writes into w (linalg.add_at) and Z (a scatter)
# ----------------------------------------------------------------------------------------------------------


def test_sparse_step_touches_only_the_rows_nonzeros():
    d, nnz = 100_003, 7  # d matches no other dimension of the step
    learner = SSACOG(eta=ETA)
    state = learner.init(d, jax.random.key(0))
    row = SparseVector(jnp.arange(nnz, dtype=jnp.int32) * 13, jnp.ones(nnz) / np.sqrt(nnz))
    jaxpr = jax.make_jaxpr(learner.step)(state, Example(row, jnp.float32(1), jnp.float32(2), jnp.float32(2)))
    sized_d = [eqn.primitive.name for eqn in jaxpr.eqns if any(d in getattr(v.aval, "shape", ()) for v in eqn.outvars)]
    assert sorted(sized_d) == ["custom_vmap_call", "scatter-add"], sized_d  # add_at, then Z's rows
    # SACOG, by contrast, works on d-sized arrays all through its step
    dense = SACOG(eta=ETA)
    x = jnp.zeros(d).at[row.indices].set(row.values)
    jaxpr = jax.make_jaxpr(dense.step)(
        dense.init(d, jax.random.key(0)), Example(x, jnp.float32(1), jnp.float32(2), jnp.float32(2))
    )
    assert sum(any(d in getattr(v.aval, "shape", ()) for v in e.outvars) for e in jaxpr.eqns) > 5


# ----------------------------------------------------------------------------------------------------------
# float64 (a subprocess, so that this process stays float32)
# ----------------------------------------------------------------------------------------------------------

# the child imports this module, its reference and tests/conftest.py from these folders
IMPORTS = (Path(__file__).resolve().parent, Path(__file__).resolve().parents[1])
FLOAT64 = textwrap.dedent("""
    import json, os, sys
    import jax, numpy as np
    jax.config.update("jax_enable_x64", True)
    sys.path[:0] = sys.argv[2].split(os.pathsep)
    import jcsol
    from jcsol.algorithms.sacog import SACOG, SSACOG
    from test_sacog import subspace_stream, largest_principal_sine, orders_for
    out = {}
    X, y = jcsol.datasets.load(sys.argv[3], positive=0, sparse=True, dtype=np.float64)
    orders = orders_for(len(y), 1, 5)
    dense = jcsol.run(SACOG(eta=1.0, loss="II"), X, y, perms=orders, dtype="float64", record_scores=True)
    sparse = jcsol.run(SSACOG(eta=1.0, loss="II"), X, y, perms=orders, dtype="float64", record_scores=True)
    out["usps_differing_rounds"] = int(((dense.scores >= 0) != (sparse.scores >= 0)).sum())
    out["usps_rounds"] = int(dense.scores.size)
    out["usps_score_gap"] = float(np.abs(dense.scores - sparse.scores).max())
    Xs, ys, B = subspace_stream(8_000)
    sines = []
    learner = SSACOG(eta=1.0, gamma=0.1)
    def inspect(done):
        V = np.asarray(jax.vmap(learner.sketch)(done.states)[0][0])
        sines.append(largest_principal_sine(V, B))
        out["orth"] = max(out.get("orth", 0.0), float(np.abs(V @ V.T - np.eye(5)).max()))
    jcsol.run(learner, Xs.astype(np.float64), ys, perms=1, dtype="float64", chunk_size=500, on_chunk=inspect)
    out["sparse_sines_gamma_0.1"] = sines
    json.dump(out, open(sys.argv[1], "w"))
""")


@pytest.fixture(scope="module")
def float64_results(tmp_path_factory):
    usps = shared_data("usps_esl.gz")
    path = tmp_path_factory.mktemp("f64") / "out.json"
    done = subprocess.run(
        [sys.executable, "-c", FLOAT64, str(path), os.pathsep.join(map(str, IMPORTS)), str(usps)],
        capture_output=True,
        text=True,
        env=dict(os.environ, JAX_PLATFORMS="cpu"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(path.read_text())


@pytest.mark.slow  # the whole usps set, twice, in a child process
def test_float64_sparse_sacog_predicts_as_sacog_on_every_round(float64_results):
    r = float64_results
    print(
        f"float64 usps: {r['usps_differing_rounds']} of {r['usps_rounds']} rounds differ, "
        f"largest score gap {r['usps_score_gap']:.2e}"
    )
    assert r["usps_differing_rounds"] == 0
    assert r["usps_score_gap"] < 1e-8


@pytest.mark.slow
def test_float64_sparse_sacog_sketch_converges_to_the_data_subspace(float64_results):
    sines = np.array(float64_results["sparse_sines_gamma_0.1"])
    print("sparse SACOG, float64, γ = 0.1: sines", np.round(sines, 5), "orth", float64_results["orth"])
    assert len(sines) == 16
    assert np.all(np.diff(sines) <= 1e-9)
    assert sines[-1] < 2e-3
    assert sines[-1] < sines[0] / 20
    assert float64_results["orth"] < 1e-6
