"""An index is searched only with the embedder identity it was built with, and the refusal's
fix works: deleting the index and ingesting again embeds every chunk anew."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from footnote.application import create_app
from footnote.config import Settings
from footnote.errors import StoreError
from tests.fakes import HashingEmbedder
from tests.unit.server_fixtures import write_corpus


class TorchRunEmbedder(HashingEmbedder):
    """The same model run by torch: its vectors may differ a little, so its identity does."""

    runtime = "torch"


def test_identity_names_model_runtime_and_precision() -> None:
    assert HashingEmbedder().identity == "hashing@python-fp32"
    assert TorchRunEmbedder().identity == "hashing@torch-fp32"


@pytest.mark.embedded_stores  # the Chroma server's refusal: tests/integration/test_vector_stores.py
def test_an_index_from_another_runtime_is_refused_and_rebuilt_as_the_refusal_says(
    settings: Settings, tmp_path: Path
) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    built = create_app(settings, embedder=TorchRunEmbedder())
    built.ingest([corpus])
    chunks = built.catalog.count_chunks()
    built.close()

    other = create_app(settings, embedder=HashingEmbedder())
    with pytest.raises(StoreError) as refused:
        _ = other.vectors
    message = str(refused.value)
    assert "'hashing@torch-fp32'" in message and "'hashing@python-fp32'" in message
    assert "set FOOTNOTE_EMBED_RUNTIME=torch" in message
    assert f"delete {settings.vector_path} and run `footnote ingest`" in message
    other.close()

    shutil.rmtree(settings.vector_path)
    rebuilt = create_app(settings, embedder=HashingEmbedder())
    rebuilt.ingest([corpus])
    assert rebuilt.vectors.count() == rebuilt.catalog.count_chunks() == chunks > 0
    rebuilt.close()
