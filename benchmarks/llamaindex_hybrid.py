"""LlamaIndex's hybrid retriever over a BEIR corpus, timed query by query: the reference that
benchmarks/retrieval_latency.py runs beside footnote's hybrid search.

It runs in a virtual environment of its own, never footnote's (LlamaIndex is no dependency of
footnote):

    python3.11 -m venv /tmp/li-venv
    /tmp/li-venv/bin/pip install torch==2.13.0  # first: the CPU wheel
    /tmp/li-venv/bin/pip install -r benchmarks/requirements-llamaindex.txt

The setup is LlamaIndex's documented hybrid search: a BM25Retriever (bm25s, English stemming
and stopwords) and a VectorStoreIndex on Chroma (an embedded PersistentClient), fused by a
QueryFusionRetriever in "reciprocal_rerank" mode (RRF, k=60) with num_queries=1, so no LLM
is asked to rewrite the query, and use_async=False (both retrievers are synchronous
underneath; the async path only adds an event loop per query). Documents are chunked by a
SentenceSplitter counting the embedder's own tokens, the title kept as metadata that is
embedded and keyword-indexed with every chunk and counted in its size, as footnote chunks
them. The embedder is the same MiniLM folder, through llama-index-embeddings-huggingface
(sentence-transformers on torch, float32). The index is embedded with torch's default threads;
queries are embedded on --query-threads (default 1, as footnote embeds a query on one thread
and its batches on all cores; 0 keeps torch's default). On a busy 2-core machine torch's two
threads slow a query's embedding many times over, each waiting on the other.

The index is built in --index-dir and reused by a later run with the same corpus and
settings. The first --warmup queries are run untimed; every query's ranking (corpus ids,
each at its best chunk's rank) is returned for scoring. After the hybrid searches, the stages
are timed alone: query embedding, BM25, and the vector search given the query's vector. Prints
one JSON object (or writes it to --out).

    /tmp/li-venv/bin/python benchmarks/llamaindex_hybrid.py ../shared/data/scifact/corpus.jsonl \\
        --index-dir /tmp/scifact-llamaindex --model MODEL_DIR --queries queries.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import chromadb
import torch
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.retrievers import BaseRetriever, QueryFusionRetriever
from llama_index.core.schema import BaseNode, QueryBundle
from llama_index.embeddings.huggingface import HuggingFaceEmbedding
from llama_index.retrievers.bm25 import BM25Retriever
from llama_index.vector_stores.chroma import ChromaVectorStore
from transformers import AutoTokenizer

PACKAGES = (
    "llama-index-core",
    "llama-index-retrievers-bm25",
    "llama-index-vector-stores-chroma",
    "llama-index-embeddings-huggingface",
    "bm25s",
    "chromadb",
    "sentence-transformers",
    "torch",
)
COLLECTION = "corpus"


def read_corpus(corpus: Path, limit: int | None) -> Iterator[Document]:
    """One Document per record: the abstract as text, the title as embedded metadata."""
    with corpus.open(encoding="utf-8") as lines:
        count = 0
        for line in lines:
            if not line.strip():
                continue
            if limit is not None and count >= limit:
                return
            count += 1
            row = json.loads(line)
            text = str(row.get("text") or "").strip() or str(row.get("title") or "") or str(row["_id"])
            yield Document(
                text=text,
                metadata={"title": str(row.get("title") or "").strip(), "corpus_id": str(row["_id"])},
                excluded_embed_metadata_keys=["corpus_id"],
                excluded_llm_metadata_keys=["corpus_id"],
            )


def build(args: argparse.Namespace, embed_model: HuggingFaceEmbedding) -> dict[str, Any]:
    """Chunk, embed into Chroma and index for BM25 under --index-dir; the seconds each took."""
    shutil.rmtree(args.index_dir, ignore_errors=True)
    args.index_dir.mkdir(parents=True)
    tokenizer = AutoTokenizer.from_pretrained(str(args.model))
    tokenizer.model_max_length = 1 << 30  # it only counts whole documents here; the embedder truncates
    splitter = SentenceSplitter(
        chunk_size=args.chunk_tokens,
        chunk_overlap=args.chunk_overlap,
        tokenizer=lambda text: tokenizer.encode(text, add_special_tokens=False),
    )
    started = time.perf_counter()
    documents = list(read_corpus(args.corpus, args.limit_docs))
    nodes: list[BaseNode] = splitter.get_nodes_from_documents(documents)
    chunked = time.perf_counter()
    client = chromadb.PersistentClient(path=str(args.index_dir / "chroma"))
    store = ChromaVectorStore(chroma_collection=client.get_or_create_collection(COLLECTION))
    VectorStoreIndex(
        nodes, storage_context=StorageContext.from_defaults(vector_store=store), embed_model=embed_model
    )
    embedded = time.perf_counter()
    BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=args.keyword_candidates).persist(
        str(args.index_dir / "bm25")
    )
    finished = time.perf_counter()
    return {
        "documents": len(documents),
        "nodes": len(nodes),
        "build_seconds": round(finished - started, 2),
        "chunk_seconds": round(chunked - started, 2),
        "embed_and_store_seconds": round(embedded - chunked, 2),
        "bm25_seconds": round(finished - embedded, 2),
        "load_average_1m_after_build": round(os.getloadavg()[0], 2),
    }


def open_retrievers(
    args: argparse.Namespace, embed_model: HuggingFaceEmbedding
) -> tuple[BaseRetriever, BM25Retriever, QueryFusionRetriever]:
    """The vector and BM25 retrievers on the saved index, and their fusion."""
    client = chromadb.PersistentClient(path=str(args.index_dir / "chroma"))
    store = ChromaVectorStore(chroma_collection=client.get_collection(COLLECTION))
    vector = VectorStoreIndex.from_vector_store(store, embed_model=embed_model).as_retriever(
        similarity_top_k=args.dense_candidates
    )
    bm25 = BM25Retriever.from_persist_dir(str(args.index_dir / "bm25"))
    bm25.similarity_top_k = args.keyword_candidates
    fusion = QueryFusionRetriever(
        [vector, bm25],
        llm=MockLLM(),
        mode="reciprocal_rerank",
        similarity_top_k=args.limit,
        num_queries=1,
        use_async=False,
    )
    return vector, bm25, fusion


def run_queries(
    fusion: QueryFusionRetriever, queries: list[dict[str, str]], warmup: int
) -> tuple[list[float], dict[str, list[str]]]:
    """Milliseconds per query after `warmup` untimed ones, and every query's corpus ids."""
    millis: list[float] = []
    rankings: dict[str, list[str]] = {}
    for number, query in enumerate(queries):
        started = time.perf_counter()
        hits = fusion.retrieve(query["text"])
        elapsed = (time.perf_counter() - started) * 1000
        if number >= warmup:
            millis.append(elapsed)
        rankings[query["id"]] = list(dict.fromkeys(hit.node.metadata["corpus_id"] for hit in hits))
    return millis, rankings


