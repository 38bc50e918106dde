"""``jcsol run --save`` and ``jcsol score``: a model learnt on every row in the file's order, saved with the table's
encoder or the LIBSVM rows' preparation, and a CSV of every new row's score and alert; refusals leave no output."""

import csv
import importlib.resources

import numpy as np
import pytest
from conftest import run_cli

import jcsol
from jcsol.datasets import SHIPPED

pd = pytest.importorskip("pandas")


def payments(n: int, first_id: int, seed: int) -> "pd.DataFrame":
    rng = np.random.default_rng(seed)
    amount = rng.lognormal(3.0, 1.0, n)
    country = rng.choice(["FR", "DE", "US"], n)
    start = np.datetime64("2024-03-01T00:00")
    ts = start + rng.integers(0, 60 * 24 * 30, n).astype("timedelta64[m]")
    return pd.DataFrame(
        {
            "payment_id": np.arange(first_id, first_id + n),
            "ts": [str(t) for t in ts],
            "amount": amount,
            "merchant": rng.choice(["m1", "m2", "m3", "m4"], n),
            "country": country,
            "fraud": np.where((amount > 40) & (country == "US") | (rng.random(n) < 0.03), 1, 0),
        }
    )


def read_csv(path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def table_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("table")
    data, model = folder / "pay.csv", folder / "model.npz"
    payments(400, 0, 0).to_csv(data, index=False)
    argv = ["run", "--data", str(data), "--label", "fraud", "--drop", "payment_id", "--datetime", "ts"]
    argv += ["--learner", "COG-II", "ACOG-II-diag", "--grid", "eta=0.1,10", "--bits", "10", "--perms", "2"]
    argv += ["--save", str(model)]
    return folder, data, model, argv


def test_run_saves_the_best_learner_learnt_in_file_order_with_its_encoder(table_model, capsys):
    folder, data, model, argv = table_model
    rc, out, err = run_cli(argv, capsys)
    assert rc == 0, err
    line = out.strip().splitlines()[-1]
    assert line.startswith("saved ")
    assert "learnt on all 400 rows in the file's order" in line
    assert str(model) in line
    saved = jcsol.load(model)
    assert saved.grid_shape == ()
    assert saved.encoder is not None
    assert saved.rows is None
    assert saved.provenance["order"] == "the stream's own"
    assert saved.provenance["measure"] == "sum"
    assert saved.history.shape == (400,)
    # the same configuration learnt on the same rows by jcsol.run, in the file's order
    X, y, encoder = jcsol.features.load_table(str(data), "fraud", drop=["payment_id"], datetime=["ts"], bits=10)
    name = line.split()[1]
    learner = jcsol.by_name(name).replace(eta=saved.params["eta"])
    res = jcsol.run(learner, X, y, perms="stream", record_scores=True)
    assert np.array_equal(saved.history, res.scores[0])
    assert np.array_equal(saved.scores(X[:50]), res.score(X[:50])[0])


def test_score_writes_every_rows_score_and_alert_with_its_ids(table_model, capsys):
    folder, data, model, argv = table_model
    if not model.exists():
        assert run_cli(argv, capsys)[0] == 0
    new = payments(120, 10_000, 1)
    new_path, out = folder / "new.csv", folder / "scores.csv"
    new.to_csv(new_path, index=False)
    saved = jcsol.load(model)
    expected = saved.scores(jcsol.features.read_table(new_path))

    rc, text, err = run_cli(["score", "--model", str(model), "--data", str(new_path), "--out", str(out)], capsys)
    assert rc == 0, err
    rows = read_csv(out)
    assert list(rows[0]) == ["row", "score", "alert"]
    assert [r["row"] for r in rows] == [str(i) for i in range(120)]
    scores = np.array([float(r["score"]) for r in rows], np.float32)
    assert np.array_equal(scores, expected)  # every digit written
    alerts = np.array([r["alert"] == "1" for r in rows])
    assert np.array_equal(alerts, expected >= 0.0)
    assert f"scored 120 rows with {saved.learner_name}: {alerts.sum():,} alerts (score >= 0)" in text

    argv = ["score", "--model", str(model), "--data", str(new_path), "--out", str(out), "--id", "payment_id,ts"]
    rc, text, err = run_cli([*argv, "--threshold", "0.2"], capsys)
    assert rc == 0, err
    rows = read_csv(out)
    assert list(rows[0]) == ["payment_id", "ts", "score", "alert"]
    assert [r["payment_id"] for r in rows] == [str(i) for i in new["payment_id"]]
    assert [r["ts"] for r in rows] == list(new["ts"])
    assert np.array_equal([r["alert"] == "1" for r in rows], expected >= 0.2)

    from jcsol.alerts import budget_alerts

    for budget, share in (("5%", 0.05), ("0.05", 0.05), ("20%", 0.2)):
        rc, text, err = run_cli([*argv, "--budget", budget], capsys)
        assert rc == 0, err
        alerts = np.array([r["alert"] == "1" for r in read_csv(out)])
        assert np.array_equal(alerts, budget_alerts(expected, share, history=saved.history))
        assert f"budget {100 * share:g}% of the rows" in text


def test_a_libsvm_model_scores_a_libsvm_file(tmp_path, capsys):
    data = tmp_path / "german.gz"  # the shipped file itself
    source = importlib.resources.files("jcsol.datasets").joinpath("data", SHIPPED["german"].file)
    data.write_bytes(source.read_bytes())
    model, out = tmp_path / "german.npz", tmp_path / "scores.csv"
    argv = ["run", "--data", "german", "--learner", "ACOG-II", "--grid", "eta=1,10", "--perms", "2", "--bias"]
    rc, text, err = run_cli([*argv, "--all", "--save", str(model)], capsys)
    assert rc == 0, err
    assert "its whole grid of 2 configurations" in text.splitlines()[-1]
    grid = jcsol.load(model)
    assert grid.grid_shape == (2,)
    assert grid.rows == {"normalize": True, "bias": True}
    assert grid.n_features == 25
    rc, text, err = run_cli([*argv, "--save", str(model)], capsys)
    assert rc == 0, err
    saved = jcsol.load(model)
    assert saved.grid_shape == ()
    assert saved.params["eta"] in (1.0, 10.0)
    X, _ = jcsol.datasets.load(data, bias=True, n_features=24)
    expected = saved.scores(X)
    # the grid's run of that configuration (its own compiled program: the same values, not the same last bits)
    np.testing.assert_allclose(expected, grid.at(int(saved.params["eta"] == 10.0)).scores(X), rtol=1e-3, atol=1e-3)

    rc, text, err = run_cli(["score", "--model", str(model), "--data", str(data), "--out", str(out)], capsys)
    assert rc == 0, err
    rows = read_csv(out)
    assert len(rows) == 1000
    assert rows[-1]["row"] == "999"
    assert np.array_equal(np.array([float(r["score"]) for r in rows], np.float32), expected)

    rc, text, err = run_cli(
        ["score", "--model", str(tmp_path / "grid.npz"), "--data", str(data), "--out", str(out)], capsys
    )
    assert rc == 2
    assert "no such file" in err
    grid.save(tmp_path / "grid.npz")
    rc, text, err = run_cli(
        ["score", "--model", str(tmp_path / "grid.npz"), "--data", str(data), "--out", str(out), "--threshold", "0.1"],
        capsys,
    )
    assert rc == 0, err
    rows = read_csv(out)
    assert list(rows[0]) == ["row", "score[eta=1]", "alert[eta=1]", "score[eta=10]", "alert[eta=10]"]
    scores = grid.scores(X)
    for k, eta in enumerate(("1", "10")):
        assert np.array_equal(np.array([float(r[f"score[eta={eta}]"]) for r in rows], np.float32), scores[k])
        assert np.array_equal([r[f"alert[eta={eta}]"] == "1" for r in rows], scores[k] >= 0.1)


def test_refusals_leave_no_output(table_model, tmp_path, capsys):
    folder, data, model, argv = table_model
    if not model.exists():
        assert run_cli(argv, capsys)[0] == 0
    out = tmp_path / "scores.csv"
    libsvm = tmp_path / "rows.txt"
    libsvm.write_text("1 1:0.5 3:1\n-1 2:1\n")
    live_path = tmp_path / "live.npz"
    live = jcsol.Live(jcsol.COG(eta=1.0), n_features=3)
    live.learn(np.eye(3, dtype=np.float32), [1, -1, -1])
    live.save(live_path)
    cases = [
        (["--model", str(model), "--data", str(data), "--out", str(data)], "would overwrite"),
        (["--model", str(model), "--data", str(data), "--out", str(model)], "would overwrite"),
        (["--model", str(model), "--data", str(libsvm), "--out", str(out)], "model encodes tables"),
        (["--model", str(model), "--data", str(data), "--out", str(out), "--id", "nope"], "--id nope: no such column"),
        (["--model", str(model), "--data", str(data), "--out", str(out), "--id", "score"], "a score column of its own"),
        (["--model", str(data), "--data", str(data), "--out", str(out)], "not a readable jcsol model file"),
        (["--model", str(live_path), "--data", str(libsvm), "--out", str(out)], "live learner's file"),
        (["--model", str(model), "--data", str(data), "--out", str(tmp_path / "no" / "x.csv")], "does not exist"),
        (["--model", str(model), "--data", str(data), "--out", str(out), "--budget", "0%"], "share of rows"),
        (["--model", str(model), "--data", str(data), "--out", str(out), "--budget", "1.5"], "share of rows"),
        (
            ["--model", str(model), "--data", str(data), "--out", str(out), "--budget", "1%", "--threshold", "0"],
            "not allowed",
        ),
    ]
    for extra, message in cases:
        rc, _, err = run_cli(["score", *extra], capsys)
        assert rc == 2, (extra, err)
        assert err.startswith("jcsol: error: "), err
        assert message in err, (extra, err)
        assert not out.exists()
    rows_model = tmp_path / "rows.npz"
    jcsol.run(jcsol.COG(eta=1.0), np.eye(3, dtype=np.float32), [1, -1, -1], perms="stream").model().save(rows_model)
    rc, _, err = run_cli(["score", "--model", str(rows_model), "--data", str(data), "--out", str(out)], capsys)
    assert rc == 2
    assert "without a table encoder" in err
    rc, _, err = run_cli(["score", "--model", str(rows_model), "--data", str(libsvm), "--out", str(out)], capsys)
    assert rc == 2
    assert "does not say how its rows were prepared" in err
    assert not out.exists()

    # jcsol run --save: refused before any data is read
    saved = tmp_path / "m.npz"
    for extra, message in (
        (["--save", str(data)], "would overwrite"),
        (["--save", str(tmp_path / "no" / "m.npz")], "does not exist"),
        (["--save", str(saved), "--all"], "--save with --all saves one learner's whole grid"),
        (["--save", str(saved), "--csv", str(saved)], "name the same file"),
    ):
        rc, printed, err = run_cli([*argv[: argv.index("--save")], *extra], capsys)
        assert rc == 2, (extra, err)
        assert message in err, (extra, err)
        assert "columns:" not in printed  # the table was never read
    assert not saved.exists()
