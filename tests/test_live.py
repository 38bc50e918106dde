"""The live learner: exactly jcsol.run's rounds batch by batch, late labels, the board, saving and loading.

The board (progressive counts, forgetting, follow-the-leader and Hedge) is checked against a float64 NumPy
loop written here from the documented rules; the AUC window against scikit-learn.
"""

import json

import jax
import numpy as np
import pytest
from archives import damaged_archives

import jcsol
from jcsol.live import Live, LiveFileError

LAPLACE = jcsol.Sum(rho="laplace")


@pytest.fixture(scope="module")
def stream(german):
    X, y = german
    return X[:160], y[:160]


def sparse_stream(n=160, d=500, k=6, seed=0):
    rng = np.random.default_rng(seed)
    indices = np.stack([rng.choice(d, k, replace=False) for _ in range(n)]).astype(np.int32)
    values = rng.standard_normal((n, k)).astype(np.float32)
    values /= np.linalg.norm(values, axis=1, keepdims=True)
    w = rng.standard_normal(d)
    y = np.where((w[indices] * values).sum(1) > 0.8, 1, -1).astype(np.int8)
    return jcsol.SparseRows(indices, values, d), y


def split(n, seed):
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, n), 5, replace=False))
    return [0, *cuts.tolist(), n]


def take(X, a, b):
    if isinstance(X, jcsol.SparseRows):
        return jcsol.SparseRows(X.indices[a:b], X.values[a:b], X.n_features)
    return X[a:b]


def assert_same_as_run(live, learner, X, y, scores, objective=LAPLACE):
    res = jcsol.run(learner, X, y, perms=np.arange(len(y))[None], objective=objective, record_scores=True)
    grid = res.counts.shape[:-2]
    np.testing.assert_array_equal(scores.T.reshape(grid + (len(y),)), res.scores[..., 0, :])
    np.testing.assert_array_equal(live.counts, res.counts[..., 0, :])
    for a, b in zip(jax.tree.leaves(live.states), jax.tree.leaves(res.states)):
        np.testing.assert_array_equal(a, np.take(np.asarray(b), 0, axis=len(grid)))


LEARNERS = {
    "COG-I": jcsol.COG(eta=jcsol.decades()),
    "ACOG-II-diag": jcsol.ACOG(eta=np.array([1e-2, 1.0, 1e2]), loss="II", diagonal=True),
    "ACOG-I": jcsol.ACOG(eta=np.array([1e-2, 1.0, 1e2])),
    "PA1": jcsol.PA1(C=np.array([0.1, 1.0])),
}


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.slow) if name == "ACOG-I" else name for name in sorted(LEARNERS)]
)  # the full covariance: the longest compilation
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_learn_in_batches_is_run_over_the_whole_stream(stream, name, seed):
    X, y = stream
    learner = LEARNERS[name]
    live = Live(learner)
    cuts = split(len(y), seed)
    scores = np.concatenate([live.learn(X[a:b], y[a:b], return_scores=True) for a, b in zip(cuts, cuts[1:])])
    assert_same_as_run(live, learner, X, y, scores)


@pytest.mark.parametrize(
    "learner",
    [
        pytest.param(jcsol.COG(eta=np.array([0.1, 1.0])), marks=pytest.mark.slow),
        jcsol.ACOG(eta=np.array([0.1, 1.0]), diagonal=True),
    ],
    ids=lambda l: l.name,
)
def test_sparse_rows_and_fixed_costs(learner):
    X, y = sparse_stream()
    objective = jcsol.Cost(c_p=0.8, c_n=0.2)
    live = Live(learner, objective)
    cuts = split(len(y), 3)
    scores = np.concatenate([live.learn(take(X, a, b), y[a:b], return_scores=True) for a, b in zip(cuts, cuts[1:])])
    assert_same_as_run(live, learner, X, y, scores, objective)


@pytest.mark.parametrize("name", ["ACOG-II-diag", "PA1"])
def test_one_event_at_a_time_is_run_over_the_whole_stream(stream, name):
    X, y = stream
    learner = LEARNERS[name]
    live = Live(learner, n_features=X.shape[1])
    scores = []
    for t in range(len(y)):
        chosen = live.served
        served = live.predict(X[t : t + 1])  # scoring changes nothing
        scores.append(live.learn(X[t : t + 1], y[t : t + 1], return_scores=True))
        np.testing.assert_allclose(served[0], scores[-1][0, chosen], rtol=1e-5, atol=1e-6)
    assert_same_as_run(live, learner, X, y, np.concatenate(scores))


