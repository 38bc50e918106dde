"""Reproduction report: the papers' tables on the datasets available here, paper value beside jcsol value.

    python benchmarks/reproduce.py [--data-dir DIR] [--tables acog-table2 ...] [--perms 20] [--json out.json]

Tables (:data:`jcsol.papers.TABLES`; their paper values ship as package data in ``jcsol/papers/values/``, each
with the table it is transcribed from; ``tests/test_protocols.py`` checks every number against the papers' texts):

* **acog-table2** — P. Zhao, Y. Zhang, M. Wu, S. C. H. Hoi, M. Tan, J. Huang, *Adaptive Cost-Sensitive Online
  Classification* (IEEE TKDE 2019), Table II: *sum* (%) and *cost* (/100, c_p = 0.9) of online learning on
  german (german.numer), a9a (train + test, 48,842 rows) and ijcnn1, every learner registered in
  ``jcsol.VARIANTS`` among the paper's twelve; 20 permutations; η/λ/C selected from {1e-5, …, 1e5} by the mean
  measure, the chosen value re-run on 20 fresh permutations (``jcsol.protocols.select_and_rerun``); AROW's
  r = 1 (the paper's γ = 1 for AROW). ijcnn1 is the 49,990-row training file: the paper's Table I says 141,691
  rows (train + test), but its costs are those of 49,990 rows (ACOG-II: sensitivity 87.626% and specificity
  84.770% give cost/100 = 12.28 on the training file, as printed, and 34.6 on train + test). covtype is not
  available.
* **acog-table3** — the same paper's Table III, 5-fold generalisation: one online pass over 4 folds, *sum* of
  the final model on the held-out fold (``jcsol.protocols.cross_validate``; all folds × the step-size grid in
  one run, the step size of each fold chosen by the online *sum* of its own training pass).
* **arcsogd-table4** — P. Zhao, F. Zhuang, M. Wu, X.-L. Li, S. C. H. Hoi, *Cost-Sensitive Online Classification
  with Adaptive Regularization and Its Applications* (IEEE ICDM 2015), Table IV, with the ACOG paper's Table
  VIII (acog-table8): balanced accuracy of online anomaly detection on australian, magic04 (hadron = +1) and
  dna (class 1 vs rest); the ICDM 2015 value where that paper has the learner and dataset, else the ACOG
  paper's (the ``note`` column gives the ACOG paper's value where both papers have one). KDDCUP08 and cod-rna
  are not available.
* **csogd-table2** — J. Wang, P. Zhao, S. C. H. Hoi, *Cost-Sensitive Online Classification* (IEEE ICDM 2012),
  Table II: *sum* and *cost* (c_p = 0.95, raw) on german and w8a with the paper's fixed settings (C = 10,
  λ = 0.2 for COG-I, 0.1 for COG-II); german is the [-1, 1]-scaled copy german.numer_scale (the paper's
  numbers are far from what any learner gets on the unscaled file); w8a is the training file only (49,749 of
  the paper's 64,700 rows), so its costs are rescaled to 64,700 rows.

Every row gives the paper's value, jcsol's mean ± std over permutations (folds for Table III), the difference,
a flag where it exceeds 1.5 points (5% for costs), the selected setting, the time per run (all runs of a call
execute together; this is their execution time divided by their number) and the wall time of the row
(compilation included). The data folder defaults to ``../shared/data`` beside the repository.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import jcsol

jcsol.use_cpu_cores()  # before any JAX computation: one CPU device per core

import jax  # noqa: E402

from jcsol import papers, report  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
ORDER = tuple(papers.TABLES)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--tables", nargs="+", choices=ORDER, default=list(ORDER))
    parser.add_argument("--perms", type=int, default=20)
    parser.add_argument("--max-rows", type=int, default=None, help="subsample every dataset (quick look)")
    parser.add_argument("--format", choices=["text", "markdown"], default="text")
    parser.add_argument("--json", type=Path, help="also write every row as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each row as it is done (stderr)")
    args = parser.parse_args()
    if not args.data_dir.is_dir():
        print(f"reproduce.py: error: --data-dir {args.data_dir}: no such directory", file=sys.stderr)
        return 2
    devices = jax.devices()
    print(
        f"jcsol {jcsol.__version__}, JAX {jax.__version__}, {len(devices)} {devices[0].platform.upper()} device(s) "
        f"on {platform.node()} ({platform.processor() or platform.machine()}), Python {platform.python_version()}"
    )
    print(f"data: {args.data_dir.resolve()}; {args.perms} permutations; key 0; {time.strftime('%Y-%m-%d %H:%M')}")
    print("registered learners:", ", ".join(jcsol.VARIANTS))
    cache: dict = {}
    log = (lambda line: print("  " + line, file=sys.stderr, flush=True)) if args.verbose else None
    everything, flagged, total = [], 0, time.perf_counter()
    for table in args.tables:
        rep = papers.reproduce_table(
            table, args.data_dir, perms=args.perms, max_rows=args.max_rows, cache=cache, log=log
        )
        print(f"\n=== {rep.title}")
        print(papers.comparison_table(rep.rows, fmt=args.format))
        for note in rep.notes:
            print(f"note: {note}")
        n_flag = sum(r.flagged() for r in rep.rows)
        flagged += n_flag
        print(f"{table}: {len(rep.rows)} rows, {n_flag} flagged (> 1.5 points, or > 5% for costs); {rep.seconds:.0f} s")
        everything += [{"table": table, **vars(r), "diff": r.diff, "flagged": r.flagged()} for r in rep.rows]
        sys.stdout.flush()
    print(f"\nall tables: {len(everything)} rows, {flagged} flagged; {time.perf_counter() - total:.0f} s")
    if args.json:
        report.write_json({"rows": everything}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
