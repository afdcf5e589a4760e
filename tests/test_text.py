"""kernels.text: download, check, cache and offline fallback, against a local HTTP server."""

import gzip
import http.server
import os
import pathlib
import threading
import time

import numpy as np
import pytest

from kernels import text

HEADER = (b"\xef\xbb\xbfThe Project Gutenberg eBook of The Complete Works of William\r\n"
          b"Shakespeare\r\n\r\n")
BODY = HEADER + b"To be, or not to be, that is the question.\r\n" * 110_000  # ~4.9 MB
SLOW_S = 20  # how long the slow server takes to answer
ROOT = pathlib.Path(__file__).resolve().parents[1]
REAL_COPY = next((p for p in (os.environ.get(text.LOCAL_COPY_ENV),
                              ROOT / ".gpu" / "pg100.txt.gz",
                              ROOT.parent / "shared" / "data" / "pg100.txt.gz")
                  if p and pathlib.Path(p).exists()), None)


class Handler(http.server.BaseHTTPRequestHandler):
    hits = {}

    def log_message(self, *args):  # keep the test output quiet
        pass

    def do_GET(self):
        Handler.hits[self.path] = Handler.hits.get(self.path, 0) + 1
        try:
            if self.path == "/missing":
                self.send_error(404)
                return
            if self.path == "/slow":  # far past the client's timeout, however loaded
                time.sleep(SLOW_S)
            body = {"/short": b"<html>Moved</html>",
                    "/wrong": b"Some other book entirely.\n" * 200_000}.get(self.path, BODY)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.path == "/truncated":
                body = body[: len(body) // 3]  # the connection drops mid-body
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the timeout test)


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def no_local_copy(monkeypatch):
    monkeypatch.delenv(text.LOCAL_COPY_ENV, raising=False)


def fetch(url, cache, **kw):
    return text.shakespeare(url=url, cache=cache, timeout=kw.pop("timeout", 5.0), **kw)


def test_download_is_checked_and_cached(server, tmp_path, capsys):
    got = fetch(server + "/ok", tmp_path)
    assert got.source == "download" and not got.substitute
    assert got.data.dtype == np.uint8 and got.data.tobytes() == BODY
    assert (tmp_path / text.CACHE_NAME).read_bytes() == BODY
    assert "downloaded from" in capsys.readouterr().out


def test_cache_is_reused_without_a_request(server, tmp_path):
    fetch(server + "/cached", tmp_path)
    again = fetch(server + "/cached", tmp_path)
    assert again.source == "cache" and again.data.tobytes() == BODY
    assert Handler.hits["/cached"] == 1


def test_corrupt_cache_is_downloaded_again(server, tmp_path):
    (tmp_path / text.CACHE_NAME).write_bytes(BODY[:1000])
    got = fetch(server + "/ok", tmp_path)
    assert got.source == "download" and "was not usable" in got.note
    assert (tmp_path / text.CACHE_NAME).read_bytes() == BODY


@pytest.mark.parametrize("path,reason", [
    ("/missing", "HTTP error 404"),
    ("/truncated", ""),  # requests raises, or the size check refuses it
    ("/short", "bytes, expected"),
    ("/wrong", "header lacks"),
])
def test_bad_answers_fall_back_to_the_labelled_substitute(server, tmp_path, path, reason,
                                                          capsys):
    got = fetch(server + path, tmp_path)
    assert got.substitute and "SUBSTITUTE" in got.title
    assert got.note.startswith("SUBSTITUTE TEXT") and reason in got.note
    assert "SUBSTITUTE TEXT" in capsys.readouterr().out
    assert not (tmp_path / text.CACHE_NAME).exists(), "a bad download must not be cached"


def test_timeout_falls_back_quickly(server, tmp_path):
    start = time.perf_counter()
    got = fetch(server + "/slow", tmp_path, timeout=0.3)
    assert time.perf_counter() - start < SLOW_S / 2
    assert got.substitute and "no answer within 0.3 s" in got.note


def test_no_server_falls_back(tmp_path):
    import socket
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    got = fetch(f"http://127.0.0.1:{port}/pg100.txt", tmp_path)
    assert got.substitute and "no network connection" in got.note


def test_substitute_is_ascii_text_of_full_size():
    sub = text.substitute_text("testing")
    assert sub.data.size == text.SUBSTITUTE_BYTES
    assert sub.data.max() < 128 and (sub.data == ord(" ")).mean() > 0.1
    assert "testing" in sub.note and "5 passages" in sub.note


def test_local_copy_wins_gz_or_plain(tmp_path, monkeypatch, server):
    plain = tmp_path / "pg100.txt"
    plain.write_bytes(BODY)
    packed = tmp_path / "pg100.txt.gz"
    packed.write_bytes(gzip.compress(BODY))
    for path in (plain, packed):
        monkeypatch.setenv(text.LOCAL_COPY_ENV, str(path))
        got = fetch(server + "/never", tmp_path / "cache")
        assert got.source == "local copy" and got.data.tobytes() == BODY
    assert "/never" not in Handler.hits


def test_unusable_local_copy_is_reported_and_skipped(tmp_path, server):
    bad = tmp_path / "pg100.txt.gz"
    bad.write_bytes(b"not gzip")
    got = fetch(server + "/ok", tmp_path / "cache", local_copy=bad)
    assert got.source == "download" and "local copy" in got.note


def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert text.cache_dir() == tmp_path / "numba-cuda-course"


@pytest.mark.skipif(REAL_COPY is None, reason="no local copy of pg100.txt.gz")
def test_the_real_complete_works_pass_the_check():
    raw = gzip.decompress(pathlib.Path(REAL_COPY).read_bytes())
    assert text.problem(raw) is None