def test_one_sparse_event_at_a_time_is_run_over_the_whole_stream():
    X, y = sparse_stream()
    learner = jcsol.ACOG(eta=np.array([0.1, 1.0]), diagonal=True)
    live = Live(learner)
    scores = [live.learn(take(X, t, t + 1), y[t : t + 1], return_scores=True) for t in range(len(y))]
    assert_same_as_run(live, learner, X, y, np.concatenate(scores))


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the configurations-minor layout is the CPU's")
@pytest.mark.parametrize("blocks", [1, 4])  # 4 blocks: two a device over this process's 2 devices
def test_state_layout_follows_the_kind_of_rows(blocks):
    """Over sparse rows, a sparse-step learner's state vectors are held configurations-minor (the layout its
    rounds run fastest in), over dense rows in the default layout; a stream that switches kinds learns as
    jcsol.run does."""
    X, y = sparse_stream(d=5000)  # 4 configurations × 5000 features: each state vector a buffer of its own
    dense = np.zeros((len(y), X.n_features), np.float32)
    np.put_along_axis(dense, X.indices, X.values, axis=1)
    learner = jcsol.ACOG(eta=np.array([0.1, 1.0, 3.0, 10.0]), diagonal=True)
    live = Live(learner, grid_blocks=blocks)
    cuts, scores, layouts = split(len(y), 4), [], []
    for k, (a, b) in enumerate(zip(cuts, cuts[1:])):
        scores.append(live.learn(take(X, a, b) if k % 2 == 0 else dense[a:b], y[a:b], return_scores=True))
        held = live._backend.buffers if blocks == 1 else jax.tree.leaves(live._backend.carries)
        layouts.append({leaf.format.layout.major_to_minor for leaf in held if leaf.shape[-1] == X.n_features})
        served = live.predict(dense[:9] if k % 2 else take(X, 0, 9))
        np.testing.assert_allclose(served, live.scores(dense[:9])[:, live.served], rtol=1e-5, atol=1e-6)
    assert layouts == [{(0, 2, 1)}, {(0, 1, 2)}] * 3
    res = jcsol.run(
        learner, dense, y, perms=np.arange(len(y))[None], objective=LAPLACE, record_scores=True, grid_blocks=blocks
    )
    np.testing.assert_allclose(np.concatenate(scores).T, res.scores[:, 0], rtol=1e-5, atol=1e-6)
    for a, b in zip(jax.tree.leaves(live.states), jax.tree.leaves(res.states)):
        np.testing.assert_allclose(a, np.asarray(b)[:, 0], rtol=1e-5, atol=1e-6)


def test_the_board_and_the_counts_are_read_without_the_states(monkeypatch):
    """Reading the board (``served``, ``leaderboard()``) or the engine's counts passes the buffers holding them
    alone to its call: the states' vectors, configurations-minor over sparse rows, are neither read nor copied
    out of their layout."""
    from jcsol.live import packed as packed_module
    from jcsol.live.packed import _kept, _unpack

    X, y = sparse_stream(d=5000)
    live = Live(jcsol.ACOG(eta=np.array([0.1, 1.0, 3.0, 10.0]), diagonal=True))
    live.learn(X, y)
    layout, whole = live._backend.packing, _unpack(live._backend.buffers, packing=live._backend.packing)
    vectors = [i for i, b in enumerate(live._backend.buffers) if b.shape[-1] == X.n_features]
    assert vectors
    calls = []

    def partial(buffers, *, packing, keep=None):
        assert keep is not None, "the whole buffers unpacked"
        main = next(
            line
            for line in _unpack.lower(buffers, packing=packing, keep=keep).as_text().splitlines()
            if "@main" in line
        )
        held = {at for (at, _, _), k in zip(layout.slots, keep) if k}
        assert main.count("%arg") == len(held), main
        assert not held & set(vectors), main
        calls.append(keep)
        return _unpack(buffers, packing=packing, keep=keep)

    monkeypatch.setattr(packed_module, "_unpack", partial)
    for got, expected in zip(live.board, whole[1], strict=True):
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(live.counts, np.asarray(whole[0][0].counts[0]))
    assert live.served in range(4)
    assert live.leaderboard().served_sum >= 0
    assert calls[0] == _kept(layout, "board")
    assert set(calls) == {_kept(layout, "board"), _kept(layout, "counts")}


COMPILED: list[str] = []  # the backend compilations since a test last cleared it
jax.monitoring.register_event_duration_secs_listener(
    lambda event, seconds, **kwargs: COMPILED.append(event) if event.endswith("backend_compile_duration") else None
)


@pytest.mark.parametrize("blocks", [1, 2, 4])  # 2 blocks: both on one device; 4: two a device over 2 devices
@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_a_batch_like_the_last_compiles_nothing(stream, kind, blocks):
    """A live learner's buffers are placed as its calls give them back: after the first batch, batches of the
    same size and kind compile nothing (placed otherwise, the second call would be another signature and
    learn and predict would each be compiled twice)."""
    X, y = sparse_stream(d=5000) if kind == "sparse" else stream
    live = Live(jcsol.ACOG(eta=np.array([0.1, 1.0, 3.0, 10.0]), diagonal=True), grid_blocks=blocks)
    live.predict(take(X, 0, 40))
    live.learn(take(X, 0, 40), y[:40])
    COMPILED.clear()
    for a in range(40, 120, 40):
        live.predict(take(X, a, a + 40))
        live.learn(take(X, a, a + 40), y[a : a + 40])
    assert COMPILED == []


def test_declared_batch_sizes_learn_in_one_scan_with_the_same_bits(stream):
    X, y = stream
    learner = LEARNERS["ACOG-II-diag"]
    live = Live(learner, batch_sizes=(7, 50))
    cuts = [0, 7, 57, 107, 114, 130, 160]  # 7, 50, 50, 7, then sizes not declared
    scores = np.concatenate([live.learn(X[a:b], y[a:b], return_scores=True) for a, b in zip(cuts, cuts[1:])])
    assert_same_as_run(live, learner, X, y, scores)
    served = live.predict(X[:7])  # scored unpadded, as one call of size 7
    np.testing.assert_array_equal(served, live.scores(X[:7])[:, live.served])
    for bad, error in (((0,), ValueError), ((2.5,), TypeError), ((True,), TypeError)):
        with pytest.raises(error, match="batch_sizes must be an integer"):
            Live(learner, batch_sizes=bad)


