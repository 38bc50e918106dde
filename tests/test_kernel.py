"""The GPU kernel (:mod:`jcsol.core.triton`, run here in Pallas' interpreter) against the engine's scan, the
registry of chunk backends (:mod:`jcsol.core.chunks`) that chooses between them, and the live learner's batches
and the estimator's passes on either backend.

The kernel sums a row's products in another order than XLA's dot, so the two paths agree to float32 rounding,
not bit for bit: every state within :data:`RTOL` of the scan's, relative to the largest entry of its leaf in its
run; every count, curve point and mistake cost equal in the runs that have no round whose score lies within
:data:`EPS` (relative) of 0, where the two roundings could predict differently; and such runs few.

The fast tier runs each covered variant once, the configurations rotating over chunk sizes, objectives, example
costs and grid blocks; the slow tier runs every variant in every configuration.
"""

import importlib
import itertools
import warnings

import jax
import numpy as np
import pytest
import scipy.sparse

import jcsol
from jcsol import paths
from jcsol.core import chunks, programs, triton

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
    """The variant with three values of its first float hyperparameter a decade apart, or a tenth apart where
    decades leave its range (a confidence in (0.5, 1)); none: as it is."""
    learner = jcsol.by_name(name)
    hp = learner.hyperparameters()
    if not hp:
        return learner
    first = next(iter(hp))
    value = float(np.asarray(hp[first]))
    try:
        return learner.replace(**{first: value * np.array([0.1, 1.0, 10.0])})
    except ValueError:
        return learner.replace(**{first: value * np.array([0.9, 1.0, 1.1])})


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


def test_the_covered_learners_are_the_first_order_diagonal_and_full_covariance_ones():
    assert {"COG-I", "COG-II", "ACOG-I-diag", "ACOG-II-diag", "PA", "PA-I", "PA-II", "Perceptron"} <= set(COVERED)
    assert {"ACOG-I", "ACOG-II", "AROW", "CW", "SCW-I", "SCW-II", "CW-var", "CW-var-drop"} <= set(COVERED)
    assert not {"KOIL-RS++", "CW-CVaR", "SACOG-I", "ROMMA", "OptaxCOG-I-adam"} & set(COVERED)


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
    program = programs.chunk_program
    monkeypatch.setattr(programs, "chunk_program", lambda *a, **k: built.append(k["path"]) or program(*a, **k))
    jcsol.run(jcsol.PA(), X, y, perms=2, chunk_size=40, path="kernel", key=11)  # chunks of 40, 40, 40, 30
    assert len(built) == 1
    built.clear()
    jcsol.run(jcsol.PA(), X, y, perms=2, chunk_size=40, path="scan", key=11)
    assert len(built) == 2  # the scan compiles the short chunk apart


def _chosen(path, learner, *, dense_rows=True, platform="gpu", probe=None):
    choice = chunks.choose(path, learner, d=9, dtype=np.float32, dense_rows=dense_rows, platform=platform, probe=probe)
    return choice.backend.name, choice.options


def test_auto_takes_the_scan_off_a_gpu(stream):
    X, y, _ = stream
    a = jcsol.run(jcsol.COG(), X, y, perms=2, record_scores=True)
    b = jcsol.run(jcsol.COG(), X, y, perms=2, record_scores=True, path="scan")
    np.testing.assert_array_equal(a.scores, b.scores)  # bit for bit: the same program
    assert _chosen("auto", jcsol.COG()) == ("kernel", paths.GPU_KERNEL)
    assert _chosen("auto", jcsol.ACOG()) == ("kernel", paths.GPU_KERNEL)
    assert _chosen("auto", jcsol.ROMMA()) == ("scan", paths.GPU_SCAN)
    wide = chunks.choose("auto", jcsol.ACOG(), d=200, dtype=np.float32, dense_rows=True, platform="gpu")
    assert wide.backend.name == "scan"  # Σ beyond the registers of a program
    assert _chosen("auto", jcsol.COG(), dense_rows=False) == ("scan", paths.GPU_SCAN)
    assert _chosen("auto", jcsol.COG(), platform="cpu") == ("scan", paths.Scan())


def test_each_backend_has_its_options():
    """The path names take the backend's options; a path given with options of its own keeps them."""
    assert paths.GPU_KERNEL == jcsol.Kernel(block=1, num_warps=None)
    assert paths.GPU_SCAN == jcsol.Scan(unroll=8)
    assert _chosen("scan", jcsol.COG()) == ("scan", paths.GPU_SCAN)
    assert _chosen("scan", jcsol.COG(), platform="cpu") == ("scan", jcsol.Scan())
    assert _chosen("kernel", jcsol.COG()) == ("kernel", paths.GPU_KERNEL)
    own = jcsol.Scan(unroll=2)
    assert _chosen(own, jcsol.COG())[1] is own
    own_kernel = jcsol.Kernel(block=4)
    assert _chosen(own_kernel, jcsol.COG()) == ("kernel", own_kernel)


