"""Checkpoints of a run's carry: written atomically, refused when corrupted or made by another run.

A checkpoint is one ``.npz`` file holding the carry's leaves (learner states, confusion counts, curves of
every run), the number of chunks done, a fingerprint of the run that wrote it (learner, objective, data,
permutations, dtype, chunk size) and a SHA-256 of its arrays. It is written to a temporary file, flushed,
and renamed over the old one, so a run killed at any moment leaves either the previous checkpoint or the
new one, never a torn file.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile

import numpy as np

FORMAT = 1


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used: unreadable, corrupted, or written by a different run."""


def _digest(leaves: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for a in leaves:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save_checkpoint(path: str | os.PathLike, fingerprint: str, chunks_done: int, leaves: list[np.ndarray]) -> None:
    """Writes the carry ``leaves`` after ``chunks_done`` chunks, atomically."""
    path = os.fspath(path)
    meta = {"format": FORMAT, "fingerprint": fingerprint, "chunks_done": int(chunks_done),
            "n_leaves": len(leaves), "digest": _digest(leaves)}
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as fh:
        np.savez(fh, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                 **{f"leaf_{i}": np.asarray(a) for i, a in enumerate(leaves)})
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def load_checkpoint(path: str | os.PathLike, fingerprint: str) -> tuple[int, list[np.ndarray]] | None:
    """``(chunks_done, leaves)`` from the checkpoint at ``path``, ``None`` if there is none.

    Raises:
        CheckpointError: the file is unreadable or corrupted, or it was written by a different run.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        return None
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(archive["meta"].tobytes().decode())
            leaves = [archive[f"leaf_{i}"] for i in range(int(meta["n_leaves"]))]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, UnicodeDecodeError) as err:
        raise CheckpointError(f"checkpoint {path} is unreadable or corrupted ({err}); delete it to start over") from None
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {path} has format {meta.get('format')}, expected {FORMAT}")
    if _digest(leaves) != meta["digest"]:
        raise CheckpointError(f"checkpoint {path} is corrupted (its arrays do not match their SHA-256); "
                              "delete it to start over")
    if meta["fingerprint"] != fingerprint:
        raise CheckpointError(
            f"checkpoint {path} was written by a different run (the learner, objective, data, permutations, "
            "dtype, curve points or chunk size differ); use another path or delete it")
    return int(meta["chunks_done"]), leaves
