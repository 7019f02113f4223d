"""`footnote bench load` against a real `footnote serve` with the embedded model: deadline-aware admission.

Starts the server on a free loopback port over an existing data directory (ingest a corpus
first, e.g. `footnote ingest examples/sample`), then runs the rate ladder twice: once with
API requests only (no class header: the `api` objective), once with an even mix of
`interactive` and `batch` requests. Each run writes
benchmarks/results/load_admission-<mode>-<label>-<stamp>.json (the CPU and its flags under
`machine`) and a chart, and prints every step: answered and refused (429 with Retry-After),
latency percentiles per class, and the server's resident memory from its /metrics.

    .venv/bin/python benchmarks/load_admission.py --home /tmp/bench-home \\
        --queries benchmarks/data/sample-questions.txt --rates 0.1,0.3,1,2 --step-seconds 40

`--server-src` runs the server from another checkout's `src` (the same client measures it),
to compare with the code before a change.
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
MODES = {"api": None, "mix": "interactive:1,batch:1"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve(home: Path, port: int, server_src: Path | None, log: Path) -> subprocess.Popen[bytes]:
    """`footnote serve` with the default settings over `home` (no footnote.toml is read)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOOTNOTE_")}
    env.update(FOOTNOTE_HOME=str(home), FOOTNOTE_CONFIG=str(home / "none.toml"))
    if server_src is not None:
        env["PYTHONPATH"] = str(server_src.resolve())
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
    parser.add_argument("--rates", default="0.1,0.3,1,2")
    parser.add_argument("--step-seconds", type=float, default=40)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--timeout", type=float, default=300, help="seconds a request may take")
    parser.add_argument("--modes", default="api,mix", help="api (no class header), mix (interactive+batch)")
    parser.add_argument("--label", default="defaults", help="names the result files")
    parser.add_argument("--server-src", type=Path, help="run the server from this src folder")
    parser.add_argument("--seed", type=int, default=0, help="seed of arrivals, questions and classes")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    for mode in args.modes.split(","):
        port = free_port()
        log = Path(tempfile.gettempdir()) / f"footnote-load-{mode}.log"
        server = serve(args.home, port, args.server_src, log)
        name = f"load_admission-{mode}-{args.label}-{stamp}"
        try:
            command = [sys.executable, "-m", "footnote", "bench", "load", "--url", f"http://127.0.0.1:{port}"]
            command += ["--queries", str(args.queries), "--rates", args.rates]
            command += ["--step-seconds", str(args.step_seconds), "--max-tokens", str(args.max_tokens)]
            command += ["--timeout", str(args.timeout), "--out", str(RESULTS), "--label", name]
            command += ["--seed", str(args.seed)]
            if MODES[mode]:
                command += ["--mix", str(MODES[mode])]
            print(f"{mode}: {name}", flush=True)
            subprocess.run(command, check=True)
        finally:
            server.terminate()
            server.wait(60)
        report = json.loads((RESULTS / f"{name}.json").read_text())
        print(json.dumps(report["summary"]), flush=True)


if __name__ == "__main__":
    main()
