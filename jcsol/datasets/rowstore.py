"""Rows on disk: a LIBSVM file converted once, block by block, into fixed-width binary arrays.

A :class:`RowStore` lets :func:`jcsol.run` stream data larger than memory: the engine reads, for each chunk of
rounds, just the rows the runs need (any order: a permutation-free pass or fixed permutations of the index)
from memory-mapped arrays, and releases the pages afterwards. Building a store reads the text twice (a cheap
pass to size the arrays, a parsing pass to fill them), one block at a time.

A store is built in a temporary folder beside ``directory`` and moved into place only when complete, so a
build that fails (bad line, full disk, interrupt) leaves the previous store, or nothing — never a store that
opens on a mix of old and new rows. Opening a store checks its metadata against its arrays and its labels
against their SHA-256; reading rows checks their indices and values, so a store truncated or damaged on disk
is refused instead of read as other data. (The feature arrays are not hashed on opening, which would read the
whole store: a value overwritten in place by another finite value is not detected.)
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
from numpy.typing import DTypeLike

from ..stream import SparseRows, check_features, check_fits, check_flags
from .libsvm import MAX_INDEX, check_block_rows, check_n_features, iter_libsvm_blocks, read_libsvm

FORMAT = 1
_FILES = ("meta.json", "indices.npy", "values.npy", "labels.npy", "checks.npy")
_MIX = np.uint64(0x9E3779B97F4A7C15)


def row_checksums(indices: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A 64-bit checksum of each row's indices and value bits (position-weighted, mixed; wraps modulo 2⁶⁴):
    cheap beside the gather that reads the rows, and changed by any overwritten, zeroed or shifted entry."""
    bits = np.ascontiguousarray(values)
    bits = bits.view(np.uint64 if bits.dtype.itemsize == 8 else np.uint32).astype(np.uint64)
    with np.errstate(over="ignore"):
        positions = np.arange(1, indices.shape[1] + 1, dtype=np.uint64) * _MIX
        h = (indices.astype(np.uint64) * _MIX) ^ bits ^ positions
        h ^= h >> np.uint64(31)
        h *= _MIX
        h ^= h >> np.uint64(29)
        return h.sum(axis=1, dtype=np.uint64)


class RowStoreError(ValueError):
    """A row store that cannot be used: incomplete, damaged, or of another format."""


