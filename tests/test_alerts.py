"""Alerts from scores (jcsol.alerts: a threshold, the online alert budget, a Result measured on its alerts), the
ROC AUC measure of recorded scores, and the generated payments table."""

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

import jcsol
from jcsol import alerts, metrics
from jcsol.datasets import synthetic

sk = pytest.importorskip("sklearn.metrics")


def _budget_rule(scores, budget, history=()) -> np.ndarray:
    """The online budget from its rule, in O(n²): ``s_t`` alerts iff ``#{earlier > s_t} < budget × #earlier``, the
    earlier scores being the history then ``s_1 … s_{t-1}``, the budget the decimal it is written as."""
    share = Fraction(str(budget))
    history = np.asarray(history, np.float64)
    out = np.zeros(len(scores), bool)
    for t, score in enumerate(scores):
        earlier = np.concatenate([history, np.asarray(scores[:t], np.float64)])
        greater = int(np.sum(earlier > score))
        out[t] = greater * share.denominator < share.numerator * len(earlier)
    return out


def _counts_of(alerted_rows, positive) -> np.ndarray:
    """``(tp, fn, fp, tn)`` of boolean alerts against boolean labels, over the last axis."""
    return np.stack(
        [
            np.sum(alerted_rows & positive, -1),
            np.sum(~alerted_rows & positive, -1),
            np.sum(alerted_rows & ~positive, -1),
            np.sum(~alerted_rows & ~positive, -1),
        ],
        -1,
    )


# -- threshold and budget ------------------------------------------------------------------------------------


def test_threshold_alerts_compare_exactly():
    scores = np.array([[0.1, -0.2, 0.5], [np.inf, -np.inf, 0.0]], np.float32)
    np.testing.assert_array_equal(alerts.threshold_alerts(scores, 0.1), scores >= np.float64(0.1))
    assert alerts.threshold_alerts(np.float32([0.1]), 0.1).tolist() == [True]  # float32 0.1 is above 0.1
    assert alerts.threshold_alerts(np.float32([0.1]), float(np.float32(0.1)) + 1e-12).tolist() == [False]
    assert alerts.threshold_alerts([3, 4], np.inf).tolist() == [False, False]
    assert alerts.threshold_alerts([-0.0, 0.0], 0.0).tolist() == [True, True]


@pytest.mark.parametrize("budget", [0.01, 0.07, 0.1, 1 / 3, 0.5, 0.9])
@pytest.mark.parametrize("with_history", [False, True])
def test_budget_alerts_follow_the_rule_with_ties_and_leading_axes(budget, with_history):
    rng = np.random.default_rng(int(budget * 1000) + with_history)
    for levels, n, dtype in [(3, 60, np.float32), (12, 150, np.float64), (1000, 120, np.float32), (4, 1, np.float64)]:
        scores = (rng.integers(-levels, levels, (2, 3, n)) / 4).astype(dtype)  # ties, -0.0, both signs
        history = rng.integers(-levels, levels, 37) / 4 if with_history else None
        got = alerts.budget_alerts(scores, budget, history=history)
        assert got.shape == scores.shape
        assert got.dtype == bool
        for index in np.ndindex(scores.shape[:-1]):
            expected = _budget_rule(scores[index], budget, () if history is None else history)
            np.testing.assert_array_equal(got[index], expected, err_msg=f"{index}, levels {levels}")


def test_budget_alerts_chunks_and_edge_cases(monkeypatch):
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 6, (7, 40)).astype(np.float32)
    whole = alerts.budget_alerts(scores, 0.2)
    monkeypatch.setattr(alerts, "_CHUNK", 45)  # one stream a chunk, then the rows split over workers
    np.testing.assert_array_equal(alerts.budget_alerts(scores, 0.2), whole)
    assert alerts.budget_alerts([0.5, 0.5, 0.5, 0.5], 0.01).tolist() == [False, True, True, True]  # ties: none greater
    assert alerts.budget_alerts([1.0, 2.0, 3.0, 4.0], 0.25).tolist() == [False, True, True, True]  # each a new top
    assert alerts.budget_alerts([4.0, 3.0, 2.0, 1.0], 0.99).tolist() == [False, False, False, False]
    assert alerts.budget_alerts([7.0], 0.5, history=[1.0, 9.0]).tolist() == [False]  # 1 greater, not < 1
    assert alerts.budget_alerts([9.0], 0.5, history=[1.0, 9.0]).tolist() == [True]
    assert alerts.budget_alerts(np.zeros((3, 0)), 0.1).shape == (3, 0)
    assert alerts.budget_alerts(np.arange(5), 0.5, history=np.array([], np.float64)).tolist() == [
        False,
        True,
        True,
        True,
        True,
    ]


def test_budget_alerts_alert_about_the_budget_on_a_stationary_stream():
    scores = np.random.default_rng(0).standard_normal((20, 20_000)).astype(np.float32)
    for budget in (0.01, 0.1):
        share = alerts.budget_alerts(scores, budget).mean()
        assert budget <= share < budget + (np.log(1 / budget) + np.log(20_000) / 2 + 1) / 20_000


