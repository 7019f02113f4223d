"""Broad answers side by side with single-fact answers, in one run on one machine.

Every question of a document set is asked end to end twice on the same index: with broad answers
on (a question the shape model takes as needing several passages is answered with them, quoted)
and off (every question gets the single-fact answer), and both reports are saved in one file:
key points found and complete answers (broad-dev), correct and quoted answers and declines
(docqa-dev, squad2-dev), unsupported sentences shown, answer length in words and latency.

    python benchmarks/broad_answers.py ../shared/data/docqa-dev \
        --questions ../shared/data/broad-dev/questions.jsonl --home /tmp/docqa-home --tag broad-dev
    python benchmarks/broad_answers.py ../shared/data/docqa-dev --home /tmp/docqa-home --tag docqa-dev
    python benchmarks/broad_answers.py ../shared/data/squad2-dev --per-source 20 --home /tmp/squad-home

With `--folds DATA` (the shared data folder the shape model is trained from) broad answers are
also measured cross-validated: each question is answered with a shape model fitted without its
document's questions (`footnote.training.shape`'s folds by document, at the shipped threshold).

With `--margins 0,3,4,5` the broad questions (summaries, how-tos, lists, comparisons) are also
answered at each `point_margin` (0: always `point_words`), and the margin is chosen
cross-validated by document: for each of 5 folds of the documents (4 shuffles), the margin that
completes most answers of the other folds' documents with every kind's median answer at most
`MEDIAN_WORDS` words answers the fold's questions.

    python benchmarks/broad_answers.py ../shared/data/docqa-dev --questions \
        ../shared/data/broad-dev/questions.jsonl --home /tmp/docqa-home --margins 0,3,3.5,4,4.5,5
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from reader_blend import save_result

from footnote.answer.shape import bundled_shape
from footnote.application import isolated_app
from footnote.config import Settings
from footnote.evaluation.answers import UNMEASURED
from footnote.evaluation.docqa import (
    CORPUS_FOLDER,
    DocOutcome,
    DocQuestion,
    doc_report,
    evaluate_doc_questions,
    load_doc_questions,
)
from footnote.models.e5 import open_e5
from footnote.training.shape import fold_fits, folds, shape_examples

MODES = {"points": True, "single-fact": False}
MEDIAN_WORDS = 150  # broad-dev's readability bound: the median answer's words, each kind
BROAD_KINDS = ("summary", "howto", "list", "compare")  # the kinds the sentence reader's points answer
FOLDS, SHUFFLES = 5, 4
SHOWN = (
    "questions",
    "complete",
    "key_point_recall",
    "correct_cited",
    "abstention",
    "false_abstention",
    "unsupported_shown",
    "words_p50",
    "words_max",
    "first_sentence_p50",
    "latency_p50",
    "latency_p90",
)


def answered(
    folder: Path, home: Path, items: list[DocQuestion], settings: dict[str, Any]
) -> list[DocOutcome]:
    with isolated_app("footnote-broad-", home, {**UNMEASURED, **settings}) as app:
        app.ingest([folder / CORPUS_FOLDER])
        return evaluate_doc_questions(app.answers, items)


def fold_shapes(data: Path, into: Path) -> tuple[dict[str, int], list[Path]]:
    """Each document's fold and, per fold, a shape model fitted without that fold's documents."""
    examples = shape_examples(data)
    embedder = open_e5()
    vectors = np.array([embedder.embed_query(e.question) for e in examples])
    shipped = bundled_shape()
    paths = []
    for number, (weights, bias) in enumerate(fold_fits(examples, vectors)):
        path = into / f"shape-fold-{number}.json"
        model = {
            "embedder": shipped.embedder,
            "threshold": shipped.threshold,
            "bias": bias,
            "weights": weights,
        }
        path.write_text(json.dumps(model), encoding="utf-8")
        paths.append(path)
    return folds(examples), paths


def cross_validated(folder: Path, home: Path, items: list[DocQuestion], data: Path) -> list[DocOutcome]:
    """Every item answered with the shape model fitted without its document's fold."""
    with tempfile.TemporaryDirectory() as into:
        fold, paths = fold_shapes(data, Path(into))
        by_id: dict[str, DocOutcome] = {}
        for number, path in enumerate(paths):
            chosen = [
                item
                for item in items
                if fold.get(item.sources[0] if item.sources else f"none-{item.id}") == number
            ]
            for outcome in answered(folder, home, chosen, {"answer_shape": str(path)}):
                by_id[outcome.id] = outcome
    return [by_id[item.id] for item in items if item.id in by_id]


