"""Chinese retrieval: which keyword terms, and how much vote for an embedder that cannot read it.

`terms` indexes every passage of a BEIR set as one chunk of a real catalog (SQLite FTS5)
once per way of cutting Chinese text into grams, and scores keyword search:

- `bigram`: character pairs in index and query (the usual CJK baseline);
- `unigram+bigram`: characters and pairs in index and query;
- `words`: what footnote ships (`footnote.core.cjk`): jieba words and characters in
  the index, jieba words in the query.

Every scheme's query drops the Chinese question and function words (`keyword.CHINESE_STOP_WORDS`)
it makes.

`fusion` reads an index built by `footnote eval retrieval DATASET --index-dir DIR` and runs
the real retriever in hybrid mode for each share of its vote the dense list keeps on a
query or chunk in a language its embedder does not read (`rrf_unread_weight`): the curve
the default is chosen from.

    python benchmarks/retrieval_chinese.py terms ../shared/data/rgb-zh-dev
    python benchmarks/retrieval_chinese.py fusion ../shared/data/rgb-zh-dev --index-dir /tmp/rgb-index

`languages` reads an index built by `footnote eval retrieval DATASET --index-dir DIR` with the
language embedder on (multilingual-e5-small: `FOOTNOTE_LANGUAGE_EMBEDDER`, the default), and
scores its Chinese queries with e5's list and without it, then the same questions asked in
English (`--english`: a translation of some of them; `benchmarks/data/rgb-zh-dev-queries-en.jsonl`
holds 40 translated by hand) over the Chinese passages: keyword, MiniLM, e5's list alone, and
hybrid for each share of the vote e5's list has on a query MiniLM reads (`rrf_cross_language_weight`):

    python benchmarks/retrieval_chinese.py languages ../shared/data/rgb-zh-dev --index-dir /tmp/rgb-e5 \
        --english benchmarks/data/rgb-zh-dev-queries-en.jsonl

`weights` reads the same index and scores hybrid search for each weight of e5's list: on the
Chinese queries `rrf_language_weight` (its vote against the keyword list on a question MiniLM does
not read) and, with `--english`, on the same questions asked in English `rrf_cross_language_weight`
(its vote on a question MiniLM reads). The weight is chosen on half the queries and scored on the
other half (two folds, queries alternating by id: each rgb-zh-dev question has passages of its own,
so a split by question is a split by document):

    python benchmarks/retrieval_chinese.py weights ../shared/data/rgb-zh-dev --index-dir /tmp/rgb-e5 \
        --english benchmarks/data/rgb-zh-dev-queries-en.jsonl

`join` writes one BEIR folder from several (ids prefixed by each folder's name), a mixed-language
corpus whose queries `footnote eval retrieval` then scores per language:

    python benchmarks/retrieval_chinese.py join ../shared/data/scifact ../shared/data/rgb-zh-dev \
        --out /tmp/scifact+rgb-zh

Figures print and are saved under benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

from footnote.application import create_app
from footnote.config import Settings
from footnote.core import cjk
from footnote.core.document import Chunk
from footnote.core.span import Span
from footnote.evaluation.beir import BeirDataset, load_beir
from footnote.evaluation.metrics import mean_metrics, ndcg_at
from footnote.evaluation.retrieval import (
    PATH_PREFIX,
    corpus_documents,
    document_ranking,
    evaluate_mode,
    evaluation_params,
    run_evaluation,
)
from footnote.models.cpu import machine
from footnote.retrieval import keyword
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from footnote.store import records as records_module
from footnote.store.catalog import Catalog
from footnote.store.records import DocumentEntry
from footnote.store.sqlite import SqliteCatalog

RESULTS = Path(__file__).parent / "results"
UNREAD_WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)
CROSS_WEIGHTS = (0.0, 0.25, 0.5, 1.0)
# The keyword list's share of its vote on chunks its question's embedder does not read, when e5 crosses.
KEYWORD_SHARES = (0.0, 0.25, 0.5)
LANGUAGE_WEIGHTS = (0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0)


def _pairs(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def _bigram_terms(text: str) -> list[str]:
    return [pair for run in cjk.cjk_runs(text) for pair in _pairs(run)]


def _unigram_bigram_terms(text: str) -> list[str]:
    return [term for run in cjk.cjk_runs(text) for term in [*run, *_pairs(run)]]


# name -> (grams column of a text, grams of a query)
SCHEMES: dict[str, tuple[Callable[[str], str], Callable[[str], list[str]]]] = {
    "bigram": (lambda text: " ".join(_bigram_terms(text)), lambda q: list(dict.fromkeys(_bigram_terms(q)))),
    "unigram+bigram": (
        lambda text: " ".join(_unigram_bigram_terms(text)),
        lambda q: list(dict.fromkeys(_unigram_bigram_terms(q))),
    ),
    "words": (cjk.index_grams, cjk.query_grams),
}


@contextmanager
def _scheme(name: str) -> Iterator[None]:
    index, query = SCHEMES[name]
    with (
        mock.patch.object(records_module, "index_grams", index),
        mock.patch.object(keyword, "query_grams", query),
    ):
        yield


def _passage_catalog(dataset: BeirDataset, folder: Path) -> Catalog:
    """Every corpus passage as one chunk of a fresh catalog."""
    catalog = SqliteCatalog(folder / "catalog.sqlite3")
    entries = [
        DocumentEntry(
            document, "", len(document.text), 0.0, (Chunk(0, document.text, Span(0, len(document.text))),)
        )
        for document in corpus_documents(dataset.corpus())
    ]
    catalog.replace_documents(entries)
    return catalog


def measure_terms(dataset: BeirDataset, depth: int = 100) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for name in SCHEMES:
        with _scheme(name), tempfile.TemporaryDirectory(prefix="footnote-terms-") as folder:
            catalog = _passage_catalog(dataset, Path(folder))
            started = time.perf_counter()
            run = {}
            for query_id, text in dataset.queries.items():
                found = catalog.keyword_search(keyword.fts_query(text), depth)
                paths = catalog.chunks([chunk_id for chunk_id, _ in found])
                run[query_id] = [paths[chunk_id].path.removeprefix(PATH_PREFIX) for chunk_id, _ in found]
            seconds = time.perf_counter() - started
            catalog.close()
        scores = mean_metrics(run, dataset.qrels)
        rows[name] = {**scores, "seconds": seconds}
        print(
            f"{name:16s} nDCG@10 {scores['ndcg@10']:.4f}  Recall@100 {scores['recall@100']:.4f}", flush=True
        )
    return {"part": "terms", "chunks": "one per passage", "search": "FTS5 bm25()", "schemes": rows}


def measure_fusion(dataset: BeirDataset, index_dir: Path) -> dict[str, Any]:
    app = create_app(Settings(home=index_dir))
    try:
        summary, results = run_evaluation(app, dataset, ("keyword", "dense"))
        retriever = app.retriever()
        base = app.retrieval_params(10)
        curve = []
        for weight in UNREAD_WEIGHTS:
            params = evaluation_params(replace(base, unread_weight=weight), "hybrid")
            result = evaluate_mode(retriever, dataset, params, label=f"hybrid unread_weight={weight}")
            curve.append({"unread_weight": weight, **result.to_dict()})
            print(f"unread_weight {weight:<5} hybrid nDCG@10 {_figures(result.to_dict())}", flush=True)
        for result in results:
            print(f"{result.mode:8s} nDCG@10 {_figures(result.to_dict())}", flush=True)
    finally:
        app.close()
    return {
        "part": "fusion",
        "settings": summary["settings"],
        "embedder_languages": sorted(retriever.dense_languages or []),
        "single": [result.to_dict() for result in results],
        "curve": curve,
    }


def measure_languages(dataset: BeirDataset, index_dir: Path, english: Path | None) -> dict[str, Any]:
    app = create_app(Settings(home=index_dir))
    try:
        app.keep_keyword_index(wait=True)
        retriever, base = app.retriever(), app.retrieval_params(10)
        language = app.language_vectors
        if language is None:
            raise SystemExit(f"no language embedder: {app.models.language_embedder_missing}")
        # e5's list alone, whatever the query's language: its vectors and index as the only dense list.
        postings = retriever.keyword_index
        e5_only = HybridRetriever(app.catalog, language.vectors, language.embedder, None, postings)
        without = HybridRetriever(
            app.catalog, app.vectors, app.embedder, None, postings, retriever.dense_languages
        )
        runs = {
            "keyword": (retriever, "keyword"),
            "dense e5": (e5_only, "dense"),
            "hybrid without e5": (without, "hybrid"),
            "hybrid": (retriever, "hybrid"),
        }
        chinese = {name: _scored(r, dataset, base, mode, name) for name, (r, mode) in runs.items()}
        figures: dict[str, Any] = {
            "part": "languages",
            "settings": {"language_embedder": language.embedder.identity, "embedder": app.embedder.identity},
            "language_index_chunks": language.vectors.count(),
            "chinese_queries": chinese,
        }
        if english is not None:
            asked = _english_queries(dataset, english)
            crossing = {
                f"hybrid cross_language_weight={weight}": _scored(
                    retriever, asked, replace(base, cross_language_weight=weight), "hybrid", f"en {weight}"
                )
                for weight in CROSS_WEIGHTS
            }
            crossing |= {
                f"hybrid cross_language_weight={weight} keyword={share}": _scored(
                    retriever,
                    asked,
                    replace(base, cross_language_weight=weight, cross_language_keyword_weight=share),
                    "hybrid",
                    f"en {weight} keyword {share}",
                )
                for weight in CROSS_WEIGHTS[1:]
                for share in KEYWORD_SHARES
            }
            same = replace(asked, queries={i: dataset.queries[i] for i in asked.queries})
            figures["english_queries"] = {
                "source": str(english),
                "queries": len(asked.queries),
                "the same questions in chinese": {
                    name: _scored(r, same, base, mode, f"zh {name}") for name, (r, mode) in runs.items()
                },
                "keyword": _scored(retriever, asked, base, "keyword", "en keyword"),
                "dense minilm": _scored(without, asked, base, "dense", "en dense minilm"),
                "dense e5": _scored(e5_only, asked, base, "dense", "en dense e5"),
                **crossing,
            }
    finally:
        app.close()
    return figures


def measure_weights(dataset: BeirDataset, index_dir: Path, english: Path | None) -> dict[str, Any]:
    """Hybrid nDCG@10 for each weight of e5's list, per query set, with the weight chosen by folds."""
    app = create_app(Settings(home=index_dir))
    try:
        app.keep_keyword_index(wait=True)
        retriever, base = app.retriever(), app.retrieval_params(10)
        sets = {"chinese": (dataset, "language_weight")}
        if english is not None:
            sets["english"] = (_english_queries(dataset, english), "cross_language_weight")
        figures: dict[str, Any] = {"part": "weights", "weights": list(LANGUAGE_WEIGHTS)}
        for name, (asked, field) in sets.items():
            per_query = {}
            for weight in LANGUAGE_WEIGHTS:
                params = evaluation_params(replace(base, **{field: weight}), "hybrid")
                run = {
                    q: document_ranking(retriever, text, params)[:100] for q, text in asked.queries.items()
                }
                per_query[weight] = {q: ndcg_at(run[q], asked.qrels[q], 10) for q in run}
                mean = _mean(per_query[weight].values())
                print(f"{name:8} {field} {weight:<5} nDCG@10 {mean:.4f}", flush=True)
            figures[name] = {
                "weighs": field,
                "queries": len(asked.queries),
                "ndcg_at_10": {str(w): round(_mean(per_query[w].values()), 4) for w in LANGUAGE_WEIGHTS},
                "folds": _folds(per_query),
            }
            print(f"{name:8} folds {figures[name]['folds']}", flush=True)
    finally:
        app.close()
    return figures


