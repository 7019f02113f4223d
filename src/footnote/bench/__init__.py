"""Benchmarks run against a live server: `footnote bench load`."""
