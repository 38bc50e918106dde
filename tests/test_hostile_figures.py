"""Every reported figure against its documented definition, recomputed here apart from the code that reports it:
Hedge's weights and vote (a NumPy loop of the rule in ``jcsol.live.board``), the hyperparameters that name a
leaderboard's rows (matched against ``jcsol.run`` by value), a sweep's timings wherever a point of it is reported,
``Result.best`` and the bold of tables over ties, NaN and infinities (a brute force over the points in exact
arithmetic), CVaR's tail (decimal arithmetic) and the records of a result without example costs."""

import dataclasses
import decimal
import json
import math
import re
from fractions import Fraction

import numpy as np
import pytest

import jcsol
from jcsol import metrics, report
from jcsol.live import Live
from jcsol.live.board import Selection, replay

# -- Hedge: the log weights lose rate·ℓ_t, ℓ_t = ρ_t/(1+ρ_t) for a miss and 1/(1+ρ_t) for a false alarm ---------


def synthetic_scores(n=300, seed=0):
    """Labels of a rare-positive stream and three configurations' scores: one that flags everything (a false
    alarm on every negative), one that flags nothing (a miss on every positive), one right 80% of the time."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.25, 1.0, -1.0)
    noisy = np.where(rng.random(n) < 0.8, y, -y) * rng.uniform(0.1, 2.0, n)
    return np.stack([np.full(n, 0.5), np.full(n, -0.5), noisy], axis=1).astype(np.float32), y.astype(np.float32)


def hedge_reference(scores, y, loss_of, rate, gamma):
    """The documented rule, event by event in float64: the served vote from the weights before the event, then
    ``log w ← γ·log w − rate·ℓ``; ``loss_of(positive, positives_seen, negatives_seen)`` is ``(miss, alarm)``."""
    log_w = np.zeros(scores.shape[1])
    served = np.zeros(4)  # (tp, fn, fp, tn) of the served vote
    p_seen = n_seen = 0
    for f, label in zip(scores, y):
        positive = label > 0
        w = np.exp(log_w - log_w.max())
        vote = float(np.sum(w / w.sum() * np.where(f >= 0, 1.0, -1.0)))
        served[(0 if vote >= 0 else 1) if positive else (2 if vote >= 0 else 3)] += 1
        p_seen, n_seen = p_seen + positive, n_seen + (not positive)
        miss, alarm = loss_of(positive, p_seen, n_seen)
        loss = np.where(positive, np.where(f < 0, miss, 0.0), np.where(f >= 0, alarm, 0.0))
        log_w = gamma * log_w - rate * loss
    return log_w - log_w.max(), served


@pytest.mark.parametrize("gamma", [1.0, 0.98])
@pytest.mark.parametrize("c_p", [0.8, 0.95])
def test_hedge_charges_a_false_alarm_c_n_and_a_miss_c_p_under_costs(c_p, gamma):
    """Under ``Cost(c_p, c_n)`` ``ρ = c_p/c_n``: ``ρ/(1+ρ) = c_p`` for a miss and ``1/(1+ρ) = c_n`` for a false
    alarm, the costs themselves (a false alarm charged the negative's weight, ½, would not be)."""
    scores, y = synthetic_scores()
    c_n = round(1 - c_p, 10)
    selection = Selection("hedge", rate=0.2, forgetting=gamma).check()
    expected, served = hedge_reference(scores, y, lambda *_: (c_p, c_n), 0.2, gamma)
    for batch in (len(y), 7):
        board = replay(jcsol.Cost(c_p=c_p, c_n=c_n), scores, y, selection, batch=batch)
        log_w = np.asarray(board.log_weights, np.float64)
        np.testing.assert_allclose(log_w - log_w.max(), expected, rtol=1e-5, atol=2e-3)
        np.testing.assert_array_equal(board.served_counts, served)
    slipped, _ = hedge_reference(scores, y, lambda *_: (c_p, 0.5), 0.2, gamma)  # an alarm charged ½
    assert np.abs(slipped - expected).max() > 1.0  # the check above tells the two apart


@pytest.mark.parametrize("alpha_p", [0.5, 0.7])
def test_hedge_charges_a_false_alarm_one_over_one_plus_rho_under_laplaces_estimate(alpha_p):
    """``Sum(rho="laplace")``: ``ρ_t = α_p/α_n·(n_t+1)/(p_t+1)``, the classes counted through event ``t``, for a
    negative event as for a positive one."""
    scores, y = synthetic_scores(seed=1)

    def laplace(positive, p_seen, n_seen):
        rho = alpha_p / (1 - alpha_p) * (n_seen + 1) / (p_seen + 1)
        return rho / (1 + rho), 1 / (1 + rho)

    expected, served = hedge_reference(scores, y, laplace, 0.3, 1.0)
    board = replay(jcsol.Sum(alpha_p=alpha_p, rho="laplace"), scores, y, Selection("hedge", rate=0.3).check())
    log_w = np.asarray(board.log_weights, np.float64)
    np.testing.assert_allclose(log_w - log_w.max(), expected, rtol=1e-5, atol=2e-3)
    np.testing.assert_array_equal(board.served_counts, served)
    slipped, _ = hedge_reference(scores, y, lambda *a: (laplace(*a)[0], 0.5), 0.3, 1.0)  # an alarm charged ½
    assert np.abs(slipped - expected).max() > 1.0


def test_a_live_hedge_learner_serves_the_documented_vote(german):
    X, y = german
    X, y = X[:96], y[:96]
    objective = jcsol.Cost(c_p=0.9, c_n=0.1)
    live = Live(jcsol.COG(eta=np.array([1e-3, 1.0, 1e3])), objective, select="hedge", rate=0.5)
    scores = np.concatenate([live.learn(X[a : a + 32], y[a : a + 32], return_scores=True) for a in (0, 32, 64)])
    expected, served = hedge_reference(np.asarray(scores, np.float64), y, lambda *_: (0.9, 0.1), 0.5, 1.0)
    board = live.leaderboard()
    np.testing.assert_allclose(board.weights, np.exp(expected) / np.exp(expected).sum(), rtol=1e-4)
    np.testing.assert_array_equal(board.served_counts, served)


# -- the leaderboard's names of its rows --------------------------------------------------------------------------


def counts_by_value(res):
    """``{(hyperparameter values…): counts}`` of every grid point of a one-permutation result."""
    names = list(res.params)
    return {tuple(float(res.params[k][i]) for k in names): res.counts[i][0] for i in np.ndindex(*res.grid_shape)}, names


def test_a_leaderboard_over_an_objective_grid_names_every_configuration(german):
    X, y = german
    X, y = X[:120], y[:120]
    learner = jcsol.COG(eta=np.array([[0.1], [10.0]]))
    objective = jcsol.Sum(rho="laplace", alpha_p=np.array([[0.3, 0.5, 0.7]]))
    live = Live(learner, objective)
    live.learn(X, y)
    board = live.leaderboard()
    assert set(board.params) == {"eta", "alpha_p"}
    rows = {(float(board.params["eta"][g]), float(board.params["alpha_p"][g])) for g in range(6)}
    assert rows == {(e, a) for e in (0.1, 10.0) for a in (0.3, 0.5, 0.7)}  # six distinct names
    run = jcsol.run(learner, X, y, perms=np.arange(len(y))[None], objective=objective)
    by_value, names = counts_by_value(run)
    assert names == ["eta", "alpha_p"]
    for g in range(6):  # each row's counts are those jcsol.run gives the configuration its name says
        np.testing.assert_array_equal(board.counts[g], by_value[(board.params["eta"][g], board.params["alpha_p"][g])])
        expected = board.params["alpha_p"][g] * metrics.sensitivity(board.counts[g]) + (
            1 - board.params["alpha_p"][g]
        ) * metrics.specificity(board.counts[g])
        assert board.sum[g] == pytest.approx(float(expected), abs=1e-7)  # α_p as the learner holds it, in float32
    header = board.table().splitlines()[0].split()
    assert header[:2] == ["eta", "alpha_p"]


def test_a_leaderboard_of_learners_over_a_cost_grid_names_every_configuration(german):
    X, y = german
    X, y = X[:100], y[:100]
    learners = [jcsol.COG(eta=np.array([[0.1], [10.0]])), jcsol.PA1()]
    objective = jcsol.Cost(c_p=np.array([0.7, 0.9]), c_n=np.array([0.3, 0.1]))
    live = Live(learners, objective)
    live.learn(X, y)
    board = live.leaderboard()
    assert list(board.params) == ["learner", "eta", "C", "c_p", "c_n"]
    names = [tuple(board.params[k][g] for k in ("learner", "eta", "C", "c_p")) for g in range(6)]
    assert len(set(names)) == 6
    for learner in learners:
        run = jcsol.run(learner, X, y, perms=np.arange(len(y))[None], objective=objective)
        by_value, keys = counts_by_value(run)
        for g in np.flatnonzero(board.params["learner"] == learner.name):
            key = tuple(float(board.params[k][g]) for k in keys)
            np.testing.assert_array_equal(board.counts[g], by_value[key])
            assert board.cost[g] == pytest.approx(
                board.params["c_p"][g] * board.counts[g][1] + board.params["c_n"][g] * board.counts[g][2]
            )


def test_a_fixed_objective_adds_no_column(german):
    X, y = german
    live = Live(jcsol.COG(eta=jcsol.decades(1e-1, 1e1)), jcsol.Sum(rho="laplace", alpha_p=0.6))
    live.learn(X[:32], y[:32])
    assert list(live.leaderboard().params) == ["eta"]


# -- a sweep's timings, wherever a point of it is reported -------------------------------------------------------


@pytest.fixture(scope="module")
def sweep(small):
    X, y = small
    learner = jcsol.COG(eta=np.array([[0.1], [1.0], [10.0]]))
    return jcsol.run(learner, X, y, perms=2, objective=jcsol.Sum(alpha_p=np.array([[0.4, 0.6]])), key=3)


def test_a_point_of_a_sweep_has_the_sweeps_time_per_run_and_rate(sweep, tmp_path):
    runs = 3 * 2 * 2  # eta × alpha_p × permutations, executed together
    per_run, rate = sweep.time_run / runs, runs * 200 / sweep.time_run
    assert sweep.time_per_run == pytest.approx(per_run, rel=1e-12)
    assert sweep.updates_per_second == pytest.approx(rate, rel=1e-12)
    points = [sweep.at(g) for g in range(6)] + [sweep.at((2, 1)), sweep.at(-1)]
    points += [sweep.best(m).result for m in ("sum", "cost", "alerts_per_catch", "specificity")]
    for point in points:
        assert point.grid_shape == ()
        assert point.n_runs == 2
        assert point.time_run == sweep.time_run  # the sweep's seconds, which the point's runs shared
        assert point.time_per_run == pytest.approx(per_run, rel=1e-12)
        assert point.updates_per_second == pytest.approx(rate, rel=1e-12)
    best = sweep.best("sum")
    for record in report.records(best) + report.records(sweep):
        assert record["time_per_run"] == pytest.approx(per_run, rel=1e-12)
    header, _, *rows = jcsol.table({"sweep": sweep, "best": best}).splitlines()
    assert header.split()[-2:] == ["time/run", "(s)"]
    assert {row.split()[-1] for row in rows} == {f"{per_run:.2e}"}
    report.write_json({"best": best, "sweep": sweep}, tmp_path / "runs.json")
    doc = json.loads((tmp_path / "runs.json").read_text())
    for name in ("best", "sweep"):
        timings = doc[name]["timings"]
        assert timings["run_s"] == sweep.time_run
        assert timings["runs_timed"] == runs
        assert timings["per_run_s"] == pytest.approx(per_run, rel=1e-12)
    assert "for the sweep's 12 runs" in repr(best.result)


def test_cross_validations_held_out_result_has_its_training_time_per_run(small):
    X, y = small
    cv = jcsol.protocols.cross_validate(jcsol.COG(), X, y, folds=2, grid={"eta": [0.1, 1.0, 10.0]})
    runs = 3 * 2  # eta × folds, trained together
    assert cv.result.time_per_run == pytest.approx(cv.train.time_run / runs, rel=1e-12)


def test_the_rate_of_a_resumed_run_counts_the_rounds_it_ran(small, tmp_path):
    X, y = small
    path, ran = tmp_path / "r.ckpt", []

    def stop(chunk):
        if chunk.chunks_done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=50, checkpoint=path, checkpoint_every=1, on_chunk=stop)
    resumed = jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=50, checkpoint=path, on_chunk=ran.append)
    rounds = 50 * len(ran)  # the chunks this call ran
    assert rounds == 50
    assert resumed.resumed_at == 150
    assert resumed.updates_per_second == pytest.approx(2 * rounds / resumed.time_run, rel=1e-12)
    done = jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=50, checkpoint=path)  # nothing left: nothing timed
    assert done.time_run == 0
    assert done.resumed_at == 200
    assert math.isnan(done.updates_per_second)
    assert done.time_per_run == 0


