"""Which measure to select hyperparameters by on imbalanced streams (positives under 10%), measured on held-out
permutations.

For every stream whose positives are under 10% among those :mod:`defaults` loads (letter, w8a and ijcnn1 where
their files are there; german, svmguide3, spambase, magic04 and a9a have 24–39% positives and are left out),
plus the generated payments table (:func:`jcsol.datasets.synthetic.payments`, 1% fraud, encoded by
:func:`jcsol.features.load_table` with 16 hashing bits), and for the learners ACOG-II-diag and COG-II over
``eta = jcsol.decades()`` (11 values) under ``Sum(rho="laplace")`` (positives weighted by the class ratio seen so
far, no hindsight):

1. every η runs over ``--perms`` random permutations of key 0, recording every round's pre-update score;
2. each candidate **selecting measure** picks the η of its best mean over those runs
   (:func:`jcsol.metrics.best_index`): ``sum`` (balanced accuracy of the sign predictions, the papers'
   measure), ``roc_auc``, ``average_precision``, ``precision_at_1%`` (the top 1% of the scores in hindsight), and
   ``budget precision`` — the precision of the online 1% alert budget (:func:`jcsol.alerts.alerted` with
   ``budget=0.01``: each row decided when it arrives, from the scores before it);
3. the chosen η is read on fresh permutations (key 1, every η run once more, so that the reported figures are
   not the maximum of the noisy means they were selected by): the **held-out** ROC AUC, average precision, and
   the precision and recall of the online 1% budget.

Each stream's table gives, per learner and selecting measure, the η chosen and the held-out figures, with the
best η in hindsight on the held-out runs for each figure ("hindsight", the ceiling), and the share of the rows
that the online budget alerted ("alerted": a model's scores drift as it learns, so it need not be 1%); the
summary gives the mean over the streams of each held-out figure per selecting measure (all in %), its mean
shortfall from the hindsight ceiling, and on how many streams × learners it was the best of the selecting
measures. Rows: at most ``--rows`` of each stream (a fixed random subset; the payments table of
``--rows`` rows).

    python benchmarks/selection_measure.py [--data DIR] [--rows 20000] [--perms 5] [--sets letter w8a ...]
"""

from __future__ import annotations

import jcsol

jcsol.use_cpu_cores()  # first thing: one CPU device per core, before any JAX computation

import argparse
import os
import time
from pathlib import Path

import numpy as np
from defaults import SETS, data_root, load  # benchmarks/ is on sys.path when run as a script

from jcsol import alerts, metrics
from jcsol.datasets import synthetic

LEARNERS = ("ACOG-II-diag", "COG-II")
OBJECTIVE = jcsol.Sum(rho="laplace")
BUDGET = 0.01
IMBALANCED = 0.10  # streams whose positives are under this share
BUDGET_PRECISION = "budget precision"
SELECTING = ("sum", "roc_auc", "average_precision", "precision_at_1%", BUDGET_PRECISION)
HELD_OUT = ("roc_auc", "average_precision", BUDGET_PRECISION, "budget recall")
SHARE = "budget share"  # the rows the online budget alerted: no ceiling, shown beside the figures
TITLES = {
    "roc_auc": "AUC",
    "average_precision": "AP",
    BUDGET_PRECISION: "prec@budget",
    "budget recall": "recall@budget",
    SHARE: "alerted",
}


def streams(names: list[str], data: Path, rows: int) -> list[tuple[str, object, np.ndarray]]:
    """The imbalanced streams (name, rows, ±1 labels), at most ``rows`` rows each, and the payments table."""
    out = []
    for name in names:
        if name == "payments":
            frame = synthetic.payments(rows, fraud=0.01, seed=0)
            X, y, _ = jcsol.features.load_table(
                frame, "fraud", positive=1, drop=["payment_id"], datetime=["ts"], bits=16
            )
            out.append((name, X, np.asarray(y)))
            continue
        loaded = load(name, data)
        if loaded is None:
            print(f"{name}: skipped (not in {data})")
            continue
        X, y = np.asarray(loaded[0]), np.asarray(loaded[1])
        share = float(np.mean(y > 0))
        if share >= IMBALANCED:
            print(f"{name}: left out ({100 * share:.1f}% positives, not under {100 * IMBALANCED:g}%)")
            continue
        keep = np.sort(np.random.default_rng(0).permutation(len(y))[:rows])  # a fixed subset, in its order
        out.append((name, X[keep], y[keep]))
    return out


