"""Evidence selection, the extract reader, and the checker's rule that an answer must add something."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from footnote.answer import evidence
from footnote.answer.asks import agreement, answerability, asked_kinds, holds_asked_token
from footnote.answer.citations import AnswerSentence, Citation, CitationChecker
from footnote.answer.evidence import DENSE_WEIGHT, score_sentences, select_passages, with_similarity
from footnote.answer.prompt import EVIDENCE_PROMPT, NO_ANSWER
from footnote.answer.render import render_markdown
from footnote.answer.result import DoneEvent, SentenceEvent, SourcesEvent, TokenEvent
from footnote.answer.sentence_spans import sentence_spans
from footnote.answer.streaming import with_quote
from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.core.hits import SearchHit
from tests.fakes import HashingEmbedder, ScriptedGenerator

SFTP = """     -B buffer_size
             Specify the size of the buffer that sftp uses when transferring
             files.  Larger buffers require fewer round trips at the cost of
             higher memory consumption.  The default is 32768 bytes.

     -b batchfile
             Batch mode reads a series of commands from an input batchfile
             instead of stdin.
"""
TAR_EXIT = """# Exit status

Tar's exit code tells whether it could perform the requested operation.

| status | meaning |
|---|---|
| 0 | Successful termination. |
| 1 | Some files differ. |
| 2 | Fatal error. |
"""
MIDI = "The audio/midi MIME type has an alias of audio/x-midi, which older programs write."


def hit(text: str, number: int = 1, path: str = "doc.txt") -> SearchHit:
    return SearchHit(number, number, path, path, text, 0, len(text))


def best_passage_text(question: str, hits: list[SearchHit]) -> str:
    embedder = HashingEmbedder()
    spans = sentence_spans(hits)
    vectors = embedder.embed_many([hits[s.source].text[s.start : s.end] for s in spans])
    spans = [
        type(s)(s.source, s.position, s.start, s.end, s.terms, v, s.paragraph, s.block)
        for s, v in zip(spans, vectors, strict=True)
    ]
    texts = [hits[s.source].text[s.start : s.end] for s in spans]
    scores = score_sentences(question, spans, embedder.embed(question), texts)
    passages = select_passages(hits, spans, scores, lambda text: len(text.split()), 120)
    return passages[0].text(hits)


MANUAL_OPTIONS = """\
       -u, --unbuffered

              load minimal amounts of data from the input files and flush the
              output buffers more often

       -z, --null-data

              separate lines by NUL characters

       --help
              display this help and exit
"""


def test_an_options_description_is_quoted_with_the_option_line_set_above_it() -> None:
    hits = [hit(MANUAL_OPTIONS)]
    spans = sentence_spans(hits)
    texts = [MANUAL_OPTIONS[s.start : s.end] for s in spans]
    line, description = (texts.index(t) for t in ("-z, --null-data", "separate lines by NUL characters"))
    # Separate paragraphs (the reader's lead-in and the blend's context stay per paragraph), one block.
    assert spans[line].paragraph != spans[description].paragraph
    assert spans[line].block == spans[description].block != spans[-1].block
    scores = [1.0 if i == description else 0.0 for i in range(len(spans))]
    passages = select_passages(hits, spans, scores, lambda text: len(text.split()), 120)
    assert passages[0].text(hits).startswith("-z, --null-data")
    assert "--unbuffered" not in passages[0].text(hits) and "--help" not in passages[0].text(hits)


KEYGEN_ROUNDS = """\
     -a rounds
             When saving a private key, this option specifies the number of
             KDF (key derivation function) rounds used.  Higher numbers
             result in slower passphrase verification.  The default is 16
             rounds.

     -B      Show the bubblebabble digest of specified private or public key
             file.
