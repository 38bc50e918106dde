"""The small doors users meet first: ``jcsol --version``, ``jcsol learners`` (:func:`jcsol.learners`), a dataset
named on the command line and looked for in the data folder, {0, 1} labels, :func:`jcsol.decades` as literals,
and selecting rows of :class:`jcsol.SparseRows`."""

import gzip
import pickle
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import jax
import numpy as np
import pytest
from conftest import run_cli

import jcsol
from jcsol import cli
from jcsol.stream import check_labels

ROOT = Path(__file__).resolve().parents[1]


def _console_script() -> Path:
    script = Path(sys.executable).with_name("jcsol")
    if not script.exists():
        pytest.skip(f"no console script {script} (jcsol is not installed in this environment)")
    return script


# -- jcsol --version, jcsol learners --------------------------------------------------------------------------


def test_version(capsys):
    rc, out, _ = run_cli(["--version"], capsys)
    assert rc == 0
    assert out == f"jcsol {metadata.version('jcsol')}\n"
    assert metadata.version("jcsol") == jcsol.__version__
    done = subprocess.run([_console_script(), "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"jcsol {jcsol.__version__}\n", done.stderr


def test_learners_describes_every_registered_variant():
    infos = jcsol.learners()
    assert [v.name for v in infos] == list(jcsol.VARIANTS)
    bibliography = (ROOT / "docs" / "bibliography.md").read_text(encoding="utf-8").lower()
    for info in infos:
        learner = jcsol.by_name(info.name)
        assert info.cls == type(learner).__name__
        assert info.hyperparameters == {k: float(v) for k, v in learner.hyperparameters().items()}
        assert info.options == learner.options()
        assert "\n" not in info.paper
        titles = re.findall(r"\*([^*]+)\*", info.paper)  # every paper is in the bibliography
        assert any(t.strip(" .").lower() in bibliography for t in titles), (info.name, info.paper)
    acog = next(v for v in infos if v.name == "ACOG-II-diag")
    assert acog.options["loss"] == "II"
    assert acog.options["diagonal"] is True
    assert acog.hyperparameters["eta"] == 1e-2
    assert "Adaptive Cost-Sensitive Online Classification" in acog.paper


def test_learners_command(capsys):
    infos = jcsol.learners()
    rc, text, _ = run_cli(["learners"], capsys)
    assert rc == 0
    blocks = text.strip().split("\n\n")
    assert len(blocks) == len(infos)
    for block, info in zip(blocks, infos):
        head, hyper, options, paths, paper = block.splitlines()
        assert head == f"{info.name} ({info.cls})"
        shown = ", ".join(f"{k}={v:g}" for k, v in info.hyperparameters.items()) or "none"
        assert hyper == f"  hyperparameters: {shown}"
        assert paper == f"  paper: {info.paper}"
        assert paths == f"  paths: {', '.join(info.paths)}"
        assert all(f"{k}={v!r}" in options for k, v in info.options.items())
    rc, table, _ = run_cli(["learners", "--format", "markdown"], capsys)
    rows = table.strip().splitlines()
    assert rc == 0
    assert rows[0].startswith("| learner | class |")
    assert len(rows) == 2 + len(infos)
    for row, info in zip(rows[2:], infos):
        cells = re.split(r"(?<!\\)\|", row)[1:-1]  # an escaped \| stays inside its cell
        assert len(cells) == 6, row
        assert cells[0].strip() == info.name, row
        assert cells[4].strip() == ", ".join(info.paths), row
    done = subprocess.run(
        [_console_script(), "learners", "--format", "markdown"], capture_output=True, text=True, timeout=120
    )
    # a fresh process's registry order (a test that deletes and restores a variant moves it to the end)
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == sorted(table.splitlines()), done.stderr


def test_unknown_learner_lists_the_registry():
    with pytest.raises(ValueError, match="unknown learner 'COG-3'") as err:
        jcsol.by_name("COG-3")
    assert all(name in str(err.value) for name in jcsol.VARIANTS)


# -- jcsol run --data NAME: the data folder -------------------------------------------------------------------


def _write_libsvm(path: Path, n: int, d: int, labels=(-1, 1), seed: int = 0) -> np.ndarray:
    """``n`` random rows of ``d`` features, gzipped LIBSVM; returns their labels."""
    rng = np.random.default_rng(seed)
    y = rng.choice(labels, size=n, p=(0.7, 0.3))
    lines = []
    for label in y:
        cols = np.sort(rng.choice(np.arange(1, d + 1), size=3, replace=False))
        lines.append(f"{label} " + " ".join(f"{c}:{rng.uniform(0.1, 1):.4f}" for c in cols))
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return y


def test_run_finds_a_papers_dataset_in_the_data_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "data"
    folder.mkdir()
    train = _write_libsvm(folder / "a9a.gz", 40, 123, seed=1)
    test = _write_libsvm(folder / "a9a.t.gz", 20, 123, seed=2)
    argv = ["run", "--data", "a9a", "--learner", "COG-I", "--perms", "2", "--grid", "eta=1e-1:1e1"]
    rc, out, err = run_cli([*argv, "--data-dir", str(folder)], capsys)
    assert rc == 0, err
    positives = int((train > 0).sum() + (test > 0).sum())
    assert out.startswith(f"a9a: 60 examples × 123 features, {positives} positive"), out
    X, y = jcsol.datasets.load_dataset("a9a", folder)  # as jcsol reproduce reads it
    assert X.shape == (60, 123)
    assert int((y > 0).sum()) == positives
    monkeypatch.setenv("JCSOL_DATA", str(folder))  # the same folder by the environment
    rc, again, err = run_cli(argv, capsys)
    assert rc == 0, err
    assert again.splitlines()[0] == out.splitlines()[0], err
    # the options of a file are refused for a papers' dataset, read as the papers read it
    rc, _, err = run_cli([*argv, "--no-normalize"], capsys)
    assert rc == 2
    assert "--no-normalize" in err
    assert "give its path" in err


def test_run_finds_a_file_of_the_data_folder_with_zero_one_labels(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JCSOL_DATA", str(tmp_path))
    y = _write_libsvm(tmp_path / "mine.gz", 50, 7, labels=(0, 1), seed=3)
    rc, out, err = run_cli(["run", "--data", "mine", "--learner", "COG-I", "--perms", "2", "--grid", "eta=1"], capsys)
    assert rc == 0, err
    assert out.startswith(f"mine: 50 examples × 7 features, {int(y.sum())} positive"), out


def test_run_says_where_it_looked_and_how_to_fetch(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JCSOL_DATA", raising=False)
    monkeypatch.setenv("JCSOL_CACHE", str(tmp_path / "cache"))
    rc, _, err = run_cli(["run", "--data", "a9a"], capsys)
    lines = err.strip().splitlines()
    assert rc == 2
    assert len(lines) == 1
    assert lines[0].startswith("jcsol: error: --data: no dataset 'a9a'")
    assert f"no file {tmp_path / 'a9a'}" in err
    assert "no data folder (--data-dir DIR or JCSOL_DATA=DIR)" in err
    assert 'jcsol.datasets.fetch("a9a")' in err
    assert f"--data {tmp_path / 'cache' / 'a9a'}" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, _, err = run_cli(["run", "--data", "a9a", "--data-dir", str(empty)], capsys)
    assert rc == 2
    assert f"missing {empty / 'a9a.gz'}, {empty / 'a9a.t.gz'}" in err
    assert "fetch" in err
    rc, _, err = run_cli(["run", "--data", "nothing", "--data-dir", str(empty)], capsys)
    assert rc == 2
    assert f"no nothing or nothing.gz in the data folder {empty}" in err
    assert "fetch" not in err
    for name in ("a9a", "german"):  # a --data-dir that is not a folder is refused, needed or not
        rc, _, err = run_cli(["run", "--data", name, "--data-dir", str(tmp_path / "absent")], capsys)
        assert rc == 2
        assert "--data-dir" in err
        assert "no such directory" in err
    with pytest.raises(FileNotFoundError, match=r"jcsol.datasets.fetch\('a9a'\) downloads"):
        jcsol.datasets.load("a9a")


# -- labels: {-1, +1} or {0, 1} -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ([-1, 1, 1], [-1, 1, 1]),
        ([0, 1, 1], [-1, 1, 1]),
        ([0.0, 1.0], [-1, 1]),
        ([1, 1], [1, 1]),
        ([0, 0], [-1, -1]),
        (np.array([0, 1], np.uint8), [-1, 1]),
    ],
)
def test_label_rule(labels, expected):
    got = check_labels(labels)
    assert got.dtype == np.int8
    assert got.tolist() == expected


@pytest.mark.parametrize(("labels", "named"), [([-1, 0, 1], "-1, 0, 1"), ([1, 2], "1, 2"), ([0.5, 1], "0.5, 1.0")])
def test_other_labels_are_refused_naming_them(labels, named):
    with pytest.raises(ValueError, match=rf"labels must be -1 and \+1 .*or 0 and 1 .*got \{{{named}\}}"):
        check_labels(labels)


def test_boolean_labels_stay_refused():
    with pytest.raises(ValueError, match="boolean"):
        check_labels(np.array([True, False]))


def test_live_learns_zero_one_labels_as_signs(german):
    X, y = german[0][:64], german[1][:64]
    lives = [jcsol.Live(jcsol.COG(eta=np.array([0.1, 1.0])), batch_sizes=(32,)) for _ in range(2)]
    for batch in (slice(0, 32), slice(32, 64)):
        lives[0].learn(X[batch], y[batch])
    lives[1].learn(X[:32], (y[:32] > 0).astype(np.int64))  # {0, 1}, as integers and as floats
    lives[1].learn(X[32:], (y[32:] > 0).astype(np.float32))
    np.testing.assert_array_equal(lives[1].counts, lives[0].counts)
    for a, b in zip(jax.tree.leaves(lives[1].states), jax.tree.leaves(lives[0].states)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match=r"labels must be -1 and \+1"):
        lives[1].learn(X[:3], [-1, 0, 1])
    assert lives[1].events == 64  # the refused batch learnt nothing


def test_load_table_reads_zero_one_labels_as_signs():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"amount": [1.0, 2.0, 3.0, 4.0], "fraud": [0, 1, 0, 0]})
    X, y, _ = jcsol.features.load_table(frame, "fraud", numeric=["amount"])
    assert y.tolist() == [-1, 1, -1, -1]
    assert len(X) == 4


