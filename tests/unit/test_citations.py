"""Citation checking against sources, its calibration, and footnoted rendering."""

from __future__ import annotations

import pytest

from footnote.answer.citations import (
    DEFAULT_THRESHOLD,
    AnswerSentence,
    CitationChecker,
)
from footnote.answer.prompt import NO_ANSWER
from footnote.answer.render import render_markdown
from footnote.answer.terms import content_terms
from footnote.core.hits import SearchHit
from footnote.models.base import Embedder
from tests.fakes import HashingEmbedder

FRESNEL = (
    "The Fresnel lens was invented by the French physicist Augustin-Jean Fresnel in 1822. "
    "It uses a series of concentric grooves to bend light, so it is much thinner and lighter "
    "than a conventional lens of the same focal length. Fresnel lenses were first used in "
    "lighthouses, where they let a beam be seen more than 20 miles out to sea."
)
TIDES = (
    "Tides are the regular rise and fall of sea level caused by the gravitational pull of the "
    "Moon and the Sun. Spring tides occur at new moon and full moon, when the Sun, Moon and "
    "Earth are aligned. Neap tides happen at the first and third quarter moons and have the "
    "smallest range."
)
COFFEE = (
    "Coffee plants are native to tropical Africa. The beans are the seeds of the coffee cherry, "
    "which are roasted before brewing. Arabica and robusta are the two species grown most "
    "widely; robusta beans contain roughly twice as much caffeine as arabica."
)
TIDES_ZH = (
    "潮汐主要由月球的引力引起，太阳的引力也有影响。"
    "大潮发生在新月和满月时，此时太阳、地球和月球位于一条直线上。"
    "小潮发生在上弦月和下弦月时。"
)


def hit_in_document(text: str, number: int, start: int = 100) -> tuple[SearchHit, str]:
    """A hit whose chunk sits at `start` inside a longer document text."""
    document = "x" * start + text + "\n\nAppendix: unrelated closing words."
    hit = SearchHit(
        chunk_id=number * 10,
        document_id=number,
        path=f"docs/source{number}.md",
        title=f"Source {number}",
        text=text,
        start=start,
        end=start + len(text),
        page=number,
    )
    return hit, document


Sources = tuple[list[SearchHit], list[str]]  # hits and their document texts


@pytest.fixture
def sources() -> Sources:
    pairs = [hit_in_document(FRESNEL, 1, 100), hit_in_document(TIDES, 2, 37), hit_in_document(COFFEE, 3, 0)]
    return [hit for hit, _ in pairs], [document for _, document in pairs]


def test_copied_sentence_is_cited_with_a_verbatim_quote_and_document_span(sources: Sources) -> None:
    hits, documents = sources
    result = CitationChecker(hits).check("The Fresnel lens was invented by Augustin-Jean Fresnel in 1822.")
    assert result.supported and result.is_claim and not result.flagged
    assert not result.corrected and result.model_markers == []
    [citation] = result.citations
    assert citation.number == 1
    assert (citation.chunk_id, citation.document_id, citation.path, citation.page) == (
        10,
        1,
        "docs/source1.md",
        1,
    )
    assert citation.quote == (
        "The Fresnel lens was invented by the French physicist Augustin-Jean Fresnel in 1822."
    )
    assert citation.quote in FRESNEL
    assert documents[0][citation.start : citation.end] == citation.quote
    assert citation.start == 100
    assert citation.score >= DEFAULT_THRESHOLD


@pytest.mark.parametrize("embedder", [None, HashingEmbedder()], ids=["lexical", "hashing"])
def test_paraphrase_is_cited_to_the_right_sentence(sources: Sources, embedder: Embedder | None) -> None:
    hits, documents = sources
    result = CitationChecker(hits, embedder).check("The tides come from the gravity of the Moon and the Sun.")
    assert result.supported
    [citation] = result.citations
    assert citation.number == 2
    assert citation.quote.startswith("Tides are the regular rise and fall")
    assert documents[1][citation.start : citation.end] == citation.quote


@pytest.mark.parametrize("embedder", [None, HashingEmbedder()], ids=["lexical", "hashing"])
def test_fabricated_sentence_is_unsupported(sources: Sources, embedder: Embedder | None) -> None:
    result = CitationChecker(sources[0], embedder).check(
        "Tides are caused mainly by strong winds blowing across the ocean [2]."
    )
    assert not result.supported and result.flagged
    assert result.citations == []
    assert result.model_markers == [2] and result.corrected
    assert result.text == "Tides are caused mainly by strong winds blowing across the ocean."


