"""What late labels cost: each learner's served measures as the delay of its labels grows.

``jcsol.run(..., delay=D)`` scores every row with the model that has learnt only the labels known when it arrives
(:mod:`jcsol.core.delay`). For each learner and delay, the whole η grid (``jcsol.decades()``) runs over the same
orders in one call, and the table gives the best η's mean over the runs (in hindsight over the grid, the same
hindsight at every delay, so that the column differences are what the delay costs):

* a9a (train + test, 48,842 rows, 24% positive), ``--perms`` random orders, delays counted in rows;
* the generated payments stream (:func:`jcsol.datasets.synthetic.payments`: 50,000 payments over 30 days, 1%
  fraud; hashed by :class:`jcsol.TableEncoder` into 2**16 slots), in time order, delays in time (a chargeback
  comes hours to weeks after the payment).

Measures: *sum* (balanced accuracy of the served predictions, %) and ROC AUC of the served scores (%).

    python benchmarks/delay.py [--data benchmarks/data] [--perms 4] [--rows 48842]
"""

from __future__ import annotations

import jcsol

jcsol.use_cpu_cores()  # first thing: one CPU device per core, before any JAX computation

import argparse
import time
from pathlib import Path

import numpy as np

ROW_DELAYS = (0, 100, 1_000, 10_000)
TIME_DELAYS = (
    ("none", np.timedelta64(0, "s")),
    ("1 hour", np.timedelta64(1, "h")),
    ("1 day", np.timedelta64(1, "D")),
    ("7 days", np.timedelta64(7, "D")),
)
A9A_LEARNERS = ("ACOG-II", "ACOG-II-diag", "COG-II", "ACOG-I", "COG-I")
TABLE_LEARNERS = ("ACOG-II-diag", "COG-II", "ACOG-I-diag", "COG-I")


def best(res, measure: str) -> float:
    """The best grid point's mean of ``measure`` over the runs, in %."""
    return 100 * float(np.nanmax(np.nanmean(res.measure(measure), axis=-1)))


def table(title: str, columns: list[str], rows: dict[str, list[tuple[float, float]]]) -> None:
    print(f"\n{title}: best η's mean sum / ROC AUC (%), by delay")
    print("| learner | " + " | ".join(columns) + " | sum lost at the longest |")
    print("|---|" + "---|" * (len(columns) + 1))
    for name, cells in rows.items():
        shown = " | ".join(f"{s:.1f} / {a:.1f}" for s, a in cells)
        print(f"| {name} | {shown} | {cells[0][0] - cells[-1][0]:+.1f} |")


def sweep(X, y, learners, delays, **options) -> dict[str, list[tuple[float, float]]]:
    rows: dict[str, list[tuple[float, float]]] = {}
    for name in learners:
        grid = jcsol.grid(jcsol.by_name(name), eta=jcsol.decades())
        cells = []
        for delay in delays:
            started = time.perf_counter()
            res = jcsol.run(grid, X, y, delay=delay, record_scores=True, objective=jcsol.Sum(rho="laplace"), **options)
            cells.append((best(res, "sum"), best(res, "roc_auc")))
            print(f"  {name} delay {delay}: {time.perf_counter() - started:.1f} s", flush=True)
        rows[name] = cells
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parent / "data")
    parser.add_argument("--perms", type=int, default=4)
    parser.add_argument("--rows", type=int, default=48_842)
    parser.add_argument("--payments", type=int, default=50_000)
    args = parser.parse_args()

    X, y = jcsol.datasets.load_dataset("a9a", args.data)
    X, y = X[: args.rows], y[: args.rows]
    print(f"a9a: {len(y)} rows × {X.shape[1]}, {np.mean(y > 0):.1%} positive, {args.perms} orders")
    rows = sweep(X, y, A9A_LEARNERS, ROW_DELAYS, perms=args.perms)
    table("a9a", [f"{d} rows" for d in ROW_DELAYS], rows)

    frame = jcsol.datasets.synthetic.payments(args.payments)
    times = np.asarray(frame["ts"].to_numpy(), dtype="datetime64[ns]")
    Xp, yp, _ = jcsol.features.load_table(frame, "fraud", positive=1, drop=["payment_id"], datetime=["ts"], bits=16)
    span = (times[-1] - times[0]).astype("timedelta64[D]")
    print(f"\npayments: {len(yp)} rows, {np.mean(yp > 0):.2%} fraud, over {span}")
    rows = sweep(Xp, yp, TABLE_LEARNERS, [d for _, d in TIME_DELAYS], perms="stream", times=times)
    table("payments (time order)", [name for name, _ in TIME_DELAYS], rows)


if __name__ == "__main__":
    main()
