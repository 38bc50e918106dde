"""The engine's bookkeeping: grids, curves, selection, scores, sparse rows, objectives, devices."""

import os
import subprocess
import sys
import textwrap

import chex
import jax
import numpy as np
import pytest

import jcsol


def test_decades_and_product_grid():
    np.testing.assert_allclose(jcsol.decades(), 10.0 ** np.arange(-5, 6))
    g = jcsol.grid(jcsol.ACOG(), eta=[0.1, 1, 10], gamma=[0.5, 2])
    assert g.eta.shape == g.gamma.shape == (3, 2)
    np.testing.assert_allclose(g.eta[:, 1], [0.1, 1, 10])
    np.testing.assert_allclose(g.gamma[2], [0.5, 2])
    with pytest.raises(ValueError, match="no hyperparameter"):
        jcsol.grid(jcsol.ACOG(), lr=[1])
    with pytest.raises(ValueError, match="powers of ten"):
        jcsol.decades(3, 10)


def test_product_grid_run_matches_points(small):
    X, y = small
    g = jcsol.grid(jcsol.ACOG(diagonal=True), eta=[0.1, 10], gamma=[0.5, 2])
    res = jcsol.run(g, X, y, perms=2)
    assert res.grid_shape == (2, 2)
    assert res.sum.shape == (2, 2, 2)
    point = jcsol.run(jcsol.ACOG(diagonal=True, eta=10.0, gamma=0.5), X, y, perms=2)
    np.testing.assert_array_equal(res.counts[1, 0], point.counts)
    assert res.params["eta"][1, 0] == 10
    assert res.params["gamma"][1, 0] == 0.5


def test_curves_end_at_final_counts_and_are_cumulative(small):
    X, y = small
    res = jcsol.run(jcsol.COG(eta=[0.1, 1.0]), X, y, perms=3, curve_points=7)
    assert res.curve.shape == (2, 3, 7, 4)
    np.testing.assert_array_equal(res.curve_t[-1], len(y))
    np.testing.assert_array_equal(res.curve[..., -1, :], res.counts)
    np.testing.assert_array_equal(res.curve.sum(-1), np.broadcast_to(res.curve_t, (2, 3, 7)))
    assert (np.diff(res.curve, axis=-2) >= 0).all()
    assert res.curve_of("sum").shape == (2, 3, 7)


def test_measures_from_counts(small):
    X, y = small
    res = jcsol.run(jcsol.COG(), X, y, perms=4, objective=jcsol.Cost(c_p=0.8, c_n=0.2))
    tp, fn, fp, tn = (res.counts[..., k].astype(float) for k in range(4))
    np.testing.assert_allclose(res.sensitivity, tp / (tp + fn))
    np.testing.assert_allclose(res.specificity, tn / (tn + fp))
    np.testing.assert_allclose(res.accuracy, (tp + tn) / len(y))
    np.testing.assert_allclose(res.sum, 0.5 * res.sensitivity + 0.5 * res.specificity)
    np.testing.assert_allclose(res.cost, 0.8 * fn + 0.2 * fp)
    assert (tp + fn == (y == 1).sum()).all()


def test_best_at_and_table(german):
    X, y = german
    res = jcsol.run(jcsol.ACOG(eta=jcsol.decades(1e-3, 1e3)), X, y, perms=5)
    best = res.best("sum")
    means = res.sum.mean(-1)
    assert best.index == (int(np.argmax(means)),)
    assert best.params["eta"] == jcsol.decades(1e-3, 1e3)[best.index[0]]
    assert best.result.grid_shape == ()
    assert best.result.learner.eta == best.params["eta"]
    np.testing.assert_array_equal(best.result.counts, res.counts[best.index])
    cheapest = res.best("cost")
    assert cheapest.index == (int(np.argmin(res.cost.mean(-1))),)
    text = jcsol.table(best.result)
    assert "ACOG-I" in text
    assert f"{100 * best.result.sum.mean():.3f}" in text
    assert len(jcsol.table(res).splitlines()) == 2 + 7
    md = jcsol.table({"COG-I": jcsol.run(jcsol.COG(), X, y, perms=2), "best ACOG-I": best.result}, fmt="markdown")
    assert md.count("\n") == 3
    assert md.startswith("| learner")