def _folds(per_query: dict[float, dict[str, float]]) -> list[dict[str, Any]]:
    """Two folds of the queries (alternating by id): the weight best on one, scored on the other."""
    ids = sorted(next(iter(per_query.values())), key=lambda q: (len(q), q))
    halves = [ids[0::2], ids[1::2]]
    folds = []
    for tuned, held in (halves, halves[::-1]):
        best = max(per_query, key=lambda w: (_mean(per_query[w][q] for q in tuned), -abs(w - 1.0)))
        folds.append(
            {
                "chosen": best,
                "in_sample": round(_mean(per_query[best][q] for q in tuned), 4),
                "held_out": round(_mean(per_query[best][q] for q in held), 4),
                "held_out_at_1": round(_mean(per_query[1.0][q] for q in held), 4),
            }
        )
    return folds


def _mean(values: Any) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def _scored(
    retriever: HybridRetriever, dataset: BeirDataset, base: RetrievalParams, mode: str, label: str
) -> dict[str, Any]:
    result = evaluate_mode(retriever, dataset, evaluation_params(base, mode), label=label).to_dict()
    print(
        f"{label:40s} nDCG@10 {result['ndcg_at_10']:.4f}  Recall@100 {result['recall_at_100']:.4f}",
        flush=True,
    )
    return result


