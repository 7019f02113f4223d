"""The servers the shared-store benchmark starts on loopback, and stops: a private PostgreSQL
cluster (initdb + pg_ctl, as the `postgres` user when run as root, since PostgreSQL refuses
root) and `chroma run`."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

PG_BIN = Path("/usr/lib/postgresql/15/bin")
PG_USER, PG_PASSWORD = "footnote", "footnote-bench-secret"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def wait_ready(url: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{process.args} exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} was not ready in {timeout} s")


@contextmanager
def postgres() -> Iterator[str]:
    """A private cluster in a folder of its own that its owner can enter; yields the server's
    URL without a database."""
    owner = "postgres" if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="footnote-bench-pg-"))
    if owner:
        record = pwd.getpwnam(owner)
        os.chown(folder, record.pw_uid, record.pw_gid)
    (folder / "password").write_text(PG_PASSWORD)
    os.chmod(folder / "password", 0o644)
    data, port = folder / "data", free_port()

    def pg(*args: str) -> None:
        command = [str(PG_BIN / args[0]), *args[1:]]
        command = ["runuser", "-u", owner, "--", *command] if owner else command
        subprocess.run(command, check=True, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)

    try:
        pg(
            "initdb", "-D", str(data), "-U", PG_USER, f"--pwfile={folder / 'password'}",
            "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8",
        )  # fmt: skip
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {data} -c fsync=off"
        pg("pg_ctl", "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start")
        try:
            yield f"postgresql://{PG_USER}:{PG_PASSWORD}@127.0.0.1:{port}"
        finally:
            pg("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def create_database(server: str, name: str) -> str:
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return f"{server}/{name}"


@contextmanager
def chroma(data: Path) -> Iterator[str]:
    """`chroma run` on `data` (its log beside it, in `<data>.log`); yields its URL."""
    port = free_port()
    command = [str(Path(sys.executable).parent / "chroma"), "run", "--path", str(data), "--port", str(port)]
    with open(f"{data}.log", "wb") as log:
        process = subprocess.Popen([*command, "--host", "127.0.0.1"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(f"{url}/api/v2/heartbeat", process, 60)
        yield url
    finally:
        stop(process)
