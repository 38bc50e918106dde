"""Paper-style tables of results: mean ± standard deviation over permutations, one row per grid point."""

from __future__ import annotations

from typing import Mapping

import numpy as np

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


def table(results: Mapping[str, Result], measures=("sum", "sensitivity", "specificity", "cost"),
          fmt: str = "text") -> str:
    """Rows of ``name, hyperparameters, measures…, time per run`` for every grid point of every result.

    Args:
        results: results by row name (a learner's name, say).
        measures: the measures to show, from :data:`jcsol.metrics.MEASURES`.
        fmt: ``"text"`` (aligned columns) or ``"markdown"``.
    """
    header = ["learner", "hyperparameters", *(TITLES[m] for m in measures), "time/run (s)"]
    rows = []
    for name, res in results.items():
        params = res.params
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
