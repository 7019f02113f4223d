"""How the sentence reader chooses evidence and decides to decline, against today's blend, with
every chosen weight and threshold cross-validated by document.

For a document question set (ingested once into `--home`), every question's top-k chunks are
split and scored as the answer engine does (`evidence_model.prepare`), and every sentence is read
by the reader(s) given. Reported, in sample and cross-validated by document side by side:

- selection (answerable questions): passage@1, the answer in the quoted passage, for the shipped
  blend, the reader alone, and the blend plus the reader at a weight chosen per fold; and the
  same with the blend's hand rules (asked-kind bonus, agreement, restating and question factors)
  left out, which says whether those rules still earn their place beside the reader;
- declining: the reader's best probability and today's answerability as signals, with the
  threshold chosen per fold for at most 10% false declines; the share of unanswerable questions
  declined, of answerable ones declined, and, where the set says (`plausible`), of unanswerable
  ones whose quoted passage holds the distractor. Also a logistic model over every per-question
  signal (`QUESTION_SIGNALS`), fitted on the training folds only.

`--save-signals FILE` writes each question's signals as JSON lines, so a model can be fitted over
several sets at once (as the retired `benchmarks/decline_model.py` did: docs/benchmarks.md,
"Studies retired").

`--read-top N` has the reader read only the blend's best N sentences of each question (the engine
reads every one).

A set whose reader was trained on some of its documents takes `--reader-for GROUP=FOLDER`, so each
document is read by a reader that never saw it (the cross-validated reader figure).

    python benchmarks/reader_blend.py ../shared/data/docqa-dev --home /tmp/docqa-home
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
from evidence_model import FEATURES, Prepared, prepare, selection

from footnote.answer import asks, evidence, sentence_spans, terms
from footnote.application import create_app
from footnote.config import Settings
from footnote.evaluation.docqa import CORPUS_FOLDER, contains_answer, load_doc_questions
from footnote.models.sentence_reader import (
    NO_ANSWER_CANDIDATE,
    OnnxSentenceReader,
    ReaderFiles,
    bundled_reader_files,
)

RESULTS = Path(__file__).parent / "results"
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
MAX_FALSE_DECLINES = 0.10
FOLDS = 5


def core_blend(p: Prepared) -> np.ndarray:
    """The blend's signals without its hand rules: keyword coverage, dense cosine, chunk rank."""
    column = {name: k for k, name in enumerate(FEATURES)}
    f = p.features
    return (
        evidence.KEYWORD_WEIGHT * f[:, column["keyword"]]
        + evidence.DENSE_WEIGHT * f[:, column["dense"]]
        + evidence.RANK_WEIGHT * f[:, column["rank"]]
    )


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -30, 30)))


def folds_by_group(prepared: Sequence[Prepared], folds: int, seed: int = 7) -> list[list[int]]:
    groups = sorted({p.group for p in prepared})
    random.Random(seed).shuffle(groups)
    fold_of = {g: i % folds for i, g in enumerate(groups)}
    return [[i for i, p in enumerate(prepared) if fold_of[p.group] == k] for k in range(folds)]


def selection_rows(
    prepared: Sequence[Prepared], base: Callable[[Prepared], np.ndarray], read: list[np.ndarray], count
) -> dict[str, object]:
    """passage@1 of base + w * reader probability: for each w in sample, and cross-validated."""
    per_weight = {
        w: selection(prepared, lambda i, w=w: base(prepared[i]) + w * sigmoid(read[i]), count)[:, 0]
        for w in WEIGHTS
    }
    answerable = [i for i, p in enumerate(prepared) if p.item.answerable]
    position = {i: k for k, i in enumerate(answerable)}
    chosen, held = [], np.zeros(len(answerable))
    for fold in folds_by_group(prepared, FOLDS):
        test = [position[i] for i in fold if i in position]
        train = [k for k in range(len(answerable)) if k not in set(test)]
        best = max(WEIGHTS, key=lambda w: (per_weight[w][train].mean(), -w))
        chosen.append(best)
        held[test] = per_weight[best][test]
    best_all = max(WEIGHTS, key=lambda w: (per_weight[w].mean(), -w))
    return {
        "by_weight": {str(w): round(float(v.mean()), 4) for w, v in per_weight.items()},
        "in_sample": {"weight": best_all, "passage_at_1": round(float(per_weight[best_all].mean()), 4)},
        "cross_validated": {"weights": chosen, "passage_at_1": round(float(held.mean()), 4)},
    }


