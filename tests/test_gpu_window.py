"""The device window (``benchmarks/gpu_window.py``) runs every step at a tiny size on the CPU, so that a window on
a GPU cannot die on a Python error; and its trace parser reads a GPU trace."""

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import gpu_window

STEPS = {
    "environment",
    "toy scan",
    "CPU options",
    "host CPU",
    "a9a ACOG-I-diag 220",
    "agreement a9a 220",
    "agreement a9a 220 kernel unroll=4",
    "agreement a9a 220 unroll=8",
    "profile scan",
    "profile kernel",
    "a9a ACOG-I-diag 2420",
    "a9a ACOG-II full 220",
    "agreement a9a ACOG-II full 220",
    "numerics a9a ACOG-II full",
    "protein ACOG-I full 220",
    "protein ACOG-I full 220 unroll=8",
    "letter KOIL grid",
}


def test_the_dry_run_runs_every_step(tmp_path):
    """In a child process as on the device: the data from the tree, and no ``mmh3`` (the device has none)."""
    out = tmp_path / "window.json"
    code = (
        "import sys, runpy; sys.modules['mmh3'] = None; "
        f"sys.argv = ['gpu_window.py', '--cpu-dry-run', '--json', {str(out)!r}]; "
        f"runpy.run_path({str(ROOT / 'benchmarks' / 'gpu_window.py')!r}, run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    record = json.loads(out.read_text())
    steps = record["steps"]
    assert set(steps) == STEPS
    failed = {k: v for k, v in steps.items() if isinstance(v, dict) and ("error" in v or "skipped" in v)}
    assert not failed
    for workload in ("a9a ACOG-I-diag 220", "a9a ACOG-I-diag 2420"):
        assert {"scan", "kernel"} <= set(steps[workload])
        assert all("error" not in v and v["updates_per_s"] > 0 for v in steps[workload].values())
    agreement = steps["agreement a9a 220"]
    assert agreement["within_tolerance"]
    assert agreement["counts_equal_in_clear_runs"]
    unrolled = steps["agreement a9a 220 kernel unroll=4"]
    assert unrolled["within_tolerance"]
    assert unrolled["same_bits_as_reference_path"]  # a round's arithmetic whatever the rounds an iteration
    assert steps["agreement a9a 220 unroll=8"]["same_bits"]  # unrolling keeps the scan's bits
    assert {"scan unroll=8", "kernel"} <= set(steps["a9a ACOG-II full 220"])
    assert steps["agreement a9a ACOG-II full 220"]["within_tolerance"]
    numerics = steps["numerics a9a ACOG-II full"]
    assert numerics["kernel_sigma_error"] <= 2 * numerics["scan_sigma_error"] + 1e-6
    assert [v["returncode"] for v in steps["CPU options"].values()] == [0, 0]
    assert "started" in done.stdout
    assert "figures in" in done.stdout  # a line per step as it goes
    assert "fastest on both sweeps: " in done.stdout


def test_kernel_shapes_are_read_from_the_command_line():
    assert gpu_window.kernel_shapes("1:1:1,grid:4:2,2:1:1:4") == ((1, 1, 1, 1), (None, 4, 2, 1), (2, 1, 1, 4))
    shapes = ((1, 1, 2, 1), (2, 1, 1, 4))
    labels = [label for label, _ in gpu_window.variants(False, shapes, scans=False)]
    assert labels == ["kernel block=1 warps=1 stages=2", "kernel block=2 warps=1 unroll=4"]


def test_the_fastest_path_is_the_least_total_over_both_sweeps():
    steps = {
        "a9a ACOG-I-diag 220": {"a": {"run_s": 1.0}, "b": {"run_s": 2.0}, "c": {"run_s": 0.1}},
        "a9a ACOG-I-diag 2420": {"a": {"run_s": 3.0}, "b": {"run_s": 1.5}, "c": {"error": "failed"}},
    }
    assert gpu_window.fastest(steps) == "b"  # 3.5 against 4.0; c did not run both
    assert gpu_window.fastest({}) is None


def test_a_step_past_the_budget_is_skipped(tmp_path):
    window = gpu_window.Window(budget=5.0, json_path=tmp_path / "w.json", dry=True)
    assert window.step("cheap", 1.0, lambda: {"x": 1}) == {"x": 1}
    assert window.step("dear", 60.0, lambda: {"x": 2}) is None
    assert window.step("broken", 1.0, lambda: 1 / 0) == {"error": "ZeroDivisionError: division by zero"}
    record = json.loads((tmp_path / "w.json").read_text())
    assert record["steps"]["dear"]["skipped"].startswith("needs about 60 s")


def test_the_trace_parser_reads_a_gpu_trace(tmp_path):
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/host:CPU"}},
        {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "/device:GPU:0"}},
        {"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 500, "name": "host work"},
        {"ph": "X", "pid": 7, "tid": 2, "ts": 10, "dur": 4, "name": "loop_fusion"},
        {"ph": "X", "pid": 7, "tid": 3, "ts": 12, "dur": 4, "name": "loop_fusion"},  # overlaps: 6 µs busy
        {"ph": "X", "pid": 7, "tid": 2, "ts": 30, "dur": 2, "name": "dot"},
    ]
    folder = tmp_path / "plugins" / "profile" / "run"
    folder.mkdir(parents=True)
    (folder / "host.trace.json.gz").write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    parsed = gpu_window.parse_trace(tmp_path, rounds=2, wall_s=1e-4)
    assert parsed["kernels"] == 3
    assert parsed["kernels_per_round"] == 1.5
    assert parsed["device_us_per_round"] == pytest.approx(4.0)  # (6 + 2) µs over 2 rounds
    assert parsed["device_share_of_wall"] == pytest.approx(8 / 100)
    assert parsed["top_kernels_us"] == {"loop_fusion": 8.0, "dot": 2.0}
