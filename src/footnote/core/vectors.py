"""The vector type embedders make and vector indexes store."""

Vector = list[float]
