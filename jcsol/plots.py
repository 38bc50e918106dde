"""Figures of the papers: online curves, varying weights, sensitivity, old vs new Σ, offline vs Laplace ρ.

matplotlib is imported only when a figure is drawn (``pip install jcsol[plot]``). Figures are built with
``matplotlib.figure.Figure`` — no pyplot state, so they work in scripts, servers and the CLI alike; in a
notebook a figure shows when it is the value of a cell. Every function draws into ``ax`` when given and
returns the figure; :func:`save` writes it as PNG and SVG.

================================  ================================================  ==========================
function                          what                                              paper
================================  ================================================  ==========================
:func:`online_curves`             online *sum* (or cumulative *cost*) against t,    acog Figs. 1, 3; arcsogd
                                  mean ± std band over permutations                 Figs. 1, 2
:func:`varying_weights_plot`      measure against α_n or c_n                        acog Figs. 2, 4
:func:`sensitivity_plot`          measure against η or γ (log axis)                 acog Figs. 5, 6
:func:`old_vs_new_plot`           old Σ_t vs new Σ_{t+1} mean step, per variant     acog Fig. 7
:func:`offline_vs_laplace_plot`   ρ offline vs Laplace, per learner                 acog Fig. 8
================================  ================================================  ==========================

*acog*: P. Zhao, Y. Zhang, M. Wu, S. C. H. Hoi, M. Tan, J. Huang, *Adaptive Cost-Sensitive Online Classification*,
IEEE TKDE 31(2), 2019; *arcsogd*: P. Zhao, F. Zhuang, M. Wu, X.-L. Li, S. C. H. Hoi, *Cost-Sensitive Online
Classification with Adaptive Regularization and Its Applications*, IEEE ICDM 2015 (``docs/bibliography.md``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from . import metrics
from .files import atomic_write
from .report import as_result
from .stream import check_flags

__all__ = [
    "online_curves",
    "varying_weights_plot",
    "sensitivity_plot",
    "old_vs_new_plot",
    "offline_vs_laplace_plot",
    "save",
]

YLABEL = {
    "sum": "online sum (%)",
    "sensitivity": "online sensitivity (%)",
    "specificity": "online specificity (%)",
    "accuracy": "online accuracy (%)",
    "balanced_accuracy": "online balanced accuracy (%)",
    "cost": "cumulative cost",
    "precision": "online precision (%)",
    "f1": "online F1 (%)",
    "alerts_per_catch": "alerts per catch",
}
FINAL = {
    "sum": "sum (%)",
    "sensitivity": "sensitivity (%)",
    "specificity": "specificity (%)",
    "accuracy": "accuracy (%)",
    "balanced_accuracy": "balanced accuracy (%)",
    "cost": "cost",
    "precision": "precision (%)",
    "f1": "F1 (%)",
    "alerts_per_catch": "alerts per catch",
}


def _figure(ax, figsize=(6.4, 4.2)):
    """``(fig, ax)``: the given axes' figure, or a new pyplot-free figure."""
    if ax is not None:
        return ax.figure, ax
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def _scale(measure: str) -> float:
    return 100.0 if measure in metrics.RATES else 1.0


def _std(a: np.ndarray) -> np.ndarray:
    return a.std(-1, ddof=1) if a.shape[-1] > 1 else np.zeros(a.shape[:-1])


def _mapping(results: Any) -> dict[str, Any]:
    if isinstance(results, Mapping):
        return dict(results)
    return {getattr(results, "name", None) or results.learner.name: results}