def test_coverage_is_decided_from_the_learner_and_its_state(monkeypatch):
    """The kernel covers a learner whose step is written for it and whose state is scalars, vectors of length d
    and (d, d) matrices of d at most 128: decided before any trace of the kernel, from the state's shapes."""
    assert set(chunks.BACKENDS) == {"scan", "kernel"}
    for name in jcsol.VARIANTS:
        learner = jcsol.by_name(name)
        refusals = chunks.coverage(learner)
        assert refusals["scan"] is None
        assert (refusals["kernel"] is None) is bool(learner.kernel_steps), (name, refusals)
    monkeypatch.setattr(jcsol.SACOG, "kernel_steps", True)  # declared, but its sketch is (d, m)
    sketch = jcsol.SACOG()
    state = chunks.state_shapes(sketch, d=9, dtype=np.float32)
    refusal = triton.refusal(sketch, lambda: state, d=9, dense_rows=True)
    assert "a leaf of SACOG-I's state has shape (9, 5)" in refusal, refusal
    asked = []
    assert "kernel_steps is False" in triton.refusal(jcsol.ROMMA(), asked.append, d=9, dense_rows=True)
    assert not asked  # a learner not written for the kernel: no shapes traced
    with pytest.raises(ValueError, match=r"path='kernel' cannot run SACOG-I here: .* has shape \(9, 5\)"):
        _chosen("kernel", sketch)
    assert (
        triton.refusal(
            jcsol.ACOG(), lambda: chunks.state_shapes(jcsol.ACOG(), d=128, dtype="f4"), d=128, dense_rows=True
        )
        is None
    )
    with pytest.raises(
        ValueError, match=r"cannot run ACOG-I here: the kernel holds a \(d, d\) matrix .* up to d = 128"
    ):
        chunks.choose("kernel", jcsol.ACOG(), d=129, dtype=np.float32, dense_rows=True, platform="gpu")


def test_the_listings_come_from_the_registry(capsys):
    """``jcsol.learners()``, ``jcsol learners`` and the docs' table name each learner's paths as the registry
    decides them."""
    from conftest import run_cli

    for info in jcsol.learners():
        refusals = chunks.coverage(jcsol.by_name(info.name))
        assert info.paths == tuple(name for name, why in refusals.items() if why is None), info
    assert next(v for v in jcsol.learners() if v.name == "ROMMA").paths == ("scan",)
    rc, text, _ = run_cli(["learners"], capsys)
    assert rc == 0
    assert "  paths: kernel, scan\n" in text
    assert "  paths: scan\n" in text


def test_auto_takes_the_scan_where_triton_cannot_be_imported(monkeypatch, stream):
    """A JAX without Pallas' Triton backend (a later release may remove it): ``path="auto"`` warns once, naming
    why, and takes the scan; the kernel asked for by name is refused, naming why."""
    real = importlib.import_module

    def without_triton(name, *args):
        if name == "jax.experimental.pallas.triton":
            raise ImportError("No module named 'jax.experimental.pallas.triton'")
        return real(name, *args)

    monkeypatch.setattr(triton.importlib, "import_module", without_triton)
    triton._pallas_triton.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match=r"runs COG-I on the scan, not on the kernel backend: Pallas' Triton"):
            assert _chosen("auto", jcsol.COG()) == ("scan", paths.GPU_SCAN)
        with pytest.raises(ValueError, match=r"path='kernel' cannot run COG-I here: Pallas' Triton backend"):
            _chosen("kernel", jcsol.COG())
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a learner the kernel does not cover: nothing to warn about
            assert _chosen("auto", jcsol.ROMMA()) == ("scan", paths.GPU_SCAN)
        X, y, _ = stream  # off a GPU nothing changes
        jcsol.run(jcsol.COG(), X, y, perms=2)
    finally:
        triton._pallas_triton.cache_clear()


