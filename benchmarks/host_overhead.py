"""The host's share of a compiled call: ``jcsol.run``'s wall time against its ``time_run`` (the chunks' compiled
scans alone), on the a9a protocol (48,842 rounds, 11 η × 20 permutations), each learner called once to compile
and then ``--repeats`` times; with the rows given as NumPy arrays (checked and placed at every call) and as a
``jcsol.Stream`` (checked and placed once); and the selection-and-re-run protocol
(``jcsol.protocols.select_and_rerun``: a sweep, then the chosen η re-run on 20 fresh permutations) on each.

Everything a call does besides the scans — the input checks, drawing the row orders, placing the data, the
memory check, assembling the result — is host work that a GPU's sweep of milliseconds would not hide. Target: a
compiled call on a ``jcsol.Stream`` spends at most 3% of its wall time on the host.

    python benchmarks/host_overhead.py                       # data from benchmarks/data
    python benchmarks/host_overhead.py --profile             # and where the host time goes (cProfile)
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import jax
import numpy as np

import jcsol

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' shared readers
from gpu_window import DATA, a9a


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="print the host calls that cost most, per learner")
    args = parser.parse_args()
    X, y = a9a(args.data_dir, None)  # train and test parts, as the device window reads them
    print(f"a9a: {X.shape[0]} × {X.shape[1]}, 20 permutations, 11 η, on {len(jax.devices())} device(s)")
    stream = jcsol.Stream(X, y)
    print(f"{'learner':<14}{'rows':<8}{'call':<10}{'wall s':>9}{'run s':>9}{'host s':>9}{'host share':>12}")
    for name in ("COG-I", "ACOG-I-diag"):
        learner = jcsol.by_name(name, eta=jcsol.decades())
        for label, data in (("arrays", (X, y)), ("Stream", (stream,))):
            calls = {
                "run": lambda data=data, learner=learner: [jcsol.run(learner, *data, perms=20)],
                "select": lambda data=data, name=name: _selection(jcsol.by_name(name), data),
            }
            for call, once in calls.items():
                once()  # compiled, the orders drawn
                walls, runs = [], []
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    results = once()
                    walls.append(time.perf_counter() - start)
                    runs.append(sum(r.time_run for r in results))
                wall, run = float(np.median(walls)), float(np.median(runs))
                share = float(np.median([(w - r) / w for w, r in zip(walls, runs)]))
                print(f"{name:<14}{label:<8}{call:<10}{wall:>9.3f}{run:>9.3f}{wall - run:>9.3f}{share:>11.1%}")
                if args.profile:
                    profiler = cProfile.Profile()
                    profiler.enable()
                    once()
                    profiler.disable()
                    pstats.Stats(profiler).sort_stats("tottime").print_stats(8)


def _selection(learner, data) -> list:
    """The selection-and-re-run protocol's two calls of ``jcsol.run``: their results."""
    chosen = jcsol.protocols.select_and_rerun(learner, *data, perms=20)
    return [chosen.sweep, chosen.result]


if __name__ == "__main__":
    main()
