"""footnote's sentence reader: a small cross-encoder that scores how well a source sentence
answers a question.

The reader reads the question together with one candidate sentence and the context the
sentence needs (its document's title and heading path, its paragraph's lead-in) and returns a
logit: high when the sentence states the answer, low when it only shares the question's words.
It is trained by footnote on public QA data (`footnote train reader`) and shipped in the
repository as an int8 ONNX graph with its tokenizer, every file pinned by SHA-256.

`SentenceReader.read_batch` is the one method a reader implements; `read` and `score` batch on
it. A reader trained with an answer head (`footnote train reader --answer-head`) gives two logits
for each pair from one pass: how surely the sentence answers, which ranks the sentences, and a
second one that is weighed against NO_ANSWER_CANDIDATE's to say whether the question is answered
at all, so that the ranking never has to place a near-miss below a threshold.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from footnote.errors import ModelError
from footnote.models.base import padded_batches
from footnote.models.registry import READER_FILES, READER_FOLDER, verify_file

# Tokens the reader sees of one (question, candidate) pair; the candidate's context is cut first.
MAX_PAIR_TOKENS = 128
# Words of a paragraph's lead-in shown with a later sentence of it.
LEAD_WORDS = 24
# The candidate that stands for "no sentence answers", scored beside the sentences by a reader
# trained with it (`footnote train reader --no-answer`): its logit against the best sentence's
# says whether the question is answered, relative to the question's own candidates.
NO_ANSWER_CANDIDATE = "none of these sentences answers the question"
CONTEXT_MARK = " \u2016 "  # between the sentence and its context: "sentence ‖ title › heading: lead"


def reader_input(sentence: str, heading: str = "", lead: str = "") -> str:
    """The candidate side of a reader pair: the sentence first (truncation cuts its context, never
    it), then where it stands and the lead-in of its paragraph."""
    sentence = " ".join(sentence.split())
    context = " ".join(heading.split())
    lead_words = lead.split()[:LEAD_WORDS]
    if lead_words:
        context = f"{context}: {' '.join(lead_words)}" if context else " ".join(lead_words)
    return f"{sentence}{CONTEXT_MARK}{context}" if context else sentence


@dataclass(frozen=True)
class Reading:
    """A reader's logits for a question's candidates, in order: `scores` rank them; `answered`,
    from a reader with an answer head, weigh them against NO_ANSWER_CANDIDATE (None otherwise)."""

    scores: list[float]
    answered: list[float] | None = None


class SentenceReader(ABC):
    """Scores (question, candidate) pairs. Subclasses implement `read_batch` only."""

    name: str = "reader"
    batch_size: int = 32  # pairs in one batch at most (and `BATCH_POSITIONS` padded tokens)
    languages: frozenset[str] | None = frozenset({"en"})  # what it reads; None for every language
    no_answer: bool = False  # trained to score NO_ANSWER_CANDIDATE beside the sentences

    @abstractmethod
    def read_batch(self, question: str, candidates: Sequence[str]) -> Reading:
        """The logits of each candidate (made by `reader_input`) for `question`."""

    def lengths(self, question: str, candidates: Sequence[str]) -> list[int]:
        """How long each (question, candidate) pair is for the model: here in characters, in
        its own tokens for a reader that has a tokenizer."""
        return [len(question) + len(candidate) for candidate in candidates]

    def read(self, question: str, candidates: Sequence[str]) -> Reading:
        """The logits of every candidate, in order; candidates of similar length are batched
        together, so little of a batch is padding."""
        scores = [0.0] * len(candidates)
        answered: list[float] | None = None
        for batch in padded_batches(self.lengths(question, candidates), self.batch_size):
            reading = self.read_batch(question, [candidates[i] for i in batch])
            for position, index in enumerate(batch):
                scores[index] = reading.scores[position]
            if reading.answered is not None:
                answered = answered or [0.0] * len(candidates)
                for position, index in enumerate(batch):
                    answered[index] = reading.answered[position]
        return Reading(scores, answered)

    def score(self, question: str, candidates: Sequence[str]) -> list[float]:
        """One logit per candidate, in order: how surely it answers `question`."""
        return self.read(question, candidates).scores


@dataclass(frozen=True)
class ReaderFiles:
    """A reader on disk: its graph, tokenizer and manifest (what it was trained on, its licence)."""

    folder: Path

    @property
    def graph(self) -> Path:
        return self.folder / "model.onnx"

    @property
    def tokenizer(self) -> Path:
        return self.folder / "tokenizer.json"

    @property
    def manifest(self) -> Path:
        return self.folder / "reader.json"

    def describe(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.manifest.read_text(encoding="utf-8"))
        return data


def bundled_reader_files(verify: bool = True) -> ReaderFiles:
    """The reader shipped with footnote, every file checked against its pinned SHA-256."""
    files = ReaderFiles(READER_FOLDER)
    if verify:
        fix = (
            "restore it with `git checkout src/footnote/models/reader`, "
            "or rebuild it with `footnote train reader`"
        )
        for relative, expected in READER_FILES.items():
            verify_file(READER_FOLDER / relative, expected, fix)
    return files


READER_OFF = "off"
BUNDLED_READER = "footnote"


def open_sentence_reader(choice: str) -> SentenceReader | None:
    """The reader `choice` names (setting FOOTNOTE_SENTENCE_READER): the bundled one, a folder
    written by `footnote train reader`, or None for "off"."""
    if choice == READER_OFF:
        return None
    if choice == BUNDLED_READER:
        return OnnxSentenceReader(bundled_reader_files())
    folder = Path(choice).expanduser()
    files = ReaderFiles(folder)
    if not files.graph.is_file() or not files.tokenizer.is_file():
        raise ModelError(
            f"FOOTNOTE_SENTENCE_READER={choice} is neither {BUNDLED_READER}, {READER_OFF}, nor a folder "
            "holding model.onnx and tokenizer.json (as `footnote train reader --out FOLDER` writes)"
        )
    return OnnxSentenceReader(files, name=folder.name)


class OnnxSentenceReader(SentenceReader):
    """The reader's ONNX graph run by ONNX Runtime, pairs tokenized by its own tokenizer."""

    def __init__(self, files: ReaderFiles, threads: int = 0, name: str = "footnote-reader") -> None:
        from tokenizers import Tokenizer

        from footnote.models.onnx_export import onnx_session

        self.name = name
        try:
            self._tokenizer = Tokenizer.from_file(str(files.tokenizer))
            self._session = onnx_session(files.graph, threads=threads or min(2, os.cpu_count() or 1))
        except Exception as exc:  # onnxruntime and tokenizers raise their own untyped errors
            raise ModelError(
                f"the sentence reader in {files.folder} could not be loaded ({exc}); "
                "restore it with `git checkout src/footnote/models/reader` or rebuild it with "
                "`footnote train reader`"
            ) from exc
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAX_PAIR_TOKENS, strategy="only_second")
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.no_answer = files.manifest.is_file() and bool(files.describe().get("no_answer", False))

    def lengths(self, question: str, candidates: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self._tokenizer.encode_batch([(question, c) for c in candidates])]

    def read_batch(self, question: str, candidates: Sequence[str]) -> Reading:
        if not candidates:
            return Reading([])
        encodings = self._tokenizer.encode_batch([(question, c) for c in candidates])
        feeds = pair_arrays([e.ids for e in encodings], [e.type_ids for e in encodings])
        logits = np.asarray(self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0])
        if logits.ndim == 2:  # a reader with an answer head: (ranking, answered) per pair
            return Reading([float(x) for x in logits[:, 0]], [float(x) for x in logits[:, 1]])
        return Reading([float(x) for x in logits.reshape(-1)])


def pair_arrays(ids: Sequence[Sequence[int]], type_ids: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
    """Padded int64 arrays of a batch of encoded pairs: ids, attention mask, token types."""
    width = max(len(row) for row in ids)
    input_ids = np.zeros((len(ids), width), dtype=np.int64)
    mask = np.zeros_like(input_ids)
    types = np.zeros_like(input_ids)
    for row, (tokens, kinds) in enumerate(zip(ids, type_ids, strict=True)):
        input_ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
        types[row, : len(kinds)] = kinds
    return {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": types}
