"""jcsol: cost-sensitive and imbalanced online binary classification on JAX.

>>> import jcsol
>>> X, y = jcsol.datasets.load("german")
>>> res = jcsol.run(jcsol.ACOG(eta=jcsol.decades()), X, y, perms=20)   # 11 η × 20 permutations, one jit
>>> best = res.best("sum")
"""

from .devices import configure_cpu_devices_on_import as _configure_cpu_devices
from .xla_cpu import configure_on_import as _configure_xla_cpu

_configure_xla_cpu()  # before anything below can start JAX
_configure_cpu_devices()

from . import datasets, distributed, live, metrics, papers, plots, protocols  # noqa: E402
from .algorithms import (
    ACOG,
    AROMMA,
    AROW,
    COG,
    CPAML,
    CPAPB,
    CW,
    OGD,
    PA,
    PA1,
    PA2,
    PAUM,
    ROMMA,
    SCW1,
    SCW2,
    VARIANTS,
    Perceptron,
    by_name,
)
from .algorithms.auc_baselines import OAM, OPAUC
from .algorithms.budget_kernel import NORMA, RBP, Forgetron, Projectron
from .algorithms.cw_cvar import CWCosts, CWCVaR, CWNoBuffer, CWRobust
from .algorithms.cw_var import CWVar
from .algorithms.koil import KOIL, KOILMKL
from .algorithms.optax_learner import OptaxCOG
from .algorithms.sacog import SACOG, SSACOG
from .base import Example, Learner, StepInfo
from .catalog import learners
from .checked import Stream
from .devices import use_cpu_cores
from .engine import ChunkDone, run
from .features import TableEncoder
from .grids import decades, grid, paired
from .live import Live
from .model import Model, ModelFileError, load
from .objective import Cost, Sum
from .paths import Kernel, Scan
from .report import table
from .result import Best, Result
from .stream import SparseRows
from .watchdog import StallError

__version__ = "0.1.0"  # the one place of the version: pyproject.toml reads it (dynamic)

__all__ = [
    "ACOG",
    "COG",
    "VARIANTS",
    "by_name",
    "learners",
    "OptaxCOG",
    "SACOG",
    "SSACOG",
    "KOIL",
    "KOILMKL",
    "OAM",
    "OPAUC",
    "NORMA",
    "RBP",
    "Forgetron",
    "Projectron",
    "Perceptron",
    "ROMMA",
    "AROMMA",
    "PA",
    "PA1",
    "PA2",
    "PAUM",
    "CPAPB",
    "CPAML",
    "AROW",
    "CW",
    "SCW1",
    "SCW2",
    "OGD",
    "Example",
    "Learner",
    "StepInfo",
    "run",
    "Scan",
    "Kernel",
    "ChunkDone",
    "Result",
    "Best",
    "table",
    "Sum",
    "Cost",
    "grid",
    "paired",
    "decades",
    "SparseRows",
    "Stream",
    "TableEncoder",
    "Live",
    "live",
    "Model",
    "ModelFileError",
    "load",
    "datasets",
    "metrics",
    "use_cpu_cores",
    "StallError",
    "protocols",
    "papers",
    "distributed",
    "plots",
    "CWCVaR",
    "CWNoBuffer",
    "CWCosts",
    "CWRobust",
    "CWVar",
]
