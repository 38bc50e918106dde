"""``jcsol.Model``: a result's trained model scores as ``Result.score`` does, bit for bit, before and after a save and
``jcsol.load``; ``jcsol.load`` and ``Live.load`` open a live learner's file without being given its learner; bad
files are refused, naming the file and why; alerts follow the threshold and budget rules."""

import json
from fractions import Fraction

import jax
import numpy as np
import pytest
import scipy.sparse as sp
from archives import damaged_archives

import jcsol
from jcsol.live import Live
from jcsol.live.files import describe
from jcsol.model import Model, ModelFileError


@pytest.fixture(scope="module")
def rows():
    X, y = jcsol.datasets.load("german")
    return X[:400], y[:400], X[600:700]


@pytest.fixture(scope="module")
def sweep(rows):
    X, y, _ = rows
    return jcsol.run(jcsol.ACOG(eta=jcsol.decades(1e-1, 1e1), loss="II"), X, y, perms=3, record_scores=True)


def same_tree(a, b) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(np.array_equal(np.asarray(p), np.asarray(q)) for p, q in zip(la, lb))


# -- a result's models ----------------------------------------------------------------------------------------


def test_the_best_points_model_scores_as_result_score_does(rows, sweep):
    _, _, held = rows
    best = sweep.best("sum")
    for run in (0, 2, -1):
        model = best.model(run=run)
        assert model.grid_shape == ()
        assert model.n_features == 24
        assert model.dtype == np.float32
        assert np.array_equal(model.scores(held), best.result.score(held)[run])
        assert np.array_equal(model.scores(held), sweep.score(held)[best.index + (run,)])
        assert np.array_equal(model.history, sweep.scores[best.index + (run,)])
    assert model.provenance["index"] == list(best.index)
    assert model.provenance["rows"] == 400
    assert model.provenance["order"] == "permutation 2 of 3"
    assert model.params["eta"] == best.params["eta"]
    with pytest.raises(IndexError, match="run 3"):
        best.model(run=3)


def test_a_grid_model_scores_every_point_as_result_score_does(rows, sweep):
    _, _, held = rows
    model = sweep.model(run=1)
    assert model.grid_shape == (3,)
    assert model.history.shape == (3, 400)
    scores = model.scores(held)
    assert scores.shape == (3, 100)
    assert np.array_equal(scores, sweep.score(held)[:, 1])
    for i in range(3):
        assert np.array_equal(model.at(i).scores(held), scores[i])
        assert np.array_equal(sweep.model(i, run=1).scores(held), scores[i])
    with pytest.raises(ValueError, match="model.at"):
        model.alerts(held)


def test_sparse_rows_and_online_scaling(rows):
    X, y, held = rows
    for data, new, scale in ((sp.csr_matrix(X), sp.csr_matrix(held), None), (X, held, "online")):
        res = jcsol.run(jcsol.COG(eta=jcsol.decades(1e-1, 1e1)), data, y, perms="stream", scale=scale)
        best = res.best("sum")
        model = best.model(data="german")
        assert (model.scaler is not None) == (scale == "online")
        assert model.provenance["order"] == "the stream's own"
        assert model.provenance["data"] == "german"
        assert np.array_equal(model.scores(new), best.result.score(new)[0])
        assert np.array_equal(model.scores(new), res.score(new)[best.index + (0,)])


# -- the file -------------------------------------------------------------------------------------------------


def test_save_and_load_give_the_same_bits(rows, sweep, tmp_path):
    X, y, held = rows
    for name, model in (("one", sweep.best("sum").model(run=1)), ("grid", sweep.model(run=2))):
        path = tmp_path / f"{name}.npz"
        model.replace(threshold=0.25, provenance={**model.provenance, "data": "german"}).save(path)
        loaded = jcsol.load(path)
        assert isinstance(loaded, Model)
        assert describe(loaded.learner) == describe(model.learner)
        assert describe(loaded.objective) == describe(model.objective)
        assert loaded.grid_shape == model.grid_shape
        assert loaded.threshold == 0.25
        assert loaded.provenance["data"] == "german"
        assert same_tree(loaded.states, model.states)
        assert np.array_equal(loaded.history, model.history)
        assert np.array_equal(loaded.scores(held), model.scores(held))
        assert np.array_equal(Model.load(path, model.learner, model.objective).scores(held), model.scores(held))
    scaled = jcsol.run(jcsol.ACOG(eta=1.0, diagonal=True), sp.csr_matrix(X), y, perms="stream", scale="online")
    model = scaled.model().replace(budget=0.05)
    model.save(tmp_path / "scaled.npz")
    loaded = jcsol.load(tmp_path / "scaled.npz")
    assert loaded.budget == 0.05
    assert loaded.history is None
    assert same_tree(loaded.scaler, model.scaler)
    assert np.array_equal(loaded.scores(sp.csr_matrix(held)), model.scores(sp.csr_matrix(held)))
    with np.load(tmp_path / "scaled.npz") as archive:
        meta = json.loads(archive["meta"].tobytes())
        assert meta["kind"] == "jcsol.Model"
        assert meta["format"] == 1
        assert meta["scale"] == "online"
        assert {k.split("/")[0] for k in archive.files} == {"meta", "state", "scaler"}


