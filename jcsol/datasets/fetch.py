"""Downloading the papers' LIBSVM datasets into a local cache, resumably, verified where a digest is known.

::

    X, y = jcsol.datasets.fetch("a9a")                       # ~/.cache/jcsol/a9a, then jcsol.datasets.load
    X, y = jcsol.datasets.fetch("usps", positive=1)          # multiclass sets need positive= (load's rule)

The rule, for ``fetch(name)``:

1. If the decompressed file ``<cache>/<name's file>`` exists, it is loaded; nothing is downloaded.
2. Otherwise the file is downloaded from ``base_url + path`` into ``<file>.part``, with a record of its origin
   (URL, length, ``ETag``/``Last-Modified``) in ``<file>.part.json``. A ``.part`` left by an interrupted
   download is continued with ``Range: bytes=<size>-`` and ``If-Range: <validator>`` only when its record
   names the same URL and a validator: a server whose file changed since then answers with the whole new
   file, which replaces the part. A part without such a record is started over, never appended to. A
   connection that breaks before the announced length is resumed the same way, at most ``max_attempts``
   requests in all.
3. A download is complete only when its length says so (``Content-Length``, the total of ``Content-Range``, or
   the chunked framing of the response) or, for a server that sends no length, when the expected SHA-256 is
   given; otherwise it is refused (:class:`DownloadError`), as a connection closed early would look complete.
4. When a SHA-256 is known (from the registry or the ``sha256=`` argument), the complete download is hashed;
   a mismatch deletes it and raises :class:`ChecksumError` naming both digests. **The registry knows no digest
   of the LIBSVM site's files** (``sha256=None``: nothing is verified): the copies in the project's shared
   data are re-compressed or come from mirrors, so their digests are not those of the originals, and a
   digest that was not computed on the original file would only reject good downloads.
5. ``bz2`` files are decompressed (streaming) next to the download, which is then removed; the result is
   loaded with :func:`jcsol.datasets.load` and the registry's ``n_features``.
6. Only ``https://`` URLs are fetched, and a redirect to plain ``http://`` is refused, unless the caller passes
   ``allow_http=True`` (a local mirror, a test server).

The cache directory is ``cache_dir``, else the environment variable ``JCSOL_CACHE``, else ``~/.cache/jcsol``.
Only the standard library (``urllib``) does HTTP.

Source: C.-C. Chang, C.-J. Lin, *LIBSVM data: classification (binary and multi-class)*,
https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/ (the sets of the papers).
"""

from __future__ import annotations

import bz2
import hashlib
import http.client
import json
import os
import shutil
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..files import atomic_write
from ..stream import check_flags

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
    "covtype.binary": _r(
        "binary/covtype.libsvm.binary.bz2",
        54,
        "Forest cover type, two classes, 581012 × 54, labels {1, 2} (load maps 1 → +1)",
    ),
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


class _NoDowngrade(urllib.request.HTTPRedirectHandler):
    """Follows redirects, except from ``https`` to anything else (or to non-https when http is not allowed)."""

    def __init__(self, allow_http: bool):
        self.allow_http = allow_http

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        scheme = urllib.parse.urlsplit(newurl).scheme.lower()
        came_from = urllib.parse.urlsplit(req.full_url).scheme.lower()
        if scheme != "https" and (came_from == "https" or not self.allow_http or scheme != "http"):
            raise DownloadError(f"{req.full_url}: redirected to {newurl}, which is not https; refused")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _record(part: Path) -> Path:
    return part.with_name(part.name + ".json")


