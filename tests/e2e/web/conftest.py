"""Debian's headless Chromium, driven by Playwright, against real servers on loopback.

The browser is the system one (/usr/bin/chromium), never a downloaded build; without it
these tests skip. Screenshots go to tests/e2e/artifacts/ (git-ignored), for a person to look at.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from footnote.application import create_app
from footnote.config import Settings
from footnote.server import create_server
from tests.e2e.conftest import free_port
from tests.fakes import HashingEmbedder, ScriptedGenerator
from tests.store_modes import as_settings, stores_of

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: `apt-get install chromium` to run the browser tests")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the dev extra installs playwright")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            launched.close()


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


class InProcessServer:
    """A FastAPI app under uvicorn in a thread, on a free loopback port."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="web-test-server", daemon=True)

    def __enter__(self) -> InProcessServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the in-process server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def serve_with(home: Path, generator: ScriptedGenerator, corpus: Path | None = None, **overrides: Any) -> Any:
    """A server with test-double models, for tests about the page's own behaviour; the scripted
    model reads the whole sources unless `reader` says otherwise."""
    chosen = {"reader": "sources", **as_settings(stores_of(home)), **overrides}
    settings = Settings(home=home, preload_models=False, **chosen)
    application = create_app(settings, embedder=HashingEmbedder(), generator=generator)
    if corpus is not None:
        application.ingest([corpus])
    return InProcessServer(create_server(settings, application))