def test_auto_takes_the_scan_where_the_kernel_is_refused():
    """A backend whose compiler refuses the learner's chunk (``probe`` raising, as the engine's lowering would):
    the scan, with one warning naming the error."""

    def refuses(choice):
        raise NotImplementedError("Unimplemented primitive in Pallas GPU lowering: sort")

    with pytest.warns(RuntimeWarning, match="its compiler refused the chunk .NotImplementedError: Unimplemented"):
        assert _chosen("auto", jcsol.COG(), probe=refuses) == ("scan", paths.GPU_SCAN)
    probed = []
    assert _chosen("auto", jcsol.COG(), probe=probed.append) == ("kernel", paths.GPU_KERNEL)
    assert [c.backend.name for c in probed] == ["kernel"]


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
        (jcsol.Kernel(), "dense-uncovered", "ROMMA's step is not written for the kernel"),
        ("fast", "dense", 'path must be "auto"'),
    ],
)
def test_refused_paths(path, X_kind, message, stream):
    X, y, _ = stream
    learner = jcsol.ROMMA() if X_kind == "dense-uncovered" else jcsol.COG()
    rows = jcsol.SparseRows.from_scipy(scipy.sparse.csr_matrix(X)) if X_kind == "sparse" else X
    compiled = len(programs.COMPILED)
    with pytest.raises(ValueError, match=message):
        jcsol.run(learner, rows, y, perms=2, path=path)
    assert len(programs.COMPILED) == compiled  # refused before anything was compiled


def test_a_compiled_kernel_off_a_gpu_is_refused_before_any_work(stream, monkeypatch):
    """``Kernel(interpret=False)`` on the CPU: refused by ``run``, ``Live`` and the estimator before a row is read
    or a program compiled, naming the option."""
    from jcsol import Live, engine
    from jcsol.sklearn import OnlineClassifier

    X, y, _ = stream
    read = []
    real = engine.checked_stream
    monkeypatch.setattr(engine, "checked_stream", lambda *a, **k: read.append(1) or real(*a, **k))
    compiled = len(programs.COMPILED)
    path = jcsol.Kernel(interpret=False)
    message = r"path=Kernel\(.*interpret=False.*\): jcsol.Kernel\(interpret=False\) compiles the kernel for a GPU"
    with pytest.raises(ValueError, match=message):
        jcsol.run(jcsol.COG(), X, y, perms=2, path=path)
    with pytest.raises(ValueError, match=message):
        Live(jcsol.COG(), path=path)
    with pytest.raises(ValueError, match=message):
        OnlineClassifier(jcsol.COG(), path=path).fit(X, y)
    assert not read
    assert len(programs.COMPILED) == compiled


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


LAPLACE = jcsol.Sum(rho="laplace")


def _same_tree(a, b):
    for x, z in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(z))


@pytest.mark.parametrize("blocks", [1, 2])  # one device's packed buffers, and units over this process's devices
@pytest.mark.parametrize("name", ["COG-II", "ACOG-I-diag"])
def test_live_batches_on_the_kernel_are_its_run(name, blocks, stream):
    """A live learner on the kernel backend learns its batches (of any length, padded to a compiled size) with
    the bits of ``jcsol.run`` on the kernel over the same stream in its order: scores, counts and states; the
    scan's live learner those of the scan's run."""
    from jcsol import Live

    X, y, _ = stream
    learner = three_point_grid(name)
    for path in (jcsol.Kernel(), "scan"):
        live = Live(learner, path=path, grid_blocks=blocks)
        scores = np.concatenate(
            [live.learn(X[a:b], y[a:b], return_scores=True) for a, b in [(0, 40), (40, 41), (41, 150)]]
        )
        res = jcsol.run(
            learner, X, y, perms="stream", objective=LAPLACE, record_scores=True, path=path, grid_blocks=blocks
        )
        np.testing.assert_array_equal(scores.T.reshape(res.scores.shape[:-2] + (-1,)), res.scores[..., 0, :])
        np.testing.assert_array_equal(live.counts, res.counts[..., 0, :])
        _same_tree(live.states, jax.tree.map(lambda a: np.asarray(a)[:, 0], res.states))


def test_live_chooses_its_backend_as_run_does(stream):
    """``path="auto"`` off a GPU is the scan (the same bits as ``path="scan"``); a path that names no backend is
    refused when the learner is made, one that does not cover a learner or its rows when its dimension is known,
    the learner then unchanged."""
    from jcsol import Live
    from jcsol.features import TableEncoder

    X, y, _ = stream
    auto, scan = Live(jcsol.COG(eta=[0.1, 1.0])), Live(jcsol.COG(eta=[0.1, 1.0]), path="scan")
    np.testing.assert_array_equal(auto.learn(X, y, return_scores=True), scan.learn(X, y, return_scores=True))
    assert [c.backend.name for c in auto._backend._choices[9, False]] == ["scan"]
    with pytest.raises(ValueError, match='path must be "auto"'):
        Live(jcsol.COG(), path="gpu")
    with pytest.raises(ValueError, match="path='kernel' cannot run ROMMA here"):
        Live(jcsol.ROMMA(), path="kernel").learn(X, y)
    with pytest.raises(ValueError, match="path='kernel' cannot run COG-I here: the kernel runs dense rows"):
        Live(jcsol.COG(), path="kernel", encoder=TableEncoder(numeric=["a"]))
    live = Live(jcsol.COG(eta=[0.1, 1.0]), path="kernel")
    live.learn(X[:50], y[:50])
    before = (jax.tree.map(np.asarray, live.states), live.counts.copy())
    sparse = jcsol.SparseRows.from_scipy(scipy.sparse.csr_matrix(X[50:]))
    with pytest.raises(ValueError, match="the kernel runs dense rows"):
        live.learn(sparse, y[50:])
    _same_tree(live.states, before[0])
    np.testing.assert_array_equal(live.counts, before[1])
    live.learn(X[50:], y[50:])  # and it goes on with dense rows


