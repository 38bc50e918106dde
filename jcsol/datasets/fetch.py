"""Downloading the papers' LIBSVM datasets into a local cache, resumably, verified where a digest is known.

::

    X, y = jcsol.datasets.fetch("a9a")                       # ~/.cache/jcsol/a9a, then jcsol.datasets.load
    X, y = jcsol.datasets.fetch("usps", positive=1)          # multiclass sets need positive= (load's rule)

The rule, for ``fetch(name)``:

1. If the decompressed file ``<cache>/<name's file>`` exists, it is loaded; nothing is downloaded.
2. Otherwise the file is downloaded from ``base_url + path`` into ``<file>.part``. A ``.part`` left by an
   interrupted download is continued with an HTTP ``Range: bytes=<size>-`` request (a server answering 200
   instead of 206 sends the whole file, which then replaces the part). A connection that breaks before the
   announced length is resumed the same way, at most ``max_attempts`` requests in all.
3. When a SHA-256 is known (from the registry or the ``sha256=`` argument), the complete download is hashed;
   a mismatch deletes it and raises :class:`ChecksumError` naming both digests. **The registry knows no digest
   of the LIBSVM site's files** (``sha256=None``: nothing is verified): the copies in the project's shared
   data are re-compressed or come from mirrors, so their digests are not those of the originals, and a
   digest that was not computed on the original file would only reject good downloads.
4. ``bz2`` files are decompressed (streaming) next to the download, which is then removed; the result is
   loaded with :func:`jcsol.datasets.load` and the registry's ``n_features``.

The cache directory is ``cache_dir``, else the environment variable ``JCSOL_CACHE``, else ``~/.cache/jcsol``.
Only the standard library (``urllib``) does HTTP.

Source: C.-C. Chang, C.-J. Lin, *LIBSVM data: classification (binary and multi-class)*,
https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/ (the sets of the papers, SPEC §6-7).
"""

from __future__ import annotations

import bz2
import hashlib
import http.client
import os
import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["fetch", "REGISTRY", "Remote", "ChecksumError", "DownloadError", "cache_path", "DEFAULT_BASE_URL"]

DEFAULT_BASE_URL = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/"
_CHUNK = 1 << 16


class ChecksumError(OSError):
    """A download whose SHA-256 differs from the expected one (the file has been deleted)."""


class DownloadError(OSError):
    """A download that could not be completed within the allowed number of requests."""


@dataclass(frozen=True)
class Remote:
    """A file of the LIBSVM site.

    Attributes:
        path: path under the base URL, e.g. ``"binary/ijcnn1.bz2"``.
        compression: ``"bz2"`` or ``None``.
        sha256: SHA-256 of the file as served (compressed), or ``None`` when unknown (then nothing is verified).
        n_features: the dimension, given to :func:`jcsol.datasets.load` (test splits may not reach it).
        description: size and labels, as the papers use the set.
    """

    path: str
    compression: str | None
    sha256: str | None
    n_features: int | None
    description: str

    @property
    def file(self) -> str:
        """The name of the decompressed file in the cache."""
        name = self.path.rsplit("/", 1)[-1]
        return name[: -len(".bz2")] if self.compression == "bz2" else name


def _r(path: str, n_features: int | None, description: str) -> Remote:
    return Remote(path, "bz2" if path.endswith(".bz2") else None, None, n_features, description)


