"""`footnote collections` and `footnote keys`: the collections documents live in, and API keys
scoped to some of them."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from footnote.application import create_app
from footnote.application.keys import create_key, revoke_key
from footnote.cli import output
from footnote.cli.options import JsonOption
from footnote.config import Settings
from footnote.core.collections import parse_collections
from footnote.store.catalog import open_catalog

collections_app = typer.Typer(help="List and remove collections of documents.", no_args_is_help=True)
keys_app = typer.Typer(help="Make, list and revoke API keys scoped to collections.", no_args_is_help=True)


@collections_app.command("list")
def collections_list(json_output: JsonOption = False) -> None:
    """Show every collection with its documents and chunks."""
    catalog = open_catalog(Settings())
    try:
        records = catalog.collections()
    finally:
        catalog.close()
    if json_output:
        output.print_json([asdict(record) for record in records])
        return
    table = Table("collection", "documents", "chunks")
    for record in records:
        table.add_row(escape(record.name), str(record.documents), str(record.chunks))
    output.console.print(table)


@collections_app.command("rm")
def collections_rm(
    name: Annotated[str, typer.Argument(help="The collection to delete, with all its documents.")],
    json_output: JsonOption = False,
) -> None:
    """Remove a collection: its documents, their chunks and their vectors."""
    footnote = create_app(Settings())
    try:
        removed = footnote.delete_collection(name)
    finally:
        footnote.close()
    if json_output:
        output.print_json({"collection": name, "removed": [asdict(record) for record in removed]})
    else:
        output.console.print(f"removed collection {escape(name)} ({len(removed)} documents)")


@keys_app.command("create")
def keys_create(
    name: Annotated[str, typer.Argument(help="A name for the key (who or what uses it).")],
    read: Annotated[str, typer.Option("--read", help="Collections it may read: A,B.")] = "",
    write: Annotated[
        str, typer.Option("--write", help="Collections it may also upload to and delete from: A.")
    ] = "",
    json_output: JsonOption = False,
) -> None:
    """Make a key; it is printed once and stored only as its hash."""
    catalog = open_catalog(Settings())
    try:
        key = create_key(catalog, name, parse_collections(read), parse_collections(write))
        record = next(record for record in catalog.keys() if record.name == name)  # noqa: SIM118
    finally:
        catalog.close()
    if json_output:
        output.print_json({"name": name, "key": key, "read": list(record.read), "write": list(record.write)})
        return
    output.console.print(key, markup=False, highlight=False)
    output.errors.print(
        f"[dim]key {escape(name)}: reads {escape(', '.join(record.read))}"
        f"{'; writes ' + escape(', '.join(record.write)) if record.write else ''}. "
        "It is shown only now: keep it.[/]"
    )


@keys_app.command("list")
def keys_list(json_output: JsonOption = False) -> None:
    """Show the scoped keys (names and collections; never the keys)."""
    catalog = open_catalog(Settings())
    try:
        records = catalog.keys()
    finally:
        catalog.close()
    rows = [
        {"name": r.name, "read": list(r.read), "write": list(r.write), "created_at": r.created_at}
        for r in records
    ]
    if json_output:
        output.print_json(rows)
        return
    table = Table("name", "reads", "writes")
    for record in records:
        table.add_row(escape(record.name), escape(", ".join(record.read)), escape(", ".join(record.write)))
    output.console.print(table)


@keys_app.command("revoke")
def keys_revoke(
    name: Annotated[str, typer.Argument(help="The key's name.")],
    json_output: JsonOption = False,
) -> None:
    """Revoke a key: every replica refuses it within seconds."""
    catalog = open_catalog(Settings())
    try:
        revoke_key(catalog, name)
    finally:
        catalog.close()
    if json_output:
        output.print_json({"name": name, "revoked": True})
    else:
        output.console.print(f"revoked key {escape(name)}")
