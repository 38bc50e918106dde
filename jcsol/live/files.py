"""The live learner's file: what :meth:`jcsol.Live.save` writes and :meth:`jcsol.Live.load` reads.

A live-learner file is one ``.npz`` archive, written atomically (:func:`jcsol.files.atomic_write`): the
learner's description as JSON (``meta``: format, learner, objective, selection, encoder class, dimension,
store, dtype, key, grid blocks, batch sizes) and its arrays — the carry's leaves (``carry/<i>``), the board's
(``board/<i>``), the pending events (``store/<name>``), the events learnt (``events``) and the encoder's
statistics (``encoder/<name>``) — under one SHA-256 of every field and array
(:func:`jcsol.checkpoint.file_digest`, the checkpoints' digest): no field can change without the file being
refused. Over several processes each process writes its share (:func:`jcsol.checkpoint.share_path`), which also
records the process layout and the save's generation, and a load continues from the latest generation every
process holds (:func:`jcsol.checkpoint.agreed_generation`, the checkpoints' agreement).
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Mapping

import jax
import numpy as np

from ..base import Learner
from ..checkpoint import PREVIOUS, agreed_generation, file_digest, other_process_counts, share_path
from ..distributed import Spread, global_devices
from ..files import ARCHIVE_ERRORS, atomic_write
from ..objective import Objective
from ..watchdog import resolve_timeout

FORMAT = 4  # 2: the events learnt are saved as a count of their own, the board keeps its window's slot;
# 3: the engine's carries hold each configuration's mistake cost with its rounding error; 4: every field of the
# metadata under the digest, the pending ids saved as UTF-8 text with their kind (integers of any size)


class LiveFileError(RuntimeError):
    """A saved live learner that cannot be loaded: unreadable, corrupted, of another format or learner."""


def description(live) -> dict:
    """The fields of a :class:`jcsol.Live`'s file that describe it (every field but the digest and a share's
    layout and generation)."""
    return {
        "format": FORMAT,
        "jcsol": _version(),
        "learner": describe(live.learner),
        "objective": describe(live.objective),
        "selection": live.selection._asdict(),
        "encoder": None
        if live.encoder is None
        else f"{type(live.encoder).__module__}.{type(live.encoder).__qualname__}",
        "n_features": live.n_features,
        "store_size": live.store.capacity,
        "on_full": live.store.on_full,
        "dtype": str(live.dtype),
        "key": live.key,
        "grid_blocks": live.grid_blocks,
        "batch_sizes": list(live.batch_sizes),
        "scale": live.scale,
    }


def describe(obj) -> dict | list:
    """A JSON description of a learner (or a list of them) or objective: class, static options, values."""
    if isinstance(obj, (list, tuple)):
        return [describe(each) for each in obj]
    desc = {
        "class": f"{type(obj).__module__}.{type(obj).__qualname__}",
        "options": {k: repr(v) for k, v in obj.options().items()},
        "hyperparameters": {k: np.asarray(v, np.float64).tolist() for k, v in obj.hyperparameters().items()},
    }
    return json.loads(json.dumps(desc))


def contents(carry: list[np.ndarray], board, store: dict, events: int, encoder) -> dict[str, np.ndarray]:
    """The arrays of a file: the carry's leaves (as the backend saves them), the board's, the pending events'
    (:meth:`jcsol.live.store.PendingStore.arrays`), the events learnt and the encoder's statistics."""
    arrays = {f"carry/{i}": a for i, a in enumerate(carry)}
    arrays.update({f"board/{i}": np.asarray(a) for i, a in enumerate(jax.tree.leaves(board))})
    arrays.update({f"store/{k}": v for k, v in store.items()})
    arrays["events"] = np.asarray(events, np.int64)
    if encoder is not None:
        arrays.update({f"encoder/{k}": np.asarray(v) for k, v in encoder.state_dict().items()})
    return arrays


def write(path: str, meta: dict, arrays: dict[str, np.ndarray], spread: Spread | None, layout, generation: int) -> None:
    """Writes ``meta`` (with its digest) and ``arrays`` to ``path``, atomically; over several processes (``spread``)
    this process's share, recording the process ``layout`` and the save's ``generation``, the share it replaces
    kept as ``….previous``, returning when every process has written its share."""
    target = path
    if spread is not None:
        meta.update(layout=layout, generation=generation)
        target = share_path(path, spread.process, spread.n_processes)
        if os.path.exists(target):
            os.replace(target, target + PREVIOUS)
    # a share's layout and generation are under the digest: it cannot move to another process or save
    meta["digest"] = file_digest(meta, arrays)
    with atomic_write(target) as fh:
        np.savez(fh, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays)  # type: ignore[arg-type]  # mypy matches **arrays against allow_pickle too
    if spread is not None:
        spread.agree([generation], f"saving the live learner to {path}")


def read(path: str, learner, objective: Objective) -> tuple[dict, dict[str, np.ndarray]]:
    """``(meta, arrays)`` of the live learner saved at ``path`` for this process: the file, or over several
    processes this process's share of the latest save every process holds a share of."""
    n_processes = jax.process_count()
    if n_processes > 1:
        return _agreed_share(path, learner, objective)
    _refuse_other_process_counts(path, 1)
    meta, arrays = _read(path, learner, objective)
    if "layout" in meta:
        raise LiveFileError(
            f"{path} is process {meta['layout']['process']}'s share of a live learner saved over "
            f"{meta['layout']['processes']} processes: load it with that many processes"
        )
    return meta, arrays


