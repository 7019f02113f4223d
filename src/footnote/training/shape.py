"""Training the answer-shape model: whether a question needs several passages (a summary, a
procedure, a list, a comparison) or one fact, read from the question's multilingual embedding.

Broad questions are broad-dev's summaries, how-tos, lists and comparisons, and questions of the
same kinds made from the squad2-dev articles' titles and names (`made_broad`): without them
every broad question is about a technical document and the model learns the domain as much as
the shape (on the README's sample corpus, prose about lighthouses and bees, a summary and a
comparison fell to the single-fact side). Lists are also made from the docqa-dev documents'
own section headings that name several things ("Compression options", "Legacy hash functions":
`made_lists`): written by hand, a list question about a manual ("Which grep options control
...?") reads much like a single-fact one ("Which grep option ...?"), and without them only 0.3
of broad-dev's lists were taken as broad, cross-validated. Single-fact ones are broad-dev's
out-of-scope questions, every docqa-dev question, a fixed sample of squad2-dev's and rgb-zh-dev's
Chinese queries. A
logistic regression over multilingual-e5-small's query embedding is fitted to them (classes
weighted to balance), and cross-validated with folds by document, so that no document's
questions are both trained on and scored. The Chinese questions of broad-dev are never trained
on: they show whether the shape carries to a language the model was not fitted in.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from footnote.core.stopwords import CLAIM_STOP_WORDS

BROAD_KINDS = ("summary", "howto", "list", "compare")
SQUAD_SAMPLE = 400
SEED = 0
FOLDS = 5
REGULARISATION = 3.0  # sklearn's C; chosen from 0.3, 1, 3, 10 by cross-validated AUC
NAMES_PER_ARTICLE = 4  # the article's most frequent names, each asked about in one broad way
LISTS_PER_DOCUMENT = 6  # the most list questions made from one document's headings
# Broad questions of each kind about an article's subject or names ({a}, {b}), in the two
# languages footnote answers in; each made question takes one at random.
MADE = {
    "summary": (
        "Summarize {a}.",
        "Give me an overview of {a}.",
        "What does the text say about {a}?",
        "Explain {a} in a few points.",
        "Tell me about {a}.",
        "总结一下{a}。",
        "介绍一下{a}的主要内容。",
    ),
    "list": (
        "What are the main points about {a}?",
        "List the key facts about {a}.",
        "Which things does the text mention about {a}?",
        "What are the consequences of {a}?",
        "列出关于{a}的要点。",
    ),
    "howto": (
        "How does {a} work?",
        "How did {a} come about, step by step?",
        "Describe how {a} developed.",
        "What steps led to {a}?",
        "{a}是如何发展的？",
    ),
    "compare": (
        "Compare {a} and {b}.",
        "How does {a} differ from {b}?",
        "What do {a} and {b} have in common?",
        "What is the difference between {a} and {b}?",
        "比较{a}和{b}。",
    ),
}
# List questions about a heading naming several things ({h}) of a document ({t}).
MADE_LISTS = (
    "Which {h} does the {t} documentation list?",
    "What {h} are there in {t}?",
    "List the {h} of {t}.",
    "Which {h} does {t} have?",
    "What are the {h} in {t}?",
)
# A heading that names several things: one to four words of letters, the last an English plural
# (not "-ss", "-is" or "-us": "access", "synopsis", "status").
_PLURAL_HEADING = re.compile(r"^(?:[A-Za-z-]+ ){0,3}[A-Za-z-]*[a-hj-rtv-z]s$")
_NUMBERING = re.compile(r"^[\d.\s]+")
_NAME = re.compile(r"\b[A-Z][a-z]+(?: (?:of |the |de )?[A-Z][a-z]+){1,3}\b")


@dataclass(frozen=True)
class ShapeExample:
    question: str
    broad: bool | None  # None: scored, never trained on (another language)
    group: str  # the document the question is about: folds never split one
    kind: str


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def shape_examples(data: Path) -> list[ShapeExample]:
    """The labelled questions of `data` (the shared data folder: broad-dev, docqa-dev, squad2-dev)."""
    examples = []
    for item in _jsonl(data / "broad-dev" / "questions.jsonl"):
        kind = item["kind"]
        sources = item.get("sources") or [f"none-{item['id']}"]
        broad = True if kind in BROAD_KINDS else None if kind == "zh_cross" else False
        examples.append(ShapeExample(item["question"], broad, str(sources[0]), kind))
    for item in _jsonl(data / "docqa-dev" / "questions.jsonl"):
        examples.append(ShapeExample(item["question"], False, str(item.get("source")), "docqa"))
    examples.extend(made_broad(data / "squad2-dev" / "corpus"))
    examples.extend(made_lists(data / "docqa-dev" / "corpus"))
    # Chinese single facts: without them every Chinese question the model met was a made broad
    # one, and it took 0.99 of rgb-zh-dev's questions ("2021年香港GDP增长了多少？") as broad.
    for item in _jsonl(data / "rgb-zh-dev" / "queries.jsonl"):
        examples.append(ShapeExample(item["text"], False, f"rgb-zh-{item['_id']}", "rgb-zh"))
    squad = _jsonl(data / "squad2-dev" / "questions.jsonl")
    for item in random.Random(SEED).sample(squad, min(SQUAD_SAMPLE, len(squad))):
        examples.append(ShapeExample(item["question"], False, str(item["source"]), "squad"))
    return examples


def made_broad(corpus: Path) -> list[ShapeExample]:
    """Broad questions about each article of `corpus` (Markdown, its title on the first line):
    one of each kind about its title, one about each of its most frequent names, and comparisons
    of those names in pairs."""
    rng = random.Random(SEED)
    examples = []
    for path in sorted(corpus.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        title = text.splitlines()[0].lstrip("# ").strip()
        # A name does not start with a function word ("On November", "Since Turing").
        found = (name for name in _NAME.findall(text) if name.split()[0].lower() not in CLAIM_STOP_WORDS)
        counts = Counter(found)
        names = [name for name, _ in counts.most_common(NAMES_PER_ARTICLE)]
        subjects = [(kind, title) for kind in ("summary", "list", "howto")]
        subjects += [(rng.choice(("summary", "list", "howto")), name) for name in names]
        pairs = [(names[i], names[i + 1]) for i in range(0, len(names) - 1, 2)]
        for kind, subject in subjects:
            question = rng.choice(MADE[kind]).format(a=subject)
            examples.append(ShapeExample(question, True, path.name, f"made-{kind}"))
        for first, second in pairs:
            question = rng.choice(MADE["compare"]).format(a=first, b=second)
            examples.append(ShapeExample(question, True, path.name, "made-compare"))
    return examples


def made_lists(corpus: Path) -> list[ShapeExample]:
    """List questions about the documents of `corpus`, each about one of a document's section
    headings that names several things, `LISTS_PER_DOCUMENT` at most (chosen at random)."""
    from footnote.ingest.loaders import load_document

    rng = random.Random(SEED)
    examples = []
    for path in sorted(corpus.iterdir()):
        document = load_document(path)
        headings = {
            _NUMBERING.sub("", h).strip(" #").lower() for b in document.blocks for h in b.heading_path
        }
        plural = sorted(h for h in headings if _PLURAL_HEADING.match(h))
        subject = path.name.split(".")[0].split("-")[0]
        for heading in rng.sample(plural, min(LISTS_PER_DOCUMENT, len(plural))):
            question = rng.choice(MADE_LISTS).format(h=heading, t=subject)
            examples.append(ShapeExample(question, True, path.name, "made-list-heading"))
    return examples


def fit(
    vectors: np.ndarray, labels: np.ndarray, regularisation: float = REGULARISATION
) -> tuple[list[float], float]:
    """A balanced logistic regression's weights and bias."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=regularisation, max_iter=5000, class_weight="balanced")
    model.fit(vectors, labels)
    return [float(w) for w in model.coef_[0]], float(model.intercept_[0])


