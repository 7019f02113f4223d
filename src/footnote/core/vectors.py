"""The vector type embedders make and vector indexes store."""

Vector = list[float]


def closeness(a: Vector, b: Vector) -> float:
    """How alike two unit vectors are: their dot product (the cosine), 0 when they point apart."""
    return max(0.0, sum(x * y for x, y in zip(a, b, strict=False)))
