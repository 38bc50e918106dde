"""The device window: one command that measures the sweep engine on a GPU in a few minutes, compilation included.

It prints a line per step as it goes, writes every figure to JSON after each step (a window cut short keeps what
it measured), and skips a step that its time budget cannot finish. Side by side on the device, for the a9a
protocol (48,842 rounds; ACOG-I-diag, 11 η × 20 permutations: 220 runs) and the 2,420-run η × γ grid:

* the scan as it is, with XLA's command buffers for ``while`` loops, and unrolled;
* the one-kernel time loop (:mod:`jcsol.core.triton`) at a few block shapes, warp counts, pipelining stages and rounds
  an iteration of its loop (``--kernels``);
* every figure beside the host CPU's (a child process on the same machine, ``JAX_PLATFORMS=cpu``), after a check
  of which of jcsol's CPU programs the installed jaxlib compiles on 1, 2 and every core's device;
* full ACOG-II over a9a (d = 123), 220 runs: the scan 8 rounds an iteration against the kernel (Σ in registers,
  at 4, 8 — its default — and 16 warps a program), beside the host CPU (estimated from a prefix of the rounds);
  the kernel's agreement with the scan, and how close both stay to a float64 loop over a whole a9a pass
  (``benchmarks/kernel_numerics.py``);
* full ACOG-I over a protein-shaped stream (d = 357, beyond the kernel's registers), 220 runs, on the scan a round
  and 8 rounds an iteration, with the share of the device's peak bandwidth its state traffic reaches;
* a ``jax.profiler`` trace of 64 rounds of each path, parsed here: kernels per round, device time against wall
  time per round; Nsight Compute's registers, spills, occupancy, speed of light and warp states of the kernel
  (1 and 4 rounds an iteration), where ``ncu`` is installed;
* the kernel's counts and states (its loop taking 1 and 4 rounds an iteration), and the unrolled scan's, against
  the scan's on the same orders (counts equal but for rounds whose score is within 1e-5 of 0, relative; states
  within 1e-5 of each run's scale; whether the bits are the same);
* a toy scan's cost per iteration (the launch cost that the kernel path removes), and KOIL's 8,820-run (σ, C)
  grid on letter, run whole when the rest of the budget allows, else estimated from a prefix.

``--only`` runs the steps named (and ``scans`` adds the scan variants to the two sweeps' kernel shapes).

    python benchmarks/gpu_window.py                      # on the GPU: about 6 minutes, figures in benchmarks/results/
    python benchmarks/gpu_window.py --budget 300 --json out.json
    python benchmarks/gpu_window.py --cpu-dry-run        # every step at a tiny size on the CPU (the kernel interpreted)

The data it needs travel with the tree (``benchmarks/data``: a9a and the KOIL authors' letter); where jcsol is not
installed, the tree's own package is imported.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gzip
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
if importlib.util.find_spec("jcsol") is None:  # not installed (a bare device machine): the tree's own package
    sys.path.insert(0, str(HERE.parent))
PEAK_TBS = {"H100 PCIe": 2.0, "H100 NVL": 3.9, "H100": 3.35, "H200": 4.8, "A100": 1.55}  # first match wins
RTOL, EPS = 1e-5, 1e-5
COMMAND_BUFFERS = "FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,WHILE,CONDITIONAL"


class Window:
    """The budget, the printed lines and the JSON record of one window."""

    def __init__(self, budget: float, json_path: Path, dry: bool):
        self.start, self.budget, self.json_path, self.dry = time.perf_counter(), budget, json_path, dry
        self.record: dict = {"dry_run": dry, "budget_s": budget, "steps": {}, "lines": []}

    def left(self) -> float:
        return self.budget - (time.perf_counter() - self.start)

    def say(self, line: str) -> None:
        line = f"[{time.perf_counter() - self.start:6.1f} s] {line}"
        print(line, flush=True)
        self.record["lines"].append(line)

    def step(self, name: str, needs: float, fn, *args) -> dict | None:
        """Runs ``fn(*args)`` as step ``name`` if ``needs`` seconds are left; records its figures or its error."""
        if self.left() < needs:
            self.say(f"{name}: skipped ({self.left():.0f} s left, needs about {needs:.0f} s)")
            self.record["steps"][name] = {"skipped": f"needs about {needs:.0f} s, {self.left():.0f} s left"}
            self.save()
            return None
        self.say(f"{name}: started")
        try:
            figures = fn(*args)
        except Exception as err:  # a step that fails leaves the others their time
            figures = {"error": f"{type(err).__name__}: {err}"[:2000]}
            self.say(f"{name}: FAILED {figures['error'][:300]}")
        self.record["steps"][name] = figures
        self.save()
        return figures

    def save(self) -> None:
        self.json_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.json_path.with_name(self.json_path.name + ".tmp")
        tmp.write_text(json.dumps(self.record, indent=1, default=str))
        os.replace(tmp, self.json_path)


# ----------------------------------------------------------------------------------------------------------
# data and sizes
# ----------------------------------------------------------------------------------------------------------


def sizes(dry: bool) -> dict:
    """The full window's sizes, or the dry run's tiny ones."""
    if dry:
        return dict(
            rows=256,
            perms=2,
            decades=3,
            protein=(128, 37),
            koil_side=2,
            koil_folds=2,
            koil_rounds=64,
            profile_rounds=8,
            toy_rounds=200,
            repeats=0,
        )
    return dict(
        rows=None,
        perms=20,
        decades=11,
        protein=(17_766, 357),
        koil_side=21,
        koil_folds=20,
        koil_rounds=None,
        profile_rounds=64,
        toy_rounds=20_000,
        repeats=3,
    )


def a9a(data_dir: Path, rows: int | None):
    import jcsol

    X1, y1 = jcsol.datasets.load(data_dir / "a9a.gz", n_features=123)
    X2, y2 = jcsol.datasets.load(data_dir / "a9a.t.gz", n_features=123)
    X, y = np.concatenate([X1, X2]), np.concatenate([y1, y2])
    return (X, y) if rows is None else (X[:rows], y[:rows])


def orders(n: int, perms: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(n) for _ in range(perms)]).astype(np.int32)


def etas(k: int) -> np.ndarray:
    import jcsol

    values = jcsol.decades()
    return values if k >= len(values) else values[:: max(1, (len(values) - 1) // (k - 1))][:k]


# ----------------------------------------------------------------------------------------------------------
# measuring
# ----------------------------------------------------------------------------------------------------------


def timed(learner, X, y, perms, path, repeats: int, **kwargs) -> dict:
    """A first call (compilation and run), then ``repeats`` compiled calls: their median run and wall times (the
    first call's with no repeat)."""
    import jcsol

    start = time.perf_counter()
    first = jcsol.run(learner, X, y, perms=perms, path=path, **kwargs)
    first_wall = time.perf_counter() - start
    res, runs, walls = first, [first.time_run], [first_wall]  # the first call's, unless compiled calls follow
    if repeats:
        runs, walls = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        res = jcsol.run(learner, X, y, perms=perms, path=path, **kwargs)
        walls.append(time.perf_counter() - start)
        runs.append(res.time_run)
    run_s, wall_s = float(np.median(runs)), float(np.median(walls))
    rounds = perms.shape[1]
    return {
        "runs": res.n_runs,
        "rounds": rounds,
        "first_call_s": first_wall,
        "compile_s": first.time_compile,
        "run_s": run_s,
        "wall_s": wall_s,
        "host_share": (wall_s - run_s) / wall_s,
        "updates_per_s": res.n_runs * rounds / run_s,
        "us_per_round": run_s / rounds * 1e6,
        "_result": res,
    }


def public(figures: dict) -> dict:
    return {k: v for k, v in figures.items() if not k.startswith("_")}


#: The kernel shapes compared by default, ``(block, warps, stages, unroll)``: the GPU's (one run a program on one
#: warp, ``benchmarks/results/gpu_window-h200-2026-11-27.md``) taking 1, 2, 4 and 8 rounds an iteration of its loop,
#: and 2 runs a program 4 rounds an iteration. The SASS of the loop (``benchmarks/kernel_code.py``) waits every round
#: for the row loaded during the round before; taking rounds in groups gives a row's load a group's rounds.
KERNELS = ((1, 1, 1, 1), (1, 1, 1, 2), (1, 1, 1, 4), (1, 1, 1, 8), (2, 1, 1, 4))


def kernel_shapes(spec: str) -> tuple:
    """``--kernels``' value: ``block:warps:stages[:unroll]`` shapes, comma-separated (block ``grid``: every grid
    point of a permutation in one program; unroll 1 when left out)."""
    shapes = []
    for item in spec.split(","):
        block, warps, stages, *unroll = item.split(":")
        shapes.append((None if block == "grid" else int(block), int(warps), int(stages), int(*unroll or (1,))))
    return tuple(shapes)


def variants(dry: bool, kernels: tuple = KERNELS, scans: bool = True) -> list[tuple[str, object]]:
    """The paths compared: the scan as is, with command buffers, unrolled (unless not ``scans``); the kernel at
    each shape of ``kernels`` (the dry run: one of each kind)."""
    import jcsol

    if dry:
        return [
            ("scan", jcsol.Scan()),
            ("scan unroll=2", jcsol.Scan(unroll=2)),
            ("kernel", jcsol.Kernel()),
            ("kernel block=4 warps=1", jcsol.Kernel(block=4, num_warps=1)),
            ("kernel unroll=4", jcsol.Kernel(unroll=4)),
        ]
    out: list[tuple[str, object]] = []
    if scans:
        out += [
            ("scan", jcsol.Scan()),
            ("scan+cmdbuf", jcsol.Scan(compiler_options={"xla_gpu_enable_command_buffer": COMMAND_BUFFERS})),
            ("scan unroll=8", jcsol.Scan(unroll=8)),
        ]
    for block, warps, stages, unroll in kernels:
        label = f"kernel block={block or 'grid'} warps={warps}" + (f" stages={stages}" if stages != 1 else "")
        label += f" unroll={unroll}" if unroll != 1 else ""
        out.append((label, jcsol.Kernel(block=block, num_warps=warps, num_stages=stages, unroll=unroll)))
    return out


def compare_paths(window: Window, name: str, learner, X, y, perms, dry: bool, cpu: dict | None, paths) -> dict:
    """Every path of ``paths`` (:func:`variants`) on one workload, each line printed with its ratio to the host
    CPU."""
    out = {}
    for label, path in paths:
        needs = 5.0 if dry else 20.0
        if window.left() < needs:
            out[label] = {"skipped": "budget"}
            continue
        try:
            figures = public(timed(learner, X, y, perms, path, sizes(dry)["repeats"]))
        except Exception as err:
            out[label] = {"error": f"{type(err).__name__}: {err}"[:1500]}
            window.say(f"  {name} {label}: FAILED {out[label]['error'][:200]}")
            continue
        base = (cpu or {}).get(name)
        if base:
            figures["speedup_vs_host_cpu"] = base["run_s"] / figures["run_s"]
        out[label] = figures
        ratio = f", {figures['speedup_vs_host_cpu']:.1f}× the host CPU" if base else ""
        window.say(
            f"  {name} {label}: run {figures['run_s'] * 1e3:.1f} ms (wall {figures['wall_s'] * 1e3:.1f}, compile "
            f"{figures['compile_s']:.1f} s), {figures['updates_per_s']:.3g} updates/s, "
            f"{figures['us_per_round']:.2f} µs/round{ratio}"
        )
    failed = out.get("scan+cmdbuf", {}).get("error")
    if failed and window.left() > 60 and name == "a9a ACOG-I-diag 220":  # the option as a process-wide flag instead
        out["scan+cmdbuf (XLA_FLAGS)"] = flagged_scan(window, cpu)
    return out


def fastest(steps: dict) -> str | None:
    """The path whose run time summed over the two a9a ACOG-I-diag sweeps is least, of those that ran both."""
    sweeps = [steps.get(name) or {} for name in ("a9a ACOG-I-diag 220", "a9a ACOG-I-diag 2420")]
    totals = {
        label: sum(sweep[label]["run_s"] for sweep in sweeps)
        for label in sweeps[0]
        if all("run_s" in (sweep.get(label) or {}) for sweep in sweeps)
    }
    return min(totals, key=totals.__getitem__) if totals else None


def flagged_scan(window: Window, cpu: dict | None) -> dict:
    """The 220-run scan in a child process whose ``XLA_FLAGS`` turn XLA's command buffers on (for XLA versions
    that take the option only that way)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "flagged.json"
        flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_gpu_enable_command_buffer={COMMAND_BUFFERS}".strip()
        command = [sys.executable, __file__, "--scan-worker", str(out), "--data-dir", str(DATA)]
        try:
            subprocess.run(
                command, env=dict(os.environ, XLA_FLAGS=flags), check=True, timeout=max(30, window.left() - 20)
            )
        except (subprocess.SubprocessError, OSError) as err:
            return {"error": f"{type(err).__name__}: {err}"[:1500]}
        figures = json.loads(out.read_text())
    base = (cpu or {}).get("a9a ACOG-I-diag 220")
    if base:
        figures["speedup_vs_host_cpu"] = base["run_s"] / figures["run_s"]
    window.say(
        f"  scan+cmdbuf (XLA_FLAGS): run {figures['run_s'] * 1e3:.1f} ms, {figures['updates_per_s']:.3g} updates/s"
    )
    return figures


def scan_worker(data_dir: Path) -> dict:
    import jcsol

    X, y = a9a(data_dir, None)
    return public(timed(jcsol.ACOG(eta=etas(11), diagonal=True), X, y, orders(len(y), 20), "scan", 3))


#: The kernel's loop taking 1 and 4 rounds an iteration, profiled by ``ncu`` (in this order: a launch each).
NCU_UNROLLS = (1, 4)


def kernel_worker(data_dir: Path) -> dict:
    """The 220-run protocol's first 2,048 rounds (one chunk: one launch) on the kernel path, once for each of
    :data:`NCU_UNROLLS` (for ``ncu``)."""
    import jcsol

    X, y = a9a(data_dir, None)
    learner, short = jcsol.ACOG(eta=etas(11), diagonal=True), orders(len(y), 20)[:, :2048]
    return {u: public(timed(learner, X, y, short, jcsol.Kernel(unroll=u), 0)) for u in NCU_UNROLLS}


def nsight_compute(window: Window) -> dict:
    """Nsight Compute's launch statistics (registers, shared memory, spills), occupancy, speed of light and warp
    states (what the warps stall on) of the kernel path's kernel, its loop taking 1 and 4 rounds an iteration,
    from a child process running :func:`kernel_worker` (the clocks left as they are)."""
    import shutil

    ncu = shutil.which("ncu") or next(iter(sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"))), None)
    if ncu is None:
        return {"error": "ncu is not on this machine"}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "kernel.json"
        command = [
            str(ncu),
            "--clock-control",
            "none",
            "--kernel-name",
            "regex:jcsol_",
            "--launch-count",
            str(len(NCU_UNROLLS)),
            "--section",
            "LaunchStats",
            "--section",
            "Occupancy",
            "--section",
            "SpeedOfLight",
            "--section",
            "WarpStateStats",
            sys.executable,
            __file__,
            "--kernel-worker",
            str(out),
            "--data-dir",
            str(DATA),
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=max(30, window.left() - 10))
    report = done.stdout[-12000:]
    for line in report.splitlines():
        keys = ("Registers Per Thread", "Stack Size", "Achieved Occupancy", "Duration", "Warp Cycles Per Issued")
        if any(key in line for key in keys):
            window.say(f"  ncu: {' '.join(line.split())}")
    return {"returncode": done.returncode, "report": report, "stderr": done.stderr[-3000:]}


def agreement(learner, X, y, perms, kernel_path, bits_of=None) -> dict:
    """The result of ``kernel_path`` (the kernel, or another scan) against the scan's as is on the same orders (the
    tolerances of tests/test_kernel.py), and whether its bits are the scan's (and ``bits_of``'s, a path whose
    arithmetic it keeps)."""
    import jax

    import jcsol

    def same(a, b) -> bool:
        return np.array_equal(a.counts, b.counts) and all(
            np.array_equal(u, v) for u, v in zip(jax.tree.leaves(a.states), jax.tree.leaves(b.states))
        )

    scan = jcsol.run(learner, X, y, perms=perms, path=jcsol.Scan(), record_scores=True, curve_points=8)
    kernel = jcsol.run(learner, X, y, perms=perms, path=kernel_path, record_scores=True, curve_points=8)
    same_bits = same(scan, kernel)
    kept = {}
    if bits_of is not None:
        other = jcsol.run(learner, X, y, perms=perms, path=bits_of, record_scores=True, curve_points=8)
        kept = {"same_bits_as_reference_path": same(other, kernel)}
    scores = scan.scores.reshape(-1, scan.scores.shape[-1])
    scale = np.abs(scores).max(axis=1, keepdims=True)
    near_rounds = (np.abs(scores) < EPS * scale) & (scores != 0)
    near = near_rounds.any(axis=1).reshape(scan.counts.shape[:-1])
    clear = ~near
    worst = 0.0
    for a, b in zip(jax.tree.leaves(scan.states), jax.tree.leaves(kernel.states)):
        a, b = np.asarray(a, np.float64)[clear], np.asarray(b, np.float64)[clear]
        a, b = a.reshape(a.shape[0], -1), b.reshape(b.shape[0], -1)
        scale_ = np.maximum(np.abs(a).max(axis=1, keepdims=True), np.finfo(np.float32).tiny)
        worst = max(worst, float((np.abs(a - b) / scale_).max(initial=0.0)))
    return {
        "runs": int(near.size),
        "runs_with_near_zero_scores": int(near.sum()),
        "near_zero_rounds": int(near_rounds.sum()),
        "counts_equal_in_clear_runs": bool(np.array_equal(scan.counts[clear], kernel.counts[clear])),
        "runs_whose_counts_differ": int((scan.counts != kernel.counts).any(axis=-1).sum()),
        "curve_equal_in_clear_runs": bool(np.array_equal(scan.curve[clear], kernel.curve[clear])),
        "state_max_relative_error": worst,
        "within_tolerance": bool(worst <= RTOL),
        "same_bits": bool(same_bits),
        **kept,
    }


def parse_trace(log_dir: Path, rounds: int, wall_s: float) -> dict:
    """Kernels per round and device time per round from a ``jax.profiler`` trace (its Chrome-trace JSON)."""
    files = sorted(log_dir.rglob("*trace.json.gz"))
    if not files:
        return {"error": "the profiler wrote no trace.json.gz"}
    events = json.loads(gzip.decompress(files[-1].read_bytes()))
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    names = {
        e["pid"]: e.get("args", {}).get("name", "")
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    device_pids = {pid for pid, name in names.items() if "/device:" in name and "CPU" not in name.upper()}
    kernels = [e for e in events if e.get("ph") == "X" and e.get("pid") in device_pids]
    intervals = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in kernels)
    busy, end = 0.0, -np.inf
    for a, b in intervals:  # the union of the kernels' intervals, in µs
        if b > end:
            busy += b - max(a, end)
            end = b
    top: dict[str, float] = {}
    for e in kernels:
        top[e["name"]] = top.get(e["name"], 0.0) + float(e.get("dur", 0))
    return {
        "device_processes": sorted(names[p] for p in device_pids),
        "kernels": len(kernels),
        "kernels_per_round": len(kernels) / rounds,
        "device_us_per_round": busy / rounds,
        "wall_us_per_round": wall_s / rounds * 1e6,
        "device_share_of_wall": busy / (wall_s * 1e6) if wall_s else None,
        "top_kernels_us": dict(sorted(top.items(), key=lambda kv: -kv[1])[:8]),
    }


def profile(learner, X, y, perms, path) -> dict:
    import jax

    import jcsol

    jcsol.run(learner, X, y, perms=perms, path=path)  # compiled outside the trace
    with tempfile.TemporaryDirectory() as tmp:
        with jax.profiler.trace(tmp, create_perfetto_trace=True):
            start = time.perf_counter()
            jcsol.run(learner, X, y, perms=perms, path=path)
            wall = time.perf_counter() - start
        return parse_trace(Path(tmp), perms.shape[1], wall)


def toy_scan(rounds: int) -> dict:
    """µs per iteration of a ``lax.scan`` of a scalar body and of a body of four fused-apart operations."""
    import jax
    import jax.numpy as jnp

    def per_iteration(body, init):
        f = jax.jit(lambda c: jax.lax.scan(lambda c, _: (body(c), None), c, None, length=rounds)[0])
        jax.block_until_ready(f(init))
        start = time.perf_counter()
        jax.block_until_ready(f(init))
        return (time.perf_counter() - start) / rounds * 1e6

    scalar = per_iteration(lambda x: x * 0.999 + 1.0, jnp.float32(0))
    w = jnp.ones((220, 128), jnp.float32)
    # a dot, a reduction and two elementwise passes: about as many kernels as a first-order round over a grid
    matrix = per_iteration(lambda w: w + 1e-3 * jnp.tanh(w @ w[0])[:, None] * jnp.sort(w[0]), w)
    return {"rounds": rounds, "scalar_us_per_iteration": scalar, "round_like_us_per_iteration": matrix}


def cpu_baseline(data_dir: Path, dry: bool, n_perm: int, n_eta: int, rows) -> dict:
    """The host CPU's run times of the workloads compared, in a child process (``JAX_PLATFORMS=cpu``)."""
    if dry:
        return cpu_worker(data_dir, dry, n_perm, n_eta, rows)
    failures = []
    # later tries keep XLA's CPU defaults, then one CPU device, in case the installed jaxlib fails on either
    tries = ({}, {"JCSOL_XLA_CPU": "default"}, {"JCSOL_CPU_DEVICES": "1"})
    for hidden in ({"JAX_PLATFORMS": "cpu", **extra} for extra in tries):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "cpu.json"
            command = [
                sys.executable,
                "-X",
                "faulthandler",
                __file__,
                "--cpu-worker",
                str(out),
                "--data-dir",
                str(data_dir),
            ]
            done = subprocess.run(command, env=dict(os.environ, **hidden), capture_output=True, text=True, timeout=240)
            if done.returncode == 0:
                return {**json.loads(out.read_text()), "environment": hidden, "failed_tries": failures}
            failures.append({"environment": hidden, "returncode": done.returncode, "stderr": done.stderr[-3000:]})
    raise RuntimeError(f"the host CPU's child process failed: {json.dumps(failures)[-3500:]}")


