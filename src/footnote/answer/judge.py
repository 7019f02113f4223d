"""Support judges: a model that says whether a source span makes an answer sentence true.

One name throughout: the `SupportJudge` class, the `judge` setting (`FOOTNOTE_JUDGE`, with
`judge_threshold`), the `--judge` flag of `footnote eval answers` and its `citation_judged`
metric. The older setting names `verify_model` and `verify_threshold` are still accepted.

The citation checker finds each sentence's best spans by word overlap and embedding
similarity, which cannot see a single swapped name or year. A judge, when configured, reads
each candidate span with the sentence and keeps only the spans it finds supporting.

Two judges implement `SupportJudge`:

- `CrossEncoderJudge`: a sentence-transformers CrossEncoder read from a local folder or the
  local Hugging Face cache (never downloaded). An NLI model (labels contradiction, entailment,
  neutral in any order) gives P(entailment); a one-score cross-encoder gives sigmoid(score).
- `LlmJudge`: a llama.cpp LLM asked whether the premise shows the claim is true; the score is
  P(" Yes") / (P(" Yes") + P(" No")) at the answer position (`footnote.models.yes_no`, which
  the LLM reranker asks its own question with).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from footnote.errors import ConfigError
from footnote.models.cross_encoder import open_cross_encoder
from footnote.models.scoring import ScorerOpener
from footnote.models.yes_no import YesNoScorer, sigmoid

if TYPE_CHECKING:
    from footnote.config import Settings
    from footnote.models.scoring import TokenScorer

LLM_PREFIX = "llm:"
# Tokens of a span kept for an LLM judge; answer sentences are short, sources are cut to fit.
MAX_PREMISE_TOKENS = 320
MAX_CLAIM_TOKENS = 96


class SupportJudge(ABC):
    """Scores (premise, claim) pairs. Subclasses implement `support`; higher is better supported."""

    name: str = "judge"

    @abstractmethod
    def support(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """One probability in [0, 1] per pair that the premise makes the claim true."""

    def close(self) -> None:  # noqa: B027 - optional hook, most judges have nothing to release
        pass


class CrossEncoderJudge(SupportJudge):
    """A sentence-transformers CrossEncoder, loaded from local files only."""

    def __init__(self, model: str, batch_size: int = 16) -> None:
        self._model: Any = open_cross_encoder(model, "FOOTNOTE_JUDGE", ", or to llm:<model name>")
        self.name = model
        self.batch_size = batch_size
        labels = {int(i): str(label).lower() for i, label in self._model.config.id2label.items()}
        self._entailment: int | None = None
        if self._model.num_labels > 1:
            found = [i for i, label in labels.items() if label.startswith("entail")]
            if not found:
                names = ", ".join(labels.values())
                raise ConfigError(
                    f"support judge '{model}' has the labels {names} but none is 'entailment'; "
                    "use an NLI model or a cross-encoder with one score"
                )
            self._entailment = found[0]

    def support(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        if self._entailment is None:
            raw = self._model.predict(list(pairs), batch_size=self.batch_size, activation_fn=_identity)
            return [sigmoid(float(value)) for value in raw]
        rows = self._model.predict(list(pairs), batch_size=self.batch_size, apply_softmax=True)
        return [float(row[self._entailment]) for row in rows]


JUDGE_PROMPT = (
    "Premise: {premise}\nClaim: {claim}\n"
    "Does the premise show that the claim is true? Answer Yes or No.\nAnswer:"
)


class LlmJudge(SupportJudge):
    """An LLM's relative preference for " Yes" over " No" after a support question."""

    def __init__(self, scorer: TokenScorer) -> None:
        self.question = YesNoScorer(scorer, JUDGE_PROMPT, "a CrossEncoder judge", weighs_no=True)
        self.name = f"{LLM_PREFIX}{scorer.name}"

    def support(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [self._judge(premise, claim) for premise, claim in pairs]

    def _judge(self, premise: str, claim: str) -> float:
        question = self.question
        texts = question.tokenize(premise)[:MAX_PREMISE_TOKENS], question.tokenize(claim)[:MAX_CLAIM_TOKENS]
        if question.prompt_tokens + len(texts[0]) + len(texts[1]) > question.context_length:
            raise ConfigError(f"the support judge's window of {question.context_length} tokens is too small")
        return question.yes_over_no(*texts)

    def close(self) -> None:
        self.question.close()


def open_judge(settings: Settings, open_scorer: ScorerOpener | None = None) -> SupportJudge | None:
    """The support judge the settings name, or None when answers are checked without one; an LLM
    judge scores with what `open_scorer` opens (`footnote.perplexity.scorer_opener(settings)`)."""
    spec = settings.judge
    if not spec:
        return None
    if spec.startswith(LLM_PREFIX):
        if open_scorer is None:
            raise ValueError("an LLM judge needs a scorer opener (footnote.perplexity.scorer_opener)")
        context = 1 + MAX_PREMISE_TOKENS + MAX_CLAIM_TOKENS + 64  # BOS, both texts, the prompt
        return LlmJudge(open_scorer(spec.removeprefix(LLM_PREFIX), context))
    return CrossEncoderJudge(spec)


def _identity(values: Any) -> Any:
    return values
