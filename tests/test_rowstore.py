"""Rows streamed from disk give the results of rows held in memory."""

import gzip

import jax
import numpy as np
import pytest

import jcsol
from jcsol.datasets import RowStore
from jcsol.datasets.libsvm import _parse_lines, _parse_plain

from conftest import shared_data


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


@pytest.mark.parametrize("perms", [3, "identity"])
def test_runs_over_a_store_equal_runs_in_memory(spam_store, perms):
    path, store = spam_store
    X, y = jcsol.datasets.load(path, sparse=True)
    perms = np.arange(len(y))[None] if perms == "identity" else perms
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
    with pytest.raises(KeyboardInterrupt):
        def interrupt(chunk):
            if chunk.chunks_done == 4:
                raise KeyboardInterrupt
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


def test_fast_parser_equals_line_parser():
    text = gzip.decompress(shared_data("a9a.t.gz").read_bytes()).decode()
    fast, slow = _parse_plain(text), _parse_lines(text, "a9a.t")
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
    assert _parse_plain("+1 1:2 x:3\n") is None and _parse_plain("+1 0:2\n") is None
