"""Shared stores (PostgreSQL catalog + Chroma server) against the embedded ones, on SciFact.

Every figure is measured side by side in one run, on servers this script starts on loopback
(a private PostgreSQL cluster via initdb/pg_ctl, `chroma run`, `footnote serve`) and stops:

1. search latency: the application's hybrid `app.search(query, limit=10)` over the SciFact
   test queries, the embedded home (SQLite + embedded Chroma) against the same index moved into
   the shared stores; each app has its own embedder, queries alternate between the two, and
   the top 10 of both are compared query by query;
2. search throughput over HTTP (`POST /v1/search`) with 1 and then 2 `footnote serve`
   replicas on the shared stores, the same client concurrency and duration each;
3. propagation: a small document with a word of its own uploaded through replica A
   (`POST /v1/documents`, which replies once the ingest has committed), then B's search polled
   until it finds it; the time from A's reply to B's first hit;
4. `footnote store migrate --to-catalog URL --to-vectors URL` of the SciFact index, against
   `footnote ingest` of the same SciFact documents into fresh shared stores;
5. ranking quality: nDCG@10 (MRR@10, Recall@10/100) of keyword, dense and hybrid search in
   both modes over the same judged queries, scored as `footnote eval retrieval` scores them,
   and the queries whose top 10 documents differ between the modes.

The index is a copy of an existing embedded SciFact home (`--home`, never modified), or with
`--docs N` the first N SciFact documents ingested now (a smoke run). `--parts` picks the
measurements (the migration always runs: every part after it reads the moved index).

    python benchmarks/shared_stores.py --home /tmp/dev/scifact-bf16-index
    python benchmarks/shared_stores.py --home /tmp/dev/scifact-bf16-index --parts quality,latency
    python benchmarks/shared_stores.py --docs 40 --queries 20 --seconds 5 --documents 3   # smoke
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from loopback_servers import chroma, create_database, free_port, postgres, stop, wait_ready

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.core.stats import percentile
from footnote.evaluation.beir import load_beir
from footnote.evaluation.metrics import mean_metrics
from footnote.evaluation.retrieval import MODES, evaluation_params
from footnote.models.cpu import machine
from footnote.retrieval.retriever import HybridRetriever

RESULTS = Path(__file__).resolve().parent / "results"
SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
PARTS = ("reingest", "latency", "quality", "throughput", "propagation")
DEPTH = 100  # documents ranked per query for the quality figures, as `footnote eval retrieval` ranks
READY_TIMEOUT = 300  # seconds; a replica loads its embedder and postings on 2 busy cores


def percentiles(seconds: list[float]) -> dict[str, float]:
    p50, p99 = (percentile(seconds, q, interpolate=True) or 0.0 for q in (0.5, 0.99))
    return {"p50_ms": round(p50 * 1000, 2), "p99_ms": round(p99 * 1000, 2)}


class Environment:
    """What every footnote process of the run shares: embedder, model folder, no config file."""

    def __init__(self, scratch: Path, model_dir: Path, identity: str) -> None:
        runtime, precision = identity.split("@")[1].split("-")  # e.g. minilm-l6@torch-bf16
        self.scratch = scratch
        self.common = {
            "FOOTNOTE_MODEL_DIR": str(model_dir),
            "FOOTNOTE_EMBED_RUNTIME": runtime,
            "FOOTNOTE_EMBED_PRECISION": precision,
            "FOOTNOTE_CONFIG": str(scratch / "none.toml"),
            "FOOTNOTE_PRELOAD_MODELS": "false",
        }

    def env(self, home: Path, catalog: str = "", vectors: str = "") -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith("FOOTNOTE_")}
        stores = {"FOOTNOTE_CATALOG_URL": catalog, "FOOTNOTE_VECTOR_URL": vectors}
        return {**base, **self.common, "FOOTNOTE_HOME": str(home), **stores}

    def app(self, home: Path, catalog: str = "", vectors: str = "") -> Application:
        fields = {k.removeprefix("FOOTNOTE_").lower(): v for k, v in self.env(home, catalog, vectors).items()}
        keep = set(Settings.model_fields) - {"config"}
        return create_app(Settings(**{k: v for k, v in fields.items() if k in keep}))

    def footnote(self, home: Path, *args: str, catalog: str = "", vectors: str = "") -> float:
        """Seconds one `footnote …` command took, end to end as a user runs it."""
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "footnote", *args],
            env=self.env(home, catalog, vectors),
            check=True,
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )
        return time.perf_counter() - started

    @contextmanager
    def replica(self, name: str, catalog: str, vectors: str) -> Iterator[str]:
        home, port = self.scratch / f"replica-{name}", free_port()
        home.mkdir()
        command = [sys.executable, "-m", "footnote", "serve", "--port", str(port)]
        with open(home / "serve.log", "wb") as log:
            process = subprocess.Popen(
                command, env=self.env(home, catalog, vectors), stdout=log, stderr=subprocess.STDOUT
            )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_ready(f"{url}/readyz", process, READY_TIMEOUT)
            search(url, "warm up: load the embedder and the postings")
            yield url
        finally:
            stop(process)


# --- the measurements ----------------------------------------------------------------------


def search(url: str, query: str, client: httpx.Client | None = None) -> list[str]:
    body = {"query": query, "max_results": 10}
    reply = (client or httpx).post(f"{url}/v1/search", json=body, timeout=120)  # type: ignore[attr-defined]
    reply.raise_for_status()
    return [hit["url"] for hit in reply.json()["results"]]


def search_latency(embedded: Application, shared: Application, queries: list[str]) -> dict[str, Any]:
    """Both apps answer each query in turn (which goes first alternates); top 10s compared.
    Keyword lists come from postings in memory on both sides, as `footnote serve` has them."""
    apps = {"embedded": embedded, "shared": shared}
    for app in apps.values():
        app.keep_keyword_index(wait=True)
        app.search("warm up the embedder and the stores", limit=10)
    seconds: dict[str, list[float]] = {name: [] for name in apps}
    tops: dict[str, list[list[tuple[str, int]]]] = {name: [] for name in apps}
    for number, query in enumerate(queries):
        for name in sorted(apps, reverse=number % 2 == 1):
            started = time.perf_counter()
            hits = apps[name].search(query, limit=10)
            seconds[name].append(time.perf_counter() - started)
            tops[name].append([(hit.path, hit.start) for hit in hits])
    timed = {name: percentiles(values) for name, values in seconds.items()}
    same_order = sum(a == b for a, b in zip(tops["embedded"], tops["shared"], strict=True))
    same_set = sum(set(a) == set(b) for a, b in zip(tops["embedded"], tops["shared"], strict=True))
    differing = [
        {"query": query, "shared_in_embedded_top10": len(set(a) & set(b)), "of": len(a)}
        for query, a, b in zip(queries, tops["embedded"], tops["shared"], strict=True)
        if a != b
    ]
    return {
        **timed,
        "shared_over_embedded": {
            p: round(timed["shared"][p] / timed["embedded"][p], 3) for p in ("p50_ms", "p99_ms")
        },
        "queries": len(queries),
        "same_top10_in_order": same_order,
        "same_top10_as_a_set": same_set,
        "differing": differing[:20],
    }


def ranking_quality(
    apps: Mapping[str, Application], queries: Mapping[str, str], qrels: Any
) -> dict[str, Any]:
    """Each search mode's metrics in each store mode, the same queries each (a document at the rank
    of its best chunk, every candidate list deep enough for 100 documents, as in `footnote eval
    retrieval`), and the queries whose top 10 documents differ between the two store modes."""
    judged = {query_id: qrels[query_id] for query_id in queries}
    retrievers = {name: app.retriever() for name, app in apps.items()}
    report: dict[str, Any] = {"queries": len(queries)}
    for mode in MODES:
        runs: dict[str, dict[str, list[str]]] = {name: {} for name in apps}
        for query_id, text in queries.items():
            for name, app in apps.items():
                params = evaluation_params(app.retrieval_params(10), mode, DEPTH)
                runs[name][query_id] = documents_found(retrievers[name], text, params)
        scores = {name: mean_metrics(run, judged) for name, run in runs.items()}
        embedded, shared = (runs[name] for name in ("embedded", "shared"))
        differing = [query_id for query_id in queries if embedded[query_id][:10] != shared[query_id][:10]]
        report[mode] = {
            "ndcg@10": {name: round(found["ndcg@10"], 4) for name, found in scores.items()},
            "ndcg@10_equal_to_4_digits": len({round(found["ndcg@10"], 4) for found in scores.values()}) == 1,
            "metrics": {name: {k: round(v, 6) for k, v in found.items()} for name, found in scores.items()},
            "same_top10_documents_in_order": len(queries) - len(differing),
            "same_top100_documents_in_order": sum(embedded[q] == shared[q] for q in queries),
            "differing_top10": [
                {"query": queries[q], "embedded": embedded[q][:10], "shared": shared[q][:10]}
                for q in differing[:10]
            ],
        }
        print(json.dumps({mode: report[mode]["ndcg@10"], "differing_top10": len(differing)}), flush=True)
    return report


def documents_found(retriever: HybridRetriever, query: str, params: Any) -> list[str]:
    """SciFact document ids (the file names), best first, each at the rank of its best chunk."""
    ids = [Path(hit.path).stem for hit in retriever.search(query, params)]
    return list(dict.fromkeys(ids))[:DEPTH]


def varied(queries: list[str], number: int) -> str:
    """Query `number` of an endless stream, its text never repeated within many requests: the
    embedder keeps the last 256 query vectors, and each request should embed its query as a new
    user's would. One space doubled (read the same by the tokenisers) varies the text."""
    query = queries[number % len(queries)]
    words = query.split(" ")
    cut = 1 + (number // len(queries)) % max(1, len(words) - 1)
    return " ".join(words[:cut]) + "  " + " ".join(words[cut:])


def throughput(replicas: list[str], queries: list[str], clients: int, seconds: float) -> dict[str, Any]:
    """Requests per second from `clients` threads, each sending its next request to the next replica."""
    counter, lock, latencies, errors = iter(range(10**9)), threading.Lock(), [], []
    deadline = time.monotonic() + seconds

    def client() -> None:
        with httpx.Client() as http:
            while time.monotonic() < deadline:
                with lock:
                    number = next(counter)
                started = time.perf_counter()
                try:
                    search(replicas[number % len(replicas)], varied(queries, number), http)
                except httpx.HTTPError as exc:
                    errors.append(repr(exc))
                    continue
                latencies.append(time.perf_counter() - started)

    started = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    return {
        "replicas": len(replicas),
        "requests": len(latencies),
        "errors": len(errors),
        "seconds": round(elapsed, 2),
        "requests_per_second": round(len(latencies) / elapsed, 2),
        **percentiles(latencies or [0.0]),
    }


def propagation(first: str, second: str, folder: Path, documents: int) -> dict[str, Any]:
    """Seconds from A's upload reply (its ingest committed) to B's search finding the new word."""
    folder.mkdir()
    rng = random.Random(7)
    after_reply, uploads, misses = [], [], 0
    for number in range(documents):
        word = "zq" + "".join(rng.choice("bcdfghjklmnpstvwxz") for _ in range(9))
        note = folder / f"note-{number:02d}-{word}.md"
        note.write_text(f"# Field note {number}\n\nThe {word} was sighted near the harbour.\n", "utf-8")
        started = time.perf_counter()
        with note.open("rb") as content:
            files = {"file": (note.name, content, "text/markdown")}
            httpx.post(f"{first}/v1/documents", files=files, timeout=120).raise_for_status()
        committed = time.perf_counter()
        uploads.append(committed - started)
        while not any(url.endswith(note.name) for url in search(second, word)):
            if time.perf_counter() - committed > 30:
                misses += 1
                break
            time.sleep(0.01)
        else:
            after_reply.append(time.perf_counter() - committed)
    return {
        "documents": documents,
        "not_found_within_30_s": misses,
        "reply_to_found_on_b": percentiles(after_reply),
        "upload_on_a": percentiles(uploads),
        "poll_interval_ms": 10,
    }


# --- the index -----------------------------------------------------------------------------


def write_scifact(folder: Path, limit: int | None) -> int:
    """One `<id>.txt` per SciFact document (title, blank line, abstract), as ingest_scifact.py does."""
    folder.mkdir()
    written = 0
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as corpus:
        for line in corpus:
            if limit is not None and written >= limit:
                break
            row = json.loads(line)
            (folder / f"{row['_id']}.txt").write_text(f"{row['title']}\n\n{row['text']}\n", encoding="utf-8")
            written += 1
    return written


def test_queries(limit: int | None, seed: int) -> dict[str, str]:
    """Query id -> text of the judged SciFact test queries, or a random sample of `limit` of them."""
    queries = load_beir(SCIFACT).queries
    if not limit or limit >= len(queries):
        return queries
    chosen = set(random.Random(seed).sample(list(queries.values()), limit))
    return {query_id: text for query_id, text in queries.items() if text in chosen}


def embedded_home(args: argparse.Namespace, scratch: Path, corpus: Path) -> tuple[Path, Path, str]:
    """(home, model folder, embedder identity) of the embedded index the run starts from."""
    source = args.home
    models = scratch / "models"
    if (source / "models").is_dir():
        shutil.copytree(source / "models", models)
    else:
        models.mkdir()
    home = scratch / "embedded"
    if args.docs:
        env = Environment(scratch, models, args.identity)
        env.footnote(home, "ingest", str(corpus))
    else:
        shutil.copytree(source, home, ignore=shutil.ignore_patterns("models"))
    params = json.loads((home / "vectors" / "params.json").read_text(encoding="utf-8"))
    return home, models, str(params["embedder"])


# --- the run -------------------------------------------------------------------------------


def run(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    corpus = scratch / "scifact"
    documents = write_scifact(corpus, args.docs or None)
    home, models, identity = embedded_home(args, scratch, corpus)
    env = Environment(scratch, models, identity)
    queries = test_queries(args.queries, args.seed)
    report: dict[str, Any] = {"embedder": identity, "documents": documents, "parts": args.parts}
    with ExitStack() as servers:
        pg = servers.enter_context(postgres())
        vectors = servers.enter_context(chroma(scratch / "chroma"))
        catalog = create_database(pg, "migrated")
        migrate = ("store", "migrate", "--to-catalog", catalog, "--to-vectors", vectors)
        moving: dict[str, float] = {"store_migrate_seconds": round(env.footnote(home, *migrate), 2)}
        if "reingest" in args.parts:
            moving.update(reingest(env, pg, scratch, corpus, moving["store_migrate_seconds"]))
        report["migrate_vs_reingest"] = moving
        print(json.dumps(moving), flush=True)
        if {"latency", "quality"} & set(args.parts):
            embedded, shared = env.app(home), env.app(scratch / "shared-home", catalog, vectors)
            try:
                report.update(in_process(args.parts, embedded, shared, queries))
            finally:
                embedded.close()
                shared.close()
        if {"throughput", "propagation"} & set(args.parts):
            report.update(over_http(args, servers, env, catalog, vectors, list(queries.values())))
    return report


def reingest(
    env: Environment, pg: str, scratch: Path, corpus: Path, migrate_seconds: float
) -> dict[str, float]:
    """`footnote ingest` of the corpus into fresh shared stores, timed against the migration."""
    with chroma(scratch / "chroma-reingest") as fresh_vectors:
        fresh_catalog = create_database(pg, "reingested")
        ingest = env.footnote(
            scratch / "reingest-home", "ingest", str(corpus), catalog=fresh_catalog, vectors=fresh_vectors
        )
    return {
        "reingest_into_shared_stores_seconds": round(ingest, 2),
        "reingest_over_migrate": round(ingest / migrate_seconds, 2),
    }


def in_process(
    parts: list[str], embedded: Application, shared: Application, queries: dict[str, str]
) -> dict[str, Any]:
    """Search latency and ranking quality, the embedded app against the shared one; keyword lists
    come from postings in memory on both sides, as `footnote serve` has them."""
    measured: dict[str, Any] = {}
    for app in (embedded, shared):
        app.keep_keyword_index(wait=True)
    if "quality" in parts:
        qrels = load_beir(SCIFACT).qrels
        measured["ranking_quality"] = ranking_quality(
            {"embedded": embedded, "shared": shared}, queries, qrels
        )
    if "latency" in parts:
        measured["search_latency"] = search_latency(embedded, shared, list(queries.values()))
        print(json.dumps(measured["search_latency"]), flush=True)
    return measured


def over_http(
    args: argparse.Namespace,
    servers: ExitStack,
    env: Environment,
    catalog: str,
    vectors: str,
    queries: list[str],
) -> dict[str, Any]:
    """Throughput with one and two `footnote serve` replicas, then propagation from one to the other."""
    measured: dict[str, Any] = {}
    first = servers.enter_context(env.replica("a", catalog, vectors))
    one = throughput([first], queries, args.clients, args.seconds) if "throughput" in args.parts else None
    second = servers.enter_context(env.replica("b", catalog, vectors))
    if one is not None:
        two = throughput([first, second], queries, args.clients, args.seconds)
        rate = two["requests_per_second"] / one["requests_per_second"]
        measured["throughput"] = {
            "clients": args.clients,
            "one_replica": one,
            "two_replicas": two,
            "two_over_one": round(rate, 2),
        }
        print(json.dumps(measured["throughput"]), flush=True)
    if "propagation" in args.parts:
        measured["propagation"] = propagation(first, second, env.scratch / "notes", args.documents)
        print(json.dumps(measured["propagation"]), flush=True)
    return measured


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    home_help = "an embedded SciFact home, copied (never modified); its models folder is reused"
    parser.add_argument("--home", type=Path, default=Path("/tmp/dev/scifact-bf16-index"), help=home_help)
    parser.add_argument("--docs", type=int, default=0, help="ingest only the first N SciFact documents now")
    parser.add_argument("--identity", default="minilm-l6@torch-bf16", help="with --docs: the embedder")
    parser.add_argument("--queries", type=int, default=0, help="a random sample of N test queries (0: all)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent HTTP clients for throughput")
    parser.add_argument("--seconds", type=float, default=20.0, help="duration of each throughput run")
    parser.add_argument("--documents", type=int, default=20, help="uploads timed for propagation")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--label", default="")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of: {', '.join(PARTS)}")
    args = parser.parse_args()
    args.parts = [part.strip() for part in args.parts.split(",") if part.strip()]
    if unknown := set(args.parts) - set(PARTS):
        parser.error(f"unknown --parts {', '.join(sorted(unknown))}; choose from {', '.join(PARTS)}")
    for name in [k for k in os.environ if k.startswith("FOOTNOTE_")]:
        del os.environ[name]  # only what Environment sets reaches the apps and processes
    os.environ["FOOTNOTE_CONFIG"] = "/nonexistent/footnote.toml"  # no user config for the in-process apps
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="footnote-shared-bench-") as scratch:
        measured = run(args, Path(scratch))
    report = {
        "benchmark": "shared_stores",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "what": "embedded (SQLite + embedded Chroma) vs shared stores (PostgreSQL 15 + Chroma server), "
        "all servers on loopback on this machine",
        "index": f"first {args.docs} SciFact documents, ingested now" if args.docs else str(args.home),
        "query_sample": f"{args.queries} of the SciFact test queries" if args.queries else "all test queries",
        "label": args.label,
        **measured,
        "run_seconds": round(time.monotonic() - started, 1),
        "machine": machine(),
    }
    print(json.dumps(report, indent=2))
    RESULTS.mkdir(exist_ok=True)
    label = f"-{args.label}" if args.label else ""
    out = RESULTS / f"shared_stores{label}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"saved {out}")


if __name__ == "__main__":
    main()
