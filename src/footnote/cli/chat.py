"""`footnote chat` and `ask`: answers streamed to the terminal, sentence by sentence as each is
checked; a chat session keeps the last few turns as context."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from footnote.cli import output
from footnote.models.base import Message

if TYPE_CHECKING:
    from footnote.application import Application

EXIT_WORDS = frozenset({"exit", "quit", ":q"})


def stream_answer(
    footnote: Application,
    question: str,
    history: Sequence[Message],
    json_output: bool = False,
    related: bool = False,
    collections: Sequence[str] | None = None,
) -> str:
    """Answer `question` after `history`, printing sentences as they are checked; returns the answer text.

    With `related` (or the `related_questions` setting) follow-up questions are suggested after it;
    with `collections`, only those collections' documents are searched.
    """
    from footnote.answer.result import DoneEvent, SentenceEvent
    from footnote.application.answers import AnswerRequest
    from footnote.retrieval.source_filter import SourceFilter

    answer = None
    printer = output.SentencePrinter()
    scope = SourceFilter(collections=tuple(collections) if collections is not None else None)
    request = AnswerRequest(question, source_filter=scope, related_questions=related, history=tuple(history))
    for event in footnote.answers.run(request):
        if isinstance(event, SentenceEvent) and not json_output:
            printer.print(event.sentence)
        elif isinstance(event, DoneEvent):
            answer = event.answer
    assert answer is not None
    if json_output:
        output.print_json(answer.to_dict())
    else:
        printer.finish(answer)
        output.console.print()
        output.print_sources(answer)
        output.print_related(answer)
    return answer.text


def run_chat(
    open_app: Callable[[], Application], history_file: Path | None, collections: Sequence[str] | None = None
) -> None:
    """The session: questions read from the terminal until an empty line or an exit word, each
    answered after the turns before it; the application is opened once (`open_app`), after the
    greeting, so the models load once for the whole session."""
    from footnote.answer.history import read_history

    history: list[Message] = read_history(history_file) if history_file else []
    output.console.print("Ask about your documents; an empty line or 'exit' ends the session.")
    footnote = open_app()
    try:
        while True:
            try:
                question = input("> ").strip()
            except (EOFError, KeyboardInterrupt):
                output.console.print()
                return
            if not question or question.lower() in EXIT_WORDS:
                return
            text = stream_answer(footnote, question, history, collections=collections)
            history += [Message("user", question), Message("assistant", text)]
    finally:
        footnote.close()
