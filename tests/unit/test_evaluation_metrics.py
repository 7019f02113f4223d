"""Ranking metrics checked by hand and against ir-measures (trec_eval)."""

from __future__ import annotations

import math
import random

import pytest

from footnote.evaluation.metrics import mean_metrics, ndcg_at, recall_at, reciprocal_rank_at

JUDGED = {"d2": 1, "d3": 2, "d9": 1}
RANKING = ["d1", "d2", "d3", "d4"]


def test_ndcg_by_hand() -> None:
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)

    assert ndcg_at(RANKING, JUDGED, 10) == pytest.approx(dcg / ideal, rel=1e-12)
    assert ndcg_at(RANKING, JUDGED, 10) == pytest.approx(0.520909, abs=1e-6)


def test_ndcg_cut_at_k_uses_an_ideal_of_k_documents() -> None:
    assert ndcg_at(RANKING, JUDGED, 2) == pytest.approx((1 / math.log2(3)) / (2 + 1 / math.log2(3)))


def test_perfect_and_empty_rankings() -> None:
    assert ndcg_at(["d3", "d2", "d9"], JUDGED, 10) == pytest.approx(1.0)
    assert ndcg_at([], JUDGED, 10) == 0.0
    assert ndcg_at(["d1"], {}, 10) == 0.0


def test_reciprocal_rank_by_hand() -> None:
    assert reciprocal_rank_at(RANKING, JUDGED, 10) == 0.5
    assert reciprocal_rank_at(RANKING, JUDGED, 1) == 0.0
    assert reciprocal_rank_at(["d1", "d4"], JUDGED, 10) == 0.0


def test_recall_by_hand() -> None:
    assert recall_at(RANKING, JUDGED, 10) == pytest.approx(2 / 3)
    assert recall_at(RANKING, JUDGED, 2) == pytest.approx(1 / 3)
    assert recall_at(RANKING, {"d1": 0}, 10) == 0.0  # grade 0 is judged, not relevant


def test_mean_counts_missing_queries_as_zero_and_duplicates_once() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": ["a", "a", "c"]}

    scores = mean_metrics(run, qrels)

    assert scores["ndcg@10"] == pytest.approx(0.5)
    assert scores["mrr@10"] == pytest.approx(0.5)
    assert scores["recall@100"] == pytest.approx(0.5)


def test_matches_ir_measures_on_a_random_run() -> None:
    ir_measures = pytest.importorskip("ir_measures")
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(300)]
    qrels = {
        f"q{q}": {d: rng.choice([0, 1, 1, 2]) for d in rng.sample(docs, rng.randint(1, 8))} for q in range(40)
    }
    run = {query: rng.sample(docs, 150) for query in qrels}
    for query in list(qrels)[:10]:  # some queries with their judged documents near the top
        run[query] = list(qrels[query]) + [d for d in run[query] if d not in qrels[query]]

    ours = mean_metrics(run, qrels)

    reference = ir_measures.calc_aggregate(
        [ir_measures.nDCG @ 10, ir_measures.RR @ 10, ir_measures.R @ 10, ir_measures.R @ 100],
        [ir_measures.Qrel(q, d, g) for q, judged in qrels.items() for d, g in judged.items()],
        # Strictly decreasing scores, so trec_eval keeps our order.
        [ir_measures.ScoredDoc(q, d, float(len(r) - i)) for q, r in run.items() for i, d in enumerate(r)],
    )
    assert ours["ndcg@10"] == pytest.approx(reference[ir_measures.nDCG @ 10], abs=1e-9)
    assert ours["mrr@10"] == pytest.approx(reference[ir_measures.RR @ 10], abs=1e-9)
    assert ours["recall@10"] == pytest.approx(reference[ir_measures.R @ 10], abs=1e-9)
    assert ours["recall@100"] == pytest.approx(reference[ir_measures.R @ 100], abs=1e-9)
