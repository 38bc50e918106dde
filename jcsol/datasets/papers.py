"""The datasets of the papers' tables, read from a folder of LIBSVM files (train and test files concatenated,
rows L2-normalised, labels ±1 with the papers' positive class).

``load_dataset("a9a", data_dir)`` reads ``a9a.gz`` and ``a9a.t.gz`` from ``data_dir``; :data:`DATASETS` lists
the files, dimension, positive class and the number of examples of every set as the papers used it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

__all__ = ["PaperDataset", "DATASETS", "DataMissing", "load_dataset"]


class DataMissing(FileNotFoundError):
    """A dataset a table needs is not in the data directory."""


class PaperDataset(NamedTuple):
    """One dataset of the papers' tables."""

    files: tuple[str, ...]  # LIBSVM files in the data folder, concatenated in this order (none: not available)
    n_features: int
    positive: Any  # the label(s) mapped to +1 against the rest, or None for the usual encodings
    n_paper: int  # the number of examples the papers' values are for
    description: str


DATASETS: dict[str, PaperDataset] = {
    "german": PaperDataset(("german.numer",), 24, None, 1000, "german.numer (unscaled), bad credit = +1"),
    "german_scale": PaperDataset(
        ("german.numer_scale",), 24, None, 1000, "german.numer_scale (LIBSVM's [-1, 1]-scaled copy, as LIBOL ships it)"
    ),
    "a9a": PaperDataset(("a9a.gz", "a9a.t.gz"), 123, None, 48842, "a9a train + test"),
    "ijcnn1": PaperDataset(("ijcnn1.gz", "ijcnn1.t.gz"), 22, None, 141691, "ijcnn1 train + test"),
    "ijcnn1_train": PaperDataset(
        ("ijcnn1.gz",),
        22,
        None,
        49990,
        "ijcnn1 training file only (49,990 rows): the ACOG paper's Table II numbers fit it, not train + test (its "
        "ACOG-II cost row, sensitivity 87.626% and specificity 84.770%, gives cost/100 = 12.28 on these 49,990 "
        "rows as printed, 34.6 on 141,691)",
    ),
    "australian": PaperDataset(("australian",), 14, None, 690, "australian (unscaled)"),
    "magic04": PaperDataset(("magic04.gz",), 10, None, 19020, "magic04, hadron = +1"),
    "dna": PaperDataset(("dna.scale",), 180, 1, 2000, "dna.scale (train), class 1 vs rest"),
    "w8a": PaperDataset(("w8a.gz",), 300, None, 64700, "w8a train only (w8a.t is not available)"),
    "covtype": PaperDataset((), 54, None, 581012, "covtype (not available)"),
    "KDDCUP08": PaperDataset((), 117, None, 102294, "KDDCUP08 (not available)"),
    "cod-rna": PaperDataset((), 8, None, 271617, "cod-rna (not available)"),
}
SHIPPED_FALLBACK = {"german": "german", "australian": "australian"}


def load_dataset(name: str, data_dir: str | os.PathLike | None) -> tuple[np.ndarray, np.ndarray]:
    """A dataset of the papers' tables (a key of :data:`DATASETS`) from ``data_dir``: its LIBSVM files, train
    and test concatenated, rows L2-normalised; german and australian fall back to the copies shipped with jcsol
    when ``data_dir`` is ``None`` or lacks them.

    Raises:
        ValueError: ``name`` is not a key of :data:`DATASETS`.
        DataMissing: a file is not there (or the set is not available at all).
    """
    from . import load  # the package imports this module at its end

    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose from {', '.join(DATASETS)}")
    files, d, positive, _, _ = DATASETS[name]
    if not files:
        raise DataMissing(f"{name} is not available: jcsol knows no LIBSVM file of it")
    paths = [Path(data_dir) / f for f in files] if data_dir is not None else []
    if data_dir is None or not all(p.exists() for p in paths):
        if name in SHIPPED_FALLBACK:
            return load(SHIPPED_FALLBACK[name])
        missing = [str(p) for p in paths if not p.exists()] or list(files)
        raise DataMissing(f"{name}: missing {', '.join(missing)}")
    parts = [load(p, n_features=d, positive=positive) for p in paths]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
