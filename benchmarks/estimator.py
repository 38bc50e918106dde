"""The scikit-learn estimator's speed over a9a's training rows (32,561 × 123), beside the engine in the same process.

For COG-I and ACOG-I-diag: ``partial_fit`` in batches of 1 (the first 1,000 rows), 100 (the first 10,000) and
1,000 (every row), and one ``fit``, each the best of ``--repeats`` after a warm-up that compiles every batch size;
the baseline is :func:`jcsol.run` of the same learner over the same rows in their order (one run, compilation
apart). ``--compare-rev REV`` also times the estimator of an earlier revision (its ``jcsol/sklearn.py``, read with
``git show`` and loaded beside this one), alternating with the current one, and says whether their models have
the same bits.

    python benchmarks/estimator.py [--data-dir benchmarks/data] [--repeats 3] [--compare-rev 91abcd9]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import jcsol
import jcsol.sklearn

HERE = Path(__file__).resolve().parent
ROWS = {1: 1_000, 100: 10_000, 1000: None}  # rows streamed per batch size (None: every row)


def estimator_of(rev: str):
    """The ``jcsol.sklearn`` module of revision ``rev``, loaded as ``jcsol.sklearn_<rev>`` (its relative imports
    read today's jcsol)."""
    source = subprocess.run(
        ["git", "show", f"{rev}:jcsol/sklearn.py"], capture_output=True, text=True, check=True, cwd=HERE.parent
    ).stdout
    path = Path(tempfile.mkdtemp()) / "sklearn_then.py"
    path.write_text(source)
    name = f"jcsol.sklearn_{rev}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def timed(module, learner, X, y, batch):
    """Seconds of ``partial_fit`` in batches of ``batch`` (``None``: one ``fit``), and the fitted estimator."""
    start = time.perf_counter()
    if batch is None:
        clf = module.OnlineClassifier(learner).fit(X, y)
    else:
        clf = module.OnlineClassifier(learner)
        n = ROWS[batch] or len(y)
        for lo in range(0, n, batch):
            clf.partial_fit(X[lo : lo + batch], y[lo : lo + batch], classes=[-1, 1])
    return time.perf_counter() - start, clf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compare-rev", help="a git revision whose estimator is timed beside this one")
    args = parser.parse_args()
    X, y = jcsol.datasets.load(args.data_dir / "a9a.gz", n_features=123)
    modules = {"now": jcsol.sklearn}
    if args.compare_rev:
        modules = {args.compare_rev: estimator_of(args.compare_rev), **modules}
    for learner in (jcsol.COG(eta=0.5), jcsol.ACOG(eta=0.1, diagonal=True)):
        in_order = np.arange(len(y))[None]
        engine = min(jcsol.run(learner, X, y, perms=in_order, progress=False).time_run for _ in range(args.repeats + 1))
        print(f"{learner.name}: jcsol.run over the {len(y):,} rows: {len(y) / engine:,.0f} rows/s", flush=True)
        for batch in (1, 100, 1000, None):
            rows = (batch and ROWS[batch]) or len(y)
            for module in modules.values():  # a warm-up compiles every batch size
                timed(module, learner, X, y, batch)
            best, models = dict.fromkeys(modules, np.inf), {}
            for _ in range(args.repeats):
                for name, module in modules.items():
                    seconds, models[name] = timed(module, learner, X, y, batch)
                    best[name] = min(best[name], seconds)
            label = f"batches of {batch}" if batch else "one fit"
            line = f"  {label:16s} {rows:6,d} rows: " + ", ".join(
                f"{name} {rows / seconds:,.0f} rows/s ({rows / seconds / (len(y) / engine):.2g} of the engine's)"
                for name, seconds in best.items()
            )
            if args.compare_rev:
                then = models[args.compare_rev].coef_
                line += (
                    f"; now/{args.compare_rev} time {best['now'] / best[args.compare_rev]:.2f}, "
                    f"same bits: {np.array_equal(then, models['now'].coef_)}"
                )
            print(line, flush=True)


if __name__ == "__main__":
    main()