# -- decades: the literals ------------------------------------------------------------------------------------


def test_decades_are_their_literals():
    values = jcsol.decades()
    assert values[0] == 1e-5
    assert values.dtype == np.float64
    literals = [1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 1e1, 1e2, 1e3, 1e4, 1e5]
    assert values.tolist() == literals  # exactly, bit for bit
    assert jcsol.decades(1e-2, 1e2).tolist() == [0.01, 0.1, 1.0, 10.0, 100.0]
    assert cli.parse_grid("eta=1e-5:1e5")[1].tolist() == literals
    pd = pytest.importorskip("pandas")
    runs = pd.DataFrame({"eta": values})
    for literal in literals:
        assert len(runs.query(f"eta == {literal!r}")) == 1


# -- SparseRows: rows selected ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rows():
    X, y = jcsol.datasets.load("german", sparse=True)
    return X, X.todense(), y


def test_sparse_rows_select_as_dense_rows_do(rows):
    S, D, _ = rows
    assert len(S) == D.shape[0] == 1000
    order = np.random.default_rng(0).permutation(1000)[:17]
    mask = D[:, 0] > np.median(D[:, 0])
    for key in (slice(5, 30), slice(None, None, -3), order, order.tolist(), mask, [], np.array([], np.int64)):
        picked = S[key]
        assert isinstance(picked, jcsol.SparseRows)
        assert picked.n_features == S.n_features
        np.testing.assert_array_equal(picked.todense(), D[key] if len(D[key]) else np.zeros((0, 24)))
        assert len(picked) == len(D[key])


