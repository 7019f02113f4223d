"""Can a learned blend choose the evidence sentence, or tell when none answers, better than the
hand-weighted one? Every tuned figure comes with its cross-validated value, by document.

For a document question set (ingested once into `--home`), every question's top-k chunks are
split and embedded exactly as the answer engine does, and per sentence a few cheap features are
computed: the blend's own (keyword coverage with lead-ins, dense cosine, chunk rank, asked-kind
token, restates-the-question, is-a-question) and new ones (coverage without lead-ins, with the
chunk's heading as a lead-in, with a "...:" line before the paragraph, with the next sentence;
IDF taken over the whole corpus; BM25 over the retrieved sentences; the cosine of the sentence
pair that ends with it; position; length). Then:

- selection: passage@1 and any-of-3 (answer in the best / any selected passage) for the shipped
  blend, for its six weights re-chosen by grid search, and for listwise logistic models (one
  softmax over a question's sentences, L2) over the blend's features and over all of them; each
  fitted one in sample and leave-one-document-out;
- abstention: the ROC AUC of each answerability signal (answerable against unanswerable
  questions), and the abstention and false abstention of a threshold chosen, for at most 10%
  false abstention, in 5-fold cross-validation by document; plus how many questions the
  unknown-name check declines.

    python benchmarks/evidence_model.py ../shared/data/docqa-dev --home /tmp/docqa-home
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from footnote.answer import asks, evidence, sentence_spans
from footnote.answer.citations import CitationChecker
from footnote.answer.terms import content_terms, named_words
from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.core.hits import SearchHit
from footnote.evaluation.docqa import CORPUS_FOLDER, DocQuestion, contains_answer, load_doc_questions

RESULTS = Path(__file__).parent / "results"
Matrix = npt.NDArray[np.float64]
Scores = Sequence[float] | Matrix  # one score per sentence of a question
BLEND = ["keyword", "dense", "rank", "typed", "no_new_term", "question"]
NEW = [
    "keyword_self",
    "keyword_heading",
    "keyword_colon",
    "keyword_next",
    "corpus_keyword",
    "bm25",
    "dense_pair",
    "position",
    "length",
]
FEATURES = BLEND + NEW
MAX_FALSE_ABSTENTION = 0.10
# The cross-validated curve: abstention at each target of false abstention.
CURVE = (0.05, 0.10, 0.15, 0.20, 0.30)


@dataclass
class Prepared:
    item: DocQuestion
    hits: list[SearchHit]
    spans: list[sentence_spans.SentenceSpan]
    texts: list[str]
    features: Matrix
    labels: Matrix  # 1 where the sentence holds an accepted answer
    shipped: list[float]  # the shipped blend's scores
    answerability: float
    match: float
    group: str  # the question's document (for unanswerable ones, that of the top hit)


def corpus_idf(app: Application) -> Callable[[str], float]:
    ids = app.catalog.chunk_id_list()
    frequency: dict[str, int] = {}
    for record in app.catalog.chunks(ids).values():
        for term in content_terms(record.text):
            frequency[term] = frequency.get(term, 0) + 1
    return lambda term: math.log(1 + len(ids) / (frequency.get(term, 0) + 0.5))


def sentence_features(
    question: str, hits: Sequence[SearchHit], checker: CitationChecker, idf_of: Callable[[str], float]
) -> tuple[list[sentence_spans.SentenceSpan], list[str], Matrix]:
    spans = checker.sentence_spans()
    texts = [hits[s.source].text[s.start : s.end] for s in spans]
    pairs = {(c.source, c.position): c.vector for c in checker.spans.candidates if c.is_pair}
    asked = content_terms(question)
    frequency: dict[str, int] = {}
    for s in spans:
        for term in s.terms & asked.keys():
            frequency[term] = frequency.get(term, 0) + 1
    local = {t: math.log(1 + len(spans) / frequency.get(t, 0.5)) * w for t, w in asked.items()}
    norm = sum(local.values()) or 1.0
    corpus = {t: idf_of(t) * w for t, w in asked.items()}
    corpus_norm = sum(corpus.values()) or 1.0
    by_position = {(s.source, s.position): s for s in spans}
    ranks = sorted({s.source for s in spans})
    headings = [frozenset(content_terms(" ".join((h.title, *h.heading_path)))) for h in hits]
    kinds = asks.asked_kinds(question)
    mean_terms = float(np.mean([len(s.terms) for s in spans])) if spans else 1.0
    question_vector = np.asarray(checker.question_vector or [], dtype=float)
    rows = []
    for s, text in zip(spans, texts, strict=True):
        context = sentence_spans.lead_in(s, by_position)
        before = by_position.get((s.source, s.position - 1))
        after = by_position.get((s.source, s.position + 1))
        colon = list(context)
        if (
            before is not None
            and before.paragraph != s.paragraph
            and texts[spans.index(before)].rstrip().endswith(":")
        ):
            colon.append((before.terms, sentence_spans.CONTEXT_DISCOUNT))
        following = list(context)
        if after is not None and after.paragraph == s.paragraph:
            following.append((after.terms, sentence_spans.CONTEXT_DISCOUNT**2))
        cosine = (
            float(question_vector @ np.asarray(s.vector))
            if s.vector is not None and question_vector.size
            else 0.0
        )
        pair = pairs.get((s.source, s.position - 1))
        pair_cosine = cosine
        if (
            pair is not None
            and before is not None
            and before.paragraph == s.paragraph
            and question_vector.size
        ):
            pair_cosine = max(cosine, float(question_vector @ np.asarray(pair)))
        length = len(s.terms) or 1
        bm25 = sum(
            math.log(1 + (len(spans) - frequency[t] + 0.5) / (frequency[t] + 0.5))
            * 2.2
            / (1 + 1.2 * (0.25 + 0.75 * length / mean_terms))
            for t in asked
            if t in s.terms
        )
        rows.append(
            [
                sentence_spans.covered_weight(local, s, context) / norm,
                max(0.0, cosine),
                1.0 / (1 + ranks.index(s.source)),
                float(bool(kinds) and asks.holds_asked_token(text, question, kinds)),
                float(s.terms <= asked.keys()),
                float(text.rstrip().endswith(("?", "\uff1f"))),
                sentence_spans.covered_weight(local, s, []) / norm,
                sentence_spans.covered_weight(
                    local, s, [*context, (headings[s.source], sentence_spans.CONTEXT_DISCOUNT)]
                )
                / norm,
                sentence_spans.covered_weight(local, s, colon) / norm,
                sentence_spans.covered_weight(local, s, following) / norm,
                sentence_spans.covered_weight(corpus, s, context) / corpus_norm,
                bm25 / 10,
                max(0.0, pair_cosine),
                min(s.position, 20) / 20,
                math.log(1 + length) / 4,
            ]
        )
    return spans, texts, np.asarray(rows, dtype=float).reshape(len(spans), len(FEATURES))


def prepare(app: Application, items: Sequence[DocQuestion], top_k: int) -> list[Prepared]:
    idf_of = corpus_idf(app)
    prepared = []
    for item in items:
        hits = app.search(item.question, limit=top_k)
        checker = CitationChecker(hits, app.embedder, question=item.question)
        spans, texts, features = sentence_features(item.question, hits, checker, idf_of)
        labels = np.asarray([float(item.answerable and contains_answer(t, item.answers)) for t in texts])
        shipped = evidence.score_sentences(item.question, spans, checker.question_vector, texts)
        group = item.source or (Path(hits[0].path).name if hits else item.id)
        prepared.append(
            Prepared(
                item,
                hits,
                spans,
                texts,
                features,
                labels,
                shipped,
                asks.answerability(item.question, spans, texts),
                checker.question_match(item.question),
                group,
            )
        )
    return prepared


def selection(
    prepared: Sequence[Prepared], scores: Callable[[int], Scores], count: Callable[[str], int]
) -> Matrix:
    """Per answerable question: [answer in the best passage, answer in any passage]."""
    found = []
    for index, p in enumerate(prepared):
        if not p.item.answerable:
            continue
        passages = evidence.select_passages(p.hits, p.spans, list(scores(index)), count)
        hold = [contains_answer(passage.text(p.hits), p.item.answers) for passage in passages]
        found.append([float(bool(hold) and hold[0]), float(any(hold))])
    return np.asarray(found)


def fit_listwise(prepared: Sequence[Prepared], train: Sequence[int], columns: list[int], l2: float) -> Matrix:
    """Weights maximising the log-probability of the answer sentences under a softmax over each
    question's sentences (gradient descent with momentum), with an L2 penalty."""
    data = [
        (prepared[i].features[:, columns], prepared[i].labels > 0) for i in train if prepared[i].labels.any()
    ]
    weights, velocity = np.zeros(len(columns)), np.zeros(len(columns))
    for _ in range(400):
        gradient = l2 * weights
        for features, positive in data:
            logits = features @ weights
            p = np.exp(logits - logits.max())
            p /= p.sum()
            q = p * positive
            gradient += features.T @ (p - q / q.sum())
        velocity = 0.9 * velocity - 0.05 * gradient / len(data)
        weights += velocity
    return weights


