"""Peak memory of the running process, for the benchmarks' memory figures."""

from __future__ import annotations

import resource


def peak_rss_gib() -> float:
    """This process's peak resident set size in GiB.

    ``VmHWM`` where the kernel gives it: ``ru_maxrss`` carries the parent's peak over ``fork``/``exec`` on Linux,
    so in a child process it would report the parent's memory.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
