"""The one-kernel time loop (:mod:`jcsol.kernel`, run here in Pallas' interpreter) against the engine's scan.

The kernel sums a row's products in another order than XLA's dot, so the two paths agree to float32 rounding,
not bit for bit: every state within :data:`RTOL` of the scan's, relative to the largest entry of its leaf in its
run; every count, curve point and mistake cost equal in the runs that have no round whose score lies within
:data:`EPS` (relative) of 0, where the two roundings could predict differently; and such runs few.

The fast tier runs each covered variant once, the configurations rotating over chunk sizes, objectives, example
costs and grid blocks; the slow tier runs every variant in every configuration.
"""

import itertools

import jax
import numpy as np
import pytest
import scipy.sparse

import jcsol
from jcsol import engine, paths
from jcsol.core import programs

RTOL = 1e-5
EPS = 1e-5
COVERED = sorted(n for n in jcsol.VARIANTS if jcsol.by_name(n).kernel_steps)

# (chunk_size, objective, example costs, grid_blocks, kernel block)
CONFIGS = [
    (None, jcsol.Sum(), False, 1, None),
    (64, jcsol.Sum(rho="laplace"), True, 1, 2),
    (50, jcsol.Cost(c_p=0.8, c_n=0.2), False, 2, 1),
]


@pytest.fixture(scope="module")
def stream():
    """150 rows of 9 features (neither a power of 2), a quarter positive, rows of norms 0.5 to 2."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(150, 9)).astype(np.float32)
    X *= (rng.uniform(0.5, 2.0, size=150) / np.linalg.norm(X, axis=1))[:, None].astype(np.float32)
    y = np.where(rng.random(150) < 0.25, 1.0, -1.0).astype(np.float32)
    return X, y, rng.uniform(0.1, 2.0, size=150).astype(np.float32)


def three_point_grid(name: str):
    """The variant with three values of its first float hyperparameter a decade apart (none: as it is)."""
    learner = jcsol.by_name(name)
    hp = learner.hyperparameters()
    if not hp:
        return learner
    first = next(iter(hp))
    return learner.replace(**{first: float(np.asarray(hp[first])) * np.array([0.1, 1.0, 10.0])})


def both_paths(learner, stream, config, perms=3):
    chunk, objective, with_costs, grid_blocks, block = config
    X, y, costs = stream
    if not learner.hyperparameters():  # one grid point: one block
        grid_blocks = 1
    kwargs = dict(
        perms=perms,
        objective=objective,
        costs=costs if with_costs else None,
        chunk_size=chunk,
        curve_points=6,
        record_scores=True,
        grid_blocks=grid_blocks,
    )
    scan = jcsol.run(learner, X, y, path="scan", **kwargs)
    kernel = jcsol.run(learner, X, y, path=jcsol.Kernel(block=block), **kwargs)
    return scan, kernel


def assert_agree(scan, kernel):
    """The kernel's result against the scan's: see the module's docstring. Returns the runs compared."""
    grid_runs = scan.counts.shape[:-1]
    scores = scan.scores.reshape(-1, scan.scores.shape[-1])
    scale = np.abs(scores).max(axis=1, keepdims=True)  # each run's own
    near = ((np.abs(scores) < EPS * scale) & (scores != 0)).any(axis=1).reshape(grid_runs)
    assert near.mean() <= 0.05, f"{near.sum()} of {near.size} runs have a score within {EPS} of 0"
    clear = ~near
    np.testing.assert_array_equal(kernel.counts[clear], scan.counts[clear])
    np.testing.assert_array_equal(kernel.curve[clear], scan.curve[clear])
    np.testing.assert_allclose(kernel.mistake_cost[clear], scan.mistake_cost[clear], rtol=RTOL)
    np.testing.assert_allclose(
        kernel.scores[clear], scan.scores[clear], rtol=0, atol=RTOL * float(np.abs(scan.scores).max())
    )
    for a, b in zip(jax.tree.leaves(scan.states), jax.tree.leaves(kernel.states)):
        a, b = np.asarray(a)[clear], np.asarray(b)[clear]
        if a.dtype.kind != "f":
            np.testing.assert_array_equal(b, a)
            continue
        runs = a.reshape(a.shape[0], -1)
        tolerance = RTOL * np.maximum(np.abs(runs).max(axis=1, keepdims=True), np.finfo(np.float32).tiny)
        assert np.all(np.abs(b.reshape(runs.shape) - runs) <= tolerance)
    return int(clear.sum())


