"""Checkpoints of a run's carry: written atomically, refused when corrupted or made by another run.

A checkpoint is one ``.npz`` file holding the carry's leaves (learner states, confusion counts, curves of
every run), the number of chunks done, the number of chunks of the whole run, a fingerprint of the run that
wrote it (learner, objective, data, costs, permutations, key, dtype, curve points, chunk size) and one SHA-256
over all of that metadata and the arrays, so no field can change without the checkpoint being refused. It is
written to a temporary file, flushed, and renamed over the old one, so a run killed at any moment leaves
either the previous checkpoint or the new one, never a torn file.

A run over several processes (:mod:`jcsol.distributed`) writes one share per process instead, each holding
that process's runs and the process layout (:func:`save_share`, :func:`load_share`); a checkpoint is resumed
only by the layout that wrote it, and every other layout is refused with the reason.
A one-process checkpoint holds every run, unpadded: it resumes in one process on any number of devices.

Format 2 (this one) put the metadata inside the digest; checkpoints of format 1 are refused, not misread.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import numpy as np

from .files import ARCHIVE_ERRORS, atomic_write, check_writable

T = TypeVar("T")

FORMAT = 3  # 2: every field under the digest; 3: a run's mistake cost carried with its rounding error


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used: unreadable, corrupted, or written by a different run."""


def update_digest(h, arrays: Iterable | Mapping[str, Any]):
    """``h`` (a :mod:`hashlib` hash) fed every array of ``arrays`` — its dtype, shape and bytes, after its name
    when ``arrays`` maps names to arrays (in name order) — and returned: the one digest of an array tree of
    checkpoints, live-learner files, run fingerprints and the live learner's agreement on a call's batch."""
    named = ((k, arrays[k]) for k in sorted(arrays)) if isinstance(arrays, Mapping) else (("", a) for a in arrays)
    for name, a in named:
        a = np.ascontiguousarray(a)
        h.update(f"{name}{a.dtype}{a.shape}".encode())
        h.update(a.tobytes())
    return h


def file_digest(meta: dict, arrays: Iterable | Mapping[str, Any]) -> str:
    """SHA-256 of every field of ``meta`` but ``"digest"`` (as sorted JSON) and of ``arrays``
    (:func:`update_digest`): the digest a checkpoint or a live-learner file holds, so that no field or array can
    change without the file being refused."""
    h = hashlib.sha256(json.dumps({k: v for k, v in meta.items() if k != "digest"}, sort_keys=True).encode())
    return update_digest(h, arrays).hexdigest()


def write_archive(path: str, meta: dict, arrays: Mapping[str, np.ndarray]) -> None:
    """``meta`` as JSON, with its ``digest`` (:func:`file_digest`, set here), and the named ``arrays`` as one
    ``.npz`` archive at ``path``, written atomically: a live learner's file and a model's."""
    meta["digest"] = file_digest(meta, arrays)
    with atomic_write(path) as fh:
        np.savez(fh, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays)  # type: ignore[arg-type]  # mypy matches **arrays against allow_pickle too


def open_archive(path: str, what: str, error: type[Exception]):
    """``(meta, the open archive)`` of a :func:`write_archive` file (the caller closes the archive), refusing with
    ``error`` naming ``path`` as no readable ``what`` a file that is no ``.npz`` archive or whose metadata is no
    JSON object."""
    try:
        archive = np.load(path, allow_pickle=False)
    except ARCHIVE_ERRORS as err:
        raise error(f"{path} is not a readable {what} ({err})") from None
    try:
        if not hasattr(archive, "files"):
            raise ValueError("it is no .npz archive")
        meta = json.loads(archive["meta"].tobytes().decode())
        if not isinstance(meta, dict):
            raise ValueError("its metadata is not an object")
    except ARCHIVE_ERRORS as err:
        if hasattr(archive, "close"):
            archive.close()
        raise error(f"{path} is not a readable {what} ({err})") from None
    return meta, archive


def check_checkpoint_path(path: str | os.PathLike) -> str:
    """``path`` as a string, refusing (before any work) a path where no checkpoint can be written
    (:func:`jcsol.files.check_writable`), or a checkpoint there that cannot be read."""
    path = check_writable(path, "checkpoint")
    if os.path.exists(path) and not os.access(path, os.R_OK):
        raise PermissionError(f"checkpoint {path} exists but is not readable")
    return path


