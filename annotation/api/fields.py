"""Serializer building blocks the APIs share (the data and engine APIs here, the judges' API in
evaluation/api.py): a related object shown by its slug, and outputs that are mostly counts."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


def slug_of(slug_field: str) -> serializers.SlugRelatedField[Any]:
    """A related object shown (read only) by one of its unique fields: a dataset by its name, a
    rubric by its key, a user by the username."""
    return serializers.SlugRelatedField(slug_field=slug_field, read_only=True)


# An output whose whole-number counts are named in `counts` rather than declared one IntegerField
# a line. They come right after the declared field named `counts_after` (first when it is empty),
# so the output keeps the order a reader expects. (A comment, not a docstring: the OpenAPI schema
# would give it as the description of every output built on it.)
class CountsSerializer(serializers.Serializer):
    counts: tuple[str, ...] = ()
    counts_after = ""

    def get_fields(self) -> dict[str, Any]:
        declared = list(super().get_fields().items())
        names = [name for name, _ in declared]
        at = names.index(self.counts_after) + 1 if self.counts_after else 0
        counts = [(name, serializers.IntegerField()) for name in self.counts]
        return dict(declared[:at] + counts + declared[at:])
