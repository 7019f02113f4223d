"""Chinese questions over English documents: read by the multilingual embedder in the English
sentence reader's place, against the blend alone, in one run on one index and one machine.

Answerable: broad-dev's `zh_cross` questions (Chinese, their answers in the English docqa-dev
documents). Unanswerable: rgb-zh-dev's Chinese questions (news) over the same documents. The
floor on the embedder's best similarity is chosen to tell them apart (the largest share declined
of the unanswerable less the share declined of the answerable), in sample and by two folds by
document (chosen on one half, measured on the other); then every question is answered end to end
with the chosen floor and with the multilingual reading off, and put into English by the model
that answers Chinese (`carried-into-english`, the default where that model is installed: the
English question is searched, read and answered as any English question), and the zh_cross
questions asked in English (`benchmarks/data/zh-cross-in-english.jsonl`). The embedder reads the
`across_language_sources` first retrieved chunks (10 by default); `--sources 5 10` measures each
number side by side (its own floor chosen for each).

    python benchmarks/across_languages.py ../shared/data --home /tmp/docqa-home
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from broad_answers import answered
from reader_blend import save_result

from footnote.answer.across import across_languages
from footnote.answer.sentence_spans import sentence_spans
from footnote.application import isolated_app
from footnote.config import Settings
from footnote.core.language import detect_language
from footnote.evaluation.answers import UNMEASURED
from footnote.evaluation.docqa import DocQuestion, doc_report, load_doc_questions, points_found

UNRELATED = 60  # rgb-zh-dev questions asked, a fixed sample
# The zh_cross questions as an English speaker would ask them (written by hand, word for word).
IN_ENGLISH = Path(__file__).parent / "data" / "zh-cross-in-english.jsonl"
SEED = 0
SHOWN = (
    "complete",
    "key_point_recall",
    "abstention",
    "false_abstention",
    "words_p50",
    "first_sentence_p50",
    "latency_p50",
)


def items(data: Path) -> list[DocQuestion]:
    broad = load_doc_questions(data / "docqa-dev", questions=data / "broad-dev" / "questions.jsonl")
    asked = [item for item in broad if item.kind == "zh_cross"]
    queries = [json.loads(line) for line in (data / "rgb-zh-dev" / "queries.jsonl").read_text().splitlines()]
    for query in random.Random(SEED).sample(queries, UNRELATED):
        asked.append(DocQuestion(f"rgb-zh-{query['_id']}", query["text"], (), None, None, "rgb_zh_unrelated"))
    return asked


def in_english(asked: list[DocQuestion]) -> list[DocQuestion]:
    """The zh_cross questions asked in English, as the kind `zh_cross_in_english`."""
    english = {row["id"]: row["question"] for row in map(json.loads, IN_ENGLISH.read_text().splitlines())}
    return [
        replace(item, question=english[item.id], kind="zh_cross_in_english")
        for item in asked
        if item.id in english
    ]


def similarities(
    folder: Path, home: Path, asked: list[DocQuestion], sources: int
) -> tuple[dict[str, float], float]:
    """Each question's best similarity to a sentence of its retrieved sources, `sources` of them
    retrieved for a question read across languages; and the share of the answerable questions
    whose retrieved sources hold enough key points to be complete, whatever is quoted."""
    with isolated_app("footnote-across-", home, {**UNMEASURED, "across_language_sources": sources}) as app:
        app.ingest([folder])
        engine, embedder = app.answer_engine(), app.models.language_embedder
        assert embedder is not None, "the multilingual embedder is needed here"
        best = {}
        held = []
        for item in asked:
            answering = engine.for_language(detect_language(item.question))
            hits = answering.kept(engine.retriever.search(item.question, answering.retrieval()))
            spans = sentence_spans(hits)
            texts = [hits[s.source].text[s.start : s.end] for s in spans]
            best[item.id] = across_languages(embedder, item.question, hits, spans, texts)[2] if spans else 0.0
            if item.key_points:
                held.append(points_found(item, "", [hit.text for hit in hits]) >= item.min_points)
    return best, round(float(np.mean(held)), 4) if held else 0.0


def youden(pairs: list[tuple[bool, float]]) -> float:
    """The floor declining the most unanswerable (False) for the fewest answerable (True)."""
    yes = [s for a, s in pairs if a] or [1.0]
    no = [s for a, s in pairs if not a] or [0.0]
    candidates = sorted({round(s, 3) for _, s in pairs})
    return max(candidates, key=lambda f: np.mean([s < f for s in no]) - np.mean([s < f for s in yes]))


def declines(pairs: list[tuple[bool, float]], floor: float) -> dict[str, float]:
    yes = [s for a, s in pairs if a]
    no = [s for a, s in pairs if not a]
    return {
        "declined_unanswerable": round(float(np.mean([s < floor for s in no])), 4),
        "declined_answerable": round(float(np.mean([s < floor for s in yes])), 4),
    }


def chosen(asked: list[DocQuestion], best: dict[str, float]) -> dict[str, Any]:
    """The floor in sample, and by two folds by document."""
    pairs = {item.id: (item.answerable, best[item.id]) for item in asked}
    groups = sorted({item.source or item.id for item in asked})
    random.Random(SEED).shuffle(groups)
    half = set(groups[::2])
    folds = [
        [i.id for i in asked if (i.source or i.id) in half],
        [i.id for i in asked if (i.source or i.id) not in half],
    ]
    held: list[tuple[bool, float, float]] = []
    for fit, score in ((folds[0], folds[1]), (folds[1], folds[0])):
        floor = youden([pairs[i] for i in fit])
        held += [(pairs[i][0], pairs[i][1] < floor, floor) for i in score]
    floor = youden(list(pairs.values()))
    return {
        "floor": floor,
        "in_sample": declines(list(pairs.values()), floor),
        "fold_floors": sorted({f for _, _, f in held}),
        "cross_validated": {
            "declined_unanswerable": round(float(np.mean([d for a, d, _ in held if not a])), 4),
            "declined_answerable": round(float(np.mean([d for a, d, _ in held if a])), 4),
        },
        "similarity": {i: round(s, 4) for i, (_, s) in pairs.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="the shared data folder")
    parser.add_argument("--home", type=Path, required=True, help="the docqa-dev index, kept for the next run")
    parser.add_argument("--sources", type=int, nargs="+", default=[10], help="chunks read across languages")
    args = parser.parse_args()
    folder = args.data / "docqa-dev"
    asked = items(args.data)
    reports: dict[str, Any] = {}
    for sources in args.sources:
        best, held = similarities(folder / "corpus", args.home, asked, sources)
        floors = chosen(asked, best)
        floors["zh_cross_sources_hold_enough_key_points"] = held
        print(
            f"{sources} sources: floor",
            floors["floor"],
            "in sample",
            floors["in_sample"],
            "cross-validated",
            floors["cross_validated"],
            "zh_cross sources hold enough key points",
            held,
        )
        reports[f"floor-{sources}-sources"] = floors
        floor = floors["floor"]
        multilingual = {"across_language_floor": floor, "carry_questions": False}
        modes = {f"multilingual-{sources}-sources": multilingual}
        if sources == args.sources[0]:
            modes["carried-into-english"] = {"across_language_floor": floor, "carry_questions": True}
            modes["blend-alone"] = {"across_language_floor": 0.0, "carry_questions": False}
            modes["asked-in-english"] = {}
        for mode, settings in modes.items():
            questions = in_english(asked) if mode == "asked-in-english" else asked
            outcomes = answered(
                folder, args.home, questions, {**settings, "across_language_sources": sources}
            )
            reports[mode] = doc_report(folder, 0, Settings(home=args.home, **UNMEASURED), outcomes)
            print(mode)
            for kind, row in reports[mode]["metrics"].items():
                print(f"  {kind:17}", {key: row[key] for key in SHOWN if row.get(key) is not None})
    save_result("across_languages", "zh-over-docqa-dev", reports)


if __name__ == "__main__":
    main()
