"""Rows on disk: a LIBSVM file converted once, block by block, into fixed-width binary arrays.

A :class:`RowStore` lets :func:`jcsol.run` stream data larger than memory: the engine reads, for each chunk of
rounds, just the rows the runs need (any order: a permutation-free pass or fixed permutations of the index)
from memory-mapped arrays, and releases the pages afterwards. Building a store reads the text twice (a cheap
pass to size the arrays, a parsing pass to fill them), one block at a time.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
from pathlib import Path

import numpy as np

from ..stream import SparseRows, check_features
from .libsvm import iter_libsvm_blocks, read_libsvm


class RowStore:
    """Fixed-width sparse rows and ±1 labels of a dataset, memory-mapped from ``directory``.

    Attributes:
        y: the labels (int8 ±1), held in memory.
        shape: ``(n_rows, n_features)``.
        fingerprint: SHA-256 of the source text and the build options.
    """

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        meta_path = self.directory / "meta.json"
        if not meta_path.exists():
            raise FileNotFoundError(f"{self.directory} is not a row store (no meta.json); build one with RowStore.build")
        self.meta = json.loads(meta_path.read_text())
        self.indices = np.load(self.directory / "indices.npy", mmap_mode="r")
        self.values = np.load(self.directory / "values.npy", mmap_mode="r")
        self.y = np.load(self.directory / "labels.npy")
        self.shape = (int(self.meta["n_rows"]), int(self.meta["n_features"]))
        self.fingerprint = self.meta["fingerprint"]

    @property
    def width(self) -> int:
        return self.indices.shape[1]

    def take(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(indices, values)`` of the given rows, read from disk; the mapped pages are released afterwards."""
        order = np.argsort(rows, kind="stable")
        indices = np.empty((len(rows), self.width), self.indices.dtype)
        values = np.empty((len(rows), self.width), self.values.dtype)
        indices[order] = self.indices[rows[order]]
        values[order] = self.values[rows[order]]
        for array in (self.indices, self.values):
            array._mmap.madvise(mmap.MADV_DONTNEED)
        return indices, values

    @classmethod
    def build(cls, source: str | os.PathLike, directory: str | os.PathLike, *, positive=None,
              normalize: bool = True, n_features: int | None = None, dtype=np.float32,
              block_rows: int = 100_000) -> "RowStore":
        """Converts the LIBSVM file ``source`` (plain or gzip) into a store in ``directory``.

        Labels map to ±1 as in :func:`jcsol.datasets.load` (``positive=`` for multiclass data); rows are
        L2-normalised unless ``normalize=False``; NaN or infinite values are refused.
        """
        from . import binarize, l2_normalize

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        n_rows, width = 0, 1
        for block in iter_libsvm_blocks(source, block_rows):
            lines = [line for line in block.splitlines() if line.split("#", 1)[0].strip()]
            n_rows += len(lines)
            width = max(width, max((line.split("#", 1)[0].count(":") for line in lines), default=1))
        if n_rows == 0:
            raise ValueError(f"{source}: no examples")
        raw_labels = np.empty(n_rows, np.float64)
        digest, row, max_index = hashlib.sha256(), 0, 0
        with _NpyWriter(directory / "indices.npy", np.int32, (n_rows, width)) as indices, \
                _NpyWriter(directory / "values.npy", np.dtype(dtype), (n_rows, width)) as values:
            for block in iter_libsvm_blocks(source, block_rows):
                digest.update(block.encode())
                rows, labels = read_libsvm(block, source=os.fspath(source))
                rows = check_features(rows)
                if normalize:
                    rows = l2_normalize(rows)
                pad = ((0, 0), (0, width - rows.indices.shape[1]))
                indices.append(np.pad(rows.indices, pad))
                values.append(np.pad(rows.values, pad))
                raw_labels[row:row + len(labels)] = labels
                max_index = max(max_index, rows.n_features)
                row += len(labels)
        if n_features is not None and max_index > n_features:
            raise ValueError(f"{source}: feature index {max_index} exceeds n_features={n_features}")
        np.save(directory / "labels.npy", binarize(raw_labels, positive))
        options = {"positive": None if positive is None else np.atleast_1d(positive).tolist(),
                   "normalize": normalize, "dtype": np.dtype(dtype).name}
        digest.update(json.dumps(options, sort_keys=True).encode())
        meta = {"n_rows": n_rows, "n_features": n_features or max_index, "source": os.fspath(source),
                "fingerprint": digest.hexdigest(), **options}
        (directory / "meta.json").write_text(json.dumps(meta, indent=1))
        return cls(directory)

    def load(self) -> tuple[SparseRows, np.ndarray]:
        """The whole store in memory (for stores that fit)."""
        return SparseRows(np.asarray(self.indices), np.asarray(self.values), self.shape[1]), self.y


class _NpyWriter:
    """Writes a ``.npy`` file of known shape by appending row blocks: memory holds one block, not the array."""

    def __init__(self, path: Path, dtype, shape: tuple[int, int]):
        self.dtype, self.shape, self.rows = np.dtype(dtype), shape, 0
        self.fh = open(path, "wb")
        np.lib.format.write_array_header_2_0(
            self.fh, {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": shape})

    def append(self, block: np.ndarray) -> None:
        self.fh.write(np.ascontiguousarray(block, self.dtype).tobytes())
        self.rows += block.shape[0]

    def __enter__(self) -> "_NpyWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.fh.close()
        if exc[0] is None and self.rows != self.shape[0]:
            raise RuntimeError(f"wrote {self.rows} rows of {self.shape[0]}: the source changed while it was read")
