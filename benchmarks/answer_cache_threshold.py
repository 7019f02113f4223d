"""Calibrating `answer_cache_threshold`: how alike are near-duplicate and distinct questions?

Embeds SciFact claims with the bundled embedder, plus robustness variants of each (a typo,
two swapped words, a dropped word: the same question) and reports two distributions of
cosine similarity: each variant against its own claim (should hit the cache) and each claim
against its nearest other claim (must not). A threshold between the low tail of the first
and the high tail of the second serves near-duplicates without answering a different
question; entity masking is reported apart, since a masked entity can change the answer.
It also reports what the cache's lexical guard (`same_words`) leaves of both.

    .venv/bin/python benchmarks/answer_cache_threshold.py [--limit 300]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from footnote.answer.cache import same_words
from footnote.bench.queries import VARIANTS, load_queries
from footnote.config import Settings
from footnote.core.stats import percentile
from footnote.models.embedders import SentenceTransformerEmbedder
from footnote.models.registry import resolve_embedder

REPO = Path(__file__).resolve().parent.parent
QUERIES = REPO.parent / "shared" / "data" / "scifact" / "queries.jsonl"


def quantiles(values: list[float]) -> dict[str, float]:
    pick = {"min": 0.0, "p01": 0.01, "p05": 0.05, "p50": 0.5, "p95": 0.95, "p99": 0.99, "max": 1.0}
    return {name: round(percentile(values, q) or 0.0, 4) for name, q in pick.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=300)
    args = parser.parse_args()
    if not QUERIES.exists():
        raise SystemExit(f"{QUERIES} is missing; this benchmark needs the SciFact queries")
    claims = load_queries(QUERIES, args.limit)
    name = Settings().embedder
    embedder = SentenceTransformerEmbedder(resolve_embedder(name), display_name=name)
    rng = random.Random(0)
    started = time.perf_counter()
    originals = embedder.embed_many(claims)
    similar: dict[str, list[float]] = {}
    guarded: dict[str, list[bool]] = {}  # does the lexical guard let the variant hit?
    for kind, make in VARIANTS.items():
        pairs = [(i, make(text, rng)) for i, text in enumerate(claims)]
        pairs = [(i, variant) for i, variant in pairs if variant != claims[i]]
        vectors = embedder.embed_many([variant for _, variant in pairs])
        similar[kind] = [
            sum(a * b for a, b in zip(originals[i], v, strict=True))
            for (i, _), v in zip(pairs, vectors, strict=True)
        ]
        guarded[kind] = [same_words(claims[i], variant) for i, variant in pairs]
    nearest_other, nearest_index = [], []
    for i, vector in enumerate(originals):
        score, j = max(
            (sum(a * b for a, b in zip(vector, other, strict=True)), j)
            for j, other in enumerate(originals)
            if j != i and claims[j] != claims[i]
        )
        nearest_other.append(score)
        nearest_index.append(j)
    same = similar["typo"] + similar["swap"] + similar["drop"]
    result = {
        "embedder": name,
        "claims": len(claims),
        "seconds": round(time.perf_counter() - started, 1),
        "variant_vs_own_claim": {kind: quantiles(values) for kind, values in similar.items()},
        "typo_swap_drop": quantiles(same),
        "claim_vs_nearest_other_claim": quantiles(nearest_other),
    }
    passes = guarded["typo"] + guarded["swap"] + guarded["drop"]
    other_passes = [same_words(claims[i], claims[j]) for i, j in enumerate(nearest_index)]
    for threshold in (0.85, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995):
        result[f"at_{threshold}"] = {
            "near_duplicates_served": round(sum(v >= threshold for v in same) / len(same), 4),
            "distinct_claims_confused": round(sum(v >= threshold for v in nearest_other) / len(claims), 4),
            "with_guard": {
                "typo_and_swap_served": round(
                    sum(
                        v >= threshold and ok
                        for v, ok in zip(
                            similar["typo"] + similar["swap"], guarded["typo"] + guarded["swap"], strict=True
                        )
                    )
                    / len(similar["typo"] + similar["swap"]),
                    4,
                ),
                "near_duplicates_served": round(
                    sum(v >= threshold and ok for v, ok in zip(same, passes, strict=True)) / len(same), 4
                ),
                "distinct_claims_confused": round(
                    sum(v >= threshold and ok for v, ok in zip(nearest_other, other_passes, strict=True))
                    / len(claims),
                    4,
                ),
            },
        }
    closest = sorted(range(len(claims)), key=lambda i: -nearest_other[i])[:5]
    result["closest_distinct_pairs"] = [[claims[i], claims[nearest_index[i]]] for i in closest]
    print(json.dumps(result, indent=2))
    out = REPO / "benchmarks" / "results" / f"answer_cache_threshold-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
