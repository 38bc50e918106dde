"""``jcsol run --order file``: the prequential evaluation in the file's own order, one run per grid point."""

import json

import numpy as np
import pytest
from conftest import run_cli

import jcsol

GRID = ["--grid", "eta=1e-1:1e1"]


@pytest.fixture(scope="module")
def german():
    return jcsol.datasets.load("german")


def test_order_file_equals_the_run_in_the_streams_order_bit_for_bit(german, tmp_path, capsys):
    X, y = german
    order = np.arange(len(y))[None]
    learner = jcsol.COG(eta=jcsol.decades(1e-1, 1e1), loss="I")
    expected = jcsol.run(learner, X, y, perms=order, record_scores=True)
    out_json = tmp_path / "all.json"
    argv = ["run", "--data", "german", "--learner", "COG-I", *GRID, "--order", "file"]
    rc, out, err = run_cli([*argv, "--all", "--json", str(out_json)], capsys)
    assert rc == 0, err
    doc = json.loads(out_json.read_text())
    assert doc["order"] == "file"
    assert doc["perms"] is None
    runs = doc["runs"]
    assert [r["eta"] for r in runs] == [0.1, 1.0, 10.0]
    assert {r["permutation"] for r in runs} == {0}
    counts = np.array([[r[k] for k in ("tp", "fn", "fp", "tn")] for r in runs])
    np.testing.assert_array_equal(counts, expected.counts[:, 0])
    assert [r["sum"] for r in runs] == expected.sum[:, 0].tolist()  # the same floats, not only close ones

    out_json = tmp_path / "selected.json"
    rc, out, err = run_cli([*argv, "--json", str(out_json)], capsys)
    assert rc == 0, err
    best = expected.best("sum")
    (run,) = json.loads(out_json.read_text())["runs"]
    assert run["eta"] == best.params["eta"]
    assert [run[k] for k in ("tp", "fn", "fp", "tn")] == best.result.counts[0].tolist()
    assert "1000 examples × 24 features" in out
    assert "the file's order, one run per grid point" in out
    lines = err.splitlines()  # the rounds seen, chunk by chunk, then the learner's end
    leading = 100 * np.nanmax(expected.sum)  # the running sum of the grid point that leads, after the one chunk
    assert lines[0] == f"jcsol: COG-I: 1,000 of 1,000 rounds, running sum {leading:.2f} % (the best of 3 grid points)"
    assert lines[1].startswith("jcsol: COG-I: done in")

    # the progressive sum printed at 10 rounds, against the pre-update scores' counts summed by NumPy
    lines = out.splitlines()
    at = lines.index("progressive sum (%) in the file's order, each learner's selected configuration:")
    assert lines[at + 1].split() == ["rounds", "COG-I"]
    rows = [line.split() for line in lines[at + 2 : at + 12]]
    rounds = np.arange(100, 1001, 100)
    assert [int(r[0].replace(",", "")) for r in rows] == rounds.tolist()
    predicted = np.where(expected.scores[best.index][0] >= 0, 1, -1)
    tp = np.cumsum((predicted == 1) & (y == 1))[rounds - 1]
    tn = np.cumsum((predicted == -1) & (y == -1))[rounds - 1]
    positives, negatives = np.cumsum(y == 1)[rounds - 1], np.cumsum(y == -1)[rounds - 1]
    running_sum = 100 * (0.5 * tp / positives + 0.5 * tn / negatives)
    np.testing.assert_allclose([float(r[1]) for r in rows], running_sum, rtol=0, atol=5e-4 + 1e-9)  # 3 decimals


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--perms", "3"], "--order file runs the rows once, in the file's order: leave out --perms"),
        (["--rerun"], "--rerun runs the selected values on fresh permutations; --order file has none"),
    ],
)
def test_order_file_refuses_permutation_options(extra, message, capsys):
    rc, out, err = run_cli(["run", "--data", "german", "--learner", "COG-I", "--order", "file", *extra], capsys)
    assert rc == 2, err
    assert err.count("\n") == 1, err
    assert message in err, err
    assert out == "", err


def test_random_order_is_the_default(tmp_path, capsys):
    out_json = tmp_path / "out.json"
    argv = ["run", "--data", "german", "--learner", "COG-I", "--grid", "eta=1", "--json", str(out_json)]
    rc, out, err = run_cli(argv, capsys)
    assert rc == 0, err
    doc = json.loads(out_json.read_text())
    assert doc["order"] == "random"
    assert doc["perms"] == 20
    assert len(doc["runs"]) == 20
    assert "20 permutations" in out
    assert "progressive" not in out
    rc, out, err = run_cli(["run", "--data", "german", "--order", "shuffled"], capsys)
    assert rc == 2
    assert "invalid choice: 'shuffled'" in err


def test_perms_stream_is_the_stream_in_its_own_order(german):
    X, y = german
    learner = jcsol.ACOG(eta=[0.1, 1.0], diagonal=True)
    stream = jcsol.run(learner, X, y, perms="stream", record_scores=True)
    explicit = jcsol.run(learner, X, y, perms=np.arange(len(y))[None], record_scores=True)
    np.testing.assert_array_equal(stream.orders, np.arange(len(y))[None])
    np.testing.assert_array_equal(stream.scores, explicit.scores)
    np.testing.assert_array_equal(stream.counts, explicit.counts)
    with pytest.raises(ValueError, match='perms must be a count, "stream" or an integer array'):
        jcsol.run(learner, X, y, perms="file")


def test_each_chunk_reports_the_counts_so_far(german):
    X, y = german
    seen = []
    res = jcsol.run(jcsol.COG(eta=[0.1, 1.0]), X, y, perms=3, chunk_size=300, curve_points=4, on_chunk=seen.append)
    assert [done.rounds_done for done in seen] == [300, 600, 900, 1000]
    for done in seen:
        assert done.counts.shape == (2, 3, 4)
        assert (done.counts.sum(axis=-1) == done.rounds_done).all()
    np.testing.assert_array_equal(seen[-1].counts, res.counts)
