"""Benchmark questions: read from a file, plus a robustness set derived from them.

The robustness variants are what real users type: typos, swapped word order, dropped
words, and masked entities (a capitalised or numeric token replaced by "something").
They are made deterministically from a seed so two runs ask the same questions.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from footnote.errors import ConfigError

_WORD = re.compile(r"\S+")
_ENTITY = re.compile(r"^(?:[A-Z][\w-]*|[\w-]*\d[\w-]*)[.,;:]?$")


@dataclass(frozen=True)
class BenchQuery:
    text: str
    kind: str  # "original", "typo", "swap", "drop" or "mask"


def load_queries(path: Path, limit: int | None = None) -> list[str]:
    """Questions from a BEIR queries.jsonl (its `text` field) or a plain file, one per line."""
    if not path.is_file():
        raise ConfigError(f"no query file {path}; pass --queries with a .jsonl or a text file")
    texts: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        if path.suffix == ".jsonl":
            try:
                text = str(json.loads(line)["text"])
            except (json.JSONDecodeError, KeyError, TypeError):
                raise ConfigError(f"{path}:{number}: expected a JSON object with a 'text' field") from None
        else:
            text = line
        texts.append(text)
        if limit is not None and len(texts) >= limit:
            break
    if not texts:
        raise ConfigError(f"{path} holds no questions")
    return texts


def typo(text: str, rng: random.Random) -> str:
    words = text.split()
    candidates = [i for i, word in enumerate(words) if len(word) > 3 and word.isalpha()]
    if not candidates:
        return text
    index = rng.choice(candidates)
    word = words[index]
    at = rng.randrange(len(word) - 1)
    words[index] = word[:at] + word[at + 1] + word[at] + word[at + 2 :]  # swap two letters
    return " ".join(words)


def swap(text: str, rng: random.Random) -> str:
    words = text.split()
    if len(words) < 3:
        return text
    at = rng.randrange(len(words) - 1)
    words[at], words[at + 1] = words[at + 1], words[at]
    return " ".join(words)


def drop(text: str, rng: random.Random) -> str:
    words = text.split()
    if len(words) < 4:
        return text
    del words[rng.randrange(len(words))]
    return " ".join(words)


def mask(text: str, rng: random.Random) -> str:
    words = text.split()
    entities = [i for i, word in enumerate(words) if i > 0 and _ENTITY.match(word)]
    if not entities:
        return text
    words[rng.choice(entities)] = "something"
    return " ".join(words)


VARIANTS = {"typo": typo, "swap": swap, "drop": drop, "mask": mask}


def robustness_set(texts: list[str], seed: int = 0) -> list[BenchQuery]:
    """Each question once as written and once per variant that changes it."""
    rng = random.Random(seed)
    queries = [BenchQuery(text, "original") for text in texts]
    for text in texts:
        for kind, make in VARIANTS.items():
            variant = make(text, rng)
            if variant != text:
                queries.append(BenchQuery(variant, kind))
    return queries