@pytest.mark.slow
def test_a_batch_longer_than_one_call_is_run_over_the_whole_stream(stream):
    X, y = stream
    reps = -(-16_500 // len(y))
    X, y = np.tile(X, (reps, 1))[:16_500], np.tile(y, reps)[:16_500]  # 16384 events a call: two calls
    learner = LEARNERS["ACOG-II-diag"]
    live = Live(learner)
    scores = live.learn(X, y, return_scores=True)
    assert scores.shape == (len(y), live.n_grid)
    assert_same_as_run(live, learner, X, y, scores)
    np.testing.assert_array_equal(live.predict(X), live.scores(X)[:, live.served])


def test_served_sparse_scores_are_the_grid_scores_of_the_served_configuration():
    """Over sparse rows, FTL's ``predict`` gathers the served configuration's weights alone; its scores are the
    bits of that configuration's column of ``scores``, whichever learner of a list serves."""
    X, y = sparse_stream(n=400, seed=3)
    learners = [jcsol.ACOG(eta=np.array([0.01, 0.1, 1.0]), diagonal=True), jcsol.PA1(C=np.array([0.01, 1.0, 100.0]))]
    live = Live(learners, n_features=X.n_features)
    served = set()
    for a in range(0, len(y), 10):
        rows = take(X, a, a + 10)
        np.testing.assert_array_equal(live.predict(rows), live.scores(rows)[:, live.served])
        served.add(live.served)
        live.learn(rows, y[a : a + 10])
    assert min(served) < 3 <= max(served)  # each learner served some batches


def test_predict_scores_with_the_current_states(stream):
    X, y = stream
    live = Live(jcsol.COG(eta=jcsol.decades()))
    live.learn(X[:100], y[:100])
    w = live.states.w  # (G, d)
    np.testing.assert_allclose(live.scores(X[100:107]), X[100:107] @ w.T, rtol=1e-5, atol=1e-6)
    served = live.predict(X[100:107])  # 7 rows, padded to 16: padding dropped
    assert served.shape == (7,)
    np.testing.assert_array_equal(served, live.scores(X[100:107])[:, live.served])


# -- the board against a NumPy loop ---------------------------------------------------------------------------


def board_reference(scores, y, *, rule, margin, rate, gamma, alpha_p=0.5):
    """Progressive counts, discounted counts, FTL choice and Hedge weights, event by event, in float64."""
    G = scores.shape[1]
    counts, recent = np.zeros((G, 4)), np.zeros((G, 4))
    served_counts = np.zeros(4)
    served, log_w = 0, np.zeros(G)
    choices = []
    for f, label in zip(scores, y):
        pos = label > 0
        cells = np.where(pos, np.where(f < 0, 1, 0), np.where(f < 0, 3, 2))
        hits = np.eye(4)[cells]
        if rule == "ftl":
            s = f[served]
        else:
            p = np.exp(log_w - log_w.max())
            s = np.where(f >= 0, 1.0, -1.0) @ (p / p.sum())
        served_counts += np.eye(4)[(1 if s < 0 else 0) if pos else (3 if s < 0 else 2)]
        counts += hits
        p_seen, n_seen = counts[0, 0] + counts[0, 1], counts[0, 2] + counts[0, 3]
        rho = alpha_p * (n_seen + 1) / ((1 - alpha_p) * (p_seen + 1))  # ρ_t, whichever class the event is
        wrong = pos == (f < 0)
        loss = np.where(wrong, (rho if pos else 1.0) / (1.0 + rho), 0.0)  # a miss ρ_t/(1+ρ_t), a false alarm 1/(1+ρ_t)
        log_w = gamma * log_w - rate * loss
        log_w -= log_w.max()
        recent = gamma * recent + hits
        tp, fn, fp, tn = recent.T
        quality = alpha_p * np.where(tp + fn > 0, tp / np.maximum(tp + fn, 1e-300), 0) + (1 - alpha_p) * np.where(
            tn + fp > 0, tn / np.maximum(tn + fp, 1e-300), 0
        )
        leader = int(np.argmax(quality))
        if quality[leader] > quality[served] + margin:
            served = leader
        choices.append(served)
    return counts, recent, served_counts, np.array(choices), log_w


@pytest.mark.parametrize(("rule", "gamma"), [("ftl", 1.0), ("ftl", 0.97), ("hedge", 1.0), ("hedge", 0.99)])
def test_board_follows_its_rules(stream, rule, gamma):
    X, y = stream
    live = Live(jcsol.COG(eta=jcsol.decades()), select=rule, margin=0.02, rate=0.3, forgetting=gamma, auc_window=64)
    scores, choices = [], []
    for t in range(len(y)):
        scores.append(live.learn(X[t : t + 1], y[t : t + 1], return_scores=True)[0])
        choices.append(int(live.board.served))
    scores = np.array(scores, np.float64)
    counts, recent, served_counts, ref_choices, log_w = board_reference(
        scores, y, rule=rule, margin=0.02, rate=0.3, gamma=gamma
    )
    board = live.leaderboard()
    np.testing.assert_array_equal(board.counts, counts)
    np.testing.assert_allclose(np.asarray(live.board.recent), recent, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(board.served_counts, served_counts)
    # the board advanced a batch at a time, batches padded to 64 and 128 events (one longer than the AUC
    # window): the same choices, counts and window
    for cuts in ([0, 40, 80, 120, 160], [0, 100, 160]):
        batched = Live(
            jcsol.COG(eta=jcsol.decades()), select=rule, margin=0.02, rate=0.3, forgetting=gamma, auc_window=64
        )
        for a, b in zip(cuts, cuts[1:]):
            batched.learn(X[a:b], y[a:b])
        np.testing.assert_array_equal(batched.leaderboard().served_counts, served_counts)
        np.testing.assert_array_equal(batched.leaderboard().counts, counts)
        np.testing.assert_allclose(np.asarray(batched.board.recent), recent, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(batched.leaderboard().auc, board.auc, rtol=1e-6)
        assert int(batched.board.served) == int(live.board.served)
        assert batched.events == len(y)
        assert int(batched.board.slot) == len(y) % 64
        if rule == "hedge":
            np.testing.assert_allclose(np.asarray(batched.board.log_weights), log_w, rtol=1e-4, atol=1e-4)
    if rule == "ftl":
        np.testing.assert_array_equal(choices, ref_choices)
        assert len(set(choices)) > 1, "the stream should make FTL switch at least once"
    else:
        np.testing.assert_allclose(np.asarray(live.board.log_weights), log_w, rtol=1e-4, atol=1e-4)
        assert board.weights.max() > 1.4 * board.weights.min()  # weights far from uniform: the check above bites
    from sklearn.metrics import roc_auc_score

    last = slice(len(y) - 64, len(y))
    for g in range(scores.shape[1]):
        assert board.auc[g] == pytest.approx(roc_auc_score(y[last], scores[last, g]), abs=1e-6)
    assert board.sum[board.served] == pytest.approx(jcsol.metrics.weighted_sum(counts[board.served]))


def test_ftl_counts_exactly_past_float32s_integers():
    """Past 2**24 a float32 count stops growing by ones (2**24 + 1 rounds to 2**24): FTL measures the integer
    counts, so a configuration that finds positives its rival misses gets ahead however long the stream."""
    from jcsol.live.board import Selection, advance_board, init_board
    from jcsol.objective import Sum

    selection = Selection().check()
    many = np.array([[2**24, 2**24, 0, 2**24]] * 2, np.int32)  # (tp, fn, fp, tn): a long stream, sensitivity ½
    board = init_board(2, selection, np.float32)._replace(counts=many, recent=many.astype(np.float32))
    y = np.ones(64, np.float32)
    scores = np.tile(np.array([[-1.0, 1.0]], np.float32), (64, 1))  # configuration 0 misses them, 1 finds them
    after = advance_board(board, Sum(rho="laplace"), scores, y, None, selection)
    assert int(after.served) == 1
    np.testing.assert_array_equal(after.counts, many + [[0, 64, 0, 0], [64, 0, 0, 0]])
    np.testing.assert_array_equal(after.recent, np.asarray(after.counts, np.float32))


def test_leaderboard_table_and_frame(stream):
    X, y = stream
    live = Live(jcsol.COG(eta=jcsol.decades()))
    live.learn(X, y)
    board = live.leaderboard()
    frame = board.to_pandas()
    assert list(frame["eta"]) == list(np.asarray(jcsol.decades()))
    assert frame["served"].sum() == 1
    assert frame.loc[frame["served"], "sum"].item() == board.sum[board.served]
    assert board.events == len(y)
    assert "* " in board.table()


# -- late labels -----------------------------------------------------------------------------------------------


def test_late_labels_learn_in_label_order_and_count_arrival_predictions(stream):
    X, y = stream
    learner = jcsol.ACOG(eta=np.array([0.1, 10.0]), diagonal=True)
    live = Live(learner)
    ids = np.arange(1000, 1000 + len(y))
    arrival = []
    label_order = []
    rng = np.random.default_rng(0)
    for a in range(0, len(y), 20):  # 20 events arrive, then the labels of a random half
        arrival.append(live.scores(X[a : a + 20]))
        live.predict(X[a : a + 20], ids=ids[a : a + 20])
        waiting = np.flatnonzero(live.pending(ids))
        ready = rng.choice(waiting, len(waiting) // 2, replace=False)
        live.learn(ids=ids[ready], y=y[ready])
        label_order += ready.tolist()
    rest = np.flatnonzero(live.pending(ids))
    live.learn(ids=ids[rest], y=y[rest])
    label_order += rest.tolist()
    order = np.array(label_order)
    assert sorted(order) == list(range(len(y)))
    res = jcsol.run(learner, X, y, perms=order[None], objective=LAPLACE)  # learning follows the labels
    for a, b in zip(jax.tree.leaves(live.states), jax.tree.leaves(res.states)):
        np.testing.assert_array_equal(a, b[:, 0])
    arrival = np.concatenate(arrival)  # measures count the predictions made at arrival
    expected = np.stack([np.bincount(np.where(y > 0, 0, 2) + (arrival[:, g] < 0), minlength=4) for g in range(2)])
    np.testing.assert_array_equal(live.leaderboard().counts, expected)
    assert not np.array_equal(live.counts, expected)  # the engine's counts are the learning pass's own


def test_store_policy(stream):
    X, y = stream
    live = Live(jcsol.COG(eta=np.array([0.1, 1.0])), store_size=8)
    live.predict(X[:6], ids=[f"e{i}" for i in range(6)])
    with pytest.raises(ValueError, match="already pending"):
        live.predict(X[6:7], ids=["e3"])
    with pytest.raises(ValueError, match="repeated within the batch"):
        live.predict(X[6:8], ids=["x", "x"])
    with pytest.raises(TypeError, match=r"ids must be integers or strings; id 7.0 \(at position 0"):
        live.predict(X[6:8], ids=[7.0, 8.0])
    with pytest.raises(OverflowError, match="larger than the store"):
        live.predict(X[:9], ids=[f"b{i}" for i in range(9)])
    live.predict(X[6:10], ids=[f"e{i}" for i in range(6, 10)])  # 10 > 8: the two oldest are evicted
    assert live.leaderboard().evicted == 2
    assert live.leaderboard().pending == 8
    np.testing.assert_array_equal(live.pending(["e0", "e1", "e2", "e9"]), [False, False, True, True])
    before = jax.tree.map(np.asarray, live.carry)
    with pytest.raises(KeyError, match="not pending"):
        live.learn(ids=["e2", "e0"], y=[1, -1])  # e0 was evicted: nothing is learnt
    with pytest.raises(KeyError, match="not pending"):
        live.learn(ids=["nope"], y=[1])
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(live.carry)))
    assert live.pending(["e2"]).all()
    live.learn(ids=["e2", "e3"], y=[1, -1])
    with pytest.raises(KeyError, match="already labelled"):
        live.learn(ids=["e2"], y=[1])  # a label given twice
    strict = Live(jcsol.COG(eta=0.1), store_size=2, on_full="raise")
    strict.predict(X[:2], ids=[1, 2])
    with pytest.raises(OverflowError, match="do not fit"):
        strict.predict(X[2:3], ids=[3])
    assert strict.leaderboard().pending == 2


def test_pending_rows_keep_one_kind_until_learnt(stream):
    X, y = stream
    sparse = jcsol.SparseRows(
        np.tile(np.arange(24, dtype=np.int32), (4, 1)), np.asarray(X[20:24], np.float32), X.shape[1]
    )
    live = Live(jcsol.COG(eta=np.array([0.1, 1.0])))
    live.predict(X[:4], ids=[0, 1, 2, 3])
    before = jax.tree.map(np.asarray, (live.carry, live.board))
    with pytest.raises(
        ValueError, match=r"the 4 event\(s\) awaiting labels hold dense rows, and this batch has sparse"
    ):
        live.predict(sparse, ids=[20, 21, 22, 23])
    assert not live.pending([20]).any()
    assert live.pending([0, 1, 2, 3]).all()
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(before), jax.tree.leaves((live.carry, live.board))))
    live.learn(ids=[0, 1, 2, 3], y=y[:4])
    live.predict(sparse, ids=[20, 21, 22, 23])  # none pending: the store takes sparse rows now
    scores = live.learn(ids=[20, 21, 22, 23], y=y[20:24], return_scores=True)
    reference = Live(jcsol.COG(eta=np.array([0.1, 1.0])))
    reference.learn(X[:4], y[:4])
    expected = reference.learn(X[20:24], y[20:24], return_scores=True)  # the same events as dense rows
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("blocks", [4, 3])  # 4 blocks: two a device over this process's 2 devices; 3: one device
def test_grid_in_blocks_is_run_with_those_blocks(stream, tmp_path, blocks):
    X, y = stream
    learner = LEARNERS["COG-I"]
    live = Live(learner, grid_blocks=blocks, select="hedge")
    cuts = split(len(y), 2)
    scores = np.concatenate([live.learn(X[a:b], y[a:b], return_scores=True) for a, b in zip(cuts, cuts[1:-1])])
    res = jcsol.run(
        learner, X, y, perms=np.arange(len(y))[None], objective=LAPLACE, record_scores=True, grid_blocks=blocks
    )
    live.predict(X[cuts[-2] :], ids=np.arange(cuts[-2], len(y)))
    live.save(tmp_path / "live.npz")
    loaded = Live.load(tmp_path / "live.npz", learner)
    assert loaded.grid_blocks == blocks
    for each in (live, loaded):
        more = each.learn(ids=np.arange(cuts[-2], len(y)), y=y[cuts[-2] :], return_scores=True)
        np.testing.assert_array_equal(np.concatenate([scores, more]).T, res.scores[:, 0])
        np.testing.assert_array_equal(each.counts, res.counts[:, 0])
        np.testing.assert_array_equal(each.states.w, res.states.w[:, 0])
        w = each.states.w  # (G, d): every configuration's score is its w·x
        np.testing.assert_allclose(each.scores(X[:5]), X[:5] @ w.T, rtol=1e-5, atol=1e-5)
    for a, b in zip(jax.tree.leaves(live.board), jax.tree.leaves(loaded.board)):
        np.testing.assert_array_equal(a, b)
    served = live.predict(X[:9])
    np.testing.assert_array_equal(served, loaded.predict(X[:9]))
    weights = np.exp(live.board.log_weights - live.board.log_weights.max())
    np.testing.assert_allclose(served, np.where(live.scores(X[:9]) >= 0, 1, -1) @ (weights / weights.sum()), rtol=1e-6)