def test_score_uses_final_models(small):
    X, y = small
    res = jcsol.run(jcsol.ACOG(eta=[0.1, 1.0]), X, y, perms=2)
    scores = res.score(X[:10])
    assert scores.shape == (2, 2, 10)
    np.testing.assert_allclose(scores[1, 0], X[:10] @ np.asarray(res.states.mu[1, 0]), rtol=1e-5, atol=1e-6)
    rows = jcsol.SparseRows(np.tile(np.arange(X.shape[1]), (10, 1)), X[:10], X.shape[1])
    # held-out rows of any kind a run takes; sparse ones are scored O(nnz), the same sums in another order
    np.testing.assert_allclose(res.score(rows), scores, rtol=1e-6, atol=1e-7)
    bad = X[:10].astype(np.float64)
    bad[4, 2] = np.nan
    with pytest.raises(ValueError, match="NaN value.*row 4"):
        res.score(bad)
    bad[4, 2] = 1e39
    with pytest.raises(ValueError, match="beyond the range of float32.*row 4"):
        res.score(bad)
    with pytest.raises(ValueError, match=f"X has 3 features; the models learnt from rows of {X.shape[1]}"):
        res.score(X[:10, :3])


def test_sparse_rows_give_dense_results():
    Xd, y = jcsol.datasets.load("spambase")
    Xs, _ = jcsol.datasets.load("spambase", sparse=True)
    for learner in (jcsol.COG(eta=[0.1, 10.0]), jcsol.ACOG(diagonal=True)):
        dense = jcsol.run(learner, Xd, y, perms=2)
        sparse = jcsol.run(learner, Xs, y, perms=2)
        np.testing.assert_array_equal(dense.counts, sparse.counts)


def test_scipy_sparse_matrices_are_sparse_rows():
    sparse = pytest.importorskip("scipy.sparse")
    Xs, y = jcsol.datasets.load("spambase", sparse=True)
    Xd = Xs.todense()
    learner = jcsol.ACOG(eta=[0.1, 10.0], diagonal=True)
    expected = jcsol.run(learner, Xs, y, perms=2)
    coo = sparse.coo_array(Xd)
    doubled = sparse.coo_matrix(  # every stored entry split in two halves: the matrix sums them
        (np.r_[coo.data, coo.data] / 2, (np.r_[coo.row, coo.row], np.r_[coo.col, coo.col])), shape=Xd.shape
    )
    for matrix in (sparse.csr_matrix(Xd), sparse.csr_array(Xd), sparse.csc_matrix(Xd), doubled):
        rows = jcsol.SparseRows.from_scipy(matrix)
        np.testing.assert_array_equal(rows.todense(), Xd)
        assert rows.indices.shape[1] == (Xd != 0).sum(axis=1).max()
        got = jcsol.run(learner, matrix, y, perms=2)
        np.testing.assert_array_equal(got.counts, expected.counts)
        np.testing.assert_array_equal(got.states.mu, expected.states.mu)
    np.testing.assert_allclose(got.score(sparse.csr_matrix(Xd[:7])), got.score(Xd[:7]), rtol=1e-6, atol=1e-7)
    live = jcsol.Live(jcsol.ACOG(eta=jcsol.decades(), diagonal=True), n_features=Xd.shape[1])
    live.learn(sparse.csr_matrix(Xd[:300]), y[:300])
    first = jcsol.SparseRows(Xs.indices[300:305], Xs.values[300:305], Xs.n_features)
    # the same rows padded to another width (18 entries, not 37): the same sums, rounded in another order
    np.testing.assert_allclose(live.predict(sparse.csr_matrix(Xd[300:305])), live.predict(first), rtol=1e-6)


