"""The citation checker alone, on RGB's minimal pairs and on docqa's gold answers.

RGB en_fact gives each question `positive` passages (they state the answer) and
`positive_wrong` ones: the same passages with another answer (`fakeanswer`) in its place.
For every question the checker is given both sets as sources and asked about:

- the gold answer: is it supported, and does any footnote point at a passage stating the
  other answer (the target is at most 5%)?
- the fake answer, checked against the positive passages only: is it marked supported (a
  wrong answer certified; the target is at most 10%)?

Each answer is checked in two shapes: the bare answer ("Tampa, Florida.") and a sentence that
restates the question and gives it ("The answer to 'Super Bowl 2021 location' is Tampa, Florida.").
With `--docqa FOLDER --home DIR` it also checks each docqa gold answer against the question's
retrieved sources: is it supported, and does its footnote quote the evidence's answer?

    python benchmarks/checker_minimal_pairs.py ../shared/data/rgb/en_fact.jsonl \
        --docqa ../shared/data/docqa-dev --home /tmp/docqa-home
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from footnote.answer.citations import CitationChecker
from footnote.application import create_app
from footnote.config import Settings
from footnote.core.hits import SearchHit
from footnote.evaluation.answers import PASSAGE_TITLE
from footnote.evaluation.docqa import CORPUS_FOLDER, contains_answer, load_doc_questions

RESULTS = Path(__file__).parent / "results"


def passages(texts: list[str], first: int) -> list[SearchHit]:
    return [
        SearchHit(first + i, first + i, f"passage-{first + i}", PASSAGE_TITLE, text, 0, len(text))
        for i, text in enumerate(texts)
    ]


def shapes(query: str, answer: str) -> dict[str, str]:
    return {"bare": f"{answer}.", "sentence": f"The answer to '{query}' is {answer}."}


def rgb_pairs(path: Path, embedder: object) -> dict[str, dict[str, float]]:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    records = [r for r in records if r.get("positive_wrong") and r.get("fakeanswer")]
    counts: dict[str, dict[str, int]] = {}
    for record in records:
        gold = record["answer"] if isinstance(record["answer"], str) else str(record["answer"][0])
        right = passages(record["positive"], 1)
        wrong = passages(record["positive_wrong"], 1 + len(right))
        both = CitationChecker([*right, *wrong], embedder, question=record["query"])  # type: ignore[arg-type]
        only_right = CitationChecker(right, embedder, question=record["query"])  # type: ignore[arg-type]
        for shape, sentence in shapes(record["query"], gold).items():
            row = counts.setdefault(shape, {"questions": 0, "gold_supported": 0, "gold_cites_wrong": 0})
            row["questions"] += 1
            checked = both.check(sentence)
            row["gold_supported"] += checked.supported
            row["gold_cites_wrong"] += any(c.number > len(right) for c in checked.citations)
        for shape, sentence in shapes(record["query"], record["fakeanswer"]).items():
            row = counts[shape]
            row["fake_supported"] = row.get("fake_supported", 0) + only_right.check(sentence).supported
    return {
        shape: {
            "questions": row["questions"],
            "gold_supported": row["gold_supported"] / row["questions"],
            "gold_cites_other_answer": row["gold_cites_wrong"] / row["questions"],
            "wrong_answer_supported": row["fake_supported"] / row["questions"],
        }
        for shape, row in counts.items()
    }


def docqa_gold(folder: Path, home: Path) -> dict[str, float]:
    app = create_app(Settings(home=home))
    try:
        app.ingest([folder / CORPUS_FOLDER])
        items = [item for item in load_doc_questions(folder) if item.answerable]
        supported = quoted = 0
        for item in items:
            hits = app.search(item.question, limit=app.settings.top_k)
            checker = CitationChecker(hits, app.embedder, question=item.question)
            checked = checker.check(f"{item.answers[0]}.")
            supported += checked.supported
            quoted += any(contains_answer(c.quote, item.answers) for c in checked.citations)
        return {
            "questions": len(items),
            "gold_supported": supported / len(items),
            "quote_holds_answer": quoted / len(items),
        }
    finally:
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rgb", type=Path)
    parser.add_argument("--docqa", type=Path)
    parser.add_argument("--home", type=Path, help="data directory for the docqa corpus (reused)")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="footnote-checker-") as scratch:
        app = create_app(Settings(home=Path(scratch)))
        try:
            report: dict[str, object] = {
                "rgb": str(args.rgb),
                "rgb_minimal_pairs": rgb_pairs(args.rgb, app.embedder),
            }
        finally:
            app.close()
    if args.docqa:
        report["docqa"] = str(args.docqa)
        report["docqa_gold"] = docqa_gold(args.docqa, args.home or Path(tempfile.mkdtemp(prefix="footnote-")))
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2))
    RESULTS.mkdir(exist_ok=True)
    name = (
        f"checker_minimal_pairs{'-' + args.label if args.label else ''}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    (RESULTS / name).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