"""


def test_a_passage_grows_within_its_block_to_the_default_two_sentences_below_its_best() -> None:
    hits = [hit(KEYGEN_ROUNDS)]
    spans = sentence_spans(hits)
    texts = [KEYGEN_ROUNDS[s.start : s.end] for s in spans]
    best = next(i for i, t in enumerate(texts) if t.startswith("-a rounds"))
    scores = [1.0 if i == best else 0.0 for i in range(len(spans))]

    (passage, *_) = select_passages(hits, spans, scores, lambda text: len(text.split()), 120)

    assert passage.text(hits).startswith("-a rounds") and passage.text(hits).endswith(
        "16\n             rounds."
    )
    assert "bubblebabble" not in passage.text(hits)
    (short, *_) = select_passages(hits, spans, scores, lambda text: len(text.split()), 30)
    assert "The default is 16" not in short.text(hits)


def test_a_prose_paragraph_on_one_line_is_quoted_one_sentence_each_way() -> None:
    prose = (
        "Tides rise twice a day. The Moon pulls the sea. Spring tides are large. "
        "Neap tides are small. Ships wait."
    )
    hits = [hit(prose)]
    spans = sentence_spans(hits)
    scores = [1.0 if i == 2 else 0.0 for i in range(len(spans))]

    (passage, *_) = select_passages(hits, spans, scores, lambda text: len(text.split()), 120)

    assert passage.text(hits) == "The Moon pulls the sea. Spring tides are large. Neap tides are small."


def test_the_answer_sentence_after_the_option_line_is_selected() -> None:
    text = best_passage_text("What buffer size does sftp use for transfers unless -B is given?", [hit(SFTP)])
    assert "32768 bytes" in text


JSON_TOOL = """The json.tool module checks and pretty-prints JSON.

Using json.tool from the shell to validate and pretty-print:

    $ echo '{"json":"obj"}' | python -m json.tool

Other options are listed below.
"""


def test_a_lead_in_takes_the_example_it_leads_in_to() -> None:
    text = best_passage_text(
        "How do you validate and pretty-print JSON from the shell with json.tool?", [hit(JSON_TOOL)]
    )
    assert "python -m json.tool" in text and "Other options" not in text


def test_a_table_row_holding_the_asked_value_is_selected() -> None:
    text = best_passage_text("What does exit status 2 of tar mean?", [hit(TAR_EXIT)])
    assert "Fatal error" in text


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("How many rounds does ssh-keygen use?", {"number"}),
        ("In which findutils version did find gain -delete?", {"version"}),
        ("In what year was Expat first released?", {"year"}),
        ("Which tar option pipes the archive through xz?", {"code"}),
        ("Who wrote the original sed?", {"name"}),
        ("What algorithm does sortedIndex use?", set()),
    ],
)
def test_questions_say_what_kind_of_token_answers_them(question: str, kinds: set[str]) -> None:
    assert asked_kinds(question) == kinds


def test_a_section_number_is_not_the_number_asked_for() -> None:
    question = "How many entries does Valgrind show in each stack trace?"
    kinds = asked_kinds(question)
    assert not holds_asked_token("4. Valgrind behaves unexpectedly", question, kinds)
    assert holds_asked_token("Valgrind shows 12 entries by default.", question, kinds)


def test_answerability_needs_a_sentence_holding_the_kind_asked_for() -> None:
    hits = [hit(SFTP)]
    spans = sentence_spans(hits)
    texts = [SFTP[s.start : s.end] for s in spans]
    asked = answerability("What buffer size does sftp use by default?", spans, texts)
    absent = answerability("How many batch files can sftp read in batch mode?", spans, texts)
    assert asked > absent


def test_a_procedure_told_in_words_is_not_held_to_code_but_a_number_still_is() -> None:
    steps = "Boil the water and let it rest. Grind the beans coarsely. Pour the water and wait."
    hits = [hit(steps)]
    spans = sentence_spans(hits)
    texts = [steps[s.start : s.end] for s in spans]
    question = "How do I brew coffee: boil the water, grind the beans, pour?"
    assert answerability(question, spans, texts) == 0.0  # a single fact's "how do I" asks for code
    assert answerability(question, spans, texts, prose=True) > 0.2
    counted = "How many grams of beans does brewing coffee take: boil, grind, pour?"
    assert answerability(counted, spans, texts, prose=True) == 0.0


SCP_PORT = """     -P port
             Specifies the port to connect to on the remote host.  Note that
             this option is written with a capital 'P', because -p is already
             reserved for preserving the times and mode bits of the file.
             Since version 9.0 at most 2 jump hosts are tried.
