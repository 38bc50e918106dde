"""Checkpoints of a run's carry: written atomically, refused when corrupted or made by another run.

A checkpoint is one ``.npz`` file holding the carry's leaves (learner states, confusion counts, curves of
every run), the number of chunks done, the number of chunks of the whole run, a fingerprint of the run that
wrote it (learner, objective, data, costs, permutations, key, dtype, curve points, chunk size) and one SHA-256
over all of that metadata and the arrays, so no field can change without the checkpoint being refused. It is
written to a temporary file, flushed, and renamed over the old one, so a run killed at any moment leaves
either the previous checkpoint or the new one, never a torn file.

Format 2 (this one) put the metadata inside the digest; checkpoints of format 1 are refused, not misread.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile

import numpy as np

from .files import atomic_write

FORMAT = 2


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used: unreadable, corrupted, or written by a different run."""


def _digest(meta: dict, leaves: list[np.ndarray]) -> str:
    h = hashlib.sha256(json.dumps({k: v for k, v in meta.items() if k != "digest"}, sort_keys=True).encode())
    for a in leaves:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def check_checkpoint_path(path: str | os.PathLike) -> str:
    """``path`` as a string, refusing (before any work) a path where no checkpoint can be written."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"checkpoint must be a file path, got {type(path).__name__}")
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"checkpoint {path} is a directory; give a file path")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"checkpoint {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(f"checkpoint {path}: folder {parent} is not writable")
    if os.path.exists(path) and not os.access(path, os.R_OK):
        raise PermissionError(f"checkpoint {path} exists but is not readable")
    return path


def save_checkpoint(path: str | os.PathLike, fingerprint: str, chunks_done: int, n_chunks: int,
                    leaves: list[np.ndarray]) -> None:
    """Writes the carry ``leaves`` after ``chunks_done`` of ``n_chunks`` chunks, atomically."""
    path = os.fspath(path)
    leaves = [np.asarray(a) for a in leaves]
    meta = {"format": FORMAT, "fingerprint": fingerprint, "chunks_done": int(chunks_done), "n_chunks": int(n_chunks),
            "n_leaves": len(leaves)}
    meta["digest"] = _digest(meta, leaves)
    with atomic_write(path) as fh:
        np.savez(fh, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                 **{f"leaf_{i}": a for i, a in enumerate(leaves)})


def load_checkpoint(path: str | os.PathLike, fingerprint: str, n_chunks: int) -> tuple[int, list[np.ndarray]] | None:
    """``(chunks_done, leaves)`` from the checkpoint at ``path``, ``None`` if there is none.

    Raises:
        CheckpointError: the file is unreadable or corrupted, of another format, or written by a different run.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        return None
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(archive["meta"].tobytes().decode())
            if not isinstance(meta, dict):
                raise ValueError("its metadata is not an object")
            n_leaves = meta.get("n_leaves")
            if isinstance(n_leaves, bool) or not isinstance(n_leaves, int) or not 0 <= n_leaves <= len(archive.files):
                raise ValueError(f"n_leaves is {n_leaves!r}")
            leaves = [archive[f"leaf_{i}"] for i in range(n_leaves)]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, UnicodeDecodeError) as err:
        raise CheckpointError(f"checkpoint {path} is unreadable or corrupted ({err}); "
                              "delete it to start over") from None
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {path} has format {meta.get('format')!r}, this version of jcsol reads "
                              f"format {FORMAT} (older checkpoints did not cover all their fields with their digest); "
                              "delete it to start over")
    if meta.get("digest") != _digest(meta, leaves):
        raise CheckpointError(f"checkpoint {path} is corrupted (its arrays and fields do not match their SHA-256); "
                              "delete it to start over")
    if meta.get("fingerprint") != fingerprint or meta.get("n_chunks") != n_chunks:
        raise CheckpointError(
            f"checkpoint {path} was written by a different run (the learner, objective, data, costs, permutations, "
            "key, dtype, curve points or chunk size differ); use another path or delete it")
    done = meta.get("chunks_done")
    if isinstance(done, bool) or not isinstance(done, int) or not 1 <= done <= n_chunks:
        raise CheckpointError(f"checkpoint {path}: chunks_done={done!r} is not in [1, {n_chunks}]; delete it")
    return done, leaves