CPU_PROGRAM = """
import json, sys
import jax, jax.numpy as jnp
devices, options = json.loads(sys.argv[1]), json.loads(sys.argv[2])
jax.config.update("jax_num_cpu_devices", devices)
def body(c, x):
    return c * 0.999 + jnp.tanh(c @ x), None
f = jax.jit(lambda c, xs: jax.lax.scan(body, c, xs)[0], compiler_options=options)
mesh = jax.make_mesh((devices,), ("runs",))
c = jax.device_put(jnp.ones((devices, 8)), jax.NamedSharding(mesh, jax.P("runs")))
print(float(f(c, jnp.full((16, 8, 8), 0.01)).sum()))
"""
GERMAN = (
    "import jcsol; X, y = jcsol.datasets.load('german'); "
    "print(jcsol.run(jcsol.ACOG(eta=1e-2, diagonal=True), X, y, perms=4).counts.sum())"
)


def cpu_options(dry: bool = False) -> dict:
    """What the installed jaxlib's CPU compiler takes, each in a child process (``JAX_PLATFORMS=cpu``): a small scan
    on 1 and 4 devices with none or each of jcsol's XLA CPU options, and a German run on 1, 2 and every core's
    device, under jcsol's options and XLA's defaults. A child that crashes leaves its return code and the end of
    its error output. The dry run tries the first of each kind."""
    import jcsol.xla_cpu

    tries = {"none": {}, **{name: {name: value} for name, value in jcsol.xla_cpu.compile_options().items()}}
    runs = [
        (f"small scan, {n} device(s), {label}", [CPU_PROGRAM, str(n), json.dumps(options)], {})
        for n in (1, 4)
        for label, options in tries.items()
    ]
    for devices in ("1", "2", ""):
        for label, extra in (("jcsol's options", {}), ("XLA's defaults", {"JCSOL_XLA_CPU": "default"})):
            name = f"German run, {devices or 'every core'} device(s), {label}"
            runs.append((name, [GERMAN], {"JCSOL_CPU_DEVICES": devices, **extra}))
    if dry:
        runs = [runs[0], runs[-2]]  # a small scan on one device, a German run on every core's
    out = {}
    for name, program, extra in runs:
        env = dict(os.environ, JAX_PLATFORMS="cpu", **extra)
        command = [sys.executable, "-X", "faulthandler", "-c", *program]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        out[name] = {"returncode": done.returncode, "stderr": done.stderr[-1500:]}
    return out