class RowStore:
    """Fixed-width sparse rows and ±1 labels of a dataset, memory-mapped from ``directory``.

    Attributes:
        y: the labels (int8 ±1), held in memory.
        shape: ``(n_rows, n_features)``.
        fingerprint: SHA-256 of the source text and the build options.

    Raises:
        FileNotFoundError: ``directory`` holds no row store.
        RowStoreError: the store is damaged, incomplete or of another format (rebuild it).
    """

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        meta_path = self.directory / "meta.json"
        if not meta_path.is_file():
            raise FileNotFoundError(
                f"{self.directory} is not a row store (no meta.json); build one with RowStore.build"
            )
        try:
            self.meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise RowStoreError(f"row store {self.directory}: meta.json is unreadable ({err}); rebuild it") from None
        self.shape, width, dtype = _check_meta(self.meta, self.directory)
        self.indices = _open_array(self.directory / "indices.npy", np.int32, self.shape[0:1] + (width,), mmap=True)
        self.values = _open_array(self.directory / "values.npy", dtype, self.shape[0:1] + (width,), mmap=True)
        self.y = _open_array(self.directory / "labels.npy", np.int8, self.shape[0:1], mmap=False)
        self.checks = _open_array(self.directory / "checks.npy", np.uint64, self.shape[0:1], mmap=True)
        if hashlib.sha256(np.ascontiguousarray(self.y).tobytes()).hexdigest() != self.meta["labels_sha256"]:
            raise RowStoreError(f"row store {self.directory}: labels.npy does not match its SHA-256; rebuild it")
        self.fingerprint = self.meta["fingerprint"]

    @property
    def width(self) -> int:
        return self.indices.shape[1]

    def take(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(indices, values)`` of the given rows, read from disk; the mapped pages are released afterwards.

        Raises ``RowStoreError`` when the rows read hold indices outside ``[0, n_features)`` or non-finite
        values (a store damaged on disk since it was opened).
        """
        rows = np.asarray(rows)
        if rows.size and (rows.min() < 0 or rows.max() >= self.shape[0]):
            raise IndexError(
                f"row store {self.directory} has {self.shape[0]} rows; asked for rows outside [0, {self.shape[0]})"
            )
        order = np.argsort(rows, kind="stable")
        indices = np.empty((len(rows), self.width), self.indices.dtype)
        values = np.empty((len(rows), self.width), self.values.dtype)
        indices[order] = self.indices[rows[order]]
        values[order] = self.values[rows[order]]
        for array in (self.indices, self.values):
            array._mmap.madvise(mmap.MADV_DONTNEED)  # type: ignore[attr-defined]  # np.memmap's mmap, unstubbed
        self._verify(rows, indices, values)
        return indices, values

    def _verify(self, rows: np.ndarray, indices: np.ndarray, values: np.ndarray) -> None:
        """Refuses rows whose checksums differ from the build's, or whose indices or values are out of range."""
        damaged = np.flatnonzero(row_checksums(indices, values) != self.checks[rows])
        if damaged.size or (
            indices.size and (indices.min() < 0 or indices.max() >= self.shape[1] or not np.isfinite(values).all())
        ):
            where = f" (row {int(rows[damaged[0]])} differs from its checksum)" if damaged.size else ""
            raise RowStoreError(
                f"row store {self.directory} is damaged{where}: rows hold other indices or values "
                "than were built; rebuild it"
            )

    @classmethod
    def build(
        cls,
        source: str | os.PathLike,
        directory: str | os.PathLike,
        *,
        positive=None,
        normalize: bool = True,
        n_features: int | None = None,
        dtype=np.float32,
        block_rows: int = 100_000,
    ) -> RowStore:
        """Converts the LIBSVM file ``source`` (plain or gzip) into a store in ``directory``.

        Labels map to ±1 as in :func:`jcsol.datasets.load` (``positive=`` for multiclass data); rows are
        L2-normalised unless ``normalize=False``; the file is read as :func:`jcsol.datasets.read_libsvm` reads
        it (malformed lines, NaN or infinite values are refused with their line number).

        ``directory`` may be missing, empty, or hold a row store, which is replaced only once the new one is
        complete; a folder holding anything else is refused.
        """
        from . import binarize, check_float_dtype, l2_normalize

        source, directory = Path(source), Path(directory)
        if not source.is_file():
            raise FileNotFoundError(f"{source}: no such file")
        if n_features is not None:
            check_n_features(n_features)
        check_flags(normalize=normalize)
        dtype = check_float_dtype(dtype)
        block_rows = check_block_rows(block_rows)
        _check_target(directory)
        directory.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(directory.parent, os.W_OK):
            raise PermissionError(f"cannot build a row store in {directory.parent}: the folder is not writable")
        building = Path(tempfile.mkdtemp(prefix=f".{directory.name}.building-", dir=directory.parent))
        try:
            meta, labels = _write_arrays(
                source,
                building,
                n_features=n_features,
                normalize=normalize,
                dtype=dtype,
                block_rows=block_rows,
                l2_normalize=l2_normalize,
            )
            y = binarize(labels, positive)
            np.save(building / "labels.npy", y)
            meta["labels_sha256"] = hashlib.sha256(y.tobytes()).hexdigest()
            options = {
                "positive": None if positive is None else np.atleast_1d(positive).tolist(),
                "normalize": bool(normalize),
                "dtype": dtype.name,
            }
            digest = hashlib.sha256(bytes.fromhex(meta.pop("text_sha256")))
            digest.update(json.dumps(options, sort_keys=True).encode())
            meta.update(options, format=FORMAT, source=os.fspath(source), fingerprint=digest.hexdigest())
            with open(building / "meta.json", "w", encoding="utf-8") as fh:
                json.dump(meta, fh, indent=1)
                fh.flush()
                os.fsync(fh.fileno())
            _move_into_place(building, directory)
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
        return cls(directory)

    def load(self) -> tuple[SparseRows, np.ndarray]:
        """The whole store in memory (for stores that fit)."""
        indices, values = np.asarray(self.indices), np.asarray(self.values)
        self._verify(np.arange(self.shape[0]), indices, values)
        return check_features(SparseRows(indices, values, self.shape[1])), self.y


def _check_target(directory: Path) -> None:
    """Refuses to build over a file, or over a folder that holds something other than a row store."""
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise FileExistsError(f"{directory} exists and is not a folder; choose another directory for the row store")
    if directory.is_dir():
        others = sorted(p.name for p in directory.iterdir() if p.name not in _FILES)
        if others or (any(directory.iterdir()) and not (directory / "meta.json").is_file()):
            held = ", ".join(others[:5]) or "an incomplete store"
            raise FileExistsError(
                f"{directory} holds files that are not a row store ({held}); give an empty or new "
                "folder, or remove them"
            )


def _write_arrays(
    source: Path, out: Path, *, n_features, normalize: bool, dtype: np.dtype, block_rows: int, l2_normalize
) -> tuple[dict, np.ndarray]:
    """Sizes the arrays (pass 1) and fills them (pass 2) in ``out``; the raw labels and the metadata."""
    n_rows, width, n_pairs = 0, 1, 0
    for _, block in iter_libsvm_blocks(source, block_rows):
        lines = [line.split("#", 1)[0] for line in block.split("\n")]
        lines = [line for line in lines if line.strip(" \t\r")]
        n_rows += len(lines)
        width = max(width, max((line.count(":") for line in lines), default=1))
        n_pairs += sum(line.count(":") - line.count("qid:") for line in lines)
    if n_rows == 0:
        raise ValueError(f"{source}: no examples (the file is empty or holds only comments and blank lines)")
    raw_labels = np.empty(n_rows, np.float64)
    text_digest, row, max_index = hashlib.sha256(), 0, 0
    with (
        _NpyWriter(out / "indices.npy", np.int32, (n_rows, width)) as indices,
        _NpyWriter(out / "values.npy", dtype, (n_rows, width)) as values,
        _NpyWriter(out / "checks.npy", np.uint64, (n_rows,)) as checks,
    ):
        for first_line, block in iter_libsvm_blocks(source, block_rows):
            text_digest.update(block.encode("utf-8", errors="surrogateescape"))
            rows, labels = read_libsvm(
                block,
                source=os.fspath(source),
                first_line=first_line,
                allow_empty=True,
                n_features=MAX_INDEX if n_features is None else n_features,
            )
            if not len(labels):
                continue
            if row + len(labels) > n_rows:
                raise RuntimeError(f"{source} changed while it was read (more rows than in the first pass)")
            if normalize:
                rows = l2_normalize(rows)
            check_fits(rows.values, dtype, f"{source}: X", first_row=row)
            pad = ((0, 0), (0, width - rows.indices.shape[1]))
            block_indices = np.pad(rows.indices, pad).astype(np.int32)
            block_values = np.pad(rows.values, pad).astype(dtype)
            indices.append(block_indices)
            values.append(block_values)
            checks.append(row_checksums(block_indices, block_values))
            raw_labels[row : row + len(labels)] = labels
            max_index = max(max_index, int(rows.indices.max()) + 1)
            row += len(labels)
    if n_features is None and not n_pairs:
        raise ValueError(f"{source}: no line holds a feature (give n_features= for rows that are all zero)")
    meta = {
        "n_rows": n_rows,
        "n_features": int(n_features or max_index),
        "width": width,
        "text_sha256": text_digest.hexdigest(),
    }
    return meta, raw_labels


def _move_into_place(building: Path, directory: Path) -> None:
    """Renames the complete store ``building`` to ``directory``, replacing a store there only after that."""
    if directory.is_dir() and any(directory.iterdir()):
        old = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old-", dir=directory.parent))
        os.rename(directory, old / "store")
        os.rename(building, directory)
        shutil.rmtree(old, ignore_errors=True)
    else:
        if directory.is_dir():
            directory.rmdir()
        os.rename(building, directory)


def _check_meta(meta, directory: Path) -> tuple[tuple[int, int], int, np.dtype]:
    def bad(why: str):
        raise RowStoreError(f"row store {directory}: {why}; rebuild it with RowStore.build")

    if not isinstance(meta, dict):
        bad("meta.json does not hold an object")
    if meta.get("format") != FORMAT:
        bad(
            f"format {meta.get('format')!r}, this version of jcsol reads format {FORMAT} (stores built before "
            "formats were recorded could be incomplete)"
        )
    for name in ("n_rows", "n_features", "width"):
        value = meta.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_INDEX:
            bad(f"meta.json field {name!r} is {value!r}, not an integer in [1, {MAX_INDEX}]")
    if meta.get("dtype") not in ("float32", "float64"):
        bad(f"meta.json field 'dtype' is {meta.get('dtype')!r}, not float32 or float64")
    for name in ("fingerprint", "labels_sha256"):
        digest = meta.get(name)
        if not (isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
            bad(f"meta.json field {name!r} is {digest!r}, not a SHA-256")
    return (meta["n_rows"], meta["n_features"]), meta["width"], np.dtype(meta["dtype"])


def _open_array(path: Path, dtype, shape: tuple[int, ...], *, mmap: bool) -> np.ndarray:
    try:
        array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise RowStoreError(f"row store {path.parent}: {path.name} is missing or damaged ({err}); rebuild it") from None
    if array.shape != shape or array.dtype != np.dtype(dtype):
        raise RowStoreError(
            f"row store {path.parent}: {path.name} holds {array.dtype} {array.shape}, its metadata "
            f"says {np.dtype(dtype)} {shape}; the store is damaged or mixed, rebuild it"
        )
    return array


class _NpyWriter:
    """Writes a ``.npy`` file of known shape by appending row blocks: memory holds one block, not the array."""

    def __init__(self, path: Path, dtype: DTypeLike, shape: tuple[int, ...]) -> None:
        self.dtype, self.shape, self.rows = np.dtype(dtype), shape, 0
        self.fh = open(path, "wb")
        np.lib.format.write_array_header_2_0(
            self.fh, {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": shape}
        )

    def append(self, block: np.ndarray) -> None:
        self.fh.write(np.ascontiguousarray(block, self.dtype).tobytes())
        self.rows += block.shape[0]

    def __enter__(self) -> _NpyWriter:
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.fh.flush()
            os.fsync(self.fh.fileno())
        self.fh.close()
        if exc[0] is None and self.rows != self.shape[0]:
            raise RuntimeError(f"wrote {self.rows} rows of {self.shape[0]}: the source changed while it was read")
