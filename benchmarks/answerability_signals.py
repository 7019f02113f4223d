"""Which signal tells an answerable question from one whose passages lack the answer?

On an RGB-style file, every question is shown its reading passages (positives among
distractors, as `footnote eval answers` gives them) and, separately, its negatives only. For
each signal this prints and saves two ROC AUCs (0.5 is chance, 1.0 perfect):

- passage AUC: positive passages against negative ones, over the reading passages;
- answerable AUC: the best passage score of the reading set against that of the negatives-only
  set, the separation an abstention threshold on that signal could reach at best.

Signals: `lexical` (weighted share of the question's content terms in the best sentence),
`checker` (the citation checker's score of the question against the best sentence: lexical and
embedding evidence, key-term penalty), `cosine` (embedding cosine of question and passage),
`llm-yes:<model>` (log P(" Yes") that the passage helps answer, as the LLM reranker scores it)
and, with `--confidence`, `confidence:<model>` (mean log-probability of the tokens the answer
model writes for the whole prompt, per question only).

    python benchmarks/answerability_signals.py ../shared/data/rgb/en_fact.jsonl --limit 40 \\
        --llm smollm2-135m --confidence smollm2-135m
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from footnote.answer.citations import CitationChecker
from footnote.answer.prompt import build_messages
from footnote.answer.terms import content_terms, lexical_support
from footnote.application import Application
from footnote.config import Settings
from footnote.core.hits import SearchHit
from footnote.evaluation.answers import AnswerRecord, given_passages, load_records, passage_path
from footnote.models.cpu import machine

RESULTS = Path(__file__).parent / "results"
PassageScorer = Callable[[AnswerRecord, Sequence[SearchHit]], list[float]]


def roc_auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """Probability that a random positive outscores a random negative (ties count half)."""
    pairs = [(p > n) + 0.5 * (p == n) for p in positives for n in negatives]
    return sum(pairs) / len(pairs) if pairs else float("nan")


def sentence_scorers(app: Application) -> dict[str, PassageScorer]:
    """Scorers from the question's terms and the embedder, best sentence (or passage) per source."""
    embedder = app.embedder

    def best_sentence(record: AnswerRecord, hits: Sequence[SearchHit], lexical: bool) -> list[float]:
        checker = CitationChecker(hits, embedder, question=record.query)
        claim = content_terms(record.query)
        vector = embedder.embed(record.query)
        best = [0.0] * len(hits)
        for candidate in checker.spans.candidates:
            if lexical:
                score = lexical_support(claim, candidate.terms)
            else:
                score = checker.spans.score(claim, vector, candidate)
            best[candidate.source] = max(best[candidate.source], score)
        return best

    def cosine(record: AnswerRecord, hits: Sequence[SearchHit]) -> list[float]:
        question = embedder.embed(record.query)
        vectors = embedder.embed_many([hit.text for hit in hits])
        return [sum(a * b for a, b in zip(question, vector, strict=True)) for vector in vectors]

    return {
        "lexical": lambda record, hits: best_sentence(record, hits, lexical=True),
        "checker": lambda record, hits: best_sentence(record, hits, lexical=False),
        "cosine": cosine,
    }


def llm_yes_scorer(model: str, threads: int) -> PassageScorer:
    from footnote.perplexity.models import open_scorer
    from footnote.retrieval.rerank import LlmReranker

    home = tempfile.mkdtemp(prefix="footnote-signals-")
    reranker = LlmReranker(open_scorer(model, Settings(home=home, threads=threads), context_length=512))
    return lambda record, hits: reranker.score(record.query, [hit.text for hit in hits])


def confidence_scorer(model: str, threads: int) -> Callable[[AnswerRecord, Sequence[SearchHit]], float]:
    """Mean token log-probability of the answer the model writes from these passages."""
    from footnote.models.llama import open_llama

    home = tempfile.mkdtemp(prefix="footnote-signals-")
    generator: Any = Application(Settings(home=home, llm=model, threads=threads)).generator
    llm = open_llama(generator.model_path, n_ctx=generator.context_length, threads=threads, logits_all=True)

    def score(record: AnswerRecord, hits: Sequence[SearchHit]) -> float:
        messages = [{"role": m.role, "content": m.content} for m in build_messages(record.query, hits)]
        reply = llm.create_chat_completion(
            messages=messages, max_tokens=80, temperature=0.0, logprobs=True, top_logprobs=1
        )
        tokens = reply["choices"][0]["logprobs"]["content"] or [{"logprob": 0.0}]
        return float(statistics.fmean(token["logprob"] for token in tokens))

    return score


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--passages", type=int, default=5)
    parser.add_argument("--llm", action="append", default=[], help="score with this LLM's yes (repeatable)")
    parser.add_argument("--confidence", action="append", default=[], help="answer model confidence")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    records = load_records(args.dataset, args.limit)
    app = Application(Settings(home=tempfile.mkdtemp(prefix="footnote-signals-")))
    scorers = sentence_scorers(app)
    for model in args.llm:
        scorers[f"llm-yes:{model}"] = llm_yes_scorer(model, args.threads)
    confidences = {f"confidence:{model}": confidence_scorer(model, args.threads) for model in args.confidence}

    figures: dict[str, dict[str, float]] = {}
    for name, scorer in scorers.items():
        started = time.perf_counter()
        positive: list[float] = []
        negative: list[float] = []
        answerable: list[float] = []
        unanswerable: list[float] = []
        top_is_positive = 0
        for record in records:
            reading = given_passages(record, args.passages, answerable=True)
            scores = scorer(record, reading)
            positives = {passage_path(text) for text in record.positive}
            for hit, score in zip(reading, scores, strict=True):
                (positive if hit.path in positives else negative).append(score)
            top_is_positive += reading[max(range(len(scores)), key=scores.__getitem__)].path in positives
            answerable.append(max(scores))
            unanswerable.append(max(scorer(record, given_passages(record, args.passages, answerable=False))))
        figures[name] = {
            "passage_auc": roc_auc(positive, negative),
            "answerable_auc": roc_auc(answerable, unanswerable),
            "top_passage_positive": top_is_positive / len(records),
            "positive_share": len(positive) / (len(positive) + len(negative)),
            "seconds": time.perf_counter() - started,
        }
        print(f"{name:28} " + "  ".join(f"{k} {v:.3f}" for k, v in figures[name].items()), flush=True)
    for name, score_question in confidences.items():
        started = time.perf_counter()
        answerable = [score_question(r, given_passages(r, args.passages, True)) for r in records]
        unanswerable = [score_question(r, given_passages(r, args.passages, False)) for r in records]
        figures[name] = {
            "answerable_auc": roc_auc(answerable, unanswerable),
            "seconds": time.perf_counter() - started,
        }
        print(f"{name:28} " + "  ".join(f"{k} {v:.3f}" for k, v in figures[name].items()), flush=True)

    RESULTS.mkdir(exist_ok=True)
    day = time.strftime("%Y%m%d")
    out = RESULTS / f"answerability_signals_{args.dataset.stem}_{len(records)}q_{day}.json"
    payload = {"dataset": str(args.dataset), "questions": len(records), "machine": machine()}
    payload["signals"] = figures
    out.write_text(json.dumps(payload, indent=2))
    print(f"saved {out}")


if __name__ == "__main__":
    main()
