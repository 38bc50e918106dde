"""Speed of the papers' protocol on a9a (train + test, 48,842 × 123): 11 learning rates × 20 permutations.

For COG-I, ACOG-I-diag and full ACOG-I, prints the compile time, the execution time of all 220 runs, the
aggregate example-updates per second, the time per run, and the ratio against a single-run float64 NumPy
loop of the same learner timed in the same process. Runs once on one CPU device and once with one device
per core (``--devices``), each in its own process since JAX fixes the device count at start-up.

    python benchmarks/engine_speed.py [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
PAPER_MATLAB_SECONDS_PER_RUN = {"ACOG-I-diag": 0.2, "ACOG-I": 3.1}  # ACOG paper (TKDE 2019), Table II, a9a, "sum"


def numpy_loop(name: str, X: np.ndarray, y: np.ndarray, order: np.ndarray, eta: float, rho: float) -> float:
    """One run of the learner as a plain float64 NumPy loop; returns its wall time."""
    X = X.astype(np.float64)
    d = X.shape[1]
    w = np.zeros(d)
    sigma = np.ones(d) if name.endswith("diag") else np.eye(d)
    start = time.perf_counter()
    for i in order:
        x, label = X[i], y[i]
        r = rho if label > 0 else 1.0
        margin = label * (w @ x)
        if r - margin <= 0:  # type-I loss is zero: no update
            continue
        if name == "COG-I":
            w += eta * label * x
        elif name == "ACOG-I-diag":
            sx = sigma * x
            sigma -= sx * sx / (1.0 + sx @ x)
            w += eta * label * sigma * x
        else:
            sx = sigma @ x
            sigma -= np.outer(sx, sx) / (1.0 + sx @ x)
            w += eta * label * (sigma @ x)
    return time.perf_counter() - start


def measure(data_dir: Path, names: list[str]) -> list[dict]:
    import jcsol

    n_devices = jcsol.use_cpu_cores(int(os.environ.get("JCSOL_BENCH_DEVICES", "1")))
    X1, y1 = jcsol.datasets.load(data_dir / "a9a.gz", n_features=123)
    X2, y2 = jcsol.datasets.load(data_dir / "a9a.t.gz", n_features=123)
    X, y = np.concatenate([X1, X2]), np.concatenate([y1, y2])
    rho = (y < 0).sum() / (y > 0).sum()
    order = np.random.default_rng(0).permutation(len(y))
    rows = []
    for name in names:
        learner = jcsol.by_name(name, eta=jcsol.decades())
        res = jcsol.run(learner, X, y, perms=20)
        best = res.best("sum")
        loop = numpy_loop(name, X, y, order, best.params["eta"], rho)
        rows.append(
            {
                "learner": name,
                "devices": n_devices,
                "runs": res.n_runs,
                "compile_s": res.time_compile,
                "run_s": res.time_run,
                "updates_per_s": res.updates_per_second,
                "per_run_s": res.time_per_run,
                "numpy_run_s": loop,
                "numpy_updates_per_s": len(y) / loop,
                "speedup_vs_numpy": res.updates_per_second / (len(y) / loop),
                "best_eta": best.params["eta"],
                "best_sum": 100 * best.result.sum.mean(),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--devices", type=int, nargs="*", default=[1, os.cpu_count() or 1])
    parser.add_argument("--learners", nargs="*", default=["COG-I", "ACOG-I-diag", "ACOG-I"])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.data, args.learners)))
        return
    print(f"a9a train+test, 48,842 × 123, 11 η × 20 permutations = 220 runs; CPU cores: {os.cpu_count()}")
    header = (
        f"{'learner':<12} {'dev':>3} {'compile s':>9} {'220 runs s':>10} {'updates/s':>10} "
        f"{'s/run':>8} {'NumPy s/run':>11} {'× NumPy':>8} {'MATLAB s/run':>12} {'best η':>7} {'sum %':>7}"
    )
    print(header)
    print("-" * len(header))
    for n in sorted(set(args.devices)):
        env = dict(os.environ, JCSOL_BENCH_DEVICES=str(n))
        out = subprocess.run(
            [sys.executable, __file__, "--child", "--data", str(args.data), "--learners", *args.learners],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        for r in json.loads(out.stdout.strip().splitlines()[-1]):
            matlab = PAPER_MATLAB_SECONDS_PER_RUN.get(r["learner"])
            print(
                f"{r['learner']:<12} {r['devices']:>3} {r['compile_s']:>9.2f} {r['run_s']:>10.2f} "
                f"{r['updates_per_s']:>10.3g} {r['per_run_s']:>8.4f} {r['numpy_run_s']:>11.3f} "
                f"{r['speedup_vs_numpy']:>8.1f} {matlab if matlab else '':>12} {r['best_eta']:>7g} "
                f"{r['best_sum']:>7.3f}"
            )


if __name__ == "__main__":
    main()
