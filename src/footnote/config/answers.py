"""Settings of answering: the answer cache, the support judge, the floors below which footnote
declines, broad answers, the readers, answers across languages and related questions. Part of
`footnote.config.Settings`, read from `FOOTNOTE_*` like the rest.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class AnswerSettings(BaseModel):
    """How a question is read, answered, checked and declined."""

    # --- answer cache (near-duplicate questions) ---------------------------------------------
    answer_cache_size: int = Field(0, ge=0, le=1_000_000, description="answers kept; 0 turns the cache off")
    answer_cache_ttl: float = Field(600.0, gt=0, description="seconds a cached answer stays valid")
    answer_cache_threshold: float = Field(
        0.9, gt=0.0, le=1.0, description="cosine similarity above which two questions are one"
    )
    # --- support judge (off by default: no bundled model; see `footnote eval answers`) ---------
    judge: str | None = Field(
        None,
        description="a model that re-checks each citation: a CrossEncoder folder or cached id (NLI or "
        "one-score), or llm:<model> for an LLM's P(Yes); empty: word overlap and embeddings alone",
    )
    judge_threshold: float = Field(
        0.5, ge=0.0, le=1.0, description="support probability a judged citation needs to be kept"
    )
    # The older names of the two above, still read so that existing configurations keep working;
    # where both are given, the new name wins.
    verify_model: str | None = Field(None, description="the older name of judge")
    verify_threshold: float | None = Field(
        None, ge=0.0, le=1.0, description="the older name of judge_threshold"
    )
    # --- abstention (thresholds chosen with `footnote eval answers --calibrate`) ---------------
    abstain_below: float = Field(
        0.0, ge=0.0, le=1.0, description="withhold answers whose cited spans match the question less; 0: off"
    )
    # Chosen with `footnote eval answers --run reading --run unrelated --calibrate` on RGB en_fact
    # (each question also given another question's passages): 0.2699 on the even-position half;
    # on the odd half it abstained on 1.00 of unrelated questions and 0.04 of answerable ones.
    relevance_floor: float = Field(
        0.27,
        ge=0.0,
        le=1.0,
        description="where the sentence reader does not decide declining (off, or not reading the "
        "question's language), below this match between the question and the best source span the "
        "sources are taken as unrelated: no answer is generated and the nearest sources are shown; 0: off",
    )
    history_turns: int = Field(
        3,
        ge=0,
        le=20,
        description="earlier turns of a conversation shown to the model (oldest dropped first)",
    )
    broad_answers: bool = Field(
        True,
        description="a question that needs several passages (a summary, a procedure, a list, a "
        "comparison: the shape model reads it from the question) is answered with those passages, "
        "each quoted in its document's order; off: every question gets the single-fact answer",
    )
    # 140 keeps broad-dev's answers near 150 words at the median; longer budgets find more of its
    # key points (docs/benchmarks.md, "Broad questions"). Where the reader rates many sentences
    # near its best, the answer takes their words, up to `point_words_most` (280: the answer, its
    # list marks and footnote markers with it, stays within 300 words): a margin of 4 logits
    # completes 22 of broad-dev's 38 broad questions against 20 at 140 words, and 20-21 with the
    # margin chosen by folds of documents (docs/benchmarks.md, "Points as long as the reader's
    # belief").
    point_words: int = Field(
        140,
        ge=20,
        le=2000,
        description="the words of the points a broad answer quotes (a CJK character counts as one), "
        "unless the reader rates more sentences near its best (FOOTNOTE_POINT_MARGIN)",
    )
    point_words_most: int = Field(
        280,
        ge=20,
        le=4000,
        description="the most words of a broad answer's points, however many sentences the reader "
        "rates near its best",
    )
    point_margin: float = Field(
        4.0,
        ge=0.0,
        le=50.0,
        description="a broad answer takes as many words as the sentences the reader scores within this "
        "many logits of its best one hold (at least FOOTNOTE_POINT_WORDS, at most "
        "FOOTNOTE_POINT_WORDS_MOST); 0: always FOOTNOTE_POINT_WORDS",
    )
    answer_shape: str = Field(
        "footnote",
        description="the shape model that tells broad questions: footnote (the one shipped in the "
        "repository, hash-checked) or a file written by `footnote train shape --out FILE`",
    )
    reader: Literal["evidence", "extract", "sources"] = Field(
        "evidence",
        description="evidence: the best evidence passage of the sources is shown first, verbatim, and the "
        "model, reading only the few selected passages, adds its answer, checked; extract: that passage "
        "alone, nothing generated; sources: the model reads the whole retrieved chunks (for large models)",
    )
    # On by default: read with the blend, it puts the answer in the quoted passage more often on
    # technical documents and on Wikipedia alike (docs/benchmarks.md, "The sentence reader").
    sentence_reader: str = Field(
        "footnote",
        description="the model that reads the best sentences of the retrieved chunks and joins the choice "
        "of the quoted passage: footnote (the reader shipped in the repository, hash-checked), a folder "
        "written by `footnote train reader --out FOLDER`, or off (the hand-weighted blend alone)",
    )
    # Chosen on docqa-dev for the bundled reader's answer head (per fold by document 0.095 to 0.10:
    # declines 0.75 of the unanswerable questions at 0.11 false, where the evidence floor declines
    # 0.50; benchmarks/results/reader_blend-docqa-dev-reader-b-20261205-105223.json.xz, and the same
    # floor on squad2-dev in decline_floor-reader-answer-head-20261205-110619.json.xz).
    reader_floor: float = Field(
        0.10,
        ge=0.0,
        le=1.0,
        description="with the sentence reader on, below this answerability (the reader's probability that "
        "its sentences answer, against its no-answer candidate when it was trained with one, times the "
        "evidence floor's coverage) the documents are taken not to answer, in place of the evidence "
        "floor: footnote says so and shows the nearest sources; 0: the evidence floor decides",
    )
    # Chosen by benchmarks/across_languages.py: broad-dev's Chinese questions over the English
    # docqa-dev documents against 60 of rgb-zh-dev's Chinese questions over the same documents
    # (in sample none of the first declined, 0.98 of the second; by two folds by document 0.17
    # and 0.90 reading 10 chunks, 0.17 and 0.97 reading 5:
    # across_languages-zh-over-docqa-dev-20261206-233133.json.xz).
    across_language_floor: float = Field(
        0.855,
        ge=0.0,
        le=1.0,
        description="for a question in a language the sentence reader does not read, read beside "
        "the sources by the multilingual embedder (FOOTNOTE_LANGUAGE_EMBEDDER): below this "
        "similarity of its best sentence the documents are taken not to answer, in place of the "
        "evidence and relevance floors; 0: off (the multilingual embedder does not read, and those "
        "floors decide as for any question)",
    )
    # Chosen by benchmarks/english_over_chinese.py: rgb-zh-dev's questions in English over its
    # Chinese passages against docqa-dev's questions over them (in sample 0.08 false declines and
    # 0.40 of the second declined, by two folds 0.08 and 0.30:
    # english_over_chinese-rgb-zh-dev-20261207-074952.json.xz).
    foreign_sources_floor: float = Field(
        0.79,
        ge=0.0,
        le=1.0,
        description="for a question the sentence reader reads whose sources are mostly in a language it "
        "does not (an English question over Chinese documents), read beside them by the multilingual "
        "embedder: below this similarity of its best sentence the documents are taken not to answer",
    )
    # Chosen by benchmarks/across_languages.py: broad-dev's Chinese questions hold enough key
    # points in the first 5 retrieved chunks 0.50 of the time, in the first 10 0.75; key-point
    # recall 0.39 and 0.43 (across_languages-zh-over-docqa-dev-20261206-233133.json.xz).
    carry_questions: bool = Field(
        True,
        description="a question in a language the sentence reader does not read, over sources mostly in "
        "English, is put into English by the model that answers its language (FOOTNOTE_LANGUAGE_LLM) "
        "and then searched, read and answered as an English question, after a notice naming it; "
        "false: the multilingual embedder reads the question beside the English sentences",
    )
    # Measured by benchmarks/retell_check.py, retired (docs/benchmarks.md, "Answers retold in the asker's
    # language"): the round trip supports most of the model's translations and none put beside
    # another passage.
    retell_answers: bool = Field(
        True,
        description="a question carried into English is answered with the English quotes and then with "
        "the best-read quote put into the question's language by the model that answers it, shown only where "
        "the round trip supports it (put back into English, the English check supports it); false: the "
        "quotes alone",
    )
    across_language_sources: int = Field(
        10,
        ge=0,
        le=100,
        description="sources retrieved for a question the multilingual embedder reads in the sentence "
        "reader's place (in another language than most documents): the answer's passage is less often "
        "among the first few when the question's words cannot meet the documents'; 0: top_k",
    )
    evidence_tokens: int = Field(
        220, ge=32, le=4096, description="most tokens of selected evidence the evidence reader is shown"
    )
    # Chosen on docqa-dev (benchmarks/reading_docqa.py, retired; extract reader with both gates off): with
    # the relevance floor at 0.27 it declines 0.40 of the unanswerable questions and 0.087 of the
    # answerable ones; 0.34, chosen on half the questions for at most 10% false abstention, gave
    # 0.30 and 0.125 on the other half.
    evidence_floor: float = Field(
        0.2,
        ge=0.0,
        le=1.0,
        description="below this answerability (the best share of the question's terms covered by a "
        "source sentence holding the kind of token asked for) the documents are taken not to answer: "
        "footnote says so and shows the nearest sources; 0: off",
    )
    # On docqa-dev it declines 1 of the 20 unanswerable questions (u19: "APNG") and none of the
    # 80 answerable ones (benchmarks/evidence_model.py).
    decline_unknown_names: bool = Field(
        True,
        description="decline a question that names a word no document holds (an identifier, an option, or "
        "in English an all-capital or mixed-case word): footnote says the documents lack it and shows "
        "the nearest sources",
    )
    quote_above: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="when nothing the model wrote is supported, quote the best-matching source sentence "
        "only if it matches the question at least this well; otherwise say the documents lack the answer",
    )
    # --- related questions (one more generation after each answer) ----------------------------
    related_questions: bool = Field(
        False,
        description="suggest follow-up questions grounded in the sources after every answer "
        "(a request asks for them with return_related_questions or `ask --related`)",
    )
