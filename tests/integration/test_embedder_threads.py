"""Counting tokens on a parsing thread while the main thread embeds (as ingest does) is safe."""

from __future__ import annotations

import threading

import pytest

from footnote.models.base import Embedder


@pytest.fixture(params=["onnx", "torch"])
def embedder(request: pytest.FixtureRequest) -> Embedder:
    """Both runtimes the bundled MiniLM runs on."""
    name = "real_embedder" if request.param == "onnx" else "torch_embedder"
    fixture: Embedder = request.getfixturevalue(name)
    return fixture


def test_counting_tokens_while_embedding_does_not_corrupt_batches(embedder: Embedder) -> None:
    texts = [" ".join(["word"] * (5 + (i * 37) % 200)) for i in range(64)]
    errors: list[BaseException] = []
    stop = threading.Event()

    def count() -> None:
        try:
            while not stop.is_set():
                for text in texts:
                    embedder.count_tokens(text)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=count)
    thread.start()
    try:
        for _ in range(2):
            vectors = embedder.embed_many(texts, 32)
            assert len(vectors) == len(texts)
    finally:
        stop.set()
        thread.join()
    assert not errors
    assert embedder.count_tokens("two words") == 4  # [CLS] two words [SEP]


def test_a_single_query_embeds_as_a_batch_does_even_on_many_threads(embedder: Embedder) -> None:
    queries = ["Who invented the Fresnel lens?", "咖啡起源于埃塞俄比亚", " ".join(["lighthouse"] * 900)]
    expected = embedder.embed_batch(queries)
    results: dict[int, list[list[float]]] = {}

    def embed_all(worker: int) -> None:
        results[worker] = [embedder.embed(query) for query in queries * 3]

    threads = [threading.Thread(target=embed_all, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    for vectors in results.values():
        for vector, reference in zip(vectors, expected * 3, strict=True):
            assert len(vector) == len(reference)
            assert sum(a * b for a, b in zip(vector, reference, strict=True)) > 0.99999