def _read_record(part: Path) -> dict | None:
    try:
        record = json.loads(_record(part).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _write_record(part: Path, record: dict) -> None:
    with atomic_write(_record(part), "w", encoding="utf-8") as fh:
        fh.write(json.dumps(record))


def _discard(part: Path) -> None:
    for path in (part, _record(part)):
        if path.exists():
            path.unlink()


def _validator(headers) -> str | None:
    """A strong ``ETag``, else ``Last-Modified``: what ``If-Range`` may carry (weak ETags may not)."""
    etag = headers.get("ETag")
    if etag and not etag.startswith("W/"):
        return etag
    return headers.get("Last-Modified")


def _download(url: str, part: Path, *, max_attempts: int, timeout: float, allow_http: bool, digest_known: bool) -> None:
    """Downloads ``url`` into ``part``, continuing what ``part`` already holds when its record shows it is a
    prefix of this very file; at most ``max_attempts`` requests."""
    opener = urllib.request.build_opener(_NoDowngrade(allow_http))
    errors: list[str] = []
    for _attempt in range(max_attempts):
        record = (_read_record(part) if part.exists() else None) or {}  # {}: no part to continue
        if part.exists() and not (record.get("url") == url and record.get("validator")):
            _discard(part)  # of unknown origin, or of a server without validators: never appended to
            record = {}
        have = part.stat().st_size if part.exists() else 0
        request = urllib.request.Request(url, headers={"User-Agent": "jcsol-fetch"})
        if have:
            request.add_header("Range", f"bytes={have}-")
            request.add_header("If-Range", record["validator"])
        try:
            with opener.open(request, timeout=timeout) as response:
                status = response.status
                chunked = "chunked" in response.headers.get("Transfer-Encoding", "").lower()
                if status == 206 and have:
                    start = int(response.headers.get("Content-Range", "bytes 0-").split()[1].split("-")[0])
                    if start != have:
                        raise DownloadError(f"{url}: asked for bytes from {have}, the server sent from {start}")
                    total = _total_from_content_range(response.headers.get("Content-Range"))
                    if total is None or total != record.get("total"):
                        _discard(part)
                        errors.append(f"the file's length changed ({record.get('total')} → {total}); restarting")
                        continue
                    mode = "ab"
                elif status in (200, 206):  # a fresh download, or the whole (possibly new) file: start over
                    have, mode = 0, "wb"
                    total = (
                        _total_from_content_range(response.headers.get("Content-Range"))
                        if status == 206
                        else _content_length(response.headers.get("Content-Length"))
                    )
                    if total is None and not chunked and not digest_known:
                        raise DownloadError(
                            f"{url}: the server sends no length, so a download cut short would look complete; pass "
                            "sha256= (the file's SHA-256) to verify it"
                        )
                    _write_record(part, {"url": url, "total": total, "validator": _validator(response.headers)})
                else:
                    raise DownloadError(f"{url}: unexpected HTTP status {status}")
                with open(part, mode) as out:
                    for block in iter(lambda: response.read(_CHUNK), b""):
                        out.write(block)
                        have += len(block)
            if total is not None and have > total:
                _discard(part)
                raise DownloadError(f"{url}: received {have} bytes, more than the announced {total}")
            if total is None or have == total:
                return  # complete by its length, its chunked framing, or (checked next) its digest
            errors.append(f"connection closed after {have} of {total} bytes")
        except urllib.error.HTTPError as err:
            if err.code == 416 and have:  # the part may already be complete
                total = _total_from_content_range(err.headers.get("Content-Range"))
                if total == have and total == record.get("total"):
                    return
                _discard(part)  # inconsistent with the server's file: start over
                errors.append(f"HTTP 416 with {have} bytes held of {total}; restarting")
                continue
            raise DownloadError(f"{url}: HTTP {err.code} {err.reason}") from err
        except (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError) as err:
            reason = getattr(err, "reason", None)
            if isinstance(reason, DownloadError):
                raise reason from None
            errors.append(f"{type(err).__name__}: {err}")
    raise DownloadError(
        f"{url}: not complete after {max_attempts} requests ({'; '.join(errors[-3:])}); "
        f"{part} is kept and the next fetch continues it when the server allows"
    )


def _content_length(value: str | None) -> int | None:
    return int(value) if value and value.strip().isdigit() else None


def _check_fetch_arguments(name, cache_dir, base_url, sha256, max_attempts, timeout, allow_http, load_kwargs):
    """Every argument of :func:`fetch` checked before anything is downloaded."""
    import inspect

    from . import check_float_dtype, load
    from .libsvm import check_n_features

    if not isinstance(name, str) or name not in REGISTRY:
        raise ValueError(f"unknown dataset {name!r}; fetch knows {', '.join(sorted(REGISTRY))}")
    if not isinstance(base_url, str):
        raise TypeError(f"base_url must be a URL string, got {base_url!r}")
    check_flags(allow_http=allow_http)
    scheme = urllib.parse.urlsplit(base_url).scheme.lower()
    if scheme != "https" and not (allow_http and scheme == "http"):
        raise ValueError(f"base_url {base_url!r} is not https; pass allow_http=True to fetch over plain http")
    if sha256 is not None and not (
        isinstance(sha256, str) and len(sha256) == 64 and all(c in "0123456789abcdef" for c in sha256.lower())
    ):
        raise ValueError(f"sha256 must be 64 hexadecimal digits, got {sha256!r}")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, (int, np.integer)) or max_attempts < 1:
        raise ValueError(f"max_attempts must be an integer >= 1, got {max_attempts!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r}")
    known = set(inspect.signature(load).parameters) - {"name_or_path"}
    unknown = sorted(set(load_kwargs) - known)
    if unknown:
        raise TypeError(
            f"fetch passes {', '.join(unknown)} to jcsol.datasets.load, which takes {', '.join(sorted(known))}"
        )
    if load_kwargs.get("n_features") is not None:
        check_n_features(load_kwargs["n_features"])
    check_flags(**{k: load_kwargs[k] for k in ("normalize", "sparse") if k in load_kwargs})
    if "dtype" in load_kwargs:
        check_float_dtype(load_kwargs["dtype"])
    root = cache_path(cache_dir)
    if root.exists() and not root.is_dir():
        raise NotADirectoryError(f"cache_dir {root} is not a folder")
    return root