# -- best() and the bold of tables: ties, NaN, infinities ---------------------------------------------------------


def exact_value(name, c):
    """A measure of one run's counts ``(tp, fn, fp, tn)`` from ``docs/measures.md``, in exact arithmetic:
    ``None`` for NaN (undefined), ``inf`` for the infinite alerts per catch."""
    tp, fn, fp, tn = (int(v) for v in c)
    ratio = lambda a, b, empty: Fraction(a, b) if b else empty
    return {
        "sensitivity": lambda: ratio(tp, tp + fn, None),
        "specificity": lambda: ratio(tn, tn + fp, None),
        "accuracy": lambda: ratio(tp + tn, tp + fn + fp + tn, None),
        "precision": lambda: ratio(tp, tp + fp, Fraction(0)),
        "f1": lambda: ratio(2 * tp, 2 * tp + fp + fn, Fraction(0)),
        "alerts_per_catch": lambda: ratio(tp + fp, tp, math.inf),
    }[name]()


def brute_best(name, values):
    """The index, in C order, that the documented rule picks from the points' values, or ``None`` where no point
    is better than another; and the indices within 5e-7 of the best (a table's bold)."""
    lower = name == "alerts_per_catch"
    defined = [(i, v) for i, v in enumerate(values) if v is not None]
    if not defined:
        return None, set()
    best = min(v for _, v in defined) if lower else max(v for _, v in defined)
    if best == math.inf:
        return None, set()
    first = next(i for i, v in defined if v == best)
    close = {i for i, v in defined if v != math.inf and abs(v - best) <= Fraction(5, 10**7)}
    return first, close