def test_wrong_number_is_unsupported() -> None:
    hit, _ = hit_in_document(FRESNEL, 1)
    result = CitationChecker([hit]).check("The Fresnel lens was invented in 1823.")
    assert not result.supported


def test_wrong_model_marker_is_corrected(sources: Sources) -> None:
    result = CitationChecker(sources[0]).check("Fresnel lenses were first used in lighthouses [2].")
    assert result.supported and result.corrected
    assert result.model_markers == [2]
    assert [citation.number for citation in result.citations] == [1]


def test_out_of_range_marker_is_corrected(sources: Sources) -> None:
    result = CitationChecker(sources[0]).check("Coffee plants are native to tropical Africa.[7]")
    assert result.corrected and [citation.number for citation in result.citations] == [3]


def test_correct_model_marker_is_kept(sources: Sources) -> None:
    result = CitationChecker(sources[0]).check("Neap tides have the smallest range [2].")
    assert result.supported and not result.corrected
    assert [citation.number for citation in result.citations] == [2]


def test_only_supporting_markers_survive(sources: Sources) -> None:
    result = CitationChecker(sources[0]).check(
        "Robusta beans contain twice as much caffeine as arabica [1][3]."
    )
    assert result.corrected and [citation.number for citation in result.citations] == [3]


def test_equal_sources_corroborate_in_rank_order() -> None:
    first, _ = hit_in_document(TIDES, 1)
    second, _ = hit_in_document(TIDES, 2)
    result = CitationChecker([first, second]).check("Neap tides have the smallest range.")
    assert [citation.number for citation in result.citations] == [1, 2]


def test_corroborating_sources_are_capped_and_weaker_ones_left_out() -> None:
    copies = [hit_in_document(TIDES, number)[0] for number in range(1, 6)]
    result = CitationChecker(copies).check("Neap tides have the smallest range.")
    assert [citation.number for citation in result.citations] == [1, 2, 3]
    weaker, _ = hit_in_document("Neap tides happen at the quarter moons.", 2)
    result = CitationChecker([copies[0], weaker]).check("Neap tides have the smallest range.")
    assert [citation.number for citation in result.citations] == [1]


def test_a_checked_model_marker_leads_and_corroboration_follows() -> None:
    first, _ = hit_in_document(TIDES, 1)
    second, _ = hit_in_document(TIDES, 2)
    result = CitationChecker([first, second]).check("Neap tides have the smallest range [2].")
    assert [citation.number for citation in result.citations] == [2, 1]
    assert not result.corrected


def test_claim_joining_two_source_sentences_cites_both() -> None:
    hit, document = hit_in_document(FRESNEL, 1, 42)
    result = CitationChecker([hit]).check(
        "Augustin-Jean Fresnel invented the lens in 1822, and its concentric grooves make it thinner."
    )
    [citation] = result.citations
    assert citation.quote.startswith("The Fresnel lens was invented") and citation.quote.endswith(
        "focal length."
    )
    assert document[citation.start : citation.end] == citation.quote


@pytest.mark.parametrize(
    "text",
    [
        "Sure.",
        "Yes, it is!",
        "Here is the answer:",
        NO_ANSWER,
        "[1]",
        "Who invented the Fresnel lens [1]?",
        "The document contains the following information: [2]",
        "菲涅耳透镜是谁发明的？",
    ],
)
def test_sentences_without_claims_are_neither_cited_nor_flagged(sources: Sources, text: str) -> None:
    result = CitationChecker(sources[0]).check(text)
    assert not result.is_claim and not result.flagged
    assert not result.supported and result.citations == []


def test_short_claim_without_support_is_flagged(sources: Sources) -> None:
    result = CitationChecker(sources[0]).check("Bananas.")
    assert result.is_claim and result.flagged and result.citations == []


