"""Vector query latency: the embedded Chroma index against a Chroma server, side by side.

The vectors come from an existing embedded index (`FOOTNOTE_HOME` of a SciFact ingest,
`--home DIR`), or, with `--docs N`, from the first N SciFact documents ingested now with the
configured embedder. They are copied, unchanged, into a Chroma server that this script starts
on loopback (`chroma run`, beside this Python), so both indexes hold the same vectors. Each
query is a stored chunk's own vector (chosen at random, the same ones for both), so only the
stores are timed, not the embedder. The embedded index is the baseline, measured in the same
run: the report gives each side's p50/p99 and the server's ratio to the embedded p50 and p99.

    python benchmarks/shared_stores.py --home /tmp/scifact-home --queries 2000
    python benchmarks/shared_stores.py --docs 20 --queries 50      # a smoke run
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from footnote.application import create_app
from footnote.bench.ingest import machine
from footnote.config import Settings
from footnote.store.chroma_server import ChromaServerVectorIndex
from footnote.store.vectors import ChromaVectorIndex, VectorIndex

RESULTS = Path(__file__).resolve().parent / "results"
SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def timed_queries(index: VectorIndex, queries: list[list[float]], limit: int) -> dict[str, float]:
    index.query(queries[0], limit)  # a warm-up call: connections, caches
    seconds = []
    for vector in queries:
        started = time.perf_counter()
        index.query(vector, limit)
        seconds.append(time.perf_counter() - started)
    return {
        "p50_ms": statistics.median(seconds) * 1000,
        "p99_ms": percentile(seconds, 0.99) * 1000,
        "mean_ms": statistics.fmean(seconds) * 1000,
    }


def ingest_sample(home: Path, docs: int) -> None:
    """The first `docs` SciFact documents, one text file each, ingested into `home`."""
    folder = home.parent / "scifact-sample"
    folder.mkdir(parents=True, exist_ok=True)
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as corpus:
        for number, line in zip(range(docs), corpus, strict=False):
            row = json.loads(line)
            (folder / f"{number:05d}.txt").write_text(f"{row['title']}\n\n{row['text']}\n", encoding="utf-8")
    app = create_app(Settings(home=home))
    app.ingest([folder])
    app.close()


def copy_to_server(source: ChromaVectorIndex, url: str, name: str, dimension: int) -> ChromaServerVectorIndex:
    server = ChromaServerVectorIndex(url, None, name, dimension)
    ids = sorted(source.ids())
    for start in range(0, len(ids), 1000):
        batch = source.vectors(ids[start : start + 1000])
        server.upsert(list(batch), list(batch.values()))
    return server


def start_chroma(data: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    chroma = Path(sys.executable).parent / "chroma"
    command = [str(chroma), "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("chroma run gave no heartbeat in 60 s")


def run(home: Path, queries: int, limit: int, seed: int) -> dict[str, Any]:
    params = json.loads((home / "vectors" / "params.json").read_text(encoding="utf-8"))
    embedded = ChromaVectorIndex(home / "vectors", params["embedder"], params["dimension"])
    ids = sorted(embedded.ids())
    chosen = random.Random(seed).choices(ids, k=queries)
    stored = embedded.vectors(sorted(set(chosen)))
    vectors = [stored[i] for i in chosen]
    with tempfile.TemporaryDirectory(prefix="footnote-chroma-") as scratch:
        process, url = start_chroma(Path(scratch) / "data")
        try:
            server = copy_to_server(embedded, url, params["embedder"], params["dimension"])
            sides: dict[str, Callable[[], dict[str, float]]] = {
                "embedded": lambda: timed_queries(embedded, vectors, limit),
                "chroma_server": lambda: timed_queries(server, vectors, limit),
            }
            measured = {name: measure() for name, measure in sides.items()}
        finally:
            process.kill()
            process.wait(timeout=30)
    base, other = measured["embedded"], measured["chroma_server"]
    return {
        "benchmark": "shared_stores",
        "what": "vector query latency, embedded Chroma vs a Chroma server on loopback, same vectors",
        "index": str(home),
        "embedder": params["embedder"],
        "vectors": len(ids),
        "queries": queries,
        "limit": limit,
        "machine": machine(),
        "results": measured,
        "server_over_embedded": {
            "p50": other["p50_ms"] / base["p50_ms"],
            "p99": other["p99_ms"] / base["p99_ms"],
        },
    }


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--home", type=Path, help="FOOTNOTE_HOME of an existing embedded index")
    parser.add_argument("--docs", type=int, default=0, help="ingest the first N SciFact documents now")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--limit", type=int, default=50, help="results per query (dense candidates)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    if args.home is None and not args.docs:
        parser.error("give --home DIR (an existing index) or --docs N")
    with tempfile.TemporaryDirectory(prefix="footnote-sample-") as scratch:
        home = args.home or Path(scratch) / "home"
        if args.home is None:
            ingest_sample(home, args.docs)
        report = run(home, args.queries, args.limit, args.seed)
    print(json.dumps(report, indent=2))
    RESULTS.mkdir(exist_ok=True)
    label = f"-{args.label}" if args.label else ""
    out = RESULTS / f"shared_stores{label}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"saved {out}")


if __name__ == "__main__":
    main()
