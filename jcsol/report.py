"""Paper-style tables of results: mean ± standard deviation over permutations, the best value of each column in
bold, as text, Markdown or LaTeX; the "paper beside jcsol" comparison table; per-run records for CSV/JSON.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from . import metrics
from .files import atomic_write
from .objective import Cost
from .result import Best, Result

PERCENT = {"sum", "sensitivity", "specificity", "accuracy", "balanced_accuracy"}
TITLES = {"sum": "sum (%)", "sensitivity": "sensitivity (%)", "specificity": "specificity (%)",
          "accuracy": "accuracy (%)", "balanced_accuracy": "balanced acc. (%)", "cost": "cost"}
FORMATS = ("text", "markdown", "latex")


def mean_std(values: np.ndarray, scale: float = 1.0) -> str:
    """``mean ± std`` over the last axis (the sample std, as MATLAB's ``std``, the papers' tool)."""
    values = np.asarray(values, np.float64) * scale
    std = values.std(ddof=1) if values.size > 1 else 0.0
    return f"{values.mean():.3f} ± {std:.3f}"


def _param_text(params: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in params.items()) or "-"


def default_measures(result: Result) -> tuple[str, ...]:
    """The papers' columns: *sum* or *cost* (by the objective), then sensitivity and specificity."""
    return (("cost" if isinstance(result.objective, Cost) else "sum"), "sensitivity", "specificity")


def _shown_params(result: Result) -> dict[str, np.ndarray]:
    """The learner's hyperparameters, and the objective's where they vary over the grid."""
    learner_names = set(result.learner.hyperparameters())
    return {k: v for k, v in result.params.items() if k in learner_names or np.unique(v).size > 1}


def as_result(obj: Any) -> Result:
    """A :class:`Result` from a Result, a :class:`Best`, or a protocol outcome with a ``result`` attribute
    (:class:`jcsol.protocols.Selection`, :class:`jcsol.protocols.CrossValidation` — its held-out runs)."""
    if isinstance(obj, Result):
        return obj
    if isinstance(obj, Best):
        return obj.result
    inner = getattr(obj, "result", None)
    if isinstance(inner, Result):
        return inner
    raise TypeError(f"cannot make a table row of {type(obj).__name__}; give a jcsol.Result (or a protocol outcome)")


def _as_mapping(results: Any) -> dict[str, Result]:
    if isinstance(results, Mapping):
        return {str(k): as_result(v) for k, v in results.items()}
    res = as_result(results)
    return {res.learner.name: res}


# -- rendering ---------------------------------------------------------------------------------------------

def _latex_escape(text: str) -> str:
    out = str(text)
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"),
                 ("±", r"$\pm$"), ("×", r"$\times$"), ("γ", r"$\gamma$"), ("η", r"$\eta$"), ("ρ", r"$\rho$")):
        out = out.replace(a, b)
    return out


def render(header: Sequence[str], rows: Sequence[Sequence[str]], fmt: str = "text",
           bold: Iterable[tuple[int, int]] = (), caption: str | None = None) -> str:
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
        lines += [r"\begin{tabular}{" + "l" * len(header) + "}", r"\toprule",
                  " & ".join(_latex_escape(h) for h in header) + r" \\", r"\midrule"]
        lines += [" & ".join(r) + r" \\" for r in cells]
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        return "\n".join(lines)
    widths = [max(len(str(c)) for c in col) for col in zip(header, *cells)]
    line = lambda row: "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, cells)])


def table(results: Mapping[str, Any] | Any, measures=None, fmt: str = "text", bold: bool = True) -> str:
    """Rows of ``name, hyperparameters, measures…, time per run`` for every grid point of every result.

    Args:
        results: a :class:`Result` (or :class:`Best`, or protocol outcome), or such objects by row name
            (a learner's name, say).
        measures: the measures to show, from :data:`jcsol.metrics.MEASURES`; by default the papers' columns
            for the first result's objective (see :func:`default_measures`).
        fmt: ``"text"`` (aligned columns), ``"markdown"`` or ``"latex"``.
        bold: emphasise the best mean of each measure column (highest; lowest for *cost*) when the table has
            several rows, as the papers do.
    """
    results = _as_mapping(results)
    if not results:
        raise ValueError("no results to tabulate")
    measures = tuple(measures or default_measures(next(iter(results.values()))))
    unknown = [m for m in measures if m not in TITLES]
    if unknown:
        raise ValueError(f"unknown measure(s) {unknown}; choose from {', '.join(metrics.MEASURES)}")
    header = ["learner", "hyperparameters", *(TITLES[m] for m in measures), "time/run (s)"]
    rows, means = [], []
    for name, res in results.items():
        params = _shown_params(res)
        for index in np.ndindex(*res.grid_shape):
            point = {k: float(v[index]) for k, v in params.items()}
            cells = [name, _param_text(point)]
            row_means = []
            for m in measures:
                values = res.measure(m)[index]
                cells.append(mean_std(values, 100.0 if m in PERCENT else 1.0))
                row_means.append(float(np.mean(values)))
            cells.append(f"{res.time_per_run:.2e}")
            rows.append(cells)
            means.append(row_means)
    marked = set()
    if bold and len(rows) > 1:
        arr = np.array(means, np.float64)
        for j, m in enumerate(measures):
            col = arr[:, j]
            if np.all(np.isnan(col)):
                continue
            best = np.nanmax(col) if metrics.HIGHER_IS_BETTER[m] else np.nanmin(col)
            marked |= {(i, 2 + j) for i in np.flatnonzero(np.isclose(col, best, rtol=0, atol=5e-7))}
    return render(header, rows, fmt, marked)


