"""The ``jcsol`` command: ``run`` with CSV, JSON and plots; ``reproduce``; one-line errors with exit status 2."""

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import DATA

import jcsol
from jcsol import cli


def test_run_writes_csv_json_and_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out_csv, out_json, stem = tmp_path / "runs.csv", tmp_path / "runs.json", tmp_path / "fig" / "curves"
    stem.parent.mkdir()
    rc = cli.main(
        [
            "run",
            "--learner",
            "COG-I",
            "ACOG-I",
            "--perms",
            "3",
            "--grid",
            "eta=1e-1:1e1",
            "--csv",
            str(out_csv),
            "--json",
            str(out_json),
            "--plot",
            str(stem),
            "--curve-points",
            "30",
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0
    with open(out_csv) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 3
    assert {r["learner"] for r in rows} == {"COG-I", "ACOG-I"}
    assert all(int(r["tp"]) + int(r["fn"]) + int(r["fp"]) + int(r["tn"]) == 1000 for r in rows)
    doc = json.loads(out_json.read_text())
    assert doc["perms"] == 3
    assert set(doc["learners"]) == {"COG-I", "ACOG-I"}
    for name, info in doc["learners"].items():
        eta = info["chosen"]["eta"]
        assert eta in (0.1, 1.0, 10.0)
        assert f"eta={eta:g}" in next(l for l in text.splitlines() if l.startswith(name))
        runs = [r for r in doc["runs"] if r["learner"] == name]
        assert info["mean"]["sum"] == pytest.approx(np.mean([r["sum"] for r in runs]))
        assert set(info["mean"]) == set(jcsol.metrics.MEASURES)
        assert all(m in runs[0] for m in jcsol.metrics.MEASURES)
        assert all(r["eta"] == eta for r in runs)
    # the selection is the papers': the best mean sum over the grid, same permutations
    X, y = jcsol.datasets.load("german")
    sweep = jcsol.run(jcsol.COG(eta=jcsol.decades(1e-1, 1e1)), X, y, perms=3)
    assert doc["learners"]["COG-I"]["chosen"]["eta"] == sweep.best("sum").params["eta"]
    assert (stem.parent / "curves.png").stat().st_size > 10_000
    assert (stem.parent / "curves.svg").exists()


def test_run_keeps_its_table_and_rerun_option(capsys):
    assert (
        cli.main(
            ["run", "--learner", "ACOG-I", "--perms", "2", "--grid", "eta=1,100", "--format", "markdown", "--rerun"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "| learner | hyperparameters | sum (%)" in out
    assert "re-run on fresh permutations" in out


def test_loss_option_picks_each_learners_variant(capsys):
    """``--learner ACOG --loss II`` (the issue's form) is ACOG-II; a loss named in the variant is overridden."""
    assert (
        cli.main(
            [
                "run",
                "--learner",
                "ACOG",
                "COG-I",
                "ACOG-I-diag",
                "--loss",
                "II",
                "--perms",
                "2",
                "--grid",
                "eta=1,10",
                "--format",
                "markdown",
            ]
        )
        == 0
    )
    rows = [
        [c.strip() for c in line.split("|")[1:-1]]
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("| ") and "---" not in line
    ]
    assert [r[0] for r in rows[1:]] == ["ACOG-II", "COG-II", "ACOG-II-diag"], rows
    X, y = jcsol.datasets.load("german")
    best = jcsol.run(jcsol.ACOG(loss="II", eta=np.array([1.0, 10.0])), X, y, perms=2).best("sum")
    assert rows[1][1].startswith(f"eta={best.params['eta']:g}"), (rows[1], best.params)
    assert rows[1][2].strip("*").startswith(f"{100 * best.result.sum.mean():.3f}"), (rows[1], best.result.sum)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--perms", "0"], "--perms"),
        (["run", "--perms", "many"], "invalid int"),
        (["run", "--objective", "accuracy"], "invalid choice"),
        (["run", "--nonsense"], "unrecognized arguments"),
        (["run", "--data", "no/such/file.svm"], "no dataset"),
        (["run", "--learner", "NoSuchLearner"], "unknown learner"),
        (["run", "--learner", "PA-I", "--loss", "II"], "PA-I has no cost-sensitive loss"),
        (["run", "--loss", "III"], "invalid choice"),
        (["run", "--grid", "eta"], "NAME=LO:HI"),
        (["run", "--alpha-p", "2"], "--alpha-p"),
        (["run", "--csv", "/no/such/folder/x.csv"], "does not exist"),
        (["reproduce", "999-table1"], "invalid choice"),
        (["reproduce", "acog-table2", "--data-dir", "/no/such/dir"], "--data-dir"),
        (["reproduce", "acog-table2", "--data-dir", ".", "--learners", "Nobody"], "Nobody"),
    ],
)
def test_errors_are_one_line_with_status_2(argv, message, capsys):
    try:
        rc = cli.main(argv)
    except SystemExit as exit_:  # argparse's own errors
        rc = exit_.code
    err = capsys.readouterr().err
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("jcsol: error: "), err
    assert message in lines[0], err


def test_reproduce_without_data_dir_names_the_option(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JCSOL_DATA", raising=False)
    assert cli.main(["reproduce", "acog-table2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jcsol: error:")
    assert "--data-dir" in err
    assert err.count("\n") == 1


def test_reproduce_with_missing_files_is_one_line(tmp_path, capsys):
    assert cli.main(["reproduce", "acog-table2", "--data-dir", str(tmp_path), "--datasets", "a9a"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "a9a" in err
    assert "missing" in err


def test_no_traceback_from_the_installed_command(tmp_path):
    """The real process: a bad option and missing data each give one stderr line and status 2."""
    env = {k: v for k, v in os.environ.items() if k != "JCSOL_DATA"}  # no data folder: reproduce must refuse
    for argv in (["run", "--perms", "-3"], ["reproduce", "acog-table2"]):
        done = subprocess.run(
            [sys.executable, "-m", "jcsol", *argv], capture_output=True, text=True, cwd=tmp_path, env=env
        )
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_reproduce_prints_paper_beside_jcsol(tmp_path, capsys, monkeypatch):
    from jcsol import algorithms

    if not DATA.exists():
        pytest.skip(f"{DATA} not available")
    monkeypatch.delitem(algorithms.VARIANTS, "COG-II")
    out_json = tmp_path / "rep.json"
    rc = cli.main(
        [
            "reproduce",
            "acog-table3",
            "--data-dir",
            str(DATA),
            "--datasets",
            "german",
            "--learners",
            "ACOG-I",
            "COG-II",
            "--folds",
            "3",
            "--json",
            str(out_json),
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    line = next(l for l in out.splitlines() if l.startswith("german") and "ACOG-I" in l)
    assert "62.954" in line  # the ACOG paper's Table III, german, ACOG-I
    note = next(l for l in out.splitlines() if "not registered in jcsol.VARIANTS" in l)
    assert note.startswith("note: skipped")
    assert "COG-II" in note
    assert "3 folds" in out
    doc = json.loads(out_json.read_text())
    (row,) = doc["rows"]
    assert row["learner"] == "ACOG-I"
    assert row["paper"] == 62.954
    assert row["diff"] == pytest.approx(row["mean"] - 62.954)
    assert f"{row['mean']:.3f} ± {row['std']:.3f}" in line


def _table_csv(path, n=300, seed=0):
    """A labelled table with numeric and categorical columns, the positives tied to a country and the amount."""
    rng = np.random.default_rng(seed)
    country = rng.choice(["US", "FR", "DE", "BR"], n)
    amount = rng.lognormal(3, 1, n)
    fraud = np.where((country == "BR") & (amount > 15) | (rng.random(n) < 0.03), "yes", "no")
    path.write_text(
        "amount,hour,country,device,fraud\n"
        + "".join(
            f"{a:.4f},{h},{c},{d},{f}\n"
            for a, h, c, d, f in zip(amount, rng.integers(0, 24, n), country, rng.integers(0, 5, n), fraud)
        )
    )
    return path


def test_run_on_a_csv_table_equals_the_python_run(tmp_path, capsys):
    """``--data FILE.csv --label COLUMN``: the rows of jcsol.features.load_table, the selection of jcsol.run."""
    from jcsol.features import load_table

    csv_path, out_json = _table_csv(tmp_path / "pay.csv"), tmp_path / "out.json"
    assert (
        cli.main(
            [
                "run",
                "--data",
                str(csv_path),
                "--label",
                "fraud",
                "--positive",
                "yes",
                "--categorical",
                "country,device",
                "--numeric",
                "amount,hour",
                "--bits",
                "10",
                "--learner",
                "COG-I",
                "--perms",
                "3",
                "--grid",
                "eta=1e-1:1e1",
                "--json",
                str(out_json),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "300 examples × 1024 features" in out
    X, y, enc = load_table(
        csv_path, "fraud", positive="yes", categorical=["country", "device"], numeric=["amount", "hour"], bits=10
    )
    assert enc.numeric == ("amount", "hour")
    assert enc.categorical == ("country", "device")
    best = jcsol.run(jcsol.COG(eta=jcsol.decades(1e-1, 1e1)), X, y, perms=3).best("sum")
    doc = json.loads(out_json.read_text())
    assert doc["positives"] == int((y > 0).sum()) > 0
    assert doc["features"] == 1024
    assert doc["learners"]["COG-I"]["chosen"]["eta"] == best.params["eta"]
    assert doc["learners"]["COG-I"]["mean"]["sum"] == pytest.approx(float(best.result.sum.mean()), abs=1e-6)
    # columns inferred (numeric dtypes numeric), 2**18 slots and ACOG's diagonal variants by default (its full
    # covariance would be 2**18 × 2**18)
    assert cli.main(["run", "--data", str(csv_path), "--label", "fraud", "--positive", "yes", "--perms", "2"]) == 0
    out = capsys.readouterr().out
    assert "300 examples × 262144 features" in out
    assert [line.split()[0] for line in out.splitlines()[-4:]] == cli.DEFAULT_TABLE_LEARNERS


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "is a table: name its label column with --label COLUMN"),
        (["--label", "fraud"], "pass positive=<value>"),
        (["--label", "nope"], "label column 'nope' not in the table"),
        (["--label", "fraud", "--positive", "yes", "--numeric", "amount,zz"], "column(s) ['zz'] not in the table"),
        (
            ["--label", "fraud", "--positive", "yes", "--numeric", "country"],
            "numeric column 'country' holds the non-numeric value",
        ),
        (["--label", "fraud", "--positive", "maybe"], "positive=['maybe']: not in the label column 'fraud'"),
        (["--label", "fraud", "--bits", "31"], "--bits must be in [1, 30]"),
        (["--label", "fraud", "--categorical", "a,,b"], "column names separated by commas"),
    ],
)
def test_table_errors_are_one_line(tmp_path, extra, message, capsys):
    csv_path = _table_csv(tmp_path / "pay.csv", n=40)
    try:
        rc = cli.main(["run", "--data", str(csv_path), "--learner", "COG-I", "--perms", "1", *extra])
    except SystemExit as exit_:
        rc = exit_.code
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1, err
    assert err.startswith("jcsol: error: "), err
    assert message in err, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--data", "german", "--label", "y"], "--label is for a table"),
        (["run", "--data", "german", "--bits", "8"], "--bits: only for a table"),
        (["run", "--data", "german", "--positive", "bad"], "LIBSVM labels are numbers"),
    ],
)
def test_table_options_on_libsvm_data_are_refused(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert message in err, err


def test_positive_still_picks_a_libsvm_class(capsys):
    """``--positive`` (now text) is read as a number for LIBSVM data: german's +1 class named as 1."""
    assert (
        cli.main(
            ["run", "--data", "german", "--positive", "1", "--learner", "COG-I", "--perms", "1", "--grid", "eta=1"]
        )
        == 0
    )
    assert "1000 examples × 24 features, 300 positive" in capsys.readouterr().out