def cpu_worker(data_dir: Path, dry: bool, n_perm: int, n_eta: int, rows) -> dict:
    import jax

    import jcsol

    X, y = a9a(data_dir, rows)
    perms = orders(len(y), n_perm)
    learner = jcsol.ACOG(eta=etas(n_eta), diagonal=True)
    out = {"device": f"{len(jax.devices())} × {jax.devices()[0].device_kind}"}
    out["a9a ACOG-I-diag 220"] = public(timed(learner, X, y, perms, "scan", 1))
    grid = jcsol.grid(jcsol.ACOG(diagonal=True), eta=etas(n_eta), gamma=etas(n_eta))
    out["a9a ACOG-I-diag 2420"] = public(timed(grid, X, y, perms, "scan", 1))
    prefix = min(FULL_CPU_ROUNDS, perms.shape[1])  # full Σ on the CPU: a prefix of the rounds, scaled
    full = public(timed(jcsol.ACOG(eta=etas(n_eta), loss="II"), X, y, perms[:, :prefix], "scan", 1))
    full["estimated_from_rounds"] = prefix
    full["run_s"] *= perms.shape[1] / prefix
    out["a9a ACOG-II full 220"] = full
    return out


#: The rounds of full ACOG-II the host CPU runs, its time scaled to the whole stream's.
FULL_CPU_ROUNDS = 4096


