"""Sketched second order (Zhao et al., *Adaptive Cost-Sensitive Online Classification*, TKDE 2019, §4.5):
SACOG and sparse SACOG (SSACOG) against COG, ACOG and ACOG-diag.

Four parts (``--parts``, all by default):

``table``      the paper's Table V on mushrooms and usps (digit 0 vs rest): m = 5, 20 permutations, η from
               ``jcsol.decades()`` chosen by ``res.best("sum")``; sum, sensitivity, specificity, the chosen η and
               the time per run, beside the paper's values. Checks that SSACOG-I/II's sum is within 2 points of
               the table and at least ACOG-diag's (same loss type), and prints every learner's gap to the table
               (usps_esl is not LIBSVM's usps: the gaps of COG and ACOG-diag, which have no sketch, measure what
               the other version of the data moves).
``synthetic``  the timing rows of protein (17,766 × 357, 1:1.7) and Sensorless (58,509 × 48, 1:10), which are not
               available offline, on ``jcsol.datasets.synthetic.linear_stream`` streams of those shapes:
               20 permutations at η = 1, time per run, beside the paper's MATLAB times. (Accuracy on these
               streams means nothing; only the times are compared.)
``scale``      time per example against d ∈ {10³, 10⁴, 10⁵, 10⁶} on synthetic sparse streams with 50 non-zeros
               per row (``jcsol.SparseRows``): full ACOG (only while it fits), ACOG-diag, SACOG and SSACOG
               (and COG as the O(nnz) floor); SSACOG's time per example must stay flat as d grows 1000×.
``memory``     a 20-permutation sweep of SSACOG on a 10⁶-dimensional, 10⁵-example sparse stream, in a child
               process, reporting its peak RSS (``VmHWM``) and time.

    python benchmarks/sketch.py [--parts table synthetic scale memory] [--data DIR] [--perms 20]

Times are of the compiled runs only (``Result.time_run``, compilation excluded), on one CPU device; "per run"
divides a call's execution time by its number of runs (11 η × 20 permutations = 220 in ``table``), so it is
the cost of a run inside the vmapped protocol. On a shared machine compare ratios, not absolute figures.
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
from rss import peak_rss_gib

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
M = 5  # sketch size, the ACOG paper's §4.5

# the ACOG paper's Table V ("sum" part: sum %, sensitivity %, specificity %, MATLAB time s) and Table VI (SACOG rows)
PAPER = {
    "mushrooms": {
        "COG-I": (99.205, 99.455, 98.956, 0.019),
        "COG-II": (99.211, 99.420, 99.003, 0.019),
        "ACOG-I": (99.580, 99.810, 99.350, 0.043),
        "ACOG-II": (99.572, 99.794, 99.349, 0.045),
        "ACOG-I-diag": (99.447, 99.652, 99.243, 0.019),
        "ACOG-II-diag": (99.457, 99.652, 99.262, 0.019),
        "SACOG-I": (99.620, None, None, 0.072),
        "SACOG-II": (99.598, None, None, 0.074),
        "SSACOG-I": (99.628, 99.798, 99.459, 0.038),
        "SSACOG-II": (99.606, 99.805, 99.408, 0.038),
    },
    "usps": {
        "COG-I": (96.820, 96.361, 97.279, 0.039),
        "COG-II": (96.576, 96.516, 96.637, 0.038),
        "ACOG-I": (98.073, 97.822, 98.323, 0.271),
        "ACOG-II": (97.633, 97.998, 97.268, 0.239),
        "ACOG-I-diag": (96.886, 95.641, 98.131, 0.039),
        "ACOG-II-diag": (96.305, 96.369, 96.240, 0.040),
        "SACOG-I": (97.146, None, None, 0.135),
        "SACOG-II": (97.071, None, None, 0.091),
        "SSACOG-I": (97.091, 96.817, 97.365, 0.077),
        "SSACOG-II": (97.048, 97.010, 97.085, 0.074),
    },
}
PAPER_TIME = {  # the ACOG paper's Table V, "sum", MATLAB seconds per run
    "protein": {
        "COG-I": 0.127,
        "COG-II": 0.129,
        "ACOG-I": 14.603,
        "ACOG-II": 14.446,
        "ACOG-I-diag": 0.161,
        "ACOG-II-diag": 0.158,
        "SSACOG-I": 0.355,
        "SSACOG-II": 0.352,
    },
    "Sensorless": {
        "COG-I": 0.166,
        "COG-II": 0.167,
        "ACOG-I": 0.503,
        "ACOG-II": 0.486,
        "ACOG-I-diag": 0.169,
        "ACOG-II-diag": 0.173,
        "SSACOG-I": 0.322,
        "SSACOG-II": 0.296,
    },
}
TABLE_LEARNERS = [
    "COG-I",
    "COG-II",
    "ACOG-I",
    "ACOG-II",
    "ACOG-I-diag",
    "ACOG-II-diag",
    "SACOG-I",
    "SACOG-II",
    "SSACOG-I",
    "SSACOG-II",
]
SYNTHETIC = {"protein": (17_766, 357, 1 / 2.7), "Sensorless": (58_509, 48, 1 / 11)}


def learner(name: str, **hp):
    import jcsol

    return jcsol.by_name(name, **({"m": M} if "SACOG" in name else {}), **hp)


# ----------------------------------------------------------------------------------------------------------
# Table V
# ----------------------------------------------------------------------------------------------------------


def table(data: Path, perms: int) -> list[dict]:
    import jcsol

    sets = {
        "mushrooms": jcsol.datasets.load(data / "mushrooms", sparse=True),
        "usps": jcsol.datasets.load(data / "usps_esl.gz", positive=0, sparse=True),
    }
    rows = []
    for dataset, (X, y) in sets.items():
        print(
            f"\n{dataset}: {X.shape[0]} × {X.shape[1]}, +1: {(y > 0).sum()} (1:{(y < 0).sum() / (y > 0).sum():.2f}), "
            f"11 η × {perms} permutations, m = {M}"
        )
        header = (
            f"{'learner':<13}{'sum %':>16}{'sens %':>9}{'spec %':>9}{'η':>8}{'s/run':>9}{'compile s':>10}"
            f"{'paper sum':>11}{'Δ sum':>8}{'paper s/run':>12}"
        )
        print(header + "\n" + "-" * len(header))
        for name in TABLE_LEARNERS:
            res = jcsol.run(learner(name, eta=jcsol.decades()), X, y, perms=perms)
            best = res.best("sum").result
            paper = PAPER[dataset][name]
            row = {
                "dataset": dataset,
                "learner": name,
                "eta": res.best("sum").params["eta"],
                "sum": 100 * best.sum.mean(),
                "sum_std": 100 * best.sum.std(ddof=1),
                "sensitivity": 100 * best.sensitivity.mean(),
                "specificity": 100 * best.specificity.mean(),
                "per_run_s": res.time_per_run,
                "compile_s": res.time_compile,
                "runs": res.n_runs,
                "paper_sum": paper[0],
                "paper_s": paper[3],
            }
            rows.append(row)
            print(
                f"{name:<13}{row['sum']:>9.3f} ± {row['sum_std']:.3f}{row['sensitivity']:>9.3f}"
                f"{row['specificity']:>9.3f}{row['eta']:>8g}{row['per_run_s']:>9.4f}{row['compile_s']:>10.1f}"
                f"{paper[0]:>11.3f}{row['sum'] - paper[0]:>+8.3f}{paper[3]:>12.3f}"
            )
    checks = []
    for dataset in sets:
        got = {r["learner"]: r for r in rows if r["dataset"] == dataset}
        for loss in ("I", "II"):
            s = got[f"SSACOG-{loss}"]
            diag = got[f"ACOG-{loss}-diag"]
            checks.append(
                (
                    f"{dataset} SSACOG-{loss} within 2 points of Table V ({s['paper_sum']:.3f})",
                    abs(s["sum"] - s["paper_sum"]) <= 2.0,
                )
            )
            checks.append(
                (f"{dataset} SSACOG-{loss} sum >= ACOG-{loss}-diag's ({diag['sum']:.3f})", s["sum"] >= diag["sum"])
            )
        gaps = [got[n]["sum"] - got[n]["paper_sum"] for n in ("COG-I", "COG-II", "ACOG-I-diag", "ACOG-II-diag")]
        print(
            f"{dataset}: gap to the paper of the sketch-free first-order/diagonal learners "
            f"(COG-I, COG-II, ACOG-I-diag, ACOG-II-diag): {', '.join(f'{g:+.3f}' for g in gaps)} points"
        )
    print()
    for what, ok in checks:
        print(f"[{'ok' if ok else 'FAIL'}] {what}")
    return rows


# ----------------------------------------------------------------------------------------------------------
# synthetic protein- and Sensorless-shaped streams: time per run
# ----------------------------------------------------------------------------------------------------------


def synthetic(perms: int) -> list[dict]:
    import jcsol
    from jcsol.datasets.synthetic import linear_stream

    rows = []
    for dataset, (n, d, frac) in SYNTHETIC.items():
        X, y = linear_stream(n, d, frac, seed=1)
        print(
            f"\n{dataset}-shaped synthetic stream: {n} × {d} (dense rows), 1:{(y < 0).sum() / (y > 0).sum():.2f}, "
            f"{perms} permutations at η = 1"
        )
        header = f"{'learner':<13}{'s/run':>9}{'compile s':>10}{'paper s/run':>12}{'ratio to COG':>13}"
        print(header + "\n" + "-" * len(header))
        base = None
        for name in [
            "COG-I",
            "COG-II",
            "ACOG-I",
            "ACOG-II",
            "ACOG-I-diag",
            "ACOG-II-diag",
            "SACOG-I",
            "SSACOG-I",
            "SSACOG-II",
        ]:
            res = jcsol.run(learner(name, eta=1.0), X, y, perms=perms)
            base = base or res.time_per_run
            paper = PAPER_TIME[dataset].get(name)
            rows.append(
                {
                    "dataset": dataset,
                    "learner": name,
                    "per_run_s": res.time_per_run,
                    "compile_s": res.time_compile,
                    "paper_s": paper,
                }
            )
            print(
                f"{name:<13}{res.time_per_run:>9.4f}{res.time_compile:>10.1f}"
                f"{paper if paper is not None else float('nan'):>12.3f}{res.time_per_run / base:>13.1f}"
            )
    return rows


# ----------------------------------------------------------------------------------------------------------
# scale: time per example against d
# ----------------------------------------------------------------------------------------------------------


def sparse_stream(n: int, d: int, nnz: int = 50, positive_fraction: float = 0.3, seed: int = 0):
    """``n`` rows with ``nnz`` distinct uniformly drawn coordinates each, Gaussian values, L2-normalised;
    labels from a noisy sparse-linear rule thresholded to ``positive_fraction``."""
    import jcsol

    rng = np.random.default_rng(seed)
    draw = np.sort(rng.integers(0, d, size=(n, nnz + 16)), axis=1)
    repeated = np.zeros(draw.shape, bool)
    repeated[:, 1:] = draw[:, 1:] == draw[:, :-1]
    draw = np.sort(np.where(repeated, d, draw), axis=1)[:, :nnz]  # drop repeats (d sorts last)
    if draw.max() >= d:
        raise RuntimeError("too many repeated coordinates; raise the number of draws")
    values = rng.standard_normal((n, nnz))
    values /= np.linalg.norm(values, axis=1, keepdims=True)
    w = rng.standard_normal(d)
    score = (values * w[draw]).sum(1) + 0.3 * rng.standard_normal(n)
    y = np.where(score >= np.quantile(score, 1 - positive_fraction), 1, -1).astype(np.int8)
    return jcsol.SparseRows(draw.astype(np.int32), values.astype(np.float32), d), y


def _per_example(name: str, X, y, perms: int, repeats: int = 3, **options) -> tuple[float, float, float, float]:
    """(µs per example per run, µs of initialisation per run, compile s, µs per example per run with the
    initialisation), best of ``repeats`` runs.

    ``Result.time_run`` includes the tail of the learners' initialisation (dispatched asynchronously just
    before the first chunk), which for SACOG/SSACOG is an O(m²d) QR per run (``V_0``) and for full ACOG the
    O(d²) identity: a one-off cost, measured on its own here and subtracted from the per-example time.
    """
    import jax

    import jcsol

    lrn = learner(name, eta=1.0, **options)
    first = jcsol.run(lrn, X, y, perms=perms)
    best = min([first.time_run] + [jcsol.run(lrn, X, y, perms=perms, key=k).time_run for k in range(1, repeats)])
    keys = jax.random.split(jax.random.key(0), perms)
    init = jax.jit(jax.vmap(lambda k: lrn.init(X.shape[1], k)))
    jax.block_until_ready(init(keys))
    init_s = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(init(keys))
        init_s = min(init_s, time.perf_counter() - start)
    init_s = min(init_s, best)
    n = X.shape[0]
    return 1e6 * (best - init_s) / (n * perms), 1e6 * init_s / perms, first.time_compile, 1e6 * best / (n * perms)


def scale(perms: int, rows_per_run: int) -> list[dict]:
    import jcsol

    dims = [1_000, 10_000, 100_000, 1_000_000]
    # rows per (learner, d): enough rounds to time, fewer where a round costs O(d²) or O(m²d)
    budget = {
        "COG-I": lambda d: rows_per_run,
        "ACOG-I-diag": lambda d: rows_per_run,
        "SSACOG-I": lambda d: rows_per_run,
        "SACOG-I": lambda d: max(200, min(4000, 10**8 // (d * 25))),
        "ACOG-I": lambda d: 1000 if d <= 1_000 else 100,
    }
    fits = {"ACOG-I": lambda d: d <= 10_000}  # full Σ: 4·d² bytes per run (d = 10⁵: 40 GB)
    rows = []
    print(
        f"\nsparse streams, 50 non-zeros per row, {perms} permutations; µs per example per run (best of 3), "
        "excluding the one-off initialisation; [ms of initialisation per run]"
    )
    header = f"{'d':>9}" + "".join(f"{name:>14}" for name in budget)
    print(header + "\n" + "-" * len(header))
    for d in dims:
        X, y = sparse_stream(rows_per_run, d)
        cells = []
        for name, n_rows in budget.items():
            if not fits.get(name, lambda d: True)(d):
                cells.append(f"{'—':>14}")
                continue
            n = n_rows(d)
            us, init_us, compile_s, gross = _per_example(
                name, jcsol.SparseRows(X.indices[:n], X.values[:n], d), y[:n], perms
            )
            rows.append(
                {
                    "d": d,
                    "learner": name,
                    "rows": n,
                    "us_per_example": us,
                    "init_ms_per_run": init_us / 1e3,
                    "us_per_example_with_init": gross,
                    "compile_s": compile_s,
                }
            )
            cells.append(f"{us:>7.2f} [{init_us / 1e3:>4.0f}]")
        print(f"{d:>9}" + "".join(cells), flush=True)
    flat = {r["d"]: r["us_per_example"] for r in rows if r["learner"] == "SSACOG-I"}
    gross = {r["d"]: r["us_per_example_with_init"] for r in rows if r["learner"] == "SSACOG-I"}
    ratio = flat[dims[-1]] / flat[dims[0]]
    print(
        "SSACOG-I µs per example per run including the initialisation ("
        + ", ".join(f"d = {d}: {gross[d]:.2f}" for d in dims)
        + f"; {rows_per_run} examples per run)"
    )
    # control: the same d = 10⁶ arrays, but rows drawn from the first 1000 coordinates only (cache-resident)
    X, y = sparse_stream(rows_per_run, 1_000)
    local, _, _, _ = _per_example("SSACOG-I", jcsol.SparseRows(X.indices, X.values, dims[-1]), y, perms)
    rows.append(
        {"d": dims[-1], "learner": "SSACOG-I (rows in 1000 coordinates)", "rows": rows_per_run, "us_per_example": local}
    )
    print(f"SSACOG-I at d = 10⁶ with every row inside the first 1000 coordinates: {local:.2f} µs")
    print(
        f"SSACOG-I time per example at d = 10⁶ over d = 10³: ×{ratio:.2f} "
        f"[{'ok' if ratio < 2.0 else 'FAIL'}: flat means below ×2 for a 1000× larger d]"
    )
    # the "sketch every m rounds" option of SACOG: under the engine's vmap its lax.cond runs both branches
    d = 100_000
    X, y = sparse_stream(400, d)
    for k in (1, M):
        us, _, _, _ = _per_example("SACOG-I", X, y, perms, sketch_every=k)
        single = _single_run_step_time(learner("SACOG-I", eta=1.0, sketch_every=k), X, y)
        rows.append({"d": d, "learner": f"SACOG-I sketch_every={k}", "us_per_example": us, "single_run_us": single})
        print(
            f"SACOG-I, d = 10⁵, sketch_every = {k}: {us:.1f} µs per example per run under jcsol.run (vmapped), "
            f"{single:.1f} µs per example for one jitted run (lax.scan of the step, no vmap)"
        )
    return rows


def _single_run_step_time(lrn, X, y) -> float:
    """µs per example of a single run: a jitted lax.scan of ``lrn.step`` over dense rows, without vmap."""
    import jax
    import jax.numpy as jnp

    from jcsol.base import Example

    dense = jnp.asarray(X.todense())
    labels = jnp.asarray(y, jnp.float32)

    def body(state, i):
        state, info = lrn.step(state, Example(dense[i], labels[i], jnp.float32(1.0), jnp.float32(1.0)))
        return state, info.score

    fn = jax.jit(lambda s: jax.lax.scan(body, s, jnp.arange(len(y)))[1])
    state = lrn.init(X.shape[1], jax.random.key(0))
    jax.block_until_ready(fn(state))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        jax.block_until_ready(fn(state))
        best = min(best, time.perf_counter() - start)
    return 1e6 * best / len(y)


# ----------------------------------------------------------------------------------------------------------
# memory: a 20-permutation sweep at d = 10⁶, 10⁵ examples
# ----------------------------------------------------------------------------------------------------------


def memory_child(perms: int, n: int, d: int) -> dict:
    import jcsol

    start = time.perf_counter()
    X, y = sparse_stream(n, d, seed=1)
    data_rss = peak_rss_gib()
    res = jcsol.run(learner("SSACOG-I", eta=1.0), X, y, perms=perms)
    peak = peak_rss_gib()
    state_bytes = sum(np.asarray(a).nbytes for a in __import__("jax").tree.leaves(res.states))
    return {
        "perms": perms,
        "rows": n,
        "d": d,
        "peak_rss_gib": peak,
        "rss_after_data_gib": data_rss,
        "states_gib": state_bytes / 2**30,
        "run_s": res.time_run,
        "compile_s": res.time_compile,
        "us_per_example_per_run": 1e6 * res.time_per_run / n,
        "sum": float(res.sum.mean()),
        "wall_s": time.perf_counter() - start,
    }


def memory(perms: int, n: int, d: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--memory-child", str(perms), str(n), str(d)], capture_output=True, text=True
    )
    if out.returncode != 0:
        print(out.stderr[-3000:])
        raise SystemExit("the memory run failed")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(
        f"\nSSACOG-I, {r['perms']} permutations of a {r['rows']}-example stream with d = {r['d']} (50 non-zeros "
        f"per row): peak RSS {r['peak_rss_gib']:.2f} GiB (after building the data: {r['rss_after_data_gib']:.2f} "
        f"GiB; final states of the {r['perms']} runs: {r['states_gib']:.2f} GiB); run {r['run_s']:.1f} s "
        f"({r['us_per_example_per_run']:.2f} µs per example per run), compile {r['compile_s']:.1f} s; "
        f"mean sum {100 * r['sum']:.2f} %"
    )
    return r


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--parts",
        nargs="*",
        default=["table", "synthetic", "scale", "memory"],
        choices=["table", "synthetic", "scale", "memory"],
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--perms", type=int, default=20)
    parser.add_argument("--scale-perms", type=int, default=4)
    parser.add_argument("--scale-rows", type=int, default=20_000)
    parser.add_argument("--memory-rows", type=int, default=100_000)
    parser.add_argument("--memory-dim", type=int, default=1_000_000)
    parser.add_argument("--json", type=Path, help="also write every row measured to this file")
    parser.add_argument("--memory-child", nargs=3, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        print(json.dumps(memory_child(*args.memory_child)))
        return
    import jax

    print(
        f"jax {jax.__version__}, devices {jax.devices()}, CPU cores {os.cpu_count()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    out = {}
    if "table" in args.parts:
        out["table"] = table(args.data, args.perms)
    if "synthetic" in args.parts:
        out["synthetic"] = synthetic(args.perms)
    if "scale" in args.parts:
        out["scale"] = scale(args.scale_perms, args.scale_rows)
    if "memory" in args.parts:
        out["memory"] = memory(args.perms, args.memory_rows, args.memory_dim)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
