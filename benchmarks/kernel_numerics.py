"""How close the GPU kernel's full-covariance states stay to float64 over a whole a9a pass, beside the scan's.

Runs full-covariance ACOG (one η, the rows in their order: 48,842 rounds of a9a, d = 123) three ways — the scan
(float32), the kernel (float32; in Pallas' interpreter off a GPU, compiled by Triton on one) and an independent
float64 NumPy loop written from the paper (``tests/algorithms/reference_cog.py``) — and prints:

* each path's error against float64: ``max |μ − μ₆₄| / max |μ₆₄|``, and the same of Σ;
* the kernel's states against the scan's (the same measure);
* the rounds whose prediction differs between the kernel and the scan, and how many of those have a score within
  ``--tol`` (relative to the largest score) of 0, where the two roundings may predict differently.

The kernel is the engine's own (``jcsol.run(..., path=jcsol.Kernel())``), so this is the numerics a user gets.

    python benchmarks/kernel_numerics.py                    # ACOG-II, η = 1, benchmarks/data's a9a
    python benchmarks/kernel_numerics.py --learner ACOG-I --eta 0.1 --rows 5000 --json out.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if importlib.util.find_spec("jcsol") is None:
    sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests" / "algorithms"))


def relative(a, b) -> float:
    """``max |a − b| / max |b|``."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), np.finfo(np.float64).tiny))


def compare(X, y, *, loss: str, eta: float, tol: float) -> dict:
    """The three paths over the rows of ``X`` in their order, compared."""
    import reference_cog

    import jcsol

    learner = jcsol.ACOG(eta=eta, loss=loss)
    out: dict = {"learner": learner.name, "eta": eta, "rows": len(y), "d": X.shape[1], "tol": tol}
    runs = {}
    for name, path in (("scan", "scan"), ("kernel", jcsol.Kernel())):
        start = time.perf_counter()
        runs[name] = jcsol.run(learner, X, y, perms="stream", path=path, record_scores=True, progress=False)
        out[f"{name}_seconds"] = time.perf_counter() - start
    start = time.perf_counter()
    order = np.arange(len(y))
    ref = reference_cog.acog(X, y, order, eta, 1.0, loss, False, reference_cog.sum_offline(0.5))
    out["float64_seconds"] = time.perf_counter() - start
    for name, res in runs.items():
        out[f"{name}_mu_error"] = relative(np.asarray(res.states.mu)[0], ref.w)
        out[f"{name}_sigma_error"] = relative(np.asarray(res.states.sigma)[0], ref.sigma)
        out[f"{name}_predictions_differing_from_float64"] = int(
            np.sum(np.where(res.scores[0] >= 0, 1.0, -1.0) != ref.predictions)
        )
    scan, kernel = runs["scan"], runs["kernel"]
    out["kernel_vs_scan_mu"] = relative(np.asarray(kernel.states.mu), np.asarray(scan.states.mu))
    out["kernel_vs_scan_sigma"] = relative(np.asarray(kernel.states.sigma), np.asarray(scan.states.sigma))
    s, k = scan.scores[0], kernel.scores[0]
    differ = (s >= 0) != (k >= 0)
    near = np.abs(s) < tol * np.abs(s).max()
    out["rounds_predicted_differently"] = int(differ.sum())
    out["of_which_near_zero"] = int((differ & near).sum())
    out["rounds_near_zero"] = int(near.sum())
    out["counts_scan"] = np.asarray(scan.counts).reshape(-1).tolist()
    out["counts_kernel"] = np.asarray(kernel.counts).reshape(-1).tolist()
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=HERE / "data", help="the folder holding a9a.gz and a9a.t.gz")
    parser.add_argument("--rows", type=int, help="the first rows only (default: all 48,842)")
    parser.add_argument("--learner", default="ACOG-II", choices=["ACOG-I", "ACOG-II"])
    parser.add_argument("--eta", type=float, default=1.0)
    parser.add_argument("--tol", type=float, default=1e-5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    import jcsol

    X1, y1 = jcsol.datasets.load(args.data / "a9a.gz", n_features=123)
    X2, y2 = jcsol.datasets.load(args.data / "a9a.t.gz", n_features=123)
    X, y = np.concatenate([X1, X2]), np.concatenate([y1, y2])
    if args.rows is not None:
        X, y = X[: args.rows], y[: args.rows]
    out = compare(X, y, loss=args.learner.split("-")[1], eta=args.eta, tol=args.tol)
    import jax

    out["platform"] = jax.default_backend()
    print(f"{out['learner']} (η = {args.eta}) over {out['rows']} rounds of a9a, d = {out['d']}, on {out['platform']}")
    for name in ("scan", "kernel"):
        print(
            f"  {name:6s} against float64: μ {out[f'{name}_mu_error']:.2e}, Σ {out[f'{name}_sigma_error']:.2e}; "
            f"{out[f'{name}_predictions_differing_from_float64']} predictions differ; {out[f'{name}_seconds']:.1f} s"
        )
    print(f"  kernel against scan: μ {out['kernel_vs_scan_mu']:.2e}, Σ {out['kernel_vs_scan_sigma']:.2e}")
    print(
        f"  rounds predicted differently: {out['rounds_predicted_differently']}, of which "
        f"{out['of_which_near_zero']} within {args.tol} of 0 ({out['rounds_near_zero']} rounds are)"
    )
    print(f"  counts (tp, fn, fp, tn): scan {out['counts_scan']}, kernel {out['counts_kernel']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
