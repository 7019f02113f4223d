"""One Settings object for the whole application."""

from footnote.config.settings import Settings, default_home

__all__ = ["Settings", "default_home"]
