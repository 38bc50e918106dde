"""The LIBSVM reader against scikit-learn's ``load_svmlight_file`` on generated files, well-formed and hostile.

On every input the two give the same matrix and labels, or jcsol refuses with a message naming the source and,
for a bad line, its number. jcsol is stricter than scikit-learn where scikit-learn returns a result that
would be wrong for a run (NaN or infinite numbers, an empty file) — never looser.
"""

import gzip
import io
import re

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
sklearn_datasets = pytest.importorskip("sklearn.datasets")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st

from jcsol.datasets import load, read_libsvm  # noqa: E402
from jcsol.datasets.libsvm import MAX_INDEX  # noqa: E402

GOOD_NUMBERS = st.one_of(
    st.integers(-3, 3).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
    st.sampled_from(["+1", "-1", "1.", ".5", "-.5", "1e3", "2E-2", "+0.25", "-0"]),
)
BAD_NUMBERS = st.sampled_from(["nan", "inf", "-inf", "Infinity", "1e400", "1_0", "0x10", "1,5", "", "--1", "1e", "١"])
BAD_INDICES = st.sampled_from(
    [
        "0",
        "-1",
        "+2",
        "1.5",
        "1e1",
        "",
        "x",
        str(MAX_INDEX),
        str(MAX_INDEX + 1),
        str(2**32 + 1),
        "0003",
        "99999999999999999999",
        "١",
    ]
)


def _mostly(good, bad):
    """``good`` nine times in ten, ``bad`` otherwise."""
    return st.integers(0, 9).flatmap(lambda k: bad if k == 0 else good)


@st.composite
def line(draw):
    """A line: well-formed three times in four; otherwise with hostile numbers, indices or token damage."""
    hostile = draw(st.integers(0, 3)) == 0
    numbers = _mostly(GOOD_NUMBERS, BAD_NUMBERS) if hostile else GOOD_NUMBERS
    label = draw(numbers)
    n = draw(st.integers(0, 5))
    indices = sorted(draw(st.sets(st.integers(1, 40), min_size=n, max_size=n)))
    if hostile and draw(st.booleans()):  # unsorted, repeated or malformed indices
        indices = [draw(_mostly(st.integers(1, 40).map(str), BAD_INDICES)) for _ in range(n)]
    pairs = [f"{i}:{draw(numbers)}" for i in indices]
    tokens = [label] + ([f"qid:{draw(st.integers(0, 9))}"] if draw(st.integers(0, 9)) == 0 else []) + pairs
    if hostile and draw(st.booleans()):  # glue, split or damage a token
        k = draw(st.integers(0, len(tokens) - 1))
        tokens[k] = draw(
            st.sampled_from(
                [
                    tokens[k] + ":3",
                    tokens[k].replace(":", " "),
                    ":" + tokens[k],
                    tokens[k] + ":",
                    tokens[k] + "#x",
                    "\x0c" + tokens[k],
                ]
            )
        )
    sep = draw(st.sampled_from([" ", "\t", "  "]))
    return sep.join(tokens) + draw(st.sampled_from(["", " ", " # a comment", "\r", "# 1:2"]))


FILES = st.lists(st.one_of(line(), st.sampled_from(["", "# header", "   "])), min_size=0, max_size=8).map(
    lambda lines: "\n".join(lines) + "\n"
)


def _entries(indices, values, rows_):
    """The set of nonzero ``(row, column, value)`` entries."""
    keep = values != 0
    return set(zip(rows_[keep].tolist(), indices[keep].tolist(), values[keep].tolist()))


def _compare(text: str) -> None:
    raw = text.encode("utf-8")
    try:
        rows, labels = read_libsvm(raw, source="gen.svm")
    except ValueError as err:
        message = str(err)
    else:
        message = None
    if message is not None:
        assert re.match(r"gen\.svm(, line \d+)?: \S", message), message
        line_number = re.match(r"gen\.svm, line (\d+)", message)
        if line_number:  # the line named is one of the file's non-blank lines
            assert text.split("\n")[int(line_number.group(1)) - 1].split("#")[0].strip()
        return
    X, y = sklearn_datasets.load_svmlight_file(io.BytesIO(raw), zero_based=False)  # must accept what jcsol does
    assert rows.shape == X.shape
    np.testing.assert_array_equal(labels, y)
    row_of = np.repeat(np.arange(rows.shape[0]), rows.indices.shape[1])
    ours = _entries(rows.indices.ravel(), rows.values.ravel(), row_of)
    coo = X.tocoo()
    assert ours == _entries(coo.col, coo.data, coo.row)
    assert np.isfinite(rows.values).all()
    assert np.isfinite(labels).all()


@settings(max_examples=300, deadline=None)
@given(FILES)
def test_reader_agrees_with_scikit_learn_or_refuses(text):
    _compare(text)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("+1 2147483649:1\n", r"line 1: feature index 2147483649 is outside \[1, 2147483647\]"),
        ("+1 3:0.6 3:0.8\n", r"line 1: feature index 3 follows index 3"),
        ("+1 4:1 2:1\n-1 1:1\n", r"line 1: feature index 2 follows index 4"),
        ("+1 2:3:4 5\n-1 1:2\n", r"line 1: not LIBSVM format"),
        ("+1:2 3\n-1 1:2\n", r"line 1: not LIBSVM format"),
        ("+1 1:2\n-1 1:2 3\n", r"line 2: not LIBSVM format"),
        ("", r"no examples"),
        ("# only a comment\n\n", r"no examples"),
        ("+1\n-1\n", r"no line holds a feature"),
        ("nan 1:1\n", r"line 1: the label is NaN"),
        ("+1 1:1\n-1 1:1e999\n", r"line 2: a feature value is NaN or infinite"),
        ("+1 1:1\n-1 0:1\n", r"line 2: feature index 0 is outside"),
        ("+1 1:1\x0c\n", r"line 1: not LIBSVM format"),
    ],
)
def test_hostile_lines_are_refused_with_their_line(text, error):
    with pytest.raises(ValueError, match=error):
        read_libsvm(text, source="f.svm")


def test_line_numbers_count_blank_and_comment_lines(tmp_path):
    path = tmp_path / "f.svm"
    path.write_bytes(b"# header\n\n+1 1:1\r\n-1 1:2 1:3\r\n")
    with pytest.raises(ValueError, match=r"f.svm, line 4: feature index 1 follows index 1"):
        load(path)


def test_damaged_files_are_refused_with_their_name(tmp_path):
    path = tmp_path / "cut.svm.gz"
    path.write_bytes(gzip.compress(b"+1 1:1\n-1 2:1\n" * 100)[:-20])
    with pytest.raises(ValueError, match=r"cut.svm.gz: damaged gzip file"):
        load(path)
    with pytest.raises(IsADirectoryError, match="is a directory"):
        load(tmp_path)
    with pytest.raises(ValueError, match="n_features must be in"):
        load("german", n_features=0)
    with pytest.raises(TypeError, match="normalize must be True or False"):
        load("german", normalize="no")
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        load("german", dtype=np.int32)


def test_reader_equals_scikit_learn_on_the_shipped_sets():
    from jcsol.datasets import SHIPPED, _shipped_bytes

    for name in SHIPPED:
        raw = _shipped_bytes(name)
        rows, labels = read_libsvm(raw)
        X, y = sklearn_datasets.load_svmlight_file(io.BytesIO(raw), zero_based=False)
        np.testing.assert_array_equal(rows.todense(), X.toarray())
        np.testing.assert_array_equal(labels, y)
