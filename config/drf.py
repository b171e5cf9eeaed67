"""API-wide input safety: one JSON parser and one exception handler for every DRF view.

Whatever a client sends, the API answers 4xx with a message and writes nothing; a 5xx means a bug
in our code, never bad input. Validators and serializers refuse bad values first; this module is
the net under them:

- ``SafeJSONParser``: a deeply nested body ("[[[[...") makes Python's JSON decoder raise
  RecursionError, and a 5,000-digit number hits Python's int-conversion limit; both are a 400,
  and so is a lone surrogate ("\\ud800"), which no text column stores and no answer can echo.
  Every refusal says what is wrong in the reader's language (annotation.inputs.json_error: the
  line and column of a syntax error), not Python's English decoder message.
- ``SafeTokenAuthentication``: DRF encodes the Authorization header as Latin-1 before it splits
  it, so a header with other characters ("Token ١٢", which a test client or an ASGI adapter can
  pass through) raised UnicodeEncodeError: now refused like any malformed header.
- ``RawFormsBrowsableAPIRenderer``: the API opened in a browser offers the raw JSON / form-data
  box only. DRF's HTML form for a POST or PUT lists each related field's whole queryset in a
  drop-down: /api/imports/ named every organizer's datasets and every account's username.
- ``exception_handler``: Django's ValidationError (from model ``full_clean`` or a service) and
  the database's DataError (a value the column cannot hold: NUL in PostgreSQL text, a number
  beyond the column's range) become a 400 with the messages, after DRF's own handling; an
  IntegrityError of a unique or foreign-key constraint (two requests created the same name at the
  same moment: both passed the "name is free" check before either committed) is a 409
  (``config.conflicts``); any other IntegrityError is a bug and stays a 500.
"""

from __future__ import annotations

import logging

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError, IntegrityError
from rest_framework import status
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed, ParseError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import JSONParser
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.response import Response

logger = logging.getLogger(__name__)


class ClientIpThrottleMixin:
    """For DRF throttle classes: key on annotation.net.limit_key (TRUSTED_PROXIES-aware; an IPv6
    client by its /64), the key every per-address rule uses, instead of DRF's own reading of
    X-Forwarded-For."""

    def get_ident(self, request):
        from annotation.net import limit_key

        return limit_key(request)


class RawFormsBrowsableAPIRenderer(BrowsableAPIRenderer):
    """The browsable API without its generated HTML forms: a related field's drop-down would
    list rows of every organizer (a serializer's queryset is scoped when it validates, not when
    DRF draws the form). The raw data box, which lists nothing, stays for POST and PUT; the
    DELETE and OPTIONS buttons stay too."""

    def get_rendered_html_form(self, data, view, method, request):
        if method in ("DELETE", "OPTIONS"):
            return super().get_rendered_html_form(data, view, method, request)
        return None


class SafeTokenAuthentication(TokenAuthentication):
    """DRF's token authentication; a header it cannot encode is a malformed header."""

    def authenticate(self, request):
        try:
            return super().authenticate(request)
        except UnicodeError as exc:
            raise AuthenticationFailed(
                "Invalid token header. Token string should not contain invalid characters."
            ) from exc


class Pages(LimitOffsetPagination):
    """Every list of the API (DEFAULT_PAGINATION_CLASS): ?limit=&offset= pages with count and
    next/previous links. A limit past max_limit is cut to it; an offset past any real list is
    clamped: a huge number is never a database error (SQLite's LIMIT is a 64-bit integer)."""

    default_limit = 100
    max_limit = 500
    max_offset = 10**9

    def get_offset(self, request) -> int:
        return min(super().get_offset(request), self.max_offset)


class SafeJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        from annotation.inputs import LONE_SURROGATE, has_lone_surrogate, json_error

        try:
            data = super().parse(stream, media_type, parser_context)
        except ParseError as exc:
            # DRF's "JSON parse error - Expecting value: line 1 column 1 (char 0)" is Python's
            # English; say it in the reader's language, with the line and column.
            raise ParseError(json_error(exc.__context__ or exc)) from exc.__context__
        except (RecursionError, ValueError) as exc:
            raise ParseError(json_error(exc)) from exc
        # "\ud800" is valid JSON but no text: a lookup, a save or an error message that echoes
        # it would fail to encode it.
        if has_lone_surrogate(data):
            raise ParseError(json_error(ValueError(LONE_SURROGATE)))
        return data


def validation_payload(exc: DjangoValidationError) -> dict:
    """A Django ValidationError as DRF would show a serializer's: field -> messages."""
    if hasattr(exc, "error_dict"):
        return {field: list(messages) for field, messages in exc.message_dict.items()}
    return {"detail": " ".join(exc.messages)}


def exception_handler(exc, context):
    # Imported here: rest_framework.views reads DEFAULT_PARSER_CLASSES (this module) on import.
    from rest_framework.views import exception_handler as drf_exception_handler
    from rest_framework.views import set_rollback

    response = drf_exception_handler(exc, context)
    if response is not None:
        return response
    if isinstance(exc, DjangoValidationError):
        set_rollback()
        return Response(validation_payload(exc), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, IntegrityError):
        from config.conflicts import CONFLICT, is_conflict, log_conflict

        if not is_conflict(exc):
            return None  # a bug of ours, not the user's conflict: a 500, logged by Django
        set_rollback()
        log_conflict(context.get("request"), exc)
        return Response({"detail": str(CONFLICT)}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, DataError):
        set_rollback()
        logger.info("API input refused by the database: %s", exc)
        return Response(
            {"detail": "A value is out of range or holds characters that cannot be stored."},
            status=status.HTTP_400_BAD_REQUEST,
        )
    return None