def blend_scores(features: Matrix, weights: Sequence[float]) -> Matrix:
    keyword, dense, rank, typed, no_new, question = weights
    column = {name: features[:, k] for k, name in enumerate(FEATURES)}
    score = (
        keyword * column["keyword"]
        + dense * column["dense"]
        + rank * column["rank"]
        + typed * column["typed"]
    )
    return (
        score
        * np.where(column["no_new_term"] > 0, no_new, 1.0)
        * np.where(column["question"] > 0, question, 1.0)
    )


def leave_one_document_out(
    prepared: Sequence[Prepared],
    fit: Callable[[list[int]], Callable[[int], Scores]],
    count: Callable[[str], int],
) -> Matrix:
    groups = sorted({p.group for p in prepared})
    held: dict[int, Scores] = {}
    for group in groups:
        test = [i for i, p in enumerate(prepared) if p.group == group]
        scorer = fit([i for i, p in enumerate(prepared) if p.group != group])
        held.update({i: scorer(i) for i in test})
    return selection(prepared, lambda i: held[i], count)


def selection_report(prepared: Sequence[Prepared], count: Callable[[str], int]) -> dict[str, object]:
    def row(found: Matrix) -> dict[str, float]:
        return {
            "passage_at_1": round(float(found[:, 0].mean()), 4),
            "passages": round(float(found[:, 1].mean()), 4),
        }

    report: dict[str, object] = {
        "shipped_blend": row(selection(prepared, lambda i: prepared[i].shipped, count))
    }
    grid = list(
        itertools.product(
            [0.2, 0.4, 0.6], [0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3], [0.15, 0.3, 0.45], [0.3, 1.0], [0.3, 1.0]
        )
    )

    def blended(weights: Sequence[float]) -> Callable[[int], Scores]:
        return lambda i: blend_scores(prepared[i].features, weights)

    per_point = [selection(prepared, blended(weights), count) for weights in grid]
    answerable = [i for i, p in enumerate(prepared) if p.item.answerable]

    def grid_fit(train: list[int]) -> Callable[[int], Scores]:
        rows = [answerable.index(i) for i in train if i in answerable]
        best = max(range(len(grid)), key=lambda g: (per_point[g][rows, 0].sum(), per_point[g][rows, 1].sum()))
        return blended(grid[best])

    best = max(range(len(grid)), key=lambda g: (per_point[g][:, 0].sum(), per_point[g][:, 1].sum()))
    report["grid_blend"] = {
        "weights": dict(zip(BLEND, grid[best], strict=True)),
        "in_sample": row(per_point[best]),
        "leave_one_document_out": row(leave_one_document_out(prepared, grid_fit, count)),
    }
    for name, features in (("listwise_blend_features", BLEND), ("listwise_all_features", FEATURES)):
        columns = [FEATURES.index(f) for f in features]

        def listwise(train: list[int], columns: list[int] = columns) -> Callable[[int], Scores]:
            weights = fit_listwise(prepared, train, columns, l2=1.0)
            return lambda i: prepared[i].features[:, columns] @ weights

        weights = fit_listwise(prepared, list(range(len(prepared))), columns, l2=1.0)
        in_sample = selection(prepared, listwise(list(range(len(prepared)))), count)
        report[name] = {
            "weights": {f: round(float(w), 3) for f, w in zip(features, weights, strict=True)},
            "in_sample": row(in_sample),
            "leave_one_document_out": row(leave_one_document_out(prepared, listwise, count)),
        }
    return report


