"""The vector index on a Chroma server (`FOOTNOTE_VECTOR_URL`), shared by many replicas.

The embedder's identity lives in the collection's metadata, where every replica reads
it, instead of in a `params.json` beside an embedded index. Every call has a timeout:
a server that is down or stalled is a `StoreUnavailable` (the HTTP API's 503), never a hang.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx

from footnote.errors import StoreError, StoreUnavailable
from footnote.store.vectors import ChromaCollectionIndex, index_params, refuse_another_embedder

URL_SETTING = "FOOTNOTE_VECTOR_URL"
TOKEN_SETTING = "FOOTNOTE_VECTOR_TOKEN"
CONNECT_TIMEOUT = 3.0  # seconds to open a connection: a live server on a LAN takes milliseconds
REQUEST_TIMEOUT = 30.0  # seconds for any one call, a query of a large collection included
METADATA_PREFIX = "footnote_"  # collection metadata keys: footnote_format, footnote_embedder, ...


class ChromaServerVectorIndex(ChromaCollectionIndex):
    """Chroma's HttpClient on one collection, with the embedder's identity in its metadata."""

    def __init__(
        self,
        url: str,
        token: str | None,
        embedder_name: str | None,
        dimension: int | None,
        timeout: float = REQUEST_TIMEOUT,
        collection: str = ChromaCollectionIndex.collection_name,
    ) -> None:
        """Connect and open or create the collection; `embedder_name` is the embedder's identity;
        None opens it for deletions only, unchecked. An unreachable server is `StoreUnavailable`."""
        self.url = url
        self.collection_name = collection
        self._timeout = timeout
        self._client = _client(url, token, timeout)
        wanted = index_params(embedder_name, dimension or 0) if embedder_name is not None else None
        self._collection = self._open(wanted)

    def _open(self, wanted: dict[str, Any] | None) -> Any:
        with self._reaching():
            # configuration, not metadata, sets the distance: metadata can then be modified.
            collection = self._client.get_or_create_collection(
                self.collection_name,
                embedding_function=None,
                configuration={"hnsw": {"space": "cosine"}},
                metadata=_as_metadata(wanted) if wanted else None,
            )
            if wanted is None:
                return collection
            found = recorded_params(collection.metadata)
            if found is None and collection.count() == 0:
                # Created unchecked (for deletions) before any embedder wrote to it.
                collection.modify(metadata=_as_metadata(wanted))
                return collection
        rebuild = (
            f"delete the collection '{self.collection_name}' on that server (the catalog keeps the "
            f"chunks and the next start embeds them again), or set {URL_SETTING} to another Chroma server"
        )
        where = f"the vector index in collection '{self.collection_name}' on the Chroma server {self.url}"
        refuse_another_embedder(found or {}, wanted, where, rebuild)
        return collection

    def _reaching(self) -> AbstractContextManager[None]:
        return reaching(self.url)


@contextmanager
def reaching(url: str) -> Iterator[None]:
    """Calls to the Chroma server at `url`: a lost connection or a timeout becomes `StoreUnavailable`,
    a refused token a `StoreError` naming the token's setting."""
    from chromadb.errors import AuthorizationError, ChromaAuthError

    try:
        yield
    except httpx.TransportError as exc:
        raise unavailable(url, exc) from exc
    except (ChromaAuthError, AuthorizationError) as exc:
        raise refused_token(url, str(exc)) from exc
    except httpx.HTTPStatusError as exc:  # an answer from a proxy in front of Chroma
        status = exc.response.status_code
        if status in (401, 403):
            raise refused_token(url, f"HTTP {status}") from exc
        if status in (502, 503, 504):
            raise StoreUnavailable(URL_SETTING, url, f"the Chroma server answered HTTP {status}") from exc
        raise


def unavailable(url: str, exc: Exception) -> StoreUnavailable:
    problem = str(exc) or type(exc).__name__
    return StoreUnavailable(
        URL_SETTING,
        url,
        f"cannot reach the Chroma server ({problem}); start it (`chroma run --path DIR --port N`) "
        f"or set {URL_SETTING} to where it listens",
    )


def refused_token(url: str, detail: str) -> StoreError:
    return StoreError(
        f"the Chroma server at {url} refused the request ({detail}); "
        f"set {TOKEN_SETTING} to the token it expects"
    )


def heartbeat(url: str, token: str | None, timeout: float = CONNECT_TIMEOUT) -> None:
    """Check that a Chroma server answers at `url` and takes `token`; raise as `reaching` does."""
    try:
        response = httpx.get(
            f"{url.rstrip('/')}/api/v2/heartbeat", headers=_auth_headers(token), timeout=timeout
        )
    except httpx.TransportError as exc:
        raise unavailable(url, exc) from exc
    if response.status_code in (401, 403):
        raise refused_token(url, f"HTTP {response.status_code}")
    if response.status_code in (502, 503, 504):
        raise StoreUnavailable(URL_SETTING, url, f"the Chroma server answered HTTP {response.status_code}")
    if response.status_code != 200:
        raise StoreError(
            f"{url} answered HTTP {response.status_code} to Chroma's heartbeat; "
            f"set {URL_SETTING} to a Chroma server (http://host:port)"
        )


def server_params(
    url: str, token: str | None, collection: str = ChromaCollectionIndex.collection_name
) -> dict[str, Any] | None:
    """The embedder identity recorded on the server's `collection`; None when there is none yet."""
    from chromadb.errors import NotFoundError

    client = _client(url, token, CONNECT_TIMEOUT)
    with reaching(url):
        try:
            found = client.get_collection(collection)
        except NotFoundError:
            return None
    return recorded_params(found.metadata)


def recorded_params(metadata: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The identity in a collection's metadata, as `index_params` gives it; None when it has none."""
    found = {
        key[len(METADATA_PREFIX) :]: value
        for key, value in (metadata or {}).items()
        if key.startswith(METADATA_PREFIX)
    }
    return found or None


def _as_metadata(params: Mapping[str, Any]) -> dict[str, Any]:
    return {METADATA_PREFIX + key: value for key, value in params.items()}


def _auth_headers(token: str | None) -> dict[str, str]:
    # What Chroma's TokenAuthClientProvider sends by default, and what its server checks.
    return {"Authorization": f"Bearer {token}"} if token else {}


def _client(url: str, token: str | None, timeout: float) -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise StoreError(f"{URL_SETTING}={url} is not a URL; use http://host:port of a Chroma server")
    # The client's own constructor calls the server with no timeout: a heartbeat with one goes first.
    heartbeat(url, token)
    with reaching(url):
        try:
            client: Any = chromadb.HttpClient(
                host=parts.hostname,
                port=parts.port or (443 if parts.scheme == "https" else 8000),
                ssl=parts.scheme == "https",
                headers=_auth_headers(token),
                settings=ChromaSettings(anonymized_telemetry=False),
            )
        except ValueError as exc:  # "Could not connect to a Chroma server"
            raise unavailable(url, exc) from exc
    # Chroma's client makes its requests with no timeout at all; a stalled server would hang them.
    client._server._session.timeout = httpx.Timeout(timeout, connect=CONNECT_TIMEOUT)
    return client
