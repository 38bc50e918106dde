"""The CPU's default against XLA's whole-loop kernels (the opt-in ``JCSOL_XLA_CPU=loops``, :mod:`jcsol.xla_cpu`),
each setting in its own child processes, alternated, best of ``--repeats`` compiled calls in each:

* one PA-I run (C = 1) over a9a's 48,842 rows of 123 features, dense, NumPy arrays (as earlier revisions
  take them), on one device per core;
* the papers' 220-run protocol (PA-I over C ∈ {1e-5, …, 1e5} × 20 permutations), on one device per core;
* one live event (``Live.predict`` then ``Live.learn`` of one row, COG-I over 11 η), the median of
  ``--events``, on one device.

The target: the default within 1.2 × the opt-in's time for the first two. ``--compare-rev REV`` times the same
children with an earlier revision's package (its own default setting) beside this tree's, so that a change that
slows the default shows.

    python benchmarks/cpu_default.py [--data-dir DIR] [--repeats 5] [--events 2000] [--compare-rev REV]
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks' shared readers
SETTINGS = {"default": {}, "loops": {"JCSOL_XLA_CPU": "loops"}}


def child(args) -> None:
    """One setting's measurements: a JSON line on stdout."""
    import numpy as np
    from gpu_window import a9a

    import jcsol

    X, y = a9a(args.data_dir, None)
    X = np.asarray(X, np.float32)

    def best(call) -> float:
        call()
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return min(times)

    record: dict = {}
    if args.what == "runs":
        record["one_run_s"] = best(lambda: jcsol.run(jcsol.PA1(C=1.0), X, y, perms=1))
        record["protocol_s"] = best(lambda: jcsol.run(jcsol.PA1(C=jcsol.decades()), X, y, perms=20))
    else:
        live = jcsol.Live(jcsol.COG(eta=jcsol.decades()))
        live.learn(X[:1000], y[:1000])
        rows, labels = X[1000 : 1000 + args.events], y[1000 : 1000 + args.events]
        times = []
        for i in range(args.events):
            start = time.perf_counter()
            live.predict(rows[i : i + 1])
            live.learn(rows[i : i + 1], labels[i : i + 1])
            times.append(time.perf_counter() - start)
        warm = min(100, args.events // 10)  # the first events' calls warm the caches
        record["live_event_us"] = float(np.median(times[warm:]) * 1e6)
    print(json.dumps(record), flush=True)


def run_child(args, setting: str, what: str, tree: Path | None) -> dict:
    devices = "1" if what == "live" else str(os.cpu_count() or 1)
    env = dict(os.environ, PYTHONPATH=str(tree or ROOT), **SETTINGS[setting])
    env["JCSOL_CPU_DEVICES"] = devices
    env.pop("XLA_FLAGS", None)
    flags = ["--child", what, "--data-dir", str(args.data_dir), "--repeats", str(args.repeats)]
    flags += ["--events", str(args.events)]
    out = subprocess.run([sys.executable, __file__, *flags], env=env, check=True, capture_output=True, text=True).stdout
    return json.loads([line for line in out.splitlines() if line.startswith("{")][-1])


def main() -> None:
    from gpu_window import DATA
    from scaling import package_at

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2, help="alternations of the settings")
    parser.add_argument("--compare-rev", help="a git revision whose package is timed beside this tree's")
    parser.add_argument("--child", choices=["runs", "live"], dest="what", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.what:
        return child(args)
    with tempfile.TemporaryDirectory() as tmp:
        trees: dict[str, Path | None] = {"this tree": None}
        if args.compare_rev:
            trees[args.compare_rev] = package_at(args.compare_rev, Path(tmp))
        best: dict[tuple[str, str], dict] = {}
        for _ in range(args.rounds):
            for label, tree in trees.items():
                for setting in SETTINGS if tree is None else ("default",):  # an earlier revision: its own default
                    for what in ("runs", "live"):
                        got = run_child(args, setting, what, tree)
                        kept = best.setdefault((label, setting), {})
                        for k, v in got.items():
                            kept[k] = min(kept.get(k, v), v)
    print(f"{'tree':<12}{'setting':<10}{'one PA-I run s':>16}{'220 runs s':>12}{'live event µs':>15}")
    for (label, setting), r in best.items():
        print(f"{label:<12}{setting:<10}{r['one_run_s']:>16.4f}{r['protocol_s']:>12.3f}{r['live_event_us']:>15.1f}")
    d, loops = best[("this tree", "default")], best[("this tree", "loops")]
    print(
        f"the default over the opt-in: one run {d['one_run_s'] / loops['one_run_s']:.2f}×, "
        f"220 runs {d['protocol_s'] / loops['protocol_s']:.2f}×, live event "
        f"{d['live_event_us'] / loops['live_event_us']:.2f}×"
    )
    if args.compare_rev:
        then = best[(args.compare_rev, "default")]
        print(
            f"this tree's default over {args.compare_rev}'s: one run {d['one_run_s'] / then['one_run_s']:.2f}×, "
            f"220 runs {d['protocol_s'] / then['protocol_s']:.2f}×, live event "
            f"{d['live_event_us'] / then['live_event_us']:.2f}×"
        )


if __name__ == "__main__":
    main()
