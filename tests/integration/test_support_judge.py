"""The LLM support judge on the bundled model, through the settings a user writes."""

from __future__ import annotations

from pathlib import Path

from footnote.answer.citations import CitationChecker
from footnote.answer.judge import LlmJudge, open_judge
from footnote.config import Settings
from footnote.core.hits import SearchHit
from footnote.perplexity import scorer_opener

SOURCE = "The Fresnel lens was invented by the French physicist Augustin-Jean Fresnel in 1822."


def test_an_llm_judge_opens_from_the_settings_and_scores_real_pairs(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, verify_model="llm:smollm2-135m")
    judge = open_judge(settings, scorer_opener(settings))
    assert isinstance(judge, LlmJudge) and judge.name == "llm:smollm2-135m"
    try:
        scores = judge.support([(SOURCE, SOURCE), (SOURCE, "Tides are caused by the wind.")])
        assert len(scores) == 2 and all(0.0 < score < 1.0 for score in scores)
        # The checker keeps a citation exactly when the judge's probability reaches the threshold.
        hit = SearchHit(1, 1, "fresnel.md", "Fresnel", SOURCE, 0, len(SOURCE))
        lenient = CitationChecker([hit], judge=judge, judge_threshold=0.0).check(SOURCE)
        strict = CitationChecker([hit], judge=judge, judge_threshold=1.0).check(SOURCE)
        assert lenient.supported and lenient.citations[0].score == scores[0]
        assert not strict.supported
    finally:
        judge.close()
