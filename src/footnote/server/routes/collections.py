"""/v1/collections: the collections the caller's key can read, and deleting one it may write."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from fastapi import Path as PathParam

from footnote.core.collections import Access
from footnote.server.routes.documents import check_writable, remove_uploaded_copies
from footnote.server.schemas.chat import CollectionName
from footnote.server.schemas.documents import Collection, CollectionList, DeletedCollection
from footnote.server.state import Caller, ServerState, State

router = APIRouter(tags=["documents"])
NamePath = Annotated[CollectionName, PathParam()]


def _list(state: ServerState, access: Access) -> CollectionList:
    return CollectionList(
        data=[
            Collection(
                name=record.name,
                documents=record.documents,
                chunks=record.chunks,
                writable=access.can_write(record.name),
            )
            for record in state.application.collections()
            if access.can_read(record.name)
        ]
    )


@router.get("/v1/collections", response_model=CollectionList)
async def list_collections(state: State, access: Caller) -> CollectionList:
    """The collections that hold documents and that the caller's key can read."""
    return await state.run_work(_list, state, access)


def _delete(state: ServerState, name: str, access: Access) -> DeletedCollection:
    access.readable([name])  # one the caller cannot read is not found
    check_writable(access, name)
    app = state.models.retrieval()  # the vector index must be open to drop the vectors
    with state.ingest_lock:
        records = app.delete_collection(name)
        remove_uploaded_copies(state, [record.path for record in records])
    return DeletedCollection(name=name, documents=len(records))


@router.delete("/v1/collections/{name}", response_model=DeletedCollection)
async def delete_collection(name: NamePath, state: State, access: Caller) -> DeletedCollection:
    """Delete every document of the collection, with its chunks, vectors and uploaded files."""
    return await state.run_work(_delete, state, name, access)