def full_paths(dry: bool) -> list[tuple[str, object]]:
    """The paths of the full-covariance comparison: the GPU's scan, and the kernel at its default warps (8 for
    d = 123: Σ at 64 registers a thread, :func:`jcsol.core.triton.warps`) and at 4 and 16. The machine code
    (``benchmarks/kernel_code.py --learner ACOG-II --warps 4,8,16 --unroll 1``) has 252, 167 and 118 registers a
    thread, no spills, 614, 401 and 296 instructions a warp-round: modelled at 39.6 ms for 8 warps."""
    import jcsol

    if dry:
        return [("scan unroll=8", jcsol.Scan(unroll=8)), ("kernel", jcsol.Kernel())]
    return [
        ("scan unroll=8", jcsol.Scan(unroll=8)),
        ("kernel", jcsol.Kernel()),
        ("kernel warps=4", jcsol.Kernel(num_warps=4)),
        ("kernel warps=16", jcsol.Kernel(num_warps=16)),
    ]


def numerics(X, y) -> dict:
    """``benchmarks/kernel_numerics.py``'s comparison: full ACOG-II (η = 1) over the rows in their order, the scan
    and the kernel against a float64 loop."""
    sys.path.insert(0, str(HERE))
    import kernel_numerics

    return kernel_numerics.compare(X, y, loss="II", eta=1.0, tol=EPS)