def test_sparse_rows_refuse_what_selects_no_rows(rows):
    S = rows[0]
    for key in (3, np.int64(3), True):
        with pytest.raises(TypeError, match=r"X\[i : i \+ 1\] or X\[\[i\]\].*X.indices, X.values"):
            S[key]
    for key in ((slice(1, 3), 0), 1.5, np.zeros((2, 2), int), ...):
        with pytest.raises(TypeError, match="selects rows only"):
            S[key]


def test_sparse_rows_stay_a_named_tuple(rows):
    S = rows[0]
    indices, values, d = S  # unpacking gives the fields
    assert indices is S.indices
    assert values is S.values
    assert d == 24
    assert S._replace(n_features=30).n_features == 30
    assert S._fields == ("indices", "values", "n_features")
    back = pickle.loads(pickle.dumps(S[:3]))
    np.testing.assert_array_equal(back.todense(), S[:3].todense())
    assert len(jax.tree.leaves(S)) == 3


def test_a_run_over_selected_rows_is_the_run_over_that_order(rows):
    """Rows selected then run in their order are the run over the whole set in that order (the engine gathers
    rows by index): the same confusion counts, bit for bit."""
    S, _, y = rows
    order = np.random.default_rng(1).permutation(1000)[:300]
    learner = jcsol.COG(eta=np.array([0.1, 1.0]))
    selected = jcsol.run(learner, S[order], y[order], perms=np.arange(300)[None])
    whole = jcsol.run(learner, S, y, perms=order[None])
    np.testing.assert_array_equal(selected.counts, whole.counts)


