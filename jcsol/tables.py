"""Results as data: the runs of a :class:`jcsol.Result` as long-format records, a pandas DataFrame, or JSON.

One record per run and measure (a run is one grid point × one permutation)::

    {"learner": "ACOG-I", "eta": 0.01, "alpha_p": 0.5, "permutation": 3, "measure": "sum", "value": 0.71}

with one column per hyperparameter of the learner *and* of the objective (the grid's axes and the fixed
values alike, as :attr:`jcsol.Result.params` gives them), so that ``df.groupby(["eta", "measure"]).value.mean()``
is the papers' table and ``df.pivot_table(...)`` any other view. :func:`to_json` wraps the same records with
the run's metadata (learner, objective, grid shape, sizes, timings). pandas is optional: only
:func:`to_pandas` needs it.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable

import numpy as np

from . import metrics

__all__ = ["to_records", "to_pandas", "to_json"]


def _measures(measures: Iterable[str] | None) -> tuple[str, ...]:
    names = tuple(metrics.MEASURES if measures is None else measures)
    unknown = [m for m in names if m not in metrics.MEASURES]
    if unknown:
        raise ValueError(f"unknown measure(s) {unknown}; choose from {', '.join(metrics.MEASURES)}")
    return names


def to_records(result, measures: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The runs of ``result`` as a list of flat dicts, one per run and measure (long format).

    Args:
        result: a :class:`jcsol.Result`.
        measures: names from :data:`jcsol.metrics.MEASURES` (default: all of them).

    Keys: ``learner`` (its name, e.g. ``"COG-II"``), every hyperparameter of the learner and objective (floats),
    ``permutation`` (the run's index along the permutation axis), ``measure`` and ``value`` (a float; NaN where
    the measure is undefined, e.g. sensitivity of a run without positives). Records are ordered grid point
    (C order), then permutation, then measure.
    """
    names = _measures(measures)
    values = {m: np.asarray(result.measure(m), np.float64) for m in names}
    params = {k: np.asarray(v, np.float64) for k, v in result.params.items()}
    learner = result.learner.name
    records = []
    for index in np.ndindex(*result.grid_shape):
        point = {k: float(v[index]) for k, v in params.items()}
        for p in range(result.n_perms):
            for m in names:
                records.append({"learner": learner, **point, "permutation": p, "measure": m,
                                "value": float(values[m][index + (p,)])})
    return records


def to_pandas(result, measures: Iterable[str] | None = None):
    """The records of :func:`to_records` as a ``pandas.DataFrame`` (columns in the records' key order).

    Raises:
        ImportError: pandas is not installed (``pip install jcsol[pandas]``).
    """
    try:
        import pandas as pd
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("Result.to_pandas needs pandas: pip install pandas (or jcsol[pandas]); "
                          "Result.to_json and jcsol.tables.to_records need nothing more") from err
    records = to_records(result, measures)
    columns = ["learner", *result.params, "permutation", "measure", "value"]
    return pd.DataFrame.from_records(records, columns=columns)


def _options(obj) -> dict[str, Any]:
    out = {}
    for k, v in obj.options().items():
        out[k] = v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)
    return out


def _hyperparameters(obj) -> dict[str, Any]:
    return {k: np.asarray(v, np.float64).tolist() for k, v in obj.hyperparameters().items()}


def _clean(value: Any) -> Any:
    """NaN and infinities become ``None`` (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def to_json(result, measures: Iterable[str] | None = None, **dumps_kwargs) -> str:
    """The records of :func:`to_records` and the run's metadata as a JSON string.

    The document is ``{"learner": {"name", "type", "hyperparameters", "options"}, "objective": {"type",
    "hyperparameters", "options"}, "grid_shape", "n_perms", "rounds", "measures", "timings": {"compile_s",
    "run_s", "per_run_s"}, "resumed_at", "records": [...]}``; grid hyperparameters appear as nested lists.
    NaN values (undefined measures) are written as ``null``, so the output is strict JSON.
    ``dumps_kwargs`` go to :func:`json.dumps` (e.g. ``indent=2``).
    """
    names = _measures(measures)
    doc = {
        "learner": {"name": result.learner.name, "type": type(result.learner).__name__,
                    "hyperparameters": _hyperparameters(result.learner), "options": _options(result.learner)},
        "objective": {"type": type(result.objective).__name__,
                      "hyperparameters": _hyperparameters(result.objective),
                      "options": _options(result.objective)},
        "grid_shape": list(result.grid_shape),
        "n_perms": int(result.n_perms),
        "rounds": int(result.orders.shape[1]),
        "measures": list(names),
        "timings": {"compile_s": float(result.time_compile), "run_s": float(result.time_run),
                    "per_run_s": float(result.time_per_run)},
        "resumed_at": int(result.resumed_at),
        "records": to_records(result, names),
    }
    return json.dumps(_clean(doc), allow_nan=False, **dumps_kwargs)
