"""POST /v1/chat/completions: OpenAI and Perplexity Sonar compatible, streaming or not.

The text is footnote's checked answer (`Answer.text`): sentences with verified `[n]`
footnotes. Streaming sends each sentence once it has been checked, so the streamed
pieces join to exactly the non-streamed `message.content`.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from pydantic import BaseModel
from starlette.responses import Response

from footnote.answer.render import MarkdownRenderer
from footnote.answer.result import Answer, AnswerEvent, DoneEvent, SentenceEvent, SourcesEvent, StepUsage
from footnote.application.answers import AnswerRequest
from footnote.application.sources import DescribedSources
from footnote.core.collections import EVERYTHING, Access
from footnote.core.hits import SearchHit
from footnote.errors import FootnoteError
from footnote.models.base import Message
from footnote.retrieval.source_filter import SourceFilter
from footnote.server.answers import AnswerRun, collect, start_answer
from footnote.server.errors import ApiError, status_of
from footnote.server.request_class import ClassHeader
from footnote.server.schemas.chat import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChatMessage,
    Choice,
    ChunkChoice,
    Delta,
    FinishReason,
    Usage,
    search_results,
)
from footnote.server.state import Caller, ServerState, State

log = logging.getLogger("footnote.server")
router = APIRouter(tags=["chat"])

# With `stream: true` the body is server-sent events; the schema describes one event.
SSE_EVENT_SCHEMA = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "data": {
            "anyOf": [
                {"const": "[DONE]"},
                {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {"$ref": "#/components/schemas/ChatCompletionChunk"},
                },
                {  # a failure after the stream began
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {"$ref": "#/components/schemas/ErrorResponse"},
                },
            ]
        }
    },
}
STREAM_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The completion; with `stream: true`, `chat.completion.chunk` objects as "
        "server-sent events ending with `data: [DONE]`",
        "content": {"text/event-stream": {"schema": SSE_EVENT_SCHEMA}},
    }
}


@dataclass(frozen=True)
class ChatReply:
    """One reply being sent: the id and time its chunks and its final object share, and what
    the request asked to have included."""

    id: str
    created: int
    include_usage: bool
    related_questions: bool

    def completion(self, answer: Answer, sources: DescribedSources) -> ChatCompletion:
        message = AssistantMessage(content=answer.text)
        return ChatCompletion(
            id=self.id,
            created=self.created,
            model=answer.model,
            choices=[Choice(index=0, message=message, finish_reason=_finish_reason(answer))],
            usage=_usage(answer),
            citations=sources.citations,
            search_results=search_results(sources.results),
            related_questions=answer.related_questions if self.related_questions else None,
            footnote=answer.detail(),
        )

    def chunk(self, model: str, delta: Delta, finish: FinishReason | None = None) -> ChatCompletionChunk:
        choice = ChunkChoice(index=0, delta=delta, finish_reason=finish)
        return ChatCompletionChunk(id=self.id, created=self.created, model=model, choices=[choice])

    def closing(self, model: str, answer: Answer, sources: DescribedSources) -> ChatCompletionChunk:
        """The chunk that finishes the text, with the sources and footnote's detail."""
        last = self.chunk(model, Delta(), _finish_reason(answer))
        last.citations, last.search_results = sources.citations, search_results(sources.results)
        if self.related_questions:
            last.related_questions = answer.related_questions
        last.footnote = answer.detail()
        return last

    def usage(self, model: str, answer: Answer) -> ChatCompletionChunk:
        return ChatCompletionChunk(
            id=self.id, created=self.created, model=model, choices=[], usage=_usage(answer)
        )


def conversation(messages: Sequence[ChatMessage]) -> tuple[str, tuple[Message, ...], str]:
    """The question (the last user message), the user and assistant turns before it, and the
    client's system (or developer) messages joined: its instruction to the model."""
    asked = [i for i, message in enumerate(messages) if message.role == "user"]
    if not asked or not messages[asked[-1]].text().strip():
        raise ApiError(400, "the last user message must have text: it is the question", param="messages")
    history = tuple(
        Message(message.role, message.text())
        for message in messages[: asked[-1]]
        if message.role in ("user", "assistant") and message.text().strip()
    )
    instruction = "\n\n".join(
        message.text().strip()
        for message in messages
        if message.role in ("system", "developer") and message.text().strip()
    )
    return messages[asked[-1]].text(), history, instruction


