"""Does the answer model's query likelihood pick the evidence sentence, or tell when none answers?

For each sentence of a question's top-k chunks (split exactly as the answer engine splits them),
the answer model scores the question after "Passage: <sentence>\\nQuestion about the passage:"
(mean log-probability of the question's tokens; torch in bf16 on the GGUF, batched), alone and
with the sentence's heading and the sentence before it. Reported: sentence@1 (the best sentence
holds an accepted answer) for the shipped blend, for query likelihood, for their z-scored sums,
and for query likelihood reranking the blend's top n; and the ROC AUC, answerable against
unanswerable, of pointwise mutual information (the best sentence's score less the score after an
empty passage) next to the shipped answerability signal.

    python benchmarks/query_likelihood.py ../shared/data/docqa-dev --home /tmp/docqa-home
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
from evidence_model import Prepared, prepare, roc_auc

from footnote.application import create_app
from footnote.config import Settings
from footnote.evaluation.docqa import CORPUS_FOLDER, load_doc_questions
from footnote.perplexity.backends.transformers import TransformersScorer
from footnote.perplexity.models import open_perplexity_scorer

RESULTS = Path(__file__).parent / "results"
PROMPT = "Passage: {passage}\nQuestion about the passage:"
MAX_PASSAGE_TOKENS = 300
WEIGHTS = (0.1, 0.3, 1.0)
RERANK_TOP = (2, 3, 5)


def likelihoods(scorer: TransformersScorer, p: Prepared) -> dict[str, list[float]]:
    tokenize = scorer.tokenizer.tokenize
    question = tokenize(" " + p.item.question)
    by_position = {(s.source, s.position): k for k, s in enumerate(p.spans)}
    alone, with_context = [], []
    for s, text in zip(p.spans, p.texts, strict=True):
        before = by_position.get((s.source, s.position - 1))
        previous = p.texts[before] if before is not None and p.spans[before].paragraph == s.paragraph else ""
        heading = " > ".join(p.hits[s.source].heading_path)
        alone.append(tokenize(PROMPT.format(passage=text))[-MAX_PASSAGE_TOKENS:])
        context = f"{heading}\n{previous} {text}".strip()
        with_context.append(tokenize(PROMPT.format(passage=context))[-MAX_PASSAGE_TOKENS:])
    empty = [tokenize(PROMPT.format(passage=""))]
    rows = scorer.score_continuation([*empty, *alone, *with_context], question)
    means = [float(np.mean(row)) for row in rows]
    n = len(alone)
    return {"empty": means[:1], "alone": means[1 : 1 + n], "context": means[1 + n :]}


def sentence_at_1(prepared: Sequence[Prepared], scores: Callable[[int], Sequence[float]]) -> float:
    found = [
        float(p.labels[int(np.argmax(scores(i)))] > 0) if len(p.labels) else 0.0
        for i, p in enumerate(prepared)
        if p.item.answerable
    ]
    return round(float(np.mean(found)), 4)


def standard(values: Sequence[float]) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    return (array - array.mean()) / (array.std() + 1e-9)


def report(prepared: Sequence[Prepared], scored: Sequence[dict[str, list[float]]]) -> dict[str, object]:
    selection: dict[str, float] = {"shipped_blend": sentence_at_1(prepared, lambda i: prepared[i].shipped)}
    for variant in ("alone", "context"):
        selection[f"likelihood_{variant}"] = sentence_at_1(prepared, lambda i, v=variant: scored[i][v])
        for weight in WEIGHTS:
            selection[f"blend_plus_{weight}_likelihood_{variant}"] = sentence_at_1(
                prepared,
                lambda i, v=variant, w=weight: standard(prepared[i].shipped) + w * standard(scored[i][v]),
            )
        for top in RERANK_TOP:

            def reranked(i: int, v: str = variant, top: int = top) -> np.ndarray:
                blend = np.asarray(prepared[i].shipped)
                keep = np.argsort(-blend)[:top]
                values = np.full(len(blend), -np.inf)
                values[keep] = np.asarray(scored[i][v])[keep]
                return values

            selection[f"likelihood_{variant}_reranks_blend_top_{top}"] = sentence_at_1(prepared, reranked)
    answerable = [p.item.answerable for p in prepared]
    signals = {
        "answerability": [p.answerability for p in prepared],
        "pmi_best_context": [max(s["context"], default=0.0) - s["empty"][0] for s in scored],
        "pmi_best_alone": [max(s["alone"], default=0.0) - s["empty"][0] for s in scored],
        "pmi_of_blend_best": [
            s["context"][int(np.argmax(p.shipped))] - s["empty"][0] if len(p.shipped) else 0.0
            for p, s in zip(prepared, scored, strict=True)
        ],
    }
    auc = {
        name: round(
            roc_auc(
                [v for v, a in zip(values, answerable, strict=True) if a],
                [v for v, a in zip(values, answerable, strict=True) if not a],
            ),
            4,
        )
        for name, values in signals.items()
    }
    return {"sentence_at_1": selection, "abstention_auc": auc}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True, help="data directory to ingest into and reuse")
    parser.add_argument("--top-k", type=int, default=5)
    args = parser.parse_args()
    app = create_app(Settings(home=args.home, score_runtime="torch-bf16"))
    app.ingest([args.dataset / CORPUS_FOLDER])
    prepared = prepare(app, load_doc_questions(args.dataset), args.top_k)
    scorer = open_perplexity_scorer(app.settings.llm, app.settings)
    assert isinstance(scorer, TransformersScorer)
    started = time.perf_counter()
    scored = [likelihoods(scorer, p) for p in prepared]
    seconds = time.perf_counter() - started
    result = {
        "dataset": str(args.dataset),
        "top_k": args.top_k,
        "questions": len(prepared),
        "model": scorer.name,
        "sentences_mean": round(float(np.mean([len(p.spans) for p in prepared])), 1),
        "scoring_seconds_per_question": round(seconds / len(prepared), 2),
        **report(prepared, scored),
    }
    app.close()
    out = RESULTS / f"query_likelihood-{args.dataset.name}-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    print(f"saved {out}")


if __name__ == "__main__":
    main()
