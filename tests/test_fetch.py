"""jcsol.datasets.fetch against a local HTTP server (with Range support) serving the shared data: download,
resume after a dropped connection or an interrupted process, servers without ranges, checksums, the cache."""

import bz2
import hashlib
import http.server
import json
import threading
import urllib.request

import numpy as np
import pytest
from conftest import shared_data

import jcsol
from jcsol.datasets.fetch import REGISTRY, ChecksumError, DownloadError, Remote, _NoDowngrade


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves ``server.files`` (URL path → bytes), honours ``Range: bytes=N-``, and can drop a connection."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (http.server's name)
        server = self.server
        rng = self.headers.get("Range")
        server.requests.append((self.path, rng))
        data = server.files.get(self.path)
        if data is None:
            self.send_error(404)
            return
        start = 0
        etag = f'"{hashlib.sha256(data).hexdigest()[:16]}"'
        if_range = self.headers.get("If-Range")
        if rng and server.ranges and (if_range is None or if_range == etag):
            start = int(rng.removeprefix("bytes=").split("-")[0])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        partial = bool(rng and server.ranges and (if_range is None or if_range == etag))
        body = data[start:]
        drop = server.drop_after.get(self.path) if server.drops_left > 0 else None
        if drop is not None:  # decided before the client can see a header, so a test may re-arm it at once
            server.drops_left -= 1
        self.send_response(206 if partial else 200)
        if server.lengths:
            self.send_header("Content-Length", str(len(body)))
        else:
            self.close_connection = True  # the body ends when the connection closes
        if server.validators:
            self.send_header("ETag", etag)
        if partial:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Accept-Ranges", "bytes" if server.ranges else "none")
        self.end_headers()
        if drop is not None:
            self.wfile.write(body[:drop])
            self.wfile.flush()
            self.close_connection = True  # the announced length is not reached: the client sees a short read
            return
        self.wfile.write(body)

    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.files, httpd.requests, httpd.drop_after, httpd.drops_left, httpd.ranges = {}, [], {}, 0, True
    httpd.lengths, httpd.validators = True, True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}/"
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
        assert not thread.is_alive()


@pytest.fixture
def german_file(server):
    raw = shared_data("german.numer").read_bytes()
    server.files["/binary/german.numer"] = raw
    return raw


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_download_loads_and_is_cached(server, german_file, tmp_path):
    X, y = jcsol.datasets.fetch("german.numer", cache_dir=tmp_path, base_url=server.url, allow_http=True, timeout=5)
    assert server.requests == [("/binary/german.numer", None)]
    assert (tmp_path / "german.numer").read_bytes() == german_file
    assert not list(tmp_path.glob("*.part"))
    Xs, ys = jcsol.datasets.load(shared_data("german.numer"), n_features=24)
    np.testing.assert_array_equal(X, Xs)
    np.testing.assert_array_equal(y, ys)
    assert X.shape == (1000, 24)
    assert (y == 1).sum() == 300
    # the cache: no second request; load's keyword arguments pass through
    X2, _ = jcsol.datasets.fetch(
        "german.numer", cache_dir=tmp_path, base_url=server.url, allow_http=True, normalize=False
    )
    assert len(server.requests) == 1
    assert not np.allclose(np.linalg.norm(X2, axis=1), 1.0)


def test_cache_dir_from_environment(server, german_file, tmp_path, monkeypatch):
    monkeypatch.setenv("JCSOL_CACHE", str(tmp_path / "env-cache"))
    jcsol.datasets.fetch("german.numer", base_url=server.url, allow_http=True, timeout=5)
    assert (tmp_path / "env-cache" / "german.numer").read_bytes() == german_file


def test_dropped_connection_is_resumed_with_range(server, german_file, tmp_path):
    cut = 100_000
    server.drop_after["/binary/german.numer"] = cut
    server.drops_left = 1
    jcsol.datasets.fetch(
        "german.numer", cache_dir=tmp_path, base_url=server.url, allow_http=True, sha256=_sha(german_file), timeout=5
    )
    assert server.requests == [("/binary/german.numer", None), ("/binary/german.numer", f"bytes={cut}-")]
    assert _sha((tmp_path / "german.numer").read_bytes()) == _sha(german_file)


