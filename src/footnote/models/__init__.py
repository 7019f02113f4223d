"""Models: the embedder and generator protocols, their backends, and the registry."""

from footnote.models.base import Embedder, GenerationParams, Generator, Message

__all__ = ["Embedder", "GenerationParams", "Generator", "Message"]
