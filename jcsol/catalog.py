"""The registered learner variants, described: what ``jcsol learners`` prints and :func:`jcsol.learners` returns.

Each variant of :data:`jcsol.VARIANTS` is built with its defaults, and described by its name, its class, its
float hyperparameters (the pytree leaves a grid varies) with their defaults, its static options, the chunk
backends that run it on dense rows (:func:`jcsol.core.chunks.coverage`), and the paper it implements: the
``Reference:`` paragraph of its class's docstring (else of its module's), as one line.
"""

from __future__ import annotations

import inspect
import re
import sys
from typing import Any, NamedTuple

from .algorithms import VARIANTS
from .core.chunks import coverage

__all__ = ["LearnerInfo", "learners", "paper_of"]

_REFERENCE = re.compile(r"^\s*References?:\s*(.+?)(?:\n\s*\n|\Z)", re.MULTILINE | re.DOTALL)


class LearnerInfo(NamedTuple):
    """One registered variant, as built by ``jcsol.by_name(name)``."""

    name: str
    cls: str  # the learner's class name
    hyperparameters: dict[str, float]  # the float hyperparameters and their defaults
    options: dict[str, Any]  # the static options this variant sets
    paper: str  # the paper it implements, one line
    paths: tuple[str, ...]  # the chunk backends (path=) that run it on dense rows held in memory


def learners() -> list[LearnerInfo]:
    """Every registered variant of :data:`jcsol.VARIANTS`, in the registry's order.

    >>> import jcsol
    >>> acog = next(v for v in jcsol.learners() if v.name == "ACOG-II-diag")
    >>> acog.cls, acog.options["loss"], acog.options["diagonal"], acog.hyperparameters["eta"], acog.paths
    ('ACOG', 'II', True, 0.01, ('kernel', 'scan'))
    """
    out = []
    for name, make in VARIANTS.items():
        learner = make()
        hyper = {k: float(v) for k, v in learner.hyperparameters().items()}
        paths = tuple(path for path, refusal in coverage(learner).items() if refusal is None)
        info = LearnerInfo(name, type(learner).__name__, hyper, learner.options(), paper_of(type(learner)), paths)
        out.append(info)
    return out


def paper_of(cls: type) -> str:
    """The ``Reference:`` (or ``References:``) paragraph of ``cls``'s docstring, else of its module's docstring,
    as one line; ``""`` when neither has one."""
    for doc in (cls.__doc__, getattr(sys.modules.get(cls.__module__), "__doc__", None)):
        found = _REFERENCE.search(inspect.cleandoc(doc or ""))
        if found:
            return " ".join(found.group(1).split())
    return ""