def roc_auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    pairs = [(p > n) + 0.5 * (p == n) for p in positives for n in negatives]
    return sum(pairs) / len(pairs) if pairs else float("nan")


def abstention_report(prepared: Sequence[Prepared], app: Application) -> dict[str, object]:
    column = {name: k for k, name in enumerate(FEATURES)}
    signals: dict[str, list[float]] = {
        "answerability": [],
        "match": [],
        "best_score": [],
        "margin": [],
        "corpus_coverage_typed": [],
        "dense_best": [],
    }
    for p in prepared:
        ordered = [*sorted(p.shipped, reverse=True), 0.0, 0.0]
        typed = p.features[:, column["typed"]] > 0
        coverage = p.features[:, column["corpus_keyword"]]
        typed_question = bool(asks.asked_kinds(p.item.question))
        signals["answerability"].append(p.answerability)
        signals["match"].append(p.match)
        signals["best_score"].append(ordered[0])
        signals["margin"].append(ordered[0] - ordered[1])
        signals["corpus_coverage_typed"].append(
            float(coverage[typed].max())
            if typed.any()
            else 0.0
            if typed_question
            else float(coverage.max(initial=0))
        )
        signals["dense_best"].append(float(p.features[:, column["dense"]].max(initial=0)))
    answerable = np.asarray([p.item.answerable for p in prepared])
    groups = sorted({p.group for p in prepared})
    fold = np.asarray([groups.index(p.group) % 5 for p in prepared])
    report: dict[str, object] = {}
    for name, values in signals.items():
        score = np.asarray(values)
        report[name] = {
            "auc": round(roc_auc(score[answerable], score[~answerable]), 4),
            "in_sample": _thresholded(score, answerable, np.ones(len(score), bool)),
            "five_fold_by_document": _cross_validated(score, answerable, fold),
        }
    unknown = np.asarray(
        [bool(app.retriever().unknown_words(named_words(p.item.question))) for p in prepared]
    )
    report["unknown_names_declined"] = {
        "unanswerable": [
            p.item.id for p, u in zip(prepared, unknown, strict=True) if u and not p.item.answerable
        ],
        "answerable": [p.item.id for p, u in zip(prepared, unknown, strict=True) if u and p.item.answerable],
    }
    # The gates with the shipped settings, before any model reads: no tuning here.
    settings = app.settings
    declined = unknown | (np.asarray(signals["match"]) < settings.relevance_floor)
    declined |= np.asarray(signals["answerability"]) < settings.evidence_floor
    report["shipped_gates"] = {
        "relevance_floor": settings.relevance_floor,
        "evidence_floor": settings.evidence_floor,
        "abstention": round(float(declined[~answerable].mean()), 4),
        "false_abstention": round(float(declined[answerable].mean()), 4),
    }
    return report


