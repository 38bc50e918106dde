"""``jcsol run --delay``, ``--time-column``, ``--budget``, ``--threshold``, ``--select``, and the table of imbalanced
rows: each equal to the library call it stands for, and refused before any data is read where it cannot run."""

import json

import numpy as np
import pytest
from conftest import run_cli

import jcsol
from jcsol import alerts
from jcsol.protocols import select_and_rerun

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def payments_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("late") / "pay.csv"
    jcsol.datasets.synthetic.payments(3000, fraud=0.03, seed=1).to_csv(path, index=False)
    return path


TABLE = ["--label", "fraud", "--positive", "1", "--drop", "payment_id", "--datetime", "ts", "--bits", "10"]


def _encoded(path):
    """The table's rows and labels as ``TABLE``'s options encode them, through the library."""
    X, y, _ = jcsol.features.load_table(str(path), "fraud", positive=[1], drop=["payment_id"], datetime=["ts"], bits=10)
    return X, y


def _summary(path) -> dict:
    return json.loads(path.read_text())["learners"]


def test_delay_in_rows_is_the_library_run(tmp_path, capsys):
    out = tmp_path / "late.json"
    argv = ["run", "--data", "german", "--learner", "COG-II", "--perms", "2", "--grid", "eta=0.1,1,10"]
    rc, text, err = run_cli([*argv, "--delay", "40", "--json", str(out)], capsys)
    assert rc == 0, err
    assert "labels learnt 40 rows after their rows (--delay)" in text
    X, y = jcsol.datasets.load("german")
    sel = select_and_rerun(
        jcsol.by_name("COG-II"), X, y, grid={"eta": np.array([0.1, 1.0, 10.0])}, perms=2, rerun=False, delay=40
    )
    summary = _summary(out)["COG-II"]
    assert summary["chosen"] == {"eta": sel.chosen["eta"]}
    assert summary["mean"]["sum"] == pytest.approx(float(sel.result.sum.mean()), abs=1e-12)


def test_imbalanced_rows_show_the_ranking_and_select_by_average_precision(payments_csv, tmp_path, capsys):
    out = tmp_path / "ranked.json"
    argv = ["run", "--data", str(payments_csv), *TABLE, "--learner", "COG-II", "--perms", "2", "--grid", "eta=0.1,10"]
    rc, text, err = run_cli([*argv, "--json", str(out)], capsys)
    assert rc == 0, err
    for column in ("ROC AUC (%)", "AP (%)", "precision top 1% (%)"):
        assert column in text
    assert "hyperparameters selected by mean average_precision" in text
    X, y = _encoded(payments_csv)
    sweep = jcsol.run(jcsol.grid(jcsol.by_name("COG-II"), eta=[0.1, 10.0]), X, y, perms=2, record_scores=True)
    best = float(np.asarray([0.1, 10.0])[int(np.argmax(sweep.average_precision.mean(axis=-1)))])
    assert _summary(out)["COG-II"]["chosen"] == {"eta": best}
    rc, text, err = run_cli([*argv, "--select", "sum"], capsys)
    assert rc == 0, err
    assert "hyperparameters selected by mean sum" in text


def test_budget_counts_the_alerts_of_the_library(payments_csv, tmp_path, capsys):
    out = tmp_path / "budget.json"
    argv = ["run", "--data", str(payments_csv), *TABLE, "--learner", "COG-II", "--all", "--grid", "eta=1"]
    rc, text, err = run_cli([*argv, "--perms", "2", "--budget", "5%", "--json", str(out)], capsys)
    assert rc == 0, err
    assert "alerts: the top 0.05 of the scores so far (--budget)" in text
    X, y = _encoded(payments_csv)
    res = alerts.alerted(jcsol.run(jcsol.COG(eta=1.0, loss="II"), X, y, perms=2, record_scores=True), budget=0.05)
    mean = _summary(out)["COG-II"]["mean"]
    assert mean["precision"] == pytest.approx(float(res.precision.mean()), abs=1e-12)
    assert mean["sensitivity"] == pytest.approx(float(res.sensitivity.mean()), abs=1e-12)


def test_delay_by_time_is_the_library_run(payments_csv, tmp_path, capsys):
    out = tmp_path / "week.json"
    argv = ["run", "--data", str(payments_csv), *TABLE, "--learner", "COG-II", "--all", "--grid", "eta=1"]
    argv += ["--order", "file", "--delay", "2d", "--time-column", "ts", "--json", str(out)]
    rc, text, err = run_cli(argv, capsys)
    assert rc == 0, err
    frame = pd.read_csv(payments_csv)
    times = pd.to_datetime(frame["ts"]).to_numpy("datetime64[ns]")
    X, y, _ = jcsol.features.load_table(frame, "fraud", positive=[1], drop=["payment_id"], datetime=["ts"], bits=10)
    res = jcsol.run(jcsol.COG(eta=1.0, loss="II"), X, y, perms="stream", delay=np.timedelta64(2, "D"), times=times)
    assert _summary(out)["COG-II"]["mean"]["sum"] == pytest.approx(float(res.sum.mean()), abs=1e-12)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--delay", "5d"], "a duration with --time-column"),
        (["--delay", "-3"], "--delay must be >= 0 rows"),
        (["--time-column", "ts"], "give --delay DURATION too"),
        (["--delay", "1d", "--time-column", "ts"], "is not one"),
        (["--budget", "0%"], "share of rows in (0, 1)"),
        (["--budget", "1%", "--threshold", "0.5"], "not allowed with argument"),
        (["--select", "nonsense"], "nonsense"),
    ],
)
def test_refusals_before_any_data_is_read(extra, message, capsys):
    rc, _, err = run_cli(["run", "--data", "german", "--perms", "2", *extra], capsys)
    assert rc == 2
    assert message in err
    assert "Traceback" not in err


def test_time_column_needs_the_file_order(payments_csv, capsys):
    argv = ["run", "--data", str(payments_csv), *TABLE, "--delay", "1d", "--time-column", "ts"]
    rc, _, err = run_cli(argv, capsys)
    assert rc == 2
    assert "give --order file" in err


def test_threshold_counts_the_alerts_of_the_library(payments_csv, tmp_path, capsys):
    out = tmp_path / "threshold.json"
    argv = ["run", "--data", str(payments_csv), *TABLE, "--learner", "COG-II", "--all", "--grid", "eta=1"]
    rc, text, err = run_cli([*argv, "--perms", "2", "--threshold", "0.25", "--json", str(out)], capsys)
    assert rc == 0, err
    assert "alerts: scores >= 0.25 (--threshold)" in text
    X, y = _encoded(payments_csv)
    res = jcsol.run(jcsol.COG(eta=1.0, loss="II"), X, y, perms=2, record_scores=True)
    scores, labels = res.scores, y[res.orders] > 0
    alerted = scores >= 0.25
    precision = (alerted & labels).sum(axis=-1) / alerted.sum(axis=-1)  # a NumPy count of the alerts
    assert _summary(out)["COG-II"]["mean"]["precision"] == pytest.approx(float(precision.mean()), abs=1e-12)
