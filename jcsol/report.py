"""Paper-style tables of results: mean ± standard deviation over permutations, one row per grid point."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from .objective import Cost
from .result import Result

PERCENT = {"sum", "sensitivity", "specificity", "accuracy", "balanced_accuracy"}
TITLES = {"sum": "sum (%)", "sensitivity": "sensitivity (%)", "specificity": "specificity (%)",
          "accuracy": "accuracy (%)", "balanced_accuracy": "balanced acc. (%)", "cost": "cost"}


def mean_std(values: np.ndarray, scale: float = 1.0) -> str:
    """``mean ± std`` over the last axis (the sample std, as MATLAB's ``std``, the papers' tool)."""
    values = np.asarray(values, np.float64) * scale
    std = values.std(ddof=1) if values.size > 1 else 0.0
    return f"{values.mean():.3f} ± {std:.3f}"


def _param_text(params: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in params.items())


def default_measures(result: Result) -> tuple[str, ...]:
    """The papers' columns: *sum* or *cost* (by the objective), then sensitivity and specificity."""
    return (("cost" if isinstance(result.objective, Cost) else "sum"), "sensitivity", "specificity")


def _shown_params(result: Result) -> dict[str, np.ndarray]:
    """The learner's hyperparameters, and the objective's where they vary over the grid."""
    learner_names = set(result.learner.hyperparameters())
    return {k: v for k, v in result.params.items() if k in learner_names or np.unique(v).size > 1}


def table(results: Mapping[str, Result], measures=None, fmt: str = "text") -> str:
    """Rows of ``name, hyperparameters, measures…, time per run`` for every grid point of every result.

    Args:
        results: results by row name (a learner's name, say).
        measures: the measures to show, from :data:`jcsol.metrics.MEASURES`; by default the papers' columns
            for the first result's objective (see :func:`default_measures`).
        fmt: ``"text"`` (aligned columns) or ``"markdown"``.
    """
    measures = tuple(measures or default_measures(next(iter(results.values()))))
    header = ["learner", "hyperparameters", *(TITLES[m] for m in measures), "time/run (s)"]
    rows = []
    for name, res in results.items():
        params = _shown_params(res)
        for index in np.ndindex(*res.grid_shape):
            point = {k: float(v[index]) for k, v in params.items()}
            cells = [name, _param_text(point)]
            for m in measures:
                cells.append(mean_std(res.measure(m)[index], 100.0 if m in PERCENT else 1.0))
            cells.append(f"{res.time_per_run:.2e}")
            rows.append(cells)
    if fmt == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    if fmt != "text":
        raise ValueError(f"fmt must be 'text' or 'markdown', got {fmt!r}")
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])
