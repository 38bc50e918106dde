"""The sweep engine on the accelerator and on the host CPU, same workloads, one invocation.

Each backend runs in its own child process (JAX fixes its platform at start-up, and an accelerator process must
not hold the device while the CPU one runs): first the default backend (the GPU or TPU, when there is one), then
the host CPU (``JAX_PLATFORMS=cpu``, one device per core). Workloads (full size; ``--quick`` shrinks rounds and
runs so that both columns take minutes on a 2-core CPU):

* a9a train + test (48,842 × 123), the papers' protocol, 11 values × 20 permutations (220 runs): COG-I,
  ACOG-I-diag, full ACOG-I (η), AROW (r), SCW-I (C); and ACOG-I-diag over 11 η × 11 γ × 20 permutations (2,420);
* full ACOG-I on a protein-shaped stream (17,766 × 357, ``linear_stream``), 11 η × 20 permutations;
* KOIL_RS++ (budgets 100 per class, k = 10) on the training folds of 5-fold CV × 4 (20 runs) of letter, and the
  21 × 21 (σ, C) grid (8,820 runs) on letter and on shuttle;
* sparse SACOG (m = 5) on a 10⁶-dimensional, 10⁵-row sparse stream (50 non-zeros per row), 20 permutations.

For each: wall time of ``jcsol.run`` and its compile time apart, example-updates per second over all runs, µs
per round of the whole sweep, and the memory traffic achieved — the bytes of learner state a round reads and
writes (model below) × rounds ÷ run time — as a share of the device's peak bandwidth (looked up from the device
kind; on the CPU, measured with a large copy). State traffic model: dense learners read and write their whole
state every round; KOIL reads its support vectors, the ``k + 2`` Gram rows it uses and writes one Gram row and
column; sparse SACOG reads and writes ``m + 1`` numbers per non-zero. Targets (on an H100) are checked on the
accelerator column and printed with the ratio to the CPU.

    python benchmarks/accelerator.py --quick                     # both columns, small sizes
    python benchmarks/accelerator.py --skip-cpu                  # the full accelerator column only
    python benchmarks/accelerator.py --cpu-only --only a9a       # CPU column, workloads whose name has "a9a"
    python benchmarks/accelerator.py --json out.json --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"

#: Peak memory bandwidth (TB/s) by device kind; the first key found in ``device_kind`` wins (order matters).
PEAK_TBS = [
    ("H100 PCIe", 2.0),
    ("H100 NVL", 3.9),
    ("H100", 3.35),
    ("H200", 4.8),
    ("A100 80GB", 2.0),
    ("A100-SXM4-80GB", 2.0),
    ("A100", 1.55),
    ("L40", 0.864),
    ("L4", 0.3),
    ("T4", 0.32),
]

#: Targets on the accelerator: (workload, quantity, bound, comparison).
TARGETS = {
    "a9a ACOG-I-diag 11η×20": ("updates_per_s", 1e9, ">="),
    "protein ACOG-I 11η×20": ("peak_share", 0.5, ">="),
    "letter KOIL 21×21×20": ("wall_s", 60.0, "<="),
    "shuttle KOIL 21×21×20": ("wall_s", 180.0, "<="),
}


# ----------------------------------------------------------------------------------------------------------
# workloads: (name, data set, learner factory, runs' permutation count, rounds, state traffic model)
# ----------------------------------------------------------------------------------------------------------


def workloads(quick: bool) -> list[dict]:
    """Every workload at full size, or shrunk by ``quick`` (grid axes of 3, 4 permutations, ≤ 1,000 rounds)."""
    import jcsol

    side = (lambda n: 3) if quick else (lambda n: n)
    decades = lambda: jcsol.decades()[::5] if quick else jcsol.decades()  # 1e-5, 1, 1e5 when quick
    perms = 4 if quick else 20
    rounds = 1000 if quick else None
    out = []
    for name, axis in (("COG-I", "eta"), ("ACOG-I-diag", "eta"), ("ACOG-I", "eta"), ("AROW", "r"), ("SCW-I", "C")):
        out.append(
            dict(
                name=f"a9a {name} 11η×20" if axis == "eta" else f"a9a {name} 11{axis}×20",
                data="a9a",
                make=lambda n=name, a=axis: jcsol.by_name(n, **{a: decades()}),
                perms=perms,
                rounds=rounds,
                traffic="dense",
            )
        )
    out.append(
        dict(
            name="a9a ACOG-I-diag 11η×11γ×20",
            data="a9a",
            perms=perms,
            rounds=rounds,
            traffic="dense",
            make=lambda: jcsol.grid(jcsol.by_name("ACOG-I-diag"), eta=decades(), gamma=decades()),
        )
    )
    out.append(
        dict(
            name="protein ACOG-I 11η×20",
            data="protein",
            perms=perms,
            rounds=rounds,
            traffic="dense",
            make=lambda: jcsol.by_name("ACOG-I", eta=decades()),
        )
    )
    koil = lambda: jcsol.KOIL(eta=0.01, C=16.0, sigma=0.25, budget_pos=100, budget_neg=100, k=10)
    koil_grid = lambda: jcsol.grid(
        koil(), sigma=2.0 ** np.linspace(-10, 10, side(21)), C=2.0 ** np.linspace(-10, 10, side(21))
    )
    out.append(dict(name="letter KOIL 20 folds", data="letter", make=koil, perms=perms, rounds=rounds, traffic="koil"))
    for data in ("letter", "shuttle"):
        out.append(
            dict(name=f"{data} KOIL 21×21×20", data=data, make=koil_grid, perms=perms, rounds=rounds, traffic="koil")
        )
    out.append(
        dict(
            name="sparse SSACOG-I d=1e6 20 perms",
            data="sparse",
            perms=perms,
            rounds=rounds,
            traffic="sparse",
            make=lambda: jcsol.by_name("SSACOG-I", m=5, eta=1.0),
        )
    )
    return out


def load(data: str, data_dir: Path, quick: bool):
    """``(X, y, training orders or None)`` of a workload's data set."""
    import jcsol
    from jcsol.datasets import load_koil, minmax_scale
    from jcsol.protocols import cv_splits

    if data == "a9a":
        X1, y1 = jcsol.datasets.load(data_dir / "a9a.gz", n_features=123)
        X2, y2 = jcsol.datasets.load(data_dir / "a9a.t.gz", n_features=123)
        return np.concatenate([X1, X2]), np.concatenate([y1, y2]), None
    if data == "protein":
        from jcsol.datasets.synthetic import linear_stream

        X, y = linear_stream(17_766, 357, 1 / 2.7, seed=1)
        return X, y, None
    if data in ("letter", "shuttle"):
        if data == "letter":
            X, y = load_koil("letter", data_dir / "koil")
        else:
            X, y = jcsol.datasets.load(data_dir / "shuttle.gz", positive=3, normalize=False)
            X = minmax_scale(np.asarray(X)).astype(np.float32)
        return X, y, cv_splits(y, folds=5, repeats=4, seed=0).train
    if data == "sparse":
        from sketch import sparse_stream

        X, y = sparse_stream(10_000 if quick else 100_000, 100_000 if quick else 1_000_000, nnz=50, seed=0)
        return X, y, None
    raise ValueError(f"unknown data set {data!r}")


