"""What :meth:`jcsol.Live.leaderboard` returns: every configuration's progressive measures, side by side, with
its hyperparameters (:func:`grid_params`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import metrics
from ..core.checks import flatten_grid


@dataclasses.dataclass(frozen=True)
class Leaderboard:
    """Progressive measures of every configuration (flat grid order) and of the served stream.

    Each configuration's measures count its own pre-update prediction of every labelled event (the prediction
    made when the event arrived, for events predicted with ids). ``sum``, ``sensitivity``, ``specificity``,
    ``precision``, ``f1``, ``alerts_per_catch`` and ``cost`` (``c_p·FN + c_n·FP``, unscaled; ``c_p = 0.9``
    under :class:`jcsol.Sum`, as :meth:`jcsol.Result.measure` takes it) come from the exact counts since the
    start (halved, with the cost, once 2**30 events are counted, and every 2**29 after: :mod:`jcsol.live.board`;
    ``events`` is exact); ``recent_sum`` and ``recent_cost`` from the counts discounted by the forgetting
    factor; ``auc`` and ``average_precision`` are exact over the last ``auc_window`` events. ``weights`` are
    Hedge's normalised weights (uniform under FTL, which does not keep them). Precision is 0 and alerts per
    catch infinite while nothing is caught (``docs/measures.md``). ``params`` names each configuration's
    hyperparameters, the objective's too where they vary over the grid (:func:`grid_params`), so that the rows
    of a grid of distinct values have distinct names.
    """

    params: dict[str, np.ndarray]
    counts: np.ndarray
    sum: np.ndarray
    sensitivity: np.ndarray
    specificity: np.ndarray
    cost: np.ndarray
    recent_sum: np.ndarray
    recent_cost: np.ndarray
    auc: np.ndarray
    average_precision: np.ndarray
    weights: np.ndarray
    served: int
    rule: str
    served_counts: np.ndarray
    served_sum: float
    served_cost: float
    events: int
    pending: int
    evicted: int

    COLUMNS = (
        "sum",
        "sensitivity",
        "specificity",
        "precision",
        "f1",
        "alerts_per_catch",
        "cost",
        "recent_sum",
        "recent_cost",
        "auc",
        "average_precision",
        "weights",
    )
    HEADERS = {"alerts_per_catch": "alerts/catch", "average_precision": "AP %"}  # the text table's, 14 wide
    #: The columns the text table prints in percent, as ``jcsol.table`` and the command line print rates.
    PERCENT = ("sum", "sensitivity", "specificity", "precision", "f1", "recent_sum", "auc", "average_precision")

    precision = property(lambda self: metrics.precision(self.counts))
    f1 = property(lambda self: metrics.f1(self.counts))
    alerts_per_catch = property(lambda self: metrics.alerts_per_catch(self.counts))

    def to_pandas(self):
        """One row per configuration: its hyperparameters, measures, and whether it is served."""
        import pandas as pd

        frame = pd.DataFrame({**self.params, **{c: getattr(self, c) for c in self.COLUMNS}})
        frame["served"] = np.arange(len(frame)) == self.served
        return frame

    def table(self) -> str:
        """A text table, the served configuration marked ``*``; rates in percent (the fields hold fractions)."""
        header = {c: self.HEADERS.get(c, f"{c} %" if c in self.PERCENT else c) for c in self.COLUMNS}
        names = list(self.params) + [header[c] for c in self.COLUMNS]
        lines = ["  " + "".join(f"{n:>14}" for n in names)]
        scale = {c: 100.0 if c in self.PERCENT else 1.0 for c in self.COLUMNS}
        for g in range(len(self.sum)):
            measures = [getattr(self, c)[g] * scale[c] for c in self.COLUMNS]
            values = [self.params[k][g] for k in self.params] + measures
            lines.append(
                ("* " if g == self.served else "  ")
                + "".join(f"{v:>14}" if isinstance(v, str) else f"{v:>14.4g}" for v in values)
            )
        served = self.served_counts
        lines.append(
            f"served stream ({self.rule}): sum {100 * self.served_sum:.2f} %, cost {self.served_cost:.4g}, "
            f"precision {100 * metrics.precision(served):.2f} %, {metrics.alerts_per_catch(served):.4g} alerts per "
            "catch; "
            f"{self.events} events counted, {self.pending} pending, {self.evicted} evicted"
        )
        return "\n".join(lines)


def grid_params(learners: tuple, sizes: tuple, objective) -> dict[str, np.ndarray]:
    """Each configuration's hyperparameters, the learners' grids side by side (their sizes ``sizes``): its
    learner's (NaN where its learner has no such one), then the objective's that vary over the configurations
    (``alpha_p`` of a grid of :class:`jcsol.Sum`, ``c_p`` and ``c_n`` of :class:`jcsol.Cost`; one value for all
    is no column, as in :func:`jcsol.table`); with several learners, first each configuration's learner name.
    The configuration of flat index ``g`` is the ``g``-th of each learner's grid, learner and objective broadcast
    together and flattened in C order (:func:`jcsol.core.checks.flatten_grid`)."""
    names = list(dict.fromkeys(k for each in learners for k in each.hyperparameters()))
    out = {k: np.full(sum(sizes), np.nan) for k in names}
    of_objective = {k: np.full(sum(sizes), np.nan) for k in objective.hyperparameters()}
    start = 0
    for each, size in zip(learners, sizes):
        shape, _, flat_objective = flatten_grid(each, objective, np.float64)
        for k, v in each.hyperparameters().items():
            out[k][start : start + size] = np.broadcast_to(np.asarray(v, np.float64), shape).reshape(size)
        for k, v in flat_objective.hyperparameters().items():
            of_objective[k][start : start + size] = np.asarray(v, np.float64)
        start += size
    out.update({k: v for k, v in of_objective.items() if np.unique(v).size > 1})
    if len(learners) > 1:
        out = {"learner": np.repeat([each.name for each in learners], sizes), **out}
    return out