def arguments(meta: dict, arrays: Mapping[str, np.ndarray], path: str) -> dict:
    """The keyword arguments of :class:`jcsol.Live` that make the learner a file describes (its encoder rebuilt
    from its statistics)."""
    encoder = None
    if meta["encoder"] is not None:
        module, _, name = meta["encoder"].rpartition(".")
        if not module.startswith("jcsol."):
            raise LiveFileError(f"{path} names an encoder outside jcsol: {meta['encoder']}")
        encoder = getattr(importlib.import_module(module), name).from_state_dict(section(arrays, "encoder"))
    sel = meta["selection"]
    return {
        "select": sel["rule"],
        "margin": sel["margin"],
        "rate": sel["rate"],
        "forgetting": sel["forgetting"],
        "auc_window": sel["window"],
        "encoder": encoder,
        "n_features": meta["n_features"],
        "store_size": meta["store_size"],
        "on_full": meta["on_full"],
        "batch_sizes": meta.get("batch_sizes", ()),
        "grid_blocks": meta.get("grid_blocks", 1),
        "scale": meta.get("scale"),
        "dtype": meta["dtype"],
        "key": meta["key"],
    }


def check_layout(meta: dict, layout: dict | None, path: str) -> None:
    """Refuses a share saved with another process layout than ``layout`` (``None``: one process, checked by
    :func:`read`)."""
    if layout is not None and meta["layout"] != layout:
        raise LiveFileError(
            f"{path} was saved with another process layout ({meta['layout']}) than this one's "
            f"({layout}): load it with the processes and devices that saved it"
        )


def section(arrays: Mapping[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """The arrays named ``<prefix>/<name>``, by name."""
    return {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith(f"{prefix}/")}


def leaves(arrays: Mapping[str, np.ndarray], prefix: str, n: int) -> list[np.ndarray | None]:
    """The arrays ``<prefix>/0`` to ``<prefix>/<n - 1>`` (``None`` where the file lacks one)."""
    return [arrays.get(f"{prefix}/{i}") for i in range(n)]


def restored(template, arrays: Mapping[str, np.ndarray], prefix: str, path: str, *, place: bool = True):
    """The tree of ``template``'s structure whose leaves are the arrays ``<prefix>/<i>``, refused unless each has
    its template leaf's shape and dtype; placed on the default device if ``place``."""
    template_leaves, treedef = jax.tree.flatten(template)
    saved = leaves(arrays, prefix, len(template_leaves))
    if any(s is None or s.shape != a.shape or s.dtype != a.dtype for s, a in zip(saved, template_leaves)):
        raise LiveFileError(f"{path} holds {prefix} arrays of other shapes than this learner's")
    tree = jax.tree.unflatten(treedef, saved)
    return jax.device_put(tree) if place else tree


def _read(path: str, learner: Learner, objective: Objective) -> tuple[dict, dict[str, np.ndarray]]:
    """``(meta, arrays)`` of a saved live learner, checked: readable, of this format, intact, of this learner
    and objective."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(archive["meta"].tobytes().decode())
            arrays = {k: archive[k] for k in archive.files if k != "meta"}
        if not isinstance(meta, dict):
            raise ValueError("its metadata is not an object")
    except ARCHIVE_ERRORS as err:
        raise LiveFileError(f"{path} is not a readable live-learner file ({err})") from None
    if meta.get("format") != FORMAT:
        raise LiveFileError(
            f"{path} has live-learner format {meta.get('format')} (written by jcsol "
            f"{meta.get('jcsol')}); this jcsol reads format {FORMAT}"
        )
    if meta.get("digest") != file_digest(meta, arrays):
        raise LiveFileError(f"{path} is corrupted: its fields and arrays do not match their SHA-256")
    for what, mine in (("learner", describe(learner)), ("objective", describe(objective))):
        if meta[what] != mine:
            raise LiveFileError(f"{path} holds another {what}: saved {meta[what]}, given {mine}")
    return meta, arrays


def _refuse_other_process_counts(path: str, n_processes: int) -> None:
    saved = other_process_counts(path, n_processes)
    if saved:
        raise LiveFileError(
            f"{path} holds a live learner saved by {saved}, and this run has {n_processes}: a live learner saved "
            "over several processes loads only with as many processes (each share holds its own processes' "
            "configurations)"
        )


def _agreed_share(path: str, learner: Learner, objective: Objective) -> tuple[dict, dict[str, np.ndarray]]:
    """This process's share of the latest save that every process holds a share of; every process refuses
    when one of them cannot read its share, so that none goes on alone (:func:`jcsol.checkpoint.agreed_generation`)."""
    devices = global_devices()
    platform = devices[0].platform
    spread = Spread(devices, len(devices), timeout=resolve_timeout("auto", platform), on_cpu=platform == "cpu")
    target = share_path(path, spread.process, spread.n_processes)
    found: dict[int, tuple[dict, dict[str, np.ndarray]]] = {}
    refusal: LiveFileError | None = None
    try:
        _refuse_other_process_counts(path, spread.n_processes)
        for name in (target, target + PREVIOUS):
            if os.path.exists(name):
                meta, arrays = _read(name, learner, objective)
                found[int(meta.get("generation", 0))] = (meta, arrays)
        if not found:
            raise LiveFileError(f"{target} does not exist: no share of a live learner saved at {path} for this process")
    except LiveFileError as err:
        refusal = err
    agreed = agreed_generation(
        spread,
        found,
        refusal,
        name=path,
        generations="saves",
        what=f"loading the live learner {path}",
        error=LiveFileError,
        remedy="saves were interrupted, or the shares are not in one folder every process sees",
    )
    assert agreed is not None  # every process holds a share, or all refused
    return agreed


def _version() -> str:
    from .. import __version__

    return __version__
