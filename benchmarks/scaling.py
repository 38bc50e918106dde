"""A round's cost against the stream's length and the number of runs: µs a round should not grow with either.

    python benchmarks/scaling.py                                  # ~13 min on 2 cores
    python benchmarks/scaling.py --rows 50000 400000 --kinds dense --devices 1
    python benchmarks/scaling.py --compare-rev e010097            # the same, beside an earlier revision

The workload is the one of the papers' protocol at the shape of a9a: COG-II over 11 η × 4 permutations of
synthetic rows of 123 features (dense: Gaussian, L2-normalised; sparse: 14 of the 123 features set, as a9a's
rows, as :class:`jcsol.SparseRows`), a tenth positive, default chunks of 16,384 rounds. For each device layout
(one JAX CPU device, and one per core: a child process each, as the count is fixed when JAX starts) it prints:

- µs a round (``time_run`` over its rounds, the best of ``--repeats`` compiled calls, the calls of the sizes
  compared alternated) for every ``--rows``, with its ratio to the smallest size;
- a run of ``--one-chunk-rows`` rows in default chunks against the same run as one chunk (``chunk_size=n``);
- µs a round against the number of runs (``--runs``, permutations × grid points, at ``--runs-rows`` rows), with
  µs per run-round;
- the same rows read chunk by chunk from a :class:`jcsol.datasets.RowStore` on disk (``--store-rows``);
- the machine's own cost of reading a row in a random order (a NumPy gather, no learner) at each ``--rows``: a
  round reads its runs' rows so, and where that cost grows with the stream, a round's does too.

Targets: µs a round at 3.2 million rows within 1.2 × the figure at 50,000 rows, in both layouts, dense and
sparse; default chunks within 1.1 × one chunk at 800,000 rows. ``--compare-rev REV`` runs every measurement a
second time with the package of an earlier revision (``git archive``), the two trees' child processes
alternating, and prints this tree's time over REV's.
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

ROOT = Path(__file__).resolve().parents[1]
D, NNZ = 123, 14


def package_at(revision: str, directory: Path) -> Path:
    """``revision``'s ``jcsol`` package written into ``directory`` (``git archive``): a tree to put on a child's
    ``PYTHONPATH`` beside this one."""
    archive = subprocess.run(["git", "archive", revision, "jcsol"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(directory)], input=archive, check=True)
    return directory


def stream(kind: str, n: int, seed: int = 0):
    """``(X, y)``: ``n`` rows of ``D`` features, dense or sparse, a tenth positive."""
    import jcsol

    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.1, 1, -1).astype(np.int8)
    if kind == "dense":
        X = rng.standard_normal((n, D), dtype=np.float32)
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        return X, y
    indices = np.empty((n, NNZ), np.int32)
    for start in range(0, n, 100_000):  # NNZ distinct features a row, in blocks to bound the memory
        block = rng.random((min(100_000, n - start), D), dtype=np.float32)
        indices[start : start + len(block)] = np.sort(np.argpartition(block, NNZ, axis=1)[:, :NNZ], axis=1)
    values = np.full((n, NNZ), 1 / np.sqrt(NNZ), np.float32)
    return jcsol.SparseRows(indices, values, D), y


def best(cases: dict, repeats: int) -> dict:
    """Each case's compiled µs a round (``time_run`` over its rounds, the best of ``repeats`` calls after the one
    that compiles) and the wall seconds of that call. ``cases`` maps a label to ``(X, y, perms, grid,
    chunk_size)``; the cases' calls are alternated, so that a change of the machine's load falls on all alike."""
    import jcsol

    def call(X, y, perms, grid, chunk_size):
        learner = jcsol.COG(eta=np.logspace(-5, 5, grid), loss="II")
        return jcsol.run(learner, X, y, perms=perms, chunk_size=chunk_size)

    for case in cases.values():
        call(*case)  # compiles
    got: dict = {}
    for _ in range(repeats):
        for label, case in cases.items():
            start = time.perf_counter()
            res = call(*case)
            wall = time.perf_counter() - start
            figures = {"us_per_round": res.time_run / len(case[1]) * 1e6, "wall_s": wall, "runs": case[2] * case[3]}
            if label not in got or figures["us_per_round"] < got[label]["us_per_round"]:
                got[label] = figures
    return got


def random_reads(sizes, reads: int = 400_000, repeats: int = 5) -> dict:
    """The machine's own cost of reading rows of ``D`` float32 features in a random order, with no learner: ns a
    row of a NumPy gather (``X[i]``) of ``reads`` rows drawn from the first ``n`` of an array, for each ``n`` of
    ``sizes`` (the best of ``repeats``). Where it grows with ``n``, so does a round, which reads rows so."""
    rng = np.random.default_rng(0)
    X = rng.random((max(sizes), D), dtype=np.float32)
    got = {}
    for n in sizes:
        i = rng.integers(0, n, reads)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            X[i].sum()
            times.append(time.perf_counter() - start)
        got[n] = min(times) / reads * 1e9
    return got


def store_of(kind_rows, y, directory: Path):
    """A :class:`jcsol.datasets.RowStore` of sparse rows, built from a LIBSVM file in ``directory``."""
    from sklearn.datasets import dump_svmlight_file

    from jcsol.datasets import RowStore

    text = directory / "rows.svm"
    dump_svmlight_file(kind_rows.to_scipy(), y, str(text), zero_based=False)
    return RowStore.build(text, directory / "store", normalize=False)


def child(args) -> None:
    """One device layout's measurements, a JSON line each on stdout."""
    import jax

    def emit(**record):
        record.update(devices=len(jax.devices()))
        print(json.dumps(record), flush=True)

    largest = max([*args.rows, args.one_chunk_rows, args.runs_rows])
    r = args.repeats
    for kind in args.kinds:
        X, y = stream(kind, largest)
        by_rows = best({n: (X[:n], y[:n], 4, 11, None) for n in args.rows}, r)
        for n, figures in by_rows.items():
            emit(what="rows", kind=kind, rows=n, **figures)
        n = args.one_chunk_rows
        if n:
            both = best({"default": (X[:n], y[:n], 4, 11, None), "one": (X[:n], y[:n], 4, 11, n)}, r)
            for chunked, figures in both.items():
                emit(what="chunks", kind=kind, rows=n, chunked=chunked, **figures)
        n = args.runs_rows
        shapes = {shape: tuple(map(int, shape.split("x"))) for shape in args.runs}
        by_runs = best({shape: (X[:n], y[:n], perms, grid, None) for shape, (perms, grid) in shapes.items()}, r)
        for shape, figures in by_runs.items():
            emit(what="runs", kind=kind, rows=n, shape=shape, **figures)
        del X
    if args.store_rows:
        X, y = stream("sparse", max(args.store_rows))
        with tempfile.TemporaryDirectory() as tmp:
            stores = {}
            for n in args.store_rows:
                directory = Path(tmp) / str(n)
                directory.mkdir()
                stores[n] = (store_of(X[:n], y[:n], directory), y[:n].astype(np.int64), 4, 11, None)
            for n, figures in best(stores, r).items():
                emit(what="store", kind="store", rows=n, **figures)


