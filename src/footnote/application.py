"""The application object: settings, stores and models wired together once.

`create_app(settings)` builds everything lazily, so a command that only lists
documents never loads a model, and tests build isolated apps on a temporary
`FOOTNOTE_HOME`. Models can be passed in (test doubles are real subclasses of
the protocols); otherwise they are resolved from the registry and hash-checked.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from footnote.answer.engine import Answer, AnswerEngine, AnswerEvent, AnswerPolicy, SupportModels
from footnote.answer.judge import SupportJudge, open_judge
from footnote.config import Settings
from footnote.core.filters import SearchFilter
from footnote.core.hits import SearchHit
from footnote.core.language import reads
from footnote.errors import FootnoteError, ModelError, NotFoundError
from footnote.ingest.pipeline import Ingestor, IngestReport, ProgressCallback
from footnote.models.base import Embedder, GenerationParams, Generator
from footnote.models.cpu import choose_embedding, cpu_flags
from footnote.models.registry import embedder_languages, model_languages, resolve_embedder
from footnote.retrieval.postings import MemoryKeywordIndex
from footnote.retrieval.rerank import Reranker, open_reranker
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from footnote.store.catalog import DocumentRecord, open_catalog
from footnote.store.timing import StoreObserver, timed
from footnote.store.vector_stores import check_vectors, open_vectors, recorded_vector_embedding, vector_kind
from footnote.store.vectors import VectorIndex

if TYPE_CHECKING:
    from footnote.models.onnx_embedder import ExportedModel

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoreHealth:
    kind: str  # embedded, postgresql or chroma-server
    error: str | None = None  # None: it answered


class Application:
    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        generator: Generator | None = None,
        judge: SupportJudge | None = None,
        language_generator: Generator | None = None,
    ) -> None:
        self.settings = settings
        settings.ensure_home()
        self.catalog = open_catalog(settings)
        self._embedder = embedder
        self._generator = generator
        self._generator_given = generator is not None  # by the caller, not loaded from the settings
        self._vectors: VectorIndex | None = None
        self._index_reconciled = False
        self._reranker: Reranker | None = None
        self._judge = judge
        self._keyword_index: MemoryKeywordIndex | None = None
        self._language_generator = language_generator
        self._language_generator_missing = ""  # why no language model could be opened
        self._store_observer: StoreObserver | None = None

    # --- lazily built parts ----------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            location = resolve_embedder(self.settings.embedder)
            runtime, precision = self.embedding_choice(location)
            if runtime == "onnx":
                self._embedder = self._onnx_embedder(location, precision)
            elif precision == "bf16":
                self._embedder = self._bf16_embedder(location)
            else:
                self._embedder = self._torch_embedder(location, precision)
        return self._embedder

    def embedding_choice(self, location: str) -> tuple[str, str]:
        """The embedder's (runtime, precision): as set, else as the existing index records, else
        the fastest on this CPU. A model id (not a local folder) has nothing to export, so torch
        runs it; a local model that fails to export is an error instead."""
        s = self.settings
        precision: str = s.embed_precision
        if precision == "auto" and s.embed_int8 is not None:
            precision = "int8" if s.embed_int8 else "fp32"
        local = Path(location).is_dir()
        built = recorded_vector_embedding(s, s.embedder)
        runtime, precision = choose_embedding(s.embed_runtime, precision, built, cpu_flags(), local)
        if runtime == "onnx" and precision == "bf16":
            raise ModelError(
                "ONNX Runtime has no fast bf16 path on a CPU; set FOOTNOTE_EMBED_RUNTIME=torch (or auto) "
                "for bf16, or FOOTNOTE_EMBED_PRECISION=int8 or fp32"
            )
        if precision == "bf16" and not local:
            raise ModelError(
                f"bf16 embedding needs a local model folder and '{s.embedder}' is a model id; "
                "set FOOTNOTE_EMBED_PRECISION=fp32 or int8"
            )
        return runtime, precision

    def _onnx_export(self, location: str, verify: bool = True, int8: bool = False) -> ExportedModel:
        """The checked ONNX export of the local model (its int8 copy with `int8`)."""
        s = self.settings
        from footnote.models.onnx_embedder import exported_model
        from footnote.models.onnx_int8 import quantized_model

        try:
            model = exported_model(Path(location), s.model_cache, s.embedder, verify=verify)
            return quantized_model(model) if int8 else model
        except ModelError as exc:
            raise ModelError(
                f"cannot embed through ONNX Runtime: {exc}. Or set FOOTNOTE_EMBED_RUNTIME=torch and "
                "FOOTNOTE_EMBED_PRECISION=fp32 or int8 to embed with torch (an index built through "
                "ONNX Runtime is then refused until rebuilt)"
            ) from exc

    def _onnx_embedder(self, location: str, precision: str) -> Embedder:
        """The embedder through ONNX Runtime. Never torch in its place: the two give vectors
        that an index built with the other cannot be searched with."""
        from footnote.models.onnx_embedder import OnnxEmbedder

        int8 = precision == "int8"
        # With int8 only the float export's manifest is read: its graph is hashed if quantized again.
        model = self._onnx_export(location, verify=not int8, int8=int8)
        return OnnxEmbedder(model, self.settings.embedder, batch_size=self.settings.embed_batch_size)

    def _bf16_embedder(self, location: str) -> Embedder:
        from footnote.models.bf16 import Bf16Embedder

        s = self.settings
        model = self._onnx_export(location)
        return Bf16Embedder(model, Path(location), s.embedder, batch_size=s.embed_batch_size)

    def _torch_embedder(self, location: str, precision: str) -> Embedder:
        from footnote.models.embedders import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(
            location,
            display_name=self.settings.embedder,
            batch_size=self.settings.embed_batch_size,
            quantize=precision == "int8",
        )

    @property
    def generator(self) -> Generator:
        if self._generator is None and self.settings.backends:
            from footnote.models.backends import build_router

            self._generator = build_router(self.settings.backends, embedded=self._embedded_generator)
        if self._generator is None:
            self._generator = self._embedded_generator()
        return self._generator

    @property
    def generator_thread_safe(self) -> bool:
        """Can answers be generated in several threads at once (without loading the model)?"""
        if self._generator is not None:
            return self._generator.thread_safe
        return bool(self.settings.backends)

    def reads(self, language: str) -> bool:
        """Does the answer model read `language`? An answer model that was handed in, or a fleet
        of backends, is the user's choice and reads every language unless `llm_languages` says
        otherwise."""
        s = self.settings
        chosen = self._generator_given or bool(s.backends)
        languages = model_languages(s.llm, s.llm_languages) if s.llm_languages or not chosen else None
        return reads(languages, language)

    def generator_for(self, language: str) -> Generator | None:
        """The model that answers questions in `language` that the answer model does not read:
        the language model (`language_llm`) when it is installed and reads it; else None."""
        s = self.settings
        if self._language_generator is None and s.language_llm and not self._language_generator_missing:
            self._language_generator = self._open_language_generator(s.language_llm)
        if self._language_generator is None or not reads(model_languages(s.language_llm), language):
            return None
        return self._language_generator

    def _open_language_generator(self, name: str) -> Generator | None:
        from footnote.models.gguf import local_gguf
        from footnote.models.llama import LlamaCppGenerator

        try:
            path = local_gguf(name, self.settings)
        except NotFoundError as exc:
            self._language_generator_missing = str(exc)
            log.info("no language model: %s", exc)
            return None
        generator = LlamaCppGenerator(
            path,
            display_name=name,
            context_length=self.settings.context_tokens,
            threads=self.settings.threads,
        )
        log.info("loaded the language model %s", name)
        return generator

    def _embedded_generator(self) -> Generator:
        from footnote.models.gguf import answer_model_file
        from footnote.models.llama import LlamaCppGenerator

        generator = LlamaCppGenerator(
            answer_model_file(self.settings),
            display_name=self.settings.llm,
            context_length=self.settings.context_tokens,
            threads=self.settings.threads,
        )
        log.info("loaded the answer model %s", generator.name)
        return generator

    @property
    def vectors(self) -> VectorIndex:
        if self._vectors is None:
            vectors = open_vectors(self.settings, self.embedder.identity, self.embedder.dimension)
            observe = self._store_observer
            self._vectors = timed(vectors, "vectors", observe) if observe else vectors
        return self._vectors

    def observe_stores(self, observe: StoreObserver) -> None:
        """Report every call to the catalog and the vector index to `observe` (metrics)."""
        self._store_observer = observe
        self.catalog = timed(self.catalog, "catalog", observe)
        if self._vectors is not None:
            self._vectors = timed(self._vectors, "vectors", observe)

    @property
    def reranker(self) -> Reranker | None:
        """The second stage the settings name (`rerank`), opened once; None when it is off."""
        if self._reranker is None:
            self._reranker = open_reranker(self.settings)
        return self._reranker

    @property
    def judge(self) -> SupportJudge | None:
        """The support judge the settings name (`judge`), opened once; None when it is off."""
        if self._judge is None:
            self._judge = open_judge(self.settings)
        return self._judge

    def retriever(self) -> HybridRetriever:
        if not self.catalog.searches_keywords and self._keyword_index is None:
            self.keep_keyword_index()
        languages = embedder_languages(self.settings.embedder, self.settings.embedder_languages)
        return HybridRetriever(
            self.catalog, self.vectors, self.embedder, self.reranker, self._keyword_index, languages
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
    ) -> AnswerEngine:
        """The engine with these settings (a request may bring its own retriever, depth and
        generation); related questions when asked here or by the settings."""
        s = self.settings
        return AnswerEngine(
            retriever or self.retriever(),
            self.generator,
            SupportModels(self.embedder, self.judge),
            AnswerPolicy.from_settings(
                s,
                self.retrieval_params(top_k or s.top_k),
                generation,
                related_questions=related_questions,
                judged=self.judge is not None,
            ),
            languages=self,
        )

    def retrieval_params(self, limit: int, mode: str = "hybrid") -> RetrievalParams:
        s = self.settings
        return RetrievalParams(
            limit,
            s.keyword_candidates,
            s.dense_candidates,
            s.rrf_k,
            mode,
            s.rrf_keyword_weight,
            s.rrf_dense_weight,
            unread_weight=s.rrf_unread_weight,
            rerank_candidates=s.rerank_candidates if s.rerank != "none" else 0,
            expansion=s.query_expansion,
        )

    # --- what the edges call ---------------------------------------------------------------

    def ingest(
        self,
        paths: Iterable[Path],
        progress: ProgressCallback | None = None,
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        prune: bool = False,
    ) -> IngestReport:
        report = self.ingestor(include, exclude).ingest(paths, progress, prune=prune)
        self._index_reconciled = True
        return report

    def ingestor(self, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> Ingestor:
        """An ingest pipeline on this app's stores; the first one also reconciles the whole index."""
        s = self.settings
        return Ingestor(
            self.catalog,
            self.vectors,
            self.embedder,
            s.chunk_tokens,
            s.chunk_overlap,
            s.embed_batch_size,
            include=include,
            exclude=exclude,
            full_reconcile=not self._index_reconciled,
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

    def ask_stream(self, question: str) -> Iterator[AnswerEvent]:
        return self.answer_engine().stream(question)

    def ask(self, question: str) -> Answer:
        return self.answer_engine().ask(question)

    def documents(self) -> list[DocumentRecord]:
        return self.catalog.list_documents()

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
        self.catalog.delete_document(record.id)
        tombstones = self.catalog.tombstones()
        index = self._vectors or open_vectors(self.settings, None, None)
        index.delete(tombstones)
        self.catalog.clear_tombstones(tombstones)
        return record

    def close(self) -> None:
        self.catalog.close()
        if self._judge is not None:
            self._judge.close()

    # --- what the HTTP API reads, so that it never reaches into the stores itself ------------

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
) -> Application:
    return Application(
        settings or Settings(),
        embedder=embedder,
        generator=generator,
        judge=judge,
        language_generator=language_generator,
    )