def test_a_model_with_a_table_encoder_scores_tables(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame(
        {
            "amount": rng.lognormal(3.0, 1.0, n),
            "merchant": rng.choice(["m1", "m2", "m3"], n),
            "fraud": rng.choice([0, 1], n, p=[0.8, 0.2]),
        }
    )
    X, y, encoder = jcsol.features.load_table(frame, "fraud", bits=8)
    res = jcsol.run(jcsol.COG(eta=1.0), X, y, perms="stream", record_scores=True)
    model = res.model().replace(encoder=encoder)
    new = frame.drop(columns="fraud").iloc[:50]
    expected = model.scores(encoder.transform(new))
    assert np.array_equal(model.scores(new), expected)
    assert np.array_equal(model.scores(frame.iloc[:50]), expected)  # its label column ignored
    model.save(tmp_path / "table.npz")
    loaded = jcsol.load(tmp_path / "table.npz")
    assert loaded.encoder.columns == encoder.columns
    assert np.array_equal(loaded.scores(new), expected)
    with pytest.raises(ValueError, match="the encoder makes rows of 257 features; n_features is 256"):
        model.replace(encoder=jcsol.TableEncoder(numeric=["amount"], bits=8, bias=True))


def test_live_files_load_without_their_learner_and_continue_bit_for_bit(rows, tmp_path):
    X, y, _ = rows
    learner = jcsol.ACOG(eta=jcsol.decades(1e-1, 1e1), loss="II", diagonal=True)
    live = Live(learner, jcsol.Cost(c_p=0.8, c_n=0.2), margin=0.01)
    live.learn(X[:200], y[:200])
    live.predict(X[200:210], ids=list(range(10)))
    path = tmp_path / "live.npz"
    live.save(path)
    opened, loaded = jcsol.load(path), Live.load(path)
    for other in (opened, loaded):
        assert isinstance(other, Live)
        assert describe(other.learner) == describe(learner)
        assert describe(other.objective) == describe(live.objective)
        assert other.selection == live.selection
    first = [each.learn(X[200:300], y[200:300], return_scores=True) for each in (live, opened, loaded)]
    for each in (live, opened, loaded):
        each.learn(ids=list(range(10)), y=y[200:210])
    for scores, other in zip(first[1:], (opened, loaded)):
        assert np.array_equal(scores, first[0])
        assert same_tree(other.states, live.states)
        assert np.array_equal(other.counts, live.counts)
        assert other.events == live.events == 310
    with pytest.raises(jcsol.live.LiveFileError, match="another objective"):
        Live.load(path, learner, jcsol.Sum(rho="laplace"))
    with pytest.raises(ModelFileError, match="live learner"):
        Model.load(path)


def test_a_paired_grid_is_rebuilt_paired(rows, tmp_path):
    X, y, _ = rows
    learner = jcsol.paired(jcsol.CWCVaR(diagonal=True), alpha=[0.01, 0.1], beta=[0.3, 0.9])
    live = Live(learner, jcsol.Sum(rho="laplace"))
    live.learn(X[:50], y[:50])
    live.save(tmp_path / "paired.npz")
    loaded = jcsol.load(tmp_path / "paired.npz")
    assert loaded.learner.pairings == (frozenset({"alpha", "beta"}),)
    assert same_tree(loaded.states, live.states)


# -- refusals ---------------------------------------------------------------------------------------------------


def _rewrite(path, target, change):
    """``path``'s archive with ``change(meta, arrays)`` applied, written to ``target`` (its digest not updated)."""
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    meta = json.loads(arrays.pop("meta").tobytes())
    change(meta, arrays)
    np.savez(target, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays)


def _with_digest(meta, arrays):
    from jcsol.checkpoint import file_digest

    meta["digest"] = file_digest(meta, arrays)


def test_bad_files_are_refused_naming_the_file_and_why(sweep, tmp_path):
    path, other = tmp_path / "model.npz", tmp_path / "other.npz"
    sweep.best("sum").model().save(path)
    raw = bytearray(path.read_bytes())
    at = raw.find(b"state/0.npy") + 200  # a byte of the first state array's data
    raw[at] ^= 0xFF
    other.write_bytes(bytes(raw))
    with pytest.raises(ModelFileError, match=f"{other}.*(corrupted|not a readable)"):
        jcsol.load(other)

    def edit_state(meta, arrays):
        arrays["state/0"] = arrays["state/0"].copy()
        arrays["state/0"].flat[0] += 1

    _rewrite(path, other, edit_state)
    with pytest.raises(ModelFileError, match=f"{other} is corrupted"):
        jcsol.load(other)
    _rewrite(path, other, lambda meta, arrays: meta.update(threshold=1.0))
    with pytest.raises(ModelFileError, match="corrupted"):
        Model.load(other)

    def kind(meta, arrays):
        meta["kind"] = "something.Else"
        _with_digest(meta, arrays)

    _rewrite(path, other, kind)
    with pytest.raises(ModelFileError, match="neither a jcsol model nor a live learner"):
        jcsol.load(other)
    with pytest.raises(ModelFileError, match="no jcsol model: its kind is 'something.Else'"):
        Model.load(other)

    def version(meta, arrays):
        meta["format"] = 7
        _with_digest(meta, arrays)

    _rewrite(path, other, version)
    with pytest.raises(ModelFileError, match="model format 7"):
        jcsol.load(other)

    def outside(meta, arrays):
        meta["learner"]["class"] = "mypackage.learners.COG"
        _with_digest(meta, arrays)

    _rewrite(path, other, outside)
    with pytest.raises(ModelFileError, match="outside jcsol.*give the learner"):
        jcsol.load(other)
    learner = sweep.best("sum").result.learner
    with pytest.raises(ModelFileError, match="another learner"):
        jcsol.load(other, learner=learner)
    with pytest.raises(ModelFileError, match="another learner"):
        jcsol.load(path, learner=learner.replace(eta=0.5))

    other.write_bytes(b"not a file")
    with pytest.raises(ModelFileError, match="not a readable"):
        jcsol.load(other)
    for damaged in damaged_archives(path.read_bytes()).values():
        other.write_bytes(damaged)
        with pytest.raises(ModelFileError, match="not a readable"):
            jcsol.load(other)
    with pytest.raises(ModelFileError, match="not a readable"):
        jcsol.load(tmp_path / "absent.npz")


def test_an_option_that_is_no_literal_is_refused_naming_it(rows, tmp_path):
    X, y, held = rows
    optax = pytest.importorskip("optax")
    learner = jcsol.OptaxCOG(eta=0.1, optimizer=optax.sgd)  # a factory: its repr is no literal
    model = jcsol.run(learner, X, y, perms="stream").model()
    model.save(tmp_path / "robust.npz")
    with pytest.raises(ModelFileError, match="option optimizer=.*not a Python literal.*give the learner"):
        jcsol.load(tmp_path / "robust.npz")
    assert np.array_equal(jcsol.load(tmp_path / "robust.npz", learner=learner).scores(held), model.scores(held))
    live = Live(learner, jcsol.Sum(rho="laplace"))
    live.learn(X[:20], y[:20])
    live.save(tmp_path / "live.npz")
    with pytest.raises(jcsol.live.LiveFileError, match="option optimizer"):
        Live.load(tmp_path / "live.npz")
    assert Live.load(tmp_path / "live.npz", learner).events == 20


def test_a_refused_save_leaves_no_file(sweep, tmp_path, monkeypatch):
    model = sweep.best("sum").model()
    with pytest.raises(FileNotFoundError, match="does not exist"):
        model.save(tmp_path / "missing" / "model.npz")
    (tmp_path / "folder.npz").mkdir()
    with pytest.raises(IsADirectoryError):
        model.save(tmp_path / "folder.npz")

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", broken)
    with pytest.raises(OSError, match="disk full"):
        model.save(tmp_path / "model.npz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.npz"]
    with pytest.raises(TypeError, match="JSON-able"):
        model.replace(provenance={"when": object()})


# -- alerts -----------------------------------------------------------------------------------------------------


def budget_rule(scores, budget, history):
    """The budget's rule in NumPy, row by row: a row alerts when fewer of the scores before it (the history, then
    the rows already scored) are greater than its score than ``budget`` × their number."""
    earlier = [float(h) for h in history]
    share = Fraction(str(budget))
    out = []
    for score in scores:
        out.append(int(np.sum(np.array(earlier) > float(score))) < share * len(earlier))
        earlier.append(float(score))
    return np.array(out)


def test_alerts_by_threshold_and_by_budget(rows, sweep):
    _, _, held = rows
    model = sweep.best("sum").model()
    scores = model.scores(held)
    assert np.array_equal(model.alerts(held), scores >= 0.0)
    assert np.array_equal(model.alerts(held, threshold=0.3), scores >= 0.3)
    assert np.array_equal(model.replace(threshold=-0.2).alerts(held), scores >= -0.2)
    counts = []
    for budget in (0.02, 0.1, 0.3):
        expected = budget_rule(scores, budget, model.history)
        counts.append(int(expected.sum()))
        alerts = model.alerts(held, budget=budget)
        assert alerts.dtype == bool
        assert np.array_equal(alerts, expected)
        assert np.array_equal(model.replace(budget=budget).alerts(held), expected)
        assert np.array_equal(model.alerts_of(scores, budget=budget), expected)
    assert counts == sorted(counts)
    assert 0 < counts[-1] < 100
    assert np.array_equal(model.replace(budget=0.1).alerts(held, threshold=0.3), scores >= 0.3)
    without = model.replace(history=None)  # no history: the rows scored so far alone
    assert np.array_equal(without.alerts(held, budget=0.1), budget_rule(scores, 0.1, []))
    with pytest.raises(ValueError, match="not both"):
        model.alerts(held, threshold=0.1, budget=0.1)
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="budget"):
            model.alerts(held, budget=bad)
    with pytest.raises(ValueError, match="threshold must be finite"):
        model.alerts(held, threshold=float("nan"))
