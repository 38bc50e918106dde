"""Results as data: one flat record per run, a pandas ``DataFrame`` of them, CSV, and JSON.

A run is one grid point × one permutation. Its record::

    {"learner": "ACOG-I", "eta": 0.01, "alpha_p": 0.5, "permutation": 3, "tp": 211, "fn": 89, "fp": 201,
     "tn": 499, "sum": 0.709, ..., "cost": 100.2, "example_cost": 100.2, "precision": 0.512, "f1": 0.593,
     "alerts_per_catch": 1.953, "time_per_run": 0.004}

with one column per hyperparameter of the learner *and* of the objective (the grid's axes and the fixed values
alike, as :attr:`jcsol.Result.params` gives them), so that ``to_pandas(res).groupby("eta")["sum"].mean()`` is
the papers' table and ``df.melt(...)`` or ``df.pivot_table(...)`` any other view. pandas is optional: only
:func:`to_pandas` needs it.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .. import metrics
from ..files import atomic_write
from ..result import Best, Result

__all__ = ["as_result", "as_results", "records", "to_pandas", "write_csv", "write_json"]


def as_result(obj: Any) -> Result:
    """A :class:`Result` from a Result, a :class:`Best`, or a protocol outcome with a ``result`` attribute
    (:class:`jcsol.protocols.Selection`, :class:`jcsol.protocols.CrossValidation` — its held-out runs)."""
    found = _result_of(obj)
    if found is None:
        raise TypeError(f"cannot report a {type(obj).__name__}; give a jcsol.Result (or a Best, or a protocol outcome)")
    return found


def as_results(results: Any) -> dict[str, Result]:
    """``{name: Result}`` from a mapping of results (or Bests, or protocol outcomes) by name, or from one
    result, then named by its learner."""
    if isinstance(results, Mapping):
        return {str(k): as_result(v) for k, v in results.items()}
    res = as_result(results)
    return {res.learner.name: res}


def _result_of(obj: Any) -> Result | None:
    if isinstance(obj, Result):
        return obj
    if isinstance(obj, Best):
        return obj.result
    inner = getattr(obj, "result", None)
    return inner if isinstance(inner, Result) else None


def _measure_names(measures: Iterable[str] | None, results: Mapping[str, Result]) -> tuple[str, ...]:
    """The measures asked for, checked; by default :data:`jcsol.metrics.MEASURES`, with the measures of
    :data:`jcsol.metrics.SCORE_MEASURES` when every result recorded its scores and labels."""
    if measures is None:
        scored = all(res.scores is not None and res.labels is not None for res in results.values())
        return metrics.MEASURES + (metrics.SCORE_MEASURES if scored and results else ())
    names = (measures,) if isinstance(measures, str) else tuple(measures)  # one measure, not its letters
    for name in names:
        metrics.check_measure(name)
    return names


def measure_values(result: Result, name: str) -> np.ndarray:
    """``result.measure(name)`` as float64; NaN for ``example_cost`` where the result holds no example costs
    (:attr:`jcsol.Result.mistake_cost` ``None``: a result built without them)."""
    if name == "example_cost" and result.mistake_cost is None:
        return np.full(result.grid_shape + (result.n_perms,), np.nan)
    return np.asarray(result.measure(name), np.float64)


def records(results: Mapping[str, Any] | Any, measures: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """One flat record per run of every result (the module's docstring shows one).

    Args:
        results: a :class:`jcsol.Result` (or :class:`jcsol.Best`, or protocol outcome), or such objects by name
            (the record's ``learner``; a single result is named by its learner).
        measures: measure names (:func:`jcsol.metrics.check_measure`); by default all of
            :data:`jcsol.metrics.MEASURES`, and ``average_precision`` when every result recorded its scores.

    Keys: ``learner``; every hyperparameter of every result's learner and objective (floats, ``None`` where a
    result has no such hyperparameter, so that all records have the same keys); ``permutation`` (the run's
    index along the permutation axis); the counts ``tp, fn, fp, tn``; the measures (fractions and raw costs,
    NaN where undefined, e.g. sensitivity of a run without positives); ``time_per_run``
    (:attr:`jcsol.Result.time_per_run`: the execution time of the runs executed together divided by their number,
    a sweep's for each of its points). Records are ordered by result, grid point (C order), then permutation.
    """
    results = as_results(results)
    names = _measure_names(measures, results)
    columns: list[str] = []
    for res in results.values():
        columns += [k for k in res.params if k not in columns]
    out = []
    for name, res in results.items():
        values = {m: measure_values(res, m) for m in names}
        params = {k: np.asarray(v, np.float64) for k, v in res.params.items()}
        for index in np.ndindex(*res.grid_shape):
            point = {k: float(params[k][index]) if k in params else None for k in columns}
            for p in range(res.n_perms):
                c = res.counts[index + (p,)]
                rec = {
                    "learner": name,
                    **point,
                    "permutation": p,
                    "tp": int(c[metrics.TP]),
                    "fn": int(c[metrics.FN]),
                    "fp": int(c[metrics.FP]),
                    "tn": int(c[metrics.TN]),
                }
                rec.update({m: float(values[m][index + (p,)]) for m in names})
                rec["time_per_run"] = float(res.time_per_run)
                out.append(rec)
    return out


def to_pandas(results: Mapping[str, Any] | Any, measures: Iterable[str] | None = None):
    """The :func:`records` of ``results`` as a ``pandas.DataFrame``, one row per run, columns in the records'
    key order.

    Raises:
        ImportError: pandas is not installed (``pip install jcsol[pandas]``).
    """
    names = _measure_names(measures, as_results(results))
    try:
        import pandas as pd
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "jcsol.report.to_pandas needs pandas: pip install pandas (or jcsol[pandas]); "
            "jcsol.report.records, write_csv and write_json need nothing more"
        ) from err
    rows = records(results, names)
    return pd.DataFrame.from_records(rows, columns=list(rows[0]) if rows else None)


def write_csv(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike) -> None:
    """Records (dicts, e.g. from :func:`records`) as a CSV file with a header; the columns are the union of the
    records' keys, in order.

    ``rows`` is any iterable of records, a one-shot one (a generator) included: it is read once, whole, before the
    file is touched. One record given alone (a dict), text, or an item that is no record is refused
    (``TypeError``), and nothing is written."""
    if isinstance(rows, (Mapping, str, bytes)):
        raise TypeError(f"write_csv takes an iterable of records (dicts), got one {type(rows).__name__}: give [row]")
    rows = list(rows)
    strays = [i for i, r in enumerate(rows) if not isinstance(r, Mapping)]
    if strays:
        raise TypeError(f"write_csv: row {strays[0]} is a {type(rows[strays[0]]).__name__}, not a record (a dict)")
    columns: list[str] = []
    for r in rows:
        columns += [k for k in r if k not in columns]
    with atomic_write(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _options(obj) -> dict[str, Any]:
    return {k: v if isinstance(v, (str, int, float, bool, type(None))) else repr(v) for k, v in obj.options().items()}


def _hyperparameters(obj) -> dict[str, Any]:
    return {k: np.asarray(v, np.float64).tolist() for k, v in obj.hyperparameters().items()}


def _run_document(result: Result) -> dict[str, Any]:
    return {
        "learner": {
            "name": result.learner.name,
            "type": type(result.learner).__name__,
            "hyperparameters": _hyperparameters(result.learner),
            "options": _options(result.learner),
        },
        "objective": {
            "type": type(result.objective).__name__,
            "hyperparameters": _hyperparameters(result.objective),
            "options": _options(result.objective),
        },
        "grid_shape": list(result.grid_shape),
        "n_perms": int(result.n_perms),
        "rounds": int(result.orders.shape[1]),
        "timings": {
            "compile_s": float(result.time_compile),
            "run_s": float(result.time_run),
            "per_run_s": float(result.time_per_run),
            "runs_timed": int(result.runs_timed),
        },
        "resumed_at": int(result.resumed_at),
        "records": records(result),
    }


def _json_ready(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return _json_ready(value.item())
    if isinstance(value, np.ndarray):
        return _json_ready(value.tolist())
    if isinstance(value, Mapping):
        return {str(k): _json_ready(v) for k, v in value.items()}
    result = _result_of(value)  # before tuples: a Best is a named tuple
    if result is not None:
        return _json_ready(_run_document(result))
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


def write_json(document: Any, path: str | os.PathLike) -> None:
    """``document`` as strict JSON (NaN and infinities → ``null``), indented.

    Any :class:`jcsol.Result` (or Best, or protocol outcome) in the document is written as the run's document:
    ``{"learner": {"name", "type", "hyperparameters", "options"}, "objective": {"type", "hyperparameters",
    "options"}, "grid_shape", "n_perms", "rounds", "timings": {"compile_s", "run_s", "per_run_s", "runs_timed"},
    "resumed_at", "records": [...]}`` with the :func:`records` of every run; grid hyperparameters appear as
    nested lists. ``run_s`` is the execution time of the ``runs_timed`` runs executed together and ``per_run_s``
    their quotient (:attr:`jcsol.Result.time_per_run`): for a point of a sweep (a :class:`jcsol.Best`), the
    sweep's time and runs, of which the point's records are a part. So ``write_json(res, "runs.json")`` writes
    one result, ``write_json({"german": res}, ...)`` several. Anything else JSON cannot hold is refused before the
    file is touched.
    """
    try:
        text = json.dumps(_json_ready(document), indent=2, allow_nan=False)
    except TypeError as err:  # json's message names the type, not where it is
        raise TypeError(
            f"write_json: the document holds a value JSON cannot hold ({err}); nothing was written"
        ) from None
    with atomic_write(path, "w") as fh:
        fh.write(text)
        fh.write("\n")
