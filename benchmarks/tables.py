"""Tables in: rows/s of :class:`jcsol.TableEncoder` on a fraud-like frame, beside baselines in the same process.

A generated frame of ``--rows`` (100,000) payments: 5 numeric columns (amount, hour, age, balance, distance;
about 2% missing) and 3 categorical ones (merchant: 5,000 values, country: 60, device: 8; about 1% missing).
Printed, each the best of ``--repeats``:

* ``fit_transform`` (hash + online scaling + L2 rows, one call for the whole frame) from a pandas
  ``DataFrame``, a pyarrow ``Table`` and a list of dict records; ``transform`` (no update) from the frame;
* the same with ``bits`` 10 and 24: the cost is O(nnz) per row, not O(2**bits);
* baselines: the same encoding written as a plain per-row Python loop (MurmurHash3 per feature, Welford per
  value — the way one row at a time is encoded), timed on the first ``--loop-rows`` rows; scikit-learn's
  ``FeatureHasher`` on the same ``column=value`` strings (hashing only, no scaling) on the whole frame;
* one event at a time: median and p99 latency of ``fit_transform`` on a one-record list (the live path).

    python benchmarks/tables.py [--rows 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

NUMERIC = ["amount", "hour", "age", "balance", "distance"]
CATEGORICAL = ["merchant", "country", "device"]


def frame(n: int, seed: int = 0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    cols = {
        "amount": rng.lognormal(3.5, 1.2, n),
        "hour": rng.integers(0, 24, n).astype(float),
        "age": rng.integers(18, 95, n).astype(float),
        "balance": rng.normal(2e3, 8e2, n),
        "distance": rng.exponential(30.0, n),
    }
    for name in NUMERIC:
        cols[name][rng.random(n) < 0.02] = np.nan
    cat = {
        "merchant": np.array([f"m{i}" for i in range(5000)], object)[rng.zipf(1.3, n) % 5000],
        "country": np.array([f"c{i}" for i in range(60)], object)[rng.integers(0, 60, n)],
        "device": np.array(["ios", "android", "web", "pos", "atm", "tv", "watch", "other"], object)[
            rng.integers(0, 8, n)
        ],
    }
    for name in CATEGORICAL:
        cat[name][rng.random(n) < 0.01] = None
    return pd.DataFrame({**cols, **cat})


def best_of(repeats: int, fn) -> tuple[float, float]:
    """Best wall-clock and best CPU (process) seconds of ``repeats`` calls."""
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return min(wall), min(cpu)


def python_loop(records: list[dict], bits: int) -> tuple[np.ndarray, np.ndarray]:
    """The same encoding, one row at a time in Python (float64; scaled values before normalisation differ
    from the encoder's only in rounding: Welford here, shifted sums there)."""
    import mmh3

    mask = (1 << bits) - 1
    count = dict.fromkeys(NUMERIC, 0)
    mean = dict.fromkeys(NUMERIC, 0.0)
    m2 = dict.fromkeys(NUMERIC, 0.0)
    k = len(NUMERIC) + len(CATEGORICAL)
    indices, values = np.zeros((len(records), k), np.int32), np.zeros((len(records), k), np.float32)
    for t, rec in enumerate(records):
        row: dict[int, float] = {}
        for c in NUMERIC:
            x = rec[c]
            if x != x:
                continue
            count[c] += 1
            delta = x - mean[c]
            mean[c] += delta / count[c]
            m2[c] += delta * (x - mean[c])
            var = m2[c] / count[c]
            h = mmh3.hash(c, 0, signed=False)
            z = (x - mean[c]) / var**0.5 if var > 0 else 0.0
            row[h & mask] = row.get(h & mask, 0.0) + (z if h < 2**31 else -z)
        for c in CATEGORICAL:
            v = rec[c]
            if v is None:
                continue
            h = mmh3.hash(f"{c}={v}", 0, signed=False)
            row[h & mask] = row.get(h & mask, 0.0) + (1.0 if h < 2**31 else -1.0)
        norm = sum(v * v for v in row.values()) ** 0.5 or 1.0
        for j, (i, v) in enumerate(row.items()):
            indices[t, j], values[t, j] = i, v / norm
    return indices, values


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--loop-rows", type=int, default=20_000, help="rows of the per-row Python loop baseline")
    p.add_argument("--events", type=int, default=2000, help="one-record calls timed for the latency")
    args = p.parse_args()

    import pyarrow as pa

    from jcsol.features import TableEncoder

    df = frame(args.rows)
    table = pa.Table.from_pandas(df, preserve_index=False)
    records = df.astype(object).where(df.notna(), None).to_dict("records")
    for r in records:  # numeric missing values as NaN floats, as the loop expects
        for c in NUMERIC:
            r[c] = np.nan if r[c] is None else float(r[c])
    n = args.rows

    def encoder(bits=18):
        return TableEncoder(NUMERIC, CATEGORICAL, bits=bits)

    print(
        f"{n} rows: {len(NUMERIC)} numeric + {len(CATEGORICAL)} categorical columns "
        f"(merchant {df['merchant'].nunique()}, country {df['country'].nunique()}, device "
        f"{df['device'].nunique()} values); best of {args.repeats}"
    )
    rows = []
    for name, source in (("pandas DataFrame", df), ("pyarrow Table", table), ("list of dict records", records)):
        rows.append((f"fit_transform, {name}", best_of(args.repeats, lambda s=source: encoder().fit_transform(s)), n))
    fitted = encoder()
    fitted.fit_transform(df)
    rows.append(("transform (no update), pandas DataFrame", best_of(args.repeats, lambda: fitted.transform(df)), n))
    for bits in (10, 24):
        rows.append(
            (
                f"fit_transform, pandas DataFrame, bits={bits}",
                best_of(args.repeats, lambda b=bits: encoder(b).fit_transform(df)),
                n,
            )
        )
    loop_n = min(args.loop_rows, n)
    loop = best_of(1, lambda: python_loop(records[:loop_n], 18))
    rows.append((f"baseline: per-row Python loop (first {loop_n} rows)", loop, loop_n))
    try:
        from sklearn.feature_extraction import FeatureHasher

        strings = [[f"{c}={r[c]}" for c in CATEGORICAL if r[c] is not None] for r in records]
        hasher = FeatureHasher(n_features=2**18, input_type="string")
        rows.append(
            (
                "baseline: scikit-learn FeatureHasher, categorical only",
                best_of(args.repeats, lambda: hasher.transform(strings)),
                n,
            )
        )
    except ImportError:
        print("scikit-learn not installed: its FeatureHasher baseline is skipped")

    ref = rows[0][2] / rows[0][1][0]
    loop_rate = next(r[2] / r[1][0] for r in rows if r[0].startswith("baseline: per-row"))
    width = max(len(r[0]) for r in rows)
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall-clock times include the "
        "machine's other work; CPU seconds do not)"
    )
    print(f"{'':{width}}  {'seconds':>8}  {'rows/s':>12}  {'× Python loop':>13}  {'CPU rows/s':>12}")
    for label, (seconds, cpu), count in rows:
        rate = count / seconds
        print(f"{label:{width}}  {seconds:8.3f}  {rate:12,.0f}  {rate / loop_rate:13.1f}  {count / cpu:12,.0f}")

    # one event at a time: the live path
    enc = encoder()
    enc.fit_transform(records[:1000])
    lat = []
    start_cpu = time.process_time()
    for rec in records[1000 : 1000 + args.events]:
        start = time.perf_counter()
        enc.fit_transform([rec])
        lat.append(time.perf_counter() - start)
    cpu = (time.process_time() - start_cpu) / len(lat) * 1e6
    lat = np.array(lat) * 1e6
    print(
        f"one record per call ({len(lat)} calls): median {np.median(lat):.1f} µs, p99 "
        f"{np.percentile(lat, 99):.1f} µs, mean CPU {cpu:.1f} µs (pandas frame rows/s above: {ref:,.0f})"
    )

    # the encoder's rows are the loop's: same slots, values equal to float32 rounding
    enc_rows = encoder().fit_transform(records[:loop_n])
    li, lv = python_loop(records[:loop_n], 18)
    dense = lambda idx, val: {(t, int(i)): float(v) for t in range(len(idx)) for i, v in zip(idx[t], val[t]) if v}
    a, b = dense(enc_rows.indices, enc_rows.values), dense(li, lv)
    assert a.keys() == b.keys() and max(abs(a[k] - b[k]) for k in a) < 1e-5, "encoder and loop disagree"
    print(f"check: the encoder's rows equal the per-row loop's on the first {loop_n} rows")


if __name__ == "__main__":
    main()
