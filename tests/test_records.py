"""Results as data (jcsol.report.records): one flat record per run, pandas, CSV and strict JSON."""

import csv
import json
import sys

import numpy as np
import pytest

import jcsol
from jcsol import metrics, report


@pytest.fixture(scope="module")
def small():
    X, y = jcsol.datasets.load("german")
    return X[:200], y[:200]


@pytest.fixture(scope="module")
def grid_result(small):
    X, y = small
    learner = jcsol.COG(eta=np.array([[0.1], [1.0]]), loss="II")  # grid axis 0: eta
    objective = jcsol.Sum(alpha_p=np.array([[0.3, 0.5, 0.7]]))  # grid axis 1: alpha_p
    return jcsol.run(learner, X, y, perms=3, objective=objective, key=2)


def test_records_are_one_per_run_with_counts_and_every_measure(grid_result):
    res = grid_result
    records = report.records(res)
    assert len(records) == 2 * 3 * 3
    assert list(records[0]) == [
        "learner",
        "eta",
        "alpha_p",
        "permutation",
        "tp",
        "fn",
        "fp",
        "tn",
        *metrics.MEASURES,
        "time_per_run",
    ]
    for r in records[::5]:
        i, j, p = [0.1, 1.0].index(r["eta"]), [0.3, 0.5, 0.7].index(r["alpha_p"]), r["permutation"]
        assert r["learner"] == "COG-II"
        assert [r[k] for k in ("tp", "fn", "fp", "tn")] == res.counts[i, j, p].tolist()
        for m in metrics.MEASURES:
            assert r[m] == pytest.approx(float(res.measure(m)[i, j, p]), nan_ok=True)
    only = report.records(res, measures=["cost"])
    assert "cost" in only[0]
    assert "sum" not in only[0]
    with pytest.raises(ValueError, match="unknown measure 'auc'; choose from sum, sensitivity"):
        report.records(res, measures=["auc"])


def test_records_of_several_results_share_their_columns(small):
    X, y = small
    runs = {
        "COG-I": jcsol.run(jcsol.COG(eta=1.0), X, y, perms=3),
        "ACOG-I": jcsol.run(jcsol.ACOG(eta=10.0), X, y, perms=3),
    }
    recs = report.records(runs)
    assert len(recs) == 2 * 3
    assert all(list(r) == list(recs[0]) for r in recs)  # gamma is None for COG
    assert recs[0]["gamma"] is None
    assert recs[3]["gamma"] == 1.0
    for r in recs:
        res = runs[r["learner"]]
        assert r["tp"] + r["fn"] + r["fp"] + r["tn"] == res.orders.shape[1]
        assert r["sum"] == pytest.approx(float(res.sum[r["permutation"]]))
    best = runs["ACOG-I"].best("sum")
    assert report.records(best) == report.records(runs["ACOG-I"])  # a Best is its result


def test_to_pandas_groupby_is_the_table(grid_result):
    pd = pytest.importorskip("pandas")
    res = grid_result
    df = report.to_pandas(res)
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == list(report.records(res)[0])
    assert len(df) == res.n_runs
    means = df.groupby(["eta", "alpha_p"])["sum"].mean()
    np.testing.assert_allclose(means.to_numpy().reshape(2, 3), res.sum.mean(-1))
    # the sum's weight follows alpha_p, so the same counts give different sums across alpha_p
    assert means.loc[(1.0, 0.3)] != means.loc[(1.0, 0.7)]
    with pytest.raises(ValueError, match="unknown measure"):
        report.to_pandas(res, measures=["auc?"])


def test_to_pandas_without_pandas_says_so(grid_result, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="needs pandas"):
        report.to_pandas(grid_result)
    report.write_json(grid_result, tmp_path / "runs.json")  # JSON needs nothing more
    assert json.loads((tmp_path / "runs.json").read_text())["records"]


def test_write_csv_round_trips_records(grid_result, tmp_path):
    recs = report.records(grid_result)
    path = tmp_path / "runs.csv"
    report.write_csv(recs, path)
    with open(path) as fh:
        back = list(csv.DictReader(fh))
    assert len(back) == len(recs)
    assert list(back[0]) == list(recs[0])
    assert float(back[4]["sum"]) == pytest.approx(recs[4]["sum"])
    assert int(back[4]["tp"]) == recs[4]["tp"]


def test_write_json_writes_a_result_as_its_records_and_metadata(grid_result, tmp_path):
    res = grid_result
    report.write_json({"german": res, "note": "two results"}, tmp_path / "doc.json")
    doc = json.loads((tmp_path / "doc.json").read_text())
    run = doc["german"]
    assert doc["note"] == "two results"
    assert run["learner"]["name"] == "COG-II"
    assert run["learner"]["options"] == {"loss": "II"}
    assert run["learner"]["hyperparameters"]["eta"] == [[0.1], [1.0]]
    assert run["objective"]["type"] == "Sum"
    assert run["objective"]["options"] == {"rho": "offline"}
    assert run["grid_shape"] == [2, 3]
    assert run["n_perms"] == 3
    assert run["rounds"] == 200
    assert run["timings"]["run_s"] == res.time_run
    assert run["timings"]["compile_s"] == res.time_compile
    strict = lambda v: None if isinstance(v, float) and not np.isfinite(v) else v  # e.g. alerts per catch of 0 tp
    assert run["records"] == [{k: strict(v) for k, v in r.items()} for r in report.records(res)]
    assert any(r["alerts_per_catch"] is None for r in run["records"])  # a run that caught nothing: infinite


def test_json_is_strict_where_measures_are_undefined(small, tmp_path):
    X, y = small
    negatives = np.flatnonzero(y < 0)[:50]
    res = jcsol.run(jcsol.COG(), X, y, perms=negatives[None], objective=jcsol.Cost())
    assert np.isnan(res.sensitivity).all()
    report.write_json({"run": res, "x": float("nan"), "a": np.arange(3), "f": np.float32(1.5)}, tmp_path / "d.json")

    def refuse(constant):
        raise AssertionError(f"non-standard JSON constant {constant}")

    doc = json.loads((tmp_path / "d.json").read_text(), parse_constant=refuse)
    assert doc["x"] is None
    assert doc["a"] == [0, 1, 2]
    assert doc["f"] == 1.5
    (record,) = doc["run"]["records"]
    assert record["sensitivity"] is None
    assert record["specificity"] == pytest.approx(float(res.specificity[0]))
