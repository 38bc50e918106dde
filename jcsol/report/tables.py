"""Paper-style tables of results: one row per grid point, mean ± standard deviation over permutations, the best
value of each column in bold, as aligned text, Markdown or LaTeX."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import metrics
from ..objective import Cost
from ..result import Result
from ..stream import check_flags
from .records import as_results, measure_values

__all__ = ["table", "render", "mean_std", "default_measures", "title", "FORMATS"]

TITLES = {
    "sum": "sum (%)",
    "sensitivity": "sensitivity (%)",
    "specificity": "specificity (%)",
    "accuracy": "accuracy (%)",
    "balanced_accuracy": "balanced acc. (%)",
    "cost": "cost",
    "example_cost": "example cost",
    "precision": "precision (%)",
    "f1": "F1 (%)",
    "alerts_per_catch": "alerts/catch",
    "average_precision": "AP (%)",
    "roc_auc": "ROC AUC (%)",
}
FORMATS = ("text", "markdown", "latex")


def title(measure: str) -> str:
    """A measure's column title: ``sum (%)``, ``alerts/catch``, ``precision top 1% (%)``…"""
    budget = metrics.review_budget(metrics.check_measure(measure))
    return TITLES[measure] if budget is None else f"precision top {float(budget):g}% (%)"


def mean_std(values: np.ndarray, scale: float = 1.0) -> str:
    """``mean ± std`` of all of ``values`` (a grid point's runs), times ``scale``: the sample std, as MATLAB's
    ``std``, the papers' tool; a single value alone (one run has no spread to show); ``inf ± nan`` when one of
    several values is infinite (alerts per catch of a run that caught nothing), ``nan ± nan`` when one is NaN
    (undefined)."""
    values = np.asarray(values, np.float64) * scale
    if values.size == 1:
        return f"{values.mean():.3f}"
    with np.errstate(invalid="ignore"):
        std = values.std(ddof=1)
    return f"{values.mean():.3f} ± {std:.3f}"


def _param_text(params: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in params.items()) or "-"


def default_measures(result: Result) -> tuple[str, ...]:
    """The papers' columns, *sum* or *cost* (by the objective), sensitivity and specificity, then what a team
    that reviews the alerts reads: precision and alerts per catch (on a rare-positive stream, a learner with
    the best *sum* may raise ten times as many alerts per positive caught as the next one)."""
    return (
        ("cost" if isinstance(result.objective, Cost) else "sum"),
        "sensitivity",
        "specificity",
        "precision",
        "alerts_per_catch",
    )


def _shown_params(result: Result) -> dict[str, np.ndarray]:
    """The learner's hyperparameters, and the objective's where they vary over the grid."""
    learner_names = set(result.learner.hyperparameters())
    return {k: v for k, v in result.params.items() if k in learner_names or np.unique(v).size > 1}


def _latex_escape(text: str) -> str:
    out = str(text)
    for a, b in (
        ("\\", r"\textbackslash{}"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("_", r"\_"),
        ("#", r"\#"),
        ("±", r"$\pm$"),
        ("×", r"$\times$"),
        ("γ", r"$\gamma$"),
        ("η", r"$\eta$"),
        ("ρ", r"$\rho$"),
    ):
        out = out.replace(a, b)
    return out


def render(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    fmt: str = "text",
    bold: Iterable[tuple[int, int]] = (),
    caption: str | None = None,
) -> str:
    """A table of strings as aligned text, Markdown or LaTeX (``booktabs``); cells ``(row, column)`` in
    ``bold`` are emphasised (``*x*`` in text, ``**x**`` in Markdown, ``\\textbf{x}`` in LaTeX)."""
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, got {fmt!r}")
    bold = set(bold)
    mark = {"text": "*{}*", "markdown": "**{}**", "latex": r"\textbf{{{}}}"}[fmt]
    cells = [[(_latex_escape(c) if fmt == "latex" else str(c)) for c in row] for row in rows]
    cells = [[mark.format(c) if (i, j) in bold else c for j, c in enumerate(row)] for i, row in enumerate(cells)]
    if fmt == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cells])
    if fmt == "latex":
        lines = [r"\begin{table}[t]", r"\centering"]
        if caption:
            lines.append(r"\caption{" + _latex_escape(caption) + "}")
        lines += [
            r"\begin{tabular}{" + "l" * len(header) + "}",
            r"\toprule",
            " & ".join(_latex_escape(h) for h in header) + r" \\",
            r"\midrule",
        ]
        lines += [" & ".join(r) + r" \\" for r in cells]
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        return "\n".join(lines)
    widths = [max(len(str(c)) for c in col) for col in zip(header, *cells)]
    line = lambda row: "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, cells)])


def table(results: Mapping[str, Any] | Any, measures=None, fmt: str = "text", bold: bool = True) -> str:
    """Rows of ``name, hyperparameters, measures…, time per run`` for every grid point of every result.

    Each cell is the mean ± sample standard deviation of the measure over the point's permutations
    (:func:`mean_std`); the time per run is :attr:`jcsol.Result.time_per_run`, that of the computation the runs
    were part of (a sweep's, on every one of its rows).

    Args:
        results: a :class:`jcsol.Result` (or :class:`jcsol.Best`, or protocol outcome), or such objects by row
            name (a learner's name, say).
        measures: the measures to show (:func:`jcsol.metrics.check_measure`: :data:`jcsol.metrics.MEASURES`,
            ``average_precision`` and ``precision_at_K%`` of results that recorded their scores); by default the
            papers' columns for the first result's objective, with precision and alerts per catch (see
            :func:`default_measures`).
        fmt: ``"text"`` (aligned columns), ``"markdown"`` or ``"latex"``.
        bold: emphasise the best mean of each measure column (highest; lowest for the costs and alerts per
            catch) when the table has several rows, as the papers do: the rule of :meth:`jcsol.Result.best`
            (:func:`jcsol.metrics.best_index`; a NaN mean is never the best, and a column with no better row
            than another — every mean NaN, or infinitely bad — has none in bold), every row within 5e-7 of the
            best mean in bold (ties are all shown).
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, got {fmt!r}")
    results = as_results(results)
    if not results:
        raise ValueError("no results to tabulate")
    check_flags(bold=bold)
    if isinstance(measures, str):  # one measure, not its letters
        measures = (measures,)
    measures = tuple(measures or default_measures(next(iter(results.values()))))
    for m in measures:
        metrics.check_measure(m)
    header = ["learner", "hyperparameters", *(title(m) for m in measures), "time/run (s)"]
    rows, means = [], []
    for name, res in results.items():
        params = _shown_params(res)
        values = {m: measure_values(res, m) for m in measures}
        for index in np.ndindex(*res.grid_shape):
            point = {k: float(v[index]) for k, v in params.items()}
            cells = [name, _param_text(point)]
            row_means = []
            for m in measures:
                cells.append(mean_std(values[m][index], 100.0 if metrics.in_percent(m) else 1.0))
                row_means.append(float(np.mean(values[m][index])))
            cells.append(f"{res.time_per_run:.2e}")
            rows.append(cells)
            means.append(row_means)
    marked: set[tuple[int, int]] = set()
    if bold and len(rows) > 1:
        arr = np.array(means, np.float64)
        for j, m in enumerate(measures):
            col = arr[:, j]
            try:
                best = col[metrics.best_index(col, m)]
            except ValueError:  # no row better than another
                continue
            marked |= {(int(i), 2 + j) for i in np.flatnonzero(np.isclose(col, best, rtol=0, atol=5e-7))}
    return render(header, rows, fmt, marked)
