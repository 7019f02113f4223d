"""What an evaluation runs on: the application, seen from below.

Evaluation sits under the application in the layers, so it names only the parts it uses; the
CLI (or a benchmark) builds the application, with the settings the evaluation asks for, and
hands it in.
"""

from __future__ import annotations

from typing import Protocol

from footnote.answer.engine import AnswerEngine
from footnote.config import Settings
from footnote.ingest.pipeline import Ingestor
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams


class EvaluatedSystem(Protocol):
    """Stores to index a set into, a retriever over them and an answer engine on top."""

    settings: Settings

    def ingestor(self) -> Ingestor:
        """An ingest pipeline on the system's stores."""
        ...

    def keep_keyword_index(self, wait: bool = False) -> None:
        """Answer keyword searches from postings in memory (built now with `wait`)."""
        ...

    def retriever(self) -> HybridRetriever:
        """A retriever over the system's stores."""
        ...

    def retrieval_params(self, limit: int, mode: str = "hybrid") -> RetrievalParams:
        """The retrieval settings for `limit` hits in `mode`."""
        ...

    def answer_engine(self) -> AnswerEngine:
        """An answer engine as the system's settings configure it."""
        ...


# Built into every answer evaluation's application: related questions are not measured, and
# each would cost one more generation per question.
UNMEASURED: dict[str, object] = {"related_questions": False}