def state_bytes_per_round(kind: str, res, learner, X) -> float:
    """Bytes of learner state one round of the whole sweep reads and writes (the model of the module doc)."""
    import jax

    itemsize = 4
    if kind == "dense":
        return 2.0 * sum(np.asarray(leaf).nbytes for leaf in jax.tree.leaves(res.states))
    if kind == "koil":
        n, d, k = learner.budget_pos + learner.budget_neg, X.shape[1], learner.k
        per_run = n * d + (k + 2) * n + 2 * n + 8 * n  # support vectors, Gram rows read, row + column written
        return float(per_run * itemsize * res.n_runs)
    if kind == "sparse":
        return float(2 * (learner.m + 1) * X.indices.shape[1] * itemsize * res.n_runs)
    raise ValueError(f"unknown traffic model {kind!r}")


def cpu_peak_tbs(megabytes: int = 512) -> float:
    """The host's copy bandwidth (read + write), best of 3 copies of a ``megabytes`` array, in TB/s."""
    src = np.ones(megabytes * 2**20 // 8)
    dst = np.empty_like(src)
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - start)
    return 2 * src.nbytes / best / 1e12


def peak_tbs(device) -> float | None:
    if device.platform == "cpu":
        return cpu_peak_tbs()
    kind = getattr(device, "device_kind", "")
    return next((tbs for key, tbs in PEAK_TBS if key in kind), None)


