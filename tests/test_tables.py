"""Result.to_pandas / Result.to_json (jcsol.tables): long-format records, one per run and measure."""

import json
import sys

import numpy as np
import pytest

import jcsol
from jcsol import metrics, tables


@pytest.fixture(scope="module")
def grid_result(small):
    X, y = small
    learner = jcsol.COG(eta=np.array([[0.1], [1.0]]), loss="II")        # grid axis 0: eta
    objective = jcsol.Sum(alpha_p=np.array([[0.3, 0.5, 0.7]]))          # grid axis 1: alpha_p
    return jcsol.run(learner, X, y, perms=3, objective=objective, key=2)


@pytest.fixture(scope="module")
def small():
    X, y = jcsol.datasets.load("german")
    return X[:200], y[:200]


def test_records_are_one_per_run_and_measure(grid_result):
    res = grid_result
    records = tables.to_records(res)
    assert len(records) == 2 * 3 * 3 * len(metrics.MEASURES)
    assert list(records[0]) == ["learner", "eta", "alpha_p", "permutation", "measure", "value"]
    for r in records[:: 7]:
        i = [0.1, 1.0].index(r["eta"])
        j = [0.3, 0.5, 0.7].index(r["alpha_p"])
        expected = res.measure(r["measure"])[i, j, r["permutation"]]
        assert r["learner"] == "COG-II"
        assert r["value"] == pytest.approx(expected, nan_ok=True)


def test_to_pandas_groupby_is_the_table(grid_result):
    pd = pytest.importorskip("pandas")
    res = grid_result
    df = res.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["learner", "eta", "alpha_p", "permutation", "measure", "value"]
    assert len(df) == res.n_runs * len(metrics.MEASURES)
    means = df[df.measure == "sum"].groupby(["eta", "alpha_p"]).value.mean()
    np.testing.assert_allclose(means.to_numpy().reshape(2, 3), res.sum.mean(-1))
    # the sum's weight follows alpha_p, so the same counts give different sums across alpha_p
    assert means.loc[(1.0, 0.3)] != means.loc[(1.0, 0.7)]
    only = res.to_pandas(measures=["cost"])
    assert set(only.measure) == {"cost"} and len(only) == res.n_runs
    with pytest.raises(ValueError, match="unknown measure"):
        res.to_pandas(measures=["auc?"])


def test_to_json_has_records_and_metadata(grid_result):
    res = grid_result
    doc = json.loads(res.to_json(indent=1))
    assert doc["learner"]["name"] == "COG-II" and doc["learner"]["options"] == {"loss": "II"}
    assert doc["learner"]["hyperparameters"]["eta"] == [[0.1], [1.0]]
    assert doc["objective"]["type"] == "Sum" and doc["objective"]["options"] == {"rho": "offline"}
    assert doc["grid_shape"] == [2, 3] and doc["n_perms"] == 3 and doc["rounds"] == 200
    assert doc["timings"]["run_s"] == res.time_run and doc["timings"]["compile_s"] == res.time_compile
    assert doc["records"] == tables.to_records(res)


def test_json_is_strict_where_measures_are_undefined(small):
    X, y = small
    negatives = np.flatnonzero(y < 0)[:50]
    res = jcsol.run(jcsol.COG(), X, y, perms=negatives[None], objective=jcsol.Cost())
    assert np.isnan(res.sensitivity).all()
    text = res.to_json()

    def refuse(constant):
        raise AssertionError(f"non-standard JSON constant {constant}")

    doc = json.loads(text, parse_constant=refuse)
    sens = [r for r in doc["records"] if r["measure"] == "sensitivity"]
    assert sens and all(r["value"] is None for r in sens)
    spec = [r for r in doc["records"] if r["measure"] == "specificity"]
    assert spec[0]["value"] == pytest.approx(float(res.specificity[0]))


def test_to_pandas_without_pandas_says_so(grid_result, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="needs pandas"):
        grid_result.to_pandas()
    assert json.loads(grid_result.to_json())["records"]  # JSON needs nothing more
