"""`python -m footnote` runs the command-line interface."""

from footnote.cli.main import run

run()
