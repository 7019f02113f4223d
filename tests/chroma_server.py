"""A real Chroma server (`chroma run`) on a free loopback port, for tests of the shared vector index."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

START_TIMEOUT = 60  # seconds


def chroma_executable() -> Path | None:
    """The `chroma` command installed beside this Python (chromadb's CLI), else on PATH."""
    beside = Path(sys.executable).parent / "chroma"
    if beside.exists():
        return beside
    found = shutil.which("chroma")
    return Path(found) if found else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ChromaServer:
    """One `chroma run --path DIR` process; `stop` and `start` again keep its data and port."""

    def __init__(self, executable: Path, data: Path) -> None:
        self.executable = executable
        self.data = data
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data.parent / f"{data.name}.log"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [str(self.executable), "run", "--path", str(self.data), "--host", "127.0.0.1"]
        with self.log.open("ab") as log:
            self._process = subprocess.Popen(
                [*command, "--port", str(self.port)], stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self._process.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"chroma run gave no heartbeat in {START_TIMEOUT} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=30)
        self._process = None

    def pid(self) -> int:
        assert self._process is not None, "the server is not running"
        return self._process.pid

    def reset(self) -> None:
        """Drop every collection, so that a test starts from an empty server."""
        import chromadb

        client = chromadb.HttpClient(host="127.0.0.1", port=self.port)
        for collection in client.list_collections():
            client.delete_collection(collection.name)

    def log_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


class TokenGate:
    """A reverse proxy that lets through only requests bearing `token`, as one put in front of
    `chroma run` (which checks none itself) does; others get Chroma's own 401 error body."""

    def __init__(self, upstream: str, token: str) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        expected = f"Bearer {token}"

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                if self.headers.get("Authorization") != expected:
                    self._answer(401, b'{"error": "AuthError", "message": "Unauthorized"}')
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {"Content-Type": self.headers.get("Content-Type") or "application/json"}
                reply = httpx.request(self.command, upstream + self.path, content=body, headers=headers)
                self._answer(reply.status_code, reply.content)

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _forward

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