def save_checkpoint(
    path: str | os.PathLike, fingerprint: str, chunks_done: int, n_chunks: int, leaves: list[np.ndarray]
) -> None:
    """Writes the carry ``leaves`` after ``chunks_done`` of ``n_chunks`` chunks, atomically."""
    _write(
        os.fspath(path),
        {"fingerprint": fingerprint, "chunks_done": int(chunks_done), "n_chunks": int(n_chunks)},
        leaves,
    )


def load_checkpoint(path: str | os.PathLike, fingerprint: str, n_chunks: int) -> tuple[int, list[np.ndarray]] | None:
    """``(chunks_done, leaves)`` from the checkpoint at ``path``, ``None`` if there is none.

    Raises:
        CheckpointError: the file is unreadable or corrupted, of another format, or written by a different run
            (or by several processes: see :func:`load_share`).
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        _refuse_other_layouts(path, 1)
        return None
    meta, leaves = _read(path)
    return _check_run(path, meta, fingerprint, n_chunks), leaves


def _write(path: str, fields: dict, leaves: list[np.ndarray]) -> None:
    leaves = [np.asarray(a) for a in leaves]
    meta = {"format": FORMAT, **fields, "n_leaves": len(leaves)}
    meta["digest"] = file_digest(meta, leaves)
    with atomic_write(path) as fh:
        np.savez(
            fh,
            meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
            **{f"leaf_{i}": a for i, a in enumerate(leaves)},  # type: ignore[arg-type]  # arrays, not allow_pickle
        )


def _read(path: str) -> tuple[dict, list[np.ndarray]]:
    """The metadata and leaves of the checkpoint file at ``path``, checked against their digest."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(archive["meta"].tobytes().decode())
            if not isinstance(meta, dict):
                raise ValueError("its metadata is not an object")
            n_leaves = meta.get("n_leaves")
            if isinstance(n_leaves, bool) or not isinstance(n_leaves, int) or not 0 <= n_leaves <= len(archive.files):
                raise ValueError(f"n_leaves is {n_leaves!r}")
            leaves = [archive[f"leaf_{i}"] for i in range(n_leaves)]
    except ARCHIVE_ERRORS as err:
        raise CheckpointError(
            f"checkpoint {path} is unreadable or corrupted ({err}); delete it to start over"
        ) from None
    if meta.get("format") != FORMAT:
        raise CheckpointError(
            f"checkpoint {path} has format {meta.get('format')!r}, this version of jcsol reads "
            f"format {FORMAT} (older checkpoints carry other fields); delete it to start over"
        )
    if meta.get("digest") != file_digest(meta, leaves):
        raise CheckpointError(
            f"checkpoint {path} is corrupted (its arrays and fields do not match their SHA-256); "
            "delete it to start over"
        )
    return meta, leaves


def _check_run(path: str, meta: dict, fingerprint: str, n_chunks: int) -> int:
    """The chunks done that ``meta`` records, after checking it was written by this very run."""
    if meta.get("fingerprint") != fingerprint or meta.get("n_chunks") != n_chunks:
        raise CheckpointError(
            f"checkpoint {path} was written by a different run (the learner, objective, data, costs, permutations, "
            "key, dtype, curve points, chunk size, scaling or delay differ); use another path or delete it"
        )
    done = meta.get("chunks_done")
    if isinstance(done, bool) or not isinstance(done, int) or not 1 <= done <= n_chunks:
        raise CheckpointError(f"checkpoint {path}: chunks_done={done!r} is not in [1, {n_chunks}]; delete it")
    return done


# A run over several processes keeps one checkpoint share per process: PATH.<process>-of-<processes> holds that
# process's runs after the latest checkpointed chunk, PATH.<process>-of-<processes>.previous after the one
# before. The processes write their shares for the same chunk (they meet after every chunk), so a kill at any
# moment leaves, on every process, the latest or the previous share of one chunk they all hold.

_SHARE = re.compile(r"\.(\d+)-of-(\d+)(\.previous)?$")
PREVIOUS = ".previous"


def share_path(path: str | os.PathLike, process: int, n_processes: int) -> str:
    """The file of process ``process``'s share of the checkpoint ``path`` of a run over ``n_processes``."""
    return f"{os.fspath(path)}.{process}-of-{n_processes}"