def test_grid_blocks_of_a_list_of_learners_and_refused_values(stream):
    X, y = stream
    learners = [jcsol.COG(eta=np.array([0.1, 1.0, 10.0])), jcsol.ACOG(eta=np.array([1.0, 100.0]), diagonal=True)]
    live = Live(learners, grid_blocks=2)
    scores = live.learn(X, y, return_scores=True)
    start = 0
    for learner, states in zip(learners, live.states):
        res = jcsol.run(
            learner, X, y, perms=np.arange(len(y))[None], objective=LAPLACE, record_scores=True, grid_blocks=2
        )
        size = int(np.prod(res.counts.shape[:-2]))
        np.testing.assert_array_equal(scores[:, start : start + size].T, res.scores.reshape(size, len(y)))
        for a, b in zip(jax.tree.leaves(states), jax.tree.leaves(res.states)):
            np.testing.assert_array_equal(a, np.asarray(b).reshape(a.shape))
        start += size
    with pytest.raises(ValueError, match="grid_blocks must cut the grid's 2 point"):
        Live(learners, grid_blocks=3)
    with pytest.raises(ValueError, match="grid_blocks"):
        Live(learners[0], grid_blocks=0)


# -- saving ----------------------------------------------------------------------------------------------------


def test_saved_learner_continues_bit_identically(stream, tmp_path):
    X, y = stream
    learner = jcsol.ACOG(eta=np.array([0.1, 10.0]))
    # the declared batch sizes are saved too: Hedge's weights are float sums over a batch, rounded by its split
    whole = Live(learner, select="hedge", forgetting=0.99, batch_sizes=(8,))
    whole.learn(X[:90], y[:90])
    whole.predict(X[90:100], ids=range(90, 100))
    path = tmp_path / "live.npz"
    whole.save(path)
    for live in (whole, Live.load(path, learner)):
        live.learn(ids=np.arange(95, 100), y=y[95:100])
        live.learn(X[100:], y[100:])
        live.learn(ids=np.arange(90, 95), y=y[90:95])
    resumed = live
    for a, b in zip(jax.tree.leaves((whole.carry, whole.board)), jax.tree.leaves((resumed.carry, resumed.board))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert resumed.selection == whole.selection
    assert resumed.batch_sizes == (8,)
    assert resumed.events == whole.events == len(y)


def test_counts_are_halved_before_an_int32_wraps(stream):
    """A learner whose counts reach 2**30 events halves them — the board's, the served stream's and the engine's
    — where int32 counts would wrap at 2**31; it learns on, and its events stay exact. Fixed costs: ``ρ`` does
    not depend on the counts, so a twin without the inflated counts learns the same states and the same
    configurations' hits (not the same served ones: FTL's measures move by 1/60 an event there, by 2**-30 here).
    """
    X, y = stream
    learner, cost = jcsol.ACOG(eta=jcsol.decades()), jcsol.Cost(c_p=0.8, c_n=0.2)
    live, twin = Live(learner, cost), Live(learner, cost)
    for each in (live, twin):
        each.learn(X[:60], y[:60])
    scale = (2**30 - 4) // 60  # every configuration's counts sum to 60·scale, 4 short of 2**30
    board, engine = twin.board, twin.counts
    live._backend.hold(
        tuple(c._replace(counts=c.counts * scale) for c in twin.carry),
        board._replace(counts=board.counts * scale, served_counts=board.served_counts * scale),
    )

    def hits(a, b):  # what each configuration counts over X[a:b], on the board and in the engine
        before = np.asarray(twin.board.counts), twin.counts
        twin.learn(X[a:b], y[a:b])
        return np.asarray(twin.board.counts) - before[0], twin.counts - before[1]

    def halved(c):  # TP, TN and the class totals halved, rounded down; FN and FP what the totals leave
        tp, fn, fp, tn = np.moveaxis(c, -1, 0)
        return np.stack([tp // 2, (tp + fn) // 2 - tp // 2, (fp + tn) // 2 - tn // 2, tn // 2], axis=-1)

    on_board, in_engine = hits(60, 80)
    live.learn(X[60:80], y[60:80])  # 2**30 + 16 events a configuration: halved
    np.testing.assert_array_equal(live.board.counts, halved(np.asarray(board.counts) * scale + on_board))
    np.testing.assert_array_equal(live.counts, halved(engine * scale + in_engine))
    served = np.asarray(live.board.served_counts)
    classes = live.board.counts[:, :2].sum(-1), live.board.counts[:, 2:].sum(-1)  # every configuration's the same
    assert served.min() >= 0
    assert [served[:2].sum(), served[2:].sum()] == [classes[0][0], classes[1][0]]
    assert np.ptp(classes[0]) == np.ptp(classes[1]) == 0
    assert classes[0][0] + classes[1][0] == 2**29 + 8
    assert live.events == 80
    assert int(live.board.slot) == 80
    board_then, engine_then = np.asarray(live.board.counts), live.counts
    on_board, in_engine = hits(80, 120)
    live.learn(X[80:120], y[80:120])  # 2**29 + 48 events: counted as they come
    np.testing.assert_array_equal(live.board.counts, board_then + on_board)
    np.testing.assert_array_equal(live.counts, engine_then + in_engine)
    np.testing.assert_array_equal(live.states.mu, twin.states.mu)
    lb = live.leaderboard()
    assert lb.events == 120
    assert lb.counts.min() >= 0
    assert np.all((lb.sum > 0.3) & (lb.sum <= 1))


def test_load_refuses_other_learners_versions_and_corruption(stream, tmp_path):
    X, y = stream
    learner = jcsol.COG(eta=np.array([0.1, 1.0]))
    live = Live(learner)
    live.learn(X[:20], y[:20])
    path = tmp_path / "live.npz"
    live.save(path)
    with pytest.raises(LiveFileError, match="another learner"):
        Live.load(path, jcsol.COG(eta=np.array([0.1, 2.0])))
    with pytest.raises(LiveFileError, match="another learner"):
        Live.load(path, jcsol.COG(eta=np.array([0.1, 1.0]), loss="II"))
    with pytest.raises(LiveFileError, match="another objective"):
        Live.load(path, learner, jcsol.Cost())
    with np.load(path) as archive:
        arrays = dict(archive)
    meta = json.loads(arrays["meta"].tobytes())
    meta["format"] = 99
    other = tmp_path / "other.npz"
    np.savez(other, **{**arrays, "meta": np.frombuffer(json.dumps(meta).encode(), np.uint8)})
    with pytest.raises(LiveFileError, match="format 99"):
        Live.load(other, learner)
    arrays["carry/0"] = arrays["carry/0"] + 1
    np.savez(other, **arrays)
    with pytest.raises(LiveFileError, match="corrupted"):
        Live.load(other, learner)
    other.write_bytes(b"not a file")
    with pytest.raises(LiveFileError, match="not a readable"):
        Live.load(other, learner)
    for raw in damaged_archives(path.read_bytes()).values():
        other.write_bytes(raw)
        with pytest.raises(LiveFileError, match="not a readable"):
            Live.load(other, learner)
    assert not list(tmp_path.glob("*.tmp-*"))


# -- bad input -------------------------------------------------------------------------------------------------


def test_bad_input_is_refused_before_any_work(stream):
    X, y = stream
    with pytest.raises(ValueError, match="offline"):
        Live(jcsol.COG(), jcsol.Sum())
    with pytest.raises(ValueError, match="select"):
        Live(jcsol.COG(), select="best")
    with pytest.raises(ValueError, match="forgetting"):
        Live(jcsol.COG(), forgetting=1.5)
    with pytest.raises(ValueError, match=r"auc_window must be an integer in \[1, 2147483648\)"):
        Live(jcsol.COG(eta=jcsol.decades()), auc_window=10**11)  # the board's slots are int32
    with pytest.raises(MemoryError, match="auc_window=2147483647 keeps .* 1000 configurations: 8002.0 GiB"):
        Live(jcsol.COG(eta=np.geomspace(1e-3, 1e3, 1000)), auc_window=2**31 - 1)  # checked before the board is made
    live = Live(jcsol.COG(eta=np.array([0.1, 1.0])))
    live.learn(X[:10], y[:10])
    with pytest.raises(ValueError, match="features"):
        live.learn(X[:3, :5], y[:3])
    with pytest.raises(ValueError, match="rows but y has"):
        live.learn(X[:3], y[:2])
    with pytest.raises(ValueError, match="labels must be -1 and \\+1"):
        live.learn(X[:3], [0, 1, 2])
    with pytest.raises(TypeError, match="learn\\(X, y\\) or learn\\(ids=ids, y=y\\)"):
        live.learn(X[:3], y[:3], ids=[1, 2, 3])
    with pytest.raises(TypeError, match="needs an encoder"):
        live.predict([{"a": 1}])
    bad = X[:3].copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        live.predict(bad, ids=[1, 2, 3])
    bad[1, 2] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        live.learn(bad[1:2].astype(np.float32), y[1:2])  # one event, the learner's own dtype
    own = np.tile(X[:8].astype(np.float32), (8, 1))  # 64 rows: more values than are summed in Python
    own[50, 3] = np.nan
    for rows in (own[48:52], own[48:56:2], own):  # summed from the buffer, not contiguous, by NumPy
        with pytest.raises(ValueError, match="NaN"):
            live.learn(rows, np.ones(len(rows)))
    huge = np.full((64, X.shape[1]), 3e38, np.float32)  # finite, though a float32 sum of a row overflows
    with np.errstate(over="ignore"):
        assert np.isinf(huge[:1].sum())
    for rows in (huge[:1], huge):
        assert np.isfinite(live.predict(rows)).all()
    assert live.leaderboard().pending == 0
    assert live.leaderboard().events == 10


def test_labels_of_any_numeric_dtype_learn_the_same_bits(stream):
    X, y = stream
    learner = jcsol.ACOG(eta=np.array([0.1, 1.0]), diagonal=True)
    lives = []
    for labels in (y, y.astype(np.int64), y.astype(np.float32), y.astype(np.float64).tolist()):
        live = Live(learner)
        for a, b in ((0, 1), (1, 70), (70, len(y))):  # one event, a few (checked in Python), many (by NumPy)
            live.learn(X[a:b], labels[a:b])
        live.predict(X[:5], ids=range(5))
        live.learn(ids=range(5), y=labels[:5])
        lives.append(live)
    for live in lives[1:]:
        for a, b in zip(jax.tree.leaves((live.carry, live.board)), jax.tree.leaves((lives[0].carry, lives[0].board))):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("k", [3, 40])  # a few entries (checked in Python) and many (NumPy)
def test_a_column_named_twice_is_scored_as_its_dense_row_and_never_learnt(k):
    """Scoring adds a row's entries as its dense row does; learning (now, or later from the store) refuses the
    row, since a norm taken entry by entry would not add them."""
    X, y = sparse_stream(n=64, d=500, k=k)
    learner = jcsol.ACOG(eta=np.array([0.1, 1.0]), diagonal=True)
    live = Live(learner)
    live.learn(X, y)
    rows = jcsol.SparseRows(X.indices[:2].copy(), X.values[:2].copy(), X.n_features)
    rows.indices[1, 1] = rows.indices[1, 0]  # row 1 names its first column twice
    dense = np.zeros((2, X.n_features), np.float32)
    np.add.at(dense, (np.repeat([0, 1], k), rows.indices.ravel()), rows.values.ravel())
    np.testing.assert_allclose(live.scores(rows), live.scores(dense), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(live.predict(rows), live.predict(dense), rtol=1e-5, atol=1e-6)
    before = live.states
    for refused in (lambda: live.learn(rows, y[:2]), lambda: live.predict(rows, ids=[1, 2])):
        with pytest.raises(ValueError, match="row 1 holds column .* twice"):
            refused()
    assert live.leaderboard().pending == 0
    assert live.leaderboard().events == 64
    for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(live.states)):
        np.testing.assert_array_equal(a, b)


# -- tables ----------------------------------------------------------------------------------------------------


def test_tables_through_the_encoder_are_saved_with_the_learner(tmp_path):
    features = pytest.importorskip("jcsol.features")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 120
    frame = pd.DataFrame(
        {
            "amount": rng.lognormal(3, 1, n),
            "merchant": rng.choice(list("abcdef"), n),
            "country": rng.choice(["fr", "de", "us"], n),
        }
    )
    y = np.where((frame["merchant"] == "a") & (frame["amount"] > 20), 1, -1)
    make = lambda: features.TableEncoder(numeric=["amount"], categorical=["merchant", "country"], bits=10)
    learner = jcsol.COG(eta=np.array([0.1, 1.0]))
    live = Live(learner, encoder=make())
    live.learn(frame.iloc[:60], y[:60])
    live.save(tmp_path / "live.npz")
    loaded = Live.load(tmp_path / "live.npz", learner)
    for each in (live, loaded):
        each.predict(frame.iloc[60:], ids=range(60, n))
        each.learn(ids=range(60, n), y=y[60:])
    np.testing.assert_array_equal(live.states.w, loaded.states.w)
    encoder = make()  # the same as encoding the table first, then run()
    X = encoder.fit_transform(frame)
    res = jcsol.run(learner, X, y, perms=np.arange(n)[None], objective=LAPLACE)
    np.testing.assert_array_equal(live.states.w, res.states.w[:, 0])


def test_a_list_of_learners_is_each_learners_run(stream, tmp_path):
    X, y = stream
    learners = [
        jcsol.COG(eta=np.array([0.1, 1.0, 10.0])),
        jcsol.ACOG(eta=np.array([1.0, 100.0]), diagonal=True),
        jcsol.PA1(),
    ]
    live = Live(learners)
    cuts = split(len(y), 5)
    scores = np.concatenate([live.learn(X[a:b], y[a:b], return_scores=True) for a, b in zip(cuts, cuts[1:])])
    assert scores.shape == (len(y), 6)
    start = 0
    for learner, states in zip(learners, live.states):
        res = jcsol.run(learner, X, y, perms=np.arange(len(y))[None], objective=LAPLACE, record_scores=True)
        size = int(np.prod(res.counts.shape[:-2]))
        np.testing.assert_array_equal(scores[:, start : start + size].T, res.scores.reshape(size, len(y)))
        np.testing.assert_array_equal(live.counts[start : start + size], res.counts.reshape(size, 4))
        for a, b in zip(jax.tree.leaves(states), jax.tree.leaves(res.states)):
            np.testing.assert_array_equal(a, np.asarray(b).reshape(a.shape))
        start += size
    board = live.leaderboard()
    assert list(board.params["learner"]) == ["COG-I"] * 3 + ["ACOG-I-diag"] * 2 + ["PA-I"]
    assert np.isnan(board.params["eta"][5])
    assert board.params["C"][5] == 1.0
    assert "ACOG-I-diag" in board.table()
    live.save(tmp_path / "live.npz")
    with pytest.raises(LiveFileError, match="another learner"):
        Live.load(tmp_path / "live.npz", learners[:2])
    loaded = Live.load(tmp_path / "live.npz", learners)
    np.testing.assert_array_equal(loaded.predict(X[:9]), live.predict(X[:9]))
