"""Support judges: citations re-checked by a model that reads span and sentence together."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from footnote.answer.citations import JUDGED_SOURCES, CitationChecker
from footnote.answer.judge import CrossEncoderJudge, LlmJudge, open_judge
from footnote.application import create_app
from footnote.config import Settings
from footnote.errors import ConfigError, ModelError
from footnote.models.registry import resolve_embedder
from footnote.models.scoring import TokenScorer
from tests.fakes import HashingEmbedder, ScriptedGenerator, WordJudge, WordTokenizer
from tests.unit.test_citations import COFFEE, FRESNEL, SWAPPED_WORD, TIDES, hit_in_document

COPIED = "The Fresnel lens was invented by the French physicist Augustin-Jean Fresnel in 1822."


@pytest.fixture
def hits() -> list:
    return [hit_in_document(text, number)[0] for number, text in enumerate((FRESNEL, TIDES, COFFEE), start=1)]


@pytest.mark.parametrize("text", SWAPPED_WORD)
def test_a_judge_rejects_the_swapped_word_that_overlap_accepts(hits: list, text: str) -> None:
    assert CitationChecker(hits).check(text).supported  # the known miss without a judge
    judged = CitationChecker(hits, judge=WordJudge()).check(text)
    assert not judged.supported and judged.flagged and judged.citations == []


def test_a_judged_copied_sentence_keeps_its_verbatim_quote(hits: list) -> None:
    judge = WordJudge()
    result = CitationChecker(hits, judge=judge).check(COPIED + " [3]")
    [citation] = result.citations
    assert citation.number == 1 and citation.quote == COPIED and citation.score == 1.0
    assert result.corrected  # the model's [3] did not check out
    assert (COPIED, COPIED) in judge.pairs
    assert 1 <= len(judge.pairs) <= JUDGED_SOURCES


def test_the_judge_sees_at_most_the_leading_sources() -> None:
    copies = [hit_in_document(TIDES, number)[0] for number in range(1, 7)]
    judge = WordJudge()
    result = CitationChecker(copies, judge=judge).check("Neap tides have the smallest range.")
    assert len(judge.pairs) == JUDGED_SOURCES
    assert [citation.number for citation in result.citations] == [1, 2, 3]


def test_the_judges_threshold_decides(hits: list) -> None:
    unsure = WordJudge(supported=0.4)
    assert not CitationChecker(hits, judge=unsure, judge_threshold=0.5).check(COPIED).supported
    result = CitationChecker(hits, judge=unsure, judge_threshold=0.3).check(COPIED)
    assert result.supported and result.citations[0].score == pytest.approx(0.4)


def test_an_answer_fragment_is_judged_as_the_answer_to_the_question(hits: list) -> None:
    judge = WordJudge()
    question = "Who invented the Fresnel lens?"
    result = CitationChecker(hits, judge=judge, question=question).check("Augustin Fresnel.")
    assert result.supported and result.citations[0].number == 1
    assert {claim for _, claim in judge.pairs} == {f'The answer to "{question}" is Augustin Fresnel.'}


def test_sentences_with_no_claim_never_reach_the_judge(hits: list) -> None:
    judge = WordJudge()
    CitationChecker(hits, judge=judge).check("Sure.")
    assert judge.pairs == []


def test_the_engine_checks_answers_with_the_applications_judge(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "fresnel.md").write_text(f"# Fresnel\n\n{FRESNEL}\n", encoding="utf-8")
    reply = f"{COPIED} [1] {SWAPPED_WORD[0]} [1]"
    app = create_app(
        Settings(home=tmp_path / "home", reader="sources"),
        embedder=HashingEmbedder(),
        generator=ScriptedGenerator([reply]),
        judge=WordJudge(),
    )
    app.ingest([tmp_path / "docs"])
    answer = app.answer_engine().ask("Who invented the Fresnel lens?")
    assert [sentence.supported for sentence in answer.sentences] == [True, False]
    assert answer.sentences[1].flagged
    app.close()


def test_no_judge_unless_configured_and_clear_errors_when_it_cannot_load(tmp_path: Path) -> None:
    assert open_judge(Settings(home=tmp_path)) is None
    with pytest.raises(ModelError, match="FOOTNOTE_JUDGE"):
        open_judge(Settings(home=tmp_path, judge=str(tmp_path / "missing")))
    with pytest.raises(ModelError, match="FOOTNOTE_JUDGE"):  # the older name still chooses the judge
        open_judge(Settings(home=tmp_path, verify_model=str(tmp_path / "missing")))


def test_the_older_setting_names_are_read_where_the_new_ones_are_not_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    older = Settings(home=tmp_path, verify_model="llm:old", verify_threshold=0.7)
    assert (older.judge, older.judge_threshold) == ("llm:old", 0.7)
    both = Settings(
        home=tmp_path, judge="llm:new", verify_model="llm:old", judge_threshold=0.4, verify_threshold=0.7
    )
    assert (both.judge, both.judge_threshold) == ("llm:new", 0.4)
    monkeypatch.setenv("FOOTNOTE_VERIFY_MODEL", "llm:env")
    monkeypatch.setenv("FOOTNOTE_VERIFY_THRESHOLD", "0.3")
    assert (Settings(home=tmp_path).judge, Settings(home=tmp_path).judge_threshold) == ("llm:env", 0.3)


# --- CrossEncoder judges, on tiny models built here with fixed outputs ----------------------


def tiny_classifier(folder: Path, labels: Sequence[str], bias: Sequence[float]) -> Path:
    """A one-layer BERT classifier whose logits are `bias` whatever the input (weights zeroed)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(resolve_embedder("minilm-l6"))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor(list(bias)))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_an_nli_cross_encoder_gives_p_entailment_whatever_its_label_order(tmp_path: Path) -> None:
    labels = ["neutral", "contradiction", "ENTAILMENT"]
    folder = tiny_classifier(tmp_path / "nli", labels, [0.0, 0.0, math.log(8)])
    judge = CrossEncoderJudge(str(folder))
    scores = judge.support([("a premise", "a claim"), ("another", "one")])
    assert scores == pytest.approx([0.8, 0.8], abs=1e-4)  # 8 / (1 + 1 + 8)
    assert judge.support([]) == []