def margin_sweep(folder: Path, home: Path, items: list[DocQuestion], margins: list[float]) -> dict[str, Any]:
    """The broad questions answered at each point margin, and the margin chosen across folds of
    their documents (see the module's docstring)."""
    broad = [item for item in items if item.kind in BROAD_KINDS]
    runs = {margin: answered(folder, home, broad, {"point_margin": margin}) for margin in margins}
    document = {item.id: item.sources[0] for item in broad}
    kinds = sorted({item.kind for item in broad})
    per_margin = {
        str(margin): {
            kind: {
                "complete": sum(o.complete for o in outcomes if o.kind == kind),
                "questions": sum(o.kind == kind for o in outcomes),
                "words_p50": float(np.median([o.words for o in outcomes if o.kind == kind])),
                "words_max": max(o.words for o in outcomes if o.kind == kind),
            }
            for kind in kinds
        }
        for margin, outcomes in runs.items()
    }

    def fold_score(margin: float, held: set[str]) -> tuple[bool, int, float]:
        kept = [o for o in runs[margin] if document[o.id] not in held]
        readable = all(np.median([o.words for o in kept if o.kind == kind]) <= MEDIAN_WORDS for kind in kinds)
        return readable, sum(o.complete for o in kept), -margin

    documents = sorted(set(document.values()))
    shuffles = []
    for seed in range(SHUFFLES):
        order = np.random.RandomState(seed).permutation(len(documents))
        folds_of = [{documents[i] for k, i in enumerate(order) if k % FOLDS == fold} for fold in range(FOLDS)]
        chosen = [max(margins, key=lambda m, held=held: fold_score(m, held)) for held in folds_of]
        complete = {kind: 0 for kind in kinds}
        for margin, held in zip(chosen, folds_of, strict=True):
            for o in runs[margin]:
                if document[o.id] in held:
                    complete[o.kind] += o.complete
        total = sum(complete.values())
        shuffles.append({"seed": seed, "chosen": chosen, "complete": complete, "total": total})
        print(f"margin by folds, shuffle {seed}: chosen {chosen}, complete {complete}")
    for margin, row in per_margin.items():
        print(f"margin {margin}:", {kind: (v["complete"], v["words_p50"]) for kind, v in row.items()})
    return {"margins": per_margin, "cross_validated": shuffles}


def run(
    folder: Path,
    home: Path,
    questions: Path | None,
    per_source: int | None,
    data: Path | None,
    margins: list[float] | None = None,
) -> dict[str, Any]:
    items = load_doc_questions(folder, per_source=per_source, questions=questions)
    runs = {mode: answered(folder, home, items, {"broad_answers": broad}) for mode, broad in MODES.items()}
    if data is not None:
        runs["points-cross-validated"] = cross_validated(folder, home, items, data)
    reports = {}
    for mode, outcomes in runs.items():
        reports[mode] = doc_report(folder, 0, Settings(home=home, **UNMEASURED), outcomes)
        print(mode, f"({len(outcomes)} questions)")
        for kind, row in reports[mode]["metrics"].items():
            print(f"  {kind:13}", {key: row[key] for key in SHOWN if row.get(key) is not None})
    sweep = margin_sweep(folder, home, items, margins) if margins else None
    return {
        "dataset": str(folder),
        "questions": str(questions or ""),
        "per_source": per_source,
        **reports,
        **({"point_margins": sweep} if sweep else {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True, help="the index, kept for the next run")
    parser.add_argument("--questions", type=Path, help="another questions file about the same documents")
    parser.add_argument("--per-source", type=int)
    parser.add_argument("--folds", type=Path, help="the shared data folder: also cross-validate the shape")
    parser.add_argument("--margins", help="point margins to sweep, comma-separated (e.g. 0,3,4,5)")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    margins = [float(m) for m in args.margins.split(",")] if args.margins else None
    report = run(args.dataset, args.home, args.questions, args.per_source, args.folds, margins)
    save_result("broad_answers", args.tag or args.dataset.name, report)


if __name__ == "__main__":
    main()
