"""The "paper beside jcsol" table: one :class:`Comparison` row per (dataset, measure, learner) cell of a paper
table, rendered by :func:`comparison_table` as text, Markdown or LaTeX."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from .. import metrics
from ..report import render

__all__ = ["Comparison", "comparison_table"]


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
        return (
            f"{self.dataset} {self.measure} {self.learner}: paper {paper}, jcsol {self.mean:.3f} ± {self.std:.3f} "
            f"({self.unit}; {self.setting}; {self.wall:.1f} s)"
        )


def comparison_table(
    rows: Sequence[Comparison],
    fmt: str = "text",
    points: float = 1.5,
    relative: float = 0.05,
    caption: str | None = None,
) -> str:
    """The paper's value beside jcsol's (mean ± std), their difference, jcsol's chosen setting and time per
    run. Rows whose difference exceeds ``points`` (percent measures) or ``relative`` (costs, as a fraction of
    the paper's value) are marked ``>`` in the ``flag`` column; the best jcsol mean of each (dataset, measure)
    group is in bold."""
    if isinstance(rows, str) or not all(isinstance(r, Comparison) for r in rows):
        raise TypeError("comparison_table takes a sequence of jcsol.papers.Comparison rows (reproduce_table's)")
    header = ["dataset", "measure", "learner", "paper", "jcsol", "diff", "flag", "setting", "time/run (s)", "note"]
    cells, marked = [], set()
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(rows):
        unit = "" if r.unit == "%" else f" [{r.unit}]"
        cells.append(
            [
                r.dataset,
                r.measure + unit,
                r.learner,
                "-" if r.paper is None else f"{r.paper:.3f}",
                f"{r.mean:.3f} ± {r.std:.3f}",
                "-" if r.paper is None else f"{r.diff:+.3f}",
                ">" if r.flagged(points, relative) else "",
                r.setting,
                "-" if math.isnan(r.time_per_run) else f"{r.time_per_run:.2e}",
                r.note,
            ]
        )
        groups.setdefault((r.dataset, r.measure), []).append(i)
    for (_, measure), idx in groups.items():
        if len(idx) < 2:
            continue
        means = np.array([rows[i].mean for i in idx])
        if np.all(np.isnan(means)):
            continue
        best = np.nanmax(means) if metrics.higher_is_better(measure) else np.nanmin(means)
        marked |= {(i, 4) for i, m in zip(idx, means) if m == best}
    return render(header, cells, fmt, marked, caption)