def probabilities(vectors: np.ndarray, weights: Sequence[float], bias: float) -> np.ndarray:
    logits = vectors @ np.asarray(weights) + bias
    return np.asarray(1.0 / (1.0 + np.exp(-logits)))


def folds(examples: Sequence[ShapeExample]) -> dict[str, int]:
    """Each document's fold: its questions are scored by the model fitted without that fold."""
    groups = sorted({e.group for e in examples})
    random.Random(SEED).shuffle(groups)
    return {group: index % FOLDS for index, group in enumerate(groups)}


def fold_fits(examples: Sequence[ShapeExample], vectors: np.ndarray) -> list[tuple[list[float], float]]:
    """The weights and bias fitted without each fold's documents, fold by fold."""
    fold = folds(examples)
    labelled = np.array([e.broad is not None for e in examples])
    labels = np.array([bool(e.broad) for e in examples])
    fits = []
    for number in range(FOLDS):
        out = np.array([fold[e.group] == number for e in examples])
        fits.append(fit(vectors[labelled & ~out], labels[labelled & ~out]))
    return fits


def cross_validated(examples: Sequence[ShapeExample], vectors: np.ndarray) -> np.ndarray:
    """Each example's probability from a model fitted without its document's questions."""
    fold = folds(examples)
    held = np.zeros(len(examples))
    for number, (weights, bias) in enumerate(fold_fits(examples, vectors)):
        out = np.array([fold[e.group] == number for e in examples])
        held[out] = probabilities(vectors[out], weights, bias)
    return held


