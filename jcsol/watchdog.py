"""A stalled computation ends in an error instead of a wait without end.

:func:`jcsol.run` executes each chunk of rounds under :func:`watch`: the compiled call runs on a worker thread
while the calling thread checks that it makes progress. On the CPU backend, progress is work: the process must
use at least :data:`BUSY_SHARE` of one core over a stretch of ``timeout`` seconds — a deadlocked XLA thread pool
uses none, a slow but working run uses a whole core per device (a loaded machine still gives it a share well
above that). On an accelerator the host is idle by design, so progress there is the chunk finishing within
``timeout`` seconds. A stalled chunk raises :class:`StallError`; its worker thread is left behind (a daemon:
it does not keep the process alive), the carry it was given is abandoned, and whatever was saved before the
chunk — the last checkpoint — is untouched.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

#: The share of one core the process must use, over ``timeout`` seconds, for a CPU computation to count as
#: making progress.
BUSY_SHARE = 0.05

#: ``stall_timeout="auto"``: seconds of idleness that end a CPU run; accelerators get no limit by default.
DEFAULT_CPU_TIMEOUT = 300.0


class StallError(RuntimeError):
    """A chunk of a run made no progress for the stated time."""


def resolve_timeout(stall_timeout: Any, platform: str) -> float | None:
    """Seconds of no progress that end a run (``None``: never), from :func:`jcsol.run`'s ``stall_timeout``."""
    if stall_timeout is None:
        return None
    if isinstance(stall_timeout, str):
        if stall_timeout != "auto":
            raise ValueError(f"stall_timeout must be 'auto', None or a number of seconds > 0, got {stall_timeout!r}")
        return DEFAULT_CPU_TIMEOUT if platform == "cpu" else None
    if isinstance(stall_timeout, bool) or not isinstance(stall_timeout, (int, float)) or not stall_timeout > 0:
        raise ValueError(f"stall_timeout must be 'auto', None or a number of seconds > 0, got {stall_timeout!r}")
    return float(stall_timeout)


def watch(fn: Callable[[], Any], *, timeout: float | None, on_cpu: bool, describe: Callable[[float], str]) -> Any:
    """``fn()``, or :class:`StallError` with ``describe(timeout)`` when it stops making progress for ``timeout`` s."""
    if timeout is None:
        return fn()
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def work():
        try:
            outcome["value"] = fn()
        except BaseException as err:  # handed to the caller's thread below
            outcome["error"] = err
        finally:
            done.set()

    threading.Thread(target=work, name="jcsol-chunk", daemon=True).start()
    poll = min(1.0, timeout / 10)
    start = last_progress = time.monotonic()
    cpu_before, checked = time.process_time(), start
    while not done.wait(poll):
        now = time.monotonic()
        if on_cpu:
            cpu = time.process_time()
            if cpu - cpu_before >= BUSY_SHARE * (now - checked):
                last_progress = now
            cpu_before, checked = cpu, now
        if now - (last_progress if on_cpu else start) > timeout:
            raise StallError(describe(timeout))
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