# -- paper beside jcsol ------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Comparison:
    """One row of a "paper beside jcsol" table.

    ``mean``/``std`` are jcsol's values over permutations (or folds) in the paper's unit (``"%"``,
    ``"cost/100"``, ``"cost"``, possibly rescaled as the unit says); ``paper`` is ``None`` where the paper
    has no value.
    """

    dataset: str
    measure: str
    learner: str
    paper: float | None
    mean: float
    std: float
    unit: str = "%"
    setting: str = "-"
    time_per_run: float = math.nan
    wall: float = math.nan
    note: str = ""

    @property
    def diff(self) -> float:
        return math.nan if self.paper is None else self.mean - self.paper

    def flagged(self, points: float = 1.5, relative: float = 0.05) -> bool:
        """Whether jcsol and the paper differ by more than ``points`` (percentages) or, for costs, by more
        than ``relative`` of the paper's value."""
        if self.paper is None or math.isnan(self.mean):
            return False
        if self.unit.startswith("%"):
            return abs(self.diff) > points
        return abs(self.diff) > relative * abs(self.paper)

    def line(self) -> str:
        paper = "-" if self.paper is None else f"{self.paper:.3f}"
        return (f"{self.dataset} {self.measure} {self.learner}: paper {paper}, jcsol {self.mean:.3f} ± {self.std:.3f} "
                f"({self.unit}; {self.setting}; {self.wall:.1f} s)")


def comparison_table(rows: Sequence[Comparison], fmt: str = "text", points: float = 1.5,
                     relative: float = 0.05, caption: str | None = None) -> str:
    """The paper's value beside jcsol's (mean ± std), their difference, jcsol's chosen setting and time per
    run. Rows whose difference exceeds ``points`` (percent measures) or ``relative`` (costs, as a fraction of
    the paper's value) are marked ``>`` in the ``flag`` column; the best jcsol mean of each (dataset, measure)
    group is in bold."""
    header = ["dataset", "measure", "learner", "paper", "jcsol", "diff", "flag", "setting", "time/run (s)", "note"]
    cells, marked = [], set()
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(rows):
        unit = "" if r.unit == "%" else f" [{r.unit}]"
        cells.append([r.dataset, r.measure + unit, r.learner, "-" if r.paper is None else f"{r.paper:.3f}",
                      f"{r.mean:.3f} ± {r.std:.3f}", "-" if r.paper is None else f"{r.diff:+.3f}",
                      ">" if r.flagged(points, relative) else "", r.setting,
                      "-" if math.isnan(r.time_per_run) else f"{r.time_per_run:.2e}", r.note])
        groups.setdefault((r.dataset, r.measure), []).append(i)
    for (_, measure), idx in groups.items():
        if len(idx) < 2:
            continue
        means = np.array([rows[i].mean for i in idx])
        if np.all(np.isnan(means)):
            continue
        best = np.nanmax(means) if metrics.HIGHER_IS_BETTER.get(measure, True) else np.nanmin(means)
        marked |= {(i, 4) for i, m in zip(idx, means) if m == best}
    return render(header, cells, fmt, marked, caption)


# -- records for CSV and JSON ------------------------------------------------------------------------------

def records(results: Mapping[str, Any] | Any, measures: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One flat record per run (grid point × permutation): ``learner``, its hyperparameters and the
    objective's, ``permutation``, the counts ``tp, fn, fp, tn``, every measure (fractions and raw cost,
    NaN where undefined), ``time_per_run``. Written by :func:`write_csv` and :func:`write_json`."""
    out = []
    results = _as_mapping(results)
    columns: list[str] = []  # every hyperparameter of every result, so that all records have the same keys
    for res in results.values():
        columns += [k for k in res.params if k not in columns]
    for name, res in results.items():
        names = tuple(measures or metrics.MEASURES)
        values = {m: np.asarray(res.measure(m), np.float64) for m in names}
        params = {k: np.asarray(v, np.float64) for k, v in res.params.items()}
        for index in np.ndindex(*res.grid_shape):
            point = {k: float(params[k][index]) if k in params else None for k in columns}
            for p in range(res.n_perms):
                c = res.counts[index + (p,)]
                rec = {"learner": name, **point, "permutation": p,
                       "tp": int(c[0]), "fn": int(c[1]), "fp": int(c[2]), "tn": int(c[3])}
                rec.update({m: float(values[m][index + (p,)]) for m in names})
                rec["time_per_run"] = float(res.time_per_run)
                out.append(rec)
    return out


def write_csv(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike) -> None:
    """Records (dicts) as a CSV file with a header; columns are the union of the records' keys, in order."""
    columns: list[str] = []
    for r in rows:
        columns += [k for k in r if k not in columns]
    with atomic_write(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _json_clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (np.floating, np.integer)):
        return _json_clean(value.item())
    if isinstance(value, np.ndarray):
        return _json_clean(value.tolist())
    if isinstance(value, Mapping):
        return {str(k): _json_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_clean(v) for v in value]
    return value


def write_json(document: Any, path: str | os.PathLike) -> None:
    """``document`` as strict JSON (NaN → ``null``), indented."""
    text = json.dumps(_json_clean(document), indent=2, allow_nan=False)  # refused before the file is touched
    with atomic_write(path, "w") as fh:
        fh.write(text)
        fh.write("\n")
