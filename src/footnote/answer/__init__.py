"""Answers: source budgeting, prompts, streaming, and citation checking."""
