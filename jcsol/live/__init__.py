"""Live streams: a learner's whole grid learning and serving on an unbounded stream (:class:`Live`), the
served configuration chosen online (:mod:`.board`), labels arriving late (:mod:`.store`)."""

from .board import RULES, Selection
from .files import LiveFileError
from .leaderboard import Leaderboard
from .learner import Live

__all__ = ["Live", "LiveFileError", "Leaderboard", "Selection", "RULES"]