@pytest.mark.parametrize("embedder", [None, HashingEmbedder()], ids=["lexical", "hashing"])
def test_chinese_answer_is_split_and_cited(embedder: Embedder | None) -> None:
    hit, document = hit_in_document(TIDES_ZH, 1, 100)
    checker = CitationChecker([hit], embedder)
    first, second = checker.check_all("潮汐由月球引力引起。大潮发生在新月和满月时[1]。")
    assert first.text == "潮汐由月球引力引起。" and second.text == "大潮发生在新月和满月时。"
    assert first.citations[0].quote == "潮汐主要由月球的引力引起，太阳的引力也有影响。"
    assert second.citations[0].quote == "大潮发生在新月和满月时，此时太阳、地球和月球位于一条直线上。"
    for sentence in (first, second):
        citation = sentence.citations[0]
        assert document[citation.start : citation.end] == citation.quote
    assert not checker.check("潮汐是由海底火山喷发造成的。").supported


def test_cjk_text_is_scored_by_character_bigrams() -> None:
    assert set(content_terms("月球引力")) == {"月球", "球引", "引力"}
    assert set(content_terms("Fresnel 透镜 1822")) == {"fresnel", "透镜", "1822"}


def test_candidates_are_embedded_once_when_first_needed(sources: Sources) -> None:
    embedder = HashingEmbedder()
    checker = CitationChecker(sources[0], embedder)
    spans = checker.sentence_spans(vectors=False)  # what evidence selection reads beside a reader
    assert spans and embedder.calls == [] and all(span.vector is None for span in spans)
    checker.check("Neap tides have the smallest range.")
    embedded = sum(len(batch) for batch in embedder.calls)
    assert embedded > 9 + 1  # every sentence of the three sources, adjacent pairs, the sentence
    checker.check_all("Neap tides have the smallest range. Coffee plants come from tropical Africa.")
    assert sum(len(batch) for batch in embedder.calls) == embedded + 2
    assert all(span.vector is not None for span in checker.sentence_spans())


# The calibration set behind DEFAULT_THRESHOLD: copied or paraphrased claims must reach it,
# fabricated claims sharing a few words with the sources must not.
SUPPORTED = [
    "The Fresnel lens was invented by Augustin-Jean Fresnel in 1822.",
    "Fresnel lenses were first used in lighthouses.",
    "A Fresnel lens is thinner and lighter than a conventional lens because it uses concentric grooves.",
    "Lighthouse beams from Fresnel lenses could be seen more than 20 miles away.",
    "Augustin-Jean Fresnel, a French physicist, created the lens in 1822.",
    "Thanks to its concentric grooves, the lens is far thinner than an ordinary lens.",
    "Tides are caused by the gravitational pull of the Moon and the Sun.",
    "The tides come from the gravity of the Moon and the Sun.",
    "Spring tides happen at new and full moon, when the Sun, Moon and Earth are aligned.",
    "Neap tides have the smallest range.",
    "At first and third quarter moons the tidal range is smallest.",
    "Robusta beans contain about twice as much caffeine as arabica.",
    "Robusta has roughly double the caffeine of arabica.",
    "Coffee beans are the roasted seeds of the coffee cherry.",
    "Coffee plants come from tropical Africa.",
]
FABRICATED = [
    "The Fresnel lens was invented by Thomas Edison in 1879.",
    "Fresnel lenses are mainly used today in smartphone cameras.",
    "Tides are caused mainly by strong winds blowing across the ocean.",
    "Spring tides only occur during the spring season in the northern hemisphere.",
    "Neap tides cause flooding in coastal cities every month.",
    "Coffee was first brewed by monks in Ethiopia in the 9th century.",
    "The lighthouse at Alexandria was built around 280 BC.",
    "Robusta is grown mostly in Brazil and Vietnam.",
]
# One content word swapped in an otherwise copied sentence: beyond lexical overlap.
SWAPPED_WORD = [
    "Fresnel also invented the telescope in 1822.",
    "Coffee cherries are eaten raw in tropical Africa.",
]


@pytest.mark.parametrize("embedder", [None, HashingEmbedder()], ids=["lexical", "hashing"])
def test_default_threshold_separates_the_calibration_set(sources: Sources, embedder: Embedder | None) -> None:
    checker = CitationChecker(sources[0], embedder)
    supported = {text: checker.check(text).score for text in SUPPORTED}
    fabricated = {text: checker.check(text).score for text in FABRICATED}
    assert min(supported.values()) >= DEFAULT_THRESHOLD, supported
    assert max(fabricated.values()) < DEFAULT_THRESHOLD, fabricated
    # Keep a margin so small scoring changes show up here rather than in users' answers.
    assert min(supported.values()) - max(fabricated.values()) > 0.1


