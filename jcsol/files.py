"""Files written whole or not at all.

:func:`atomic_write` is how jcsol writes every file it makes — checkpoints, live learners, tables, figures: the
bytes go to a temporary file beside the target, which is flushed to disk and renamed over the target (then the
folder's entry is synced), so a reader — or a run resumed after a crash — finds the old file or the new one,
never a torn one. A failure — an exception, ``KeyboardInterrupt`` included — removes the temporary file and
leaves the target as it was. A path where no file can be written (a folder, a missing or unwritable folder) is
refused before anything is written, naming the target (:func:`check_writable`); :func:`same_file` tells a
command whether an output it is about to write is one of its inputs (or another of its outputs), to refuse it.

The temporary file is ``<target>.tmp-<host>-<pid>-<thread>``. A process killed while writing (``SIGKILL``, a
power cut) cannot remove its own: the next write of the same target removes the temporaries of that target
left by processes of this host that no longer run, and leaves those of running processes and other hosts.

:data:`ARCHIVE_ERRORS` is what reading such a file back as a NumPy ``.npz`` archive can raise when it is damaged
or foreign, so that its readers refuse it with one clear error.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import zipfile
import zlib
from collections.abc import Iterator
from typing import IO

try:
    from lzma import LZMAError
except ImportError:  # a Python built without lzma: zipfile cannot decompress such entries either
    LZMAError = OSError  # type: ignore[misc,assignment]

#: What ``np.load`` of a damaged ``.npz`` archive raises: a truncated or foreign file (``OSError``, ``EOFError``,
#: ``BadZipFile``, ``ValueError``), a missing entry (``KeyError``), text that is not UTF-8, a header naming a
#: compression method or a flag that ``zipfile`` does not support (``NotImplementedError``) or an encrypted entry
#: (``RuntimeError``), data that does not decompress (``zlib.error``, ``LZMAError``).
ARCHIVE_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    EOFError,
    ValueError,
    KeyError,
    UnicodeDecodeError,
    zipfile.BadZipFile,
    NotImplementedError,
    RuntimeError,
    zlib.error,
    LZMAError,
)


def check_writable(path, what: str = "file") -> str:
    """``path`` as a string, refusing (before any work) a path where ``what`` cannot be written: not a path, a
    folder, in a missing folder or in a folder this process cannot write to; each message names ``path``."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what} must be a file path, got {type(path).__name__}")
    path = os.fsdecode(os.fspath(path))
    if os.path.isdir(path):
        raise IsADirectoryError(f"{what} {path} is a directory; give a file path")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"{what} {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(f"{what} {path}: folder {parent} is not writable")
    return path


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether the paths ``a`` and ``b`` name one file: the same path once links and ``..`` are resolved (a file
    that does not exist yet included), or one existing file under two names (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process, or a platform without signals: kept
        return True
    return True


def remove_stale_temporaries(path: str | os.PathLike) -> list[str]:
    """Removes the temporary files of ``path`` left by processes of this host that no longer run (killed while
    writing it); returns their names."""
    path = os.fspath(path)
    folder, base = os.path.split(os.path.abspath(path))
    prefix = f"{base}.tmp-{socket.gethostname()}-"
    removed = []
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            pid, _, thread = name[len(prefix) :].partition("-")
            if name.startswith(prefix) and pid.isdigit() and thread.isdigit() and not _alive(int(pid)):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(folder, name))
                    removed.append(name)
    return removed


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", **open_kwargs) -> Iterator[IO]:
    """A file object to write ``path`` through; ``path`` changes only when the ``with`` block ends normally."""
    path = check_writable(path)
    remove_stale_temporaries(path)
    tmp = f"{path}.tmp-{socket.gethostname()}-{os.getpid()}-{threading.get_ident()}"
    try:
        with open(tmp, mode, **open_kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # the rename itself on disk; not every file system lets a folder be synced
        folder = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
