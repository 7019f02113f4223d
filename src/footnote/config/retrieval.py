"""Settings of retrieval's fusion and its optional stages (query expansion, reranking), each measured
with `footnote eval retrieval`. Part of `footnote.config.Settings`, read from `FOOTNOTE_*` like the
rest.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator


class RetrievalSettings(BaseModel):
    """How the keyword, dense and language lists are fused, and what runs after."""

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
    # (retrieval_chinese-weights-rgb-zh-dev-*.json.xz).
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

    # --- second-stage reranking (off by default: measured with `footnote eval retrieval`) ------
    rerank: Literal["none", "cross-encoder", "llm"] = Field(
        "none", description="rescore the best fused candidates: a cross-encoder, or the LLM's P(Yes)"
    )
    rerank_model: str | None = Field(
        None, description="cross-encoder folder or cached model id; for llm, a GGUF (default: llm)"
    )
    rerank_candidates: int = Field(20, ge=1, le=200, description="fused candidates the reranker rescores")

    @field_validator("rrf_signal_weights", mode="after")
    @classmethod
    def _signal_weights_in_range(cls, weights: dict[str, float]) -> dict[str, float]:
        for name, weight in weights.items():
            if not 0.0 <= weight <= 10.0:
                raise ValueError(f"the weight of signal '{name}' is {weight}; use a number from 0 to 10")
        return weights
