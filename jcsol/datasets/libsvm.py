"""The LIBSVM/svmlight text format: ``label idx:val idx:val …`` with 1-based indices, one example a line.

The reader accepts exactly the format of LIBSVM and svmlight (C.-C. Chang, C.-J. Lin, *LIBSVM: a library for
support vector machines*, ACM TIST 2011; T. Joachims, *Making large-scale SVM learning practical*, 1999), as
scikit-learn's ``load_svmlight_file`` reads it, and refuses anything else with the file and line:

* a line is a label, an optional ``qid:n`` (skipped), then ``index:value`` pairs, separated by spaces or tabs;
  ``#`` starts a comment, blank lines are ignored, a line ending may be ``\\n`` or ``\\r\\n``; a UTF-8
  byte-order mark opening the file is skipped, and a UTF-16 file is refused as such;
* labels and values are decimal numbers (``1``, ``-1``, ``+0.5``, ``2e-3``); labels must be finite, and so must
  values (NaN or infinite features would poison every later round of a run);
* indices are decimal integers from 1 to 2³¹ − 1, strictly increasing along a line: a repeated index has no
  single meaning (sum? last wins?), so it is refused rather than guessed;
* a file without any example is refused.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections.abc import Iterator

import numpy as np

from ..stream import SparseRows, check_flags, is_scipy_sparse

#: The largest feature index a file may hold (1-based): indices are stored as int32.
MAX_INDEX = 2**31 - 1

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?i:nan|inf(?:inity)?)"
_LINE = re.compile(rf"(?:{_NUMBER})(?:[ \t]+qid:[+-]?\d+)?(?:[ \t]+\d+:(?:{_NUMBER}))*", re.ASCII)
_QID = re.compile(r"[ \t]+qid:[+-]?\d+", re.ASCII)


def read_libsvm(
    text: bytes | str,
    *,
    n_features: int | None = None,
    source: str = "<data>",
    first_line: int = 1,
    allow_empty: bool = False,
) -> tuple[SparseRows, np.ndarray]:
    """Parses LIBSVM/svmlight text into fixed-width sparse rows and raw labels.

    Rows are padded to the widest row. Raises ``ValueError`` naming ``source`` and the line of the first
    malformed line, non-finite number, out-of-range or non-increasing index (module docstring).

    Args:
        text: the file's content.
        n_features: the dimension; an index above it is refused (default: the largest index).
        source: the name used in error messages (the file's path).
        first_line: the line number of the text's first line (for text read block by block).
        allow_empty: return zero rows for text without examples instead of refusing it.
    """
    if n_features is not None:
        check_n_features(n_features)
    check_flags(allow_empty=allow_empty)
    if isinstance(text, bytes):
        if text[:2] in (b"\xff\xfe", b"\xfe\xff"):
            raise ValueError(
                f"{source}: the text is UTF-16 (it starts with its byte-order mark); save it as UTF-8 or ASCII"
            )
        text = text.decode("utf-8", errors="surrogateescape")  # odd bytes in comments are harmless
    if first_line == 1 and text.startswith("\ufeff"):  # the byte-order mark some editors write: not content
        text = text[1:]
    lines = text.split("\n")
    kept: list[str] = []
    line_of: list[int] = []
    for number, line in enumerate(lines, first_line):
        if "#" in line:
            line = line.split("#", 1)[0]
        line = line.strip(" \t\r")
        if not line:
            continue
        if _LINE.fullmatch(line) is None:
            raise ValueError(
                f"{source}, line {number}: not LIBSVM format (expected 'label index:value ...' with "
                f"decimal numbers and integer indices >= 1): {_shown(line)}"
            )
        kept.append(_QID.sub("", line) if "qid:" in line else line)
        line_of.append(number)
    if not kept:
        if allow_empty:
            return SparseRows(np.zeros((0, 1), np.int32), np.zeros((0, 1)), int(n_features or 0)), np.zeros(0)
        raise ValueError(f"{source}: no examples (the text is empty or holds only comments and blank lines)")
    counts = np.fromiter((line.count(":") for line in kept), np.int64, len(kept))
    numbers = np.array(" ".join(kept).replace(":", " ").split(), dtype=np.float64)
    starts = np.concatenate([[0], np.cumsum(1 + 2 * counts)[:-1]]).astype(np.int64)
    is_label = np.zeros(len(numbers), bool)
    is_label[starts] = True
    labels = numbers[starts]
    pairs = numbers[~is_label].reshape(-1, 2)
    rows = np.repeat(np.arange(len(kept)), counts)

    def fail(row: int, why: str):
        raise ValueError(f"{source}, line {line_of[row]}: {why}: {_shown(kept[row])}")

    if not np.all(np.isfinite(labels)):
        fail(int(np.flatnonzero(~np.isfinite(labels))[0]), "the label is NaN or infinite")
    if pairs.size:
        bad = ~np.isfinite(pairs[:, 1])
        if bad.any():
            fail(int(rows[np.argmax(bad)]), "a feature value is NaN or infinite (remove or impute it)")
        bad = (pairs[:, 0] < 1) | (pairs[:, 0] > MAX_INDEX)
        if bad.any():
            fail(
                int(rows[np.argmax(bad)]),
                f"feature index {pairs[np.argmax(bad), 0]:.0f} is outside [1, {MAX_INDEX}] (indices are 1-based)",
            )
        bad = (pairs[1:, 0] <= pairs[:-1, 0]) & (rows[1:] == rows[:-1])
        if bad.any():
            at = int(np.argmax(bad)) + 1
            fail(
                int(rows[at]),
                f"feature index {pairs[at, 0]:.0f} follows index {pairs[at - 1, 0]:.0f}: indices "
                "must be strictly increasing along a line (a repeated index is ambiguous)",
            )
    first = np.repeat(np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    position = np.arange(len(rows)) - first
    width = max(int(counts.max()), 1)
    indices = np.zeros((len(kept), width), np.int32)
    values = np.zeros((len(kept), width), np.float64)
    indices[rows, position] = pairs[:, 0].astype(np.int64) - 1
    values[rows, position] = pairs[:, 1]
    max_index = int(pairs[:, 0].max()) if pairs.size else 0
    if n_features is None and not max_index:
        raise ValueError(f"{source}: no line holds a feature (give n_features= for rows that are all zero)")
    if n_features is None:
        n_features = max_index
    elif max_index > n_features:
        row = int(rows[np.argmax(pairs[:, 0])])
        raise ValueError(f"{source}, line {line_of[row]}: feature index {max_index} exceeds n_features={n_features}")
    return SparseRows(indices, values, int(n_features)), labels


def add_bias(X):
    """The rows with a constant feature 1 appended: the offset (bias) term of a linear model as one more weight.

    jcsol's learners have no bias: a row without any non-zero feature scores exactly ``w·x = 0`` and is
    predicted ``+1`` (``f >= 0``), whatever was learnt. The constant feature gives every row, empty or not, the
    learnt offset, as LIBLINEAR's ``-B 1`` does (Fan, Chang, Hsieh, Wang, Lin, *LIBLINEAR: A Library for Large
    Linear Classification*, JMLR 2008). Apply it after any normalisation, as :func:`jcsol.datasets.load` and
    :class:`jcsol.TableEncoder` do with ``bias=True``: each row keeps its own norm beside the constant (a unit row
    has norm √2 with it, an empty row norm 1).

    Where the constant goes, ``d`` being the rows' dimension:

    * a dense ``(T, d)`` array: a last column, ``(T, d + 1)``, of the array's float dtype (float64 for an
      integer array);
    * :class:`jcsol.SparseRows` (or a SciPy sparse matrix or array, taken as ``SparseRows.from_scipy``): column
      ``d``, as one more entry at the end of every row, ``n_features = d + 1``; the indices keep their integer
      dtype (signed or unsigned), widened only where it cannot hold ``d`` (``uint8`` indices of 256 features),
      and the values theirs.
    """
    if is_scipy_sparse(X):
        X = SparseRows.from_scipy(X)
    if isinstance(X, SparseRows):
        if X.n_features >= MAX_INDEX:
            raise ValueError(f"add_bias: rows of {X.n_features} features leave no int32 column for the constant")
        indices, values = np.asarray(X.indices), np.asarray(X.values)
        if indices.dtype.kind not in "iu":
            raise TypeError(f"add_bias: SparseRows indices must be integers, got dtype {indices.dtype}")
        n = indices.shape[0]
        column = np.full((n, 1), X.n_features, dtype=_index_dtype(indices.dtype, int(X.n_features)))
        return SparseRows(
            np.concatenate([indices, column], axis=1),
            np.concatenate([values, np.ones((n, 1), values.dtype)], axis=1),
            int(X.n_features) + 1,
        )
    X = np.asarray(X)
    if X.ndim != 2 or X.dtype.kind not in "biuf":
        raise TypeError(
            "add_bias takes a dense (T, d) array of numbers, jcsol.SparseRows or a SciPy sparse matrix, not "
            f"{X.dtype} of shape {X.shape}"
        )
    dtype = X.dtype if X.dtype.kind == "f" else np.dtype(np.float64)
    return np.concatenate([X.astype(dtype, copy=False), np.ones((X.shape[0], 1), dtype)], axis=1)


def _index_dtype(dtype: np.dtype, largest: int) -> np.dtype:
    """``dtype`` (an integer dtype) if it holds ``largest``, else the narrowest integer dtype holding both."""
    if np.iinfo(dtype).max >= largest:
        return np.dtype(dtype)
    return np.result_type(dtype, np.min_scalar_type(largest))


def check_n_features(n_features) -> int:
    """``n_features`` as an int in [1, 2³¹ − 1], refusing anything else."""
    if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)):
        raise TypeError(f"n_features must be an integer, got {n_features!r}")
    if not 1 <= n_features <= MAX_INDEX:
        raise ValueError(f"n_features must be in [1, {MAX_INDEX}], got {n_features}")
    return int(n_features)


def _shown(line: str) -> str:
    return repr(line[:80] + ("…" if len(line) > 80 else ""))


def file_bytes(path: str | os.PathLike) -> bytes:
    """A file's bytes, decompressed where it is gzip (told apart by its magic bytes); a damaged gzip stream raises
    ``ValueError`` naming the file."""
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return gzip.decompress(raw)
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise ValueError(f"{os.fspath(path)}: damaged gzip file ({err})") from None


def open_text(path: str | os.PathLike):
    """A text file, gzip-compressed or plain (told apart by its magic bytes).

    Bytes that are not UTF-8 are kept as surrogates, so the parser reports the line they are on.
    """
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    if gz:
        return gzip.open(path, "rt", encoding="utf-8", errors="surrogateescape")
    return open(path, encoding="utf-8", errors="surrogateescape", newline="")


def iter_libsvm_blocks(path: str | os.PathLike, block_rows: int = 100_000) -> Iterator[tuple[int, str]]:
    """``(first line number, text)`` of the file in blocks of ``block_rows`` lines, read lazily: memory holds
    one block at a time. A bad ``block_rows`` is refused by the call itself, before any block is asked for; a
    damaged gzip stream raises ``ValueError`` naming the file."""
    return _blocks(path, check_block_rows(block_rows))


def check_block_rows(block_rows) -> int:
    """``block_rows`` as an int >= 1, refusing anything else (a float, a bool, 0)."""
    if isinstance(block_rows, bool) or not isinstance(block_rows, (int, np.integer)) or block_rows < 1:
        raise ValueError(f"block_rows must be an integer >= 1, got {block_rows!r}")
    return int(block_rows)


def _blocks(path: str | os.PathLike, block_rows: int) -> Iterator[tuple[int, str]]:
    try:
        with open_text(path) as fh:
            block: list[str] = []
            first = 1
            for line in fh:
                block.append(line)
                if len(block) == block_rows:
                    yield first, "".join(block)
                    first += len(block)
                    block = []
            if block:
                yield first, "".join(block)
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise ValueError(f"{os.fspath(path)}: damaged gzip file ({err})") from None
