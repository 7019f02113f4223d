"""A private PostgreSQL cluster for tests: initdb + pg_ctl in a temporary folder, on loopback.

Debian's postgresql package puts the binaries under /usr/lib/postgresql/N/bin. PostgreSQL
refuses to run as root, so under root (as in CI) the cluster belongs to the `postgres` user.
Tests that need it skip, naming what is missing, only when the binaries are not installed.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

USER = "footnote"
PASSWORD = "footnote-test-secret"


@dataclass
class PostgresServer:
    bin_dir: Path
    data: Path
    port: int
    owner: str | None  # the user the cluster runs as, when the tests run as root

    def url(self, database: str = "postgres", password: str = PASSWORD) -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def run(self, *args: str) -> None:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if self.owner is not None:
            command = ["runuser", "-u", self.owner, "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.data} -c fsync=off"
        self.run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.data / "log"), "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        self.run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def postgres_bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def started_server() -> Iterator[PostgresServer]:
    """Start a cluster, yield it, stop it and remove its folder."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (initdb not found); apt-get install postgresql")
    owner = "postgres" if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="footnote-pg-"))
    try:
        if owner is not None:
            record = pwd.getpwnam(owner)
            os.chown(folder, record.pw_uid, record.pw_gid)
        password_file = folder / "password"
        password_file.write_text(PASSWORD)
        os.chmod(password_file, 0o644)
        server = PostgresServer(bin_dir, folder / "data", free_port(), owner)
        server.run(
            "initdb", "-D", str(server.data), "-U", USER, f"--pwfile={password_file}",
            "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8",
        )  # fmt: skip
        server.start()
        try:
            yield server
        finally:
            with contextlib.suppress(subprocess.CalledProcessError):  # a test may have stopped it
                server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