def test_result_scores_sparse_rows_without_a_dense_copy(monkeypatch):
    """50,000 hashed rows of 2**18 features would be 48.8 GiB dense; scored sparse, they cost O(nnz) a run."""
    import scipy.sparse

    rng = np.random.default_rng(3)
    n, d, k = 50_000, 2**18, 20
    indices = (np.arange(k) * (d // k) + rng.integers(0, d // k, size=(n, k))).astype(np.int32)
    rows = jcsol.SparseRows(indices, rng.normal(size=(n, k)).astype(np.float32), d)
    y = np.where(rng.random(n) < 0.1, 1, -1)
    res = jcsol.run(jcsol.COG(eta=[0.1, 1.0]), rows[:500], y[:500], perms=2)
    first = rows[:200].todense()
    dense = res.score(first)
    monkeypatch.setattr(jcsol.SparseRows, "todense", lambda self: pytest.fail("the rows were densified"))
    scores = res.score(rows)
    assert scores.shape == (2, 2, n)
    assert scores.dtype == np.float32
    tolerance = 1e-6 * np.abs(dense).max()
    np.testing.assert_allclose(scores[..., :200], dense, rtol=1e-5, atol=tolerance)
    np.testing.assert_allclose(res.score(scipy.sparse.csr_matrix(first)), dense, rtol=1e-5, atol=tolerance)
    with pytest.raises(ValueError, match="X has 9 features; the models learnt from rows of 262144"):
        res.score(jcsol.SparseRows(indices[:3, :2] % 9, np.ones((3, 2), np.float32), 9))


def test_a_result_prints_as_one_line():
    X, y = jcsol.datasets.load("german")
    res = jcsol.run(jcsol.COG(eta=[0.1, 1.0]), X[:300], y[:300], perms=2)
    text = repr(res)
    assert "\n" not in text, text
    assert "[" not in text, text
    assert len(text) < 200, text
    assert text.startswith("Result(COG-I: 2 grid point(s) × 2 permutation(s) × 300 rounds; mean sum ")
    assert f"{np.nanmean(res.sum):.4g}" in text


def test_the_command_line_reports_progress_when_piped(capsys):
    """stderr is no terminal under pytest, as when piped or logged: each chunk and each learner's end are said."""
    assert cli.main(["run", "--data", "german", "--learner", "COG-I", "ACOG-I-diag", "--perms", "2"]) == 0
    err = capsys.readouterr().err
    assert "jcsol: COG-I: 1,000 of 1,000 rounds" in err
    # the chosen point comes from the selection's sweep: its last call ran 11 grid points × 2 permutations
    assert re.search(r"jcsol: ACOG-I-diag: done in [\d.]+ s \(22 run\(s\) × 1,000 rounds", err), err


def test_a_reader_that_stops_early_gets_no_error(tmp_path):
    script = _console_script()
    err = tmp_path / "err.txt"
    # ``true`` reads nothing and is gone before jcsol writes: the write meets a closed pipe
    subprocess.run(f"{script} learners 2>{err} | true", shell=True, check=True)
    assert err.read_text() == ""
