"""How often real text looks degenerate: the loop rules run over every sentence of real documents.

`footnote.core.loops` ends a generation that falls into a loop and never shows a sentence made of
one. Its thresholds must leave real writing alone: this counts, over every sentence of the
docqa-dev and squad2-dev documents (technical manuals, man pages, Wikipedia), how many the rules
call degenerate, and lists them. One run, one machine.

    python benchmarks/degenerate_text.py
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from footnote.core.loops import is_degenerate, loop_length
from footnote.core.sentences import split_sentences
from footnote.ingest.loaders import load_document

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
CORPORA = {
    "docqa-dev": REPO.parent / "shared" / "data" / "docqa-dev" / "corpus",
    "squad2-dev": REPO.parent / "shared" / "data" / "squad2-dev" / "corpus",
}


def flagged_sentences(folder: Path) -> tuple[int, list[dict[str, str]]]:
    """Sentences in every document under `folder`, and those the rules call degenerate."""
    total, flagged = 0, []
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        text = load_document(path).text
        for start, end in split_sentences(text):
            sentence = text[start:end]
            total += 1
            if is_degenerate(sentence) or loop_length(sentence):
                flagged.append({"document": path.name, "sentence": sentence[:300]})
    return total, flagged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    report: dict[str, object] = {}
    for name, folder in CORPORA.items():
        if not folder.is_dir():
            print(f"{name}: {folder} is absent; skipped")
            continue
        started = time.perf_counter()
        total, flagged = flagged_sentences(folder)
        seconds = time.perf_counter() - started
        report[name] = {"sentences": total, "flagged": len(flagged), "seconds": round(seconds, 1)}
        report[name]["rows"] = flagged
        print(f"{name}: {len(flagged)} of {total} sentences flagged ({seconds:.1f} s)")
        for row in flagged[:20]:
            print(f"  {row['document']}: {row['sentence'][:120]!r}")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"degenerate_text-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"saved {out}")


if __name__ == "__main__":
    main()
