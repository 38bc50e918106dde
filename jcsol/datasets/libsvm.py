"""The LIBSVM/svmlight text format: ``label idx:val idx:val …`` with 1-based indices, one example a line."""

from __future__ import annotations

import gzip
import os
from typing import Iterator

import numpy as np

from ..stream import SparseRows


def read_libsvm(text: bytes | str, *, n_features: int | None = None,
                source: str = "<data>") -> tuple[SparseRows, np.ndarray]:
    """Parses LIBSVM/svmlight text into fixed-width sparse rows and raw labels.

    Comments (``#`` to end of line), blank lines and ``qid:`` tokens are skipped. Rows are padded to the
    widest row. Raises ``ValueError`` naming the line of any malformed token.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    parsed = _parse_plain(text) if "#" not in text and "qid" not in text else None
    if parsed is None:
        parsed = _parse_lines(text, source)
    labels, indices, values = parsed
    max_index = int(indices.max()) + 1 if indices.size else 0
    if n_features is None:
        n_features = max_index
    elif max_index > n_features:
        raise ValueError(f"{source}: feature index {max_index} exceeds n_features={n_features}")
    return SparseRows(indices, values, n_features), labels


def _parse_plain(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Vectorised parse of comment-free text; ``None`` when anything is off (the line parser then reports it)."""
    lines = [line for line in text.splitlines() if line.strip()]
    counts = np.fromiter((line.count(":") for line in lines), np.int64, len(lines))
    tokens = " ".join(lines).replace(":", " ").split()
    if len(tokens) != len(lines) + 2 * int(counts.sum()):
        return None
    try:
        numbers = np.array(tokens, dtype=np.float64)
    except ValueError:
        return None
    starts = np.concatenate([[0], np.cumsum(1 + 2 * counts)[:-1]]).astype(np.int64)
    is_label = np.zeros(len(numbers), bool)
    is_label[starts] = True
    pairs = numbers[~is_label].reshape(-1, 2)
    if pairs.size and (np.any(pairs[:, 0] < 1) or np.any(pairs[:, 0] != np.round(pairs[:, 0]))):
        return None
    rows = np.repeat(np.arange(len(lines)), counts)
    first = np.repeat(np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    position = np.arange(len(rows)) - first
    width = max(int(counts.max()) if len(lines) else 0, 1)
    indices = np.zeros((len(lines), width), np.int32)
    values = np.zeros((len(lines), width), np.float64)
    indices[rows, position] = pairs[:, 0].astype(np.int64) - 1
    values[rows, position] = pairs[:, 1]
    return numbers[starts], indices, values


def _parse_lines(text: str, source: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    labels: list[float] = []
    row_idx: list[list[int]] = []
    row_val: list[list[float]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        tokens = line.split()
        try:
            labels.append(float(tokens[0]))
            idx, val = [], []
            for tok in tokens[1:]:
                k, v = tok.split(":", 1)
                if k == "qid":
                    continue
                idx.append(int(k) - 1)
                val.append(float(v))
        except ValueError as err:
            raise ValueError(f"{source}, line {lineno}: not LIBSVM format ({err}): {line[:80]!r}") from None
        if idx and min(idx) < 0:
            raise ValueError(f"{source}, line {lineno}: feature indices are 1-based, found 0 or less")
        row_idx.append(idx)
        row_val.append(val)
    width = max(max((len(r) for r in row_idx), default=0), 1)
    indices = np.zeros((len(labels), width), np.int32)
    values = np.zeros((len(labels), width), np.float64)
    for i, (ri, rv) in enumerate(zip(row_idx, row_val)):
        indices[i, : len(ri)] = ri
        values[i, : len(rv)] = rv
    return np.asarray(labels), indices, values


def open_text(path: str | os.PathLike):
    """A text file, gzip-compressed or plain (told apart by its magic bytes)."""
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rt", encoding="utf-8") if gz else open(path, encoding="utf-8")


def iter_libsvm_blocks(path: str | os.PathLike, block_rows: int = 100_000) -> Iterator[str]:
    """The file's text in blocks of ``block_rows`` lines, read lazily: memory holds one block at a time."""
    with open_text(path) as fh:
        block: list[str] = []
        for line in fh:
            block.append(line)
            if len(block) == block_rows:
                yield "".join(block)
                block = []
        if block:
            yield "".join(block)