def test_budget_alerts_refuse_bad_arguments_naming_them():
    with pytest.raises(ValueError, match=r"budget must be a share in \(0, 1\).*got 1\b"):
        alerts.budget_alerts([0.1, 0.2], 1)
    for bad in (0, 0.0, -0.1, 1.5, float("nan"), float("inf"), True, "0.1", None):
        with pytest.raises(ValueError, match="budget must be a share in"):
            alerts.budget_alerts([0.1, 0.2], bad)
    with pytest.raises(ValueError, match=r"history must be 1-D .*shape \(2, 2\)"):
        alerts.budget_alerts([0.1, 0.2], 0.1, history=np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"scores hold NaN \(1 of 4, the first at index \(1, 0\)\)"):
        alerts.budget_alerts([[0.1, 0.2], [np.nan, 0.3]], 0.1)
    with pytest.raises(ValueError, match="history hold NaN"):
        alerts.budget_alerts([0.1, 0.2], 0.1, history=[np.nan])
    with pytest.raises(ValueError, match="rounds along a last axis"):
        alerts.budget_alerts(0.5, 0.1)
    with pytest.raises(ValueError, match="scores must be real numbers, got dtype bool"):
        alerts.budget_alerts([True, False], 0.1)
    # every problem in one message
    with pytest.raises(ValueError, match="budget_alerts: budget must .*; history must be 1-D.*; scores hold NaN"):
        alerts.budget_alerts([np.nan], 2.0, history=[[1.0]])
    with pytest.raises(ValueError, match="threshold must be a number, got NaN"):
        alerts.threshold_alerts([0.1], float("nan"))
    with pytest.raises(ValueError, match="threshold_alerts: scores hold NaN"):
        alerts.threshold_alerts([np.nan], 0.0)
    with pytest.raises(ValueError, match="threshold must be a real number"):
        alerts.threshold_alerts([0.1], "0.5")


# -- a Result measured on its alerts -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scored(german):
    X, y = german
    learner = jcsol.by_name("ACOG-II-diag", eta=np.array([0.01, 0.1, 1.0]))
    return jcsol.run(learner, X, y, perms=3, record_scores=True, curve_points=9)


@pytest.mark.parametrize("rule", [{"budget": 0.05}, {"budget": 0.2}, {"threshold": 0.3}])
def test_alerted_counts_and_curves_are_those_of_the_alerts(scored, rule):
    res = alerts.alerted(scored, **rule)
    positive = np.asarray(scored.labels)[scored.orders] > 0  # (P, L)
    if "budget" in rule:
        rows = np.stack([[_budget_rule(s, rule["budget"]) for s in point] for point in scored.scores])
    else:
        rows = scored.scores >= rule["threshold"]
    expected = _counts_of(rows, positive)
    np.testing.assert_array_equal(res.counts, expected)
    assert res.counts.dtype == scored.counts.dtype
    assert res.curve.dtype == scored.curve.dtype
    assert res.curve.shape == scored.curve.shape
    for k, t in enumerate(scored.curve_t):
        np.testing.assert_array_equal(res.curve[..., k, :], _counts_of(rows[..., :t], positive[:, :t]))
    np.testing.assert_array_equal(res.curve[..., -1, :], res.counts)
    assert res.scores is scored.scores
    assert res.mistake_cost is None
    # every measure of counts reads the alerts
    tp, fp = expected[..., metrics.TP], expected[..., metrics.FP]
    np.testing.assert_allclose(res.precision, np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1), 0.0))
    np.testing.assert_allclose(res.sensitivity, tp / positive.sum(-1))
    np.testing.assert_allclose(res.curve_of("precision")[..., -1], res.precision)
    assert res.best("precision").index == (int(np.argmax(res.precision.mean(-1))),)
    with pytest.raises(ValueError, match="no example costs"):
        res.measure("example_cost")


def test_alerted_budget_keeps_about_its_share_and_refuses_what_it_cannot_measure(scored):
    res = alerts.alerted(scored, budget=0.1)
    flagged = res.counts[..., metrics.TP] + res.counts[..., metrics.FP]
    assert np.all(flagged < 0.2 * scored.orders.shape[1])
    with pytest.raises(ValueError, match="exactly one of threshold= or budget=, got both"):
        alerts.alerted(scored, threshold=0.0, budget=0.1)
    with pytest.raises(ValueError, match="exactly one of threshold= or budget=, got neither"):
        alerts.alerted(scored)
    with pytest.raises(ValueError, match=r"record_scores=True"):
        alerts.alerted(dataclasses.replace(scored, scores=None), budget=0.1)
    with pytest.raises(ValueError, match="no labels"):
        alerts.alerted(dataclasses.replace(scored, labels=None), budget=0.1)
    diverged = np.array(scored.scores)
    diverged[2, 1, 5] = np.nan
    with pytest.raises(ValueError, match=r"run\(s\) \(2, 1\) .*hold NaN"):
        alerts.alerted(dataclasses.replace(scored, scores=diverged), threshold=0.0)
    with pytest.raises(TypeError, match="takes a jcsol.Result"):
        alerts.alerted(scored.scores, budget=0.1)
    no_curves = alerts.alerted(dataclasses.replace(scored, curve=None, curve_t=None), budget=0.1)
    assert no_curves.curve is None
    np.testing.assert_array_equal(no_curves.counts, res.counts)


