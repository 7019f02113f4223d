"""`footnote bench load` against a real `footnote serve` with the embedded model, admission on and off.

Starts the server on a free loopback port over an existing data directory (ingest a corpus
first, e.g. SciFact abstracts), runs the rate ladder once with a short queue (admission
control on: excess load gets 429) and once with a queue long enough never to refuse
(admission control off), and writes benchmarks/results/load_admission_{on,off}.json plus
charts. Prints each step and the saturation summary.

    .venv/bin/python benchmarks/load_admission.py --home /tmp/bench-home \\
        --queries ../shared/data/scifact/queries.jsonl --rates 0.05,0.1,0.2,0.4 --step-seconds 60
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve(home: Path, port: int, max_queue: int, top_k: int, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOOTNOTE_")}
    env.update(
        FOOTNOTE_HOME=str(home),
        FOOTNOTE_CONFIG=str(home / "none.toml"),
        FOOTNOTE_MAX_CONCURRENCY="1",
        FOOTNOTE_MAX_QUEUE=str(max_queue),
        FOOTNOTE_REQUEST_TIMEOUT="600",
        FOOTNOTE_TOP_K=str(top_k),
        # On a shared, oversubscribed machine llama.cpp's threads wait on each other; one is faster.
        FOOTNOTE_THREADS=os.environ.get("FOOTNOTE_THREADS", "1"),
    )
    command = [sys.executable, "-m", "footnote", "serve", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"footnote serve exited; see {log}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    process.terminate()
    raise SystemExit(f"footnote serve was not ready in 300 s; see {log}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="data directory with an index")
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--rates", default="0.05,0.1,0.2,0.4")
    parser.add_argument("--step-seconds", type=float, default=60)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--on-queue", type=int, default=1, help="max_queue with admission control on")
    parser.add_argument("--modes", default="on,off")
    parser.add_argument("--top-k", type=int, default=5, help="sources per answer (prompt length)")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    for mode in args.modes.split(","):
        port = free_port()
        queue = args.on_queue if mode == "on" else 10_000
        server = serve(
            args.home, port, queue, args.top_k, Path(tempfile.gettempdir()) / f"footnote-load-{mode}.log"
        )
        try:
            command = [sys.executable, "-m", "footnote", "bench", "load", "--url", f"http://127.0.0.1:{port}"]
            command += ["--queries", str(args.queries), "--rates", args.rates, "--pid", str(server.pid)]
            command += ["--step-seconds", str(args.step_seconds), "--max-tokens", str(args.max_tokens)]
            command += ["--timeout", str(args.timeout), "--out", str(RESULTS)]
            command += ["--label", f"load_admission_{mode}"]
            print(f"admission control {mode} (max_concurrency 1, max_queue {queue})", flush=True)
            subprocess.run(command, check=True)
        finally:
            server.terminate()
            server.wait(60)
        report = json.loads((RESULTS / f"load_admission_{mode}.json").read_text())
        print(json.dumps(report["summary"]), flush=True)


if __name__ == "__main__":
    main()