def online_curves(
    results: Mapping[str, Any] | Any,
    measure: str = "sum",
    *,
    ax=None,
    band: bool = True,
    title: str | None = None,
    legend: bool = True,
):
    """Online curves of several learners: the measure after t examples, mean over permutations ± one std.

    ``results``: Results recorded with ``curve_points > 0`` (or :class:`jcsol.protocols.Selection` objects,
    whose re-run is used), by legend label; a single one is labelled by its learner. *sum* and the rates are
    the online (cumulative) rates in %; *cost* is the cumulative cost ``c_p·M_p + c_n·M_n`` up to round t.
    """
    metrics.check_measure(measure)
    check_flags(band=band, legend=legend)
    fig, ax = _figure(ax)
    for label, obj in _mapping(results).items():
        res = as_result(obj)
        if res.grid_shape:
            raise ValueError(f"{label}: a grid of {res.grid_shape} runs; plot one point (res.best(...).result)")
        curve = _scale(measure) * np.asarray(res.curve_of(measure))  # (P, K)
        t = np.asarray(res.curve_t)
        mean, std = np.nanmean(curve, 0), _std(curve.T)
        (line,) = ax.plot(t, mean, label=label, lw=1.6)
        if band and curve.shape[0] > 1:
            ax.fill_between(t, mean - std, mean + std, color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xlabel("examples seen")
    ax.set_ylabel(YLABEL[measure])
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title)
    if legend:
        ax.legend(fontsize="small", ncols=2 if len(ax.lines) > 6 else 1)
    return fig


def varying_weights_plot(results: Mapping[str, Any] | Any, *, ax=None, title: str | None = None):
    """The measure against the weight α_n (*sum*) or c_n (*cost*) — the ACOG paper's Figs. 2 and 4 — for
    :class:`jcsol.protocols.VaryingWeights` outcomes by label; band = ± one std over permutations."""
    fig, ax = _figure(ax)
    kinds = set()
    for label, vw in _mapping(results).items():
        scale = _scale(vw.kind)
        (line,) = ax.plot(vw.weights, scale * vw.mean, marker="o", ms=4, label=label)
        ax.fill_between(
            vw.weights, scale * (vw.mean - vw.std), scale * (vw.mean + vw.std), color=line.get_color(), alpha=0.2, lw=0
        )
        kinds.add(vw.kind)
    if len(kinds) != 1:
        raise ValueError("varying_weights_plot draws outcomes of one kind (all 'sum' or all 'cost')")
    kind = kinds.pop()
    ax.set_xlabel(
        r"$\alpha_n$ (weight of specificity; $\alpha_p = 1 - \alpha_n$)"
        if kind == "sum"
        else r"$c_n$ (cost of a false positive; $c_p = 1 - c_n$)"
    )
    ax.set_ylabel(FINAL[kind])
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    if title:
        ax.set_title(title)
    return fig


AXIS_LABEL = {
    "eta": r"learning rate $\eta$",
    "gamma": r"regularisation $\gamma$",
    "C": "C",
    "learning_rate": "learning rate",
}


def sensitivity_plot(
    results: Mapping[str, Any] | Any,
    axis: str = "eta",
    *,
    at: Mapping[str, float] | None = None,
    ax=None,
    title: str | None = None,
):
    """The measure against one hyperparameter (log axis) — the ACOG paper's Fig. 5 (η) and Fig. 6 (γ) — for
    :class:`jcsol.protocols.Sensitivity` outcomes by label; the other axes are fixed as
    :meth:`~jcsol.protocols.Sensitivity.curve` says (γ = 1 for η; the best η for γ)."""
    sensitivities = _mapping(results)
    if not sensitivities:
        raise ValueError("no results to plot")
    fig, ax = _figure(ax)
    curves = {label: (sens, *sens.curve(axis, at)) for label, sens in sensitivities.items()}
    fixed_texts = {label: ", ".join(f"{k}={v:g}" for k, v in c[4].items()) for label, c in curves.items()}
    shared = len(set(fixed_texts.values())) == 1
    measure = ""
    for label, (sens, values, mean, std, _) in curves.items():
        scale = _scale(sens.measure)
        shown = label if shared or not fixed_texts[label] else f"{label} ({fixed_texts[label]})"
        (line,) = ax.plot(values, scale * mean, marker="o", ms=4, label=shown)
        ax.fill_between(values, scale * (mean - std), scale * (mean + std), color=line.get_color(), alpha=0.2, lw=0)
        measure = sens.measure
    ax.set_xscale("log")
    ax.set_xlabel(AXIS_LABEL.get(axis, axis))
    ax.set_ylabel(FINAL[measure])
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    common = next(iter(fixed_texts.values()))
    if shared and common:
        ax.set_title(title or f"other hyperparameters: {common}", fontsize="medium")
    elif title:
        ax.set_title(title)
    return fig


