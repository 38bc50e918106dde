"""jcsol: cost-sensitive and imbalanced online binary classification on JAX.

>>> import jcsol
>>> X, y = jcsol.datasets.load("german")
>>> res = jcsol.run(jcsol.ACOG(eta=jcsol.decades()), X, y, perms=20)   # 11 η × 20 permutations, one jit
>>> best = res.best("sum")
"""

from . import datasets, metrics
from .algorithms import ACOG, COG, VARIANTS, by_name
from .base import Example, Learner, StepInfo
from .devices import use_cpu_cores
from .engine import run
from .grids import decades, grid
from .objective import Cost, Sum
from .report import table
from .result import Best, Result
from .stream import SparseRows

__version__ = "0.1.0"

__all__ = [
    "ACOG", "COG", "VARIANTS", "by_name",
    "Example", "Learner", "StepInfo",
    "run", "Result", "Best", "table",
    "Sum", "Cost",
    "grid", "decades",
    "SparseRows", "datasets", "metrics", "use_cpu_cores",
]
