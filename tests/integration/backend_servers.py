"""Servers for the backend tests: real llama-cpp-python servers, and small misbehaving ones."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from footnote.models.registry import resolve_llm

START_TIMEOUT = 180  # seconds; 2 busy cores


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LlamaServer:
    """`python -m llama_cpp.server` with the bundled model on a free loopback port."""

    def __init__(self, alias: str, log: Path) -> None:
        self.alias = alias
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(resolve_llm("smollm2-135m"))]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--model_alias", alias]
        command += ["--n_ctx", "1024", "--n_threads", "1", "--verbose", "False"]
        self._log = log.open("wb")
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        self._wait_ready(log)

    def _wait_ready(self, log: Path) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {log.read_text(errors='replace')[-2000:]}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not start in {START_TIMEOUT} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)
        self._log.close()


def _chunk(text: str) -> bytes:
    body = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}
    return f"data: {json.dumps(body)}\n\n".encode()


class FakeBackend:
    """A stdlib HTTP server whose path prefix picks how it misbehaves.

    /error500 answers HTTP 500; /garbage streams an event that is not JSON; /notjson answers
    200 application/json with a broken body; /stall-first sends nothing; /stall-mid sends one
    piece then nothing; /slow streams up to 500 pieces 10 ms apart and records how many it
    sent before the client went away.
    """

    def __init__(self) -> None:
        self.release = threading.Event()  # ends every stall
        self.slow_sent = 0
        self.slow_disconnected = threading.Event()
        self.slow_finished = threading.Event()
        self.requests = 0
        backend = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._send(200, "application/json", b'{"object": "list", "data": []}')

            def do_POST(self) -> None:
                backend.requests += 1
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                mode = self.path.split("/")[1]
                if mode == "error500":
                    self._send(500, "application/json", b'{"error": {"message": "model crashed"}}')
                elif mode == "notjson":
                    self._send(200, "application/json", b'{"choices": [{"message": ')
                else:
                    self._stream(mode)

            def _send(self, status: int, kind: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _stream(self, mode: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                if mode == "garbage":
                    self.wfile.write(b"data: {this is not json\n\n")
                elif mode == "stall-first":
                    backend.release.wait(30)
                elif mode == "stall-mid":
                    self.wfile.write(_chunk("Half"))
                    self.wfile.flush()
                    backend.release.wait(30)
                elif mode == "slow":
                    self._slow()

            def _slow(self) -> None:
                try:
                    for _ in range(500):
                        self.wfile.write(_chunk("tick "))
                        self.wfile.flush()
                        backend.slow_sent += 1
                        time.sleep(0.01)
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    backend.slow_disconnected.set()
                finally:
                    backend.slow_finished.set()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.port}/{mode}/v1"

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def fake_backend() -> Iterator[FakeBackend]:
    backend = FakeBackend()
    try:
        yield backend
    finally:
        backend.stop()