def _threshold(
    score: Matrix, answerable: npt.NDArray[np.bool_], target: float = MAX_FALSE_ABSTENTION
) -> float:
    """The highest threshold (abstain below it) that abstains on at most `target` of the answerable."""
    ordered = np.sort(score[answerable])
    return float(ordered[int(target * len(ordered))])


def _thresholded(
    score: Matrix, answerable: npt.NDArray[np.bool_], train: npt.NDArray[np.bool_]
) -> dict[str, float]:
    threshold = _threshold(score[train], answerable[train])
    return {
        "threshold": round(threshold, 4),
        "abstention": round(float((score[~answerable] < threshold).mean()), 4),
        "false_abstention": round(float((score[answerable] < threshold).mean()), 4),
    }


def _cross_validated(
    score: Matrix, answerable: npt.NDArray[np.bool_], fold: npt.NDArray[np.int_]
) -> dict[str, object]:
    curve = []
    for target in CURVE:
        abstained = np.zeros(len(score), bool)
        for k in range(5):
            threshold = _threshold(score[fold != k], answerable[fold != k], target)
            abstained[fold == k] = score[fold == k] < threshold
        curve.append(
            {
                "target": target,
                "abstention": round(float(abstained[~answerable].mean()), 4),
                "false_abstention": round(float(abstained[answerable].mean()), 4),
            }
        )
    at_target = next(point for point in curve if point["target"] == MAX_FALSE_ABSTENTION)
    return {
        "abstention": at_target["abstention"],
        "false_abstention": at_target["false_abstention"],
        "curve": curve,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True, help="data directory to ingest into and reuse")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument(
        "--out", type=Path, default=None, help="result file (default: under benchmarks/results/)"
    )
    args = parser.parse_args()
    app = create_app(Settings(home=args.home))
    app.ingest([args.dataset / CORPUS_FOLDER])
    prepared = prepare(app, load_doc_questions(args.dataset), args.top_k)
    counted: dict[str, int] = {}

    def count(text: str) -> int:
        if text not in counted:
            counted[text] = app.generator.count_tokens(text)
        return counted[text]

    report = {
        "dataset": str(args.dataset),
        "top_k": args.top_k,
        "questions": len(prepared),
        "selection": selection_report(prepared, count),
        "abstention": abstention_report(prepared, app),
    }
    app.close()
    out = args.out or RESULTS / f"evidence_model-{args.dataset.name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
