"""POST /v1/completions (prompt scoring, vLLM's echo dialect) and POST /v1/perplexity."""

from __future__ import annotations

import time
import uuid

from fastapi import APIRouter

from footnote.errors import FootnoteError
from footnote.perplexity import ScoringOptions, TokenScore, TokenScorer, score_string
from footnote.perplexity.text import TokenTexts
from footnote.server.errors import ApiError
from footnote.server.schemas.completions import (
    Completion,
    CompletionChoice,
    CompletionLogprobs,
    CompletionRequest,
    CompletionUsage,
    PerplexityRequest,
    PerplexityResponse,
)
from footnote.server.state import State

router = APIRouter(tags=["perplexity"])


def _check_model(requested: str | None, scorer: TokenScorer, served: str) -> None:
    if requested and requested not in (scorer.name, served):
        raise ApiError(404, f"no model '{requested}'; this server scores with '{served}'", param="model")


def _prompt_ids(scorer: TokenScorer, prompt: str | list[int] | list[str]) -> list[int]:
    tokenizer = scorer.tokenizer
    if isinstance(prompt, list) and all(isinstance(item, int) for item in prompt):
        ids = [int(item) for item in prompt]
        limit = tokenizer.vocab_size
        if limit is not None and max(ids) >= limit:
            raise ApiError(
                400, f"token id {max(ids)} is outside the model's vocabulary of {limit}", param="prompt"
            )
        return ids
    text = prompt if isinstance(prompt, str) else str(prompt[0])
    bos = [tokenizer.bos_id] if tokenizer.add_bos and tokenizer.bos_id is not None else []
    return bos + tokenizer.tokenize(text)


def _echo_logprobs(scorer: TokenScorer, ids: list[int], top: int | None) -> CompletionLogprobs:
    """The prompt's tokens with their log-probabilities, in the OpenAI legacy `logprobs` shape."""
    if len(ids) > scorer.context_length:
        raise ApiError(
            400,
            f"the prompt has {len(ids)} tokens; this server scores at most {scorer.context_length} "
            "in one request (split the text, or raise score_context_tokens)",
            param="prompt",
        )
    chosen: list[float] = []
    tops: list[list[tuple[int, float]]] = []
    if len(ids) >= 2:
        chosen, tops = scorer.score_window_top(ids, 1, max(top or 0, 1))
    texts = TokenTexts(scorer.tokenizer)
    tokens, offsets = [], []
    for token_id in ids:
        text, offset = texts.next(token_id)
        tokens.append(text)
        offsets.append(offset)
    top_logprobs: list[dict[str, float] | None] | None = None
    if top is not None:
        top_logprobs = [None]
        for token_id, logprob, likeliest in zip(ids[1:], chosen, tops, strict=True):
            entry = {_piece_text(scorer, i): value for i, value in likeliest[:top]}
            entry[_piece_text(scorer, token_id)] = logprob
            top_logprobs.append(entry)
    return CompletionLogprobs(
        tokens=tokens, token_logprobs=[None, *chosen], top_logprobs=top_logprobs, text_offset=offsets
    )


def _piece_text(scorer: TokenScorer, token_id: int) -> str:
    return scorer.tokenizer.piece(token_id).decode("utf-8", errors="replace")


def _complete(scorer: TokenScorer, body: CompletionRequest, served: str) -> Completion:
    _check_model(body.model, scorer, served)
    ids = _prompt_ids(scorer, body.prompt)
    logprobs = _echo_logprobs(scorer, ids, body.logprobs)
    choice = CompletionChoice(
        index=0,
        text="".join(logprobs.tokens),
        logprobs=logprobs if body.logprobs is not None else None,
        finish_reason="length",
    )
    return Completion(
        id=f"cmpl-{uuid.uuid4().hex}",
        created=int(time.time()),
        model=body.model or served,
        choices=[choice],
        usage=CompletionUsage(prompt_tokens=len(ids), completion_tokens=0, total_tokens=len(ids)),
    )


@router.post("/v1/completions", response_model=Completion, response_model_exclude_none=False)
async def completions(body: CompletionRequest, state: State) -> Completion:
    """Scores a prompt the way vLLM does for `echo: true, max_tokens: 0, logprobs: N`.

    footnote answers questions through /v1/chat/completions; this route only scores.
    """
    if body.stream:
        raise ApiError(400, "streaming is not offered for scoring; send stream: false", param="stream")
    if not body.echo or body.max_tokens:
        raise ApiError(
            400,
            "/v1/completions scores prompts: send echo: true and max_tokens: 0 "
            "(for answers use /v1/chat/completions)",
            param="max_tokens" if body.max_tokens else "echo",
        )
    served = state.settings.llm
    return await state.run_work(state.scoring.use, lambda scorer: _complete(scorer, body, served))


def _perplexity(scorer: TokenScorer, body: PerplexityRequest) -> PerplexityResponse:
    options = ScoringOptions(
        protocol=body.protocol,
        context_length=body.context_length,
        stride=body.stride,
        max_tokens=body.max_tokens,
    )
    scored: list[TokenScore] = []
    try:
        result = score_string(scorer, body.text, options, scored.append if body.tokens else None)
    except FootnoteError as exc:
        raise ApiError(400, str(exc), param="text") from exc
    return PerplexityResponse.of(result, scored if body.tokens else None)


@router.post("/v1/perplexity", response_model=PerplexityResponse)
async def perplexity(body: PerplexityRequest, state: State) -> PerplexityResponse:
    """Perplexity of a text under the served LLM: exp(mean negative log-likelihood), ± standard error."""
    return await state.run_work(state.scoring.use, lambda scorer: _perplexity(scorer, body))
