"""Datasets: a LIBSVM/svmlight reader, label mapping to ±1, L2 normalisation, and small shipped sets.

The shipped sets (``data/``, provenance in ``data/PROVENANCE.md``) load by name::

    X, y = jcsol.datasets.load("german")          # german.numer, 1000 × 24, 300 positives
    X, y = jcsol.datasets.load("path/to/a9a.gz")  # any LIBSVM file, plain or gzip

Label encodings map to ±1 (+1 the rare class) as follows: ``{-1, +1}`` as is; ``{0, 1}`` and ``{1, 2}`` with
``1 → +1``; any other set of labels needs ``positive=``, which picks the +1 class (or classes) against the rest.

The papers' larger sets are read from a data folder, given as an argument or by ``JCSOL_DATA``
(:func:`data_dir`; jcsol looks nowhere else): :func:`load_dataset` the LIBSVM sets of the cost-sensitive
papers' tables (:mod:`jcsol.datasets.papers`), :func:`load_koil` the KOIL authors' files and
:func:`koil_synthetic` the KOIL synthetic sets (:mod:`jcsol.datasets.koil`). :func:`fetch` downloads LIBSVM
sets into a cache.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np
from numpy.typing import DTypeLike

from ..stream import SparseRows, check_features, check_fits, check_flags, is_scipy_sparse
from . import synthetic
from .libsvm import add_bias, check_n_features, file_bytes, iter_libsvm_blocks, read_libsvm
from .rowstore import RowStore, RowStoreError

__all__ = [
    "load",
    "add_bias",
    "data_dir",
    "read_libsvm",
    "iter_libsvm_blocks",
    "binarize",
    "l2_normalize",
    "RowStore",
    "RowStoreError",
    "SHIPPED",
    "Shipped",
    "SparseRows",
    "fetch",
    "load_dataset",
    "DATASETS",
    "DataMissing",
    "load_koil",
    "koil_synthetic",
    "synthetic",
    "SYNTHETIC",
    "minmax_scale",
]


@dataclass(frozen=True)
class Shipped:
    """A dataset that ships inside the package."""

    file: str
    sha256: str  # of the uncompressed content, as in the source's manifest
    n_features: int
    description: str


SHIPPED: dict[str, Shipped] = {
    "german": Shipped(
        "german.numer.gz",
        "69ffe0c4ba0bd91f936986d7c070dfca7e22064bbd5ab8e1fb925d6c86024ec8",
        24,
        "Statlog German credit, LIBSVM german.numer (unscaled), 1000 × 24, bad credit = +1 (300)",
    ),
    "australian": Shipped(
        "australian.gz",
        "a3b5960775ac0eff78b579ab43affd73b848bef6f59d1cc972fc60188f0fb6ba",
        14,
        "Statlog Australian credit, LIBSVM australian (unscaled), 690 × 14, +1: 307",
    ),
    "svmguide3": Shipped(
        "svmguide3.gz",
        "c01ba3d6a58d6c2a6008d2e544755c14db1437766babc8ff79689cf0762e84ca",
        21,
        "LIBSVM svmguide3 (LIBOL's copy), 1243 × 21, +1: 296",
    ),
    "spambase": Shipped(
        "spambase.gz",
        "3559e4910f61c97c9855848dc35fe2e7bc91e2c54a373bbaf68d9929deb30f9a",
        57,
        "UCI Spambase, 4601 × 57, spam = +1 (1813)",
    ),
}


ENV_DATA = "JCSOL_DATA"


def data_dir(explicit: str | os.PathLike | None = None, *, what: str = "data_dir") -> Path:
    """The folder of the papers' data sets (LIBSVM files, the KOIL authors' files under ``koil/``): ``explicit``
    when given, else the environment variable ``JCSOL_DATA``; a ``FileNotFoundError`` naming ``what`` when neither
    names an existing folder. jcsol never looks for data outside itself on its own."""
    chosen = explicit if explicit is not None else os.environ.get(ENV_DATA) or None
    if chosen is None:
        raise FileNotFoundError(
            f"no data folder: pass {what}=DIR or set {ENV_DATA}=DIR (the folder of the LIBSVM files)"
        )
    path = Path(chosen).expanduser()
    if not path.is_dir():
        source = what if explicit is not None else ENV_DATA
        raise FileNotFoundError(f"{source} {chosen}: no such directory")
    return path


def _shipped_bytes(name: str) -> bytes:
    entry = SHIPPED[name]
    raw = gzip.decompress(resources.files(__name__).joinpath("data", entry.file).read_bytes())
    digest = hashlib.sha256(raw).hexdigest()
    if digest != entry.sha256:
        raise OSError(f"shipped dataset {name!r} is corrupted: sha256 {digest} != {entry.sha256}")
    return raw


def _read_bytes(name_or_path: str | os.PathLike) -> tuple[bytes, int | None]:
    key = os.fspath(name_or_path)
    if key in SHIPPED:
        return _shipped_bytes(key), SHIPPED[key].n_features
    if not os.path.exists(key):
        from .fetch import REGISTRY  # imported at the package's end

        hint = f"; jcsol.datasets.fetch({key!r}) downloads and loads it" if key in REGISTRY else ""
        raise FileNotFoundError(
            f"no dataset {key!r}: not a shipped set ({', '.join(sorted(SHIPPED))}) and no such file{hint}"
        )
    if os.path.isdir(key):
        raise IsADirectoryError(f"{key} is a directory, not a LIBSVM file (a row store opens with RowStore({key!r}))")
    return file_bytes(key), None


def binarize(labels: np.ndarray, positive=None) -> np.ndarray:
    """Maps raw labels to ±1 (+1 the rare class) following the rules in the module docstring.

    Args:
        labels: raw labels.
        positive: a label or an iterable of labels that become +1, everything else −1: numbers, or text for
            labels that are text (``binarize(df["status"], positive="fraud")``).
    """
    labels = np.asarray(labels)
    present = np.unique(labels)
    if positive is not None:
        pos = np.atleast_1d(np.asarray(positive))
        textual = labels.dtype.kind in "USO" and pos.dtype.kind in "US"  # text labels: "fraud" against the rest
        if pos.size == 0 or not (pos.dtype.kind in "iuf" or textual):
            raise ValueError(f"positive must be a label or a non-empty list of labels, got {positive!r}")
        missing = [p.item() for p in pos if p not in present]
        if missing:
            raise ValueError(
                f"positive={positive!r}: label(s) {missing} not in the data, whose labels are {present.tolist()}"
            )
        return np.where(np.isin(labels, pos), 1, -1).astype(np.int8)
    as_set = set(present.tolist())
    if as_set <= {-1, 1}:
        return labels.astype(np.int8)
    if as_set <= {0, 1} or as_set <= {1, 2}:
        return np.where(labels == 1, 1, -1).astype(np.int8)
    raise ValueError(
        f"labels {sorted(as_set)[:10]} are not binary; pass positive=<label> to pick the +1 class against the rest"
    )


def check_float_dtype(dtype) -> np.dtype:
    """``dtype`` as float32 or float64, refusing any other dtype (integer features would be rounded)."""
    try:
        resolved = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be float32 or float64, got {dtype!r}") from None
    if resolved not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {resolved}")
    return resolved


@overload
def l2_normalize(X: SparseRows) -> SparseRows: ...
@overload
def l2_normalize(X: np.ndarray) -> np.ndarray: ...
def l2_normalize(X: np.ndarray | SparseRows) -> np.ndarray | SparseRows:
    """Each row divided by its L2 norm; a zero row stays zero. A row whose sum of squares overflows or underflows
    (values from about 1e154, or all below about 1e-146, in float64) has its norm taken over the row divided by its
    largest magnitude first.

    Dense ``(n, d)`` rows (an array, or nested lists) come back as an array, :class:`SparseRows` and SciPy sparse
    matrices (taken as ``SparseRows.from_scipy``) as :class:`SparseRows` with their indices as they are; float
    values keep their dtype, integers and booleans become float64. Anything else is refused (``TypeError``)."""
    if is_scipy_sparse(X):
        X = SparseRows.from_scipy(X)
    values = np.asarray(X.values if isinstance(X, SparseRows) else X)
    if values.ndim != 2 or values.dtype.kind not in "biuf":
        raise TypeError(
            "l2_normalize takes (n, d) rows of real numbers (an array, jcsol.SparseRows or a SciPy sparse matrix), "
            f"not {values.dtype} of shape {values.shape}"
        )
    if values.dtype.kind != "f":
        values = values.astype(np.float64)
    with np.errstate(over="ignore", under="ignore"):
        squares = np.einsum("ij,ij->i", values, values)
    info = np.finfo(squares.dtype)
    extreme = np.isinf(squares) | (squares < info.tiny / info.eps)
    extreme[extreme] = (values[extreme] != 0).any(axis=1)  # a zero row stays zero
    norms = np.sqrt(squares)
    with np.errstate(over="ignore", under="ignore"):
        scaled = values / np.where(norms > 0, norms, 1.0)[:, None]
    if extreme.any():  # each over its largest magnitude first: a norm near the dtype's largest would overflow
        rows = values[extreme]
        rows = rows / np.abs(rows).max(axis=1)[:, None]
        scaled[extreme] = rows / np.linalg.norm(rows, axis=1)[:, None]
    return X._replace(values=scaled) if isinstance(X, SparseRows) else scaled


@overload
def load(
    name_or_path: str | os.PathLike,
    *,
    positive: Any = ...,
    normalize: bool = ...,
    bias: bool = ...,
    sparse: Literal[False] = ...,
    n_features: int | None = ...,
    dtype: DTypeLike = ...,
) -> tuple[np.ndarray, np.ndarray]: ...
@overload
def load(
    name_or_path: str | os.PathLike,
    *,
    positive: Any = ...,
    normalize: bool = ...,
    bias: bool = ...,
    sparse: Literal[True],
    n_features: int | None = ...,
    dtype: DTypeLike = ...,
) -> tuple[SparseRows, np.ndarray]: ...
@overload
def load(
    name_or_path: str | os.PathLike,
    *,
    positive: Any = ...,
    normalize: bool = ...,
    bias: bool = ...,
    sparse: bool,
    n_features: int | None = ...,
    dtype: DTypeLike = ...,
) -> tuple[np.ndarray | SparseRows, np.ndarray]: ...
def load(
    name_or_path: str | os.PathLike,
    *,
    positive: Any = None,
    normalize: bool = True,
    bias: bool = False,
    sparse: bool = False,
    n_features: int | None = None,
    dtype: DTypeLike = np.float32,
) -> tuple[np.ndarray | SparseRows, np.ndarray]:
    """Loads a shipped dataset by name, or a LIBSVM/svmlight file (plain or gzip) by path.

    Args:
        name_or_path: one of :data:`SHIPPED` (``"german"``, ``"australian"``, ``"svmguide3"``, ``"spambase"``)
            or a path.
        positive: the label (or labels) mapped to +1 against the rest; needed for multiclass sets.
        normalize: divide each row by its L2 norm (the papers' setting).
        bias: append a constant feature 1 after the normalisation (:func:`jcsol.datasets.add_bias`): column ``d`` of
            ``d + 1``, the learnt offset of rows with no non-zero feature (which otherwise score 0, predicted +1).
        sparse: return :class:`SparseRows` instead of a dense array.
        n_features: the dimension, when a file's largest index is below it (e.g. a test split).
        dtype: float dtype of the features.

    Returns:
        ``(X, y)`` with ``X`` of shape ``(n, d)`` (dense or sparse rows) and ``y`` int8 labels in ``{-1, +1}``.
    """
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TypeError(f"name_or_path must be a dataset name or a path, got {type(name_or_path).__name__}")
    if n_features is not None:
        check_n_features(n_features)
    check_flags(normalize=normalize, bias=bias, sparse=sparse)
    dtype = check_float_dtype(dtype)
    raw, shipped_d = _read_bytes(name_or_path)
    rows, labels = read_libsvm(
        raw, n_features=shipped_d if n_features is None else n_features, source=os.fspath(name_or_path)
    )
    rows = check_features(rows)
    y = binarize(labels, positive)
    if normalize:
        rows = l2_normalize(rows)
    check_fits(rows.values, dtype)
    rows = rows._replace(values=rows.values.astype(dtype))
    if bias:
        rows = add_bias(rows)
    return (rows if sparse else rows.todense()), y


from .fetch import fetch  # noqa: E402  (downloads the papers' LIBSVM sets; uses load above)
from .koil import SYNTHETIC, koil_synthetic, load_koil, minmax_scale  # noqa: E402  (use load above)
from .papers import DATASETS, DataMissing, load_dataset  # noqa: E402