def full_covariance(X, y, perms, n_eta: int, peak: float | None, unroll: int = 1) -> dict:
    """Full ACOG-I, 220 runs, on the scan unrolled ``unroll`` times: run time and the share of peak bandwidth its
    state traffic reaches (each round reads and writes every run's Σ and μ)."""
    import jcsol

    figures = public(timed(jcsol.ACOG(eta=etas(n_eta)), X, y, perms, jcsol.Scan(unroll=unroll), 1))
    d = X.shape[1]
    bytes_per_round = 2 * 4 * (d * d + d) * figures["runs"]
    figures["state_tbs"] = bytes_per_round * figures["rounds"] / figures["run_s"] / 1e12
    figures["peak_share"] = None if peak is None else figures["state_tbs"] / peak
    return figures


def koil(data_dir: Path, window: Window, dry: bool, unroll: int = 1) -> dict:
    """KOIL RS++'s (σ, C) grid on letter's 5 × 4 training folds, on the scan unrolled ``unroll`` times: a prefix
    timed, the whole run when it fits."""
    import jcsol
    from jcsol.datasets import load_koil
    from jcsol.protocols import cv_splits

    s = sizes(dry)
    X, y = load_koil("letter", data_dir / "koil")
    folds = cv_splits(y, folds=5, repeats=4, seed=0).train[: s["koil_folds"]]
    side = 2.0 ** np.linspace(-10, 10, s["koil_side"])
    learner = jcsol.grid(
        jcsol.KOIL(eta=0.01, C=16.0, sigma=0.25, budget_pos=100, budget_neg=100, k=10), sigma=side, C=side
    )
    objective = jcsol.Sum(rho="laplace")
    prefix = folds[:, : (64 if dry else 500)]
    path = jcsol.Scan(unroll=unroll)
    first = jcsol.run(learner, X, y, perms=prefix, objective=objective, path=path)
    timed_prefix = jcsol.run(learner, X, y, perms=prefix, objective=objective, path=path)
    rounds = folds.shape[1] if s["koil_rounds"] is None else s["koil_rounds"]
    estimate = timed_prefix.time_run / prefix.shape[1] * rounds + first.time_compile
    out = {
        "runs": timed_prefix.n_runs,
        "rounds": rounds,
        "prefix_rounds": prefix.shape[1],
        "estimated_s": estimate,
        "target_s": 60.0,
    }
    window.say(f"  KOIL {out['runs']} runs × {rounds} rounds: about {estimate:.1f} s from a prefix")
    if window.left() > estimate * 1.3 + 10:
        res = jcsol.run(learner, X, y, perms=folds[:, :rounds], objective=objective, path=path)
        out.update(measured_s=res.time_run + res.time_compile, run_s=res.time_run, compile_s=res.time_compile)
    return out