def fetch(
    name: str,
    *,
    cache_dir: str | os.PathLike | None = None,
    base_url: str = DEFAULT_BASE_URL,
    sha256: str | None = None,
    max_attempts: int = 5,
    timeout: float = 60.0,
    allow_http: bool = False,
    **load_kwargs,
):
    """Downloads (once) and loads one of the LIBSVM datasets of :data:`REGISTRY`.

    Args:
        name: a key of :data:`REGISTRY` (``"a9a"``, ``"ijcnn1.t"``, ``"covtype.binary"``, …).
        cache_dir: where files are kept (default: ``$JCSOL_CACHE`` or ``~/.cache/jcsol``).
        base_url: the URL the registry's paths are relative to (a mirror, or a local server in tests).
        sha256: the expected SHA-256 of the file as served; overrides the registry's (``None``: unknown).
        max_attempts: at most this many HTTP requests to complete the download (each resumes the last).
        timeout: seconds of socket inactivity before a request is abandoned (and retried).
        allow_http: fetch from a plain ``http://`` ``base_url`` (default: https only).
        **load_kwargs: passed to :func:`jcsol.datasets.load` (``positive=``, ``normalize=``, ``sparse=``, …).

    Returns:
        ``(X, y)`` as :func:`jcsol.datasets.load` returns them.

    Raises:
        ValueError: unknown ``name``, a non-https ``base_url`` without ``allow_http``, or another bad argument
            (all checked before any request).
        ChecksumError: the download's SHA-256 differs from the expected one (the download is deleted).
        DownloadError: the download could not be completed.
    """
    from . import load  # the package imports this module at its end

    root = _check_fetch_arguments(name, cache_dir, base_url, sha256, max_attempts, timeout, allow_http, load_kwargs)
    entry = REGISTRY[name]
    expected = (sha256 or entry.sha256 or "").lower() or None
    root.mkdir(parents=True, exist_ok=True)
    final = root / entry.file
    if not final.exists():
        if not os.access(root, os.W_OK | os.X_OK):
            raise PermissionError(f"cache_dir {root} is not writable")
        download = root / entry.path.rsplit("/", 1)[-1]
        if not download.exists():
            part = download.with_name(download.name + ".part")
            _download(
                base_url.rstrip("/") + "/" + entry.path,
                part,
                max_attempts=max_attempts,
                timeout=timeout,
                allow_http=allow_http,
                digest_known=expected is not None,
            )
            if expected is not None:
                actual = _sha256(part)
                if actual != expected:
                    _discard(part)
                    raise ChecksumError(
                        f"{name}: SHA-256 of the download from {base_url} is {actual}, expected "
                        f"{expected}; the file was deleted"
                    )
            os.replace(part, download)
            _discard(part)
        if entry.compression == "bz2":
            try:
                with bz2.open(download, "rb") as src, atomic_write(final) as dst:
                    shutil.copyfileobj(src, dst, _CHUNK)
            except (OSError, EOFError) as err:
                download.unlink(missing_ok=True)
                raise ValueError(f"{name}: the download is not a valid bz2 file ({err}); it was deleted") from None
            download.unlink()
    load_kwargs.setdefault("n_features", entry.n_features)
    load_kwargs.setdefault("dtype", np.float32)
    return load(final, **load_kwargs)