def decline_rows(
    prepared: Sequence[Prepared], signals: dict[str, np.ndarray], learned: np.ndarray | None = None
) -> dict[str, object]:
    """Per signal: threshold chosen per fold for at most 10% false declines, and what it gives.
    `learned` (questions x signals) adds a logistic model fitted on each fold's training part."""
    answerable = np.array([p.item.answerable for p in prepared])
    report: dict[str, object] = {}
    if learned is not None:
        signals = {**signals, "learned": cross_fitted(prepared, learned, answerable)}
    for name, values in signals.items():
        declined = np.zeros(len(prepared), dtype=bool)
        thresholds = []
        for fold in folds_by_group(prepared, FOLDS):
            train = np.array([i for i in range(len(prepared)) if i not in set(fold)])
            threshold = decline_threshold(values[train], answerable[train])
            thresholds.append(round(threshold, 4))
            declined[fold] = values[fold] < threshold
        in_sample = decline_threshold(values, answerable)
        report[name] = {
            "auc": round(auc(values, answerable), 4),
            "in_sample": {
                "threshold": round(in_sample, 4),
                **decline_figures(values < in_sample, answerable),
            },
            "cross_validated": {"thresholds": thresholds, **decline_figures(declined, answerable)},
        }
    return report


def cross_fitted(prepared: Sequence[Prepared], rows: np.ndarray, answerable: np.ndarray) -> np.ndarray:
    """Each question's probability of being answerable from a logistic model fitted on the other
    folds' questions. (The threshold is then chosen on the same held-out values of the other
    folds: a slight optimism, reported as such.)"""
    values = np.zeros(len(prepared))
    for fold in folds_by_group(prepared, FOLDS):
        train = np.array([i for i in range(len(prepared)) if i not in set(fold)])
        model = fit_logistic(rows[train], answerable[train])
        values[fold] = model(rows[fold])
    return values


def fit_logistic(
    rows: np.ndarray, labels: np.ndarray, l2: float = 1.0, steps: int = 50
) -> Callable[[np.ndarray], np.ndarray]:
    """A logistic regression on standardised `rows` (Newton's method, L2 penalty `l2`)."""
    mean, scale = rows.mean(axis=0), rows.std(axis=0) + 1e-9
    x = np.hstack([(rows - mean) / scale, np.ones((len(rows), 1))])
    y = labels.astype(float)
    w = np.zeros(x.shape[1])
    penalty = np.eye(x.shape[1]) * l2
    penalty[-1, -1] = 0.0
    for _ in range(steps):
        p = sigmoid(x @ w)
        gradient = x.T @ (p - y) + penalty @ w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + penalty
        w -= np.linalg.solve(hessian, gradient)
    return lambda new: sigmoid(np.hstack([(new - mean) / scale, np.ones((len(new), 1))]) @ w)


def question_signals(p: Prepared, logits: np.ndarray) -> dict[str, float]:
    """What one question's sources say about whether they answer it, as numbers."""
    read = np.sort(logits[logits > -30.0])[::-1]
    shipped = np.sort(np.asarray(p.shipped))[::-1]
    best = int(np.argmax(logits)) if len(logits) else -1
    asked = terms.content_terms(p.item.question)
    total = sum(asked.values()) or 1.0
    by_position = {(s.source, s.position): s for s in p.spans}
    own = (
        sentence_spans.covered_weight(
            asked, p.spans[best], sentence_spans.lead_in(p.spans[best], by_position)
        )
        / total
        if best >= 0
        else 0.0
    )
    shown = set().union(*(s.terms for s in p.spans)) if p.spans else set()
    return {
        "reader_best": float(read[0]) if len(read) else -30.0,
        "reader_gap": float(read[0] - read[1]) if len(read) > 1 else 0.0,
        "reader_top3": float(sigmoid(read[:3]).mean()) if len(read) else 0.0,
        "answerability": p.answerability,
        "plain_coverage": coverage_without(p, default_rule=True, kinds=True),
        "reader_sentence_coverage": own,
        "terms_in_no_source": sum(w for t, w in asked.items() if t not in shown) / total,
        "match": p.match,
        "blend_best": float(shipped[0]) if len(shipped) else 0.0,
        "blend_gap": float(shipped[0] - shipped[1]) if len(shipped) > 1 else 0.0,
        "question_terms": float(len(asked)),
    }


def decline_threshold(values: np.ndarray, answerable: np.ndarray) -> float:
    """The highest threshold that declines at most MAX_FALSE_DECLINES of the answerable questions."""
    positives = np.sort(values[answerable])
    if not len(positives):
        return 0.0
    allowed = math.floor(MAX_FALSE_DECLINES * len(positives))
    return float(positives[allowed]) if allowed < len(positives) else float(positives[-1])


