"""The answer detail, `AnswerDetail`: the one typed shape of the HTTP API's `footnote` field,
its OpenAPI spec and `footnote ask --json`.

Its JSON is, byte for byte, the dict the server built by hand before the model existed
(`dict_before_the_model`, with `unsupported_sentences` added since: the claims no source supports,
never shown), for real answers of every kind: written with a flagged sentence, withheld, declined
as unrelated, and with the optional fields of sources filled in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from footnote.answer.citations import AnswerSentence
from footnote.answer.result import Answer, AnswerDetail
from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.core.hits import SearchHit
from tests.fakes import HashingEmbedder, ScriptedGenerator
from tests.unit.server_fixtures import APPLE_REPLY, build, write_corpus

QUESTION = "What do apple trees need to set fruit?"
FLAGGED_REPLY = f"{APPLE_REPLY} Penguins huddle on the ice to keep warm [1]."


def dict_before_the_model(answer: Answer) -> dict[str, Any]:
    """The detail as `Answer.to_dict` built it by hand, before `AnswerDetail`."""

    def sentence_dict(sentence: AnswerSentence) -> dict[str, Any]:
        return {
            "text": sentence.text,
            "supported": sentence.supported,
            "flagged": sentence.flagged,
            "is_claim": sentence.is_claim,
            "score": round(sentence.score, 4),
            "model_markers": sentence.model_markers,
            "corrected": sentence.corrected,
            "citations": [c.number for c in sentence.citations],
        }

    def source_dict(number: int, hit: SearchHit) -> dict[str, Any]:
        data = asdict(hit)
        data["number"] = number
        data["heading_path"] = list(hit.heading_path)
        return data

    written = [s for s in answer.sentences if not s.flagged]
    shown = [] if answer.withheld else written
    return {
        "question": answer.question,
        "answer": answer.text,
        "raw_answer": answer.raw_text,
        "model": answer.model,
        "abstained": answer.abstained,
        "relevance": round(answer.relevance, 4),
        "extracted": answer.extracted,
        "match": round(answer.match, 4),
        "unrelated": answer.unrelated,
        "evidence_score": round(answer.evidence_score, 4),
        "answerability": round(answer.answerability, 4),
        "prompt_tokens": answer.prompt_tokens,
        "usage": answer.usage.to_dict(),
        "truncated": answer.truncated,
        "unknown_words": list(answer.unknown_words),
        "sentences": [sentence_dict(s) for s in shown],
        "citations": [asdict(c) for s in shown for c in s.citations],
        "withheld_sentences": [sentence_dict(s) for s in written] if answer.withheld else [],
        "unsupported_sentences": [sentence_dict(s) for s in answer.sentences if s.flagged],
        "sources": [source_dict(number, hit) for number, hit in enumerate(answer.sources, start=1)],
        "related_questions": list(answer.related_questions),
        "timings_ms": {k: round(v, 1) for k, v in answer.timings_ms.items()},
    }


@pytest.fixture
def app(settings: Settings, tmp_path: Path) -> Iterator[Application]:
    app = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([FLAGGED_REPLY] * 2))
    app.ingest([write_corpus(tmp_path / "corpus")])
    yield app
    app.close()


def answers_of_every_kind(app: Application) -> dict[str, Answer]:
    engine = app.answer_engine()
    written = engine.ask(QUESTION)
    withheld = replace(engine, policy=replace(engine.policy, abstain_below=0.99)).ask(QUESTION)
    unrelated = replace(engine, policy=replace(engine.policy, relevance_floor=0.99)).ask(QUESTION)
    located = [
        replace(hit, heading_path=("Orchard Notes", "Pollination"), page=3, url="https://example.org/orchard")
        for hit in written.sources
    ]
    reranked = [replace(hit, rerank_score=0.75, keyword_rank=None, keyword_score=None) for hit in located]
    filled = replace(
        written, sources=reranked, related_questions=["Which bees carry pollen?"], unknown_words=["Malus"]
    )
    return {"written": written, "withheld": withheld, "unrelated": unrelated, "filled": filled}


def test_every_kind_of_answer_is_covered(app: Application) -> None:
    answers = answers_of_every_kind(app)
    written, withheld, unrelated = answers["written"], answers["withheld"], answers["unrelated"]
    assert [s.flagged for s in written.sentences] == [False, False, True] and not written.withheld
    assert withheld.withheld and withheld.sentences and withheld.citations
    assert unrelated.unrelated and not unrelated.sentences and unrelated.sources
    assert written.usage.steps and written.timings_ms


@pytest.mark.parametrize("kind", ["written", "withheld", "unrelated", "filled"])
def test_the_detail_is_the_json_sent_before_it_was_typed(app: Application, kind: str) -> None:
    answer = answers_of_every_kind(app)[kind]
    before = dict_before_the_model(answer)
    detail = answer.detail()

    # `footnote ask --json` prints `to_dict()` as it printed the hand-built dict.
    assert answer.to_dict() == before
    assert json.dumps(answer.to_dict(), ensure_ascii=False, indent=2) == json.dumps(
        before, ensure_ascii=False, indent=2
    )
    # A completion's response body: FastAPI serialises the response model with pydantic.
    assert TypeAdapter(AnswerDetail).dump_json(detail) == TypeAdapter(dict[str, Any]).dump_json(before)
    # A streamed chunk: json.dumps over the chunk model's JSON-mode dump.
    assert json.dumps(detail.model_dump(mode="json"), ensure_ascii=False) == json.dumps(
        TypeAdapter(dict[str, Any]).dump_python(before, mode="json"), ensure_ascii=False
    )


def test_the_server_sends_the_detail_in_the_model_s_field_order(tmp_path: Path) -> None:
    server, _ = build(tmp_path, [APPLE_REPLY] * 2)
    with TestClient(server) as client:
        whole = client.post(
            "/v1/chat/completions", json={"messages": [{"role": "user", "content": QUESTION}]}
        )
        query = client.post("/v1/query", json={"query": QUESTION})
    for detail in (whole.json()["footnote"], query.json()["footnote"]):
        assert list(detail) == list(AnswerDetail.model_fields)
        assert detail["sentences"] and detail["citations"] and detail["sources"]
        assert list(detail["sources"][0])[-1] == "number"


def test_the_openapi_spec_documents_the_detail_s_fields(tmp_path: Path) -> None:
    server, _ = build(tmp_path, ingest=False)
    with TestClient(server) as client:
        spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    detail_ref = "#/components/schemas/AnswerDetail"
    assert schemas["ChatCompletion"]["properties"]["footnote"]["$ref"] == detail_ref
    assert schemas["QueryResponse"]["properties"]["footnote"]["$ref"] == detail_ref
    chunk_footnote = schemas["ChatCompletionChunk"]["properties"]["footnote"]
    assert {"$ref": detail_ref} in chunk_footnote["anyOf"]

    detail = schemas["AnswerDetail"]
    assert list(detail["properties"]) == list(AnswerDetail.model_fields)
    assert set(detail["required"]) == set(AnswerDetail.model_fields)
    assert detail["properties"]["sentences"]["items"]["$ref"] == "#/components/schemas/CheckedSentence"
    assert detail["properties"]["citations"]["items"]["$ref"] == "#/components/schemas/SpanCitation"
    assert detail["properties"]["sources"]["items"]["$ref"] == "#/components/schemas/AnswerSource"
    assert {"text", "supported", "flagged", "is_claim", "citations"} <= set(
        schemas["CheckedSentence"]["properties"]
    )
    citation = schemas["SpanCitation"]["properties"]
    assert {"number", "document_id", "quote", "start", "end", "page"} <= set(citation)
    assert "document's text[start:end]" in citation["quote"]["description"]
    assert {"number", "title", "path", "heading_path", "url"} <= set(schemas["AnswerSource"]["properties"])