# -- roc_auc -------------------------------------------------------------------------------------------------


def test_roc_auc_matches_scikit_learn_per_run_with_ties():
    rng = np.random.default_rng(0)
    scores = np.round(rng.standard_normal((3, 4, 500)), 1).astype(np.float32)  # many ties
    y = np.where(rng.random((4, 500)) < 0.1 + 0.05 * scores[0], 1, -1)
    got = metrics.score_measure("roc_auc", scores, y)
    assert got.shape == (3, 4)
    assert got.dtype == np.float64
    for g, p in np.ndindex(3, 4):
        assert got[g, p] == pytest.approx(sk.roc_auc_score(y[p] > 0, scores[g, p]), rel=1e-6)
    one_class = metrics.score_measure("roc_auc", scores[:, :2], np.ones((2, 500)))
    assert np.isnan(one_class).all()


def test_roc_auc_is_a_measure_of_recorded_scores(scored):
    assert metrics.check_measure("roc_auc") == "roc_auc"
    assert metrics.of_scores("roc_auc")
    assert metrics.higher_is_better("roc_auc")
    assert metrics.in_percent("roc_auc")
    assert "roc_auc" in metrics.NAMED_SCORE_MEASURES
    assert "roc_auc" not in metrics.MEASURES
    values = scored.measure("roc_auc")
    labels = np.asarray(scored.labels)[scored.orders] > 0
    for g, p in np.ndindex(values.shape):
        assert values[g, p] == pytest.approx(sk.roc_auc_score(labels[p], scored.scores[g, p]), rel=1e-6)
    assert scored.best("roc_auc").index == (int(np.argmax(values.mean(-1))),)
    assert metrics.best_index([0.6, np.nan, 0.8], "roc_auc") == 2
    with pytest.raises(ValueError, match="roc_auc is a measure of the scores: it has no online curve"):
        scored.curve_of("roc_auc")
    with pytest.raises(ValueError, match="roc_auc is a measure of the scores, not of the confusion counts"):
        metrics.measure("roc_auc", [[1, 1, 1, 1]])
    with pytest.raises(ValueError, match="choose from .*average_precision, roc_auc"):
        metrics.check_measure("auc")


# -- payments ------------------------------------------------------------------------------------------------


def test_payments_are_deterministic_with_their_columns_and_fraud_share():
    pd = pytest.importorskip("pandas")
    frame = synthetic.payments(20_000, fraud=0.02, seed=4)
    pd.testing.assert_frame_equal(frame, synthetic.payments(20_000, fraud=0.02, seed=4))
    assert not frame.equals(synthetic.payments(20_000, fraud=0.02, seed=5))
    assert list(frame.columns) == ["payment_id", "ts", "amount", "merchant", "country", "device", "fraud"]
    assert frame.payment_id.is_unique
    assert frame.payment_id.is_monotonic_increasing
    moments = pd.to_datetime(frame.ts, format="%Y-%m-%dT%H:%M:%S")
    assert moments.is_monotonic_increasing
    assert moments.is_unique
    assert 28 <= (moments.iloc[-1] - moments.iloc[0]).days <= 30
    assert (frame.amount > 0).all()
    assert frame.amount.median() == pytest.approx(37, rel=0.15)
    assert set(frame.device) == set(synthetic.PAYMENT_DEVICES)
    assert set(frame.country) <= set(synthetic.PAYMENT_COUNTRIES)
    assert frame.merchant.nunique() > 100
    assert set(frame.fraud.unique()) == {0, 1}
    assert frame.fraud.mean() == pytest.approx(0.02, rel=0.15)
    assert synthetic.payments(50_000).fraud.mean() == pytest.approx(0.01, rel=0.15)
    night = moments.dt.hour < 6
    assert frame.fraud[night].mean() > 2 * frame.fraud[~night].mean()  # the night drives fraud
    with pytest.raises(ValueError, match="fraud must be a share in"):
        synthetic.payments(10, fraud=1.0)
    with pytest.raises(ValueError, match="n_rows must be a positive integer"):
        synthetic.payments(0)


def test_payments_encode_and_rank_moderately():
    pytest.importorskip("pandas")
    frame = synthetic.payments(20_000, seed=0)
    X, y, _ = jcsol.features.load_table(frame, "fraud", positive=1, drop=["payment_id"], datetime=["ts"], bits=16)
    res = jcsol.run(jcsol.by_name("COG-II", eta=np.array([0.01, 0.1])), X, y, perms=2, record_scores=True)
    auc = res.measure("roc_auc").mean(-1)
    assert 0.7 < auc.max() < 0.95, auc
