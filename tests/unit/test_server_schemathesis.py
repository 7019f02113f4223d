"""Property-based API test: generated requests against the served OpenAPI spec.

Schemathesis reads /openapi.json from the app in-process (ASGI, test-double models),
generates valid and invalid requests for every operation, and checks that none gets a
5xx and that every response matches the spec (status, content type, body schema).
A bounded number of examples per operation keeps it to well under two minutes.

Two built-in checks are replaced. `negative_data_rejection` does not count 413 (an invalid
body over the size cap) as a rejection, so invalid requests are checked for any 4xx instead.
`positive_data_acceptance` expects every request that fits the schema to succeed, but some
rules cannot be written in a JSON schema (a chat needs a user message with text; an upload
needs a supported file type; `dimensions` must equal the embedder's). Those requests get a
400 or 415 error object, which the other checks still hold to the spec.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import checks
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.schemas import OpenApiSchema

from footnote.application import create_app
from footnote.config import Settings
from footnote.server import create_server
from footnote.server.scoring import ScoringHost
from tests.conftest import REPO
from tests.fakes import HashingEmbedder, ScriptedGenerator
from tests.store_modes import lasting_settings
from tests.unit.server_fixtures import APPLE_REPLY, write_corpus
from tests.unit.test_perplexity import CharTokenizer, RecordingScorer

EXAMPLES = 25  # per operation and mode


def _server(home: Path) -> object:
    stores = lasting_settings(home / "home")
    config = Settings(home=home / "home", preload_models=False, max_queue=100, **stores)
    # Plenty of replies: every generated chat request that passes validation uses one.
    application = create_app(
        config, embedder=HashingEmbedder(), generator=ScriptedGenerator([APPLE_REPLY] * 5000)
    )
    application.ingest([write_corpus(home / "corpus")])
    server = create_server(config, application)
    tokenizer = CharTokenizer()
    tokenizer.vocab_size = 0x110000
    server.state.footnote.scoring = ScoringHost(config, opener=lambda: RecordingScorer(tokenizer, 256))
    return server


def documented_operations() -> list[tuple[str, str]]:
    """Every operation named in the route table of docs/http-api.md, in its order."""
    text = (REPO / "docs" / "http-api.md").read_text(encoding="utf-8")
    table = text[text.index("\n## Routes\n") :].split("\n## ", 2)[1]
    rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
    return [
        (method, path)
        for row in rows
        for method, path in re.findall(r"`(GET|POST|DELETE|PUT|PATCH) (/[^`]*)`", row)
    ]


# The documented operations; a test below keeps them equal to the served spec, so a route is
# neither served undocumented nor dropped unnoticed.
OPERATIONS = documented_operations()


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> OpenApiSchema:
    return schemathesis.openapi.from_asgi("/openapi.json", _server(tmp_path_factory.mktemp("schemathesis")))


def test_the_documented_operations_are_the_served_spec(api_schema: OpenApiSchema) -> None:
    served = {
        (method.upper(), path)
        for path, methods in api_schema.raw_schema["paths"].items()
        for method in methods
    }
    assert len(OPERATIONS) == len(set(OPERATIONS)) >= 21
    assert served == set(OPERATIONS)


# An operation with no input to get wrong is skipped in negative mode by itself (below); this
# one's optional query parameter makes schemathesis send requests that fit the schema as invalid.
NO_INVALID_INPUT = {("GET", "/v1/documents")}
CASES = [(method, path, GenerationMode.POSITIVE) for method, path in OPERATIONS] + [
    (method, path, GenerationMode.NEGATIVE)
    for method, path in OPERATIONS
    if (method, path) not in NO_INVALID_INPUT
]


@pytest.mark.parametrize(("method", "path", "mode"), CASES)
def test_no_server_errors_and_responses_match_the_spec(
    api_schema: OpenApiSchema, method: str, path: str, mode: GenerationMode
) -> None:
    operation = api_schema[path][method]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def check(case: schemathesis.Case) -> None:
        # Schemathesis's own rejection check does not count 413, the answer to an invalid
        # body over the size cap; any 4xx is a rejection here.
        excluded = [checks.positive_data_acceptance, checks.negative_data_rejection]
        response = case.call()
        case.validate_response(response, excluded_checks=excluded)
        if mode is GenerationMode.NEGATIVE:
            assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])

    try:
        check()
    except Unsatisfiable:
        if mode is GenerationMode.POSITIVE:
            raise
        pytest.skip(f"every request to {method} {path} fits its schema: no invalid one to send")
