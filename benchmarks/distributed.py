"""One process × 2 devices against 2 processes × 1 device, on the CPU of this machine.

Two sweeps, each run both ways (the 2 processes join a coordinator on 127.0.0.1, as in ``docs/distributed.md``):

- the papers' protocol on a9a (train + test, 48,842 × 123; ``--rows`` keeps the first rows): COG-I (or
  ``--learner``) with 11 learning rates × ``--perms`` permutations (20: 220 runs);
- a KOIL grid on the KOIL authors' ``german`` (``--koil-rows`` rows): 3 σ × 3 C × ``--perms`` permutations;
- ``a9a-1``: ACOG-I (the full-matrix learner: the most work per round) with 11 learning rates over one
  permutation of the same rows, its grid cut in ``grid_blocks=4`` (four units of 3 points, two a device),
  and beside it the grid whole on one device (``grid_blocks=1``, the only layout that one permutation has
  without cutting the grid): the ratio to it is what the second device gains;
- ``live``: :class:`jcsol.Live` with ACOG-I's 11 learning rates learning the same rows in batches of 1,000
  (the first batch compiles and is not timed; ``run s`` is the rest), its grid in 4 blocks, beside the grid
  whole on one device; every process holds the same board, and the layouts are checked to give the same bits
  (counts and final states, gathered from every process);
- ``blocks``: what cutting the grid costs on one device: COG-I and ACOG-I with 11 learning rates over one
  permutation of the same rows, in 1, 2 and 11 blocks (each unit gathers its own copy of every round's row).

For each layout it prints the time of the run (compile and execution, from :attr:`jcsol.Result.time_compile`
and ``time_run``, the slowest process), the wall time of the processes (start-up, joining, reading the data
and exit included), and the ratios to the sweep's first layout; and checks that the layouts with the same grid
blocks gave the same bits (counts and final states). The layouts share the same 2 cores: 2 processes against 1
is the price of splitting over processes (joining, gathering the result, a meeting after every chunk), not a
speed-up, which comes from adding hosts; a9a-1's second device is a real gain, as its one permutation left it
idle before the grid was cut.

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


def blocks_cost(args) -> None:
    """Run seconds of one permutation in 1, 2 and 11 grid blocks, on this process's one device."""

    import jcsol

    X, y = _a9a(args)
    for name in ("COG-I", "ACOG-I"):
        learner = jcsol.by_name(name, eta=jcsol.decades())
        jcsol.run(learner, X, y, perms=1, key=0)  # compiled once before timing, like every layout below
        seconds = {}
        for blocks in (1, 2, 11):
            runs = [jcsol.run(learner, X, y, perms=1, key=0, grid_blocks=blocks).time_run for _ in range(3)]
            seconds[blocks] = min(runs)
        ratios = ", ".join(f"{b} block(s) {s:.3f} s ({s / seconds[1]:.2f}×)" for b, s in seconds.items())
        print(f"blocks {name:<7} one device, best of 3 runs: {ratios}")


def _a9a(args):
    import numpy as np

    import jcsol

    X1, y1 = jcsol.datasets.load(args.data_dir / "a9a.gz", n_features=123)
    X2, y2 = jcsol.datasets.load(args.data_dir / "a9a.t.gz", n_features=123)
    return np.concatenate([X1, X2])[: args.rows], np.concatenate([y1, y2])[: args.rows]


def child(args) -> None:
    """One process of a layout: joins when there are several, runs the sweep, saves its counts."""
    import jax
    import numpy as np

    import jcsol

    if args.processes > 1:
        jcsol.distributed.initialize(f"127.0.0.1:{args.port}", args.processes, args.process, join_timeout=120)
    if args.sweep == "live":
        live_child(args)
        return
    if args.sweep.startswith("a9a"):
        X, y = _a9a(args)
        learner = jcsol.by_name("ACOG-I" if args.sweep == "a9a-1" else args.learner, eta=jcsol.decades())
    else:
        X, y = jcsol.datasets.load_koil("german", data_dir=args.data_dir / "koil")
        X, y = X[: args.koil_rows], y[: args.koil_rows]
        learner = jcsol.grid(jcsol.KOIL(budget_pos=50, budget_neg=50), sigma=[0.5, 1.0, 2.0], C=[1.0, 4.0, 16.0])
    perms = 1 if args.sweep == "a9a-1" else args.perms
    res = jcsol.run(learner, X, y, perms=perms, key=0, grid_blocks=args.grid_blocks)
    leaves = [res.counts, *(np.asarray(leaf) for leaf in jax.tree.leaves(res.states))]
    np.save(
        args.out / f"{args.sweep}-{args.layout}-{args.process}.npy",
        np.concatenate([a.view(np.uint8).ravel() for a in leaves]),
    )
    print(json.dumps({"compile_s": res.time_compile, "run_s": res.time_run, "runs": res.n_runs, "rows": len(y)}))


