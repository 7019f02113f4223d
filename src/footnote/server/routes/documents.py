"""/v1/documents: upload (multipart), list, get, delete, reindex.

Uploads are kept under `FOOTNOTE_HOME/uploads` (a folder per collection) and ingested at
once; uploading a file of the same name to the same collection again replaces it (and
re-ingests only what changed). Ingests and deletions take one lock, so two of them never
interleave. A document of a collection the caller's key cannot read is not found; writing
one it may only read is forbidden.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, Form, Query, UploadFile
from fastapi import Path as PathParam

from footnote.core.collections import DEFAULT_COLLECTION, Access, check_collection
from footnote.errors import ForbiddenError, LoaderError, NotFoundError
from footnote.server.errors import ErrorResponse
from footnote.server.schemas.chat import CollectionName
from footnote.server.schemas.documents import (
    DeletedDocument,
    Document,
    DocumentList,
    DocumentText,
    FileReport,
    ReindexReport,
    UploadedDocument,
)
from footnote.server.state import Caller, ServerState, State
from footnote.server.uploads import safe_upload_path, save_upload, upload_folder

router = APIRouter(tags=["documents"])
DocumentId = Annotated[int, PathParam(ge=1, le=2**63 - 1)]


def _find(state: ServerState, document_id: int, access: Access) -> Document:
    """The document, when the caller can read its collection: one it cannot is not found."""
    record = state.application.document(document_id)
    if record is None or not access.can_read(record.collection):
        raise NotFoundError(f"no document {document_id}; GET /v1/documents lists them")
    return Document.model_validate(record, from_attributes=True)


@router.get("/v1/documents", response_model=DocumentList)
async def list_documents(
    state: State,
    access: Caller,
    collection: Annotated[str | None, Query(description="only this collection's documents")] = None,
) -> DocumentList:
    """The documents of every collection the caller can read, or of `collection`."""
    readable = access.readable([collection] if collection else None)
    records = await state.run_work(state.application.documents, readable)
    return DocumentList(data=[Document.model_validate(record, from_attributes=True) for record in records])


@router.get("/v1/documents/{document_id}", response_model=Document)
async def get_document(document_id: DocumentId, state: State, access: Caller) -> Document:
    return await state.run_work(_find, state, document_id, access)


def _text(state: ServerState, document_id: int, access: Access) -> DocumentText:
    document = _find(state, document_id, access)
    text = state.application.document_text(document_id)
    return DocumentText(
        id=document.id, title=document.title, format=document.format, path=document.path, text=text
    )


@router.get("/v1/documents/{document_id}/text", response_model=DocumentText)
async def get_document_text(document_id: DocumentId, state: State, access: Caller) -> DocumentText:
    """The document's extracted text, which citation offsets point into (for showing a quoted span)."""
    return await state.run_work(_text, state, document_id, access)


def check_writable(access: Access, collection: str) -> None:
    if not access.can_write(collection):
        raise ForbiddenError(
            f"this API key cannot write collection {collection!r}; use a key made with --write {collection}"
        )


def _delete(state: ServerState, document_id: int, access: Access) -> None:
    app = state.models.retrieval()  # the vector index must be open to drop the vectors
    with state.ingest_lock:
        document = _find(state, document_id, access)
        check_writable(access, document.collection)
        app.delete_document(str(document.id))
        remove_uploaded_copies(state, [document.path])


def remove_uploaded_copies(state: ServerState, paths: list[str]) -> None:
    """Delete the files of `paths` that were uploaded: an uploaded copy goes with its document."""
    uploads = upload_folder(state.settings.home).resolve()
    for path in map(Path, paths):
        if path.is_relative_to(uploads):
            path.unlink(missing_ok=True)


@router.delete("/v1/documents/{document_id}", response_model=DeletedDocument)
async def delete_document(document_id: DocumentId, state: State, access: Caller) -> DeletedDocument:
    """Remove a document, its chunks and vectors (and the file, if it was uploaded)."""
    await state.run_work(_delete, state, document_id, access)
    return DeletedDocument(id=document_id, deleted=True)


def _ingest_upload(state: ServerState, upload: UploadFile, collection: str) -> UploadedDocument:
    app = state.models.retrieval()
    target = safe_upload_path(upload_folder(state.settings.home, collection), upload.filename)
    with state.ingest_lock:
        save_upload(upload.file, target, state.settings.max_upload_bytes)
        outcome = app.ingest([target], collection=collection).files[0]
        if outcome.status == "failed":
            target.unlink(missing_ok=True)
            raise LoaderError(Path(target.name), outcome.error or "could not be ingested")
        record = app.document_at(target)
    assert record is not None
    document = Document.model_validate(record, from_attributes=True)
    return UploadedDocument(**document.model_dump(), status=outcome.status)


@router.post(
    "/v1/documents",
    status_code=201,
    response_model=UploadedDocument,
    responses={415: {"model": ErrorResponse, "description": "Unsupported file type"}},
)
async def upload_document(
    file: Annotated[UploadFile, File()],
    state: State,
    access: Caller,
    collection: Annotated[CollectionName, Form(description="the collection it joins")] = DEFAULT_COLLECTION,
) -> UploadedDocument:
    """Upload one file (multipart field `file`) and ingest it into `collection`."""
    check_writable(access, check_collection(collection))
    return await state.run_work(_ingest_upload, state, file, collection)


def _reindex(state: ServerState, access: Access) -> ReindexReport:
    app = state.models.retrieval()
    with state.ingest_lock:
        paths = [Path(record.path) for record in app.documents() if access.can_write(record.collection)]
        report = app.ingest(paths)
    files = [FileReport.model_validate(outcome, from_attributes=True) for outcome in report.files]
    return ReindexReport(summary=report.summary(), files=files)


@router.post("/v1/documents/reindex", response_model=ReindexReport)
async def reindex_documents(state: State, access: Caller) -> ReindexReport:
    """Ingest every document the caller may write again: changed files are updated, unchanged
    ones skipped."""
    return await state.run_work(_reindex, state, access)
