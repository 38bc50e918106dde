"""KOIL-MKL reproduction: the KOIL thesis's Table 4.1, with the non-smooth and the smooth loss, RS++ and FIFO++.

The KOIL thesis: J. Hu, *Kernelized Online Imbalanced Learning*, thesis, The Chinese University of Hong Kong,
ch. 4 (KOIL with multiple kernel learning, after Jin, Hoi, Yang, *Online multiple kernel learning*, ALT 2010).

    python benchmarks/koil_mkl.py                              # the 14 sets, results in koil_mkl.json
    python benchmarks/koil_mkl.py --sets sonar german          # some sets only
    python benchmarks/koil_mkl.py --sets letter --json gpu.json   # results of a set go to a file as it ends
    python benchmarks/koil_mkl.py --report cpu.json gpu.json   # the tables from files written before
    python benchmarks/koil_mkl.py --sets poker --hindsight FIFO++   # a column over every C, on the outer runs
    python benchmarks/koil_mkl.py --sets letter --fixed-C 4         # RS++, FIFO++, RS, FIFO (no compensation)
    python benchmarks/koil_mkl.py --sets shuttle --fixed-C 0.5 --dtype float64   # the same in float64
    python benchmarks/koil_mkl.py --sets shuttle --hindsight FIFO++ --decay      # the decayed variant over every C
    python benchmarks/koil_mkl.py --sets shuttle --fixed-C 16 --decay --shuttle-scale symmetric   # another copy
    python benchmarks/koil_mkl.py --code --sets sonar --json code.json   # as the authors' C++ code configures it
    python benchmarks/koil_mkl.py --code --widths sigma --sets shuttle   # the same with the thesis's σ widths
    python benchmarks/koil_mkl.py --sets poker --fixed-C 1 --decay --loss smooth --policies RS++ --held-draws 30

Protocol (the thesis, §4.4, and the evaluation of its Table 3.3): the pool of 16 kernels of
:func:`jcsol.algorithms.kernels.mkl_pool` (polynomial ``(xᵀx')^p``, ``p = 1, 2, 3``; Gaussian ``σ = 2^-6…2^6``),
η = 0.01 for the kernel classifiers and the kernel weights, budgets 100 per class, k = 10; 5-fold
cross-validation repeated 4 times (20 runs, the splits of :func:`jcsol.protocols.cv_splits`); one online pass
over each training stream and the AUC of the final model on its test fold; mean ± std over the 20 runs.

Selection of C (the thesis: "a 5-fold cross validation is applied to find the best penalty cost C from
2^[-10:1:10]"): for each column, inner 5-fold cross-validation on the first outer training split, all 21 values of
C in one compiled sweep (``--select-cap`` subsamples the split; 0, the default, keeps all of it).

Two readings of the score whose AUC is taken, both from the same trainings (:func:`jcsol.protocols.fold_auc`):
``vote``, Alg. 4's prediction ``Σ_l q_l sign(f_l(x))``, and ``sum``, ``Σ_l q_l f_l(x)`` (``KOILMKL(combine=…)``).
Each reading chooses its own C.

Each set's row is written to ``--json`` (atomically) when the set ends; a set already in the file is skipped, so
an interrupted run continues where it stopped, and rows measured on different machines are merged by
``--report``. The data are those of ``benchmarks/koil.py`` (``--data-dir``, default ``../shared/data``).

Time: the twelve sets other than letter and shuttle took 53 minutes on 2 CPU cores (poker 28 of them); on one
H100, letter takes 91 s and shuttle 175 s with ``XLA_FLAGS=--xla_gpu_autotune_level=0`` (with XLA's autotuning,
the compilations of the test-fold scoring take most of the time: shuttle 309 s); with ``--code`` on 2 CPU cores,
letter took 688 s and shuttle 1,967 s.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import namedtuple
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from koil import SHARED, SHUTTLE_SCALES, TOL, load, selection_rows  # benchmarks/ is on sys.path when run as a script

import jcsol
from jcsol.algorithms.kernels import mkl_pool
from jcsol.algorithms.koil import KOILMKL, KOILMKLState, draw
from jcsol.base import Example, StepInfo, choice, pytree_dataclass
from jcsol.files import atomic_write
from jcsol.metrics import auc_numpy
from jcsol.protocols import cv_splits, fold_auc, protocol_auc

# the thesis's Table 4.1: mean (std) of KOIL-MKL for the columns of COLUMNS
PAPER = {
    "sonar": ((0.893, 0.053), (0.899, 0.047), (0.946, 0.040), (0.949, 0.031)),
    "australian": ((0.922, 0.027), (0.919, 0.028), (0.918, 0.026), (0.911, 0.024)),
    "heart": ((0.906, 0.044), (0.907, 0.042), (0.906, 0.040), (0.904, 0.038)),
    "ionosphere": ((0.953, 0.062), (0.957, 0.073), (0.972, 0.039), (0.972, 0.042)),
    "diabetes": ((0.826, 0.035), (0.831, 0.032), (0.827, 0.036), (0.822, 0.033)),
    "glass": ((0.890, 0.056), (0.891, 0.051), (0.890, 0.053), (0.893, 0.052)),
    "german": ((0.771, 0.042), (0.769, 0.033), (0.774, 0.033), (0.768, 0.039)),
    "svmguide2": ((0.906, 0.040), (0.896, 0.049), (0.905, 0.041), (0.903, 0.043)),
    "segment": ((0.993, 0.004), (0.994, 0.004), (0.991, 0.005), (0.990, 0.009)),
    "satimage": ((0.937, 0.015), (0.939, 0.015), (0.938, 0.012), (0.937, 0.014)),
    "vowel": ((0.999, 0.002), (0.999, 0.002), (0.999, 0.002), (0.998, 0.003)),
    "letter": ((0.954, 0.013), (0.959, 0.014), (0.962, 0.011), (0.968, 0.008)),
    "poker": ((0.690, 0.035), (0.707, 0.027), (0.709, 0.023), (0.705, 0.020)),
    "shuttle": ((0.948, 0.028), (0.926, 0.032), (0.888, 0.029), (0.886, 0.032)),
}
COLUMNS = (("RS++", "hinge"), ("FIFO++", "hinge"), ("RS++", "smooth"), ("FIFO++", "smooth"))
LABELS = ("RS++", "FIFO++", "RS++ smooth", "FIFO++ smooth")
READINGS = ("vote", "sum")
CS = 2.0 ** np.arange(-10, 11)
DTYPE = "float32"  # --dtype
DECAY = False  # --decay


#: --code: the Gaussian widths of the authors' C++ code, exp(−γ‖a − b‖²) with γ = 2^-6…2^6, as σ = 1/√(2γ)
CODE_POOL = mkl_pool(sigmas=tuple(float(np.sqrt(0.5 / 2.0**g)) for g in range(-6, 7)))
CODE = False  # --code
WIDTHS: str | None = None  # --widths: the Gaussian widths of the pool, if not the configuration's own
HELD: int | None = None  # --held-draws


def learner_of(label: str) -> KOILMKL:
    return configured(*COLUMNS[LABELS.index(label)])


#: :class:`KOILMKLState`'s fields, then the key of the held numbers ((2,) uint32) and the rounds so far (() int32)
HeldState = namedtuple("HeldState", (*KOILMKLState._fields, "held_key", "t"))


@pytree_dataclass
class HeldDraws(KOILMKL):
    """KOIL-MKL with the reservoir draws of the authors' C++ code (``--held-draws``), to measure what they change.

    The code's RS++ (``KOIL::rs_update_budget``) calls ``srand(time(0))`` before its two ``rand()``: every call in
    the same wall-clock second draws the same ``r0``, ``r1``. ``x_t`` replaces a slot when ``r0 mod N_t < N``
    (``N_t`` the classifier's examples of that class so far, ``N`` the budget), and the slot is ``r1 mod N``, the
    same for every kernel. Here ``r0``, ``r1`` (31 bits, as ``rand()``) are held for ``held`` rounds at a time: the
    rounds the code ran in a second, which its speed set and the thesis does not report.
    """

    held: int = choice(1)

    def init(self, d: int, key: jax.Array, dtype: Any = jnp.float32) -> HeldState:  # type: ignore[override]
        state = super().init(d, key, dtype)
        return HeldState(*state, held_key=state.key, t=jnp.int32(0))

    def step(self, state: HeldState, ex: Example) -> tuple[HeldState, StepInfo]:  # type: ignore[override]
        dtype = ex.x.dtype
        data, u = draw(state.key, self.draw_shape, dtype)
        held = jax.random.fold_in(jax.random.wrap_key_data(state.held_key), state.t // self.held)
        r = jax.random.bits(held, (2,), jnp.uint32) >> 1
        own = jnp.where(ex.y > 0, 0, 1)
        cap = jnp.where(ex.y > 0, self.budget_pos, self.budget_neg).astype(jnp.uint32)
        replace = r[0] % (state.seen[:, own] + 1).astype(jnp.uint32) < cap  # per kernel: N_t counts its own rounds
        slot = ((r[1] % cap).astype(dtype) + 0.5) / cap.astype(dtype)  # koil_round's slot floor(u N) is r1 mod N
        u = u.at[:, 1].set(jnp.where(replace, 0.0, 1.0).astype(dtype)).at[:, 2].set(slot)
        buffers, w, info = self.update(KOILMKLState(*state[: len(KOILMKLState._fields)]), ex, u)
        return HeldState(**buffers._asdict(), w=w, key=data, held_key=state.held_key, t=state.t + 1), info


def configured(policy: str, loss: str, **given) -> KOILMKL:
    """KOIL-MKL with the protocol's settings (η = 0.01, budgets 100), as ``--decay``, ``--code``, ``--widths`` and
    ``--held-draws`` ask."""
    if CODE:  # the authors' C++ code: γ widths, the weights' loss without C, 5 pairs a round, the decayed step
        options = dict(pool=CODE_POOL, k=5, decay=True, penalized_weights=False)
    else:
        options = dict(pool=mkl_pool(), k=10, decay=DECAY)
    if WIDTHS is not None:
        options["pool"] = CODE_POOL if WIDTHS == "gamma" else mkl_pool()
    kind, held = (KOILMKL, {}) if HELD is None else (HeldDraws, {"held": HELD})
    return kind(eta=0.01, budget_pos=100, budget_neg=100, policy=policy, loss=loss, **held, **options, **given)


def aucs(learner: KOILMKL, X, y, splits, seed: int) -> tuple[dict[str, np.ndarray], dict[str, float], Any]:
    """Test AUCs of one training of ``learner`` (a grid, possibly) under both readings, the seconds spent, and the
    final states."""
    pr = protocol_auc(learner, X, y, splits, key=seed, dtype=DTYPE)
    start = time.perf_counter()
    by_reading = {
        "vote": pr.auc,
        "sum": fold_auc(pr.result, X, y, splits, scorer=learner.replace(combine="sum"), dtype=DTYPE),
    }
    times = {
        "compile": pr.result.time_compile,
        "run": pr.result.time_run,
        "score": pr.time_score + time.perf_counter() - start,
    }
    return by_reading, times, pr.result.states


def outer(name: str, args):
    """A set's rows and labels, and its 20 outer runs (5-fold cross-validation repeated 4 times)."""
    X, y = load(name, args.data_dir, args.shuttle_scale)
    return X, y, cv_splits(y, folds=5, repeats=4, seed=args.seed)


def evaluate_set(name: str, args) -> dict:
    start = time.perf_counter()
    X, y, splits = outer(name, args)
    rows = splits.train[0] if args.select_cap <= 0 else selection_rows(y, splits.train[0], args.select_cap, args.seed)
    inner = cv_splits(y, folds=5, repeats=1, seed=args.seed + 1, subset=rows)
    row: dict = {
        "set": name,
        "n": len(y),
        "d": int(X.shape[1]),
        "rounds": int(splits.train.shape[1]),
        "select_rows": len(rows),
        "device": jax.devices()[0].device_kind,
        **({"shuttle_scale": args.shuttle_scale} if name == "shuttle" else {}),
        **({"widths": WIDTHS} if WIDTHS else {}),
        **({"held_draws": HELD} if HELD else {}),
        "C": {r: {} for r in READINGS},
        "select_auc": {r: {} for r in READINGS},
        "auc": {r: {} for r in READINGS},
        "times": {},
    }
    for label in LABELS:
        curves, row["times"][f"select {label}"], _ = aucs(jcsol.grid(learner_of(label), C=CS), X, y, inner, args.seed)
        for reading, curve in curves.items():
            mean = np.nanmean(curve, axis=-1)
            row["select_auc"][reading][label] = [float(m) for m in mean]
            row["C"][reading][label] = float(CS[int(np.nanargmax(mean))])
        for C in sorted({row["C"][r][label] for r in READINGS}):
            by_reading, row["times"][f"{label} C={C:g}"], _ = aucs(
                learner_of(label).replace(C=C), X, y, splits, args.seed
            )
            for reading in READINGS:
                if row["C"][reading][label] == C:
                    row["auc"][reading][label] = [float(a) for a in by_reading[reading]]
    row["wall"] = time.perf_counter() - start
    return row


def hindsight(name: str, label: str, args) -> dict[str, list[float]]:
    """Mean AUC over the 20 outer runs of each C of the grid, under both readings: how far the chosen C is from
    the best in hindsight."""
    X, y, splits = outer(name, args)
    curves, _, _ = aucs(jcsol.grid(learner_of(label), C=CS), X, y, splits, args.seed)
    return {reading: [float(m) for m in np.nanmean(curve, axis=-1)] for reading, curve in curves.items()}


def the_sums_parts(learner: KOILMKL, states, X, y, splits) -> list[str]:
    """Where the sum ``Σ_l q_l f_l`` and the vote ``Σ_l q_l sign(f_l)`` part, from each run's kernel scores on its
    test fold. Each kernel's part of the sum is the median of ``|q_l f_l|`` over the test rows. Lines: how often
    the polynomial kernels carry more than half of the sum; the AUC of the sum of the Gaussian kernels alone, of
    the sum with each ``f_l`` divided by its median ``|f_l|``, and of the vote of the kernels that carry the sum
    (a part of at least 1% of the largest); then, kernel by kernel, the mean over the runs of ``q_l``, of the
    median ``|f_l|`` and of its AUC alone."""
    poly = np.array([kind == "polynomial" for kind, _ in learner.pool])
    readings, kernels = [], []
    for r in range(len(splits.train)):
        state = jax.tree.map(lambda a, r=r: a[r], states)
        test = splits.test[r][splits.test_mask[r]]
        f = np.asarray(learner.kernel_scores(state, jnp.asarray(X[test], DTYPE)), np.float64)
        w = np.asarray(state.w, np.float64)
        q = w / w.sum()
        part = np.median(np.abs(q[:, None] * f), axis=1)
        scale = np.median(np.abs(f), axis=1)
        carry = part >= part.max() / 100
        readings.append(
            (
                part[poly].sum() > part.sum() / 2,
                auc_numpy(q[~poly] @ f[~poly], y[test]),
                auc_numpy(q @ (f / np.where(scale > 0, scale, 1.0)[:, None]), y[test]),
                auc_numpy((q * carry) @ np.sign(f), y[test]),
            )
        )
        kernels.append([(q[l], scale[l], auc_numpy(f[l], y[test])) for l in range(len(q))])
    mostly_poly, gaussian, unscaled, carriers = np.asarray(readings, np.float64).T
    lines = [
        f"the polynomial kernels carry more than half of the sum in {int(mostly_poly.sum())}/{len(readings)} runs; "
        f"AUC of the sum of the Gaussian kernels alone {np.mean(gaussian):.3f}, of the sum of f_l / median |f_l| "
        f"{np.mean(unscaled):.3f}, of the vote of the kernels that carry the sum {np.mean(carriers):.3f}",
        f"{'kernel':<24}{'q_l':>9}{'median |f_l|':>14}{'AUC alone':>11}",
    ]
    for (kind, parameter), (q_l, size, alone) in zip(learner.pool, np.mean(kernels, axis=0)):
        lines.append(f"{kind + ' ' + format(parameter, '.4g'):<24}{q_l:>9.3g}{size:>14.3g}{alone:>11.3f}")
    return lines


def at_fixed_C(name: str, C: float, policies, loss: str, args) -> None:
    """Each buffer policy at one C: AUC under both readings, the largest |α| and the smallest kernel weight, and
    where the readings part (:func:`the_sums_parts`)."""
    X, y, splits = outer(name, args)
    for policy in policies:
        learner = configured(policy, loss, C=C)
        by_reading, _, states = aucs(learner, X, y, splits, args.seed)
        w = np.asarray(states.w)
        copy = f" ({args.shuttle_scale})" if name == "shuttle" else ""
        print(
            f"{name}{copy} {policy} {loss} C = {C:g} ({DTYPE}{', decayed' if DECAY else ''}"
            f"{', code' if CODE else ''}{f', {WIDTHS} widths' if WIDTHS else ''}"
            f"{f', draws held {HELD} rounds' if HELD and HELD > 1 else ''}): vote {by_reading['vote'].mean():.3f}, sum "
            f"{by_reading['sum'].mean():.3f}; largest |α| {np.abs(np.asarray(states.alpha)).max():.4g}, smallest "
            f"kernel weight {w.min():.3g} (non-zero {w[w > 0].min():.3g}); kernels at weight 0: "
            f"{(w == 0).sum(-1).mean():.1f} of {w.shape[-1]} a run",
            flush=True,
        )
        print("\n".join(f"  {line}" for line in the_sums_parts(learner, states, X, y, splits)), flush=True)


def read(paths) -> dict:
    rows: dict = {"hindsight": {}}
    for path in paths:
        if Path(path).exists():
            found = json.loads(Path(path).read_text())
            for name, cells in found.pop("hindsight", {}).items():
                rows["hindsight"].setdefault(name, {}).update(cells)
            rows.update(found)
    return rows


def report(rows: dict) -> None:
    done = [name for name in PAPER if name in rows]
    for reading in READINGS if done else ():
        print(
            f"\n== KOIL-MKL AUC ({reading}), 5-fold CV × 4 (20 runs): jcsol mean±std, C chosen, the thesis's Table "
            f"4.1, Δ; '*': |Δ| > {TOL} =="
        )
        head = f"{'set':<11}"
        for label in LABELS:
            head += f" | {label:>13}{'C*':>7}{'paper':>6}{'Δ':>7}"
        print(head + f" | {'wall s':>7}  device")
        print("-" * (len(head) + 24))
        far: dict[str, list[str]] = {label: [] for label in LABELS}
        for name in done:
            r = rows[name]
            line = f"{name:<11}"
            for label, (paper, _) in zip(LABELS, PAPER[name]):
                auc = np.asarray(r["auc"][reading][label])
                delta = float(np.mean(auc)) - paper
                if abs(delta) > TOL:
                    far[label].append(name)
                mark = "*" if abs(delta) > TOL else " "
                C = f"2^{int(np.log2(r['C'][reading][label]))}"
                line += f" | {np.mean(auc):.3f}±{np.std(auc):.3f}{C:>7}{paper:>6.3f} {delta:>+6.3f}{mark}"
            print(line + f" | {r['wall']:>7.0f}  {r['device']}")
        for label in LABELS:
            print(
                f"KOIL-MKL {label} ({reading}): within {TOL} of the thesis on {len(done) - len(far[label])}/"
                f"{len(done)} sets; farther: {', '.join(far[label]) or 'none'}"
            )
    if rows["hindsight"]:
        print("\n== C in hindsight: mean AUC of the 20 outer runs for every C of 2^[-10:10] ==")
        for name, cells in rows["hindsight"].items():
            for label, curves in cells.items():
                for reading, curve in curves.items():
                    best = int(np.nanargmax(curve))  # a C whose runs all diverged has no AUC (NaN)
                    chosen = rows[name]["C"][reading][label] if name in rows else float("nan")
                    at_chosen = f"{curve[int(np.argmin(np.abs(CS - chosen)))]:.3f}" if name in rows else "-"
                    print(
                        f"{name:<11}{label:<14}{reading:<5} best {curve[best]:.3f} at C = {CS[best]:.4g}; at the "
                        f"chosen C = {chosen:.4g}: {at_chosen}; the thesis {PAPER[name][LABELS.index(label)][0]:.3f}"
                        f"; all: {' '.join(f'{a:.3f}' for a in curve)}"
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="*", default=list(PAPER), choices=list(PAPER))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--select-cap", type=int, default=0, help="rows of the selection split (0: all)")
    parser.add_argument("--data-dir", type=Path, default=SHARED)
    parser.add_argument("--json", type=Path, default=Path("koil_mkl.json"), help="rows are kept here as sets end")
    parser.add_argument("--report", nargs="+", type=Path, help="only print the tables from these files")
    parser.add_argument(
        "--hindsight", nargs="+", choices=LABELS, help="only these columns of --sets over every C, on the outer runs"
    )
    parser.add_argument(
        "--shuttle-scale",
        default="minmax",
        choices=SHUTTLE_SCALES,
        help="shuttle's features min-max scaled to [0, 1], to [-1, 1] (svm-scale), unscaled, or its rows of unit norm",
    )
    parser.add_argument("--fixed-C", type=float, help="only each of --policies on --sets at this C (with --loss)")
    parser.add_argument("--policies", nargs="+", default=["RS++", "FIFO++", "RS", "FIFO"])
    parser.add_argument("--loss", default="hinge", choices=["hinge", "smooth"])
    parser.add_argument(
        "--dtype", default="float32", choices=["float32", "float64"], help="of the learners' states and scores"
    )
    parser.add_argument(
        "--decay", action="store_true", help="KOILMKL(decay=True): the single-kernel step's 1 - η factor (a variant)"
    )
    parser.add_argument(
        "--code",
        action="store_true",
        help="the configuration of the authors' C++ code: Gaussian widths γ = 2^-6…2^6, the kernel weights' loss "
        "without C, k = 5, the decayed step",
    )
    parser.add_argument(
        "--widths",
        choices=["sigma", "gamma"],
        help="the pool's Gaussian widths whatever the configuration: the thesis's σ = 2^-6…2^6 (exp(−‖a − b‖²/2σ²)) "
        "or the code's γ = 2^-6…2^6 (exp(−γ‖a − b‖²))",
    )
    parser.add_argument(
        "--held-draws",
        type=int,
        metavar="B",
        help="RS++ with the reservoir draws of the authors' code: rand() reseeded with the second on every call, "
        "its two numbers held for B rounds",
    )
    args = parser.parse_args()
    global DTYPE, DECAY, CODE, WIDTHS, HELD
    DTYPE, DECAY, CODE, WIDTHS, HELD = args.dtype, args.decay, args.code, args.widths, args.held_draws
    if HELD is not None and HELD < 1:
        parser.error(f"--held-draws must be at least 1, got {HELD}")
    if DTYPE == "float64":
        jax.config.update("jax_enable_x64", True)
    if args.fixed_C is not None:
        for name in args.sets:
            at_fixed_C(name, args.fixed_C, args.policies, args.loss, args)
        return
    if args.report:
        report(read(args.report))
        return
    rows = read([args.json])
    start = time.perf_counter()
    for name in args.sets:
        todo = args.hindsight or ([] if name in rows else [None])
        for label in todo:
            if label is None:
                rows[name] = evaluate_set(name, args)
            else:
                rows["hindsight"].setdefault(name, {})[label] = hindsight(name, label, args)
            with atomic_write(args.json, "w") as fh:
                json.dump(rows, fh)
            print(f"[{time.perf_counter() - start:7.0f} s] {name} {label or ''} done", flush=True)
        if not todo:
            print(f"{name}: already in {args.json}, skipped")
    report(rows)


if __name__ == "__main__":
    main()
