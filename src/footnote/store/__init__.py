"""Stores: the SQLite catalog (source of truth, keyword index) and the vector index."""