def test_objectives_set_rho(small):
    X, y = small
    offline = jcsol.run(jcsol.COG(eta=10.0), X, y, perms=3, key=1)
    laplace = jcsol.run(jcsol.COG(eta=10.0), X, y, perms=3, key=1, objective=jcsol.Sum(rho="laplace"))
    neutral = jcsol.run(jcsol.COG(eta=10.0), X, y, perms=3, key=1, objective=jcsol.Cost(c_p=0.5, c_n=0.5))
    heavy = jcsol.run(jcsol.COG(eta=10.0), X, y, perms=3, key=1, objective=jcsol.Cost(c_p=0.99, c_n=0.01))
    assert not np.array_equal(offline.counts, laplace.counts)
    # a larger ρ on positives finds more of them
    assert heavy.sensitivity.mean() > neutral.sensitivity.mean()


def test_objective_grid_with_learner_grid(small):
    X, y = small
    alphas = np.array([0.2, 0.5, 0.8])
    res = jcsol.run(
        jcsol.COG(eta=np.array([[1.0], [10.0]])), X, y, perms=2, objective=jcsol.Sum(alpha_p=alphas[None, :])
    )
    assert res.grid_shape == (2, 3)
    np.testing.assert_allclose(
        res.sum, alphas[None, :, None] * res.sensitivity + (1 - alphas[None, :, None]) * res.specificity
    )
    single = jcsol.run(jcsol.COG(eta=10.0), X, y, perms=2, objective=jcsol.Sum(alpha_p=0.8))
    np.testing.assert_array_equal(res.counts[1, 2], single.counts)


def test_arrays_varying_along_one_axis_are_refused_unless_paired(small, forbid_tracing):
    """Equal-shape arrays in two fields would pair their values point by point: refused before any work, with the
    two ways out named; jcsol.paired makes the pairing explicit, jcsol.grid the product."""
    X, y = small
    eta, gamma = [0.1, 1.0, 10.0], [0.5, 1.0, 2.0]
    forbid_tracing()  # nothing may be compiled before the refusals
    with pytest.raises(
        ValueError,
        match=r"ACOG.eta and ACOG.gamma vary along the same grid axis 0.*jcsol.grid.*"
        r"jcsol.paired",
    ):
        jcsol.run(jcsol.ACOG(eta=eta, gamma=gamma), X, y, perms=2)
    with pytest.raises(ValueError, match=r"COG.eta and Sum.alpha_p vary along the same grid axis 0"):
        jcsol.run(jcsol.COG(eta=eta), X, y, perms=2, objective=jcsol.Sum(alpha_p=[0.2, 0.5, 0.8]))
    with pytest.raises(ValueError, match=r"vary along the same grid axis 0 \(shapes \(3, 2\) and \(3, 1\)\)"):
        jcsol.run(
            jcsol.ACOG(eta=np.array([[0.1, 1.0]] * 3) * [[1], [2], [3]], gamma=np.array([gamma]).T), X, y, perms=2
        )


def test_paired_grid_runs_the_pairs(small):
    X, y = small
    eta, gamma = [0.1, 1.0, 10.0], [0.5, 1.0, 2.0]
    learner = jcsol.paired(jcsol.ACOG(diagonal=True), eta=eta, gamma=gamma)
    np.testing.assert_array_equal(learner.eta, eta)
    res = jcsol.run(learner.replace(loss="II"), X, y, perms=2, key=3)  # the pairing survives replace
    assert res.grid_shape == (3,)
    for k in range(3):
        single = jcsol.run(jcsol.ACOG(diagonal=True, loss="II", eta=eta[k], gamma=gamma[k]), X, y, perms=2, key=3)
        np.testing.assert_array_equal(res.counts[k], single.counts)
    with pytest.raises(ValueError, match="same number of values in every field, got eta: 3, gamma: 2"):
        jcsol.paired(jcsol.ACOG(), eta=eta, gamma=gamma[:2])
    with pytest.raises(ValueError, match="no hyperparameter"):
        jcsol.paired(jcsol.ACOG(), eta=eta, lr=gamma)
    with pytest.raises(ValueError, match="already an array; give its values to paired"):
        jcsol.paired(jcsol.ACOG(gamma=gamma), eta=eta)


