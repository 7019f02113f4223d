"""The Chroma vector index on disk: cosine queries, deletes, and the embedder check in params.json."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from footnote.errors import StoreError
from footnote.store.vectors import (
    ANN_MIN_SEARCH,
    ANN_OVERFETCH,
    INDEX_FORMAT_VERSION,
    ChromaVectorIndex,
    VectorIndex,
)


def unit(*values: float) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


EAST = unit(1, 0, 0, 0)
NORTH_EAST = unit(1, 1, 0, 0)
NORTH = unit(0, 1, 0, 0)
UP = unit(0, 0, 1, 0)
WEST = unit(-1, 0, 0, 0)


@pytest.fixture
def index_path(tmp_path: Path) -> Path:
    return tmp_path / "vectors"


def open_index(path: Path, name: str | None = "embedder-a", dimension: int | None = 4) -> ChromaVectorIndex:
    return ChromaVectorIndex(path, name, dimension)


def test_is_a_vector_index(index_path: Path) -> None:
    assert isinstance(open_index(index_path), VectorIndex)


def test_upsert_then_query_gives_cosine_similarity_best_first(index_path: Path) -> None:
    index = open_index(index_path)
    index.upsert([1, 2, 3, 4], [WEST, NORTH, NORTH_EAST, EAST])

    results = index.query(EAST, limit=4)

    assert [chunk_id for chunk_id, _ in results] == [4, 3, 2, 1]
    similarities = [similarity for _, similarity in results]
    assert similarities == pytest.approx([1.0, 1 / math.sqrt(2), 0.0, -1.0], abs=1e-5)
    assert [chunk_id for chunk_id, _ in index.query(EAST, limit=2)] == [4, 3]
    assert index.count() == 4


def test_query_of_a_mixed_vector(index_path: Path) -> None:
    index = open_index(index_path)
    index.upsert([10, 20], [EAST, NORTH])

    results = index.query(unit(3, 4, 0, 0), limit=5)

    # cos = 4/5 with NORTH and 3/5 with EAST.
    assert [chunk_id for chunk_id, _ in results] == [20, 10]
    assert [similarity for _, similarity in results] == pytest.approx([0.8, 0.6], abs=1e-5)


def test_a_limit_above_the_count_returns_everything(index_path: Path) -> None:
    index = open_index(index_path)
    index.upsert([1, 2], [EAST, NORTH])

    assert len(index.query(EAST, limit=50)) == 2


def test_equal_similarities_come_back_in_chunk_id_order(index_path: Path) -> None:
    # Two indexes of the same vectors (embedded, and the server it was moved to) rank alike only
    # if equal similarities are settled the same way in both: by chunk id, not by the graph.
    index = open_index(index_path)
    index.upsert([30, 10, 40, 20], [NORTH, NORTH, EAST, NORTH])

    assert [chunk_id for chunk_id, _ in index.query(NORTH, limit=4)] == [10, 20, 30, 40]
    assert [chunk_id for chunk_id, _ in index.query(NORTH, limit=2)] == [10, 20]


def test_the_graph_is_searched_wider_than_the_limit_and_the_nearest_kept(
    index_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = open_index(index_path)
    index.upsert([1, 2, 3, 4], [WEST, NORTH, NORTH_EAST, EAST])
    asked: list[int] = []
    search = index._collection.query

    def recorded(**kwargs: Any) -> Any:
        asked.append(kwargs["n_results"])
        return search(**kwargs)

    monkeypatch.setattr(index._collection, "query", recorded)

    assert [chunk_id for chunk_id, _ in index.query(EAST, limit=1)] == [4]
    assert [chunk_id for chunk_id, _ in index.query(EAST, limit=2)] == [4, 3]
    wide = ANN_MIN_SEARCH + 1
    assert [chunk_id for chunk_id, _ in index.query(EAST, limit=wide)] == [4, 3, 2, 1]
    assert asked == [ANN_MIN_SEARCH, ANN_MIN_SEARCH, wide * ANN_OVERFETCH]
    assert ANN_OVERFETCH > 1 and ANN_MIN_SEARCH > 1
    assert index.query(EAST, limit=0) == []


def test_query_of_an_empty_index_is_empty(index_path: Path) -> None:
    index = open_index(index_path)

    assert index.count() == 0
    assert index.query(EAST, limit=5) == []


def test_upsert_replaces_the_vector_of_an_existing_id(index_path: Path) -> None:
    index = open_index(index_path)
    index.upsert([1, 2], [EAST, NORTH])

    index.upsert([1], [UP])

    assert index.count() == 2
    assert index.query(UP, limit=1)[0][0] == 1
    assert index.query(UP, limit=1)[0][1] == pytest.approx(1.0, abs=1e-5)
    assert index.query(EAST, limit=2)[0][1] < 0.5


def test_delete_removes_ids(index_path: Path) -> None:
    index = open_index(index_path)
    index.upsert([1, 2, 3], [EAST, NORTH_EAST, NORTH])

    index.delete([1, 3])

    assert index.count() == 1
    assert [chunk_id for chunk_id, _ in index.query(EAST, limit=5)] == [2]


def test_empty_upsert_and_delete_do_nothing(index_path: Path) -> None:
    index = open_index(index_path)
    index.upsert([1], [EAST])

    index.upsert([], [])
    index.delete([])

    assert index.count() == 1


def test_deleting_unknown_ids_is_harmless(index_path: Path) -> None:
    index = open_index(index_path)
    index.upsert([1], [EAST])

    index.delete([404])

    assert index.count() == 1


def test_params_json_records_the_embedder(index_path: Path) -> None:
    open_index(index_path, "embedder-a", 4)

    params = json.loads((index_path / "params.json").read_text())

    assert params == {"format": INDEX_FORMAT_VERSION, "embedder": "embedder-a", "dimension": 4}


def test_vectors_persist_across_reopening(index_path: Path) -> None:
    open_index(index_path).upsert([1, 2], [EAST, NORTH])

    reopened = open_index(index_path)

    assert reopened.count() == 2
    assert reopened.query(NORTH, limit=1)[0][0] == 2


def test_another_embedder_is_refused_with_both_identities_and_the_fix(index_path: Path) -> None:
    open_index(index_path, "embedder-a@onnx-fp32", 4).upsert([1], [EAST])

    with pytest.raises(StoreError) as caught:
        open_index(index_path, "embedder-b@onnx-fp32", 4)

    message = str(caught.value)
    assert "'embedder-a@onnx-fp32' (4 dimensions)" in message
    assert "'embedder-b@onnx-fp32' (4)" in message
    assert "set FOOTNOTE_EMBEDDER=embedder-a, or delete" in message
    assert "run `footnote ingest`" in message
    assert "FOOTNOTE_HOME" in message
    assert str(index_path) in message


@pytest.mark.parametrize(
    ("built_with", "wanted", "fix"),
    [
        ("minilm-l6@onnx-fp32", "minilm-l6@onnx-int8", "set FOOTNOTE_EMBED_PRECISION=fp32, or"),
        ("minilm-l6@onnx-int8", "minilm-l6@onnx-fp32", "set FOOTNOTE_EMBED_PRECISION=int8, or"),
        ("minilm-l6@torch-int8", "minilm-l6@onnx-int8", "set FOOTNOTE_EMBED_RUNTIME=torch, or"),
        ("minilm-l6@onnx-int8", "minilm-l6@torch-int8", "set FOOTNOTE_EMBED_RUNTIME=onnx, or"),
        (
            "minilm-l6@torch-fp32",
            "minilm-l6@onnx-int8",
            "set FOOTNOTE_EMBED_RUNTIME=torch and FOOTNOTE_EMBED_PRECISION=fp32, or",
        ),
        (
            "minilm-l6@torch-bf16",
            "minilm-l6@onnx-int8",
            "set FOOTNOTE_EMBED_RUNTIME=torch and FOOTNOTE_EMBED_PRECISION=bf16, or",
        ),
        ("minilm-l6@onnx-int8", "bge-small@onnx-int8", "set FOOTNOTE_EMBEDDER=minilm-l6, or"),
        # No setting selects a runtime of an embedder passed in code: rebuilding is the fix.
        ("hashing@python-fp32", "hashing@onnx-fp32", r"\(4\); delete"),
    ],
)
def test_an_index_built_another_way_names_the_settings_that_open_it(
    index_path: Path, built_with: str, wanted: str, fix: str
) -> None:
    open_index(index_path, built_with, 4).upsert([1], [EAST])
    with pytest.raises(StoreError, match=fix):
        open_index(index_path, wanted, 4)


def test_an_index_that_recorded_no_runtime_is_refused_with_the_rebuild(index_path: Path) -> None:
    """Format 1 recorded `minilm-l6-int8` for ONNX and torch vectors alike."""
    index_path.mkdir()
    legacy = {"format": 1, "embedder": "minilm-l6-int8", "dimension": 4}
    (index_path / "params.json").write_text(json.dumps(legacy))

    with pytest.raises(StoreError) as caught:
        open_index(index_path, "minilm-l6@onnx-int8", 4)

    message = str(caught.value)
    assert "'minilm-l6-int8'" in message and "did not record the embedder's runtime" in message
    assert f"delete {index_path} and run `footnote ingest`" in message
    assert json.loads((index_path / "params.json").read_text()) == legacy


def test_another_dimension_is_refused(index_path: Path) -> None:
    open_index(index_path, "embedder-a", 4)

    with pytest.raises(StoreError, match=r"'embedder-a' \(4 dimensions\), not 'embedder-a' \(384\); delete"):
        open_index(index_path, "embedder-a", 384)


def test_a_refused_open_leaves_params_json_as_it_was(index_path: Path) -> None:
    open_index(index_path, "embedder-a", 4)
    before = (index_path / "params.json").read_text()

    with pytest.raises(StoreError):
        open_index(index_path, "embedder-b", 8)

    assert (index_path / "params.json").read_text() == before


def test_no_embedder_name_skips_the_check(index_path: Path) -> None:
    open_index(index_path, "embedder-a", 4).upsert([1, 2], [EAST, NORTH])
    before = (index_path / "params.json").read_text()

    unchecked = ChromaVectorIndex(index_path, None, None)
    unchecked.delete([1])

    assert unchecked.count() == 1
    assert (index_path / "params.json").read_text() == before
    assert open_index(index_path, "embedder-a", 4).count() == 1


def test_no_embedder_name_writes_no_params(tmp_path: Path) -> None:
    path = tmp_path / "fresh"

    ChromaVectorIndex(path, None, None)

    assert path.is_dir()
    assert not (path / "params.json").exists()


def test_an_embedded_index_deleted_and_built_again_in_one_process_opens_afresh(tmp_path: Path) -> None:
    # Chroma shares one open database per folder within a process: the closed index lets go of it,
    # so the folder built again is not served from the deleted files ("readonly database").
    folder = tmp_path / "vectors"
    first = ChromaVectorIndex(folder, "words@python-fp32", 3)
    first.upsert([1, 2], [[0.1, 0.2, 0.3], [0.3, 0.2, 0.1]])
    first.close()
    shutil.rmtree(folder)
    again = ChromaVectorIndex(folder, "words@python-fp32", 3)
    again.upsert([7], [[0.1, 0.2, 0.3]])
    assert again.ids() == {7}
    again.close()
