"""Counting tokens on a parsing thread while the main thread embeds (as ingest does) is safe."""

from __future__ import annotations

import threading

from footnote.models.base import Embedder


def test_counting_tokens_while_embedding_does_not_corrupt_batches(real_embedder: Embedder) -> None:
    texts = [" ".join(["word"] * (5 + (i * 37) % 200)) for i in range(64)]
    errors: list[BaseException] = []
    stop = threading.Event()

    def count() -> None:
        try:
            while not stop.is_set():
                for text in texts:
                    real_embedder.count_tokens(text)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=count)
    thread.start()
    try:
        for _ in range(2):
            vectors = real_embedder.embed_many(texts, 32)
            assert len(vectors) == len(texts)
    finally:
        stop.set()
        thread.join()
    assert not errors
    assert real_embedder.count_tokens("two words") == 4  # [CLS] two words [SEP]


def test_a_single_query_embeds_as_a_batch_does_even_on_many_threads(real_embedder: Embedder) -> None:
    queries = ["Who invented the Fresnel lens?", "咖啡起源于埃塞俄比亚", " ".join(["lighthouse"] * 900)]
    expected = real_embedder.embed_batch(queries)
    results: dict[int, list[list[float]]] = {}

    def embed_all(worker: int) -> None:
        results[worker] = [real_embedder.embed(query) for query in queries * 3]

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
