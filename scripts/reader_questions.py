"""In-domain training questions for the sentence reader, from the documentation on this machine.

The manual pages installed here (Debian's, rendered by `man`) and the packages' own documents
under /usr/share/doc (READMEs, FAQs, HTML manuals) are ingested into a scratch data directory as
a user would ingest them; never those the docqa-dev set was made from, which stay for measuring.
For a sample of their chunks, one sentence stating something (`TARGET_WORDS`) is picked and a
teacher model (Qwen2.5-Coder-1.5B-Instruct by default) writes the question a user would ask that
it answers, in its own words; a reply that is no single question, or copies the sentence, is
dropped. Each kept question is then searched as the answer engine searches it, and every
sentence of the retrieved chunks becomes a candidate, labelled 1 when it is the target sentence.

One question in four becomes one whose documents lack the answer, every candidate 0: alternately
searched with its own page left out of the index (the documents are about something else), and
with every retrieved chunk holding the target dropped (the documents are about the same program
and only lack the fact: the harder case, as in docqa-dev's unanswerable questions).

`--tricks` writes SQuAD 2.0's kind of unanswerable question instead: one the target sentence seems
to answer and does not (another value, another case), kept only when the teacher, asked afresh
whether the sentence answers it, says no; every candidate is labelled 0.

The documents used are listed in the output's first line (`pages`), so anyone can see what the
reader saw. Examples are written as they are made, so an interrupted run keeps what it made.

    python scripts/reader_questions.py --out scripts/data/reader-questions.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from footnote.answer import evidence
from footnote.answer.terms import content_terms
from footnote.application import create_app
from footnote.config import Settings
from footnote.core.filters import SearchFilter
from footnote.core.sentences import split_sentences
from footnote.models.base import GenerationParams, Message
from footnote.training.reader_data import (
    ReaderExample,
    kept_candidates,
    open_examples,
    retrieved_candidates,
    write_example,
)

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
# A target sentence says something a user could ask about: at least this many words (`--shortest`
# lowers it: "The default is 32768 bytes." answers too), at most that.
TARGET_WORDS = (8, 60)
PROMPT = (
    'From the manual of {name}, under "{heading}":\n"{sentence}"\n'
    "Write one question that a user of {name} would ask and that this sentence answers. Use your "
    "own words, not the sentence's phrasing, and do not give the answer away. Reply with the "
    "question alone."
)


def page_names(seed: int, count: int) -> list[Path]:
    pages = sorted(p for section in SECTIONS for p in (MAN_ROOT / section).glob("*.gz"))
    # Generated pages (thousands of gcloud subcommands, one per page) would crowd out the rest.
    pages = [
        p for p in pages if p.name.split(".")[0] not in HELD_FOR_MEASURING and not p.name.startswith("gcloud")
    ]
    random.Random(seed).shuffle(pages)
    return pages[: count * 3]


DOC_ROOT = Path("/usr/share/doc")
DOC_SUFFIXES = (".md", ".md.gz", ".html", ".txt", ".txt.gz")
# Packages whose documents the docqa-dev set holds (or that ship the same programs): never read.
HELD_PACKAGES = (
    "expat",
    "zstd",
    "ffi",
    "underscore",
    "xtrans",
    "xslt",
    "png",
    "nettle",
    "ssl",
    "systemd",
    "python",
    "pip",
    "pyenv",
    "valgrind",
    "lsof",
    "sed",
    "find",
    "grep",
    "tar",
    "ssh",
)
# SQuAD 2.0's way of making unanswerable questions: one the sentence seems to answer and does not.
TRICK_PROMPT = (
    'From the manual of {name}, under "{heading}":\n"{sentence}"\n'
    "Write one question that a user of {name} might ask, that seems to be answered by this sentence "
    "but is not: it asks for a detail the sentence does not give (another value, another option, "
    "another case or the opposite case). Use your own words. Reply with the question alone."
)

# A trick question is kept only when the teacher, asked afresh, says the sentence does not answer it.
CHECK_PROMPT = (
    'Sentence from the manual of {name}: "{sentence}"\nQuestion: {question}\n'
    "Does the sentence state the answer to the question? Reply yes or no."
)


def package_documents(seed: int, count: int) -> list[Path]:
    """A sample of the packages' own documents (READMEs, FAQs, manuals in HTML), at most
    three from one package, none from the packages docqa-dev was made from."""
    found = sorted(
        p
        for p in DOC_ROOT.rglob("*")
        if p.is_file()
        and p.name.lower().endswith(DOC_SUFFIXES)
        and not any(word in p.relative_to(DOC_ROOT).parts[0] for word in HELD_PACKAGES)
        and not any(word in p.name.lower() for word in ("changelog", "news", "copyright"))
    )
    random.Random(seed).shuffle(found)
    chosen: list[Path] = []
    per_package: dict[str, int] = {}
    for path in found:
        package = path.relative_to(DOC_ROOT).parts[0]
        if per_package.get(package, 0) < 3:
            per_package[package] = per_package.get(package, 0) + 1
            chosen.append(path)
    return chosen[:count]


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


def target_sentences(text: str, shortest: int = TARGET_WORDS[0]) -> list[str]:
    """The sentences of a chunk a question may be written on (long enough to state something)."""
    found = []
    for start, end in split_sentences(text):
        sentence = " ".join(text[start:end].split())
        if shortest <= len(sentence.split()) <= TARGET_WORDS[1]:
            found.append(sentence)
    return found


def ask_teacher(app, name: str, heading: str, sentence: str, prompt: str = PROMPT) -> str | None:
    """The teacher's question on `sentence`, or None when it wrote no single question."""
    prompt = prompt.format(name=name, heading=heading or name, sentence=sentence)
    reply = "".join(
        app.generator.stream([Message("user", prompt)], GenerationParams(max_tokens=48, temperature=0.0))
    )
    question = " ".join(reply.strip().removeprefix("Question:").split())
    if not question.endswith("?") or question.count("?") > 1 or len(question.split()) < 4:
        return None
    if _overlap(question, sentence) > 0.8:
        return None  # the sentence copied, not a question a user would write
    return question


