"""The application: settings, stores and models wired together once, and what the edges call.

`app` holds the `Application` (stores, retrieval, answering, ingest), `models` the models it
opens when first needed, and `answers` the answer service every edge asks through
(`Application.answers`).
"""

from footnote.application.app import Application, StoreHealth, create_app, isolated_app

__all__ = ["Application", "StoreHealth", "create_app", "isolated_app"]