def test_a_one_score_cross_encoder_gives_the_sigmoid_of_its_score(tmp_path: Path) -> None:
    folder = tiny_classifier(tmp_path / "relevance", ["LABEL_0"], [2.0])
    assert CrossEncoderJudge(str(folder)).support([("p", "c")]) == pytest.approx([1 / (1 + math.exp(-2.0))])


def test_a_classifier_without_an_entailment_label_is_refused(tmp_path: Path) -> None:
    folder = tiny_classifier(tmp_path / "sentiment", ["negative", "positive"], [0.0, 0.0])
    with pytest.raises(ConfigError, match="none is 'entailment'"):
        CrossEncoderJudge(str(folder))
    with pytest.raises(ConfigError, match="none is 'entailment'"):
        open_judge(Settings(home=tmp_path, verify_model=str(folder)))


# --- the LLM judge's arithmetic, on a scorer with a fixed next-token distribution ------------


class FixedNextToken(TokenScorer):
    """Every window's last position: " Yes" with log-probability `yes`, " No" with `no`
    (or absent from the likeliest tokens when `no` is None); records the windows."""

    name = "fixed"
    context_length = 600

    def __init__(self, yes: float, no: float | None) -> None:
        self.tokenizer = WordTokenizer()
        self.yes, self.no = yes, no
        self.windows: list[list[int]] = []

    def score_window(self, token_ids: Sequence[int], first_scored: int) -> list[float]:
        raise AssertionError("the judge asks for the likeliest tokens too")

    def score_window_top(
        self, token_ids: Sequence[int], first_scored: int, n: int
    ) -> tuple[list[float], list[list[tuple[int, float]]]]:
        self.windows.append(list(token_ids))
        yes, no = self.tokenizer.ids["Yes"], self.tokenizer.ids["No"]
        likely = [(yes, self.yes), (999, -3.0)] + ([(no, self.no)] if self.no is not None else [])
        return [self.yes], [sorted(likely, key=lambda pair: -pair[1])[:n]]


def test_the_llm_judge_weighs_yes_against_no() -> None:
    scorer = FixedNextToken(yes=math.log(0.6), no=math.log(0.2))
    judge = LlmJudge(scorer)
    assert judge.support([("The sky is blue.", "The sky is blue.")]) == pytest.approx([0.75])
    [window] = scorer.windows
    ids = scorer.tokenizer.ids
    assert window[0] == 0 and window[-1] == ids["Yes"]
    assert ids["Premise:"] in window and ids["Claim:"] in window


def test_the_llm_judge_bounds_a_no_outside_the_likeliest_tokens() -> None:
    judge = LlmJudge(FixedNextToken(yes=-1.0, no=None))
    assert judge.support([("p", "c")]) == pytest.approx([1 / (1 + math.exp(-2.0))])  # No <= e^-3


def test_the_llm_judge_cuts_a_long_premise_to_fit() -> None:
    scorer = FixedNextToken(yes=-0.1, no=-3.0)
    judge = LlmJudge(scorer)
    judge.support([(" ".join(f"w{i}" for i in range(2000)), "a short claim")])
    assert len(scorer.windows[0]) <= scorer.context_length
    assert scorer.tokenizer.ids["claim"] in scorer.windows[0]
