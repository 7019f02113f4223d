"""Reciprocal rank fusion (Cormack, Clarke and Büttcher, 2009)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]],
    k: int = 60,
    weights: Sequence[float] | None = None,
    votes: Sequence[Mapping[int, float]] | None = None,
) -> list[tuple[int, float]]:
    """Fuse ranked id lists: score(d) = sum_i w_i v_i(d) / (k + rank_i(d)), ranks 1-based.

    `votes` holds, per ranking, the share of its vote each item gets (1 where absent): a
    retriever that cannot read an item's language votes 0 on it and keeps its ranks elsewhere.
    Ties are broken by the best single rank, then by id, so results are deterministic.
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking is needed")
    if votes is not None and len(votes) != len(rankings):
        raise ValueError("one set of votes per ranking is needed")
    scores: dict[int, float] = {}
    best_rank: dict[int, int] = {}
    for index, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        shares = votes[index] if votes is not None else {}
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight * shares.get(item, 1.0) / (k + rank)
            best_rank[item] = min(best_rank.get(item, rank), rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], best_rank[pair[0]], pair[0]))
