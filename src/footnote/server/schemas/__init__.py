"""Request and response bodies, as pydantic models: they validate input and write the OpenAPI spec."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator


def _encodable(text: str) -> str:
    # JSON may carry lone surrogates ("\ud800"); tokenizers cannot encode them.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text must be valid Unicode: it holds a lone surrogate escape") from None
    return text


# Text that reaches a model or the index: anything a tokenizer can encode.
Text = Annotated[str, AfterValidator(_encodable)]