def _interrupted(tmp_path, server, data: bytes, held: int, etag_of: bytes | None = None):
    """A part left by an interrupted process, with the record of its origin (``etag_of``: the file it came from)."""
    (tmp_path / "german.numer.part").write_bytes(data[:held])
    etag = f'"{hashlib.sha256(etag_of or data).hexdigest()[:16]}"'
    (tmp_path / "german.numer.part.json").write_text(
        json.dumps({"url": server.url + "binary/german.numer", "total": len(etag_of or data), "validator": etag})
    )


def test_part_left_by_an_interrupted_process_is_continued(server, german_file, tmp_path):
    _interrupted(tmp_path, server, german_file, 1234)
    jcsol.datasets.fetch("german.numer", cache_dir=tmp_path, base_url=server.url, allow_http=True, timeout=5)
    assert server.requests == [("/binary/german.numer", "bytes=1234-")]
    assert (tmp_path / "german.numer").read_bytes() == german_file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["german.numer"]


def test_part_of_another_version_of_the_file_is_never_appended_to(server, german_file, tmp_path):
    old = german_file.replace(b"+1", b"-1", 5)
    _interrupted(tmp_path, server, old, 5000, etag_of=old)
    jcsol.datasets.fetch("german.numer", cache_dir=tmp_path, base_url=server.url, allow_http=True, timeout=5)
    assert (tmp_path / "german.numer").read_bytes() == german_file  # If-Range: the server sent the new file whole


def test_part_without_a_record_of_its_origin_is_started_over(server, german_file, tmp_path):
    (tmp_path / "german.numer.part").write_bytes(b"bytes of some other file")
    jcsol.datasets.fetch("german.numer", cache_dir=tmp_path, base_url=server.url, allow_http=True, timeout=5)
    assert server.requests == [("/binary/german.numer", None)]
    assert (tmp_path / "german.numer").read_bytes() == german_file


def test_body_without_a_length_is_not_taken_as_complete(server, german_file, tmp_path):
    server.lengths = False
    server.drop_after["/binary/german.numer"] = 5000
    server.drops_left = 1
    with pytest.raises(DownloadError, match="no length.*sha256="):
        jcsol.datasets.fetch("german.numer", cache_dir=tmp_path, base_url=server.url, allow_http=True, timeout=5)
    assert not (tmp_path / "german.numer").exists()
    server.drops_left = 1  # with the digest, the cut body is refused and the whole file is fetched again
    with pytest.raises(ChecksumError):
        jcsol.datasets.fetch(
            "german.numer",
            cache_dir=tmp_path,
            base_url=server.url,
            allow_http=True,
            timeout=5,
            sha256=_sha(german_file),
        )
    X, _ = jcsol.datasets.fetch(
        "german.numer", cache_dir=tmp_path, base_url=server.url, allow_http=True, timeout=5, sha256=_sha(german_file)
    )
    assert (tmp_path / "german.numer").read_bytes() == german_file
    assert X.shape == (1000, 24)


def test_https_only_unless_allowed_and_no_downgrading_redirect(server, german_file, tmp_path):
    with pytest.raises(ValueError, match="not https; pass allow_http=True"):
        jcsol.datasets.fetch("german.numer", cache_dir=tmp_path, base_url=server.url)
    assert server.requests == []
    handler = _NoDowngrade(allow_http=False)
    request = urllib.request.Request("https://example.org/binary/a9a")
    with pytest.raises(DownloadError, match="not https; refused"):
        handler.redirect_request(request, None, 302, "Found", {}, "http://example.org/binary/a9a")
    assert handler.redirect_request(request, None, 302, "Found", {}, "https://mirror.example.org/a9a") is not None
    with pytest.raises(DownloadError, match="not https"):
        _NoDowngrade(allow_http=True).redirect_request(request, None, 302, "Found", {}, "http://example.org/a9a")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        (dict(sha256="abc"), "64 hexadecimal"),
        (dict(max_attempts=0), "max_attempts"),
        (dict(timeout=-1), "timeout"),
        (dict(n_featres=3), "n_featres"),
        (dict(normalize="no"), "normalize"),
        (dict(dtype="int8"), "dtype"),
        (dict(allow_http="yes"), "allow_http"),
    ],
)
def test_bad_arguments_are_refused_before_any_request(server, tmp_path, kwargs, error):
    kwargs = dict(base_url=server.url, allow_http=True) | kwargs
    with pytest.raises((ValueError, TypeError), match=error):
        jcsol.datasets.fetch("german.numer", cache_dir=tmp_path, **kwargs)
    assert server.requests == []


