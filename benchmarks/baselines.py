"""Reproduction of the baselines' *sum* rows of 003's Table II (a9a and german), with the papers' protocol.

SPEC §6: one pass per random permutation, 20 permutations (``jcsol.run(..., perms=20)``), *sum* with
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

# 003 (Zhao, Zhang, Wu, Hoi, Tan, Huang, Adaptive Cost-Sensitive Online Classification), Table II, "sum" (%).
PAPER = {
    "a9a": {"Perceptron": 71.343, "ROMMA": 70.904, "PA-I": 71.274, "PAUM": 78.255, "CPA-PB": 72.678,
            "AROW": 75.854},
    "german": {"Perceptron": 53.760, "ROMMA": 57.625, "PA-I": 53.043, "PAUM": 54.145, "CPA-PB": 53.185,
               "AROW": 59.948},
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
    print(f"jcsol {jcsol.__version__}, {len(__import__('jax').devices())} CPU device(s), {args.perms} permutations, "
          "Sum(α_p = 0.5, ρ offline)")
    results: dict[tuple[str, str], float] = {}
    failures = []
    for dataset, (X, y) in sets.items():
        print(f"\n{dataset}: {X.shape[0]} × {X.shape[1]}, {int((y > 0).sum())} positives, "
              f"ρ = {(y < 0).sum() / (y > 0).sum():.4f}")
        print(f"  {'learner':<22}{'paper':>8}{'jcsol':>18}{'diff':>8}  {'setting':<14}{'time':>7}")
        for label, key, make, targets in ROWS:
            start = time.perf_counter()
            res = jcsol.run(make(), X, y, perms=args.perms, key=0)
            best = res.best("sum")
            sums = 100 * best.result.sum
            mean, std = float(sums.mean()), float(sums.std())
            paper = PAPER[dataset][key]
            diff = mean - paper
            setting = ", ".join(f"{k}={v:g}" for k, v in best.params.items() if k != "alpha_p") or "-"
            results[(dataset, label)] = mean
            verdict = ""
            if dataset in targets:
                ok = abs(diff) <= targets[dataset]
                verdict = f"  target ±{targets[dataset]:g}: {'ok' if ok else 'MISSED'}"
                if not ok:
                    failures.append(f"{label} on {dataset}: {diff:+.2f}")
            print(f"  {label:<22}{paper:>8.3f}{mean:>11.3f} ± {std:<5.3f}{diff:>+8.2f}  {setting:<14}"
                  f"{time.perf_counter() - start:>6.1f}s{verdict}")
    gaps = {other: results[("a9a", "PAUM")] - results[("a9a", other)] for other in ("Perceptron", "PA-I (C=10)")}
    print()
    for other, gap in gaps.items():
        ok = gap > 5
        print(f"a9a: PAUM − {other} = {gap:+.2f} points (target > 5): {'ok' if ok else 'MISSED'}")
        if not ok:
            failures.append(f"PAUM − {other} on a9a: {gap:+.2f}")
    print("\nall targets met" if not failures else "\ntargets missed: " + "; ".join(failures))


if __name__ == "__main__":
    main()
