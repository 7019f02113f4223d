"""Sweep fusion settings on an index built by `footnote eval retrieval --index-dir DIR`.

Each query's keyword and dense lists are fetched once; every setting is then a
cheap re-fusion. The judged queries are split at random (`--seed`) into a tuning part
(`--tune-fraction`) and a held-out part: settings are ranked on the tuning queries, and the
best one is reported, beside the default setting, on the held-out queries it never saw.

    python benchmarks/retrieval_tune.py ../shared/data/scifact /tmp/scifact-index --tune-fraction 0.5
"""

from __future__ import annotations

import argparse
import itertools
import random
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


def split(query_ids: list[str], tune_fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """The tuning and the held-out query ids: disjoint, together every id, drawn by `seed`."""
    shuffled = sorted(query_ids)
    random.Random(seed).shuffle(shuffled)
    cut = min(max(1, round(len(shuffled) * tune_fraction)), len(shuffled) - 1)
    return sorted(shuffled[:cut]), sorted(shuffled[cut:])


def subset(lists: Lists, qrels: Qrels, query_ids: list[str]) -> tuple[Lists, Qrels]:
    return {q: lists[q] for q in query_ids}, {q: qrels[q] for q in query_ids if q in qrels}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("index", type=Path)
    parser.add_argument("--tune-fraction", type=float, default=0.5, help="share of queries tuned on")
    parser.add_argument("--seed", type=int, default=0, help="seed of the tune/held-out split")
    parser.add_argument("--depth", type=int, default=300)
    args = parser.parse_args()
    dataset = load_beir(args.dataset)
    settings = Settings(home=args.index)
    app = create_app(settings)
    lists, corpus_id = fetch_lists(app, dataset.queries, args.depth)
    app.close()
    tune_ids, held_out_ids = split(list(lists), args.tune_fraction, args.seed)
    tune, tune_qrels = subset(lists, dataset.qrels, tune_ids)
    held_out, held_out_qrels = subset(lists, dataset.qrels, held_out_ids)
    print(f"{len(tune)} queries tuned on, {len(held_out)} held out (seed {args.seed})")
    keyword_only: Lists = {q: (k, []) for q, (k, _) in held_out.items()}
    dense_only: Lists = {q: ([], d) for q, (_, d) in held_out.items()}
    print(
        f"held out: keyword only {ndcg(keyword_only, corpus_id, held_out_qrels, (60, 1.0, args.depth)):.4f}"
    )
    print(f"held out: dense only   {ndcg(dense_only, corpus_id, held_out_qrels, (60, 1.0, args.depth)):.4f}")
    grid = itertools.product((5, 10, 20, 40, 60, 100), (0.6, 0.8, 1.0, 1.2, 1.5, 2.0), (50, 100, 300))
    rows = sorted(((ndcg(tune, corpus_id, tune_qrels, s), s) for s in grid), reverse=True)
    for value, (k, weight, depth) in rows[:15]:
        print(f"tuning: hybrid {value:.4f}  rrf_k={k} keyword_weight={weight} dense_weight=1.0 depth={depth}")
    best = rows[0][1]
    # The default's keyword weight is relative to its dense weight, as the grid's is to 1.0.
    weight = settings.rrf_keyword_weight / settings.rrf_dense_weight
    default = (settings.rrf_k, weight, min(settings.keyword_candidates, settings.dense_candidates))
    for name, setting in (("best on tuning", best), ("default", default)):
        k, weight, depth = setting
        value = ndcg(held_out, corpus_id, held_out_qrels, setting)
        print(f"held out: {name:14} hybrid {value:.4f}  rrf_k={k} keyword_weight={weight:g} depth={depth}")


if __name__ == "__main__":
    main()
