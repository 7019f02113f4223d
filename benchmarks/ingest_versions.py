"""Ingest speed of this checkout against an earlier revision, in one run: did a change slow ingest?

Checks the revision out into a temporary git worktree, then runs `benchmarks/ingest_scifact.py
--phase ingest` (the same SciFact documents, settings and plain-encode baseline) with each
version's `src/` first on the path, alternating the two `--repeats` times so that both see the
same machine load. Prints and saves each run's ingest seconds, the medians and their ratio
(this checkout over the revision), with the CPU's flags, under benchmarks/results/.

    python benchmarks/ingest_scifact.py ../shared/data/scifact --limit 1000 --phase encode
    python benchmarks/ingest_versions.py ../shared/data/scifact --before 9aa38e2 --limit 1000 \\
        --plain-from benchmarks/results/ingest_scifact-encode-….json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from footnote.models.cpu import machine

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"


def run_ingest(source: Path, dataset: Path, limit: int, plain_from: Path) -> dict[str, Any]:
    """One `ingest_scifact.py --phase ingest` run with the code under `source` (a checkout)."""
    environment = {**os.environ, "PYTHONPATH": str(source / "src")}
    command = [
        sys.executable,
        str(REPO / "benchmarks" / "ingest_scifact.py"),
        str(dataset),
        "--limit",
        str(limit),
        "--phase",
        "ingest",
        "--plain-from",
        str(plain_from),
    ]
    done = subprocess.run(command, env=environment, capture_output=True, text=True, check=True)
    report = json.loads(done.stdout[: done.stdout.rindex("}") + 1])
    return {
        "ingest_seconds": report["footnote_ingest_seconds"],
        "embedding_seconds": report["footnote_embedding_seconds"],
        "chunks": report["footnote_chunks"],
        "embedder": report["footnote_embedder"],
        "ratio_to_plain_encode": report.get("ratio"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path, help="BEIR folder with corpus.jsonl")
    parser.add_argument("--before", required=True, help="the git revision to compare against")
    parser.add_argument("--limit", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--plain-from", type=Path, required=True, help="JSON saved by --phase encode")
    args = parser.parse_args()
    revision = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", args.before],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    current = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="footnote-before-") as scratch:
        worktree = Path(scratch) / "before"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(worktree), revision], check=True
        )
        try:
            for _ in range(args.repeats):
                for side, source in (("before", worktree), ("after", REPO)):
                    runs[side].append(run_ingest(source, args.dataset, args.limit, args.plain_from))
                    print(side, runs[side][-1]["ingest_seconds"], file=sys.stderr)
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(worktree)], check=True
            )
    medians = {side: statistics.median(r["ingest_seconds"] for r in runs[side]) for side in runs}
    result = {
        "benchmark": "ingest_versions",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "documents": args.limit,
        "before": {"revision": revision, "runs": runs["before"], "median_ingest_seconds": medians["before"]},
        "after": {"revision": current, "runs": runs["after"], "median_ingest_seconds": medians["after"]},
        "after_over_before": round(medians["after"] / medians["before"], 3),
    }
    print(json.dumps(result, indent=2))
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    report = RESULTS / f"ingest_versions-{revision}-{current}-{stamp}.json"
    report.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {report}", file=sys.stderr)


if __name__ == "__main__":
    main()
