"""Shared fixtures. Tests never reach a model hub: everything loads from installed packages.

FOOTNOTE_TEST_STORES picks the stores every test's index lives in: `embedded` (the default:
SQLite and Chroma under the test's FOOTNOTE_HOME) or `shared` (a fresh database on the run's
PostgreSQL cluster and a collection of its own on the run's Chroma server, set through
FOOTNOTE_CATALOG_URL / FOOTNOTE_VECTOR_URL / FOOTNOTE_VECTOR_COLLECTION). Tests marked
`embedded_stores` are about the embedded stores in particular and skip in the shared mode.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from footnote.config import Settings
from footnote.models.base import Embedder, Generator
from tests.postgres_server import PostgresServer, started_server
from tests.store_modes import STORE_SETTINGS, RunStores, begin_run, store_mode

if TYPE_CHECKING:
    from tests.chroma_server import ChromaServer

REPO = Path(__file__).resolve().parent.parent
STORES = store_mode(os.environ.get("FOOTNOTE_TEST_STORES", ""))  # read before tests clear FOOTNOTE_*


@pytest.fixture(scope="session")
def shared_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Exported and requantized models, made once per test run instead of once per data folder:
    one folder for every xdist worker of the run (a model is made under a lock, by one of them)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "models"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session", autouse=True)
def _models_made_once(shared_model_dir: Path) -> Iterator[None]:
    """The run's models for fixtures that outlive a test too: an index ingested once for a
    module's tests is built before any test's own environment is set, and would otherwise export
    every model again into its own home."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FOOTNOTE_MODEL_DIR", str(shared_model_dir))
        yield


@pytest.fixture(scope="session")
def test_stores(request: pytest.FixtureRequest) -> Iterator[RunStores]:
    """The run's store mode, with its PostgreSQL cluster and Chroma server in the shared mode."""
    if STORES == "embedded":
        yield begin_run(RunStores(None, None))
        return
    from tests.chroma_server import chroma_executable
    from tests.postgres_server import postgres_bin_dir

    if postgres_bin_dir() is None or chroma_executable() is None:  # never a run of skips that passes
        pytest.fail("FOOTNOTE_TEST_STORES=shared needs PostgreSQL (initdb) and chromadb's `chroma`", False)
    servers = request.getfixturevalue("postgres_server"), request.getfixturevalue("_shared_chroma")
    stores = begin_run(RunStores(*servers))
    yield stores
    stores.close()
    # Applications a test left open keep a listener each, which would log its retries once the
    # cluster stops at the end of the run.
    logging.getLogger("footnote.store.postgres").disabled = True


@pytest.fixture(autouse=True)
def _isolated_environment(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    shared_model_dir: Path,
    request: pytest.FixtureRequest,
    test_stores: RunStores,
) -> Iterator[None]:
    """No test reads a developer's own settings or data; in the shared mode each test's stores are new."""
    if test_stores.shared and request.node.get_closest_marker("embedded_stores"):
        pytest.skip("about the embedded stores; runs with FOOTNOTE_TEST_STORES=embedded")
    for name in list(os.environ):
        if name.startswith("FOOTNOTE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("FOOTNOTE_CONFIG", str(tmp_path / "no-such-footnote.toml"))
    monkeypatch.setenv("FOOTNOTE_MODEL_DIR", str(shared_model_dir))
    with test_stores.fresh(request.node.name) as environment:
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        yield


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings on a temporary home whose engine has the model read whole sources: most tests are
    about generation and its checking (the extract reader's tests ask for it themselves)."""
    return Settings(home=tmp_path / "home", reader="sources")


@pytest.fixture(scope="session")
def real_embedder(shared_model_dir: Path) -> Embedder:
    """The bundled MiniLM exported once and embedding through ONNX Runtime in float
    (FOOTNOTE_EMBED_PRECISION=fp32), whose vectors do not depend on their batch-mates."""
    from footnote.models.onnx_embedder import OnnxEmbedder
    from footnote.models.onnx_export import exported_model
    from footnote.models.registry import resolve_embedder

    model = exported_model(Path(resolve_embedder("minilm-l6")), shared_model_dir, "minilm-l6")
    return OnnxEmbedder(model, "minilm-l6")


@pytest.fixture(scope="session")
def torch_embedder() -> Embedder:
    """The bundled MiniLM through sentence-transformers and torch (FOOTNOTE_EMBED_RUNTIME=torch)."""
    from footnote.models.embedders import SentenceTransformerEmbedder
    from footnote.models.registry import resolve_embedder

    return SentenceTransformerEmbedder(resolve_embedder("minilm-l6"), display_name="minilm-l6")


@pytest.fixture(scope="session")
def real_generator() -> Iterator[Generator]:
    from footnote.models.llama import LlamaCppGenerator
    from footnote.models.registry import resolve_llm

    yield LlamaCppGenerator(resolve_llm("smollm2-135m"), display_name="smollm2-135m", context_length=2048)


def _chroma_executable() -> Path:
    from tests.chroma_server import chroma_executable

    executable = chroma_executable()
    if executable is None:
        pytest.skip("the `chroma` command (chromadb's CLI) is not installed beside this Python or on PATH")
    return executable


@pytest.fixture(scope="session")
def _shared_chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    from tests.chroma_server import ChromaServer

    server = ChromaServer(_chroma_executable(), tmp_path_factory.mktemp("chroma") / "data")
    server.start()
    yield server
    server.stop()


def _own_stores_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that sets up shared stores of its own uses those alone, in either store mode."""
    for name in STORE_SETTINGS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def chroma(_shared_chroma: ChromaServer, monkeypatch: pytest.MonkeyPatch) -> ChromaServer:
    """The test run's Chroma server, emptied for this test."""
    _own_stores_only(monkeypatch)
    _shared_chroma.reset()
    return _shared_chroma


@pytest.fixture
def own_chroma(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChromaServer]:
    """A Chroma server of this test's own, which it may stop and start."""
    _own_stores_only(monkeypatch)
    from tests.chroma_server import ChromaServer

    server = ChromaServer(_chroma_executable(), tmp_path / "chroma")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A private PostgreSQL cluster for the whole run (skips only where PostgreSQL is not installed)."""
    yield from started_server()


@pytest.fixture
def catalog_url(
    postgres_server: PostgresServer, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> str:
    """A fresh, empty database on the test cluster."""
    _own_stores_only(monkeypatch)
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[:50]
    name = f"{name}_{next(_databases)}"
    return postgres_server.create_database(name)


_databases = itertools.count()
