"""Request and response bodies, as pydantic models: they validate input and write the OpenAPI spec."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field


def _encodable(text: str) -> str:
    # JSON may carry lone surrogates ("\ud800"); tokenizers cannot encode them.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text must be valid Unicode: it holds a lone surrogate escape") from None
    return text


# Text that reaches a model or the index: anything a tokenizer can encode.
Text = Annotated[str, AfterValidator(_encodable)]


def _is_none(value: object) -> bool:
    return value is None


def omitted_when_none(description: str | None = None) -> Any:
    """A field that is left out of the JSON while it is None, where clients expect the key only
    when it has a value (a chunk's `usage`, `related_questions` when not asked for)."""
    return Field(None, exclude_if=_is_none, description=description)
