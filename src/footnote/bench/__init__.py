"""Load generation and benchmark reports."""
