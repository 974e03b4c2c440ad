"""Small statistics helpers."""


def mean(values):
    """The arithmetic mean of a non-empty list of numbers."""
    return sum(values) / len(values)


def median(values):
    """The median of a non-empty list of numbers."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]
