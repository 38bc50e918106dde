import gzip
import hashlib

import numpy as np
import pytest
from conftest import shared_data

import jcsol
from jcsol.datasets import SHIPPED, binarize, l2_normalize, read_libsvm

EXPECTED = {
    "german": (1000, 24, 300),
    "australian": (690, 14, 307),
    "svmguide3": (1243, 21, 296),
    "spambase": (4601, 57, 1813),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shipped_sets(name):
    n, d, n_pos = EXPECTED[name]
    X, y = jcsol.datasets.load(name)
    assert X.shape == (n, d)
    assert X.dtype == np.float32
    assert (y == 1).sum() == n_pos
    assert (y == -1).sum() == n - n_pos
    norms = np.linalg.norm(X, axis=1)
    np.testing.assert_allclose(norms[norms > 0], 1.0, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_files_match_their_provenance(name):
    raw = jcsol.datasets._shipped_bytes(name)
    assert hashlib.sha256(raw).hexdigest() == SHIPPED[name].sha256


@pytest.mark.parametrize("name", ["german.numer", "australian", "svmguide3", "spambase"])
def test_shipped_equal_shared_copies(name):
    shipped = {"german.numer": "german"}.get(name, name)
    assert jcsol.datasets._shipped_bytes(shipped) == shared_data(name).read_bytes()


def test_unnormalised_german_is_the_unscaled_copy():
    X, _ = jcsol.datasets.load("german", normalize=False)
    # first row of german.numer: 1:1 2:6 3:4 4:12 … 10:67
    np.testing.assert_array_equal(X[0, [0, 1, 2, 3, 9]], [1, 6, 4, 12, 67])


def test_sparse_rows_equal_dense():
    Xd, yd = jcsol.datasets.load("spambase")
    Xs, ys = jcsol.datasets.load("spambase", sparse=True)
    assert isinstance(Xs, jcsol.SparseRows)
    assert Xs.shape == Xd.shape
    assert Xs.indices.shape[1] == (Xd != 0).sum(axis=1).max()  # as wide as the widest row
    np.testing.assert_array_equal(Xs.todense(), Xd)
    np.testing.assert_array_equal(ys, yd)


def test_a9a_from_shared_data():
    X, y = jcsol.datasets.load(shared_data("a9a.gz"), n_features=123)
    Xt, yt = jcsol.datasets.load(shared_data("a9a.t.gz"), n_features=123)
    assert X.shape == (32561, 123)
    assert Xt.shape == (16281, 123)
    assert (y == 1).sum() == 7841
    assert (yt == 1).sum() == 3846


def test_multiclass_class_vs_rest():
    X, y = jcsol.datasets.load(shared_data("dna.scale"), positive=1)
    assert X.shape == (2000, 180)
    assert (y == 1).sum() == 464
    _, y = jcsol.datasets.load(shared_data("dna.scale"), positive=[1, 2])
    assert (y == 1).sum() == 464 + 485


def test_parser_details():
    text = "# header comment\n+1 qid:3 2:1.5 5:-2 # trailing\n\n-1 1:1e-3\n0 \n"
    rows, labels = read_libsvm(text)
    np.testing.assert_array_equal(labels, [1, -1, 0])
    assert rows.n_features == 5
    np.testing.assert_array_equal(rows.todense(), [[0, 1.5, 0, 0, -2], [1e-3, 0, 0, 0, 0], [0, 0, 0, 0, 0]])
    with pytest.raises(ValueError, match="exceeds n_features=3"):
        read_libsvm(text, n_features=3)
    with pytest.raises(ValueError, match="1-based"):
        read_libsvm("+1 0:1\n")


def test_label_encodings():
    np.testing.assert_array_equal(binarize(np.array([0, 1, 1])), [-1, 1, 1])
    np.testing.assert_array_equal(binarize(np.array([1.0, 2.0, 2.0])), [1, -1, -1])
    np.testing.assert_array_equal(binarize(np.array([-1.0, 1.0])), [-1, 1])
    np.testing.assert_array_equal(binarize(np.array([3, 5, 5]), positive=5), [-1, 1, 1])
    with pytest.raises(ValueError, match="not binary"):
        binarize(np.array([3, 5]))


def test_normalisation_keeps_zero_rows():
    X = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(l2_normalize(X), [[0.6, 0.8], [0.0, 0.0]])


def test_normalisation_of_rows_whose_squares_overflow_or_underflow():
    X = np.array([[3e200, -4e200], [3e-200, 4e-200], [1e-300, 0.0], [3.0, 4.0], [0.0, 0.0], [1e308, 1e308]])
    with np.errstate(all="raise"):
        out = l2_normalize(X)
    expected = [[0.6, -0.8], [0.6, 0.8], [1.0, 0.0], [0.6, 0.8], [0.0, 0.0], [0.5**0.5, 0.5**0.5]]
    np.testing.assert_allclose(out, expected, rtol=1e-15)
    assert np.array_equal(out[3], np.array([3.0, 4.0]) / 5.0)  # an ordinary row: the plain formula's bits
    sparse = jcsol.SparseRows(np.array([[0, 1], [0, 1]]), X[:2], 2)
    np.testing.assert_allclose(l2_normalize(sparse).values, expected[:2], rtol=1e-15)


def test_gzip_and_plain_files_read_the_same(tmp_path):
    text = b"+1 1:2 3:1\n-1 2:5\n"
    (tmp_path / "a.svm").write_bytes(text)
    (tmp_path / "a.svm.gz").write_bytes(gzip.compress(text))
    a = jcsol.datasets.load(tmp_path / "a.svm")
    b = jcsol.datasets.load(tmp_path / "a.svm.gz")
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_the_data_folder_comes_from_the_caller_or_jcsol_data_never_from_outside(monkeypatch, tmp_path):
    from jcsol.datasets import load_koil

    monkeypatch.delenv("JCSOL_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="JCSOL_DATA"):
        jcsol.datasets.data_dir()
    with pytest.raises(FileNotFoundError, match="JCSOL_DATA"):
        load_koil("sonar")
    with pytest.raises(FileNotFoundError, match="data_dir /no/such"):
        jcsol.datasets.data_dir("/no/such")
    (tmp_path / "koil").mkdir()
    (tmp_path / "koil" / "tiny").write_text("1\t1:0.5\t2:1\n-1\t1:1\n")
    monkeypatch.setenv("JCSOL_DATA", str(tmp_path))
    assert jcsol.datasets.data_dir() == tmp_path
    assert jcsol.datasets.data_dir(tmp_path / "koil") == tmp_path / "koil"  # the caller's folder first
    X, y = load_koil("tiny")
    assert X.shape == (2, 2)
    assert y.tolist() == [1, -1]


def test_load_dataset_reads_the_papers_sets_from_the_folder_and_falls_back_to_shipped_copies(tmp_path):
    X, y = jcsol.datasets.load_dataset("german", tmp_path)  # not in the folder: the shipped copy
    assert X.shape == (1000, 24)
    assert (y > 0).sum() == 300
    with pytest.raises(jcsol.datasets.DataMissing, match="a9a: missing"):
        jcsol.datasets.load_dataset("a9a", tmp_path)
    with pytest.raises(jcsol.datasets.DataMissing, match="covtype is not available"):
        jcsol.datasets.load_dataset("covtype", tmp_path)
    with pytest.raises(ValueError, match="unknown dataset 'nope'; choose from german"):
        jcsol.datasets.load_dataset("nope", tmp_path)
    (tmp_path / "dna.scale").write_text("1 1:1\n2 2:1\n3 1:0.5 2:0.5\n")
    X, y = jcsol.datasets.load_dataset("dna", tmp_path)  # class 1 against the rest, 180 features
    assert X.shape == (3, 180)
    assert y.tolist() == [1, -1, -1]