def bold_rows(text, column):
    """The rows of a Markdown table whose cell ``column`` is bold."""
    rows = [line.split(" | ") for line in text.splitlines()[2:]]
    return {i for i, cells in enumerate(rows) if re.fullmatch(r"\*\*.*\*\*", cells[column].strip(" |"))}


MEASURES = ("sensitivity", "specificity", "accuracy", "precision", "f1", "alerts_per_catch")


def test_best_and_bold_follow_the_rule_over_ties_nan_and_infinities(sweep):
    """Random small counts (many zeros, many exact ties) on a 3×2 grid of one run per point: ``best`` and the
    bold cells against the brute force, for every measure of a single ratio (its float is the correctly rounded
    ratio, so exact ties stay ties)."""
    rng = np.random.default_rng(7)
    one = dataclasses.replace(sweep, orders=sweep.orders[:1])
    tried = errors = ties = 0
    for _ in range(150):
        counts = rng.integers(0, 3, size=(3, 2, 1, 4)) * rng.integers(0, 2, size=(3, 2, 1, 4))
        res = dataclasses.replace(one, counts=counts, mistake_cost=None)
        table = jcsol.table(res, measures=MEASURES, fmt="markdown")
        for j, name in enumerate(MEASURES):
            values = [exact_value(name, counts[i][0]) for i in np.ndindex(3, 2)]
            first, close = brute_best(name, values)
            tried += 1
            if first is None:
                errors += 1
                with pytest.raises(ValueError, match=name):
                    res.best(name)
            else:
                ties += len([v for v in values if v == values[first]]) > 1
                assert res.best(name).index == tuple(int(i) for i in np.unravel_index(first, (3, 2))), (name, values)
            assert bold_rows(table, 2 + j) == close, (name, values)
    assert tried == 900
    assert errors >= 10  # the hard cases were met (20 of them: no best)
    assert ties >= 200  # (412: a tie for the best)


