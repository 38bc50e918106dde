"""Online standardisation inside the round (``scale="online"``, :mod:`jcsol.core.scaling`) against independent
computations: scikit-learn's ``StandardScaler`` fitted on the rows before each row (dense rows centred and scaled;
sparse rows scaled without centring, ``with_mean=False``), river's ``StandardScaler`` where installed, and a float64
NumPy loop of COG over the rows so scaled; per run (each permutation its own statistics), on every path, and
through checkpoints."""

import sys
from pathlib import Path

import jax
import numpy as np
import pytest
import scipy.sparse
from sklearn.preprocessing import StandardScaler

import jcsol
from jcsol.checkpoint import CheckpointError

sys.path.insert(0, str(Path(__file__).resolve().parent / "algorithms"))
import reference_cog  # noqa: E402


@pytest.fixture(scope="module")
def raw():
    """200 rows of 6 features of very different scales and offsets, a quarter positive; a third of the entries of
    the first five 0 (so that the sparse rows have zeros to keep), and the last feature the constant 4 (no variance:
    it passes as it is, a bias)."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(200, 6)) * np.array([1.0, 30.0, 0.1, 5.0, 1.0, 0.0]) + np.array([0, 3, 0, -2, 1, 4])
    X[:, :5][rng.random((200, 5)) < 1 / 3] = 0.0
    y = np.where(rng.random(200) < 0.25, 1.0, -1.0)
    return X, y


def prior_scaled(X, with_mean: bool) -> np.ndarray:
    """Row ``t`` scaled by scikit-learn's ``StandardScaler`` fitted on rows ``0 … t−1`` (row 0: all 0); where a
    feature has no variance yet, its value as given if it equals the mean so far (a constant feature), else 0."""
    out = np.zeros_like(X)
    for t in range(1, len(X)):
        scaler = StandardScaler(with_mean=with_mean).fit(X[:t])
        row = (X[t] - (scaler.mean_ if with_mean else 0.0)) / scaler.scale_
        out[t] = np.where(scaler.var_ > 0, row, np.where(X[t] == scaler.mean_, X[t], 0.0))
    return out


def test_the_definition_is_rivers_standard_scaler(raw):
    """river's ``StandardScaler`` (its running mean and variance, each row transformed before it is learnt) gives
    the scikit-learn definition the tests use, but for a constant feature: river maps it to 0 (its logistic
    regression has an intercept of its own), jcsol keeps it, from the second row on, as the bias it is."""
    preprocessing = pytest.importorskip("river.preprocessing")
    X, _ = raw
    scaler = preprocessing.StandardScaler()
    rows = []
    for x in X:
        features = dict(enumerate(x))
        rows.append([scaler.transform_one(features)[j] for j in range(X.shape[1])])
        scaler.learn_one(features)
    rivers, ours = np.array(rows), prior_scaled(X, with_mean=True)
    np.testing.assert_allclose(rivers[:, :5], ours[:, :5], rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(rivers[:, 5], 0.0)
    np.testing.assert_array_equal(ours[1:, 5], 4.0)


@pytest.mark.parametrize("sparse_rows", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("loss", ["I", "II"])
def test_a_run_learns_from_rows_scaled_by_the_rows_before_them(raw, sparse_rows, loss):
    """COG over the rows in their order with ``scale="online"`` is COG in float64 over the rows scaled by the
    statistics of the rows before each: dense rows centred and scaled, sparse rows scaled without centring."""
    X, y = raw
    rows = jcsol.SparseRows.from_scipy(scipy.sparse.csr_matrix(X.astype(np.float32))) if sparse_rows else X
    eta = 0.3
    res = jcsol.run(jcsol.COG(eta=eta, loss=loss), rows, y, perms="stream", scale="online", record_scores=True)
    scaled = prior_scaled(X.astype(np.float32).astype(np.float64), with_mean=not sparse_rows)
    ref = reference_cog.cog(scaled, y, np.arange(len(y)), eta, loss, reference_cog.sum_offline(0.5))
    np.testing.assert_allclose(res.scores[0], ref.scores, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(res.states.w)[0], ref.w, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(res.scores[0] >= 0, ref.scores >= 0)
    if sparse_rows:  # zeros stay zeros: the weights of features never seen non-zero never move
        assert not np.any(np.asarray(res.states.w)[0][np.all(X == 0, axis=0)])


def test_each_run_scales_by_its_own_past(raw):
    """A permutation's run is the run of its rows in that order: the statistics follow the run's order, and no
    run sees another's rows (to float32 rounding: XLA rounds a few products otherwise for another number of
    runs)."""
    X, y = raw
    learner = jcsol.ACOG(eta=[0.1, 1.0], diagonal=True)
    res = jcsol.run(learner, X, y, perms=3, scale="online", record_scores=True)
    for p, order in enumerate(res.orders):
        alone = jcsol.run(learner, X[order], y[order], perms="stream", scale="online", record_scores=True)
        np.testing.assert_allclose(res.scores[:, p], alone.scores[:, 0], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(res.counts[:, p], alone.counts[:, 0])
    plain = jcsol.run(learner, X, y, perms=3, record_scores=True)
    assert not np.array_equal(plain.scores, res.scores)


def test_scaling_keeps_its_bits_through_chunks_and_checkpoints(raw, tmp_path):
    X, y = raw
    learner = jcsol.COG(eta=[0.1, 1.0])
    whole = jcsol.run(learner, X, y, perms=2, scale="online")
    path = tmp_path / "run.ckpt"
    stopped = []

    def stop(done):
        if done.chunks_done == 3:
            stopped.append(done.chunks_done)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        jcsol.run(learner, X, y, perms=2, scale="online", chunk_size=30, checkpoint=path, on_chunk=stop)
    assert stopped == [3]
    resumed = jcsol.run(learner, X, y, perms=2, scale="online", chunk_size=30, checkpoint=path)
    assert resumed.resumed_at == 90
    np.testing.assert_array_equal(resumed.counts, whole.counts)
    for a, b in zip(jax.tree.leaves(resumed.states), jax.tree.leaves(whole.states)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    unscaled = tmp_path / "other.ckpt"
    jcsol.run(learner, X, y, perms=2, chunk_size=30, checkpoint=unscaled)
    with pytest.raises(CheckpointError, match="different run"):  # a run's scaling is part of its identity
        jcsol.run(learner, X, y, perms=2, scale="online", chunk_size=30, checkpoint=unscaled)


@pytest.mark.parametrize("name", ["COG-II", "ACOG-II", "ACOG-I-diag"])
def test_the_kernel_scales_as_the_scan_does(raw, name):
    """The GPU kernel (in Pallas' interpreter) keeps the statistics in the same round: its counts and states
    agree with the scan's to float32 rounding."""
    X, y = raw
    learner = jcsol.by_name(name).replace(eta=np.array([0.1, 1.0]))
    scan = jcsol.run(learner, X, y, perms=2, scale="online", path="scan", record_scores=True)
    kernel = jcsol.run(learner, X, y, perms=2, scale="online", path=jcsol.Kernel(), record_scores=True)
    np.testing.assert_array_equal(kernel.counts, scan.counts)
    np.testing.assert_allclose(kernel.scores, scan.scores, rtol=1e-4, atol=1e-4 * np.abs(scan.scores).max())
    for a, b in zip(jax.tree.leaves(kernel.states), jax.tree.leaves(scan.states)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-4 * np.abs(np.asarray(b)).max())


def test_a_scale_that_names_no_scaling_is_refused_before_any_work(raw):
    from jcsol.core import programs

    X, y = raw
    compiled = len(programs.COMPILED)
    for bad in ("standard", True, 1):
        with pytest.raises(ValueError, match='scale must be None .* or "online"'):
            jcsol.run(jcsol.COG(), X, y, perms=2, scale=bad)
    assert len(programs.COMPILED) == compiled


LAPLACE = jcsol.Sum(rho="laplace")


@pytest.mark.parametrize("blocks", [1, 2])
def test_a_live_learner_scales_as_its_run_does(raw, blocks, tmp_path):
    """``Live(..., scale="online")`` learns its batches with the bits of ``jcsol.run`` over the stream in its order
    (scores, counts, states), scores new rows with each configuration's statistics of the events learnt (the
    scikit-learn scaler fitted on them), and saves and loads its statistics."""
    X, y = raw
    learner = jcsol.COG(eta=np.array([0.1, 1.0, 10.0]))
    live = jcsol.Live(learner, scale="online", grid_blocks=blocks)
    scores = np.concatenate([live.learn(X[a:b], y[a:b], return_scores=True) for a, b in [(0, 50), (50, 51), (51, 200)]])
    res = jcsol.run(
        learner, X, y, perms="stream", objective=LAPLACE, record_scores=True, scale="online", grid_blocks=blocks
    )
    np.testing.assert_array_equal(scores.T, res.scores[:, 0])
    np.testing.assert_array_equal(live.counts, res.counts[:, 0])
    weights = np.asarray(live.states.w)
    np.testing.assert_array_equal(weights, np.asarray(res.states.w)[:, 0])
    fitted = StandardScaler().fit(X.astype(np.float32).astype(np.float64))
    new = np.random.default_rng(5).normal(size=(7, X.shape[1])) * 3
    scaled_new = np.where(fitted.var_ > 0, (new - fitted.mean_) / fitted.scale_, 0.0)
    np.testing.assert_allclose(live.scores(new), scaled_new @ weights.T, rtol=1e-4, atol=1e-4)
    live.save(tmp_path / "live.npz")
    loaded = jcsol.Live.load(tmp_path / "live.npz", learner)
    assert loaded.scale == "online"
    np.testing.assert_array_equal(loaded.scores(new), live.scores(new))
    more = loaded.learn(X[:20], y[:20], return_scores=True)
    np.testing.assert_array_equal(more, live.learn(X[:20], y[:20], return_scores=True))


@pytest.mark.parametrize("blocks", [1, 2])
def test_one_board_serves_a_grid_on_raw_and_on_scaled_rows(raw, blocks, tmp_path):
    """``Live([learner, learner], scale=[None, "online"])``: each learner's configurations learn as a live learner of
    that learner alone with its scaling (every configuration's scores and counts, bit for bit), side by side on one
    board; the scalings are saved with it, and a list that does not name one scaling a learner is refused."""
    X, y = raw
    learner = jcsol.COG(eta=np.array([0.1, 1.0]))
    both = jcsol.Live([learner, learner], scale=[None, "online"], grid_blocks=blocks)
    scores = np.concatenate([both.learn(X[a:b], y[a:b], return_scores=True) for a, b in [(0, 70), (70, 200)]])
    alone = [jcsol.Live(learner, scale=scale, grid_blocks=blocks) for scale in (None, "online")]
    np.testing.assert_array_equal(scores, np.concatenate([one.learn(X, y, return_scores=True) for one in alone], 1))
    np.testing.assert_array_equal(both.counts, np.concatenate([one.counts for one in alone]))
    assert not np.array_equal(scores[:, :2], scores[:, 2:])
    assert list(both.leaderboard().params["scale"]) == ["none", "none", "online", "online"]
    both.save(tmp_path / "live.npz")
    loaded = jcsol.Live.load(tmp_path / "live.npz", [learner, learner])
    assert loaded.scale == [None, "online"]
    new = np.random.default_rng(7).normal(size=(5, X.shape[1]))
    np.testing.assert_array_equal(loaded.scores(new), both.scores(new))
    for scale, match in (([None], "a list of 1 values for 2 learners"), ([None, "offline"], "scale must be None")):
        with pytest.raises(ValueError, match=match):
            jcsol.Live([learner, learner], scale=scale)


def test_a_result_scores_new_rows_with_its_runs_final_statistics(raw):
    """``Result.score`` scales each new row by each run's statistics of every row it learnt (the scikit-learn
    scaler fitted on the whole stream, which every permutation saw), as does a grid point's result."""
    X, y = raw
    res = jcsol.run(jcsol.COG(eta=[0.1, 1.0]), X, y, perms=2, scale="online")
    new = np.random.default_rng(6).normal(size=(5, X.shape[1])) * 4
    fitted = StandardScaler().fit(X.astype(np.float32).astype(np.float64))
    scaled_new = np.where(fitted.var_ > 0, (new - fitted.mean_) / fitted.scale_, 0.0)
    expected = np.einsum("gpd,nd->gpn", np.asarray(res.states.w, np.float64), scaled_new)
    np.testing.assert_allclose(res.score(new), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(res.best().result.score(new), expected[res.best().index], rtol=1e-4, atol=1e-4)
    assert res.scaler is not None
    assert jcsol.run(jcsol.COG(), X, y, perms=2).scaler is None


def test_the_estimator_scales_as_its_run_does(raw):
    """``OnlineClassifier(scale="online")``: ``fit`` is ``jcsol.run``'s rounds over the rows in order with the same
    scaling, bit for bit; ``partial_fit`` carries the statistics from call to call; ``decision_function`` scales
    new rows by the statistics of every row learnt; a model fitted unscaled is not continued scaled."""
    from jcsol.sklearn import OnlineClassifier

    X, y = raw
    learner = jcsol.ACOG(eta=0.5, loss="II", diagonal=True)
    clf = OnlineClassifier(learner, normalize=False, scale="online").fit(X, y)
    rows = X.astype(np.float32)
    res = jcsol.run(learner, rows, y, perms=np.arange(len(y))[None], scale="online")
    for a, b in zip(jax.tree.leaves(clf.state_), jax.tree.leaves(res.states)):
        np.testing.assert_array_equal(a, np.asarray(b)[0])
    streamed = OnlineClassifier(learner, normalize=False, scale="online", objective=LAPLACE)
    for lo, hi in [(0, 60), (60, 61), (61, 200)]:
        streamed.partial_fit(X[lo:hi], y[lo:hi], classes=[-1, 1])
    whole = jcsol.run(learner, rows, y, perms=np.arange(len(y))[None], scale="online", objective=LAPLACE)
    for a, b in zip(jax.tree.leaves(streamed.state_), jax.tree.leaves(whole.states)):
        np.testing.assert_array_equal(a, np.asarray(b)[0])
    new = np.random.default_rng(8).normal(size=(6, X.shape[1])) * 2
    fitted = StandardScaler().fit(rows.astype(np.float64))
    scaled_new = np.where(fitted.var_ > 0, (new - fitted.mean_) / fitted.scale_, 0.0)
    f = scaled_new @ np.asarray(clf.state_.mu, np.float64)
    np.testing.assert_allclose(clf.decision_function(new), f if clf.pos_label_ == clf.classes_[1] else -f, rtol=1e-4)
    plain = OnlineClassifier(learner, normalize=False).fit(X, y)
    with pytest.raises(ValueError, match="scale='online' differs from the model's None"):
        plain.set_params(scale="online").partial_fit(X, y)
    with pytest.raises(ValueError, match="scale must be None"):
        OnlineClassifier(learner, scale="z-score").fit(X, y)


def test_the_command_line_scales_when_asked(capsys, tmp_path):
    """``jcsol run --scale online`` runs its learners with ``scale="online"``: the selected configuration's
    figures are those of ``select_and_rerun`` with it."""
    import json

    from conftest import run_cli

    out = tmp_path / "run.json"
    rc, text, _ = run_cli(
        ["run", "--data", "german", "--learner", "COG-II", "--perms", "2", "--scale", "online", "--json", str(out)],
        capsys,
    )
    assert rc == 0
    assert "each feature standardised online (--scale online)" in text
    X, y = jcsol.datasets.load("german")
    learner = jcsol.COG(loss="II")
    sel = jcsol.protocols.select_and_rerun(learner, X, y, perms=2, measure="sum", rerun=False, scale="online")
    runs = json.loads(out.read_text())["runs"]
    np.testing.assert_allclose(sorted(r["sum"] for r in runs), sorted(np.ravel(sel.result.sum)), rtol=1e-12)
    rc, _, err = run_cli(["run", "--data", "german", "--scale", "standard"], capsys)
    assert rc == 2
    assert "invalid choice: 'standard'" in err


def test_the_command_line_runs_each_learner_as_given_and_scaled(capsys, tmp_path):
    """``jcsol run --scale both``: each learner's row as given, and a row ``NAME scaled``, whose figures are those
    of ``select_and_rerun`` without and with ``scale="online"``; ``--save`` keeps the scaling of the row it saves,
    and with ``--all`` it is refused before any work."""
    import json

    from conftest import run_cli

    out, model = tmp_path / "run.json", tmp_path / "model.npz"
    args = ["run", "--data", "german", "--learner", "COG-II", "--perms", "2", "--scale", "both"]
    rc, text, _ = run_cli([*args, "--json", str(out), "--save", str(model)], capsys)
    assert rc == 0
    assert "each learner on the rows as given and standardised online (--scale both)" in text
    X, y = jcsol.datasets.load("german")
    runs = json.loads(out.read_text())["runs"]
    sums = {}
    for scale, name in ((None, "COG-II"), ("online", "COG-II scaled")):
        sel = jcsol.protocols.select_and_rerun(
            jcsol.COG(loss="II"), X, y, perms=2, measure="sum", rerun=False, scale=scale
        )
        sums[name] = float(np.mean(sel.result.sum))
        printed = sorted(r["sum"] for r in runs if r["learner"] == name)
        np.testing.assert_allclose(printed, sorted(np.ravel(sel.result.sum)), rtol=1e-12)
    saved = jcsol.Model.load(model)
    assert (saved.scaler is not None) == (sums["COG-II scaled"] > sums["COG-II"])
    rc, _, err = run_cli([*args, "--all", "--save", str(tmp_path / "all.npz")], capsys)
    assert rc == 2
    assert "--scale both runs it twice" in err
    assert not (tmp_path / "all.npz").exists()