def _paired_bars(ax, labels, left, right, names, measure, xlabel):
    """Two bars per group with ± std error bars; each bar's mean written inside it, at its foot."""
    x = np.arange(len(labels))
    width = 0.38
    scale = _scale(measure)
    placed = []
    for offset, values, name in ((-width / 2, left, names[0]), (width / 2, right, names[1])):
        means = [scale * np.nanmean(v) for v in values]
        stds = [scale * (np.nanstd(v, ddof=1) if len(v) > 1 else 0.0) for v in values]
        ax.bar(x + offset, means, width, yerr=stds, capsize=3, label=name, error_kw={"lw": 1.2})
        placed += [(xi + offset, m) for xi, m in zip(x, means)]
    ax.set_xticks(x, labels)
    lows = [scale * np.nanmin(v) for v in (*left, *right)]
    highs = [scale * np.nanmax(v) for v in (*left, *right)]
    span = max(highs) - min(lows)
    low, high = max(0.0, min(lows) - 0.6 * span - 1), max(highs) + 0.35 * span + 1
    ax.set_ylim(low, high)
    for xi, m in placed:
        ax.text(
            xi,
            low + 0.03 * (high - low),
            f"{m:.1f}",
            ha="center",
            va="bottom",
            color="white",
            fontsize="small",
            fontweight="bold",
        )
    ax.set_xlabel(xlabel)
    ax.set_ylabel(FINAL[measure] + " (mean ± std)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(fontsize="small", loc="upper left")


def old_vs_new_plot(results: Mapping[str, Any] | Any, *, ax=None, title: str | None = None):
    """The ACOG paper's Fig. 7: for each ACOG variant (:class:`jcsol.protocols.OldVsNew` by label), the measure
    with the mean step along the old Σ_t beside the new Σ_{t+1}, each at its selected η; error bars ± one std."""
    fig, ax = _figure(ax)
    items = _mapping(results)
    measure = next(iter(items.values())).measure
    _paired_bars(
        ax,
        list(items),
        [o.values["old"] for o in items.values()],
        [o.values["new"] for o in items.values()],
        (r"old $\Sigma_t$ (AROW-style)", r"new $\Sigma_{t+1}$ (ACOG)"),
        measure,
        "ACOG variant",
    )
    if title:
        ax.set_title(title)
    return fig


def offline_vs_laplace_plot(results: Mapping[str, Any] | Any, *, ax=None, title: str | None = None):
    """The ACOG paper's Fig. 8: for each learner (:class:`jcsol.protocols.OfflineVsLaplace` by label), *sum* with
    ρ from the whole stream beside ρ estimated online by Laplace's rule; error bars ± one std."""
    fig, ax = _figure(ax)
    items = _mapping(results)
    _paired_bars(
        ax,
        list(items),
        [o.offline.values for o in items.values()],
        [o.laplace.values for o in items.values()],
        (
            r"offline $\rho = \alpha_p T_n / (\alpha_n T_p)$",
            r"Laplace $\rho_t = \alpha_p (n_t+1) / (\alpha_n (p_t+1))$",
        ),
        "sum",
        "learner",
    )
    if title:
        ax.set_title(title)
    return fig


def save(fig, path_stem: str | os.PathLike, dpi: int = 150) -> tuple[Path, Path]:
    """Writes ``fig`` to ``path_stem.png`` and ``path_stem.svg`` (parent folders created); returns both paths."""
    stem = Path(path_stem)
    if stem.suffix.lower() in (".png", ".svg"):
        stem = stem.with_suffix("")
    stem.parent.mkdir(parents=True, exist_ok=True)
    png, svg = stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".svg")
    with atomic_write(png) as fh:
        fig.savefig(fh, format="png", dpi=dpi)
    with atomic_write(svg) as fh:
        fig.savefig(fh, format="svg")
    return png, svg