def test_best_by_alerts_per_catch_where_nothing_was_caught_names_the_measure(small):
    X, y = small
    negatives = np.flatnonzero(y < 0)[:60]
    orders = np.stack([negatives, negatives[::-1]])
    res = jcsol.run(jcsol.COG(eta=jcsol.decades(1e-1, 1e1)), X, y, perms=orders, objective=jcsol.Cost())
    assert np.all(np.isinf(res.alerts_per_catch))
    with pytest.raises(ValueError, match=r"alerts_per_catch is \+inf at every point .*caught no positive"):
        res.best("alerts_per_catch")
    with pytest.raises(ValueError, match=r"sensitivity is undefined \(NaN\) at every one of the 3 point"):
        res.best("sensitivity")
    assert res.best("specificity").index in {(0,), (1,), (2,)}
    # one point caught something in one of its two runs: its mean is still infinite; nothing is better
    counts = res.counts.copy()
    counts[1, 0] = [1, 0, 5, 54]
    with pytest.raises(ValueError, match="alerts_per_catch"):
        dataclasses.replace(res, counts=counts).best("alerts_per_catch")
    counts[1, 1] = [2, 0, 2, 56]  # both runs caught: a finite mean, (6/1 + 4/2)/2 = 4, the only one
    assert dataclasses.replace(res, counts=counts).best("alerts_per_catch").index == (1,)