def test_products_and_an_objectives_own_fields_are_accepted(small):
    X, y = small
    product = jcsol.run(jcsol.grid(jcsol.ACOG(diagonal=True), eta=[0.1, 10.0], gamma=[0.5, 2.0]), X, y, perms=2)
    by_hand = jcsol.ACOG(diagonal=True, eta=[[0.1, 0.1], [10.0, 10.0]], gamma=[[0.5, 2.0], [0.5, 2.0]])
    np.testing.assert_array_equal(jcsol.run(by_hand, X, y, perms=2).counts, product.counts)
    # an objective's fields vary together (c_p + c_n = 1); a learner's grid beside it on an axis of its own
    res = jcsol.run(
        jcsol.COG(eta=[[1.0], [10.0]]), X, y, perms=2, objective=jcsol.Cost(c_p=[0.9, 0.8, 0.5], c_n=[0.1, 0.2, 0.5])
    )
    assert res.grid_shape == (2, 3)
    single = jcsol.run(jcsol.COG(eta=10.0), X, y, perms=2, objective=jcsol.Cost(c_p=0.8, c_n=0.2))
    np.testing.assert_array_equal(res.counts[1, 1], single.counts)


def test_explicit_orders_and_folds(german):
    X, y = german
    fold = np.arange(0, 1000, 2)
    res = jcsol.run(jcsol.COG(), X, y, perms=np.stack([fold, fold[::-1]]))
    assert res.orders.shape == (2, 500)
    assert (res.counts.sum(-1) == 500).all()


def test_a_stream_past_int32_indices_is_refused_before_its_orders():
    """Row indices and round counts are int32: 2**31 examples are refused (with no stream built, by the
    function that makes the orders), 2**31 - 1 are not."""
    from jcsol.engine import _orders

    with pytest.raises(ValueError, match=r"2147483648 examples.*below 2\*\*31"):
        _orders(1, 2**31, jax.random.key(0))
    np.testing.assert_array_equal(_orders(np.array([2**31 - 2]), 2**31 - 1, jax.random.key(0)), [[2**31 - 2]])


@pytest.mark.slow  # two child processes; tests/test_devices.py compares layouts in the default run
def test_runs_split_over_eight_devices_equal_one_device():
    code = textwrap.dedent("""
        import sys, numpy as np, jcsol, jax
        X, y = jcsol.datasets.load("german")
        res = jcsol.run(jcsol.ACOG(eta=jcsol.decades(1e-2, 1e2), diagonal=True), X, y, perms=5, key=3)
        np.save(sys.argv[1], np.concatenate([res.counts.ravel(), np.asarray(res.states.mu).ravel().view(np.int32)]))
        print(len(jax.devices()))
    """)
    outputs = []
    for n in (1, 8):
        env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={n}", JAX_PLATFORMS="cpu")
        path = f"/tmp/jcsol_devices_{n}_{os.getpid()}.npy"
        done = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split()[-1] == str(n)
        outputs.append(np.load(path))
        os.remove(path)
    np.testing.assert_array_equal(outputs[0], outputs[1])


