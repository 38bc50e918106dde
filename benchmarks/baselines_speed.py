"""Speed of every baseline over the papers' protocol on a9a (train + test, 48,842 × 123).

Learners with a hyperparameter run 11 values × 20 permutations (220 runs) in one ``jcsol.run``; learners without
one run the 20 permutations. For each: compile time, execution time of all runs, aggregate example-updates per
second (``res.updates_per_second``) and per second of the process's CPU time (steadier on a shared machine),
the ratio against a float64 NumPy loop of the same learner (one run, the reference loop of
``tests/algorithms/reference_baselines.py`` with default hyperparameters, timed in this process), and how many runs end
with a finite state.

    python benchmarks/baselines_speed.py [--data DIR] [--only NAME,NAME]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jcsol

jcsol.use_cpu_cores()  # before any JAX computation: one CPU device per core

import jax  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "algorithms"))
import reference_baselines as reference  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
DECADES = jcsol.decades()
# variant name -> the grid of the protocol (one hyperparameter, 11 values), or {} for none
GRIDS = {
    "Perceptron": {},
    "ROMMA": {},
    "aROMMA": {},
    "PA": {},
    "PA-I": {"C": DECADES},
    "PA-II": {"C": DECADES},
    "PAUM": {},
    "CPA-PB": {"C": DECADES},
    "OGD-hinge": {"eta": DECADES},
    "OGD-logistic": {"eta": DECADES},
    "AROW": {"r": DECADES},
    "CW": {"eta": np.linspace(0.55, 0.95, 11)},
    "SCW-I": {"C": DECADES},
    "SCW-II": {"C": DECADES},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--perms", type=int, default=20)
    parser.add_argument("--only", default="", help="comma-separated variant names")
    args = parser.parse_args()
    X1, y1 = jcsol.datasets.load(args.data / "a9a.gz", n_features=123)
    X2, y2 = jcsol.datasets.load(args.data / "a9a.t.gz", n_features=123)
    X, y = np.concatenate([X1, X2]), np.concatenate([y1, y2])
    rho = float((y < 0).sum() / (y > 0).sum())
    names = [n for n in GRIDS if not args.only or n in args.only.split(",")]
    print(
        f"a9a {X.shape[0]} × {X.shape[1]}, float32, {len(jax.devices())} {jax.devices()[0].platform.upper()} "
        f"device(s); NumPy float64 loop: one run"
    )
    print(
        f"{'learner':<14}{'grid':<16}{'runs':>5}{'compile s':>10}{'run s':>9}{'updates/s':>12}{'per CPU s':>10}"
        f"{'NumPy s':>9}{'NumPy upd/s':>12}{'ratio':>8}{'finite runs':>12}"
    )
    for name in names:
        axes = GRIDS[name]
        learner = jcsol.by_name(name, **axes)
        start = time.process_time()
        res = jcsol.run(learner, X, y, perms=args.perms, key=0)
        # updates per second of CPU time (all threads, compilation left out): steadier than the wall-clock rate
        # on a machine shared with other processes
        per_cpu_s = res.n_runs * len(y) / (time.process_time() - start - res.time_compile)
        bad = np.zeros(res.grid_shape + (res.n_perms,), bool)
        for leaf in jax.tree.leaves(res.states):
            leaf = np.asarray(leaf, np.float64).reshape(bad.shape + (-1,))
            bad |= ~np.all(np.isfinite(leaf), axis=-1)
        order = res.orders[0]
        start = time.perf_counter()
        reference.run(name, X, y, order, rho)  # the learner's default hyperparameters
        numpy_s = time.perf_counter() - start
        numpy_ups = len(order) / numpy_s
        grid = ", ".join(f"{k}×{len(v)}" for k, v in axes.items()) or "-"
        print(
            f"{name:<14}{grid:<16}{res.n_runs:>5}{res.time_compile:>10.2f}{res.time_run:>9.2f}"
            f"{res.updates_per_second:>12.3g}{per_cpu_s:>10.3g}{numpy_s:>9.2f}{numpy_ups:>12.3g}"
            f"{res.updates_per_second / numpy_ups:>8.0f}{res.n_runs - int(bad.sum()):>5}/{res.n_runs}",
            flush=True,
        )


if __name__ == "__main__":
    main()