# ----------------------------------------------------------------------------------------------------------
# a child process: one backend, every workload
# ----------------------------------------------------------------------------------------------------------


def worker(args) -> None:
    import jax

    import jcsol

    device = jax.devices()[0]
    out = {
        "platform": device.platform,
        "device": getattr(device, "device_kind", device.platform),
        "n_devices": len(jax.devices()),
        "rows": [],
    }
    if args.worker == "accelerator" and device.platform == "cpu":
        out["skipped"] = "no accelerator: the default JAX backend is the CPU"
        Path(args.worker_json).write_text(json.dumps(out))
        return
    out["peak_tbs"] = peak_tbs(device)
    print(
        f"[{args.worker}] {out['n_devices']} × {out['device']}, peak bandwidth {fmt(out['peak_tbs'], '.3g')} TB/s",
        flush=True,
    )
    cache = {}
    for w in selected(args):
        if w["data"] not in cache:
            cache[w["data"]] = load(w["data"], args.data_dir, args.quick)
        X, y, folds = cache[w["data"]]
        learner = w["make"]()
        n = len(y)
        if folds is not None:
            orders = folds[: w["perms"]]
        else:
            rng = np.random.default_rng(0)
            orders = np.stack([rng.permutation(n) for _ in range(w["perms"])])
        if w["rounds"]:
            orders = orders[:, : w["rounds"]]
        objective = jcsol.Sum(rho="laplace")  # a prefix of a stream may hold one class only
        start = time.perf_counter()
        res = jcsol.run(learner, X, y, perms=orders, key=0, objective=objective)
        wall = time.perf_counter() - start
        rounds = orders.shape[1]
        traffic = state_bytes_per_round(w["traffic"], res, learner, X) * rounds / res.time_run
        row = {
            "workload": w["name"],
            "runs": res.n_runs,
            "rounds": rounds,
            "wall_s": wall,
            "compile_s": res.time_compile,
            "run_s": res.time_run,
            "updates_per_s": res.n_runs * rounds / res.time_run,
            "us_per_round": res.time_run / rounds * 1e6,
            "traffic_tbs": traffic / 1e12,
            "peak_share": None if out["peak_tbs"] is None else traffic / 1e12 / out["peak_tbs"],
        }
        out["rows"].append(row)
        print(
            f"[{args.worker}] {row['workload']}: {row['runs']} runs × {rounds} rounds, wall {wall:.2f} s "
            f"(compile {row['compile_s']:.2f} s), {row['updates_per_s']:.3g} updates/s",
            flush=True,
        )
    Path(args.worker_json).write_text(json.dumps(out))


def selected(args) -> list[dict]:
    return [w for w in workloads(args.quick) if not args.only or any(s in w["name"] for s in args.only)]


# ----------------------------------------------------------------------------------------------------------
# the parent: both backends, the table, the JSON
# ----------------------------------------------------------------------------------------------------------


