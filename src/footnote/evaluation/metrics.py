"""Ranking metrics over judged queries: nDCG@k, MRR@k and Recall@k.

Definitions follow trec_eval (and so ir-measures and BEIR): nDCG uses the
judgement grade as the gain and log2(rank + 1) as the discount, the ideal
ranking is built from the judgements alone, and only grades above zero count
as relevant for MRR and recall.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Qrels = Mapping[str, Mapping[str, int]]  # query id -> document id -> grade
Run = Mapping[str, Sequence[str]]  # query id -> document ids, best first


def ndcg_at(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    ideal_gains = sorted((grade for grade in judged.values() if grade > 0), reverse=True)[:k]
    ideal = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(ideal_gains, start=1))
    if ideal == 0:
        return 0.0
    gained = sum(
        max(judged.get(doc, 0), 0) / math.log2(rank + 1) for rank, doc in enumerate(ranking[:k], start=1)
    )
    return gained / ideal


def reciprocal_rank_at(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    for rank, doc in enumerate(ranking[:k], start=1):
        if judged.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def recall_at(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    relevant = {doc for doc, grade in judged.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mean_metrics(run: Run, qrels: Qrels) -> dict[str, float]:
    """Mean nDCG@10, MRR@10, Recall@10 and Recall@100 over every query in `qrels`.

    As in trec_eval (and BEIR): a judged query missing from `run`, or one with no
    relevant document, counts as zero.
    """
    queries = list(qrels)
    if not queries:
        return {"ndcg@10": 0.0, "mrr@10": 0.0, "recall@10": 0.0, "recall@100": 0.0}
    totals = {"ndcg@10": 0.0, "mrr@10": 0.0, "recall@10": 0.0, "recall@100": 0.0}
    for query in queries:
        ranking = _unique(run.get(query, ()))
        judged = qrels[query]
        totals["ndcg@10"] += ndcg_at(ranking, judged, 10)
        totals["mrr@10"] += reciprocal_rank_at(ranking, judged, 10)
        totals["recall@10"] += recall_at(ranking, judged, 10)
        totals["recall@100"] += recall_at(ranking, judged, 100)
    return {name: total / len(queries) for name, total in totals.items()}


def _unique(ranking: Sequence[str]) -> list[str]:
    """A document listed twice counts once, at its best rank."""
    return list(dict.fromkeys(ranking))