def time_stages(
    vector: BaseRetriever,
    bm25: BM25Retriever,
    embed_model: HuggingFaceEmbedding,
    queries: list[str],
    warmup: int,
) -> dict[str, list[float]]:
    """Each stage alone, as footnote's are: the query embedding, BM25, and the vector search with
    the query's vector embedded beforehand."""
    vectors = {text: embed_model.get_query_embedding(text) for text in queries}
    stages = {
        "embed_query": embed_model.get_query_embedding,
        "keyword": bm25.retrieve,
        "vector": lambda text: vector.retrieve(QueryBundle(text, embedding=vectors[text])),
    }
    timings: dict[str, list[float]] = {}
    for name, stage in stages.items():
        timings[name] = []
        for number, text in enumerate(queries):
            started = time.perf_counter()
            stage(text)
            if number >= warmup:
                timings[name].append((time.perf_counter() - started) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("corpus", type=Path, help="a BEIR corpus.jsonl")
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True, help="sentence-transformers model folder")
    parser.add_argument("--queries", type=Path, required=True, help='JSON list of {"id", "text"}')
    parser.add_argument("--limit-docs", type=int, default=None, help="only the first N documents")
    parser.add_argument("--chunk-tokens", type=int, default=200)
    parser.add_argument("--chunk-overlap", type=int, default=20)
    parser.add_argument("--keyword-candidates", type=int, default=50, help="BM25 list depth before fusion")
    parser.add_argument("--dense-candidates", type=int, default=50, help="dense list depth before fusion")
    parser.add_argument("--limit", type=int, default=10, help="results per query")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--embed-batch-size", type=int, default=32)
    parser.add_argument(
        "--query-threads", type=int, default=1, help="torch threads for queries; 0: torch's default"
    )
    parser.add_argument("--out", type=Path, help="write the JSON here instead of printing it")
    args = parser.parse_args()

    embed_model = HuggingFaceEmbedding(
        model_name=str(args.model), device="cpu", embed_batch_size=args.embed_batch_size
    )
    wanted = {
        "corpus": str(args.corpus.resolve()),
        "limit_docs": args.limit_docs,
        "model": str(args.model.resolve()),
        "chunk_tokens": args.chunk_tokens,
        "chunk_overlap": args.chunk_overlap,
        "llama_index_core": version("llama-index-core"),
    }
    params = args.index_dir / "params.json"
    saved = json.loads(params.read_text()) if params.is_file() else {}
    if saved.get("index") == wanted:
        built, reused = saved["build"], True
    else:
        built, reused = build(args, embed_model), False
        params.write_text(json.dumps({"index": wanted, "build": built}, indent=2) + "\n")
    vector, bm25, fusion = open_retrievers(args, embed_model)
    if args.query_threads:
        torch.set_num_threads(args.query_threads)
    queries = json.loads(args.queries.read_text(encoding="utf-8"))
    millis, rankings = run_queries(fusion, queries, args.warmup)
    stages = time_stages(vector, bm25, embed_model, [q["text"] for q in queries], args.warmup)
    result = {
        "index": wanted,
        "reused_index": reused,
        **built,
        "depths": {"keyword": args.keyword_candidates, "dense": args.dense_candidates, "limit": args.limit},
        "fusion": {"mode": "reciprocal_rerank", "num_queries": 1, "use_async": False},
        "embedder": {"runtime": "torch", "precision": "float32", "query_threads": torch.get_num_threads()},
        "versions": {name: version(name) for name in PACKAGES},
        "millis": millis,
        "stage_millis": stages,
        "rankings": rankings,
    }
    text = json.dumps(result)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    else:
        print(text)


if __name__ == "__main__":
    main()