def run_backend(which: str, args) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.json"
        env = dict(os.environ)
        if which == "cpu":
            env["JAX_PLATFORMS"] = "cpu"
        command = (
            [sys.executable, __file__, "--worker", which, "--worker-json", str(path), "--data-dir", str(args.data_dir)]
            + (["--quick"] if args.quick else [])
            + (["--only", *args.only] if args.only else [])
        )
        subprocess.run(command, env=env, check=True)
        return json.loads(path.read_text())


def fmt(value, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def table(columns: dict[str, dict], quick: bool) -> list[str]:
    lines = []
    for which, col in columns.items():
        if "skipped" in col:
            lines.append(f"{which}: {col['skipped']}")
            continue
        note = " (measured copy; a state that fits in cache can exceed it)" if col["platform"] == "cpu" else ""
        lines.append(
            f"{which}: {col['n_devices']} × {col['device']}; peak bandwidth {fmt(col['peak_tbs'], '.3g')} TB/s{note}"
        )
    live = {k: {r["workload"]: r for r in c["rows"]} for k, c in columns.items() if "skipped" not in c}
    head = f"{'workload':<32}{'runs':>6}{'rounds':>7}"
    for which in live:
        head += f" | {which[:5]:>5} {'wall s':>8}{'compile':>8}{'upd/s':>9}{'µs/rnd':>9}{'%peak':>7}"
    if len(live) == 2:
        head += f" | {'run cpu/acc':>11}"
    lines += [head, "-" * len(head)]
    names = [w for c in live.values() for w in c]
    for name in dict.fromkeys(names):
        rows = [c.get(name) for c in live.values()]
        first = next(r for r in rows if r)
        line = f"{name:<32}{first['runs']:>6}{first['rounds']:>7}"
        for r in rows:
            if r is None:
                line += f" | {'':>5} {'-':>8}{'':>8}{'':>9}{'':>9}{'':>7}"
                continue
            share = None if r["peak_share"] is None else 100 * r["peak_share"]
            line += (
                f" | {'':>5} {r['wall_s']:>8.2f}{r['compile_s']:>8.2f}{r['updates_per_s']:>9.3g}"
                f"{r['us_per_round']:>9.1f}{fmt(share, '>7.1f')}"
            )
        if len(live) == 2 and all(rows):
            line += f" | {rows[1]['run_s'] / rows[0]['run_s']:>11.2f}"
        lines.append(line)
    accel = live.get("accelerator")
    if accel:
        lines.append(
            "targets on the accelerator (H100)" + (": --quick sizes, not the targets' workloads" if quick else ":")
        )
        for name, (key, bound, op) in TARGETS.items():
            r = accel.get(name)
            if r is None or r.get(key) is None:
                continue
            met = r[key] >= bound if op == ">=" else r[key] <= bound
            lines.append(f"  {name}: {key} {r[key]:.3g} {op} {bound:g}: {'met' if met else 'MISSED'}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--quick", action="store_true", help="small sizes: minutes on a 2-core CPU")
    backends = parser.add_mutually_exclusive_group()
    backends.add_argument("--cpu-only", action="store_true", help="the host CPU column only")
    backends.add_argument("--skip-cpu", action="store_true", help="the accelerator column only")
    parser.add_argument("--only", nargs="*", default=[], help="workloads whose name contains one of these")
    parser.add_argument("--json", type=Path, default=Path("accelerator.json"), help="where the figures go")
    parser.add_argument("--worker", choices=["accelerator", "cpu"], help=argparse.SUPPRESS)
    parser.add_argument("--worker-json", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    order = ([] if args.cpu_only else ["accelerator"]) + ([] if args.skip_cpu else ["cpu"])
    columns = {which: run_backend(which, args) for which in order}
    lines = table(columns, args.quick)
    print("\n".join(lines))
    record = {"quick": args.quick, "columns": columns, "table": lines}
    tmp = args.json.with_name(args.json.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, args.json)  # atomically
    print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
