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

The learner and objective are described by :func:`describe` (class, static options as ``repr`` text, values) and
rebuilt from that description by :func:`undescribe` (a class of jcsol only, options that are Python literals), so
that a file loads without being told what it holds; :class:`jcsol.Model`'s files describe theirs the same way.
"""

from __future__ import annotations

import ast
import enum
import importlib
import json
import os
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

from ..base import Configurable, Learner, with_pairing
from ..checkpoint import (
    PREVIOUS,
    agreed_generation,
    file_digest,
    open_archive,
    other_process_counts,
    share_path,
    write_archive,
)
from ..distributed import Spread, global_devices
from ..files import ARCHIVE_ERRORS
from ..grids import check_grid
from ..objective import Objective
from ..watchdog import resolve_timeout

FORMAT = 4  # 2: the events learnt are saved as a count of their own, the board keeps its window's slot;
# 3: the engine's carries hold each configuration's mistake cost with its rounding error; 4: every field of the
# metadata under the digest, the pending ids saved as UTF-8 text with their kind (integers of any size)


class LiveFileError(RuntimeError):
    """A saved live learner that cannot be loaded: unreadable, corrupted, of another format or learner."""


class FromFile(enum.Enum):
    """The default of :meth:`jcsol.Live.load`'s ``learner``: rebuilt from the file (:func:`undescribe`)."""

    FROM_FILE = "from the file"

    def __repr__(self) -> str:
        return "<from the file>"


FROM_FILE = FromFile.FROM_FILE


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


def undescribe(desc: Any, path: str, what: str, error: type[Exception] = LiveFileError) -> Any:
    """The learner (a list of them: the list) or objective that :func:`describe` described as ``desc``, rebuilt:
    its class imported (a class of jcsol only: ``jcsol.…``, a :class:`jcsol.Learner` or
    :class:`jcsol.objective.Objective` as ``what`` says), its options read from their ``repr`` text by
    :func:`ast.literal_eval`, its values as numbers or float64 arrays (a grid), fields of one grid axis paired
    again (:func:`jcsol.paired`: a description does not hold the pairing, which the grid's check needs), and its
    own description checked to be ``desc``. Anything else is ``error``, naming ``path`` and why: a class outside
    jcsol or an option that is no literal cannot be rebuilt from text — give the ``what`` it was saved with."""
    if isinstance(desc, list) and what == "learner":
        return [undescribe(each, path, what, error) for each in desc]
    remedy = f"give the {what} it was saved with (load(path, {what}=...))"
    if (
        not isinstance(desc, dict)
        or set(desc) != {"class", "options", "hyperparameters"}
        or not isinstance(desc["class"], str)
        or not isinstance(desc["options"], dict)
        or not isinstance(desc["hyperparameters"], dict)
    ):
        raise error(f"{path} does not describe its {what} as jcsol does ({desc!r})")
    cls = _class_of(desc["class"], path, what, remedy, error)
    base = Learner if what == "learner" else Objective
    if not (isinstance(cls, type) and issubclass(cls, base) and issubclass(cls, Configurable)):
        raise error(f"{path} names {desc['class']} as its {what}, which is no jcsol {what} class")
    fields: dict[str, Any] = {}
    for name, text in desc["options"].items():
        try:
            if not isinstance(text, str):
                raise ValueError(f"{text!r} is no text")
            fields[name] = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise error(
                f"{path}: the {what}'s option {name}={text!r} is not a Python literal, so the {what} cannot be "
                f"rebuilt from the file: {remedy}"
            ) from None
    try:
        for name, value in desc["hyperparameters"].items():
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            fields[name] = float(value) if number else np.asarray(value, np.float64)
        obj = cls(**fields)
    except (TypeError, ValueError) as err:
        raise error(f"{path}: its {what} {desc['class']} cannot be rebuilt from the file ({err}): {remedy}") from None
    if what == "learner":
        obj = _paired_again(obj)
    if describe(obj) != desc:
        raise error(f"{path}: its {what} rebuilt from the file describes itself otherwise ({describe(obj)}): {remedy}")
    return obj