"""


def test_a_question_asking_for_a_default_needs_a_passage_that_states_one() -> None:
    answered = [hit(SFTP)]
    spans = sentence_spans(answered)
    texts = [SFTP[s.start : s.end] for s in spans]
    assert answerability("What buffer size does sftp use unless -B is given?", spans, texts) > 0.2
    # The option is described and a number stands near it, but no default is stated.
    silent = [hit(SCP_PORT)]
    spans = sentence_spans(silent)
    texts = [SCP_PORT[s.start : s.end] for s in spans]
    assert answerability("Which port does scp connect to when -P is not given?", spans, texts) == 0.0
    assert answerability("Which port does scp connect to?", spans, texts) > 0.0


def test_a_value_other_sources_also_hold_counts_as_agreed() -> None:
    question = "How many rounds does the key derivation use by default?"
    texts = [
        "The default is 16 rounds.",  # source 0
        "Older releases used 64 rounds.",  # source 1: a value no other source holds
        "Without -a, keys are saved with 16 rounds.",  # source 2 agrees with source 0
        "Keys are saved in the new format.",  # source 3: no value at all
    ]
    shares = agreement(question, [0, 1, 2, 3], texts)
    assert shares == [1 / 3, 0.0, 1 / 3, 0.0]
    # Sentences of one source do not agree with each other.
    assert agreement(question, [0, 0], texts[:1] * 2) == [0.0, 0.0]
    # A capitalised function word is no name, however many sources start a sentence with it.
    named = ["However, Murray won.", "However, Djokovic lost."]
    assert agreement("Who won Wimbledon in 2013?", [0, 1], named) == [0.0, 0.0]
    # A question asking for no kind of value has nothing to agree on.
    assert agreement("Why are keys saved?", [0, 2], [texts[0], texts[2]]) == [0.0, 0.0]


def test_a_sentence_that_restates_the_question_is_not_supported() -> None:
    checker = CitationChecker(
        [hit(MIDI)], HashingEmbedder(), question="What alias does the audio/midi MIME type have?"
    )
    restated = checker.check('The audio/midi MIME type has the alias "audio/midi" [1].')
    assert not restated.supported and restated.flagged and not restated.citations
    answered = checker.check("The audio/midi MIME type has the alias audio/x-midi [1].")
    assert answered.supported and answered.citations[0].number == 1


def test_a_wrong_value_beside_a_right_quote_is_flagged() -> None:
    checker = CitationChecker([hit(SFTP)], HashingEmbedder(), question="What buffer size does sftp use?")
    wrong = checker.check("The default buffer size is 65536 bytes [1].")
    assert wrong.flagged and not wrong.citations
    right = checker.check("The default buffer size is 32768 bytes [1].")
    assert right.supported and "32768 bytes" in right.citations[0].quote


def test_a_value_copied_from_a_table_row_cites_that_row() -> None:
    checker = CitationChecker(
        [hit(TAR_EXIT)], HashingEmbedder(), question="What does tar's exit status 2 mean?"
    )
    sentence = checker.check("Exit status 2 means a fatal error [1].")
    assert sentence.supported
    quote = sentence.citations[0].quote
    assert "Fatal error" in quote and "Some files differ" not in quote


# --- the extract reader end to end on real SQLite and Chroma -------------------------------


@pytest.fixture
def extract_app(tmp_path: Path) -> Iterator[Application]:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "sftp.txt").write_text(SFTP, encoding="utf-8")
    (folder / "tar.md").write_text(TAR_EXIT, encoding="utf-8")
    # The extract reader's own logic, with the hand-weighted blend alone choosing (the trained
    # reader's choices are measured in benchmarks and in tests/integration/test_reader_answers.py),
    # for single facts: broad answers are tests/unit/test_points.py's.
    settings = Settings(
        home=tmp_path / "home",
        reader="extract",
        relevance_floor=0.0,
        sentence_reader="off",
        broad_answers=False,
    )
    app = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([]))
    app.ingest([folder])
    yield app
    app.close()


def test_the_extract_reader_quotes_the_row_and_generates_nothing(extract_app: Application) -> None:
    answer = extract_app.ask("What does exit status 2 of tar mean?")
    assert answer.extracted and not answer.abstained
    citation = answer.citations[0]
    assert "Fatal error" in citation.quote
    document = Path(citation.path).read_text(encoding="utf-8")
    assert document[citation.start : citation.end] == citation.quote
    assert answer.text.endswith("[1]") or "[1]" in answer.text


def test_streaming_equals_the_whole_answer(extract_app: Application) -> None:
    question = "What buffer size does sftp use for transfers unless -B is given?"
    events = list(extract_app.ask_stream(question))
    assert isinstance(events[0], SourcesEvent) and isinstance(events[-1], DoneEvent)
    streamed = [event.sentence for event in events if isinstance(event, SentenceEvent)]
    whole = extract_app.ask(question)
    assert render_markdown(streamed) == whole.text == events[-1].answer.text
    assert "32768 bytes" in whole.text


def test_below_the_evidence_floor_it_declines_and_shows_the_sources(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "sftp.txt").write_text(SFTP, encoding="utf-8")
    settings = Settings(home=tmp_path / "home", reader="extract", relevance_floor=0.0, evidence_floor=0.9)
    app = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([]))
    try:
        app.ingest([folder])
        answer = app.ask("How many batch files can sftp read at once?")
    finally:
        app.close()
    assert answer.abstained and answer.text == NO_ANSWER and answer.sources
    assert answer.answerability < 0.9


def test_the_evidence_reader_shows_the_model_only_selected_passages(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "sftp.txt").write_text(SFTP, encoding="utf-8")
    generator = ScriptedGenerator(["The default is 32768 bytes [1]."])
    # The blend alone chooses the passage: the trained reader's int8 scores differ a little by CPU
    # kind (VNNI and AMX kernels against AVX2 ones), enough to swap two close sentences here.
    settings = Settings(home=tmp_path / "home", reader="evidence", relevance_floor=0.0, sentence_reader="off")
    app = create_app(settings, embedder=HashingEmbedder(), generator=generator)
    try:
        app.ingest([folder])
        answer = app.ask("What buffer size does sftp use unless -B is given?")
    finally:
        app.close()
    system, user = generator.calls[0][0].content, generator.calls[0][-1].content
    assert system == EVIDENCE_PROMPT and user.startswith("Evidence:") and "32768" in user
    assert answer.prompt_tokens > 0
    # The model's sentence says nothing the quoted passage does not: it is not shown twice.
    assert [s.supported for s in answer.sentences] == [True]
    assert "32768" in answer.sentences[0].text and answer.extracted


# --- where the best passage's quote goes ----------------------------------------------------


def _sentence(text: str, numbers: list[int], supported: bool = True) -> AnswerSentence:
    citations = [Citation(n, n, n, f"doc{n}.txt", text, 0, len(text), None, 0.9) for n in numbers]
    return AnswerSentence(text, citations, supported, numbers, corrected=False)


def _placed(model: list[AnswerSentence], quote: AnswerSentence) -> list[str]:
    sentences: list[AnswerSentence] = []
    events = [TokenEvent("x")] + [SentenceEvent(i, s) for i, s in enumerate(model)]

    def corroborates(quote: AnswerSentence, sentence: AnswerSentence) -> bool:
        return "32768" in quote.text and "32768" in sentence.text

    out = list(with_quote(iter(events), [quote], sentences, corroborates))
    streamed = [event for event in out if isinstance(event, SentenceEvent)]
    # Every sentence is kept; one no source supports is never streamed.
    assert [sentences[event.index] for event in streamed] == [event.sentence for event in streamed]
    assert [event.sentence for event in streamed] == [s for s in sentences if not s.flagged]
    assert isinstance(out[0], TokenEvent)  # tokens are not held back
    return [sentence.text for sentence in sentences]


def test_the_quote_goes_first_when_the_answer_rests_on_its_passage_or_on_none() -> None:
    quote = _sentence("The default is 32768 bytes.", [1])
    same = _sentence("sftp uses 32768 bytes.", [1])
    unsupported = _sentence("It uses a large buffer.", [], supported=False)
    both = _sentence("Both say 32768.", [1, 2])
    assert _placed([same], quote) == [quote.text, same.text]
    assert _placed([unsupported], quote) == [quote.text, unsupported.text]
    assert _placed([both], quote) == [quote.text, both.text]
    assert _placed([], quote) == [quote.text]  # the model wrote nothing: the quote is the answer


def test_a_quote_the_answer_does_not_rest_on_is_dropped_unless_it_holds_the_answer() -> None:
    quote = _sentence("Lighthouses used whale oil.", [1])
    elsewhere = _sentence("Augustin Fresnel invented the lens.", [2])
    later = _sentence("He was French.", [1])
    assert _placed([elsewhere, later], quote) == [elsewhere.text, later.text]
    holding = _sentence("The default is 32768 bytes.", [1])
    also = _sentence("Its buffer is 32768 bytes.", [2])
    assert _placed([also], holding) == [holding.text, also.text]


def test_a_quote_corroborates_a_sentence_that_adds_nothing_beyond_it() -> None:
    checker = CitationChecker([hit(SFTP)], HashingEmbedder(), question="What buffer size does sftp use?")
    quote = _sentence("The default is 32768 bytes.", [1])
    assert checker.corroborates(quote, _sentence("sftp uses 32768 bytes by default.", [2]))
    assert not checker.corroborates(quote, _sentence("sftp uses 65536 bytes.", [2]))


def test_the_model_is_stopped_after_its_two_sentences(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "sftp.txt").write_text(SFTP, encoding="utf-8")
    reply = (
        "The buffer is 32768 bytes unless -B is given [1]. It is set with -B [1]. "
        "Tar exits with 2 on a fatal error [1]."
    )
    settings = Settings(home=tmp_path / "home", reader="evidence", relevance_floor=0.0, reader_floor=0.0)
    app = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([reply]))
    try:
        app.ingest([folder])
        events = list(app.ask_stream("What buffer size does sftp use unless -B is given?"))
    finally:
        app.close()
    done = events[-1]
    assert isinstance(done, DoneEvent)
    sentences = [sentence.text for sentence in done.answer.sentences]
    tokens = "".join(event.text for event in events if isinstance(event, TokenEvent))
    assert "The default is 32768 bytes." in sentences[0]
    # The quoted passages come first, then the model's two sentences (kept, shown or not) and no third.
    assert sentences[-2:] == ["The buffer is 32768 bytes unless -B is given.", "It is set with -B."]
    assert "fatal error" not in tokens  # the model was stopped, not only its sentence hidden


def test_the_evidence_reader_streams_what_it_answers(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "sftp.txt").write_text(SFTP, encoding="utf-8")
    (folder / "tar.md").write_text(TAR_EXIT, encoding="utf-8")
    reply = "The buffer is 32768 bytes unless -B is given [1]."
    generator = ScriptedGenerator([reply, reply])
    # Streaming is under test, not declining: the coverage floor decides, as without a reader.
    settings = Settings(home=tmp_path / "home", reader="evidence", relevance_floor=0.0, reader_floor=0.0)
    app = create_app(settings, embedder=HashingEmbedder(), generator=generator)
    try:
        app.ingest([folder])
        question = "What buffer size does sftp use unless -B is given?"
        events = list(app.ask_stream(question))
        whole = app.ask(question)
    finally:
        app.close()
    streamed = [event.sentence for event in events if isinstance(event, SentenceEvent)]
    assert [event.index for event in events if isinstance(event, SentenceEvent)] == list(range(len(streamed)))
    assert render_markdown(streamed) == whole.text == events[-1].answer.text
    assert "32768 bytes" in whole.text and whole.citations


def test_the_readers_probability_joins_the_scores_of_what_it_read() -> None:
    joined = evidence.with_reader([0.5, 0.4, 0.3], [0.0, 30.0, -30.0], weight=0.5)

    assert joined[0] == pytest.approx(0.75)
    assert joined[1] == pytest.approx(0.9)
    assert joined[2] == pytest.approx(0.3)


def test_similarity_joins_the_scores_of_the_best_sentences_only() -> None:
    embedded: list[str] = []

    def embed_many(texts: list[str]) -> list[list[float]]:
        embedded.extend(texts)
        return [[1.0, 0.0] if "lens" in text else [0.0, 1.0] for text in texts]

    scores = with_similarity(
        [0.5, 0.9, 0.1], ["a lens", "a tide", "a lens too"], [1.0, 0.0], embed_many, most=2
    )
    assert embedded == ["a tide", "a lens"]  # the third is not embedded before the quote
    assert scores == [0.5 + DENSE_WEIGHT, 0.9, 0.1]
