"""The document and chunk types ingest makes, defined in `footnote.core.document`."""

from footnote.core.document import Block, Chunk, Document

__all__ = ["Block", "Chunk", "Document"]
