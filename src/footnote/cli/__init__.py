"""The command-line interface (thin: parse, call the core, print)."""
