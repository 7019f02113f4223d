"""The check of retold sentences across languages: how often it supports a Chinese sentence
against the English passage it was made from, and how often against a passage it was not.

For each docqa-dev question with an evidence sentence, put into Chinese by the model that answers
Chinese, that model puts the evidence sentence into Chinese (`footnote.answer.retell`, as a
carried answer's first quote is retold). Each Chinese text is checked against its own evidence
(should be supported), against another question's evidence from the same document (should not:
same words, other facts) and against one from another document (should not), each time as the
only source, by the round trip that ships: put back into English by the same model and checked by
the English check (word overlap and MiniLM), its numbers and Latin-letter words in the passage or
the question. Questions the model left in English are left out of the shares (a Chinese speaker
asks in Chinese); each share is given overall and for each half of the documents (the round trip
has nothing chosen on them).

    python benchmarks/retell_check.py ../shared/data/docqa-dev --home /tmp/docqa-home
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
from reader_blend import save_result

from footnote.answer.citations import AnswerSentence, CitationChecker
from footnote.answer.retell import Retelling, in_language, literals_in
from footnote.application import isolated_app
from footnote.core.cjk import has_cjk
from footnote.core.hits import SearchHit
from footnote.evaluation.answers import UNMEASURED
from footnote.evaluation.docqa import load_doc_questions
from footnote.models.base import GenerationParams, Generator, Message

KINDS = ("own", "same", "other")
SEED = 0


def in_chinese(generator: Generator, question: str) -> str:
    """`question` put into Chinese by `generator`, as a Chinese speaker would ask it."""
    chat = [
        Message("system", "把用户的问题翻译成简体中文。命令、选项、文件名和数字照原文保留。只回复译文。"),
        Message("user", question),
    ]
    return generator.generate(chat, GenerationParams(max_tokens=96, temperature=0.0, stop=("\n",))).strip()


def as_source(text: str, source: str) -> SearchHit:
    return SearchHit(1, 1, source, source, text, 0, len(text), (), None)


def written(folder: Path, home: Path) -> list[dict[str, Any]]:
    """Each question's Chinese sentences, written from its evidence, each checked by the round
    trip against its own evidence, a same-document one and another document's."""
    items = [item for item in load_doc_questions(folder) if item.evidence]
    rng = random.Random(SEED)
    rows = []
    with isolated_app("footnote-retell-", home, dict(UNMEASURED)) as app:
        engine = app.answer_engine()
        generator = engine.languages.generator_for("zh") if engine.languages else None
        if generator is None:
            raise SystemExit("needs the model that answers Chinese (FOOTNOTE_LANGUAGE_LLM)")
        for item in items:
            same = [o.evidence for o in items if o.source == item.source and o.evidence != item.evidence]
            other = [o.evidence for o in items if o.source != item.source]
            quotes = {"own": item.evidence, "same": rng.choice(same) if same else None}
            quotes["other"] = rng.choice(other)
            asked = in_chinese(generator, item.question)
            retelling = Retelling(asked, "zh", generator)
            own = AnswerSentence(item.evidence, [], True, [], False)
            started = time.perf_counter()
            reply = retelling.sentences(
                [own],
                CitationChecker(
                    [as_source(item.evidence, item.source)], app.embedder, question=item.question
                ),
            )
            seconds = time.perf_counter() - started
            row: dict[str, Any] = {
                "id": item.id,
                "source": item.source,
                "asked": asked,
                "seconds": round(seconds, 3),
            }
            row["sentences"] = []
            for sentence in reply:
                english = retelling.in_english(sentence.text) if in_language(sentence.text, "zh") else ""
                checks: dict[str, Any] = {"text": sentence.text, "english": english}
                for kind, quote in quotes.items():
                    if quote is None:
                        continue
                    checker = CitationChecker([as_source(quote, kind)], app.embedder, question=item.question)
                    back = checker.check(english) if english else None
                    checks[kind] = {
                        "round_trip": bool(
                            back and back.supported and literals_in(sentence.text, f"{quote} {asked}")
                        ),
                        "english_score": round(back.score, 4) if back else 0.0,
                    }
                row["sentences"].append(checks)
            print(item.id, f"{seconds:.2f}s", [s["text"][:30] for s in row["sentences"]], flush=True)
            rows.append(row)
    return rows


def supported_shares(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The share of sentences the round trip supports against each kind of passage."""
    shares = {}
    for kind in KINDS:
        held = [s[kind]["round_trip"] for row in rows for s in row["sentences"] if kind in s]
        shares[kind] = round(float(np.mean(held)), 4) if held else 0.0
    return shares


def run(folder: Path, home: Path) -> dict[str, Any]:
    every = written(folder, home)
    # A question the model left in English is not one a Chinese speaker asks: measured apart.
    rows = [row for row in every if has_cjk(row["asked"])]
    sources = sorted({row["source"] for row in rows})
    halves = [set(sources[0::2]), set(sources[1::2])]
    report = {
        "dataset": str(folder),
        "questions": len(rows),
        "left_in_english": len(every) - len(rows),
        "sentences": sum(len(r["sentences"]) for r in rows),
        "questions_with_a_supported_sentence": round(
            float(np.mean([any(s["own"]["round_trip"] for s in r["sentences"]) for r in rows])), 4
        ),
        "seconds_p50": round(float(np.median([r["seconds"] for r in rows])), 3),
        "round_trip": supported_shares(rows),
        "by_half": [supported_shares([r for r in rows if r["source"] in half]) for half in halves],
        "rows": every,
    }
    print("round trip", report["round_trip"], "by half", report["by_half"])
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--tag", default="docqa-dev-translated")
    args = parser.parse_args()
    save_result("retell_check", args.tag, run(args.dataset, args.home))


if __name__ == "__main__":
    main()
