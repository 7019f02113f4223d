"""The vector index contract on both implementations (embedded Chroma, a real Chroma server),
the embedder identity on the server, and a server that is down or goes away."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import SecretStr

from footnote.config import Settings
from footnote.errors import StoreError, StoreUnavailable
from footnote.store.chroma_server import ChromaServerVectorIndex, server_params
from footnote.store.vector_stores import check_vectors, open_vectors, recorded_vector_embedding
from footnote.store.vectors import ChromaVectorIndex, VectorIndex
from tests.chroma_server import ChromaServer, TokenGate, free_port

OpenIndex = Callable[..., VectorIndex]


def unit(*values: float) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


EAST, NORTH_EAST, NORTH, UP, WEST = (
    unit(1, 0, 0, 0),
    unit(1, 1, 0, 0),
    unit(0, 1, 0, 0),
    unit(0, 0, 1, 0),
    unit(-1, 0, 0, 0),
)


@pytest.fixture(params=["embedded", "chroma-server"])
def open_index(request: pytest.FixtureRequest, tmp_path: Path) -> OpenIndex:
    """Opens the index of one kind; every call opens the same index again."""
    if request.param == "embedded":
        return lambda name="embedder-a", dimension=4: ChromaVectorIndex(tmp_path / "vectors", name, dimension)
    url = request.getfixturevalue("chroma").url
    return lambda name="embedder-a", dimension=4: ChromaServerVectorIndex(url, None, name, dimension)


def test_upsert_query_count_ids_and_vectors(open_index: OpenIndex) -> None:
    index = open_index()
    index.upsert([1, 2, 3, 4], [WEST, NORTH, NORTH_EAST, EAST], [{"document_id": i} for i in (1, 1, 2, 2)])

    results = index.query(EAST, limit=4)

    assert [chunk_id for chunk_id, _ in results] == [4, 3, 2, 1]
    assert [s for _, s in results] == pytest.approx([1.0, 1 / math.sqrt(2), 0.0, -1.0], abs=1e-5)
    assert [chunk_id for chunk_id, _ in index.query(EAST, limit=4, where={"document_id": 1})] == [2, 1]
    assert index.count() == 4 and index.ids() == {1, 2, 3, 4}
    stored = index.vectors([2, 4, 404])
    assert sorted(stored) == [2, 4] and stored[2] == pytest.approx(NORTH, abs=1e-6)


def test_upsert_replaces_and_delete_removes(open_index: OpenIndex) -> None:
    index = open_index()
    index.upsert([1, 2, 3], [EAST, NORTH_EAST, NORTH])

    index.upsert([1], [UP])
    index.delete([3, 404])
    index.delete([])

    assert index.ids() == {1, 2}
    assert index.query(UP, limit=1)[0] == (1, pytest.approx(1.0, abs=1e-5))


def test_an_empty_index_answers_queries_with_nothing(open_index: OpenIndex) -> None:
    assert open_index().query(EAST, limit=5) == [] and open_index().count() == 0


def test_vectors_persist_across_reopening(open_index: OpenIndex) -> None:
    open_index().upsert([1, 2], [EAST, NORTH])

    assert open_index().query(NORTH, limit=1)[0][0] == 2


def test_another_embedder_is_refused_naming_the_setting_that_opens_it(open_index: OpenIndex) -> None:
    open_index("minilm-l6@onnx-int8", 4).upsert([1], [EAST])

    with pytest.raises(StoreError, match="set FOOTNOTE_EMBED_PRECISION=int8, or"):
        open_index("minilm-l6@onnx-fp32", 4)
    with pytest.raises(StoreError, match=r"\(4 dimensions\), not 'minilm-l6@onnx-int8' \(8\)"):
        open_index("minilm-l6@onnx-int8", 8)
    assert open_index("minilm-l6@onnx-int8", 4).count() == 1


def test_an_unchecked_open_deletes_without_recording_an_identity(open_index: OpenIndex) -> None:
    open_index(None, None).delete([1])

    index = open_index("embedder-b", 4)  # the first embedder to write records itself
    index.upsert([1], [EAST])

    with pytest.raises(StoreError, match="'embedder-b'"):
        open_index("embedder-a", 4)


def test_the_server_records_the_identity_in_the_collection_metadata(chroma: ChromaServer) -> None:
    assert server_params(chroma.url, None) is None

    ChromaServerVectorIndex(chroma.url, None, "minilm-l6@torch-bf16", 384)

    recorded = {"format": 2, "embedder": "minilm-l6@torch-bf16", "dimension": 384}
    assert server_params(chroma.url, None) == recorded
    message = ""
    try:
        ChromaServerVectorIndex(chroma.url, None, "bge-small@torch-bf16", 384)
    except StoreError as exc:
        message = str(exc)
    assert f"collection 'chunks' on the Chroma server {chroma.url}" in message
    assert "set FOOTNOTE_EMBEDDER=minilm-l6, or delete the collection 'chunks'" in message


def test_corpora_share_one_server_under_their_own_collections(chroma: ChromaServer, tmp_path: Path) -> None:
    """FOOTNOTE_VECTOR_COLLECTION keeps two corpora apart on one server, each with its own embedder."""
    first = Settings(home=tmp_path / "a", vector_url=chroma.url)
    second = Settings(home=tmp_path / "b", vector_url=chroma.url, vector_collection="corpus-b")
    open_vectors(first, "embedder-a", 4).upsert([1, 2], [EAST, NORTH])
    open_vectors(second, "embedder-b", 4).upsert([1], [WEST])

    assert open_vectors(first, "embedder-a", 4).ids() == {1, 2}
    assert open_vectors(second, "embedder-b", 4).vectors([1])[1] == pytest.approx(WEST, abs=1e-6)
    recorded = server_params(chroma.url, None, "corpus-b")
    assert recorded == {"format": 2, "embedder": "embedder-b", "dimension": 4}
    with pytest.raises(StoreError, match="collection 'corpus-b'"):
        open_vectors(second, "embedder-a", 4)


def test_a_collection_name_chroma_would_refuse_is_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="vector_collection"):
        Settings(home=tmp_path, vector_collection="a b")


def test_the_recorded_runtime_is_read_from_the_server(chroma: ChromaServer, tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", vector_url=chroma.url)
    assert recorded_vector_embedding(settings, "minilm-l6") is None

    open_vectors(settings, "minilm-l6@torch-bf16", 384)

    assert recorded_vector_embedding(settings, "minilm-l6") == ("torch", "bf16")
    assert recorded_vector_embedding(settings, "bge-small") is None
    assert not (tmp_path / "home" / "vectors").exists()


def test_an_unreachable_server_is_one_line_naming_the_url_and_the_setting(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    settings = Settings(home=tmp_path / "home", vector_url=url)

    for attempt in (lambda: open_vectors(settings, "embedder-a", 4), lambda: check_vectors(settings)):
        with pytest.raises(StoreUnavailable) as caught:
            attempt()
        message = str(caught.value)
        assert message.startswith(f"FOOTNOTE_VECTOR_URL={url}: cannot reach the Chroma server")
        assert "\n" not in message and caught.value.retry_after > 0


def test_a_url_that_is_not_one_is_refused(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", vector_url="127.0.0.1:8000")

    with pytest.raises(StoreError, match=r"FOOTNOTE_VECTOR_URL=127\.0\.0\.1:8000 is not a URL; use http://"):
        open_vectors(settings, "embedder-a", 4)


def test_the_token_is_sent_and_a_wrong_one_names_its_setting(chroma: ChromaServer, tmp_path: Path) -> None:
    gate = TokenGate(chroma.url, "s3cret-token")
    try:
        token = SecretStr("s3cret-token")
        settings = Settings(home=tmp_path / "home", vector_url=gate.url, vector_token=token)
        open_vectors(settings, "embedder-a", 4).upsert([1], [EAST])
        assert open_vectors(settings, "embedder-a", 4).count() == 1

        for wrong_token in (SecretStr("wrong-token"), None):
            wrong = settings.model_copy(update={"vector_token": wrong_token})
            with pytest.raises(StoreError, match="set FOOTNOTE_VECTOR_TOKEN to the token it expects"):
                open_vectors(wrong, "embedder-a", 4)
    finally:
        gate.close()


def test_losing_the_server_mid_work_is_store_unavailable(own_chroma: ChromaServer) -> None:
    index = ChromaServerVectorIndex(own_chroma.url, None, "embedder-a", 4)
    index.upsert([1], [EAST])

    own_chroma.stop()

    for call in (lambda: index.query(EAST, 1), lambda: index.upsert([2], [NORTH]), index.ids):
        with pytest.raises(StoreUnavailable, match=f"FOOTNOTE_VECTOR_URL={own_chroma.url}: cannot reach"):
            call()
    own_chroma.start()
    assert index.query(EAST, 1)[0][0] == 1  # the same index works again once the server is back


def test_a_stalled_server_times_out_instead_of_hanging(own_chroma: ChromaServer) -> None:
    index = ChromaServerVectorIndex(own_chroma.url, None, "embedder-a", 4, timeout=1.0)
    index.upsert([1], [EAST])
    pid = own_chroma.pid()

    os.kill(pid, signal.SIGSTOP)
    try:
        wait_until_stopped(pid)
        with pytest.raises(StoreUnavailable, match="cannot reach the Chroma server"):
            index.query(EAST, 1)
    finally:
        os.kill(pid, signal.SIGCONT)


def wait_until_stopped(pid: int, seconds: float = 10.0) -> None:
    """Wait until the kernel shows process `pid` stopped (state T): a signal is delivered
    asynchronously, and on a busy machine the server could still answer the next request."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "T":
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not stop within {seconds} s")


@pytest.mark.parametrize("command", [["serve"], ["search", "apples"]])
def test_the_cli_with_an_unreachable_server_says_so_in_one_line(command: list[str], tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    env = {**os.environ, "FOOTNOTE_HOME": str(tmp_path / "home"), "FOOTNOTE_VECTOR_URL": url}
    env["COLUMNS"] = "400"  # one line, unwrapped

    result = subprocess.run(
        [sys.executable, "-m", "footnote", *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )

    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"FOOTNOTE_VECTOR_URL={url}: cannot reach the Chroma server" in lines[0]
