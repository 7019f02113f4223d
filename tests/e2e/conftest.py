"""A real `footnote serve` process on a free loopback port, over the sample corpus, with the real models."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import REPO
from tests.store_modes import STORE_SETTINGS, lasting_stores, stores_of

API_KEY = "e2e-key-0123456789abcdef0123"
START_TIMEOUT = 300  # seconds; loading both models on 2 busy cores can be slow


@dataclass(frozen=True)
class RunningServer:
    base_url: str
    api_key: str
    home: Path
    log: Path

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def footnote_env(home: Path, **extra: str) -> dict[str, str]:
    # The shared model folder stays: each server would otherwise export its embedder again.
    # So do the test's shared stores (FOOTNOTE_TEST_STORES=shared), which are its index.
    # A caller naming stores of its own gets those alone.
    kept = {"FOOTNOTE_MODEL_DIR", *(() if STORE_SETTINGS.keys() & extra.keys() else STORE_SETTINGS)}
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOOTNOTE_") or k in kept}
    home_env = {"FOOTNOTE_HOME": str(home), "FOOTNOTE_CONFIG": str(home / "none.toml")}
    return {**env, **stores_of(home), **home_env, **extra}


def footnote_json(home: Path, *args: str, **env: str) -> Any:
    """`footnote ARGS --json` run on `home` (with `env` added), its output parsed; it must succeed."""
    result = subprocess.run(
        [sys.executable, "-m", "footnote", *args, "--json"],
        env=footnote_env(home, **env),
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def ingest(home: Path, folder: Path) -> None:
    footnote_json(home, "ingest", str(folder))


def wait_until_ready(server: RunningServer, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited with {process.returncode}:\n{server.log_tail()}")
        try:
            if httpx.get(f"{server.base_url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    pytest.fail(f"the server was not ready within {START_TIMEOUT} s:\n{server.log_tail()}")


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if the server has not exited within 30 s."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    home = tmp_path_factory.mktemp("served-home")
    lasting_stores(home)
    ingest(home, REPO / "examples" / "sample")
    with serving(home) as server:
        yield server


@contextmanager
def serving(home: Path) -> Iterator[RunningServer]:
    """`footnote serve` over the data directory `home` on a free loopback port, with API_KEY,
    ready for requests; stopped on leaving."""
    port = free_port()
    server = RunningServer(f"http://127.0.0.1:{port}", API_KEY, home, home / "server.log")
    with open(server.log, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "footnote", "serve", "--port", str(port)],
            env=footnote_env(home, FOOTNOTE_API_KEY=API_KEY),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        wait_until_ready(server, process)
        yield server
    finally:
        stop_process(process)
