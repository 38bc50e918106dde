"""Reproduction of a paper table: every cell run by the table's protocol on the data found, the paper's value
beside jcsol's."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..algorithms import VARIANTS
from ..base import Learner
from ..datasets import DATASETS, DataMissing, load_dataset
from ..engine import run
from ..objective import Cost, Objective, Sum
from ..protocols import cross_validate, default_grid, select_and_rerun
from ..stream import check_flags
from .comparison import Comparison
from .tables import TABLES, TableSpec
from .values import paper_values

__all__ = ["Reproduction", "reproduce_table"]


@dataclasses.dataclass(frozen=True)
class Reproduction:
    """Outcome of :func:`reproduce_table`: comparison rows, notes on what was skipped, wall time."""

    table: str
    title: str
    rows: list[Comparison]
    notes: list[str]
    seconds: float
    outcomes: dict[tuple[str, str, str], Any]  # (dataset, column, learner) → Selection / CrossValidation / Result


def _subsample(X, y, max_rows: int | None, seed: int = 0):
    if max_rows is None or len(y) <= max_rows:
        return X, y
    keep = np.sort(np.random.default_rng(seed).choice(len(y), size=max_rows, replace=False))
    return X[keep], y[keep]


def reproduce_table(
    table: str,
    data_dir: str | os.PathLike | None,
    *,
    perms: int = 20,
    key=0,
    datasets: Sequence[str] | None = None,
    learners: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    max_rows: int | None = None,
    step_sizes: Sequence[float] | None = None,
    folds: int = 5,
    rerun: bool = True,
    log: Callable[[str], None] | None = None,
    cache: dict | None = None,
) -> Reproduction:
    """Runs one paper table (a key of :data:`TABLES`) on the datasets found in ``data_dir``.

    Protocols: ``"select"`` (``acog-table2``, ``arcsogd-table4``) — :func:`jcsol.protocols.select_and_rerun`
    with the learner's :func:`jcsol.protocols.default_grid` (its step size over ``step_sizes``, default
    ``{1e-5, …, 1e5}``), ``perms`` permutations, re-run on fresh ones (``rerun=False``: the selection runs are
    reported); ``"fixed"`` (``csogd-table2``) — the paper's fixed hyperparameters; ``"cv"`` (``acog-table3``) —
    :func:`jcsol.protocols.cross_validate`. Learners not registered in :data:`jcsol.VARIANTS` and datasets that
    are not available are skipped, with a note. ``datasets``, ``learners``, ``columns`` (``"sum"``, ``"cost"``)
    pick part of the table; ``max_rows`` subsamples every dataset (for quick looks; the paper values are for the
    whole sets). Raw costs grow with the length of the stream, so on a stream of another length than the
    paper's (w8a without its test part, a subsample) jcsol's cost is rescaled to the paper's length, as the
    unit column says; ``cache`` (a dict) keeps loaded datasets between calls. ``data_dir`` is the folder of the
    LIBSVM files (:func:`jcsol.datasets.load_dataset`).

    Returns:
        A :class:`Reproduction`; :func:`jcsol.papers.comparison_table` prints its rows.
    """
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; choose from {', '.join(TABLES)}")
    check_flags(rerun=rerun)
    spec = TABLES[table]
    start = time.perf_counter()
    say = log or (lambda _: None)
    cache = {} if cache is None else cache
    notes: list[str] = []
    names = list(spec.learners if learners is None else learners)
    unknown = [n for n in names if n not in spec.learners]
    if unknown:
        raise ValueError(f"{table} has no learner(s) {unknown}; it has {', '.join(spec.learners)}")
    missing = [n for n in names if n not in VARIANTS]
    if missing:
        notes.append(f"skipped (not registered in jcsol.VARIANTS): {', '.join(missing)}")
    names = [n for n in names if n in VARIANTS]
    sets = list(spec.datasets if datasets is None else datasets)
    unknown = [d for d in sets if d not in spec.datasets]
    if unknown:
        raise ValueError(f"{table} has no dataset(s) {unknown}; it has {', '.join(spec.datasets)}")
    cols = list(spec.columns if columns is None else columns)
    unknown = [c for c in cols if c not in spec.columns]
    if unknown:
        raise ValueError(f"{table} has no column(s) {unknown}; it has {', '.join(spec.columns)}")
    rows: list[Comparison] = []
    outcomes: dict = {}
    for ds in sets:
        source = spec.files.get(ds, ds)
        try:
            if ("data", source) not in cache:
                cache[("data", source)] = load_dataset(source, data_dir)
            X, y = cache[("data", source)]
        except DataMissing as err:
            notes.append(f"skipped dataset {ds}: {err}")
            continue
        X, y = _subsample(X, y, max_rows)
        n_paper = DATASETS[source].n_paper  # the length of the stream the paper's numbers are for
        if source != ds:
            notes.append(f"{ds}: {DATASETS[source].description}")
        if max_rows is not None and len(y) < n_paper:
            notes.append(f"{ds}: {len(y)} of {n_paper} examples (max_rows={max_rows}); the paper's values are for all")
        elif len(y) != n_paper:
            notes.append(f"{ds}: {len(y)} examples here, {n_paper} in the paper ({DATASETS[source].description})")
        for column in cols:
            objective = Sum() if column == "sum" else Cost(c_p=spec.c_p, c_n=round(1.0 - spec.c_p, 10))
            for name in names:
                paper = paper_values(table).get(ds, column, name)
                other = paper_values(spec.also).get(ds, column, name) if spec.also else None
                cited: str | None = table
                if paper is None and other is not None:
                    paper, other, cited = other, None, spec.also
                t0 = time.perf_counter()
                learner = VARIANTS[name](**spec.fixed.get(name, {}))
                grid = None
                if step_sizes is not None:
                    grid = {axis: np.asarray(step_sizes, np.float64) for axis in default_grid(learner)}
                try:
                    out, values, setting, result = _one_cell(
                        spec,
                        learner,
                        X,
                        y,
                        column,
                        objective,
                        name,
                        perms=perms,
                        key=key,
                        grid=grid,
                        folds=folds,
                        rerun=rerun,
                    )
                except Exception as err:  # one learner's failure must not lose the table: say so and go on
                    notes.append(f"{ds} {column} {name}: failed ({type(err).__name__}: {str(err).splitlines()[0]})")
                    say(notes[-1])
                    continue
                wall = time.perf_counter() - t0
                outcomes[(ds, column, name)] = out
                if column == "sum":
                    scaled, unit = 100.0 * np.asarray(values), "%"
                else:
                    scaled = np.asarray(values) * spec.cost_scale
                    unit = "cost/100" if spec.cost_scale == 0.01 else "cost"
                    if len(y) != n_paper:
                        scaled = scaled * n_paper / len(y)  # raw cost grows with T: compare per paper-sized stream
                        unit += f" ×{n_paper}/{len(y)}"
                note = ""
                if other is not None:
                    also = paper_values(spec.also)
                    note = f"{also.paper} T.{also.number}: {other:.3f}"
                if cited != table:
                    note = f"paper value from {cited}"
                row = Comparison(
                    dataset=ds,
                    measure=column,
                    learner=name,
                    paper=paper,
                    mean=float(np.nanmean(scaled)),
                    std=float(np.nanstd(scaled, ddof=1)) if len(scaled) > 1 else 0.0,
                    unit=unit,
                    setting=setting,
                    time_per_run=float(result.time_per_run),
                    wall=wall,
                    note=note,
                )
                rows.append(row)
                say(row.line())
    return Reproduction(table, spec.title, rows, notes, time.perf_counter() - start, outcomes)


def _one_cell(
    spec: TableSpec,
    learner: Learner,
    X,
    y,
    column: str,
    objective: Objective,
    name: str,
    *,
    perms,
    key,
    grid,
    folds,
    rerun,
):
    """One learner on one dataset and column of a table: ``(outcome, values per run, setting, Result)``."""
    if spec.protocol == "cv":
        cv = cross_validate(learner, X, y, folds=folds, grid=grid, objective=objective, measure=column, key=key)
        return cv, cv.held_out(), cv.setting, cv.train
    if spec.protocol == "fixed":
        res = run(learner, X, y, perms=perms, objective=objective, key=key)
        setting = ", ".join(f"{k}={v:g}" for k, v in spec.fixed.get(name, {}).items()) or "-"
        return res, res.measure(column), setting, res
    sel = select_and_rerun(
        learner, X, y, grid=grid, measure=column, perms=perms, objective=objective, key=key, rerun=rerun
    )
    return sel, sel.values, sel.setting, sel.result