def decline_figures(declined: np.ndarray, answerable: np.ndarray) -> dict[str, float]:
    return {
        "declines": round(float(declined[~answerable].mean()), 4) if (~answerable).any() else 0.0,
        "false_declines": round(float(declined[answerable].mean()), 4),
    }


def auc(values: np.ndarray, positive: np.ndarray) -> float:
    pos, neg = values[positive], values[~positive]
    if not len(pos) or not len(neg):
        return float("nan")
    return float(
        ((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum())
        / (len(pos) * len(neg))
    )


def distractor_rate(
    prepared: Sequence[Prepared], scores: list[np.ndarray], declined: np.ndarray, count
) -> float:
    """Of the unanswerable questions with a distractor, the share answered with a passage holding it."""
    stated = []
    for index, p in enumerate(prepared):
        plausible = getattr(p.item, "plausible", None) or []
        if p.item.answerable or not plausible:
            continue
        if declined[index]:
            stated.append(False)
            continue
        passages = evidence.select_passages(p.hits, p.spans, list(scores[index]), count)
        stated.append(bool(passages) and contains_answer(passages[0].text(p.hits), plausible))
    return round(float(np.mean(stated)), 4) if stated else float("nan")


def coverage_without(p: Prepared, default_rule: bool = False, kinds: bool = False) -> float:
    """Today's answerability with its default rule and/or its asked-kind filter left out."""
    return max(coverages_without(p, default_rule, kinds), default=0.0)


def coverages_without(p: Prepared, default_rule: bool = False, kinds: bool = False) -> list[float]:
    """Each sentence's coverage of the question, with the default rule and/or the asked-kind
    filter left out."""
    saved = asks._ASKS_DEFAULT, asks.asked_kinds
    try:
        if default_rule:
            asks._ASKS_DEFAULT = re.compile(r"(?!x)x")
        if kinds:
            asks.asked_kinds = lambda question: frozenset()
        return asks.coverages(p.item.question, p.spans, p.texts)
    finally:
        asks._ASKS_DEFAULT, asks.asked_kinds = saved


def joint(read: Sequence[np.ndarray], covered: Sequence[Sequence[float]]) -> np.ndarray:
    """Per question, the best of its sentences' reader probability times their own coverage: one
    sentence must both read as an answer and cover the question."""
    return np.array(
        [
            float((sigmoid(r) * np.asarray(c)).max()) if len(r) else 0.0
            for r, c in zip(read, covered, strict=True)
        ]
    )


def best_of(scores: Sequence[float], count: int) -> list[int]:
    """The indices of the `count` best `scores`, in their original order."""
    return sorted(sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:count])


def readers_for(args: argparse.Namespace) -> Callable[[str], OnnxSentenceReader]:
    default = OnnxSentenceReader(ReaderFiles(Path(args.reader)) if args.reader else bundled_reader_files())
    by_group = {}
    for pair in args.reader_for or []:
        group, _, folder = pair.partition("=")
        by_group[group] = OnnxSentenceReader(ReaderFiles(Path(folder)))
    return lambda group: by_group.get(group, default)