def live_child(args) -> None:
    """One process of the live sweep: batches of 1,000 a9a rows through ACOG-I's grid; saves counts and states."""
    import time

    import jax
    import numpy as np

    import jcsol

    X, y = _a9a(args)
    X = X.astype(np.float32)
    live = jcsol.Live(jcsol.ACOG(eta=jcsol.decades()), grid_blocks=args.grid_blocks, batch_sizes=(1000,))
    start = time.perf_counter()
    live.learn(X[:1000], y[:1000])
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    for a in range(1000, len(y) - len(y) % 1000, 1000):
        live.learn(X[a : a + 1000], y[a : a + 1000])
    leaves = [live.counts, *(np.asarray(leaf) for leaf in jax.tree.leaves(live.states))]
    run_s = time.perf_counter() - start
    np.save(
        args.out / f"{args.sweep}-{args.layout}-{args.process}.npy",
        np.concatenate([a.view(np.uint8).ravel() for a in leaves]),
    )
    print(json.dumps({"compile_s": compile_s, "run_s": run_s, "runs": live.n_grid, "rows": len(y)}))


def launch(args, sweep: str, processes: int, out: Path, devices: int = 2, grid_blocks: int = 1) -> dict:
    """Runs one layout; its processes save their counts and final states (as bytes) to ``out``."""
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
        "--layout",
        f"{processes}x{devices // processes}-{grid_blocks}",
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
    parser.add_argument(
        "--sweeps",
        nargs="*",
        default=["a9a", "koil", "a9a-1", "live", "blocks"],
        choices=["a9a", "koil", "a9a-1", "live", "blocks"],
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sweep", help=argparse.SUPPRESS)
    parser.add_argument("--processes", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--process", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--grid-blocks", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--layout", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        blocks_cost(args) if args.sweep == "blocks" else child(args)
        return
    import numpy as np

    print(
        f"CPU cores: {os.cpu_count()}; a9a: first {args.rows} rows, {args.learner}, 11 η × {args.perms} "
        f"permutations; KOIL german: {args.koil_rows} rows, 3 σ × 3 C × {args.perms} permutations; a9a-1: ACOG-I, "
        "11 η × 1 permutation, the grid in 4 blocks (ratios to the whole grid on 1 device); live: ACOG-I, 11 η, "
        "batches of 1,000, the grid in 4 blocks"
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
            if sweep == "blocks":
                continue
            blocks = 4 if sweep in ("a9a-1", "live") else 1
            # (name, processes, devices in all, grid blocks); the first is the base of the ratios, the others are
            # checked bit-identical to the first with the same grid blocks
            plan = [("1 process × 2 devices", 1, 2, blocks), ("2 processes × 1 device", 2, 2, blocks)]
            if sweep in ("a9a-1", "live"):
                plan = [("1 process × 1 device, grid whole", 1, 1, 1), ("1 process × 1 device", 1, 1, blocks), *plan]
            layouts, first_of = [], {}
            for name, processes, devices, grid_blocks in plan:
                r = launch(args, sweep, processes, out, devices=devices, grid_blocks=grid_blocks)
                got = [
                    np.load(out / f"{sweep}-{processes}x{devices // processes}-{grid_blocks}-{p}.npy")
                    for p in range(processes)
                ]
                ref = first_of.setdefault(grid_blocks, got[0])
                layouts.append((name, r, str(all(np.array_equal(ref, g) for g in got)) if ref is not got[0] else ""))
            base = layouts[0][1]
            for i, (layout, r, same_bits) in enumerate(layouts):
                run_ratio = (r["compile_s"] + r["run_s"]) / (base["compile_s"] + base["run_s"])
                ratios = ("", "", "") if not i else (f"{run_ratio:.2f}", f"{r['wall_s'] / base['wall_s']:.2f}", "")
                print(
                    f"{sweep:<6} {layout:<30} {r['runs']:>5} {r['compile_s']:>9.2f} {r['run_s']:>8.2f} "
                    f"{r['wall_s']:>8.2f} {ratios[0]:>6} {ratios[1]:>6} {same_bits:>5}"
                )
    if "blocks" in args.sweeps:  # in a child process with one CPU device
        command = [sys.executable, __file__, "--child", "--sweep", "blocks", "--data-dir", str(args.data_dir)]
        done = subprocess.run(
            [*command, "--rows", str(args.rows)],
            env=dict(os.environ, JCSOL_CPU_DEVICES="1"),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        if done.returncode:
            raise SystemExit(f"blocks: the process failed\n{done.stderr[-3000:]}")
        print(done.stdout, end="")


if __name__ == "__main__":
    main()
