"""The language of a chunk or a query and who can read it, defined in `footnote.core.language`
(the catalog stores each chunk's language, so the stores need it too)."""

from footnote.core.language import CHINESE, ENGLISH, JAPANESE, KOREAN, UNKNOWN, detect_language, reads, vote

__all__ = ["CHINESE", "ENGLISH", "JAPANESE", "KOREAN", "UNKNOWN", "detect_language", "reads", "vote"]