#: The LIBSVM-site files of the papers' datasets. Every ``sha256`` is ``None``: unknown, see the module docstring.
REGISTRY: dict[str, Remote] = {
    "a9a": _r("binary/a9a", 123, "Adult, 32561 × 123, +1: 7841"),
    "a9a.t": _r("binary/a9a.t", 123, "Adult test split, 16281 × 123, +1: 3846"),
    "w8a": _r("binary/w8a", 300, "w8a, 49749 × 300, +1: 1479"),
    "w8a.t": _r("binary/w8a.t", 300, "w8a test split, 14951 × 300"),
    "ijcnn1": _r("binary/ijcnn1.bz2", 22, "IJCNN 2001, 49990 × 22, +1: 4853"),
    "ijcnn1.t": _r("binary/ijcnn1.t.bz2", 22, "IJCNN 2001 test split, 91701 × 22, +1: 8712"),
    "covtype.binary": _r("binary/covtype.libsvm.binary.bz2", 54,
                         "Forest cover type, two classes, 581012 × 54, labels {1, 2} (load maps 1 → +1)"),
    "cod-rna": _r("binary/cod-rna", 8, "cod-rna, 59535 × 8, ±1"),
    "cod-rna.t": _r("binary/cod-rna.t", 8, "cod-rna test split, 271617 × 8, ±1"),
    "protein": _r("multiclass/protein.bz2", 357, "protein, 17766 × 357, 3 classes (0, 1, 2): pass positive="),
    "protein.t": _r("multiclass/protein.t.bz2", 357, "protein test split, 6621 × 357, 3 classes"),
    "Sensorless": _r("multiclass/Sensorless", 48, "Sensorless drive diagnosis, 58509 × 48, 11 classes"),
    "usps": _r("multiclass/usps.bz2", 256, "USPS digits, 7291 × 256, 10 classes (labels 1-10)"),
    "usps.t": _r("multiclass/usps.t.bz2", 256, "USPS digits test split, 2007 × 256, 10 classes"),
    "mushrooms": _r("binary/mushrooms", 112, "Mushrooms, 8124 × 112, labels {1, 2} (1 → +1: 3916)"),
    "german.numer": _r("binary/german.numer", 24, "Statlog German credit, 1000 × 24, +1: 300"),
    "australian": _r("binary/australian", 14, "Statlog Australian credit, 690 × 14, +1: 307"),
    "svmguide3": _r("binary/svmguide3", None, "svmguide3, 1243 rows"),
    "svmguide3.t": _r("binary/svmguide3.t", None, "svmguide3 test split, 41 rows"),
    "dna.scale": _r("multiclass/dna.scale", 180, "DNA, 2000 × 180, 3 classes"),
    "dna.scale.t": _r("multiclass/dna.scale.t", 180, "DNA test split, 1186 × 180, 3 classes"),
    "heart": _r("binary/heart", 13, "Statlog heart, 270 × 13, ±1"),
}


