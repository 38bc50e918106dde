"""Bounded memory on data larger than memory allows: a synthetic LIBSVM file of ~2 GB, streamed from disk.

Writes the file (sparse rows, 40 non-zeros over 100,000 features, 1 positive for 4 negatives), converts it to
a :class:`jcsol.datasets.RowStore` block by block, then runs COG-I over it in file order (the online setting
of a real stream) and ACOG-I-diag over 4 fixed permutations of its index. Each phase runs in its own process
and reports its peak resident memory, beside the size of the file and of the rows as dense float32.

    python benchmarks/streaming_memory.py [--gigabytes 2] [--dir /tmp/jcsol-stream]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from rss import peak_rss_gib

D, NNZ = 100_000, 40


def write_file(path: Path, gigabytes: float, seed: int = 0) -> int:
    """Writes rows until the file reaches ``gigabytes``; returns the number of rows.

    Eight distinct blocks of 20,000 random rows are formatted once and written in random order until the size
    is reached (formatting every row anew would take many minutes); content repeats, sizes and access do not.
    """
    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(8):
        n = 20_000
        labels = np.where(rng.random(n) < 0.2, "+1", "-1")
        idx = np.sort(rng.choice(D - NNZ + 1, size=(n, NNZ)), axis=1) + np.arange(NNZ) + 1  # strictly increasing
        val = np.round(rng.random((n, NNZ)), 4)
        tokens = np.char.add(np.char.add(idx.astype(str), ":"), val.astype(str))
        blocks.append(("\n".join(lab + " " + " ".join(tok) for lab, tok in zip(labels, tokens)) + "\n").encode())
    target, rows = int(gigabytes * 2**30), 0
    with open(path, "wb") as fh:
        while fh.tell() < target:
            fh.write(blocks[rng.integers(len(blocks))])
            rows += 20_000
    return rows


def phase(name: str, workdir: Path) -> dict:
    import jcsol
    from jcsol.datasets import RowStore

    jcsol.use_cpu_cores()
    start = time.perf_counter()
    if name == "build":
        store = RowStore.build(workdir / "synthetic.svm", workdir / "store", n_features=D, block_rows=50_000)
        out = {"rows": store.shape[0], "width": store.width}
    else:
        store = RowStore(workdir / "store")
        if name == "pass":
            res = jcsol.run(
                jcsol.COG(eta=1.0),
                store,
                store.y,
                perms=np.arange(store.shape[0])[None],
                objective=jcsol.Sum(rho="laplace"),
                chunk_size=8192,
            )
        else:
            res = jcsol.run(jcsol.ACOG(eta=1.0, diagonal=True), store, store.y, perms=4, chunk_size=8192)
        out = {"sum": float(res.sum.mean()), "updates_per_s": res.updates_per_second}
    out["seconds"] = time.perf_counter() - start
    out["peak_rss_gib"] = peak_rss_gib()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gigabytes", type=float, default=2.0)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/jcsol-stream"))
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.dir)))
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    source = args.dir / "synthetic.svm"
    if not source.exists() or source.stat().st_size < 0.95 * args.gigabytes * 2**30:
        start = time.perf_counter()
        rows = write_file(source, args.gigabytes)
        seconds = time.perf_counter() - start
        print(f"wrote {source}: {source.stat().st_size / 2**30:.2f} GiB, {rows} rows in {seconds:.0f} s")
    size = source.stat().st_size / 2**30
    print(f"file: {size:.2f} GiB of LIBSVM text; {NNZ} non-zeros per row, d = {D}")
    for name, what in (
        ("build", "convert to a row store"),
        ("pass", "COG-I, one pass in file order"),
        ("perms", "ACOG-I-diag, 4 permutations"),
    ):
        done = subprocess.run(
            [sys.executable, __file__, "--phase", name, "--dir", str(args.dir)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(done.stdout.strip().splitlines()[-1])
        extra = (
            f"rows {r['rows']}, dense float32 would be {r['rows'] * D * 4 / 2**30:.0f} GiB"
            if name == "build"
            else f"sum {100 * r['sum']:.2f}%, {r['updates_per_s']:.3g} updates/s"
        )
        print(f"{what:<32} {r['seconds']:7.1f} s   peak RSS {r['peak_rss_gib']:.2f} GiB   ({extra})")


if __name__ == "__main__":
    main()