def test_best_index_of_means_by_hand():
    nan, inf = math.nan, math.inf
    assert metrics.best_index([0.5, nan, 0.9, 0.9], "sum") == 2  # the first of a tie; NaN never chosen
    assert metrics.best_index([[inf, 4.0], [3.0, 3.0]], "alerts_per_catch") == 2  # flat, C order
    assert metrics.best_index([inf, 2.5], "cost") == 1
    for values, name in (([nan, nan], "sum"), ([inf, nan, inf], "alerts_per_catch"), ([inf], "example_cost")):
        with pytest.raises(ValueError, match=name):
            metrics.best_index(values, name)
    with pytest.raises(ValueError, match="unknown measure"):
        metrics.best_index([1.0], "auc")


# -- CVaR's tail and records without example costs ---------------------------------------------------------------


def test_cvar_takes_exactly_the_lowest_ceil_epsilon_n_values():
    rng = np.random.default_rng(0)
    cases = 0
    for epsilon in (0.01, 0.07, 0.1, 0.15, 0.29, 0.3, 0.35, 0.57, 0.7, 1.0):
        for n in range(1, 120, 7):
            values = rng.standard_normal(n)
            k = max(1, int((decimal.Decimal(str(epsilon)) * n).to_integral_value(decimal.ROUND_CEILING)))
            expected = sum(sorted(values.tolist())[:k]) / k
            assert float(metrics.cvar(values, epsilon)) == pytest.approx(expected, rel=1e-12, abs=1e-15)
            cases += 1
    assert float(metrics.cvar(np.arange(100.0), 0.07)) == 3.0  # 0..6, not 0..7 (0.07·100 = 7.000000000000001)
    margins = np.array([[1.0, -2.0, np.nan, 3.0], [1.0, -2.0, np.inf, 3.0], [-np.inf, 0.0, 1.0, 2.0]])
    np.testing.assert_array_equal(metrics.cvar(margins, 0.5), [np.nan, -0.5, -np.inf])
    for bad, error in ((0.0, ValueError), (1.5, ValueError), (math.nan, ValueError), (True, TypeError)):
        with pytest.raises(error, match="epsilon must be"):
            metrics.cvar([1.0, 2.0], bad)
    assert cases == 170


def test_records_of_a_result_without_example_costs_say_nan(sweep):
    res = dataclasses.replace(sweep, mistake_cost=None)
    recs = report.records(res)
    assert len(recs) == 12
    assert all(math.isnan(r["example_cost"]) for r in recs)
    assert [r["cost"] for r in recs] == [
        pytest.approx(float(v)) for v in 0.9 * sweep.fn.ravel() + 0.1 * sweep.fp.ravel()
    ]


def test_a_held_out_result_reports_no_training_figure_as_held_out():
    """Cross-validation's held-out result: its counts are the held-out fold's; the training passes' scores and
    mistake costs are not passed off as held-out ones (no scores: their measures are refused; costs NaN)."""
    X, y = jcsol.datasets.load("german")
    cv = jcsol.protocols.cross_validate(jcsol.COG(eta=0.1), X, y, folds=3, grid={})
    assert cv.test.scores is None
    assert np.isnan(cv.test.mistake_cost).all()
    assert np.isfinite(cv.train.mistake_cost).all()
    with pytest.raises(ValueError, match="score"):
        cv.test.measure("average_precision")
    assert (cv.test.counts.sum(axis=-1) <= len(y) // 3 + 1).all()  # a fold's rows, not a training pass's


def test_the_protocols_choose_by_the_same_rule_as_best():
    """The protocols' per-run and per-weight choices (cross-validation's, the sweeps') follow
    ``metrics.best_index``: NaN never chosen, ties to the first, and no silent index 0 where nothing is better."""
    from jcsol.protocols import cost_sensitive

    values = np.array([[0.2, np.nan], [0.9, 0.5], [0.9, np.nan]])
    np.testing.assert_array_equal(cost_sensitive._argbest(values, "sum", axis=0), [1, 1])
    assert cost_sensitive._argbest(np.array([np.inf, 3.0, 3.0]), "cost") == 1
    with pytest.raises(ValueError, match="alerts_per_catch is \\+inf at every point"):
        cost_sensitive._argbest(np.array([[np.inf, 2.0], [np.inf, 1.0]]), "alerts_per_catch", axis=0)
