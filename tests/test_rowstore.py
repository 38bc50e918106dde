"""Rows streamed from disk give the results of rows held in memory."""

import gzip
import io
import json

import jax
import numpy as np
import pytest
from conftest import shared_data

import jcsol
from jcsol.datasets import RowStore
from jcsol.datasets.libsvm import read_libsvm
from jcsol.datasets.rowstore import RowStoreError


@pytest.fixture(scope="module")
def spam_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "spambase.gz"
    path.write_bytes(gzip.compress(jcsol.datasets._shipped_bytes("spambase")))
    return path, RowStore.build(path, tmp_path_factory.mktemp("store"), block_rows=700)


def test_store_holds_the_loaded_rows(spam_store):
    path, store = spam_store
    X, y = jcsol.datasets.load(path, sparse=True)
    assert store.shape == X.shape
    np.testing.assert_array_equal(store.y, y)
    loaded, _ = store.load()
    np.testing.assert_array_equal(loaded.todense(), X.todense())
    rows = np.array([5, 0, 4600, 5, 17])
    indices, values = store.take(rows)
    dense = np.zeros((5, store.shape[1]), np.float32)
    np.add.at(dense, (np.repeat(np.arange(5), store.width), indices.ravel()), values.ravel())
    np.testing.assert_array_equal(dense, X.todense()[rows])
    assert RowStore(store.directory).fingerprint == store.fingerprint


@pytest.mark.parametrize("perms", [3, "explicit"])
def test_runs_over_a_store_equal_runs_in_memory(spam_store, perms):
    path, store = spam_store
    X, y = jcsol.datasets.load(path, sparse=True)
    if perms == "explicit":  # the stream in order, reversed, and rotated: as many runs as perms=3, one compilation
        perms = np.stack([np.arange(len(y)), np.arange(len(y))[::-1], np.roll(np.arange(len(y)), 1000)])
    for learner in (jcsol.COG(eta=[0.1, 10.0]), jcsol.ACOG(diagonal=True, loss="II")):
        memory = jcsol.run(learner, X, y, perms=perms, chunk_size=1000, curve_points=9)
        disk = jcsol.run(learner, store, store.y, perms=perms, chunk_size=1000, curve_points=9)
        np.testing.assert_array_equal(memory.curve, disk.curve)
        for a, b in zip(jax.tree.leaves(memory.states), jax.tree.leaves(disk.states)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_store_runs_checkpoint_and_resume(spam_store, tmp_path):
    _, store = spam_store
    path = tmp_path / "store.ckpt"
    plain = jcsol.run(jcsol.COG(), store, store.y, perms=2, chunk_size=500)

    def interrupt(chunk):
        if chunk.chunks_done == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        jcsol.run(jcsol.COG(), store, store.y, perms=2, chunk_size=500, checkpoint=path, on_chunk=interrupt)
    resumed = jcsol.run(jcsol.COG(), store, store.y, perms=2, chunk_size=500, checkpoint=path)
    assert resumed.resumed_at == 2000
    np.testing.assert_array_equal(plain.counts, resumed.counts)


def test_store_refuses_mismatched_labels_and_missing_directory(spam_store, tmp_path):
    _, store = spam_store
    with pytest.raises(ValueError, match="row store has 4601 rows but y has 10"):
        jcsol.run(jcsol.COG(), store, store.y[:10], perms=1)
    with pytest.raises(FileNotFoundError, match="not a row store"):
        RowStore(tmp_path)


def test_store_refuses_nan(tmp_path):
    path = tmp_path / "nan.svm"
    path.write_text("+1 1:0.5\n-1 2:nan\n")
    with pytest.raises(ValueError, match="NaN"):
        RowStore.build(path, tmp_path / "store")


def test_reader_equals_scikit_learn_on_real_data():
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    raw = gzip.decompress(shared_data("a9a.t.gz").read_bytes())
    rows, labels = read_libsvm(raw, source="a9a.t")
    X, y = sklearn_datasets.load_svmlight_file(io.BytesIO(raw), zero_based=False)
    assert rows.shape == X.shape
    np.testing.assert_array_equal(rows.todense(), X.toarray())
    np.testing.assert_array_equal(labels, y)


def test_rebuild_that_fails_keeps_the_previous_store(spam_store, tmp_path):
    path, _ = spam_store
    directory = tmp_path / "store"
    first = RowStore.build(path, directory, block_rows=1000)
    bad = tmp_path / "bad.svm"
    text = gzip.decompress(path.read_bytes()).decode().splitlines()
    bad.write_text("\n".join(text[:2500] + ["+1 3:0.5 2:0.25"] + text[2500:]) + "\n")
    with pytest.raises(ValueError, match=r"bad.svm, line 2501: feature index 2 follows index 3"):
        RowStore.build(bad, directory, block_rows=1000)
    again = RowStore(directory)
    assert again.fingerprint == first.fingerprint
    assert again.shape == first.shape
    np.testing.assert_array_equal(again.load()[0].values, first.load()[0].values)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.svm", "store"]  # no temporary folder left


def test_build_refuses_a_folder_of_other_files(spam_store, tmp_path):
    path, _ = spam_store
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="notes.txt"):
        RowStore.build(path, tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("damage", ["meta_field", "meta_json", "old_format", "truncated", "labels", "index"])
def test_damaged_stores_are_refused(spam_store, tmp_path, damage):
    path, store = spam_store
    directory = tmp_path / "s"
    RowStore.build(path, directory, block_rows=2000)
    meta = json.loads((directory / "meta.json").read_text())
    if damage == "meta_field":
        (directory / "meta.json").write_text(json.dumps(meta | {"n_rows": 4000}))
    elif damage == "meta_json":
        (directory / "meta.json").write_text("{")
    elif damage == "old_format":
        (directory / "meta.json").write_text(json.dumps({k: v for k, v in meta.items() if k != "format"}))
    elif damage == "truncated":
        raw = (directory / "values.npy").read_bytes()
        (directory / "values.npy").write_bytes(raw[: len(raw) // 2])
    elif damage == "labels":
        np.save(directory / "labels.npy", np.zeros(meta["n_rows"], np.int8))
    if damage != "index":
        with pytest.raises(RowStoreError, match="rebuild it"):
            RowStore(directory)
        return
    indices = np.load(directory / "indices.npy", mmap_mode="r+")
    indices[10, 0] = meta["n_features"] + 5  # a gather would clamp it silently to the last column
    indices.flush()
    del indices
    opened = RowStore(directory)
    with pytest.raises(RowStoreError, match="damaged"):
        jcsol.run(jcsol.COG(), opened, opened.y, perms=np.arange(20)[None], objective=jcsol.Cost())