def answer_request(
    body: ChatCompletionRequest, state: ServerState, access: Access = EVERYTHING
) -> AnswerRequest:
    question, history, instruction = conversation(body.messages)
    settings = state.settings
    generation = state.application.answers.generation(
        body.max_completion_tokens or body.max_tokens,
        body.temperature,
        body.top_p,
        body.stop_sequences(),
        body.seed,
        body.priority or 0,
        deadline=time.monotonic() + settings.request_timeout,
    )
    source_filter = SourceFilter.parse(
        body.search_domain_filter, body.search_recency_filter, collections=access.readable(body.collections)
    )
    related = body.return_related_questions or settings.related_questions
    return AnswerRequest(
        question,
        generation,
        settings.top_k,
        source_filter,
        related,
        history=history,
        instruction=instruction,
    )


@router.post("/v1/chat/completions", response_model=ChatCompletion, responses=STREAM_RESPONSE)
async def chat_completions(
    body: ChatCompletionRequest, state: State, access: Caller, request_class: ClassHeader = "api"
) -> Response | ChatCompletion:
    """Answer the last user message from the documents, with checked citations; earlier turns
    make a follow-up stand alone for retrieval and are shown to the model."""
    request = answer_request(body, state, access)
    reply = ChatReply(
        id=f"chatcmpl-{uuid.uuid4().hex}",
        created=int(time.time()),
        include_usage=bool(body.stream_options and body.stream_options.include_usage),
        related_questions=request.related_questions,
    )
    run = await start_answer(state, request, request_class)
    if body.stream:
        return await _streaming_response(run, reply, state)
    answer = await collect(run)
    return reply.completion(answer, await _described(state, answer.sources))


async def _described(state: ServerState, sources: list[SearchHit]) -> DescribedSources:
    """The answer's sources as the reply shows them; the catalog is read in a worker thread."""
    return await anyio.to_thread.run_sync(state.application.answers.describe, sources)


def _finish_reason(answer: Answer) -> FinishReason:
    return "length" if answer.truncated else "stop"


def _usage(answer: Answer) -> Usage:
    """Every model call the answer made, counted by the model's tokenizer; `steps` tells them
    apart (answer, condense, related)."""
    usage = answer.usage
    steps = {name: StepUsage(**step) for name, step in usage.to_dict().items()}
    return Usage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_tokens=usage.prompt_tokens + usage.completion_tokens,
        steps=steps,
    )


async def _streaming_response(run: AnswerRun, reply: ChatReply, state: ServerState) -> Response:
    events = run.events()
    try:
        # Waiting for the sources first means a bad question is still answered with a 4xx status.
        first = await anext(events)
        assert isinstance(first, SourcesEvent)
        sources = await _described(state, first.sources)
    except BaseException:
        await events.aclose()
        raise
    model = first.model or state.application.generator.name
    return StreamingResponse(
        _sse(sources, events, reply, model),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _data(payload: BaseModel | str) -> str:
    if isinstance(payload, BaseModel):
        # json.dumps over the model's JSON-mode dump writes the events as they always were
        # (`"role": "assistant"`, Python's float digits); the model decides which keys appear.
        payload = json.dumps(payload.model_dump(mode="json"), ensure_ascii=False)
    return f"data: {payload}\n\n"


async def _sse(
    sources: DescribedSources, events: AsyncGenerator[AnswerEvent, None], reply: ChatReply, model: str
) -> AsyncIterator[str]:
    # Perplexity sends citations and search_results inside the chunks: here the first and the last.
    first = reply.chunk(model, Delta(role="assistant", content=""))
    first.citations, first.search_results = sources.citations, search_results(sources.results)
    yield _data(first)
    renderer = MarkdownRenderer()
    try:
        async for event in events:
            if isinstance(event, SentenceEvent):
                text = renderer.add(event.sentence)
                if text:
                    yield _data(reply.chunk(model, Delta(content=text)))
            elif isinstance(event, DoneEvent):
                for chunk in _closing_chunks(reply, model, event.answer, renderer, sources):
                    yield _data(chunk)
    except (ApiError, FootnoteError) as exc:
        status = exc.status if isinstance(exc, ApiError) else status_of(exc)
        yield _data(ApiError(status, str(exc)).body())
    except Exception:
        log.exception("a streamed answer failed")
        yield _data(ApiError(500, "internal server error; the server log has the details").body())
    finally:
        await events.aclose()
    yield _data("[DONE]")


def _closing_chunks(
    reply: ChatReply, model: str, answer: Answer, renderer: MarkdownRenderer, sources: DescribedSources
) -> list[ChatCompletionChunk]:
    chunks = []
    rest = renderer.rest(answer.text)
    if rest is None:
        log.warning("streamed text diverged from the rendered answer; the rest is skipped")
    elif rest:
        chunks.append(reply.chunk(model, Delta(content=rest)))
    chunks.append(reply.closing(model, answer, sources))
    if reply.include_usage:
        chunks.append(reply.usage(model, answer))
    return chunks
