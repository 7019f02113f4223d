"""/v1/documents: upload (multipart), list, get, delete, reindex.

Uploads are kept under `FOOTNOTE_HOME/uploads` and ingested at once; uploading a file
of the same name again replaces it (and re-ingests only what changed). Ingests and
deletions take one lock, so two of them never interleave.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, UploadFile
from fastapi import Path as PathParam

from footnote.errors import LoaderError, NotFoundError
from footnote.server.errors import ErrorResponse
from footnote.server.schemas.documents import (
    DeletedDocument,
    Document,
    DocumentList,
    DocumentText,
    FileReport,
    ReindexReport,
    UploadedDocument,
)
from footnote.server.state import ServerState, State
from footnote.server.uploads import safe_upload_path, save_upload, upload_folder

router = APIRouter(tags=["documents"])
DocumentId = Annotated[int, PathParam(ge=1, le=2**63 - 1)]


def _find(state: ServerState, document_id: int) -> Document:
    record = state.application.document(document_id)
    if record is None:
        raise NotFoundError(f"no document {document_id}; GET /v1/documents lists them")
    return Document.model_validate(record, from_attributes=True)


@router.get("/v1/documents", response_model=DocumentList)
async def list_documents(state: State) -> DocumentList:
    records = await state.run_work(lambda: state.application.documents())
    return DocumentList(data=[Document.model_validate(record, from_attributes=True) for record in records])


@router.get("/v1/documents/{document_id}", response_model=Document)
async def get_document(document_id: DocumentId, state: State) -> Document:
    return await state.run_work(_find, state, document_id)


def _text(state: ServerState, document_id: int) -> DocumentText:
    document = _find(state, document_id)
    text = state.application.document_text(document_id)
    return DocumentText(
        id=document.id, title=document.title, format=document.format, path=document.path, text=text
    )


@router.get("/v1/documents/{document_id}/text", response_model=DocumentText)
async def get_document_text(document_id: DocumentId, state: State) -> DocumentText:
    """The document's extracted text, which citation offsets point into (for showing a quoted span)."""
    return await state.run_work(_text, state, document_id)


def _delete(state: ServerState, document_id: int) -> None:
    app = state.models.retrieval()  # the vector index must be open to drop the vectors
    with state.ingest_lock:
        document = _find(state, document_id)
        app.delete_document(str(document.id))
        path = Path(document.path)
        if path.parent == upload_folder(state.settings.home).resolve():
            path.unlink(missing_ok=True)  # an uploaded copy goes with its document


@router.delete("/v1/documents/{document_id}", response_model=DeletedDocument)
async def delete_document(document_id: DocumentId, state: State) -> DeletedDocument:
    """Remove a document, its chunks and vectors (and the file, if it was uploaded)."""
    await state.run_work(_delete, state, document_id)
    return DeletedDocument(id=document_id, deleted=True)


def _ingest_upload(state: ServerState, upload: UploadFile) -> UploadedDocument:
    app = state.models.retrieval()
    target = safe_upload_path(upload_folder(state.settings.home), upload.filename)
    with state.ingest_lock:
        save_upload(upload.file, target, state.settings.max_upload_bytes)
        outcome = app.ingest([target]).files[0]
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
async def upload_document(file: Annotated[UploadFile, File()], state: State) -> UploadedDocument:
    """Upload one file (multipart field `file`) and ingest it."""
    return await state.run_work(_ingest_upload, state, file)


def _reindex(state: ServerState) -> ReindexReport:
    app = state.models.retrieval()
    with state.ingest_lock:
        report = app.ingest([Path(record.path) for record in app.documents()])
    files = [FileReport.model_validate(outcome, from_attributes=True) for outcome in report.files]
    return ReindexReport(summary=report.summary(), files=files)


@router.post("/v1/documents/reindex", response_model=ReindexReport)
async def reindex_documents(state: State) -> ReindexReport:
    """Ingest every known document again: changed files are updated, unchanged ones skipped."""
    return await state.run_work(_reindex, state)