def youden_threshold(examples: Sequence[ShapeExample], broad: np.ndarray) -> float:
    """The threshold on cross-validated probabilities that takes the most broad questions as
    broad for the fewest single-fact ones (the largest true minus false positive rate)."""
    labelled = [
        (bool(e.broad), float(p)) for e, p in zip(examples, broad, strict=True) if e.broad is not None
    ]
    positives = sum(y for y, _ in labelled) or 1
    negatives = sum(not y for y, _ in labelled) or 1

    def gain(threshold: float) -> float:
        true = sum(y and p >= threshold for y, p in labelled) / positives
        false = sum(not y and p >= threshold for y, p in labelled) / negatives
        return true - false

    return max(sorted({round(p, 2) for _, p in labelled}), key=gain)


def figures(examples: Sequence[ShapeExample], broad: np.ndarray, threshold: float) -> dict[str, Any]:
    """Per kind, the share of questions taken as broad; AUC over the labelled ones."""
    from sklearn.metrics import roc_auc_score

    kinds: dict[str, list[bool]] = {}
    for example, probability in zip(examples, broad, strict=True):
        kinds.setdefault(example.kind, []).append(bool(probability >= threshold))
    labelled = [(bool(e.broad), p) for e, p in zip(examples, broad, strict=True) if e.broad is not None]
    return {
        "auc": round(float(roc_auc_score([y for y, _ in labelled], [p for _, p in labelled])), 4),
        "taken_as_broad": {kind: round(sum(v) / len(v), 4) for kind, v in sorted(kinds.items())},
    }


def train_shape(data: Path, embed: Callable[[list[str]], np.ndarray], embedder: str) -> dict[str, Any]:
    """The shape model fitted on every labelled question of `data`, as the manifest stores it,
    with its threshold chosen on cross-validated probabilities (`youden_threshold`) and its
    in-sample and cross-validated figures at that threshold."""
    examples = shape_examples(data)
    vectors = embed([e.question for e in examples])
    labelled = np.array([e.broad is not None for e in examples])
    labels = np.array([bool(e.broad) for e in examples])
    weights, bias = fit(vectors[labelled], labels[labelled])
    held = cross_validated(examples, vectors)
    threshold = youden_threshold(examples, held)
    return {
        "embedder": embedder,
        "threshold": threshold,
        "bias": bias,
        "weights": weights,
        "trained_on": {
            "broad-dev": "summary, howto, list, compare (broad); out_of_scope (single)",
            "squad2-dev articles": "broad questions made from their titles and names (made_broad)",
            "docqa-dev documents": "list questions made from their plural headings (made_lists)",
            "docqa-dev": "every question (single)",
            "squad2-dev": f"{SQUAD_SAMPLE} questions, seed {SEED} (single)",
            "rgb-zh-dev": "every query (single)",
        },
        "licence": "CC BY-SA 4.0 (trained on SQuAD 2.0 questions)",
        "in_sample": figures(examples, probabilities(vectors, weights, bias), threshold),
        "cross_validated_by_document": figures(examples, held, threshold),
    }