def run_child(args, devices: int, tree: Path | None) -> list[dict]:
    """The measurements of one device layout, in a child process of this tree or of ``tree`` (another revision's
    package)."""
    flags = ["--kinds", *args.kinds, "--rows", *map(str, args.rows), "--runs", *args.runs]
    flags += ["--one-chunk-rows", str(args.one_chunk_rows), "--runs-rows", str(args.runs_rows)]
    flags += ["--repeats", str(args.repeats)]
    flags += ["--store-rows", *map(str, args.store_rows)]  # none given: none in the child either
    env = dict(os.environ, PYTHONPATH=str(tree or ROOT), JCSOL_CPU_DEVICES=str(devices))
    out = subprocess.run(
        [sys.executable, __file__, "--child-devices", str(devices), *flags],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def report(records: list[dict], label: str) -> None:
    by = {}
    for r in records:
        by.setdefault((r["devices"], r["what"], r["kind"]), []).append(r)
    for (devices, what, kind), rows in sorted(by.items()):
        print(f"\n{label}: {devices} device(s), {kind} rows, {what}")
        if what in ("rows", "store"):
            base = rows[0]["us_per_round"]
            for r in rows:
                print(f"  {r['rows']:>9,} rows  {r['us_per_round']:7.2f} µs a round  {r['us_per_round'] / base:5.2f}×")
        elif what == "chunks":
            one = {r["chunked"]: r["us_per_round"] for r in rows}
            print(
                f"  {rows[0]['rows']:,} rows: default chunks {one['default']:.2f} µs a round, one chunk "
                f"{one['one']:.2f}: {one['default'] / one['one']:.2f}×"
            )
        else:
            base = rows[0]["us_per_round"] / rows[0]["runs"]
            for r in rows:
                per_run = r["us_per_round"] / r["runs"]
                print(
                    f"  {r['shape']:>7} ({r['runs']:>5} runs)  {r['us_per_round']:8.2f} µs a round  "
                    f"{per_run * 1e3:8.1f} ns a run-round  {per_run / base:5.2f}×"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[50_000, 200_000, 800_000, 3_200_000])
    parser.add_argument("--kinds", nargs="+", default=["dense", "sparse"], choices=["dense", "sparse"])
    parser.add_argument("--devices", nargs="+", default=["1", "all"], help="JAX CPU devices: counts, or 'all'")
    parser.add_argument("--one-chunk-rows", type=int, default=800_000, help="0: skip the chunks' comparison")
    parser.add_argument("--runs", nargs="*", default=["1x1", "4x11", "20x11", "20x121"], help="permutations x grid")
    parser.add_argument("--runs-rows", type=int, default=200_000)
    parser.add_argument("--store-rows", type=int, nargs="*", default=[50_000, 200_000, 800_000])
    parser.add_argument("--repeats", type=int, default=3, help="compiled calls timed each, the best kept")
    parser.add_argument("--compare-rev", help="a git revision whose package is timed beside this tree's")
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("--child-devices", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_devices:
        return child(args)
    counts = [os.cpu_count() or 1 if d == "all" else int(d) for d in args.devices]
    trees: dict[str, Path | None] = {"this tree": None}
    with tempfile.TemporaryDirectory() as tmp:
        if args.compare_rev:
            trees[args.compare_rev] = package_at(args.compare_rev, Path(tmp))
        records: dict[str, list[dict]] = {label: [] for label in trees}
        for devices in counts:
            for label, tree in trees.items():  # alternated, so that both see the same load
                records[label] += run_child(args, devices, tree)
    for label, got in records.items():
        report(got, label)
    reads = random_reads(args.rows)
    print("\nthe machine's random reads of a dense row (a NumPy gather, no learner):")
    for n, ns in reads.items():
        print(f"  {n:>9,} rows  {ns:7.0f} ns a row  {ns / reads[args.rows[0]]:5.2f}×")
    if args.compare_rev:
        print(f"\nthis tree's µs a round over {args.compare_rev}'s:")
        for now, then in zip(records["this tree"], records[args.compare_rev]):
            tag = " ".join(str(now[k]) for k in ("what", "kind", "rows", "shape", "chunked") if k in now)
            print(f"  {now['devices']} device(s) {tag}: {now['us_per_round'] / then['us_per_round']:.2f}×")
    if args.json:
        args.json.write_text(json.dumps({**records, "random reads, ns a row": reads}, indent=1))


if __name__ == "__main__":
    main()
