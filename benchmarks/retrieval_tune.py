"""Sweep fusion settings on an index built by `footnote eval retrieval --index-dir DIR`.

Each query's keyword and dense lists are fetched once; every setting is then a
cheap re-fusion. Tune on a subset (`--first N`), report on the full test set.

    python benchmarks/retrieval_tune.py ../shared/data/scifact /tmp/scifact-index --first 150
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.evaluation.beir import load_beir
from footnote.evaluation.metrics import Qrels, mean_metrics
from footnote.evaluation.retrieval import PATH_PREFIX
from footnote.retrieval.fusion import reciprocal_rank_fusion
from footnote.retrieval.keyword import fts_query

Setting = tuple[int, float, int]  # rrf k, keyword weight (dense weight 1), candidate depth
Lists = dict[str, tuple[list[int], list[int]]]  # query id -> (keyword chunk ids, dense chunk ids)


def fetch_lists(app: Application, queries: dict[str, str], depth: int) -> tuple[Lists, dict[int, str]]:
    """Both candidate lists of every query, and the corpus id of every chunk in them."""
    lists: Lists = {}
    for query_id, text in queries.items():
        keyword = [i for i, _ in app.catalog.keyword_search(fts_query(text), depth)]
        dense = [i for i, _ in app.vectors.query(app.embedder.embed(text), depth)]
        lists[query_id] = (keyword, dense)
    every = sorted({i for pair in lists.values() for ranking in pair for i in ranking})
    corpus_id = {i: r.path.removeprefix(PATH_PREFIX) for i, r in app.catalog.chunks(every).items()}
    return lists, corpus_id


def ndcg(lists: Lists, corpus_id: dict[int, str], qrels: Qrels, setting: Setting) -> float:
    """Chunk-level fusion as in the retriever, then each corpus id at its best chunk's rank."""
    k, keyword_weight, depth = setting
    run = {}
    for query_id, (keyword, dense) in lists.items():
        fused = reciprocal_rank_fusion([keyword[:depth], dense[:depth]], k, [keyword_weight, 1.0])
        run[query_id] = list(dict.fromkeys(corpus_id[i] for i, _ in fused))
    return mean_metrics(run, qrels)["ndcg@10"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("index", type=Path)
    parser.add_argument("--first", type=int, default=None)
    parser.add_argument("--depth", type=int, default=300)
    args = parser.parse_args()
    dataset = load_beir(args.dataset, limit_queries=args.first)
    app = create_app(Settings(home=args.index))
    lists, corpus_id = fetch_lists(app, dataset.queries, args.depth)
    app.close()
    keyword_only: Lists = {q: (k, []) for q, (k, _) in lists.items()}
    dense_only: Lists = {q: ([], d) for q, (_, d) in lists.items()}
    print(f"{len(lists)} queries")
    print(f"keyword only {ndcg(keyword_only, corpus_id, dataset.qrels, (60, 1.0, args.depth)):.4f}")
    print(f"dense only   {ndcg(dense_only, corpus_id, dataset.qrels, (60, 1.0, args.depth)):.4f}")
    grid = itertools.product((5, 10, 20, 40, 60, 100), (0.6, 0.8, 1.0, 1.2, 1.5, 2.0), (50, 100, 300))
    rows = sorted(((ndcg(lists, corpus_id, dataset.qrels, s), s) for s in grid), reverse=True)
    for value, (k, weight, depth) in rows[:15]:
        print(f"hybrid {value:.4f}  rrf_k={k} keyword_weight={weight} dense_weight=1.0 depth={depth}")


if __name__ == "__main__":
    main()
