"""What kind of request an answer is, and how long that kind may take.

Three classes share the generation pool, each with a latency objective (seconds from
arrival to the last byte, a setting each):

- `interactive`: a person watching the answer stream, the web page's requests;
- `api`: a program calling the API, the default for any request that does not say;
- `batch`: evaluations and bulk jobs, which may wait far longer but must still finish.

A request names its class in the `X-Footnote-Class` header (the web page sends
`interactive`; `footnote bench load --mix` sends the classes it is given). Like the body's
`priority`, the class is the client's own declaration: it orders the queue and decides how
long a wait is admitted, and it grants nothing else.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Header

from footnote.config import Settings

RequestClass = Literal["interactive", "api", "batch"]
REQUEST_CLASSES: tuple[RequestClass, ...] = ("interactive", "api", "batch")
CLASS_HEADER = "X-Footnote-Class"

ClassHeader = Annotated[
    RequestClass,
    Header(
        alias=CLASS_HEADER,
        description="footnote: the request's class, which decides its latency objective and its "
        "place in the queue: interactive (a person waiting), api (the default), batch",
    ),
]


def objectives(settings: Settings) -> dict[RequestClass, float]:
    """Each class's latency objective in seconds, at most `request_timeout` (a request is
    never kept longer than that anyway)."""
    given: dict[RequestClass, float] = {
        "interactive": settings.latency_objective_interactive,
        "api": settings.latency_objective_api,
        "batch": settings.latency_objective_batch,
    }
    return {name: min(seconds, settings.request_timeout) for name, seconds in given.items()}