def test_server_without_ranges_restarts_the_file(server, german_file, tmp_path):
    server.ranges = False
    (tmp_path / "german.numer.part").write_bytes(b"garbage that must not stay at the start")
    jcsol.datasets.fetch("german.numer", cache_dir=tmp_path, base_url=server.url, allow_http=True, timeout=5)
    assert len(server.requests) == 1
    assert (tmp_path / "german.numer").read_bytes() == german_file


def test_wrong_checksum_is_refused_and_deleted(server, german_file, tmp_path):
    wrong = "0" * 64
    with pytest.raises(ChecksumError) as err:
        jcsol.datasets.fetch(
            "german.numer", cache_dir=tmp_path, base_url=server.url, allow_http=True, sha256=wrong, timeout=5
        )
    assert wrong in str(err.value)
    assert _sha(german_file) in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_registry_checksum_is_used(server, german_file, tmp_path, monkeypatch):
    entry = REGISTRY["german.numer"]
    monkeypatch.setitem(REGISTRY, "german.numer", Remote(entry.path, None, "f" * 64, 24, entry.description))
    with pytest.raises(ChecksumError, match="f" * 64):
        jcsol.datasets.fetch("german.numer", cache_dir=tmp_path, base_url=server.url, allow_http=True, timeout=5)
    monkeypatch.setitem(REGISTRY, "german.numer", Remote(entry.path, None, _sha(german_file), 24, entry.description))
    X, _ = jcsol.datasets.fetch("german.numer", cache_dir=tmp_path, base_url=server.url, allow_http=True, timeout=5)
    assert X.shape == (1000, 24)


def test_unknown_name_is_refused(server, tmp_path):
    with pytest.raises(ValueError, match="unknown dataset 'nope'.*a9a"):
        jcsol.datasets.fetch("nope", cache_dir=tmp_path, base_url=server.url, allow_http=True)
    assert server.requests == []


def test_attempts_are_bounded_and_the_part_kept(server, german_file, tmp_path):
    server.drop_after["/binary/german.numer"] = 10_000
    server.drops_left = 100
    with pytest.raises(DownloadError, match="3 requests"):
        jcsol.datasets.fetch(
            "german.numer", cache_dir=tmp_path, base_url=server.url, allow_http=True, max_attempts=3, timeout=5
        )
    assert len(server.requests) == 3
    assert (tmp_path / "german.numer.part").read_bytes() == german_file[:30_000]
    assert not (tmp_path / "german.numer").exists()
    with pytest.raises(DownloadError, match="404"):
        jcsol.datasets.fetch("a9a", cache_dir=tmp_path, base_url=server.url, allow_http=True, timeout=5)


def test_bz2_is_decompressed_and_loaded(server, tmp_path, monkeypatch):
    raw = shared_data("heart_scale").read_bytes()
    packed = bz2.compress(raw)
    server.files["/binary/heart_scale.bz2"] = packed
    monkeypatch.setitem(
        REGISTRY,
        "heart_scale",
        Remote("binary/heart_scale.bz2", "bz2", _sha(packed), 13, "Statlog heart, scaled, 270 × 13"),
    )
    assert REGISTRY["heart_scale"].file == "heart_scale"
    X, y = jcsol.datasets.fetch("heart_scale", cache_dir=tmp_path, base_url=server.url, allow_http=True, timeout=5)
    assert (tmp_path / "heart_scale").read_bytes() == raw
    assert not (tmp_path / "heart_scale.bz2").exists()
    Xs, ys = jcsol.datasets.load(shared_data("heart_scale"), n_features=13)
    np.testing.assert_array_equal(X, Xs)
    np.testing.assert_array_equal(y, ys)


def test_registry_is_honest_about_digests():
    """No digest is invented: the LIBSVM originals' SHA-256 are unknown here (see the module docstring)."""
    for name in (
        "a9a",
        "a9a.t",
        "w8a",
        "w8a.t",
        "ijcnn1",
        "ijcnn1.t",
        "covtype.binary",
        "cod-rna",
        "cod-rna.t",
        "protein",
        "Sensorless",
        "usps",
        "usps.t",
        "mushrooms",
        "german.numer",
    ):
        entry = REGISTRY[name]
        assert entry.sha256 is None
        assert entry.compression == ("bz2" if entry.path.endswith(".bz2") else None)