def _english_queries(dataset: BeirDataset, path: Path) -> BeirDataset:
    """`dataset` asked with the English texts of `path` (BEIR queries), those alone."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    queries = {str(row["_id"]): str(row["text"]) for row in rows if str(row["_id"]) in dataset.qrels}
    return replace(dataset, queries=queries, qrels={i: dataset.qrels[i] for i in queries})


def _figures(result: dict[str, Any]) -> str:
    """nDCG@10 overall, and per language for a mixed set."""
    languages = "".join(f"  {code} {m['ndcg@10']:.4f}" for code, m in result["by_language"].items())
    return f"{result['ndcg_at_10']:.4f}{languages}"


def plot_curve(figures: dict[str, Any], path: Path) -> None:
    """The fusion curve as a PNG: hybrid nDCG@10 against the unread weight, keyword and dense beside."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    weights = [point["unread_weight"] for point in figures["curve"]]
    figure, axes = plt.subplots(figsize=(6, 4))
    axes.plot(weights, [point["ndcg_at_10"] for point in figures["curve"]], marker="o", label="hybrid")
    for code in figures["curve"][0]["by_language"]:
        by_language = [point["by_language"][code]["ndcg@10"] for point in figures["curve"]]
        axes.plot(weights, by_language, marker=".", label=f"hybrid, {code} queries")
    for single, style in zip(figures["single"], ("--", ":"), strict=True):
        axes.axhline(single["ndcg_at_10"], linestyle=style, color="grey", label=f"{single['mode']} only")
    axes.set_xlabel("vote of the dense list on a language its embedder does not read")
    axes.set_ylabel("nDCG@10")
    axes.set_title(f"{figures['dataset']}: {figures['queries']} queries")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def join_sets(folders: list[Path], out: Path, split: str = "test") -> None:
    """One BEIR folder holding every corpus record, judged query and judgement of `folders`."""
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (
        (out / "corpus.jsonl").open("w", encoding="utf-8") as corpus,
        (out / "queries.jsonl").open("w", encoding="utf-8") as queries,
        (out / "qrels" / f"{split}.tsv").open("w", encoding="utf-8") as qrels,
    ):
        qrels.write("query-id\tcorpus-id\tscore\n")
        for folder in folders:
            dataset, prefix = load_beir(folder, split), f"{folder.name}:"
            for record in dataset.corpus():
                line = {"_id": prefix + record.id, "title": record.title, "text": record.text}
                corpus.write(json.dumps(line, ensure_ascii=False) + "\n")
            for query_id, text in dataset.queries.items():
                queries.write(json.dumps({"_id": prefix + query_id, "text": text}, ensure_ascii=False) + "\n")
                for corpus_id, grade in dataset.qrels[query_id].items():
                    qrels.write(f"{prefix}{query_id}\t{prefix}{corpus_id}\t{grade}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("part", choices=("terms", "fusion", "languages", "weights", "join"))
    parser.add_argument("dataset", type=Path, nargs="+", help="one BEIR folder (join: several)")
    parser.add_argument("--out", type=Path, help="join: the folder to write")
    parser.add_argument(
        "--index-dir", type=Path, help="fusion, languages, weights: the index `footnote eval retrieval` built"
    )
    parser.add_argument(
        "--english", type=Path, help="languages, weights: English texts of some of the queries"
    )
    parser.add_argument("--tag", default="", help="added to the result file's name")
    args = parser.parse_args()
    if args.part == "join":
        if args.out is None:
            parser.error("join needs --out")
        join_sets(args.dataset, args.out)
        print(f"wrote {args.out}")
        return
    dataset = load_beir(args.dataset[0])
    if args.part == "terms":
        figures = measure_terms(dataset)
    elif args.index_dir is None:
        parser.error(f"{args.part} needs --index-dir")
    elif args.part == "languages":
        figures = measure_languages(dataset, args.index_dir, args.english)
    elif args.part == "weights":
        figures = measure_weights(dataset, args.index_dir, args.english)
    else:
        figures = measure_fusion(dataset, args.index_dir)
    figures = {"dataset": dataset.name, "queries": len(dataset.queries), **figures, "machine": machine()}
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    tag = f"-{args.tag}" if args.tag else ""
    out = RESULTS / f"retrieval_chinese-{args.part}-{dataset.name}{tag}-{stamp}.json"
    out.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"saved {out}")
    if args.part == "fusion":
        plot_curve(figures, out.with_suffix(".png"))
        print(f"saved {out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
