import os
from pathlib import Path

import numpy as np
import pytest

import jcsol

# the papers' data sets: $JCSOL_DATA, else the shared folder beside this checkout
DATA = Path(os.environ.get("JCSOL_DATA") or Path(__file__).resolve().parents[1] / ".." / "shared" / "data")


def shared_data(name: str) -> Path:
    """A file of the shared benchmark data, or a skip when this checkout has none beside it."""
    path = DATA / name
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path


@pytest.fixture(scope="session")
def german():
    return jcsol.datasets.load("german")


@pytest.fixture(scope="session")
def small(german):
    """The first 200 rows of german: enough rounds to exercise every branch, fast to compile and run."""
    X, y = german
    return X[:200], y[:200]


def first_hyperparameter(learner):
    """Name and value of the learner's first float hyperparameter, or None for learners without any."""
    hp = learner.hyperparameters()
    if not hp:
        return None
    name = next(iter(hp))
    return name, float(np.asarray(hp[name]))


def grid_values(learner, name: str, default: float) -> np.ndarray:
    """Three valid values of a hyperparameter around its default (some live in an interval, like CW's η)."""
    for factors in ((0.8, 1.0, 1.1), (0.8, 0.9, 1.0)):
        values = default * np.array(factors)
        try:
            learner.replace(**{name: values})
            return values
        except ValueError:
            continue
    raise AssertionError(f"no valid grid around {name}={default}")


def run_cli(argv, capsys) -> tuple[int, str, str]:
    """``jcsol`` with ``argv`` in this process: its exit status (argparse's own actions and refusals included) and
    what it printed on stdout and stderr."""
    from jcsol import cli

    try:
        rc = cli.main(argv)
    except SystemExit as exit_:
        rc = exit_.code
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def forbid_tracing(monkeypatch):
    """Call it to make the rest of the test fail on any new trace (hence compilation) of the engine's
    computations, with ``chex.assert_max_traces``."""
    import chex

    from jcsol.core import rounds, scan

    def forbid():
        chex.clear_trace_counter()
        for module, name in ((rounds, "init_carry"), (rounds, "run_round"), (scan, "scan_chunk")):
            monkeypatch.setattr(module, name, chex.assert_max_traces(getattr(module, name), n=0))

    yield forbid
    chex.clear_trace_counter()