@pytest.mark.parametrize("name", ["COG-I", "PA-I", "ACOG-II-diag"])
def test_estimator_on_the_kernel_is_its_run(name):
    """The estimator on the kernel backend: ``fit`` (offline ρ) and ``partial_fit`` in uneven batches (Laplace ρ)
    end in the state of ``jcsol.run`` on the kernel over the rows in their order, bit for bit; with sample
    weights (which ``run`` does not take), the scan estimator's state to float32 rounding."""
    from jcsol.sklearn import OnlineClassifier

    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 9))
    y = np.where(rng.random(200) < 0.3, 1, -1)
    Xn = jcsol.datasets.l2_normalize(X).astype(np.float32)
    order = np.arange(200)[None]
    learner = jcsol.by_name(name)
    fitted = OnlineClassifier(learner, path=jcsol.Kernel()).fit(X, y)
    res = jcsol.run(learner, Xn, y.astype(np.float32), perms=order, path=jcsol.Kernel())
    _same_tree(fitted.state_, jax.tree.map(lambda a: np.asarray(a)[0], res.states))
    streamed = OnlineClassifier(learner, path="kernel")
    for lo, hi in [(0, 70), (70, 71), (71, 200)]:
        streamed.partial_fit(X[lo:hi], y[lo:hi], classes=[-1, 1])
    res = jcsol.run(learner, Xn, y.astype(np.float32), perms=order, objective=LAPLACE, path="kernel")
    _same_tree(streamed.state_, jax.tree.map(lambda a: np.asarray(a)[0], res.states))
    weights = np.where(np.arange(200) % 7 == 0, 0.0, np.where(np.arange(200) % 5 == 0, 2.5, 1.0))
    kernel = OnlineClassifier(learner, path="kernel").fit(X, y, sample_weight=weights)
    scan = OnlineClassifier(learner, path="scan").fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(kernel.coef_, scan.coef_, rtol=RTOL, atol=RTOL * np.abs(scan.coef_).max())
    assert not np.allclose(kernel.coef_, fitted.coef_)  # the weights were used


def test_estimator_refuses_a_path_before_the_pass():
    from jcsol.sklearn import OnlineClassifier

    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(40, 5)), np.where(rng.random(40) < 0.5, 1, -1)
    clf = OnlineClassifier(jcsol.ROMMA(), path="scan").fit(X, y)
    coef = clf.coef_.copy()
    clf.set_params(path="kernel")
    with pytest.raises(ValueError, match="path='kernel' cannot run ROMMA here"):
        clf.partial_fit(X, y)
    np.testing.assert_array_equal(clf.coef_, coef)
    with pytest.raises(ValueError, match='path must be "auto"'):
        OnlineClassifier(path="fast").fit(X, y)


def representatives() -> list[str]:
    """The first registered variant of each algorithm module, and every variant the kernel covers."""
    first: dict[str, str] = {}
    for name in jcsol.VARIANTS:
        first.setdefault(type(jcsol.by_name(name)).__module__, name)
    return sorted(set(first.values()) | {COVERED[0]})


@pytest.mark.parametrize("name", sorted(jcsol.VARIANTS))
def test_every_scan_chunk_lowers_for_tpu(name):
    """Every variant's scan chunk, as :func:`jcsol.run` compiles it for a TPU, lowers for TPU here, on the CPU: an
    operation that TPU's compiler cannot lower fails CI, not a run on the device (about 0.1 s a variant)."""
    learner = jcsol.by_name(name)
    for sparse_rows in (False, True) if learner.sparse_steps else (False,):
        lowered = programs.lowered_chunk(learner, sparse_rows=sparse_rows, platform="tpu", lowering_platform="tpu")
        assert "stablehlo.while" in lowered.as_text()  # the scan's loop over rounds


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
        text = programs.lowered_chunk(learner, sparse_rows=sparse_rows).as_text()
        assert "stablehlo.while" in text  # the scan's loop over rounds
    if learner.kernel_steps:
        for unroll in (1, 4):
            kernel = jcsol.Kernel(unroll=unroll, interpret=False)
            lowered = programs.lowered_chunk(learner, path=kernel, objective=jcsol.Cost())
            assert lowered.as_text().count("__gpu$xla.gpu.triton") == 1  # one Triton kernel for the chunk
