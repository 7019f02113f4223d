"""How far can choosing among the retrieved sentences go, and does the answer model help choose?

For a document question set (ingested once into `--home`), every question's top-k chunks are
split and scored exactly as the answer engine does (`evidence_model.prepare`). Reported, over the
answerable questions:

- the ceiling: the answer is in the top-k chunks; an answer sentence is among the blend's best n
  sentences (n = 1, 2, 3, 5, 8), i.e. what a perfect reranker of those n could reach;
- the answer model as a reranker of the blend's best `--candidates` sentences, by two likelihood
  signals: answer likelihood as pointwise mutual information, log P(sentence | "Question: q
  Answer:") - log P(sentence | "Answer:"), and query likelihood, the mean log P(question |
  "Passage: sentence Question:"); alone and added to the blend at several weights;
- within-chunk contrast: the blend plus the share of the question's terms a sentence covers,
  weighted by their inverse frequency among the sentences of its own chunk (the terms that tell
  apart the items of one list or table).

sentence@1 is "the best sentence holds an accepted answer"; passage@1 is the same for the best
sentence grown by the one before and after it in its paragraph (what the quote shows).

    python benchmarks/reader_ceiling.py ../shared/data/docqa-dev --home /tmp/docqa-home
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
from evidence_model import Prepared, prepare

from footnote.answer.terms import content_terms
from footnote.application import create_app
from footnote.config import Settings
from footnote.evaluation.docqa import CORPUS_FOLDER, contains_answer, load_doc_questions
from footnote.models.scoring import TokenScorer
from footnote.perplexity.models import open_scorer

RESULTS = Path(__file__).parent / "results"
CEILING_AT = (1, 2, 3, 5, 8)
WEIGHTS = (0.02, 0.05, 0.1, 0.2)
SENTENCE_TOKENS = 60  # a candidate longer than this is cut (a man page's option block)


def grown(p: Prepared, index: int) -> str:
    """The sentence at `index` with the one before and after it in its paragraph."""
    spans, first, last = p.spans, index, index
    if index > 0 and spans[index - 1].source == spans[index].source:
        first = index - 1 if spans[index - 1].paragraph == spans[index].paragraph else index
    if index + 1 < len(spans) and spans[index + 1].source == spans[index].source:
        last = index + 1 if spans[index + 1].paragraph == spans[index].paragraph else index
    return p.hits[spans[index].source].text[spans[first].start : spans[last].end]


def at_one(prepared: Sequence[Prepared], scores: Callable[[Prepared], Sequence[float]]) -> dict[str, float]:
    sentence, passage = [], []
    for p in prepared:
        best = int(np.argmax(scores(p)))
        sentence.append(p.labels[best] > 0)
        passage.append(contains_answer(grown(p, best), p.item.answers))
    return {
        "sentence_at_1": round(float(np.mean(sentence)), 4),
        "passage_at_1": round(float(np.mean(passage)), 4),
    }


def ceiling(prepared: Sequence[Prepared]) -> dict[str, float]:
    report = {"answer_in_chunks": round(float(np.mean([p.labels.any() for p in prepared])), 4)}
    for n in CEILING_AT:
        found = [p.labels[np.argsort(-np.asarray(p.shipped), kind="stable")[:n]].any() for p in prepared]
        report[f"answer_in_best_{n}"] = round(float(np.mean(found)), 4)
    return report


def within_chunk_contrast(p: Prepared) -> np.ndarray:
    """Per sentence: the question's terms it covers, weighted by inverse frequency in its chunk."""
    asked = content_terms(p.item.question)
    contrast = np.zeros(len(p.spans))
    for source in {s.source for s in p.spans}:
        members = [i for i, s in enumerate(p.spans) if s.source == source]
        frequency = {t: sum(t in p.spans[i].terms for i in members) for t in asked}
        weight = {
            t: w * math.log(1 + len(members) / (frequency[t] + 0.5)) for t, w in asked.items() if frequency[t]
        }
        total = sum(weight.values()) or 1.0
        for i in members:
            contrast[i] = sum(v for t, v in weight.items() if t in p.spans[i].terms) / total
    return contrast


def likelihoods(scorer: TokenScorer, p: Prepared, candidates: int) -> dict[int, tuple[float, float]]:
    """For the blend's best `candidates` sentences: (answer-likelihood PMI, query likelihood)."""
    tokenize = scorer.tokenizer.tokenize
    asked, bare = tokenize(f"Question: {p.item.question}\nAnswer:"), tokenize("Answer:")
    question = tokenize(" " + p.item.question)
    signals = {}
    for index in np.argsort(-np.asarray(p.shipped), kind="stable")[:candidates]:
        text = " ".join(p.texts[index].split())
        sentence = tokenize(" " + text)[:SENTENCE_TOKENS]
        conditioned = sum(scorer.score_window(asked + sentence, len(asked)))
        alone = sum(scorer.score_window(bare + sentence, len(bare)))
        passage = tokenize(f"Passage: {text}\nQuestion:")[: SENTENCE_TOKENS + 8]
        query = float(np.mean(scorer.score_window(passage + question, len(passage))))
        signals[int(index)] = (conditioned - alone, query)
    return signals


def reranked(
    prepared: Sequence[Prepared],
    signals: list[dict[int, tuple[float, float]]],
    which: int,
    weight: float | None,
) -> dict[str, float]:
    """The blend's candidates reordered by one likelihood signal, alone (`weight` None) or added."""

    of = {id(p): own for p, own in zip(prepared, signals, strict=True)}

    def scores(p: Prepared) -> np.ndarray:
        own = of[id(p)]
        out = np.full(len(p.spans), -np.inf)
        for index, values in own.items():
            out[index] = values[which] if weight is None else p.shipped[index] + weight * values[which]
        return out

    return at_one(prepared, scores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True, help="data directory to ingest into and reuse")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--model", default=None, help="the scoring model (default: the answer model)")
    args = parser.parse_args()
    app = create_app(Settings(home=args.home))
    app.ingest([args.dataset / CORPUS_FOLDER])
    items = [item for item in load_doc_questions(args.dataset) if item.answerable]
    prepared = prepare(app, items, args.top_k)
    model = args.model or app.settings.llm
    report: dict[str, object] = {
        "dataset": str(args.dataset),
        "answerable_questions": len(prepared),
        "top_k": args.top_k,
        "candidates": args.candidates,
        "scoring_model": model,
        "ceiling": ceiling(prepared),
        "shipped_blend": at_one(prepared, lambda p: p.shipped),
        "within_chunk_contrast": {
            str(w): at_one(prepared, lambda p, w=w: np.asarray(p.shipped) + w * within_chunk_contrast(p))
            for w in (0.1, 0.2, 0.4)
        },
    }
    started = time.perf_counter()
    with open_scorer(model, app.settings, context_length=256) as scorer:
        signals = [likelihoods(scorer, p, args.candidates) for p in prepared]
    report["scoring_seconds"] = round(time.perf_counter() - started, 1)
    for which, name in ((0, "answer_pmi"), (1, "query_likelihood")):
        report[name] = {
            "alone": reranked(prepared, signals, which, None),
            **{f"blend_plus_{w}": reranked(prepared, signals, which, w) for w in WEIGHTS},
        }
    app.close()
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    out = RESULTS / f"reader_ceiling-{args.dataset.name}-{model}-{stamp}.json"
    out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    print(f"saved {out}")


if __name__ == "__main__":
    main()