def test_grid_blocks_are_units_whose_results_do_not_depend_on_the_layout(german):
    """Five grid points in two blocks of three (the last padded with a copy of the last point), two
    permutations: four units, two on each of two devices. Each permutation run alone is two units, both on one
    device (units with their own hyperparameters go at least two to a device): every unit computes the same
    bits either way. And the blocks agree with the whole grid to rounding."""
    X, y = german[0][:300], german[1][:300]
    learner = jcsol.ACOG(eta=np.array([1e-3, 1e-2, 1e-1, 1.0, 10.0], np.float32), diagonal=True)
    orders = np.stack([np.random.default_rng(seed).permutation(len(y)) for seed in (3, 4)])
    options = dict(key=4, curve_points=10, record_scores=True)
    both = jcsol.run(learner, X, y, perms=orders, grid_blocks=2, **options)
    assert both.grid_shape == (5,)
    assert both.counts.shape == (5, 2, 4)
    assert both.scores.shape == (5, 2, 300)
    if len(jax.devices()) > 1:  # runs split over devices come back on the host, fetched shard by shard: no program
        # with a collective runs over the devices afterwards (XLA's CPU runtime can abort one that waits for a
        # participant, which KOIL-MKL's 105-run selection on german did on 2 cores)
        assert all(isinstance(leaf, np.ndarray) for leaf in jax.tree.leaves(both.states))
    for p in range(2):  # ACOG's initial state does not depend on the key, so a run alone starts the same
        alone = jcsol.run(learner, X, y, perms=orders[p : p + 1], grid_blocks=2, **options)
        for name in ("counts", "curve", "scores", "mistake_cost"):
            np.testing.assert_array_equal(getattr(both, name)[:, p : p + 1], getattr(alone, name), err_msg=name)
        chex.assert_trees_all_equal(jax.tree.map(lambda a, p=p: a[:, p : p + 1], both.states), alone.states)
    whole = jcsol.run(learner, X, y, perms=orders, **options)  # one block: the same up to rounding
    np.testing.assert_array_equal(both.orders, whole.orders)
    chex.assert_trees_all_close(both.states, whole.states, rtol=1e-4, atol=1e-6)


def test_grid_blocks_are_checked_before_the_run(small):
    learner = jcsol.COG(eta=[0.1, 0.2, 0.3, 0.4, 0.5])
    for bad in (0, 4, 6, 2.0, True, "2"):
        with pytest.raises(ValueError, match=r"grid_blocks must cut the grid's 5 point\(s\) .*one of 1, 2, 3, 5;"):
            jcsol.run(learner, *small, perms=1, grid_blocks=bad)


@pytest.mark.parametrize(("name", "field"), [("COG-II", "eta"), ("ACOG-II-diag", "eta"), ("AROW", "r")])
def test_gathered_blocks_and_unrecorded_scores_change_no_bit(name, field):
    """The scan gathers a block of rounds' examples at once and writes no score unless recorded: every state,
    count, curve point and cost equals a run whose blocks hold one round each (a row read at its own round),
    with or without recorded scores, over chunks that end inside a block."""
    from jcsol.compiled import CompiledCache
    from jcsol.core import programs, scan

    rng = np.random.default_rng(5)
    X = rng.normal(size=(900, 7)).astype(np.float32)
    y = np.where(rng.random(900) < 0.3, 1, -1)
    costs = rng.uniform(0.1, 2.0, 900).astype(np.float32)
    learner = jcsol.grid(jcsol.by_name(name), **{field: [0.1, 1.0]})
    options = dict(perms=3, curve_points=4, chunk_size=333, costs=costs)
    results = [jcsol.run(learner, X, y, **options), jcsol.run(learner, X, y, record_scores=True, **options)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "GATHER_ROUNDS", 1)
        patch.setattr(programs, "COMPILED", CompiledCache())  # compiled anew, with blocks of one round
        results.append(jcsol.run(learner, X, y, record_scores=True, **options))
    first = results[0]
    for other in results[1:]:
        for a, b in zip(jax.tree.leaves(first.states), jax.tree.leaves(other.states)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        np.testing.assert_array_equal(first.counts, other.counts)
        np.testing.assert_array_equal(first.curve, other.curve)
        np.testing.assert_array_equal(first.mistake_cost, other.mistake_cost)
    np.testing.assert_array_equal(results[1].scores, results[2].scores)
