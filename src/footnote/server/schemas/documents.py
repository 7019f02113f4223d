"""The bodies of /v1/documents: a document's record, its text, uploads, deletions and reindexing."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Document(BaseModel):
    id: int
    object: Literal["document"] = "document"
    path: str
    title: str
    format: str
    url: str | None
    size: int
    mtime: float
    ingested_at: float
    chunk_count: int
    content_hash: str
    collection: str


class UploadedDocument(Document):
    status: Literal["new", "changed", "unchanged"]


class DocumentText(BaseModel):
    id: int
    object: Literal["document.text"] = "document.text"
    title: str
    format: str
    path: str
    text: str = Field(description="the extracted text; citation `start`/`end` offsets index into it")


class DocumentList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Document]


class DeletedDocument(BaseModel):
    id: int
    object: Literal["document.deleted"] = "document.deleted"
    deleted: bool


class FileReport(BaseModel):
    path: str
    status: str
    chunks: int
    error: str | None


class Collection(BaseModel):
    name: str
    object: Literal["collection"] = "collection"
    documents: int
    chunks: int
    writable: bool = Field(description="whether the caller's key may upload to it and delete from it")


class CollectionList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Collection]


class DeletedCollection(BaseModel):
    name: str
    object: Literal["collection.deleted"] = "collection.deleted"
    documents: int


class ReindexReport(BaseModel):
    summary: dict[str, float]
    files: list[FileReport]
