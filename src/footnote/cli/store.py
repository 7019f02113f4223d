"""`footnote store`: move an embedded index into the shared stores, and check catalog and vectors agree."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Annotated

import typer

from footnote.cli import output
from footnote.cli.options import JsonOption
from footnote.config import Settings
from footnote.store.catalog import open_catalog
from footnote.store.moving import copy_index, copy_vectors, drift, open_vectors_at, recorded_embedder
from footnote.store.postgres import PostgresCatalog
from footnote.store.sqlite import SqliteCatalog
from footnote.store.vector_stores import vector_token
from footnote.store.vectors import PARAMS_FILE

store_app = typer.Typer(help="Move and check the catalog and vector stores.", no_args_is_help=True)


@store_app.command("migrate")
def migrate(
    to_catalog: Annotated[
        str,
        typer.Option("--to-catalog", help="postgresql://… of an empty database for the catalog."),
    ],
    to_vectors: Annotated[
        str | None,
        typer.Option("--to-vectors", help="http://host:port of a Chroma server (or a folder) for vectors."),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Copy the embedded index in FOOTNOTE_HOME into shared stores, without embedding again."""
    settings = Settings()
    source = SqliteCatalog(settings.catalog_path)
    target = PostgresCatalog(to_catalog)
    try:
        vectors = None
        if to_vectors is not None:
            identity, dimension = recorded_embedder(settings.vector_path)
            token = vector_token(settings)
            vectors = (
                open_vectors_at(str(settings.vector_path), None, identity, dimension),
                open_vectors_at(to_vectors, token, identity, dimension, settings.vector_collection),
            )
        report = copy_index(source, target, *(vectors or (None, None)))
        if to_vectors is not None and (settings.language_vector_path / PARAMS_FILE).exists():
            report = replace(report, language_vectors=_copy_language_vectors(settings, source, to_vectors))
    finally:
        source.close()
        target.close()
    if json_output:
        output.print_json(asdict(report))
    else:
        copied = f"copied {report.documents} documents and {report.chunks} chunks"
        copied += f" and {report.vectors} vectors" if to_vectors else ""
        copied += f" (and {report.language_vectors} in the language index)" if report.language_vectors else ""
        output.console.print(copied + (f"; {report.keys} scoped API keys" if report.keys else ""))


def _copy_language_vectors(settings: Settings, source: SqliteCatalog, to_vectors: str) -> int:
    """Copy the second index (chunks in languages the embedder does not read) beside the first:
    the collection named with `-languages` on a server, the folder named so beside a folder."""
    identity, dimension = recorded_embedder(settings.language_vector_path)
    token = vector_token(settings)
    if to_vectors.startswith(("http://", "https://")):
        target = open_vectors_at(to_vectors, token, identity, dimension, settings.language_vector_collection)
    else:
        target = open_vectors_at(f"{to_vectors.rstrip('/')}-languages", None, identity, dimension)
    here = open_vectors_at(str(settings.language_vector_path), None, identity, dimension)
    return copy_vectors(source, here, target)


@store_app.command("check")
def check(json_output: JsonOption = False) -> None:
    """Report drift between the catalog and the vector index (exit code 1 when they disagree)."""
    settings = Settings()
    catalog = open_catalog(settings)
    try:
        location = settings.vector_url or str(settings.vector_path)
        token = vector_token(settings)
        found = drift(catalog, open_vectors_at(location, token, None, None, settings.vector_collection))
    finally:
        catalog.close()
    if json_output:
        output.print_json({**asdict(found), "in_step": found.in_step})
    else:
        output.console.print(
            f"{found.chunks} chunks, {found.vectors} vectors, {len(found.pending)} waiting to be embedded; "
            f"{len(found.chunks_without_vectors)} chunks without vectors, "
            f"{len(found.vectors_without_chunks)} vectors without chunks"
        )
    if not found.in_step:
        raise typer.Exit(code=1)