@pytest.mark.xfail(strict=True, reason="without a support judge a swapped word passes; see test_entailment")
@pytest.mark.parametrize("text", SWAPPED_WORD)
def test_swapped_content_word_is_a_known_miss(sources: Sources, text: str) -> None:
    assert not CitationChecker(sources[0]).check(text).supported


def test_render_markdown_places_footnotes_before_the_final_punctuation(sources: Sources) -> None:
    checker = CitationChecker(sources[0])
    answer = (
        "Sure. The Fresnel lens was invented by Augustin-Jean Fresnel in 1822 [2]. "
        "Neap tides have the smallest range.[2] Bananas are blue!"
    )
    assert render_markdown(checker.check_all(answer)) == (
        "Sure. The Fresnel lens was invented by Augustin-Jean Fresnel in 1822 [1]. "
        "Neap tides have the smallest range [2]. Bananas are blue!"
    )


def test_render_markdown_handles_cjk_items_and_several_citations() -> None:
    hit, _ = hit_in_document(TIDES_ZH, 1)
    checker = CitationChecker([hit])
    assert render_markdown(checker.check_all("潮汐由月球引力引起。大潮发生在新月和满月时。")) == (
        "潮汐由月球引力引起[1]。大潮发生在新月和满月时[1]。"
    )
    items = [
        AnswerSentence("- first point", [], True, [], False),
        AnswerSentence("- second point", [], False, [], False),
        AnswerSentence("Done", [], False, [], False),
    ]
    assert render_markdown(items) == "- first point\n- second point\nDone"
    both = CitationChecker([hit, hit]).check("小潮发生在上弦月和下弦月时[1][2]。")
    assert render_markdown([both]) == "小潮发生在上弦月和下弦月时[1][2]。"


TESLA = "Tesla's revenue in Q1 2021 was $10.4 billion, up 74% from a year earlier."
OLYMPICS = (
    "The 2022 Winter Olympics were held in Beijing. Norway won the most medals at the 2018 Winter Olympics."
)


@pytest.mark.parametrize("embedder", [None, HashingEmbedder()], ids=["lexical", "with embedder"])
def test_an_answer_fragment_is_checked_as_the_question_completes_it(embedder: Embedder | None) -> None:
    hits = [hit_in_document(TESLA, 1)[0], hit_in_document(OLYMPICS, 2)[0]]
    fragment = "The answer is: 2022."

    # Alone, "2022" is found in the Olympics source, which says nothing about Tesla's revenue.
    alone = CitationChecker(hits, embedder).check(fragment)
    assert [c.number for c in alone.citations] == [2]

    question = "What was Tesla's revenue in Q1 2021?"
    completed = CitationChecker(hits, embedder, question=question).check(fragment)
    assert completed.flagged and completed.citations == []
    assert completed.text == fragment  # the sentence is kept as written, only its check changes


def test_a_fragment_the_source_completes_is_cited() -> None:
    hits = [hit_in_document(TESLA, 1)[0], hit_in_document(OLYMPICS, 2)[0]]
    question = "Which country won the most medals at the 2018 Winter Olympics?"

    result = CitationChecker(hits, HashingEmbedder(), question=question).check("Norway [1].")

    assert result.supported and [c.number for c in result.citations] == [2]
    assert result.corrected  # the model's [1] pointed at the Tesla source
    assert result.citations[0].quote == "Norway won the most medals at the 2018 Winter Olympics."


def test_a_whole_sentence_is_checked_on_its_own_words(sources: Sources) -> None:
    hits, _ = sources
    sentence = "Fresnel lenses were first used in lighthouses."
    plain = CitationChecker(hits).check(sentence)
    asked = CitationChecker(hits, question="What causes the tides?").check(sentence)
    assert plain == asked and plain.supported


def test_the_question_is_embedded_once_for_every_score_that_uses_it(sources: Sources) -> None:
    embedder = HashingEmbedder()
    question = "Who invented the Fresnel lens?"
    checker = CitationChecker(sources[0], embedder, question=question)
    match = checker.question_match(question)
    quote = checker.extract(question)
    assert quote is not None and match > 0
    assert checker.question_relevance(question, quote.citations) > 0
    assert sum(batch == [question] for batch in embedder.calls) == 1