FAST = [(name, CONFIGS[i % len(CONFIGS)]) for i, name in enumerate(COVERED)]
SLOW = [c for c in itertools.product(COVERED, CONFIGS) if c not in FAST]


@pytest.mark.parametrize(
    ("name", "config"),
    [pytest.param(n, c, id=f"{n}-{i}") for i, (n, c) in enumerate(FAST)]
    + [pytest.param(n, c, id=f"full-{n}-{i}", marks=pytest.mark.slow) for i, (n, c) in enumerate(SLOW)],
)
def test_kernel_equals_scan(name, config, stream):
    scan, kernel = both_paths(three_point_grid(name), stream, config)
    assert assert_agree(scan, kernel) >= 0.95 * scan.n_runs


def test_the_covered_learners_are_the_first_order_and_diagonal_ones():
    assert {"COG-I", "COG-II", "ACOG-I-diag", "ACOG-II-diag", "PA", "PA-I", "PA-II", "Perceptron"} <= set(COVERED)
    assert not {"ACOG-I", "AROW", "SCW-I", "KOIL", "CW-CVaR"} & set(COVERED)


def test_block_sizes_and_warps_change_nothing(stream):
    """A block of grid points is a program's share of the grid: each run's arithmetic is the same."""
    X, y, _ = stream
    learner = jcsol.ACOG(eta=jcsol.decades()[3:8], diagonal=True, loss="II")
    results = [
        jcsol.run(learner, X, y, perms=2, path=jcsol.Kernel(block=block, num_warps=warps), record_scores=True)
        for block, warps in ((None, 4), (1, 4), (4, 1), (8, 8))
    ]
    for other in results[1:]:
        np.testing.assert_array_equal(other.counts, results[0].counts)
        np.testing.assert_array_equal(other.scores, results[0].scores)
        for a, b in zip(jax.tree.leaves(results[0].states), jax.tree.leaves(other.states)):
            np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize(("unroll", "chunk"), [(2, None), (3, 40), (4, 40), (8, 5)])
def test_unrolled_loops_change_nothing(unroll, chunk, stream):
    """Rounds taken a group at a time run each round's arithmetic as one at a time does, the rounds past the
    last whole group included: chunks of 40, 40, 40 and 30 rounds leave 1, 1, 1, 0 (unroll 3) and 0, 0, 0, 2
    (unroll 4) rounds after their groups; chunks of 5 rounds are shorter than a group of 8."""
    X, y, costs = stream
    learner = jcsol.ACOG(eta=jcsol.decades()[3:6], diagonal=True)
    kwargs = dict(perms=2, chunk_size=chunk, curve_points=4, costs=costs, record_scores=True)
    base = jcsol.run(learner, X, y, path=jcsol.Kernel(), **kwargs)
    other = jcsol.run(learner, X, y, path=jcsol.Kernel(unroll=unroll), **kwargs)
    for a, b in zip(
        jax.tree.leaves((base.states, base.counts, base.curve, base.mistake_cost, base.scores)),
        jax.tree.leaves((other.states, other.counts, other.curve, other.mistake_cost, other.scores)),
    ):
        np.testing.assert_array_equal(b, a)


def test_one_compiled_kernel_serves_every_chunk(stream, monkeypatch):
    """The last, shorter chunk runs the chunks' kernel, its length an argument: one compilation of the chunk."""
    X, y, _ = stream
    built = []
    program = programs.advance_program
    monkeypatch.setattr(programs, "advance_program", lambda *a, **k: built.append(k["path"]) or program(*a, **k))
    jcsol.run(jcsol.PA(), X, y, perms=2, chunk_size=40, path="kernel", key=11)  # chunks of 40, 40, 40, 30
    assert len(built) == 1
    built.clear()
    jcsol.run(jcsol.PA(), X, y, perms=2, chunk_size=40, path="scan", key=11)
    assert len(built) == 2  # the scan compiles the short chunk apart


def test_auto_takes_the_scan_off_a_gpu(stream):
    X, y, _ = stream
    a = jcsol.run(jcsol.COG(), X, y, perms=2, record_scores=True)
    b = jcsol.run(jcsol.COG(), X, y, perms=2, record_scores=True, path="scan")
    np.testing.assert_array_equal(a.scores, b.scores)  # bit for bit: the same program
    assert paths.choose("auto", jcsol.COG(), dense_rows=True, platform="gpu") == paths.GPU_KERNEL
    assert paths.choose("auto", jcsol.ACOG(), dense_rows=True, platform="gpu") == paths.GPU_SCAN
    assert paths.choose("auto", jcsol.COG(), dense_rows=False, platform="gpu") == paths.GPU_SCAN
    assert paths.choose("auto", jcsol.COG(), dense_rows=True, platform="cpu") == paths.Scan()


