"""In-domain training questions for the sentence reader, from the manual pages on this machine.

The manual pages installed here (Debian's, rendered by `man`) are ingested into a scratch data
directory as a user would ingest them; never the pages of the docqa-dev set, which stays for
measuring. For a sample of their chunks, a teacher model (Qwen2.5-Coder-1.5B-Instruct by default)
writes one question the chunk answers, in its own words, and the short answer copied from it;
a pair whose answer is not in the chunk verbatim, or that the question gives away, is dropped.
Each kept question is then searched as the answer engine searches it, and every sentence of the
retrieved chunks becomes a candidate, labelled 1 when it holds the answer and comes from the page
the question was written on. One question in four is searched with its own page left out of the
index: a question whose documents lack the answer, every candidate 0.

The pages used are listed in the output's `pages`, so anyone can see what the reader saw.

    python scripts/reader_questions.py --out scripts/data/reader-manpages.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import random
import re
import subprocess
import tempfile
import time
from pathlib import Path

from footnote.answer import evidence
from footnote.answer.citations import CitationChecker
from footnote.application import create_app
from footnote.config import Settings
from footnote.core.filters import SearchFilter
from footnote.evaluation.docqa import contains_answer
from footnote.models.base import GenerationParams, Message
from footnote.training.reader_data import ReaderExample, save_examples

MAN_ROOT = Path("/usr/share/man")
SECTIONS = ("man1", "man5", "man8")
# The pages the docqa-dev set was made from: measured on, never trained on.
HELD_FOR_MEASURING = {
    "find",
    "grep",
    "scp",
    "sed",
    "sftp",
    "ssh-keygen",
    "systemd.timer",
    "tar",
    "xargs",
    "zstd",
    "lsof",
    "xsltproc",
    "pip",
    "pyenv",
    "valgrind",
    "openssl",
    "nettle",
    "libpng",
    "expat",
}
MAX_CANDIDATES = 12
MIN_PAGE_CHARS = 3000
PROMPT = (
    'Passage from the manual of {name}:\n"""\n{passage}\n"""\n'
    "Write one question that this passage answers, as a user of {name} would ask it, in your own "
    "words (do not copy the passage's phrasing), and its short answer (a few words, a number or an "
    "option) copied exactly from the passage. Reply in two lines:\nQuestion: ...\nAnswer: ..."
)
_ANSWER = re.compile(
    r"^(?:question:\s*)?(?P<question>[^\n]+?\?)\s*(?:short )?answer:\s*(?P<answer>.+)$",
    re.DOTALL | re.IGNORECASE,
)


def page_names(seed: int, count: int) -> list[Path]:
    pages = sorted(p for section in SECTIONS for p in (MAN_ROOT / section).glob("*.gz"))
    # Generated pages (thousands of gcloud subcommands, one per page) would crowd out the rest.
    pages = [
        p for p in pages if p.name.split(".")[0] not in HELD_FOR_MEASURING and not p.name.startswith("gcloud")
    ]
    random.Random(seed).shuffle(pages)
    return pages[: count * 3]


def render(page: Path) -> str:
    with gzip.open(page, "rb") as handle:
        head = handle.read(64)
    if head.startswith(b".so "):
        return ""  # a link to another page
    shown = subprocess.run(
        ["man", "-P", "cat", "-l", str(page)],
        capture_output=True,
        env={"MANWIDTH": "80", "PATH": "/usr/bin:/bin"},
        timeout=30,
        check=False,
    )
    text = subprocess.run(["col", "-b"], input=shown.stdout, capture_output=True, check=False).stdout
    return text.decode("utf-8", "replace")


def ask_teacher(app, name: str, passage: str) -> tuple[str, str] | None:
    messages = [Message("user", PROMPT.format(name=name, passage=passage))]
    reply = "".join(app.generator.stream(messages, GenerationParams(max_tokens=80, temperature=0.0)))
    match = _ANSWER.match(reply.strip())
    if match is None:
        return None
    question = " ".join(match.group("question").split())
    answer = match.group("answer").strip().splitlines()[0].strip().strip("`\"'.")
    if not answer or len(answer.split()) > 8 or len(answer) < 2:
        return None
    if not contains_answer(passage, [answer]) or contains_answer(question, [answer]):
        return None
    return question, answer


def candidates_for(app, question: str, answer: str, page: str, exclude: bool) -> ReaderExample | None:
    filters = SearchFilter(exclude_paths=(f"*/{page}",)) if exclude else None
    hits = app.search(question, limit=5, filters=filters)
    if not hits:
        return None
    checker = CitationChecker(hits, None, question=question)
    spans = checker.sentence_spans()
    texts = [hits[s.source].text[s.start : s.end] for s in spans]
    inputs = evidence.reader_candidates(hits, spans, texts)
    labels = [
        int(not exclude and Path(hits[s.source].path).name == page and contains_answer(t, [answer]))
        for s, t in zip(spans, texts, strict=True)
    ]
    if not exclude and not 0 < sum(labels) <= 3:
        return None  # the answer is not found, or found so often that it says nothing
    scores = evidence.score_sentences(question, spans, None, texts)
    order = sorted(range(len(spans)), key=lambda i: (-labels[i], -scores[i]))[:MAX_CANDIDATES]
    order.sort()
    return ReaderExample(
        question, tuple(inputs[i] for i in order), tuple(labels[i] for i in order), f"man:{page}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pages", type=int, default=120)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--teacher", default="qwen2.5-1.5b")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="footnote-manpages-") as scratch:
        corpus = Path(scratch) / "corpus"
        corpus.mkdir()
        used: list[str] = []
        for page in page_names(args.seed, args.pages):
            if len(used) >= args.pages:
                break
            text = render(page)
            if len(text) >= MIN_PAGE_CHARS:
                name = page.name.removesuffix(".gz") + ".txt"
                (corpus / name).write_text(text, encoding="utf-8")
                used.append(name)
        app = create_app(Settings(home=Path(scratch) / "home", llm=args.teacher, sentence_reader="off"))
        app.ingest([corpus])
        chunks = list(app.catalog.chunks(app.catalog.chunk_id_list()).values())
        rng.shuffle(chunks)
        examples: list[ReaderExample] = []
        started, asked = time.monotonic(), 0
        for chunk in chunks:
            if len(examples) >= args.questions:
                break
            if len(chunk.text) < 200:
                continue
            page = Path(chunk.path).name
            asked += 1
            written = ask_teacher(app, page.split(".")[0], chunk.text[:700])
            if written is None:
                continue
            example = candidates_for(app, *written, page, exclude=len(examples) % 4 == 3)
            if example is not None:
                examples.append(example)
                print(
                    f"{len(examples)}/{args.questions} ({asked} asked, {time.monotonic() - started:.0f} s): "
                    f"{written[0]} -> {written[1]}",
                    flush=True,
                )
    save_examples(args.out, examples, {"pages": used, "teacher": args.teacher, "seed": args.seed})
    print(f"saved {len(examples)} questions from {len(used)} pages to {args.out}")


if __name__ == "__main__":
    main()
