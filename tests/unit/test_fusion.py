"""Reciprocal rank fusion checked against hand-computed scores and an exact reference."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import pytest

from footnote.retrieval.fusion import reciprocal_rank_fusion


def reference_rrf(
    rankings: Sequence[Sequence[int]], k: int, weights: Sequence[int]
) -> list[tuple[int, Fraction]]:
    """Exact RRF in rationals, sorted by score, then best rank, then id."""
    scores: dict[int, Fraction] = {}
    best: dict[int, int] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, Fraction(0)) + Fraction(weight, k + rank)
            best[item] = min(best.get(item, rank), rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], best[pair[0]], pair[0]))


def test_hand_computed_example_with_k_60() -> None:
    fused = reciprocal_rank_fusion([[1, 2, 3], [3, 1, 4]], k=60)

    assert [item for item, _ in fused] == [1, 3, 2, 4]
    scores = dict(fused)
    assert scores[1] == pytest.approx(1 / 61 + 1 / 62, rel=1e-12)
    assert scores[3] == pytest.approx(1 / 63 + 1 / 61, rel=1e-12)
    assert scores[2] == pytest.approx(1 / 62, rel=1e-12)
    assert scores[4] == pytest.approx(1 / 63, rel=1e-12)


def test_default_k_is_60() -> None:
    assert reciprocal_rank_fusion([[8, 9]]) == reciprocal_rank_fusion([[8, 9]], k=60)
    assert dict(reciprocal_rank_fusion([[8, 9]]))[9] == pytest.approx(1 / 62, rel=1e-12)


def test_an_item_in_both_lists_beats_one_ranked_first_in_only_one() -> None:
    fused = reciprocal_rank_fusion([[10, 20], [30, 20]], k=60)

    assert fused[0][0] == 20
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 62, rel=1e-12)


def test_weights_scale_each_list() -> None:
    rankings = [[1, 2], [2, 1]]

    first_heavy = reciprocal_rank_fusion(rankings, k=60, weights=[2.0, 1.0])
    second_heavy = reciprocal_rank_fusion(rankings, k=60, weights=[1.0, 2.0])

    assert [item for item, _ in first_heavy] == [1, 2]
    assert dict(first_heavy)[1] == pytest.approx(2 / 61 + 1 / 62, rel=1e-12)
    assert dict(first_heavy)[2] == pytest.approx(2 / 62 + 1 / 61, rel=1e-12)
    assert [item for item, _ in second_heavy] == [2, 1]
    assert dict(second_heavy)[2] == pytest.approx(1 / 62 + 2 / 61, rel=1e-12)


def test_zero_weight_removes_a_list_from_the_order() -> None:
    fused = reciprocal_rank_fusion([[1, 2], [2, 3]], k=60, weights=[1.0, 0.0])

    assert [item for item, _ in fused] == [1, 2, 3]
    assert dict(fused)[3] == 0.0


def test_equal_scores_are_broken_by_lower_id() -> None:
    # 5 and 7 both score 1/61 + 1/62 and both have best rank 1.
    for rankings in ([[5, 7], [7, 5]], [[7, 5], [5, 7]]):
        fused = reciprocal_rank_fusion(rankings, k=60)
        assert [item for item, _ in fused] == [5, 7]
        assert fused[0][1] == fused[1][1]


def test_equal_scores_are_broken_by_best_rank_before_id() -> None:
    # With k=0: 10 and 30 score 1/1 at rank 1; 20 scores 1/2 + 1/2 = 1 with best rank 2.
    fused = reciprocal_rank_fusion([[10, 20], [30, 20]], k=0)

    assert fused == [(10, 1.0), (30, 1.0), (20, 1.0)]


def test_order_does_not_depend_on_list_order() -> None:
    rankings = [[4, 9, 2, 7], [9, 4, 7, 2], [2, 7, 9, 4]]

    forward = reciprocal_rank_fusion(rankings, k=60)
    backward = reciprocal_rank_fusion(list(reversed(rankings)), k=60)

    assert [item for item, _ in forward] == [item for item, _ in backward]


@pytest.mark.parametrize("k", [1, 10, 60])
def test_matches_the_exact_reference(k: int) -> None:
    rankings = [[3, 1, 4, 15, 9, 2, 6], [5, 3, 5_000, 8, 9, 7], [9, 3, 2, 38, 4, 6], [1]]
    weights = [1, 2, 1, 3]

    fused = reciprocal_rank_fusion(rankings, k=k, weights=[float(w) for w in weights])
    expected = reference_rrf(rankings, k, weights)

    assert [item for item, _ in fused] == [item for item, _ in expected]
    for (_, score), (_, exact) in zip(fused, expected, strict=True):
        assert score == pytest.approx(float(exact), rel=1e-12)


@pytest.mark.parametrize("weights", [[1.0], [1.0, 1.0, 1.0]])
def test_weight_count_must_match_ranking_count(weights: list[float]) -> None:
    with pytest.raises(ValueError, match="one weight per ranking"):
        reciprocal_rank_fusion([[1, 2], [2, 1]], weights=weights)


def test_empty_weights_for_two_rankings_is_a_mismatch() -> None:
    with pytest.raises(ValueError, match="one weight per ranking"):
        reciprocal_rank_fusion([[1, 2], [2, 1]], weights=[])


def test_empty_inputs_give_empty_results() -> None:
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []
    assert reciprocal_rank_fusion([], weights=[]) == []


def test_one_empty_list_leaves_the_other_ranking_as_is() -> None:
    fused = reciprocal_rank_fusion([[], [7, 3, 5]], k=60)

    assert fused == [
        (7, pytest.approx(1 / 61, rel=1e-12)),
        (3, pytest.approx(1 / 62, rel=1e-12)),
        (5, pytest.approx(1 / 63, rel=1e-12)),
    ]


def test_votes_scale_single_items_of_a_list() -> None:
    # The second list has no vote on item 2 and half a vote on item 3.
    fused = reciprocal_rank_fusion([[1, 2], [2, 3]], k=60, votes=[{}, {2: 0.0, 3: 0.5}])

    assert [item for item, _ in fused] == [1, 2, 3]
    assert dict(fused)[2] == pytest.approx(1 / 62, rel=1e-12)
    assert dict(fused)[3] == pytest.approx(0.5 / 62, rel=1e-12)


def test_votes_of_one_leave_the_fusion_unchanged() -> None:
    rankings = [[3, 1, 4, 15, 9], [5, 3, 8, 9, 7]]

    voted = reciprocal_rank_fusion(rankings, k=60, votes=[dict.fromkeys(r, 1.0) for r in rankings])

    assert voted == reciprocal_rank_fusion(rankings, k=60)


def test_vote_count_must_match_ranking_count() -> None:
    with pytest.raises(ValueError, match="one set of votes per ranking"):
        reciprocal_rank_fusion([[1, 2], [2, 1]], votes=[{}])
