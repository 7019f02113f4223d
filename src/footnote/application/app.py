"""The application object: settings, stores and models wired together once.

`create_app(settings)` builds everything lazily, so a command that only lists
documents never loads a model, and tests build isolated apps on a temporary
`FOOTNOTE_HOME`. Models can be passed in (test doubles are real subclasses of
the protocols); otherwise they are resolved from the registry and hash-checked
(`footnote.application.models`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from footnote.answer.citations import SupportModels
from footnote.answer.engine import AnswerEngine
from footnote.answer.judge import SupportJudge
from footnote.answer.policy import AnswerPolicy
from footnote.answer.result import Answer, AnswerEvent
from footnote.application.answers import AnswerRequest, AnswerService
from footnote.application.keys import key_access
from footnote.application.models import Models
from footnote.config import Settings
from footnote.core.collections import Access, check_collection
from footnote.core.filters import SearchFilter
from footnote.core.hits import SearchHit
from footnote.errors import FootnoteError, NotFoundError
from footnote.ingest.language_vectors import LanguageVectors
from footnote.ingest.loaders import LoadOptions
from footnote.ingest.pipeline import Ingestor
from footnote.ingest.report import IngestReport, ProgressCallback
from footnote.models.base import Embedder, GenerationParams, Generator
from footnote.models.registry import embedder_languages
from footnote.retrieval.postings import MemoryKeywordIndex
from footnote.retrieval.rerank import Reranker
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from footnote.store.catalog import open_catalog
from footnote.store.records import CollectionRecord, DocumentRecord
from footnote.store.timing import StoreObserver, timed
from footnote.store.vector_stores import check_vectors, open_language_vectors, open_vectors, vector_kind
from footnote.store.vectors import VectorIndex


@dataclass(frozen=True)
class StoreHealth:
    kind: str  # embedded, postgresql or chroma-server
    error: str | None = None  # None: it answered


class Application:
    def __init__(self, settings: Settings, models: Models | None = None) -> None:
        """`models`: those handed in by `create_app`; by default every one the settings name."""
        self.settings = settings
        settings.ensure_home()
        self.catalog = open_catalog(settings)
        self.models = models or Models(settings)
        self._vectors: VectorIndex | None = None
        self._language_vectors: LanguageVectors | None = None
        self._index_reconciled = False
        self._keyword_index: MemoryKeywordIndex | None = None
        self._store_observer: StoreObserver | None = None

    # --- lazily built parts ----------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        return self.models.embedder

    @property
    def generator(self) -> Generator:
        return self.models.generator

    @property
    def generator_thread_safe(self) -> bool:
        """Can answers be generated in several threads at once (without loading the model)?"""
        return self.models.generator_thread_safe

    @property
    def vectors(self) -> VectorIndex:
        if self._vectors is None:
            vectors = open_vectors(self.settings, self.embedder.identity, self.embedder.dimension)
            observe = self._store_observer
            self._vectors = timed(vectors, "vectors", observe) if observe else vectors
        return self._vectors

    @property
    def language_vectors(self) -> LanguageVectors | None:
        """The second index, of chunks in languages the embedder does not read, with the language
        embedder that builds it; None when there is no such embedder here, or the embedder reads
        every language."""
        languages = embedder_languages(self.settings.embedder, self.settings.embedder_languages)
        embedder = self.models.language_embedder if languages is not None else None
        if self._language_vectors is None and embedder is not None:
            vectors = open_language_vectors(self.settings, embedder.identity, embedder.dimension)
            observe = self._store_observer
            vectors = timed(vectors, "vectors", observe) if observe else vectors
            self._language_vectors = LanguageVectors(embedder, vectors, languages)
        return self._language_vectors

    def observe_stores(self, observe: StoreObserver) -> None:
        """Report every call to the catalog and the vector indexes to `observe` (metrics)."""
        self._store_observer = observe
        self.catalog = timed(self.catalog, "catalog", observe)
        if self._vectors is not None:
            self._vectors = timed(self._vectors, "vectors", observe)
        if self._language_vectors is not None:
            self._language_vectors.vectors = timed(self._language_vectors.vectors, "vectors", observe)

    @property
    def reranker(self) -> Reranker | None:
        """The second stage the settings name (`rerank`), opened once; None when it is off."""
        return self.models.reranker

    @property
    def judge(self) -> SupportJudge | None:
        """The support judge the settings name (`judge`), opened once; None when it is off."""
        return self.models.judge

    def retriever(self) -> HybridRetriever:
        if not self.catalog.searches_keywords and self._keyword_index is None:
            self.keep_keyword_index()
        languages = embedder_languages(self.settings.embedder, self.settings.embedder_languages)
        language = self.language_vectors
        return HybridRetriever(
            self.catalog,
            self.vectors,
            self.embedder,
            self.reranker,
            self._keyword_index,
            languages,
            (language.embedder, language.vectors) if language is not None else None,
        )

    def keep_keyword_index(self, wait: bool = False) -> None:
        """Answer keyword searches from postings in memory (setting `keyword_memory`; always
        for a catalog without a keyword index of its own, which they follow through its changes).

        Worth it in a process that runs many searches: the postings are built from the
        catalog on a background thread (FTS5 answers until they are ready), or now with `wait`.
        """
        if not self.settings.keyword_memory and self.catalog.searches_keywords:
            return
        if self._keyword_index is None:
            self._keyword_index = MemoryKeywordIndex(self.catalog, self.settings.keyword_postings_path)
            # A shared catalog tells of other replicas' changes, so the postings follow at once.
            self.catalog.on_change(self._keyword_index.catch_up)
        if wait:
            self._keyword_index.sync()
        else:
            self._keyword_index.catch_up()

    def answer_engine(
        self,
        related_questions: bool = False,
        *,
        retriever: HybridRetriever | None = None,
        top_k: int | None = None,
        generation: GenerationParams | None = None,
        collections: Sequence[str] | None = None,
    ) -> AnswerEngine:
        """The engine with these settings (a request may bring its own retriever, depth and
        generation, and answer from some `collections` only); related questions when asked here
        or by the settings."""
        s = self.settings
        retrieval = self.retrieval_params(top_k or s.top_k)
        if collections is not None:
            retrieval = replace(retrieval, filters=SearchFilter(collections=tuple(collections)))
        return AnswerEngine(
            retriever or self.retriever(),
            self.generator,
            SupportModels(
                self.embedder,
                self.judge,
                self.models.reader if s.reader != "sources" else None,
                self.models.language_embedder if s.across_language_floor > 0 else None,
            ),
            AnswerPolicy.from_settings(
                s,
                retrieval,
                generation,
                related_questions=related_questions,
                judged=self.judge is not None,
            ),
            languages=self.models,
            # The sources reader shows the model whole chunks and reads no sentences to choose from.
            shape=self.models.question_shape if s.broad_answers and s.reader != "sources" else None,
        )

    def retrieval_params(self, limit: int, mode: str = "hybrid") -> RetrievalParams:
        return RetrievalParams.from_settings(self.settings, limit, mode)

    # --- what the edges call ---------------------------------------------------------------

    def ingest(
        self,
        paths: Iterable[Path],
        progress: ProgressCallback | None = None,
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        prune: bool = False,
        collection: str | None = None,
    ) -> IngestReport:
        """Ingest `paths` into `collection` (a document ingested before into another moves);
        without one, a document ingested before keeps its collection and a new one joins
        the default collection."""
        if collection is not None:
            check_collection(collection)
        report = self.ingestor(include, exclude, collection).ingest(paths, progress, prune=prune)
        self._index_reconciled = True
        return report

    def ingestor(
        self, include: Sequence[str] = (), exclude: Sequence[str] = (), collection: str | None = None
    ) -> Ingestor:
        """An ingest pipeline on this app's stores; the first one also reconciles the whole index."""
        s = self.settings
        return Ingestor(
            self.catalog,
            self.vectors,
            self.embedder,
            chunk_tokens=s.chunk_tokens,
            chunk_overlap=s.chunk_overlap,
            batch_size=s.embed_batch_size,
            include=include,
            exclude=exclude,
            full_reconcile=not self._index_reconciled,
            load_options=LoadOptions(ocr=s.ocr),
            collection=collection,
            language_vectors=self.language_vectors,
        )

    def reconcile_stores(self) -> int:
        """Bring the vector index in line with the catalog, once per process: vectors of chunks
        the catalog lacks are deleted, chunks without vectors embedded. Returns how many were."""
        ingestor = self.ingestor()
        ingestor.reconcile(full=True)
        self._index_reconciled = True
        return ingestor.embed_pending()

    @property
    def stores_reconciled(self) -> bool:
        return self._index_reconciled

    def store_health(self) -> dict[str, StoreHealth]:
        """Whether the catalog and the vector index answer now (a shared one is asked)."""
        s = self.settings
        catalog = StoreHealth("postgresql" if s.catalog_url else "embedded")
        try:
            self.catalog.count_chunks()
        except FootnoteError as exc:
            catalog = replace(catalog, error=str(exc))
        vectors = StoreHealth(vector_kind(s))
        try:
            check_vectors(s)
        except FootnoteError as exc:
            vectors = replace(vectors, error=str(exc))
        return {"catalog": catalog, "vectors": vectors}

    def search(
        self, query: str, limit: int = 10, mode: str = "hybrid", filters: SearchFilter | None = None
    ) -> list[SearchHit]:
        params = replace(self.retrieval_params(limit, mode), filters=filters)
        return self.retriever().search(query, params)

    @cached_property
    def answers(self) -> AnswerService:
        """The answer service every edge asks through (one per application: it holds the answer
        cache and the model's lock)."""
        return AnswerService(self)

    def ask_stream(self, question: str) -> Iterator[AnswerEvent]:
        return self.answers.run(AnswerRequest(question))

    def ask(self, question: str) -> Answer:
        return self.answers.ask(AnswerRequest(question))

    def documents(self, collections: Sequence[str] | None = None) -> list[DocumentRecord]:
        """Every document, or those of `collections`."""
        return self.catalog.list_documents(collections)

    def collections(self) -> list[CollectionRecord]:
        return self.catalog.collections()

    def delete_collection(self, name: str) -> list[DocumentRecord]:
        """Delete every document of collection `name`, with their chunks and vectors."""
        records = self.catalog.list_documents([check_collection(name)])
        if not records:
            raise NotFoundError(f"no collection {name!r}; `footnote collections list` shows them")
        self._delete_records(records)
        return records

    def find_document(self, path_or_id: str) -> DocumentRecord:
        record = None
        if path_or_id.isdigit():
            record = self.catalog.document(int(path_or_id))
        if record is None:
            record = self.catalog.document_by_path(str(Path(path_or_id).expanduser().resolve()))
        if record is None:
            raise NotFoundError(f"no document '{path_or_id}'; `footnote docs list` shows ids and paths")
        return record

    def delete_document(self, path_or_id: str) -> DocumentRecord:
        record = self.find_document(path_or_id)
        self._delete_records([record])
        return record

    def _delete_records(self, records: Sequence[DocumentRecord]) -> None:
        self.catalog.delete_documents([record.id for record in records])
        tombstones = self.catalog.tombstones()
        index = self._vectors or open_vectors(self.settings, None, None)
        index.delete(tombstones)
        if self.language_vectors is not None:
            self.language_vectors.vectors.delete(tombstones)
        self.catalog.clear_tombstones(tombstones)

    def close(self) -> None:
        self.catalog.close()
        if self._vectors is not None:
            self._vectors.close()
        if self._language_vectors is not None:
            self._language_vectors.vectors.close()
        self.models.close()

    # --- what the HTTP API reads, so that it never reaches into the stores itself ------------

    def key_access(self, presented: str) -> Access | None:
        """What the scoped key `presented` opens; None when the catalog holds no such key."""
        return key_access(self.catalog, presented)

    def has_scoped_keys(self) -> bool:
        return bool(self.catalog.keys())

    def document(self, document_id: int) -> DocumentRecord | None:
        return self.catalog.document(document_id)

    def document_at(self, path: Path) -> DocumentRecord | None:
        """The document ingested from `path` (resolved, as ingest stores it)."""
        return self.catalog.document_by_path(str(path.resolve()))

    def document_text(self, document_id: int) -> str:
        """The extracted text that citation offsets index into."""
        return self.catalog.document_text(document_id)

    def chunk_count(self) -> int:
        return self.catalog.count_chunks()

    def index_version(self) -> str:
        """Changes whenever a document or its chunks change: cached answers older than it are stale."""
        from footnote.answer.cache import index_version

        return index_version(self.catalog)

    def backend_names(self) -> dict[str, str]:
        """The class of each backend, the vector index's without its timing wrapper (loads them)."""
        from footnote.store.timing import untimed

        parts = {
            "generator": self.generator,
            "embedder": self.embedder,
            "vector_index": untimed(self.vectors),
        }
        return {role: type(part).__name__ for role, part in parts.items()}


def create_app(
    settings: Settings | None = None,
    embedder: Embedder | None = None,
    generator: Generator | None = None,
    judge: SupportJudge | None = None,
    language_generator: Generator | None = None,
    language_embedder: Embedder | None = None,
) -> Application:
    """The application on `settings` (by default the environment's), with any model handed in
    used instead of the one the settings name."""
    settings = settings or Settings()
    models = Models(
        settings, embedder, generator, judge, language_generator, language_embedder=language_embedder
    )
    return Application(settings, models)


@contextmanager
def isolated_app(
    prefix: str, home: Path | None = None, settings: Mapping[str, Any] | None = None
) -> Iterator[Application]:
    """An application on `home`, or else on a temporary data directory removed afterwards, with
    `settings` over the environment's: evaluations run there, never on the user's index."""
    with ExitStack() as stack:
        data = home or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=prefix)))
        app = create_app(Settings(home=data, **(settings or {})))
        stack.callback(app.close)
        yield app