def save_share(
    path: str | os.PathLike,
    fingerprint: str,
    chunks_done: int,
    n_chunks: int,
    leaves: list[np.ndarray],
    *,
    layout: dict,
) -> None:
    """Writes this process's share (``layout["process"]`` of ``layout["processes"]``) of the carry after
    ``chunks_done`` chunks, atomically; the share it replaces becomes the previous one."""
    target = share_path(path, layout["process"], layout["processes"])
    if os.path.exists(target):
        os.replace(target, target + PREVIOUS)
    _write(
        target,
        {"fingerprint": fingerprint, "chunks_done": int(chunks_done), "n_chunks": int(n_chunks), "layout": layout},
        leaves,
    )


def load_share(
    path: str | os.PathLike, fingerprint: str, n_chunks: int, *, layout: dict
) -> dict[int, list[np.ndarray]]:
    """This process's shares of the checkpoint ``path``: ``{chunks_done: leaves}`` for its latest and previous
    share (empty when it has none).

    Raises:
        CheckpointError: a share is unreadable, corrupted or of a different run, or the checkpoint was written
            by another number of processes, or with other devices per process.
    """
    path = os.fspath(path)
    _refuse_other_layouts(path, layout["processes"])
    target = share_path(path, layout["process"], layout["processes"])
    found = {}
    for name in (target, target + PREVIOUS):
        if not os.path.exists(name):
            continue
        meta, leaves = _read(name)
        theirs = meta.get("layout")
        if theirs != layout:
            raise CheckpointError(
                f"checkpoint {name} was written with another process layout ({_describe(theirs)}) than this run's "
                f"({_describe(layout)}): restart with the layout that wrote it, or delete {path}.* to start over"
            )
        found[_check_run(name, meta, fingerprint, n_chunks)] = leaves
    return found


def _describe(layout) -> str:
    if not isinstance(layout, dict):
        return "unknown"
    return (
        f"{layout.get('processes')} processes with {layout.get('devices')} devices, runs {layout.get('runs')} "
        f"of {layout.get('padded_runs')} on process {layout.get('process')}"
    )


def other_process_counts(path: str | os.PathLike, n_processes: int) -> str:
    """Which process counts, other than ``n_processes``, wrote files or shares at ``path`` ("2 processes", "1
    process and 4 processes"; a single file counting as one process), or ``""`` when none did."""
    path = os.fspath(path)
    counts = set()
    if n_processes != 1 and os.path.exists(path):
        counts.add(1)
    folder, base = os.path.split(os.path.abspath(path))
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            match = _SHARE.match(name[len(base) :]) if name.startswith(base) else None
            if match and int(match.group(2)) != n_processes:
                counts.add(int(match.group(2)))
    return " and ".join(f"{n} process{'es' if n > 1 else ''}" for n in sorted(counts))


def _refuse_other_layouts(path: str, n_processes: int) -> None:
    """Refuses a checkpoint at ``path`` written by another number of processes than ``n_processes``."""
    written = other_process_counts(path, n_processes)
    if written:
        raise CheckpointError(
            f"checkpoint {path} was written by a run over {written}, and this run has {n_processes}: a run resumes "
            "only with the process layout that wrote its checkpoint (its runs are split by process); restart with "
            f"that many processes, or delete {path} and {path}.* to start over"
        )


def agreed_generation(
    spread,
    found: Mapping[int, T],
    refusal: Exception | None,
    *,
    name: str,
    generations: str,
    what: str,
    error,
    remedy: str,
) -> T | None:
    """This process's share of the latest generation (chunks done, or saves) that every process holds a share of:
    the one agreement of a checkpoint's resume and a live learner's load over several processes.

    ``found`` maps the generations this process holds (its latest and previous share) to them; ``refusal`` is
    the error that kept this process from reading its shares. The processes compare what they hold (``spread``'s
    ``agree``, :class:`jcsol.distributed.Spread`) before any work: when one refuses, every process refuses with
    ``error``, so that none goes on alone; shares of no common generation are refused naming the generations each
    process holds, with ``remedy``. ``None`` when no process holds a share.
    """
    held = sorted(found, reverse=True)
    table = spread.agree([int(refusal is not None), *(held + [0, 0])[:2]], what)
    if refusal is not None:
        raise refusal
    if table[:, 0].any():
        raise error(
            f"{name}: process(es) {np.flatnonzero(table[:, 0]).tolist()} refused their share (their error says "
            "why); every process refuses, so that none goes on alone"
        )
    held_by = [set(row[1:].tolist()) - {0} for row in table]
    if not any(held_by):
        return None
    common = set.intersection(*held_by)
    if not common:
        raise error(
            f"{name}: the processes hold shares of different {generations} ({[sorted(h) for h in held_by]} by "
            f"process): {remedy}"
        )
    return found[max(common)]
