"""Files written whole or not at all.

:func:`atomic_write` is how jcsol writes every file it makes — checkpoints, live learners, tables, figures: the
bytes go to a temporary file beside the target, which is flushed to disk and renamed over the target (then the
folder's entry is synced), so a reader — or a run resumed after a crash — finds the old file or the new one,
never a torn one. A failure removes the temporary file and leaves the target as it was.

:data:`ARCHIVE_ERRORS` is what reading such a file back as a NumPy ``.npz`` archive can raise when it is damaged
or foreign, so that its readers refuse it with one clear error.
"""

from __future__ import annotations

import contextlib
import os
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


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", **open_kwargs) -> Iterator[IO]:
    """A file object to write ``path`` through; ``path`` changes only when the ``with`` block ends normally."""
    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
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