def environment() -> dict:
    import jax
    import jaxlib

    import jcsol

    device = jax.devices()[0]
    out = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "platform": device.platform,
        "device": getattr(device, "device_kind", device.platform),
        "devices": len(jax.devices()),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "jcsol": jcsol.__version__,
        "python": platform.python_version(),
    }
    with contextlib.suppress(Exception):
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        out["nvidia_smi"] = smi.stdout.strip()
    with contextlib.suppress(Exception):
        out["revision"] = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE, timeout=10
        ).stdout.strip()
    return out


# ----------------------------------------------------------------------------------------------------------
# the window
# ----------------------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=420.0, help="seconds the window may take (default 420)")
    parser.add_argument("--json", type=Path, help="the figures (default benchmarks/results/gpu_window-<date>.json)")
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--cpu-dry-run", action="store_true", help="every step at a tiny size, on the CPU")
    parser.add_argument(
        "--kernels",
        type=kernel_shapes,
        default=KERNELS,
        help="the kernel's shapes compared, block:warps:stages[:unroll],… (default: five shapes)",
    )
    parser.add_argument("--only", help="the steps run, comma-separated (default: every step)")
    parser.add_argument("--cpu-worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--scan-worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--kernel-worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cpu_worker:
        args.cpu_worker.write_text(json.dumps(cpu_worker(args.data_dir, False, 20, 11, None)))
        return 0
    if args.scan_worker:
        args.scan_worker.write_text(json.dumps(scan_worker(args.data_dir)))
        return 0
    if args.kernel_worker:
        args.kernel_worker.write_text(json.dumps(kernel_worker(args.data_dir)))
        return 0
    if args.cpu_dry_run:
        os.environ["JAX_PLATFORMS"] = "cpu"
    import jax

    import jcsol

    dry = args.cpu_dry_run
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    json_path = args.json or HERE / "results" / f"gpu_window-{'dry-' if dry else ''}{stamp}.json"
    window = Window(args.budget, json_path, dry)
    env = window.step("environment", 0, environment)
    window.say(f"  {env}")
    if not dry and jax.devices()[0].platform != "gpu":
        window.say("no GPU: the default JAX backend is the CPU; use --cpu-dry-run to check the script here")
        return 2
    s = sizes(dry)
    X, y = a9a(args.data_dir, s["rows"])
    perms = orders(len(y), s["perms"])
    learner = jcsol.ACOG(eta=etas(s["decades"]), diagonal=True)
    grid = jcsol.grid(jcsol.ACOG(diagonal=True), eta=etas(s["decades"]), gamma=etas(s["decades"]))
    peak = next((v for k, v in PEAK_TBS.items() if k in str(env.get("device", ""))), None) if env else None

    chosen = None if args.only is None else set(args.only.split(","))

    def step(name, needs, fn, *fn_args):
        return window.step(name, needs, fn, *fn_args) if chosen is None or name in chosen else None

    step("toy scan", 10, toy_scan, s["toy_rounds"])
    options = step("CPU options", 30, cpu_options, dry)
    window.say(f"  { ({k: v['returncode'] for k, v in options.items()} if options else None) }")
    cpu = step("host CPU", 90 if not dry else 5, cpu_baseline, args.data_dir, dry, s["perms"], s["decades"], s["rows"])
    paths = variants(dry, args.kernels, scans=chosen is None or "scans" in chosen)
    step("a9a ACOG-I-diag 220", 60, compare_paths, window, "a9a ACOG-I-diag 220", learner, X, y, perms, dry, cpu, paths)
    step("agreement a9a 220", 20, agreement, learner, X, y, perms, jcsol.Kernel())
    unrolled = jcsol.Kernel(unroll=4)
    step("agreement a9a 220 kernel unroll=4", 25, agreement, learner, X, y, perms, unrolled, jcsol.Kernel())
    step("agreement a9a 220 unroll=8", 20, agreement, learner, X, y, perms, jcsol.Scan(unroll=8))
    short = perms[:, : s["profile_rounds"]]
    step("profile scan", 15, profile, learner, X, y, short, jcsol.Scan())
    step("profile kernel", 15, profile, learner, X, y, short, jcsol.Kernel())
    step("a9a ACOG-I-diag 2420", 60, compare_paths, window, "a9a ACOG-I-diag 2420", grid, X, y, perms, dry, cpu, paths)
    window.say(f"  fastest on both sweeps: {fastest(window.record['steps'])}")
    full = jcsol.ACOG(eta=etas(s["decades"]), loss="II")
    name = "a9a ACOG-II full 220"
    step(name, 90, compare_paths, window, name, full, X, y, perms, dry, cpu, full_paths(dry))
    step("agreement a9a ACOG-II full 220", 30, agreement, full, X, y, perms, jcsol.Kernel())
    step("numerics a9a ACOG-II full", 30, numerics, X, y)
    rows, d = s["protein"]
    from jcsol.datasets.synthetic import linear_stream

    Xp, yp = linear_stream(rows, d, 1 / 2.7, seed=1)
    for unroll, label in ((1, ""), (8, " unroll=8")):
        step(
            f"protein ACOG-I full 220{label}",
            60,
            full_covariance,
            *(Xp, yp, orders(rows, s["perms"]), s["decades"], peak, unroll),
        )
    if not dry:
        step("ncu kernel", 60, nsight_compute, window)
    step("letter KOIL grid", 30, koil, args.data_dir, window, dry)
    window.say(f"figures in {json_path} ({window.left():.0f} s of the budget left)")
    window.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