def cache_path(path: str | os.PathLike | None = None) -> Path:
    """The cache directory: ``path``, else ``$JCSOL_CACHE``, else ``~/.cache/jcsol``."""
    if path is not None:
        return Path(path)
    env = os.environ.get("JCSOL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "jcsol"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _total_from_content_range(value: str | None) -> int | None:
    """``N`` from ``bytes a-b/N`` (``None`` for ``*`` or a missing header)."""
    if not value or "/" not in value:
        return None
    total = value.rsplit("/", 1)[1].strip()
    return int(total) if total.isdigit() else None


def _download(url: str, part: Path, *, max_attempts: int, timeout: float) -> None:
    """Downloads ``url`` into ``part``, continuing what ``part`` already holds; at most ``max_attempts`` requests."""
    errors: list[str] = []
    for _attempt in range(max_attempts):
        have = part.stat().st_size if part.exists() else 0
        request = urllib.request.Request(url, headers={"User-Agent": "jcsol-fetch"})
        if have:
            request.add_header("Range", f"bytes={have}-")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status = response.status
                if status == 206:
                    start = int(response.headers.get("Content-Range", "bytes 0-").split()[1].split("-")[0])
                    if start != have:
                        raise DownloadError(f"{url}: asked for bytes from {have}, the server sent from {start}")
                    total = _total_from_content_range(response.headers.get("Content-Range"))
                    mode = "ab"
                elif status == 200:  # no range support (or a fresh download): start over
                    have, mode = 0, "wb"
                    length = response.headers.get("Content-Length")
                    total = int(length) if length and length.isdigit() else None
                else:
                    raise DownloadError(f"{url}: unexpected HTTP status {status}")
                with open(part, mode) as out:
                    for block in iter(lambda: response.read(_CHUNK), b""):
                        out.write(block)
                        have += len(block)
            if total is None or have >= total:
                if total is not None and have > total:
                    raise DownloadError(f"{url}: received {have} bytes, more than the announced {total}")
                return
            errors.append(f"connection closed after {have} of {total} bytes")
        except urllib.error.HTTPError as err:
            if err.code == 416 and have:  # the part may already be complete
                total = _total_from_content_range(err.headers.get("Content-Range"))
                if total == have:
                    return
                part.unlink()  # inconsistent with the server's file: start over
                errors.append(f"HTTP 416 with {have} bytes held of {total}; restarting")
                continue
            raise DownloadError(f"{url}: HTTP {err.code} {err.reason}") from err
        except (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError) as err:
            errors.append(f"{type(err).__name__}: {err}")
    raise DownloadError(f"{url}: not complete after {max_attempts} requests ({'; '.join(errors[-3:])}); "
                        f"{part} is kept and the next fetch continues it")


def fetch(name: str, *, cache_dir: str | os.PathLike | None = None, base_url: str = DEFAULT_BASE_URL,
          sha256: str | None = None, max_attempts: int = 5, timeout: float = 60.0, **load_kwargs):
    """Downloads (once) and loads one of the LIBSVM datasets of :data:`REGISTRY`.

    Args:
        name: a key of :data:`REGISTRY` (``"a9a"``, ``"ijcnn1.t"``, ``"covtype.binary"``, …).
        cache_dir: where files are kept (default: ``$JCSOL_CACHE`` or ``~/.cache/jcsol``).
        base_url: the URL the registry's paths are relative to (a mirror, or a local server in tests).
        sha256: the expected SHA-256 of the file as served; overrides the registry's (``None``: unknown).
        max_attempts: at most this many HTTP requests to complete the download (each resumes the last).
        timeout: seconds of socket inactivity before a request is abandoned (and retried).
        **load_kwargs: passed to :func:`jcsol.datasets.load` (``positive=``, ``normalize=``, ``sparse=``, …).

    Returns:
        ``(X, y)`` as :func:`jcsol.datasets.load` returns them.

    Raises:
        ValueError: unknown ``name``.
        ChecksumError: the download's SHA-256 differs from the expected one (the download is deleted).
        DownloadError: the download could not be completed.
    """
    from . import load  # the package imports this module at its end

    if name not in REGISTRY:
        raise ValueError(f"unknown dataset {name!r}; fetch knows {', '.join(sorted(REGISTRY))}")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    entry = REGISTRY[name]
    expected = (sha256 or entry.sha256 or "").lower() or None
    root = cache_path(cache_dir)
    root.mkdir(parents=True, exist_ok=True)
    final = root / entry.file
    if not final.exists():
        download = root / entry.path.rsplit("/", 1)[-1]
        if not download.exists():
            part = download.with_name(download.name + ".part")
            _download(base_url.rstrip("/") + "/" + entry.path, part, max_attempts=max_attempts, timeout=timeout)
            if expected is not None:
                actual = _sha256(part)
                if actual != expected:
                    part.unlink()
                    raise ChecksumError(f"{name}: SHA-256 of the download from {base_url} is {actual}, expected "
                                        f"{expected}; the file was deleted")
            os.replace(part, download)
        if entry.compression == "bz2":
            tmp = final.with_name(final.name + ".tmp")
            with bz2.open(download, "rb") as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, _CHUNK)
            os.replace(tmp, final)
            download.unlink()
    load_kwargs.setdefault("n_features", entry.n_features)
    load_kwargs.setdefault("dtype", np.float32)
    return load(final, **load_kwargs)