def test_each_backend_has_its_options():
    """The path names take the backend's options; a path given with options of its own keeps them."""
    assert paths.GPU_KERNEL == jcsol.Kernel(block=1, num_warps=1)
    assert paths.GPU_SCAN == jcsol.Scan(unroll=8)
    assert paths.choose("scan", jcsol.COG(), dense_rows=True, platform="gpu") == paths.GPU_SCAN
    assert paths.choose("scan", jcsol.COG(), dense_rows=True, platform="cpu") == jcsol.Scan()
    assert paths.choose("kernel", jcsol.COG(), dense_rows=True, platform="gpu") == paths.GPU_KERNEL
    own = jcsol.Scan(unroll=2)
    assert paths.choose(own, jcsol.COG(), dense_rows=True, platform="gpu") is own


def test_scan_options_keep_the_bits(stream):
    """``unroll`` and XLA options of the compilation change how the loop is compiled, not a round's arithmetic."""
    X, y, _ = stream
    learner = jcsol.ACOG(eta=[0.1, 1.0], diagonal=True)
    base = jcsol.run(learner, X, y, perms=2, record_scores=True, path="scan")
    for path in (jcsol.Scan(unroll=4), jcsol.Scan(compiler_options={"xla_cpu_max_isa": "AVX"})):
        other = jcsol.run(learner, X, y, perms=2, record_scores=True, path=path)
        np.testing.assert_array_equal(other.scores, base.scores)
        np.testing.assert_array_equal(other.counts, base.counts)


@pytest.mark.parametrize(
    ("path", "X_kind", "message"),
    [
        ("kernel", "sparse", "dense rows held in memory"),
        (jcsol.Kernel(), "dense-full", "ACOG-I is not one"),
        ("fast", "dense", 'path must be "auto"'),
    ],
)
def test_refused_paths(path, X_kind, message, stream):
    X, y, _ = stream
    learner = jcsol.ACOG() if X_kind == "dense-full" else jcsol.COG()
    rows = jcsol.SparseRows.from_scipy(scipy.sparse.csr_matrix(X)) if X_kind == "sparse" else X
    with pytest.raises(ValueError, match=message):
        jcsol.run(learner, rows, y, perms=2, path=path)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: jcsol.Kernel(block=3), "block must be a power of 2"),
        (lambda: jcsol.Kernel(num_warps=0), "num_warps must be a whole number"),
        (lambda: jcsol.Kernel(unroll=0), "unroll must be a whole number"),
        (lambda: jcsol.Scan(unroll=1.5), "unroll must be a whole number"),
        (lambda: jcsol.Scan(compiler_options={"xla_cpu_max_isa": None}), "must be a string, bool or number"),
        (lambda: jcsol.Kernel(interpret="yes"), "interpret must be True, False or None"),
    ],
)
def test_refused_options(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


def representatives() -> list[str]:
    """The first registered variant of each algorithm module, and every variant the kernel covers."""
    first: dict[str, str] = {}
    for name in jcsol.VARIANTS:
        first.setdefault(type(jcsol.by_name(name)).__module__, name)
    return sorted(set(first.values()) | {COVERED[0]})


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, id=n) for n in representatives()]
    + [
        pytest.param(n, id=f"full-{n}", marks=pytest.mark.slow)
        for n in sorted(set(jcsol.VARIANTS) - set(representatives()))
    ],
)
def test_every_chunk_lowers_for_cuda(name):
    """The chunk each path compiles for a GPU lowers for CUDA here, on the CPU: an operation that the GPU's
    compiler cannot lower (a Pallas block that is not a power of 2, say) fails CI, not a run on the device."""
    learner = jcsol.by_name(name)
    for sparse_rows in (False, True) if learner.sparse_steps else (False,):
        text = engine.lowered_chunk(learner, sparse_rows=sparse_rows).as_text()
        assert "stablehlo.while" in text  # the scan's loop over rounds
    if learner.kernel_steps:
        for unroll in (1, 4):
            kernel = jcsol.Kernel(unroll=unroll, interpret=False)
            lowered = engine.lowered_chunk(learner, path=kernel, objective=jcsol.Cost())
            assert lowered.as_text().count("__gpu$xla.gpu.triton") == 1  # one Triton kernel for the chunk