def budget_figures(res: jcsol.Result) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per grid point, the mean precision, recall and share of rows alerted of the online 1% budget over the
    runs; NaN at a point whose scores hold NaN (a diverged model: no alert is defined)."""
    precision, recall, share = (np.full(res.grid_shape, np.nan) for _ in range(3))
    for i in range(int(np.prod(res.grid_shape))):
        point = res.at(i)
        if np.isnan(point.scores).any():
            continue
        top = alerts.alerted(point, budget=BUDGET)
        flagged = top.counts[..., metrics.TP] + top.counts[..., metrics.FP]
        precision.flat[i], recall.flat[i] = top.precision.mean(), top.sensitivity.mean()
        share.flat[i] = flagged.mean() / top.orders.shape[1]
    return precision, recall, share


def means(res: jcsol.Result) -> dict[str, np.ndarray]:
    """Every selecting and held-out figure of each η: the mean over the runs."""
    out = {m: res.measure(m).mean(-1) for m in SELECTING if m != BUDGET_PRECISION}
    out[BUDGET_PRECISION], out["budget recall"], out[SHARE] = budget_figures(res)
    return out


def measure_stream(name: str, X, y: np.ndarray, perms: int) -> dict:
    """``{learner: {selecting measure: (η, {held-out figure: value})}, learner + " hindsight": …}``."""
    table: dict = {}
    for learner_name in LEARNERS:
        learner = jcsol.by_name(learner_name, eta=jcsol.decades())
        start = time.perf_counter()
        runs = {
            key: jcsol.run(learner, X, y, perms=perms, key=key, objective=OBJECTIVE, record_scores=True)
            for key in (0, 1)
        }
        selection, held = means(runs[0]), means(runs[1])
        etas = np.asarray(runs[0].params["eta"])
        rows = {}
        for m in SELECTING:
            rule = "precision" if m == BUDGET_PRECISION else m  # which way is better
            i = metrics.best_index(selection[m], rule)
            rows[m] = (float(etas[i]), {h: float(held[h][i]) for h in (*HELD_OUT, SHARE)})
        rows["hindsight"] = (None, {h: float(np.nanmax(held[h])) for h in HELD_OUT} | {SHARE: np.nan})
        table[learner_name] = rows
        print(f"  {name} {learner_name}: {time.perf_counter() - start:.1f} s", flush=True)
    return table


def print_stream(name: str, n: int, positives: int, table: dict) -> None:
    print(f"\n{name}: {n:,} rows, {positives:,} positive ({100 * positives / n:.2f}%); held-out figures in %")
    header = f"{'learner':<14}{'selected by':<20}{'η':>8}" + "".join(f"{TITLES[h]:>15}" for h in (*HELD_OUT, SHARE))
    print(header)
    for learner, rows in table.items():
        for m, (eta, figures) in rows.items():
            shown = "—" if eta is None else f"{eta:g}"
            cells = "".join(f"{100 * figures[h]:>15.1f}" for h in HELD_OUT)
            share = "" if np.isnan(figures[SHARE]) else f"{100 * figures[SHARE]:>15.2f}"
            print(f"{learner:<14}{m:<20}{shown:>8}{cells}{share}")


def print_summary(tables: dict[str, dict]) -> None:
    names = list(tables)
    print(f"\nsummary over {len(names)} streams ({', '.join(names)}): mean held-out figure, % (mean shortfall from")
    print("the hindsight ceiling, points); 'wins': streams × learners where the row's figure is the best of the rows")
    header = f"{'learner':<14}{'selected by':<20}" + "".join(f"{TITLES[h]:>22}" for h in HELD_OUT)
    print(header + f"{TITLES[SHARE]:>9}")
    for learner in [*LEARNERS, "both"]:
        pairs = [(s, lrn) for s in names for lrn in (LEARNERS if learner == "both" else (learner,))]
        for m in SELECTING:
            cells = []
            for h in HELD_OUT:
                values = np.array([tables[s][lrn][m][1][h] for s, lrn in pairs])
                ceiling = np.array([tables[s][lrn]["hindsight"][1][h] for s, lrn in pairs])
                best = [max(tables[s][lrn][k][1][h] for k in SELECTING) for s, lrn in pairs]
                wins = sum(v >= b - 1e-12 for v, b in zip(values, best))
                cells.append(
                    f"{100 * values.mean():>8.1f} ({100 * (ceiling - values).mean():>4.1f}) {wins:>2}/{len(pairs)}"
                )
            share = np.mean([tables[s][lrn][m][1][SHARE] for s, lrn in pairs])
            print(f"{learner:<14}{m:<20}" + "".join(f"{c:>22}" for c in cells) + f"{100 * share:>9.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--data", type=Path, default=None, help="folder of the LIBSVM files (default: $JCSOL_DATA, ../shared/data)"
    )
    p.add_argument("--sets", nargs="+", default=[*SETS, "payments"], choices=[*SETS, "payments"])
    p.add_argument("--rows", type=int, default=20_000, help="rows of each stream at most (default 20,000)")
    p.add_argument("--perms", type=int, default=5, help="permutations of the selection and of the held-out runs")
    args = p.parse_args()
    print(
        f"jcsol {jcsol.__version__}; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start; "
        f"{args.perms} permutations, at most {args.rows:,} rows"
    )
    start = time.perf_counter()
    tables, shapes = {}, {}
    for name, X, y in streams(args.sets, data_root(args.data), args.rows):
        shapes[name] = (len(y), int(np.sum(y > 0)))
        tables[name] = measure_stream(name, X, y, args.perms)
    for name, table in tables.items():
        print_stream(name, *shapes[name], table)
    print_summary(tables)
    print(
        f"\n{', '.join(LEARNERS)} over η = jcsol.decades(), Sum(rho='laplace'); selected on key 0, measured on key 1; "
        f"budget: the online {100 * BUDGET:g}% alert budget (jcsol.alerts.budget_alerts, no history)"
    )
    print(f"total {time.perf_counter() - start:.0f} s; load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
