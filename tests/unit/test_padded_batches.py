"""Batches of texts of mixed lengths: similar lengths together, padded positions bounded."""

from __future__ import annotations

from footnote.models.base import padded_batches


def test_every_index_is_batched_once_shortest_first() -> None:
    lengths = [40, 5, 300, 12, 5, 90, 18]
    batches = padded_batches(lengths, rows=3, positions=10_000)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    flat = [lengths[i] for batch in batches for i in batch]
    assert flat == sorted(lengths)
    assert all(len(batch) <= 3 for batch in batches)


def test_padded_positions_stay_within_the_limit_and_a_longer_text_goes_alone() -> None:
    lengths = [10] * 20 + [200, 600]
    batches = padded_batches(lengths, rows=32, positions=100)
    for batch in batches:
        longest = max(lengths[i] for i in batch)
        assert len(batch) * longest <= 100 or len(batch) == 1
    assert [len(batch) for batch in batches] == [10, 10, 1, 1]


def test_nothing_to_batch() -> None:
    assert padded_batches([], rows=8) == []
