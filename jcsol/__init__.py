"""jcsol: cost-sensitive and imbalanced online binary classification on JAX.

>>> import jcsol
>>> X, y = jcsol.datasets.load("german")
>>> res = jcsol.run(jcsol.ACOG(eta=jcsol.decades()), X, y, perms=20)   # 11 η × 20 permutations, one jit
>>> best = res.best("sum")
"""

from .devices import configure_cpu_devices_on_import as _configure_cpu_devices

_configure_cpu_devices()  # before anything below can start JAX

from . import datasets, metrics  # noqa: E402
from .algorithms.optax_learner import OptaxCOG
from .algorithms.cw_cvar import CWCVaR, CWCosts, CWNoBuffer, CWRobust
from .algorithms.cw_var import CWVar
from .algorithms.sacog import SACOG, SparseSACOG
from .algorithms.koil import KOIL, KOILMKL
from .algorithms.auc_baselines import OAM, OPAUC
from .algorithms.budget_kernel import NORMA, RBP, Forgetron, Projectron
from .algorithms import (ACOG, AROMMA, AROW, COG, CPAPB, CW, OGD, PA, PA1, PA2, PAUM, ROMMA, SCW, SCW2, VARIANTS,
                         Perceptron, by_name)
from .base import Example, Learner, StepInfo
from .devices import use_cpu_cores
from .engine import ChunkDone, run
from .watchdog import StallError
from .grids import decades, grid
from .objective import Cost, Sum
from .report import table
from .result import Best, Result
from .stream import SparseRows
from .features import TableEncoder
from .live import Live
from . import live
from . import protocols
from . import plots
from . import auc

__version__ = "0.1.0"

__all__ = [
    "ACOG", "COG", "VARIANTS", "by_name",
    "OptaxCOG",
    "SACOG", "SparseSACOG",
    "KOIL", "KOILMKL", "OAM", "OPAUC", "NORMA", "RBP", "Forgetron", "Projectron", "auc",
    "Perceptron", "ROMMA", "AROMMA", "PA", "PA1", "PA2", "PAUM", "CPAPB", "AROW", "CW", "SCW", "SCW2", "OGD",
    "Example", "Learner", "StepInfo",
    "run", "ChunkDone", "Result", "Best", "table",
    "Sum", "Cost",
    "grid", "decades",
    "SparseRows", "TableEncoder", "Live", "live", "datasets", "metrics", "use_cpu_cores", "StallError",
    "protocols",
    "plots",
    "CWCVaR", "CWNoBuffer", "CWCosts", "CWRobust", "CWVar",
]
