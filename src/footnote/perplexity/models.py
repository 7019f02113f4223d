"""From a `--model` string to an open TokenScorer.

- `smollm2-135m`, `path/to/model.gguf`: llama.cpp in process (SHA-256 checked for registered names).
- `smollm2-135m@q8_0`: that model requantized with llama.cpp into FOOTNOTE_HOME/models, then as above.
- `transformers:NAME|GGUF|FOLDER|ID`: the transformers reference (a GGUF is dequantized once and cached).
- `http(s)://host:port/v1[#model]`: a remote OpenAI-compatible server with prompt logprobs;
  tokens are made locally with the tokenizer of `tokenizer` (default: the configured LLM).
"""

from __future__ import annotations

from pathlib import Path

from footnote.config import Settings
from footnote.models.gguf import local_gguf
from footnote.models.registry import REGISTRY
from footnote.models.scoring import ScorerOpener, TokenScorer

TRANSFORMERS_PREFIX = "transformers:"


def is_remote(spec: str) -> bool:
    return spec.startswith(("http://", "https://"))


def scorer_opener(settings: Settings) -> ScorerOpener:
    """What the LLM reranker and judge open their scorer with: `open_scorer` on these settings."""
    return lambda spec, context_length: open_scorer(spec, settings, context_length=context_length)


def open_scorer(
    spec: str,
    settings: Settings,
    context_length: int = 512,
    tokenizer: str | None = None,
) -> TokenScorer:
    """An open scorer for `spec` whose windows hold up to `context_length` tokens."""
    if is_remote(spec):
        from footnote.perplexity.backends.llamacpp import load_tokenizer
        from footnote.perplexity.backends.remote import RemoteScorer

        base_url, _, model = spec.partition("#")
        vocab = load_tokenizer(local_gguf(tokenizer or settings.llm, settings))
        key = settings.remote_api_key.get_secret_value() if settings.remote_api_key else None
        return RemoteScorer(base_url, vocab, model=model or None, api_key=key)
    if spec.startswith(TRANSFORMERS_PREFIX):
        from footnote.perplexity.backends.transformers import TransformersScorer

        source = spec.removeprefix(TRANSFORMERS_PREFIX)
        location: Path | str = source
        if source in REGISTRY or source.endswith(".gguf"):
            location = local_gguf(source, settings)
        cache = settings.model_cache / "transformers"
        return TransformersScorer(location, cache_dir=cache, threads=settings.threads, display_name=spec)
    from footnote.perplexity.backends.llamacpp import LlamaCppScorer

    return LlamaCppScorer(
        local_gguf(spec, settings),
        context_length=context_length,
        threads=settings.threads,
        display_name=spec,
    )


def open_perplexity_scorer(spec: str, settings: Settings, context_length: int = 512) -> TokenScorer:
    """The scorer `footnote ppl` scores a local model with, on the runtime FOOTNOTE_SCORE_RUNTIME
    names (auto: the fastest measured for this CPU, `footnote.models.cpu.fastest_scoring`): torch
    in bf16 on the GGUF dequantized once, or llama.cpp. Remote and `transformers:` specs score as
    they say."""
    from footnote.models.cpu import cpu_flags, fastest_scoring

    runtime = settings.score_runtime if settings.score_runtime != "auto" else fastest_scoring(cpu_flags())
    if runtime != "torch-bf16" or is_remote(spec) or spec.startswith(TRANSFORMERS_PREFIX):
        return open_scorer(spec, settings, context_length=context_length)
    from footnote.perplexity.backends.transformers import TransformersScorer

    return TransformersScorer(
        local_gguf(spec, settings),
        cache_dir=settings.model_cache / "transformers",
        threads=settings.threads,
        display_name=f"{spec} (torch bf16)",
        bf16=True,
    )