def save_result(name: str, tag: str, report: dict) -> Path:
    """Write `report` as benchmarks/results/NAME[-TAG]-STAMP.json and say where."""
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = RESULTS / f"{name}{'-' + tag if tag else ''}-{stamp}.json"
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"saved {path}")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--reader", help="reader folder (default: the bundled one)")
    parser.add_argument(
        "--reader-for", action="append", help="GROUP=FOLDER: read this document with another reader"
    )
    parser.add_argument(
        "--per-group", type=int, default=0, help="at most this many questions per document (0: all)"
    )
    parser.add_argument(
        "--read-top", type=int, default=0, help="the reader reads only the blend's best N sentences (0: all)"
    )
    parser.add_argument(
        "--no-answer",
        action="store_true",
        help="the reader was trained with the no-answer candidate: score it too and decline on it",
    )
    parser.add_argument("--tag", default="")
    parser.add_argument("--save-signals", type=Path, help="write each question's signals here (JSON lines)")
    args = parser.parse_args()

    settings = Settings(home=args.home)
    app = create_app(settings)
    if not app.catalog.chunk_id_list():
        app.ingest([args.dataset / CORPUS_FOLDER])
    items = load_doc_questions(args.dataset)
    if args.per_group:
        rng, kept, seen = random.Random(3), [], {}
        for item in rng.sample(items, len(items)):
            if seen.get(item.source, 0) < args.per_group:
                kept.append(item)
                seen[item.source] = seen.get(item.source, 0) + 1
        items = sorted(kept, key=lambda i: i.id)
    started = time.perf_counter()
    prepared = prepare(app, items, args.top_k)
    reader_of = readers_for(args)
    # read: the ranking logits; weighed: those weighed against the no-answer candidate's (the
    # answer head's, for a reader with one; else the same).
    read, weighed, read_seconds, no_answer = [], [], [], []
    for p in prepared:
        candidates = evidence.reader_candidates(p.hits, p.spans, p.texts)
        shortlist = best_of(p.shipped, args.read_top or len(candidates))
        began = time.perf_counter()
        extra = [NO_ANSWER_CANDIDATE] if args.no_answer else []
        reading = reader_of(p.group).read(p.item.question, [candidates[i] for i in shortlist] + extra)
        read_seconds.append(time.perf_counter() - began)
        scores, answered = reading.scores, reading.answered or reading.scores
        if args.no_answer:
            no_answer.append(answered[-1])
            scores, answered = scores[:-1], answered[:-1]
        logits = np.full(len(candidates), -30.0)
        logits[shortlist] = scores
        read.append(logits)
        logits = np.full(len(candidates), -30.0)
        logits[shortlist] = answered
        weighed.append(logits)
    count = app.generator.count_tokens
    report: dict[str, object] = {
        "dataset": str(args.dataset),
        "questions": len(prepared),
        "answerable": sum(p.item.answerable for p in prepared),
        "documents": len({p.group for p in prepared}),
        "prepare_seconds": round(time.perf_counter() - started, 1),
        "reader_seconds_p50": round(float(np.median(read_seconds)), 4),
        "reader_seconds_p90": round(float(np.percentile(read_seconds, 90)), 4),
        "sentences_p50": float(np.median([len(p.spans) for p in prepared])),
        "read_top": args.read_top or "all",
        "reader": args.reader or "bundled",
    }
    report["selection"] = {
        "shipped_blend": round(
            float(selection(prepared, lambda i: prepared[i].shipped, count)[:, 0].mean()), 4
        ),
        "reader_alone": round(float(selection(prepared, lambda i: read[i], count)[:, 0].mean()), 4),
        "blend_plus_reader": selection_rows(prepared, lambda p: np.asarray(p.shipped), read, count),
        "rules_off_plus_reader": selection_rows(prepared, core_blend, read, count),
    }
    best = np.array([sigmoid(r).max() if len(r) else 0.0 for r in read])
    coverage = np.array([p.answerability for p in prepared])
    without_default = np.array([coverage_without(p, default_rule=True) for p in prepared])
    plain = np.array([coverage_without(p, default_rule=True, kinds=True) for p in prepared])
    signals = {
        "reader_best": best,
        "answerability": coverage,
        "reader_best_times_answerability": best * coverage,
        "reader_best_times_answerability_without_default_rule": best * without_default,
        "reader_best_times_plain_coverage": best * plain,
        "per_sentence_reader_times_coverage": joint(read, [coverages_without(p) for p in prepared]),
        "per_sentence_reader_times_plain_coverage": joint(
            read, [coverages_without(p, default_rule=True, kinds=True) for p in prepared]
        ),
    }
    if args.no_answer:
        margin = np.array(
            [float(r.max()) - n if len(r) else -30.0 for r, n in zip(weighed, no_answer, strict=True)]
        )
        signals["reader_best_over_no_answer"] = margin
        signals["reader_best_over_no_answer_times_answerability"] = sigmoid(margin) * coverage
        signals["answered_share_of_softmax"] = np.array(
            [1.0 - 1.0 / (1.0 + float(np.exp(r - n).sum())) for r, n in zip(weighed, no_answer, strict=True)]
        )
        # What the engine weighs against its reader floor (`evidence.answered_probability` × coverage).
        signals["answered_share_times_answerability"] = signals["answered_share_of_softmax"] * coverage
    measured = [question_signals(p, r) for p, r in zip(prepared, read, strict=True)]
    learned = np.array([list(m.values()) for m in measured])
    report["declining"] = decline_rows(prepared, signals, learned)
    if args.save_signals:
        with args.save_signals.open("w", encoding="utf-8") as out:
            for index, (p, m) in enumerate(zip(prepared, measured, strict=True)):
                row = {"id": p.item.id, "group": p.group, "answerable": p.item.answerable, **m}
                row.update({name: float(values[index]) for name, values in signals.items()})
                row["plausible"] = list(getattr(p.item, "plausible", None) or [])
                out.write(json.dumps(row) + "\n")
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    name = f"reader_blend-{args.dataset.name}{'-' + args.tag if args.tag else ''}-{stamp}.json"
    (RESULTS / name).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    print(f"saved {RESULTS / name}")


if __name__ == "__main__":
    main()