def _class_of(name: str, path: str, what: str, remedy: str, error: type[Exception]) -> Any:
    """The class named ``module.QualName`` (a class of jcsol only)."""
    parts = name.split(".")
    if parts[0] != "jcsol" or len(parts) < 2 or not all(p.isidentifier() for p in parts):
        raise error(
            f"{path} holds a {what} of class {name}, outside jcsol, which cannot be rebuilt from a file: {remedy}"
        )
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attribute in parts[cut:]:
                obj = getattr(obj, attribute)
        except AttributeError:
            break
        return obj
    raise error(f"{path} names {name} as its {what}, which this jcsol does not have: {remedy}")


def _paired_again(learner):
    """``learner`` with the fields that vary along one grid axis recorded as paired (:func:`jcsol.paired`), as
    they were when it was saved: a learner with such fields passed :func:`jcsol.grids.check_grid` only paired."""
    try:
        check_grid(learner)
        return learner
    except ValueError:
        pass
    arrays = {k: np.asarray(v, np.float64) for k, v in learner.hyperparameters().items() if np.ndim(v)}
    shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))
    axes: dict[int, list[str]] = {}
    for name, a in arrays.items():
        padded = a.reshape((1,) * (len(shape) - a.ndim) + a.shape)
        for axis in range(len(shape)):
            if padded.shape[axis] > 1 and np.ptp(padded, axis=axis).any():
                axes.setdefault(axis, []).append(name)
    groups: list[set[str]] = []
    for names in axes.values():
        joined = set(names).union(*(g for g in groups if g & set(names)))
        groups = [g for g in groups if not g & set(names)] + [joined]
    for group in groups:
        if len(group) > 1:
            learner = with_pairing(learner, group)
    return learner


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
    write_archive(target, meta, arrays)
    if spread is not None:
        spread.agree([generation], f"saving the live learner to {path}")


def read(path: str, learner, objective: Objective | None) -> tuple[dict, dict[str, np.ndarray]]:
    """``(meta, arrays)`` of the live learner saved at ``path`` for this process: the file, or over several
    processes this process's share of the latest save every process holds a share of; checked against
    ``learner`` and ``objective`` where given (``None``: to be rebuilt from the file, :func:`undescribe`)."""
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


def _read(path: str, learner, objective: Objective | None) -> tuple[dict, dict[str, np.ndarray]]:
    """``(meta, arrays)`` of a saved live learner, checked: readable, of this format, intact, of this learner
    and objective (each where given)."""
    meta, archive = open_archive(path, "live-learner file", LiveFileError)
    try:
        with archive:
            arrays = {k: archive[k] for k in archive.files if k != "meta"}
    except ARCHIVE_ERRORS as err:
        raise LiveFileError(f"{path} is not a readable live-learner file ({err})") from None
    if meta.get("format") != FORMAT:
        raise LiveFileError(
            f"{path} has live-learner format {meta.get('format')} (written by jcsol "
            f"{meta.get('jcsol')}); this jcsol reads format {FORMAT}"
        )
    if meta.get("digest") != file_digest(meta, arrays):
        raise LiveFileError(f"{path} is corrupted: its fields and arrays do not match their SHA-256")
    for what, given in (("learner", learner), ("objective", objective)):
        if given is None:
            continue
        mine = describe(given)
        if meta.get(what) != mine:
            raise LiveFileError(f"{path} holds another {what}: saved {meta.get(what)}, given {mine}")
    return meta, arrays


def _refuse_other_process_counts(path: str, n_processes: int) -> None:
    saved = other_process_counts(path, n_processes)
    if saved:
        raise LiveFileError(
            f"{path} holds a live learner saved by {saved}, and this run has {n_processes}: a live learner saved "
            "over several processes loads only with as many processes (each share holds its own processes' "
            "configurations)"
        )


def _agreed_share(path: str, learner, objective: Objective | None) -> tuple[dict, dict[str, np.ndarray]]:
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
