"""One process × 2 devices against 2 processes × 1 device, on the CPU of this machine.

Two sweeps, each run both ways (the 2 processes join a coordinator on 127.0.0.1, as in ``docs/distributed.md``):

- the papers' protocol on a9a (train + test, 48,842 × 123; ``--rows`` keeps the first rows): COG-I (or
  ``--learner``) with 11 learning rates × ``--perms`` permutations (20: 220 runs);
- a KOIL grid on the KOIL authors' ``german`` (``--koil-rows`` rows): 3 σ × 3 C × ``--perms`` permutations;
- ``koil-1``: the same grid over one permutation, cut in ``grid_blocks=2`` (two units, one per device), and
  beside it the grid whole on one device (``grid_blocks=1``, the only layout one permutation had without
  cutting the grid), whose ratio is the gain from the second device.

For each layout it prints the time of the run (compile and execution, from :attr:`jcsol.Result.time_compile`
and ``time_run``, the slowest process), the wall time of the processes (start-up, joining, reading the data
and exit included), and the ratio of 2 processes to 1; and checks that both layouts gave the same counts.
Both layouts use the same 2 cores: the ratio is the price of splitting over processes (joining, gathering the
result, a meeting after every chunk), not a speed-up, which comes from adding hosts.

    python benchmarks/distributed.py [--data-dir DIR] [--rows N] [--perms P]

``--data-dir`` defaults to ``$JCSOL_DATA``, else the ``shared/data`` folder beside this checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_DATA = Path(os.environ.get("JCSOL_DATA") or Path(__file__).resolve().parents[1] / ".." / "shared" / "data")
TIMEOUT = 3600


def child(args) -> None:
    """One process of a layout: joins when there are several, runs the sweep, saves its counts."""
    import numpy as np

    import jcsol

    if args.processes > 1:
        jcsol.distributed.initialize(f"127.0.0.1:{args.port}", args.processes, args.process, join_timeout=120)
    if args.sweep == "a9a":
        X1, y1 = jcsol.datasets.load(args.data_dir / "a9a.gz", n_features=123)
        X2, y2 = jcsol.datasets.load(args.data_dir / "a9a.t.gz", n_features=123)
        X, y = np.concatenate([X1, X2])[: args.rows], np.concatenate([y1, y2])[: args.rows]
        learner = jcsol.by_name(args.learner, eta=jcsol.decades())
    else:
        X, y = jcsol.datasets.load_koil("german", data_dir=args.data_dir / "koil")
        X, y = X[: args.koil_rows], y[: args.koil_rows]
        learner = jcsol.grid(jcsol.KOIL(budget_pos=50, budget_neg=50), sigma=[0.5, 1.0, 2.0], C=[1.0, 4.0, 16.0])
    perms = 1 if args.sweep == "koil-1" else args.perms
    res = jcsol.run(learner, X, y, perms=perms, key=0, grid_blocks=args.grid_blocks)
    np.save(args.out / f"{args.sweep}-{args.processes}-{args.grid_blocks}-{args.process}.npy", res.counts)
    print(json.dumps({"compile_s": res.time_compile, "run_s": res.time_run, "runs": res.n_runs, "rows": len(y)}))


def launch(args, sweep: str, processes: int, out: Path, devices: int = 2, grid_blocks: int = 1) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, JCSOL_CPU_DEVICES=str(devices // processes))
    common = [
        "--child",
        "--sweep",
        sweep,
        "--processes",
        str(processes),
        "--port",
        str(port),
        "--out",
        str(out),
        "--data-dir",
        str(args.data_dir),
        "--rows",
        str(args.rows),
        "--koil-rows",
        str(args.koil_rows),
        "--perms",
        str(args.perms),
        "--learner",
        args.learner,
        "--grid-blocks",
        str(grid_blocks),
    ]
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, *common, "--process", str(p)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in range(processes)
    ]
    reports = []
    try:
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=TIMEOUT)
            if proc.returncode:
                raise SystemExit(f"{sweep}, {processes} process(es): a process failed\n{stderr[-3000:]}")
            reports.append(json.loads(stdout.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    wall = time.perf_counter() - start
    slowest = max(reports, key=lambda r: r["compile_s"] + r["run_s"])
    return slowest | {"wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rows", type=int, default=48842, help="first rows of a9a train + test (all: 48842)")
    parser.add_argument("--koil-rows", type=int, default=1000, help="rows of KOIL's german (all: 1000)")
    parser.add_argument("--perms", type=int, default=20)
    parser.add_argument("--learner", default="COG-I", help="COG-I or ACOG-I-diag, say")
    parser.add_argument("--sweeps", nargs="*", default=["a9a", "koil", "koil-1"], choices=["a9a", "koil", "koil-1"])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sweep", help=argparse.SUPPRESS)
    parser.add_argument("--processes", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--process", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--grid-blocks", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    import numpy as np

    print(
        f"CPU cores: {os.cpu_count()}; a9a: first {args.rows} rows, {args.learner}, 11 η × {args.perms} "
        f"permutations; KOIL german: {args.koil_rows} rows, 3 σ × 3 C × {args.perms} permutations (koil-1: 1 "
        "permutation, the grid in 2 blocks; ratios against the whole grid on 1 device)"
    )
    header = (
        f"{'sweep':<6} {'layout':<30} {'runs':>5} {'compile s':>9} {'run s':>8} {'wall s':>8} "
        f"{'run ×':>6} {'wall ×':>6} {'same':>5}"
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for sweep in args.sweeps:
            blocks = 2 if sweep == "koil-1" else 1
            layouts = [("1 process × 2 devices", launch(args, sweep, 1, out, grid_blocks=blocks))]
            layouts.append(("2 processes × 1 device", launch(args, sweep, 2, out, grid_blocks=blocks)))
            ref = np.load(out / f"{sweep}-1-{blocks}-0.npy")
            same = all(np.array_equal(ref, np.load(out / f"{sweep}-2-{blocks}-{p}.npy")) for p in range(2))
            if sweep == "koil-1":  # the baseline: the whole grid on one device
                layouts.insert(0, ("1 process × 1 device, grid whole", launch(args, sweep, 1, out, devices=1)))
            base = layouts[0][1]
            for i, (layout, r) in enumerate(layouts):
                run_ratio = (r["compile_s"] + r["run_s"]) / (base["compile_s"] + base["run_s"])
                ratios = ("", "", "") if not i else (f"{run_ratio:.2f}", f"{r['wall_s'] / base['wall_s']:.2f}", "")
                same_bits = str(same) if layout.startswith("2") else ""
                print(
                    f"{sweep:<6} {layout:<30} {r['runs']:>5} {r['compile_s']:>9.2f} {r['run_s']:>8.2f} "
                    f"{r['wall_s']:>8.2f} {ratios[0]:>6} {ratios[1]:>6} {same_bits:>5}"
                )


if __name__ == "__main__":
    main()