def teacher_says_unanswered(app, name: str, sentence: str, question: str) -> bool:
    prompt = CHECK_PROMPT.format(name=name, sentence=sentence, question=question)
    reply = "".join(
        app.generator.stream([Message("user", prompt)], GenerationParams(max_tokens=2, temperature=0.0))
    )
    return reply.strip().lower().startswith("no")


def _overlap(question: str, sentence: str) -> float:
    asked = set(content_terms(question))
    return len(asked & set(content_terms(sentence))) / max(1, len(asked))


def _same(candidate: str, target: str) -> bool:
    a, b = " ".join(candidate.split()), target
    return a in b or b in a


def candidates_for(app, question: str, target: str, page: str, negative: str) -> ReaderExample | None:
    """The question's candidates as the engine retrieves them, labelled 1 when they are the
    target sentence of its page. `negative`: "" keeps the target in reach; "trick" keeps it too,
    but the question only seems answered by it; "page" leaves the question's own page out of the
    index; "fact" drops every retrieved chunk holding the target (the rest of the page stays)."""
    filters = SearchFilter(exclude_paths=(f"*/{page}",)) if negative == "page" else None
    hits = app.search(question, limit=5 + (3 if negative == "fact" else 0), filters=filters)
    if negative == "fact":
        hits = [h for h in hits if not _same(h.text, target)][:5]
        if not any(Path(h.path).name == page for h in hits):
            return None  # nothing of the page is left: the "page" case, not the harder one
    if not hits:
        return None
    spans, texts, inputs = retrieved_candidates(hits, question)
    labels = [
        int(not negative and Path(hits[s.source].path).name == page and _same(t, target))
        for s, t in zip(spans, texts, strict=True)
    ]
    if negative == "trick" and not any(_same(t, target) for t in texts):
        return None  # the sentence that seems to answer was not retrieved: no lesson in it
    if not negative and not 0 < sum(labels) <= 2:
        return None  # the target was not retrieved
    scores = evidence.score_sentences(question, spans, None, texts)
    # Kept first: the answering sentences, and the one a trick question seems answered by.
    kept = [labels[i] or (negative == "trick" and _same(texts[i], target)) for i in range(len(spans))]
    order = kept_candidates(kept, scores, MAX_CANDIDATES)
    return ReaderExample(
        question,
        tuple(inputs[i] for i in order),
        tuple(labels[i] for i in order),
        ("doc:" if "__" in page else "man:") + page,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pages", type=int, default=120)
    parser.add_argument("--documents", type=int, default=120, help="package documents besides the pages")
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--teacher", default="qwen2.5-1.5b")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument(
        "--shortest", type=int, default=TARGET_WORDS[0], help="fewest words of a target sentence"
    )
    parser.add_argument(
        "--tricks",
        action="store_true",
        help="write only questions the target sentence seems to answer and does not (every candidate 0)",
    )
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
        for document in package_documents(args.seed, args.documents):
            if document.stat().st_size >= MIN_PAGE_CHARS:
                name = "__".join(document.relative_to(DOC_ROOT).parts)
                shutil.copyfile(document, corpus / name)
                used.append(name)
        app = create_app(Settings(home=Path(scratch) / "home", llm=args.teacher, sentence_reader="off"))
        app.ingest([corpus])
        chunks = list(app.catalog.chunks(app.catalog.chunk_id_list()).values())
        rng.shuffle(chunks)
        examples: list[ReaderExample] = []
        about = {"pages": used, "teacher": args.teacher, "seed": args.seed, "shortest": args.shortest}
        with open_examples(args.out, about) as out:
            started, asked = time.monotonic(), 0
            for chunk in chunks:
                if len(examples) >= args.questions:
                    break
                targets = target_sentences(chunk.text, args.shortest)
                if not targets:
                    continue
                target = rng.choice(targets)
                page = Path(chunk.path).name
                heading = " / ".join(chunk.heading_path)
                asked += 1
                program = page.split(".")[0]
                written = ask_teacher(app, program, heading, target, TRICK_PROMPT if args.tricks else PROMPT)
                if (
                    written is not None
                    and args.tricks
                    and not teacher_says_unanswered(app, program, target, written)
                ):
                    written = None
                if written is None:
                    print(
                        f"  ({asked} asked, {time.monotonic() - started:.0f} s): no usable question",
                        flush=True,
                    )
                    continue
                kept = len(examples)
                negative = "" if kept % 4 != 3 else ("page", "fact")[kept // 4 % 2]
                if args.tricks:
                    negative = "trick"
                example = candidates_for(app, written, target, page, negative)
                if example is None:
                    print(f"  ({asked} asked): {written}: not kept", flush=True)
                else:
                    examples.append(example)
                    write_example(out, example)
                    print(
                        f"{len(examples)}/{args.questions} ({asked} asked, "
                        f"{time.monotonic() - started:.0f} s): {negative or 'answerable'}: {written}",
                        flush=True,
                    )
        app.close()
    print(f"saved {len(examples)} questions from {len(used)} pages to {args.out}")


if __name__ == "__main__":
    main()
