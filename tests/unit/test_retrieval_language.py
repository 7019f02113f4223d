"""Languages are told apart by script, and a retriever votes only where it reads the language."""

from __future__ import annotations

import pytest

from footnote.core.language import UNKNOWN, detect_language, reads, vote
from footnote.models.registry import embedder_languages


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("印控克什米尔地区寺庙踩踏事故死亡人数", "zh"),
        ("Nov 10, 2022 ... 年，孟买埃尔芬斯通车站一座狭窄的步行桥发生踩踏事故", "zh"),
        ("RCEP具体包括哪些国家", "zh"),
        ("東京タワーは東京都港区にある電波塔です。", "ja"),
        ("서울은 대한민국의 수도이며 한강이 흐른다.", "ko"),
        ("Bamboo forests in the mountains feed the giant panda.", "en"),
        ("The word 熊猫 means panda in Chinese, as every dictionary says.", "en"),
        ("2023-01-01 12:00 ... 42", UNKNOWN),
        ("", UNKNOWN),
    ],
)
def test_languages_are_detected_by_script(text: str, language: str) -> None:
    assert detect_language(text) == language


def test_a_retriever_votes_only_where_it_reads_query_and_chunk() -> None:
    english = frozenset({"en"})

    assert vote(english, "en", "en", unread=0.0) == 1.0
    assert vote(english, "zh", "en", unread=0.0) == 0.0
    assert vote(english, "en", "zh", unread=0.25) == 0.25
    assert vote(None, "zh", "ko", unread=0.0) == 1.0  # None: reads every language
    assert reads(english, UNKNOWN)  # numbers and codes are everyone's


def test_the_bundled_embedder_reads_english_and_settings_can_say_otherwise() -> None:
    assert embedder_languages("minilm-l6") == frozenset({"en"})
    assert embedder_languages("minilm-l6", ["en", "zh"]) == frozenset({"en", "zh"})
    assert embedder_languages("BAAI/bge-m3") is None
    assert embedder_languages("/models/my-embedder", ["zh"]) == frozenset({"zh"})
