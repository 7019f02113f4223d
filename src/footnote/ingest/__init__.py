"""Ingest: loaders per format, structure-aware chunking, and the incremental pipeline."""
