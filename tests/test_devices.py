"""`import jcsol` gives JAX one CPU device per core, unless something already chose, or JAX already started."""

import os
import subprocess
import sys

import pytest

import jcsol


def _devices_after(code: str, **env) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JCSOL_CPU_DEVICES")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-c", code + "\nimport jax; print(len(jax.devices('cpu')))"],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, jcsol.devices.cpu_cores()),
        pytest.param({"JCSOL_CPU_DEVICES": "1"}, 1, marks=pytest.mark.slow),
        ({"JCSOL_CPU_DEVICES": "3"}, 3),
        pytest.param({"XLA_FLAGS": "--xla_force_host_platform_device_count=5"}, 5, marks=pytest.mark.slow),
    ],  # chosen elsewhere (XLA_FLAGS): left alone
)
def test_import_sets_one_device_per_core_unless_chosen(env, expected):
    done = _devices_after("import jcsol", **env)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == expected


def test_jax_started_first_keeps_its_devices():
    done = _devices_after("import jax; jax.numpy.ones(1); import jcsol")
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == 1


def test_a_bad_device_count_is_refused_at_import():
    done = _devices_after("import jcsol", JCSOL_CPU_DEVICES="two")
    assert done.returncode != 0
    assert "JCSOL_CPU_DEVICES must be a whole number >= 1, got 'two'" in done.stderr
