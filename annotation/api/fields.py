"""Serializer building blocks the APIs share (the data and engine APIs here, the judges' API in
evaluation/api.py): a related object shown by its slug, and outputs that are mostly counts."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet
from django.utils.encoding import smart_str
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.permissions import AmbiguousName, one_named

# A number as text: ASCII digits, an optional sign, point and exponent, nothing else.
_ASCII_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _ascii_number(data: Any) -> Any:
    """Numbers sent as text are read only when written with the digits 0-9: DRF hands them to
    Python's int() / float(), which read "٣" and "３" as 3 and "1_0" as 10, where the HTML forms
    refuse them (annotation.forms.WholeNumberField). JSON numbers pass as before."""
    if isinstance(data, str) and not _ASCII_NUMBER.fullmatch(data.strip()):
        raise serializers.ValidationError(_("Write the number with the digits 0-9."), code="ascii")
    return data


class WholeNumber(serializers.IntegerField):
    """``IntegerField`` that refuses digits of other scripts (see ``_ascii_number``)."""

    def to_internal_value(self, data: Any) -> int:
        return super().to_internal_value(_ascii_number(data))


class DecimalNumber(serializers.FloatField):
    """``FloatField`` that refuses digits of other scripts (see ``_ascii_number``)."""

    def to_internal_value(self, data: Any) -> float:
        return super().to_internal_value(_ascii_number(data))


class ExactNumber(serializers.DecimalField):
    """``DecimalField`` (money) that refuses digits of other scripts (see ``_ascii_number``)."""

    def to_internal_value(self, data: Any) -> Any:
        return super().to_internal_value(_ascii_number(data))


def slug_of(slug_field: str) -> serializers.SlugRelatedField[Any]:
    """A related object shown (read only) by one of its unique fields: a dataset by its name, a
    rubric by its key, a user by the username."""
    return serializers.SlugRelatedField(slug_field=slug_field, read_only=True)


@extend_schema_field(OpenApiTypes.STR)  # the slug: a dataset's name, an LLM's name
class VisibleSlugField(serializers.SlugRelatedField):
    """An input naming a related object by a unique field, chosen among the rows `visible(user)`
    returns for the request's user: another organizer's row is refused exactly as a missing one
    ("does not exist"), so the answer does not tell that it exists. The serializer needs the
    request in its context."""

    def __init__(self, *, visible: Callable[[Any], QuerySet], **kwargs: Any) -> None:
        self.visible = visible
        super().__init__(**kwargs)

    def get_queryset(self) -> QuerySet:
        request = self.context.get("request")
        if request is None:
            raise RuntimeError(f"{type(self).__name__} needs the request in the context")
        return self.visible(request.user)

    def to_internal_value(self, data: Any) -> Any:
        """Names are unique per owner: the user's own row, else the shared one, else the only
        visible one; several is a 400 asking for the id."""
        qs = self.get_queryset()
        if not any(f.name == "owner" for f in qs.model._meta.fields):
            return super().to_internal_value(data)
        if not isinstance(data, str):
            self.fail("invalid")
        try:
            found = one_named(qs, self.context["request"].user, **{self.slug_field: data})
        except AmbiguousName as e:
            raise serializers.ValidationError(str(e)) from None
        if found is None:
            self.fail("does_not_exist", slug_name=self.slug_field, value=smart_str(data))
        return found


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
