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
