"""What the command line prints says what happened: a single run shows no spread, the runs of the last call are
the call's, and a learner's name that needs its loss says so."""

import re

import numpy as np
from conftest import run_cli

import jcsol


def test_a_single_run_is_printed_without_a_spread(capsys):
    rc, out, _ = run_cli(["run", "--data", "german", "--learner", "COG-II", "--perms", "1", "--grid", "eta=1"], capsys)
    assert rc == 0
    X, y = jcsol.datasets.load("german")
    expected = 100 * float(np.ravel(jcsol.run(jcsol.COG(eta=1.0, loss="II"), X, y, perms=1).sum)[0])
    row = next(line for line in out.splitlines() if line.startswith("COG-II"))
    assert f"{expected:.3f}" in row
    assert "±" not in row


def test_the_json_summary_says_what_the_table_says(capsys, tmp_path):
    """The summary's mean is the runs' mean as the table prints it (NaN, written null, where a run's measure is
    undefined), and a single run has no spread (null), not 0."""
    import json

    out = tmp_path / "run.json"
    argv = ["run", "--data", "german", "--learner", "COG-II", "--perms", "1", "--grid", "eta=1", "--json", str(out)]
    rc, _, _ = run_cli(argv, capsys)
    assert rc == 0
    doc = json.loads(out.read_text())
    summary = doc["learners"]["COG-II"]
    assert summary["std"]["sum"] is None
    assert summary["mean"]["sum"] == doc["runs"][0]["sum"]


def test_the_runs_of_the_last_call_are_the_sweeps(capsys):
    """Selected without a re-run, the reported point comes from the sweep: its last call ran 11 η × 2 runs."""
    rc, _, err = run_cli(["run", "--data", "german", "--learner", "COG-II", "--perms", "2"], capsys)
    assert rc == 0
    assert re.search(r"COG-II: done in [\d.]+ s \(22 run\(s\) × 1,000 rounds in the last call\)", err), err
    rc, _, err = run_cli(["run", "--data", "german", "--learner", "COG-II", "--perms", "2", "--rerun"], capsys)
    assert rc == 0
    assert "(2 run(s) × 1,000 rounds in the last call)" in err  # the re-run of the chosen η


def test_a_name_that_needs_its_loss_says_how_to_complete_it(capsys):
    rc, _, err = run_cli(["run", "--data", "german", "--learner", "ACOG", "--perms", "2"], capsys)
    assert rc == 2
    assert "--learner ACOG needs its loss: --learner ACOG-I or ACOG-II, or --loss I|II beside it" in err
    rc, _, _ = run_cli(["run", "--data", "german", "--learner", "ACOG", "--loss", "II", "--perms", "2"], capsys)
    assert rc == 0
