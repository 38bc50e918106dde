"""Reproduction of the baselines' *sum* rows of Table II of Zhao, Zhang, Wu, Hoi, Tan, Huang, *Adaptive
Cost-Sensitive Online Classification* (IEEE TKDE 2019; the ``acog`` entry of ``docs/bibliography.md``) on a9a
and german, with the papers' protocol (``docs/protocols.md``).

The protocol: one pass per random permutation, 20 permutations (``jcsol.run(..., perms=20)``), *sum* with
α_p = α_n = ½ (``jcsol.Sum()``, ρ = T_n/T_p offline), C selected from ``jcsol.decades()`` = {1e-5, …, 1e5} by
the mean *sum* over the permutations (``res.best("sum")``), AROW's r = 1. Each row prints the paper's value,
jcsol's mean ± std over the permutations (in %), the difference, and the hyperparameter used.

    python benchmarks/baselines.py [--data DIR]

Data: german ships with jcsol; a9a is the LIBSVM train + test files (48,842 × 123) from ``--data``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jcsol

jcsol.use_cpu_cores()  # before any JAX computation: one CPU device per core


import numpy as np  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"

# Zhao, Zhang, Wu, Hoi, Tan, Huang, Adaptive Cost-Sensitive Online Classification (TKDE 2019), Table II, "sum" task:
# (sum, sensitivity, specificity) in %, means over 20 permutations.
PAPER = {
    "a9a": {
        "Perceptron": (71.343, 56.406, 86.280),
        "ROMMA": (70.904, 57.918, 83.889),
        "PA-I": (71.274, 56.310, 86.237),
        "PAUM": (78.255, 70.868, 85.643),
        "CPA-PB": (72.678, 62.818, 82.537),
        "AROW": (75.854, 58.858, 92.849),
    },
    "german": {
        "Perceptron": (53.760, 35.133, 72.386),
        "ROMMA": (57.625, 43.550, 71.700),
        "PA-I": (53.043, 34.000, 72.086),
        "PAUM": (54.145, 26.483, 81.807),
        "CPA-PB": (53.185, 37.883, 68.486),
        "AROW": (59.948, 26.367, 93.529),
    },
}
# rows: (label, paper key, learner, targets as (dataset, tolerance in points))
ROWS = [
    ("Perceptron", "Perceptron", lambda: jcsol.Perceptron(), {"a9a": 1.5, "german": 1.5}),
    ("ROMMA", "ROMMA", lambda: jcsol.ROMMA(), {"a9a": 1.5, "german": 1.5}),
    ("PA-I (C=10)", "PA-I", lambda: jcsol.PA1(C=10.0), {"a9a": 1.5}),
    ("PA-I (C selected)", "PA-I", lambda: jcsol.PA1(C=jcsol.decades()), {}),
    ("PAUM", "PAUM", lambda: jcsol.PAUM(), {"a9a": 1.5, "german": 1.5}),
    ("CPA-PB (C=10)", "CPA-PB", lambda: jcsol.CPAPB(C=10.0), {}),
    ("CPA-PB (C selected)", "CPA-PB", lambda: jcsol.CPAPB(C=jcsol.decades()), {}),
    ("AROW (r=1)", "AROW", lambda: jcsol.AROW(r=1.0), {"a9a": 1.5}),
]


# Rows that explain the deviations of the main table (see the summary printed at the end).
DIAGNOSTICS = [
    ("AROW (r=0.1)", "AROW", lambda: jcsol.AROW(r=0.1)),
    ("CPA-ML (max-loss, C=10)", "CPA-PB", lambda: jcsol.CPAML(C=10.0)),
]


def load(data: Path) -> dict:
    sets = {"german": jcsol.datasets.load("german")}
    X1, y1 = jcsol.datasets.load(data / "a9a.gz", n_features=123)
    X2, y2 = jcsol.datasets.load(data / "a9a.t.gz", n_features=123)
    sets["a9a"] = (np.concatenate([X1, X2]), np.concatenate([y1, y2]))
    return sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--perms", type=int, default=20)
    args = parser.parse_args()
    sets = load(args.data)
    print(
        f"jcsol {jcsol.__version__}, {len(__import__('jax').devices())} CPU device(s), {args.perms} permutations, "
        "Sum(α_p = 0.5, ρ offline)"
    )
    results: dict[tuple[str, str], float] = {}
    failures = []
    for dataset, (X, y) in sets.items():
        print(
            f"\n{dataset}: {X.shape[0]} × {X.shape[1]}, {int((y > 0).sum())} positives, "
            f"ρ = {(y < 0).sum() / (y > 0).sum():.4f}"
        )
        print(
            f"  {'learner':<28}{'paper sum (sens/spec)':<24}{'jcsol sum ± std (sens/spec)':<32}{'diff':>6}  "
            f"{'setting':<9}{'time':>6}"
        )
        rows = [(label, key, make, targets) for label, key, make, targets in ROWS]
        rows += [(f"[diag] {label}", key, make, {}) for label, key, make in DIAGNOSTICS]
        for label, key, make, targets in rows:
            start = time.perf_counter()
            res = jcsol.run(make(), X, y, perms=args.perms, key=0)
            best = res.best("sum")
            sums = 100 * best.result.sum
            mean, std = float(sums.mean()), float(sums.std())
            paper, paper_sens, paper_spec = PAPER[dataset][key]
            diff = mean - paper
            setting = ", ".join(f"{k}={v:g}" for k, v in best.params.items() if k != "alpha_p") or "-"
            results[(dataset, label)] = mean
            verdict = ""
            if dataset in targets:
                ok = abs(diff) <= targets[dataset]
                verdict = f"  target ±{targets[dataset]:g}: {'ok' if ok else 'MISSED'}"
                if not ok:
                    failures.append(f"{label} on {dataset}: {diff:+.2f}")
            sens, spec = 100 * best.result.sensitivity.mean(), 100 * best.result.specificity.mean()
            print(
                f"  {label:<28}{paper:7.3f} ({paper_sens:5.2f}/{paper_spec:5.2f})   {mean:7.3f} ± {std:5.3f} "
                f"({sens:5.2f}/{spec:5.2f})  {diff:>+6.2f}  {setting:<9}{time.perf_counter() - start:>5.1f}s"
                f"{verdict}"
            )
    gaps = {other: results[("a9a", "PAUM")] - results[("a9a", other)] for other in ("Perceptron", "PA-I (C=10)")}
    print()
    for other, gap in gaps.items():
        ok = gap > 5
        print(f"a9a: PAUM − {other} = {gap:+.2f} points (target > 5): {'ok' if ok else 'MISSED'}")
        if not ok:
            failures.append(f"PAUM − {other} on a9a: {gap:+.2f}")
    print("\nall targets met" if not failures else "\ntargets missed: " + "; ".join(failures))
    print(NOTES)


NOTES = """
Notes on the rows that differ from the paper by more than ~1.5 points (compare with the [diag] rows):
* PA-I (C selected): selecting C by sum finds a smaller C (a better sum) than the paper's row, which matches
  C >= 10 (the setting of Wang, Zhao, Hoi, ICDM 2012, C = 10; on L2-normalised rows every C >= ~10 gives the
  same run). The TKDE paper's text says
  C was selected from {1e-5, ..., 1e5}; its numbers are those of C = 10.
* AROW on german: the paper's row (sum, sensitivity and specificity) is reproduced by r = 0.1, not by the r = 1
  the text states; r = 0.1 also matches the paper on a9a (r = 1 is within the target there too).
* CPA-PB on a9a: the prediction-based rule (update on mistakes) falls short of the paper in sensitivity; the
  paper's row is reproduced by the max-loss rule (update whenever sqrt(rho_t) - y f > 0, C = 10), i.e. the code
  behind the paper's CPA-PB updates on cost-sensitive margin violations, not only on mistakes. The same holds
  for dna in the anomaly-detection table (balanced accuracy, paper 89.401): prediction-based 85.7 (C = 10
  selected), max-loss 90.1 (C = 10 selected). On a9a the max-loss rule at C = 10 gives 72.9 (paper 72.678);
  selecting C by sum would pick C = 0.1 (76.8), so the paper's a9a row is C = 10's, as the ICDM 2012 paper sets
  it. Ruled out:
  rho instead of sqrt(rho) as the margin target (a9a 71.9 prediction-based, 78.6 max-loss; dna 86.0, 90.2) and
  the selection protocol (the selection runs and a re-run on fresh permutations differ by < 0.1).
"""


if __name__ == "__main__":
    main()
