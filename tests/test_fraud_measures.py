"""Precision, F1, alerts per catch, average precision and precision at a review budget: in jcsol.metrics, on a
Result, in tables, records and the command line, and on the live leaderboard, checked against scikit-learn."""

import csv
import dataclasses
import itertools
import json
import warnings

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jcsol
from jcsol import Live, cli, metrics, report

sk = pytest.importorskip("sklearn.metrics")
UndefinedMetricWarning = pytest.importorskip("sklearn.exceptions").UndefinedMetricWarning


def _counts(y, pred):
    """``(tp, fn, fp, tn)`` of ±1 labels and predictions."""
    y, pred = np.asarray(y) > 0, np.asarray(pred) > 0
    return np.array([np.sum(y & pred), np.sum(y & ~pred), np.sum(~y & pred), np.sum(~y & ~pred)])


def _sklearn(function, *args):
    """A scikit-learn measure with its warnings of undefined values silenced (they are checked apart)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args)


# -- measures of counts ------------------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [0.01, 0.3])
def test_precision_f1_and_alerts_per_catch_match_scikit_learn(rate):
    rng = np.random.default_rng(0)
    y = np.where(rng.random((40, 300)) < rate, 1, -1)
    pred = np.where(rng.random((40, 300)) < rate + 0.05 * rng.random((40, 1)), 1, -1)
    counts = np.stack([_counts(a, b) for a, b in zip(y, pred)])
    precision, f1 = metrics.precision(counts), metrics.f1(counts)
    for i in range(len(y)):
        assert precision[i] == pytest.approx(_sklearn(sk.precision_score, y[i], pred[i]), abs=1e-15)
        assert f1[i] == pytest.approx(_sklearn(sk.f1_score, y[i], pred[i]), abs=1e-15)
    caught = counts[:, metrics.TP] > 0
    assert 0 < caught.sum() < len(y) or rate == 0.3
    np.testing.assert_allclose(metrics.alerts_per_catch(counts)[caught], 1 / precision[caught], rtol=1e-15)
    assert np.all(np.isinf(metrics.alerts_per_catch(counts)[~caught]))


def test_empty_denominators_follow_scikit_learns_default():
    no_alert = [[0, 5, 0, 95]]  # five positives, nothing flagged
    with pytest.warns(UndefinedMetricWarning):  # scikit-learn's default: warn, and 0
        assert sk.precision_score([1] * 5 + [-1] * 95, [-1] * 100) == 0.0
    assert metrics.precision(no_alert)[0] == 0.0
    assert metrics.f1(no_alert)[0] == 0.0
    assert np.isinf(metrics.alerts_per_catch(no_alert)[0])
    nothing = [[0, 0, 0, 100]]  # no positive, no alert
    with pytest.warns(UndefinedMetricWarning):
        assert sk.f1_score([-1] * 100, [-1] * 100) == 0.0
    assert metrics.f1(nothing)[0] == 0.0
    assert np.isnan(metrics.sensitivity(nothing)[0])
    assert metrics.alerts_per_catch([[3, 0, 0, 0]])[0] == 1.0  # every alert a catch
    assert metrics.alerts_per_catch([[0, 2, 7, 0]])[0] == np.inf


def test_measure_names_directions_and_errors():
    assert not metrics.higher_is_better("alerts_per_catch")
    assert metrics.higher_is_better("f1")
    assert metrics.higher_is_better("average_precision")
    assert metrics.higher_is_better("precision_at_0.5%")
    assert metrics.in_percent("precision_at_2%")
    assert not metrics.in_percent("alerts_per_catch")
    assert metrics.of_scores("precision_at_100%")
    assert not metrics.of_scores("precision")
    for bad in ("precision_at_0%", "precision_at_150%"):
        with pytest.raises(ValueError, match=r"review budget must be in \(0, 100\]%"):
            metrics.check_measure(bad)
    with pytest.raises(ValueError, match="unknown measure 'ap'; choose from sum, .*average_precision"):
        metrics.check_measure("ap")
    with pytest.raises(ValueError, match="average_precision is a measure of the scores"):
        metrics.measure("average_precision", [[1, 1, 1, 1]])
    with pytest.raises(ValueError, match="precision is a measure of the confusion counts"):
        metrics.score_measure("precision", [0.1], [1])


# -- average precision -------------------------------------------------------------------------------------


_average_precision = jax.jit(metrics.average_precision)


def _ap(scores, y, mask=None) -> float:
    """``metrics.average_precision`` jitted, its inputs padded to 4096 entries (one compiled shape) that the mask
    leaves out."""
    n = len(scores)
    mask = np.ones(n, bool) if mask is None else mask
    pad = lambda a, v: np.concatenate([np.asarray(a), np.full(4096 - n, v, np.asarray(a).dtype)])
    return float(_average_precision(pad(scores, 9), pad(y, 1), pad(mask, False)))


@pytest.mark.parametrize(("n", "rate", "decimals"), [(7, 0.3, 0), (500, 0.02, 1), (4000, 0.1, 2), (4000, 0.01, 3)])
def test_average_precision_matches_scikit_learn_with_ties(n, rate, decimals):
    rng = np.random.default_rng(n + decimals)
    y = np.where(rng.random(n) < rate, 1, -1)
    y[0] = 1
    scores = np.round(rng.normal(size=n) + 0.7 * (y > 0), decimals).astype(np.float32)  # many ties
    assert len(np.unique(scores)) < n
    assert _ap(scores, y) == pytest.approx(sk.average_precision_score(y > 0, scores), rel=1e-6)


def test_average_precision_mask_infinities_and_undefined_cases():
    rng = np.random.default_rng(1)
    y = np.where(rng.random(200) < 0.2, 1, -1)
    scores = np.round(rng.normal(size=200), 1).astype(np.float32)
    scores[:3] = [np.inf, -np.inf, np.inf]
    mask = rng.random(200) < 0.6
    mask[0] = True
    finite = np.clip(scores, -1e6, 1e6)  # the same order: scikit-learn refuses infinite scores
    assert _ap(scores, y, mask) == pytest.approx(sk.average_precision_score(y[mask] > 0, finite[mask]), rel=1e-6)
    negative = -np.ones(50)
    with pytest.warns(UserWarning, match="No positive class"):  # scikit-learn: recall undefined, AP set to 0
        assert sk.average_precision_score(negative > 0, finite[:50]) == 0.0
    assert np.isnan(_ap(scores[:50], negative))  # jcsol: undefined, as the AUC
    assert np.isnan(_ap(scores, y, y < 0))  # the positives all masked out
    assert _ap(scores[:50], np.ones(50)) == 1.0
    nan = scores.copy()
    nan[5] = np.nan
    assert np.isnan(_ap(nan, y))
    assert not np.isnan(_ap(nan, y, nan == nan))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-3, 3), st.booleans()), min_size=1, max_size=32).filter(
        lambda rows: any(positive for _, positive in rows)
    )
)
def test_average_precision_property(rows):
    """Any small stream, with many ties."""
    scores = np.array([s for s, _ in rows], np.float32) / 2
    y = np.array([1 if positive else -1 for _, positive in rows])
    assert _ap(scores, y) == pytest.approx(_sklearn(sk.average_precision_score, y > 0, scores), rel=1e-6)


# -- precision at a review budget --------------------------------------------------------------------------


def _tie_broken_at_random(scores, y, m):
    """The mean precision of the top ``m`` over every order of the tied scores: all permutations as tie-breaks."""
    values = []
    for order in itertools.permutations(range(len(scores))):
        top = sorted(range(len(scores)), key=lambda i: (-scores[i], order[i]))[:m]
        values.append(np.mean(np.asarray(y)[top] > 0))
    return np.mean(values)


@pytest.mark.parametrize("seed", range(6))
def test_precision_at_budget_counts_ties_in_proportion(seed):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 3, 7).astype(float)
    y = np.where(rng.random(7) < 0.4, 1, -1)
    for budget in (10, 30, 50, 100):
        m = int(np.ceil(budget * 7 / 100))
        expected = _tie_broken_at_random(scores, y, m)
        assert float(metrics.precision_at_budget(scores, y, budget)) == pytest.approx(expected, abs=1e-12)


def test_precision_at_budget_rounds_up_exactly_and_matches_precision_score():
    rng = np.random.default_rng(3)
    scores = rng.permutation(1000).astype(float)  # distinct: the top m are the m highest
    y = np.where(rng.random(1000) < 0.1, 1, -1)
    for budget, m in ((0.1, 1), ("0.1", 1), (1, 10), (0.15, 2), (2.5, 25), (100, 1000)):
        flagged = np.where(np.argsort(np.argsort(-scores)) < m, 1, -1)
        expected = sk.precision_score(y, flagged)
        assert float(metrics.precision_at_budget(scores, y, budget)) == pytest.approx(expected, abs=1e-15)
    rows = np.stack([scores, -scores])
    np.testing.assert_allclose(
        metrics.precision_at_budget(rows, y, 5), [metrics.precision_at_budget(r, y, 5) for r in rows], atol=1e-15
    )
    with pytest.raises(ValueError, match="review budget"):
        metrics.precision_at_budget(scores, y, 0)


# -- a Result -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scored(small):
    X, y = small
    res = jcsol.run(jcsol.COG(eta=jcsol.decades(1e-1, 1e1)), X, y, perms=3, record_scores=True, curve_points=5)
    np.testing.assert_array_equal(res.labels, y)  # the run keeps the labels its recorded scores need
    return res, y


def test_result_measures_are_scikit_learns_on_the_runs_predictions(scored):
    res, y = scored
    labels = np.asarray(y)[res.orders]  # (P, L)
    for g, p in itertools.product(range(3), range(3)):
        scores = res.scores[g, p]
        pred = np.where(scores >= 0, 1, -1)
        np.testing.assert_array_equal(res.counts[g, p], _counts(labels[p], pred))
        assert res.precision[g, p] == pytest.approx(_sklearn(sk.precision_score, labels[p], pred), abs=1e-15)
        assert res.f1[g, p] == pytest.approx(_sklearn(sk.f1_score, labels[p], pred), abs=1e-15)
        assert res.average_precision[g, p] == pytest.approx(sk.average_precision_score(labels[p] > 0, scores), 1e-6)
        assert res.measure("precision_at_5%")[g, p] == pytest.approx(
            metrics.precision_at_budget(scores, labels[p], 5), abs=1e-15
        )
    np.testing.assert_array_equal(res.alerts_per_catch, metrics.alerts_per_catch(res.counts))


def test_best_curves_and_errors(scored):
    res, _ = scored
    assert res.best("f1").index == (int(np.nanargmax(res.f1.mean(-1))),)
    assert res.best("alerts_per_catch").index == (int(np.argmin(res.alerts_per_catch.mean(-1))),)  # lower wins
    assert res.best("average_precision").index == (int(np.argmax(res.average_precision.mean(-1))),)
    np.testing.assert_array_equal(res.curve_of("precision")[..., -1], res.precision)
    with pytest.raises(ValueError, match="average_precision is a measure of the scores: it has no online curve"):
        res.curve_of("average_precision")
    unscored = dataclasses.replace(res, scores=None)
    for name in ("average_precision", "precision_at_1%"):
        with pytest.raises(ValueError, match=f"{name} is a measure of the scores: run with record_scores=True"):
            unscored.measure(name)
    with pytest.raises(ValueError, match="record_scores=True"):
        unscored.best("average_precision")
    with pytest.raises(ValueError, match="holds scores but no labels"):
        dataclasses.replace(res, labels=None).measure("average_precision")


# -- tables, records, the command line --------------------------------------------------------------------


def test_default_table_shows_precision_and_alerts_per_catch(scored):
    res, _ = scored  # three grid points: three rows
    header, _, *rows = jcsol.table(res).splitlines()
    titles = ["sum (%)", "sensitivity (%)", "specificity (%)", "precision (%)", "alerts/catch", "time/run (s)"]
    assert [t.strip() for t in header.split("  ") if t.strip()][2:] == titles
    alerts = res.alerts_per_catch.mean(-1)
    assert np.isinf(alerts[0])
    assert "inf ± nan" in rows[0]  # a permutation whose runs caught nothing
    for g, row in enumerate(rows):  # the fewest alerts per catch in bold, the others not
        assert (f"*{alerts[g]:.3f} ± " in row) == (g == int(np.argmin(alerts)))
        assert f"{100 * res.precision[g].mean():.3f} ± " in row
    cost = dataclasses.replace(res, objective=jcsol.Cost(c_p=0.9, c_n=0.1))
    assert report.default_measures(cost) == ("cost", "sensitivity", "specificity", "precision", "alerts_per_catch")


def test_table_and_records_of_chosen_measures(scored, tmp_path):
    res, _ = scored
    text = jcsol.table(res, measures=["f1", "average_precision", "precision_at_2.5%", "alerts_per_catch"])
    header = text.splitlines()[0]
    assert [t in header for t in ("F1 (%)", "AP (%)", "precision top 2.5% (%)", "alerts/catch")] == [True] * 4
    assert "sum (%)" not in header
    assert f"{100 * res.average_precision[1].mean():.3f} ± " in text
    records = report.records(res)  # scores and labels kept: average precision is a default column
    assert list(records[0])[-6:-1] == ["example_cost", "precision", "f1", "alerts_per_catch", "average_precision"]
    for r in records:
        for m in ("precision", "f1", "alerts_per_catch", "average_precision"):
            g = [0.1, 1.0, 10.0].index(r["eta"])
            assert r[m] == float(res.measure(m)[g, r["permutation"]])
    assert "average_precision" not in report.records(dataclasses.replace(res, scores=None))[0]
    nothing = dataclasses.replace(res, counts=np.tile([0, 5, 0, 195], res.counts.shape[:-1] + (1,)))
    report.write_json(nothing, tmp_path / "runs.json")
    run = json.loads((tmp_path / "runs.json").read_text())["records"][0]
    assert run["precision"] == 0.0
    assert run["alerts_per_catch"] is None  # infinite: null in strict JSON
    with pytest.raises(ValueError, match="record_scores=True"):
        jcsol.table(dataclasses.replace(res, scores=None), measures=["average_precision"])


def test_cli_measures_option(tmp_path, capsys):
    out_csv = tmp_path / "runs.csv"
    args = ["run", "--learner", "COG-I", "--perms", "2", "--grid", "eta=1,10", "--csv", str(out_csv)]
    assert cli.main([*args, "--measures", "sum,precision,f1,average_precision,precision_at_1%"]) == 0
    header = capsys.readouterr().out.splitlines()[1]
    assert [t in header for t in ("sum (%)", "precision (%)", "F1 (%)", "AP (%)", "precision top 1% (%)")] == [True] * 5
    assert "sensitivity" not in header
    with open(out_csv) as fh:
        rows = list(csv.DictReader(fh))
    assert {"precision", "alerts_per_catch", "average_precision", "precision_at_1%"} <= set(rows[0])
    assert all(0 <= float(r["average_precision"]) <= 1 for r in rows)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--measures", "sum,ap"])
    assert exit_.value.code == 2
    assert "unknown measure 'ap'" in capsys.readouterr().err


# -- the live leaderboard ------------------------------------------------------------------------------------


def test_leaderboard_shows_precision_f1_alerts_and_window_average_precision(german):
    X, y = german
    live = Live(jcsol.COG(eta=jcsol.decades(1e-2, 1e2)), auc_window=100)
    negatives = np.flatnonzero(y < 0)[:64]
    batches = [live.learn(X[negatives], y[negatives], return_scores=True)]
    fresh = live.leaderboard()  # no positive in the window yet
    assert np.all(np.isnan(fresh.average_precision))
    assert np.all(fresh.precision == 0)
    assert np.all(np.isinf(fresh.alerts_per_catch))
    assert "inf alerts per catch" in fresh.table()
    batches += [live.learn(X[a : a + 64], y[a : a + 64], return_scores=True) for a in range(0, 256, 64)]
    scores, labels = np.concatenate(batches), np.concatenate([y[negatives], y[:256]])
    board = live.leaderboard()
    np.testing.assert_array_equal(board.alerts_per_catch, metrics.alerts_per_catch(board.counts))
    assert np.any(board.precision > 0)
    assert np.any(board.precision == 0)  # a configuration that caught nothing
    for g in range(scores.shape[1]):
        pred = np.where(scores[:, g] >= 0, 1, -1)
        assert board.precision[g] == pytest.approx(sk.precision_score(labels, pred), abs=1e-15)
        assert board.f1[g] == pytest.approx(sk.f1_score(labels, pred), abs=1e-15)
        expected = sk.average_precision_score(labels[-100:] > 0, scores[-100:, g])
        assert board.average_precision[g] == pytest.approx(expected, rel=1e-6)
    text = board.table()
    assert "alerts/catch" in text.splitlines()[0]
    assert "alerts per catch" in text.splitlines()[-1]
    pytest.importorskip("pandas")
    assert {"precision", "f1", "alerts_per_catch", "average_precision"} <= set(board.to_pandas().columns)


def test_plots_and_selection_take_the_new_measures(small):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    X, y = small
    res = jcsol.run(jcsol.COG(), X, y, perms=3, curve_points=5)
    fig = jcsol.plots.online_curves(res, "precision")
    assert fig.axes[0].get_ylabel() == "online precision (%)"
    sel = jcsol.protocols.select_and_rerun(
        jcsol.COG(), X, y, grid={"eta": [0.01, 1.0, 100.0]}, measure="alerts_per_catch", perms=2
    )
    means = sel.sweep.measure("alerts_per_catch").mean(axis=-1)
    assert float(np.asarray(sel.chosen["eta"])) == [0.01, 1.0, 100.0][int(np.nanargmin(means))]  # the fewest alerts
