"""Strict parsing of what annotator browsers and crowd platforms send.

Python's int() takes far more than a form should: Unicode digits ('٣' is 3), underscores
('1_0'), surrounding spaces, and it raises on superscripts ('²' passes isdigit()) and on strings
longer than 4,300 digits. PostgreSQL refuses NUL in text. Everything here accepts the plain
form only and says no to the rest, so the views answer 400 instead of storing odd values or
failing with a 500.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.utils.translation import gettext, gettext_lazy

_ASCII_INT = re.compile(r"[0-9]{1,9}")
_PUBLIC_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
MAX_EXTERNAL_ID = 200
# A JSON escape of a UTF-16 surrogate (\ud800-\udfff); a valid pair decodes to one character.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def small_int(raw: object) -> int | None:
    """A non-negative whole number written in ASCII digits (at most 9), else None."""
    if isinstance(raw, str) and _ASCII_INT.fullmatch(raw):
        return int(raw)
    return None


def is_public_id(raw: str) -> bool:
    """Could this be a Study.public_id (token_urlsafe)? Anything else is not a study."""
    return bool(_PUBLIC_ID.fullmatch(raw))


def external_id(raw: str, *, required: bool = False) -> str:
    """A crowd platform's id (worker, study, session, assignment, HIT): printable text of at most
    200 characters, spaces at the ends dropped. Raises ValueError with the reason."""
    value = (raw or "").strip()
    if not value:
        if required:
            raise ValueError("empty")
        return ""
    if len(value) > MAX_EXTERNAL_ID:
        raise ValueError("too long")
    if not value.isprintable():
        raise ValueError("control characters")
    return value


def json_loads(text: str) -> Any:
    """json.loads for text from outside. Raises ValueError (like bad JSON) also for what
    json.loads lets through but nothing after it can handle: nesting deeper than Python's stack
    ("[[[[...": RecursionError) and a lone surrogate ("\\ud800", half of a UTF-16 pair), which
    no database text stores and no answer that echoes it can encode."""
    try:
        data = json.loads(text)
    except RecursionError as exc:
        raise ValueError(NESTED_TOO_DEEPLY) from exc
    if _SURROGATE_ESCAPE.search(text) and has_lone_surrogate(data):
        raise ValueError(LONE_SURROGATE)
    return data


# Lazy: str() of the exception gives them in the reader's language when shown.
NESTED_TOO_DEEPLY = gettext_lazy("nested too deeply")
LONE_SURROGATE = gettext_lazy("a \\u escape names a lone surrogate (half of a UTF-16 pair)")
NUMBER_TOO_LONG = gettext_lazy("a number has too many digits")
# Python's reasons for bad JSON (json.JSONDecodeError.msg without a trailing " at": the line and
# column follow), in the reader's words; the English ones are Python's own.
JSON_REASONS = {
    "Expecting value": gettext_lazy("Expecting value"),
    "Extra data": gettext_lazy("Extra data"),
    "Unterminated string starting": gettext_lazy("Unterminated string starting"),
    "Invalid control character": gettext_lazy("Invalid control character"),
    "Invalid \\escape": gettext_lazy("Invalid \\escape"),
    "Invalid \\uXXXX escape": gettext_lazy("Invalid \\uXXXX escape"),
    "Expecting ',' delimiter": gettext_lazy("Expecting ',' delimiter"),
    "Expecting ':' delimiter": gettext_lazy("Expecting ':' delimiter"),
    "Expecting property name enclosed in double quotes": gettext_lazy(
        "Expecting property name enclosed in double quotes"
    ),
    "Illegal trailing comma before end of object": gettext_lazy(
        "Illegal trailing comma before end of object"
    ),
    "Illegal trailing comma before end of array": gettext_lazy(
        "Illegal trailing comma before end of array"
    ),
}


def json_reason(exc: BaseException) -> Any:
    """Why the text is not JSON we can read, in the reader's language (lazy: put in words when
    shown); Python's words for a syntax error it has no translation of."""
    if isinstance(exc, json.JSONDecodeError):
        msg = exc.msg.removesuffix(" at")
        return JSON_REASONS.get(msg, msg)
    if isinstance(exc, RecursionError):
        return NESTED_TOO_DEEPLY
    if exc.args and exc.args[0] in (NESTED_TOO_DEEPLY, LONE_SURROGATE):
        return exc.args[0]
    if isinstance(exc, ValueError) and "digits" in str(exc):  # int() past its 4,300 digits
        return NUMBER_TOO_LONG
    return str(exc)


def json_error(exc: BaseException) -> str:
    """A clear message for text that is not JSON we can read, in the active language: the line,
    column and reason of a syntax error, else what is wrong (not UTF-8, nested too deeply, a
    number too long, a lone surrogate). Never Python's English text alone."""
    if isinstance(exc, json.JSONDecodeError):
        return gettext("Not valid JSON at line %(line)s, column %(column)s: %(reason)s.") % {
            "line": exc.lineno,
            "column": exc.colno,
            "reason": json_reason(exc),
        }
    if isinstance(exc, UnicodeDecodeError):
        return gettext("Not valid JSON: the text is not UTF-8.")
    if isinstance(exc, RecursionError | ValueError):
        return gettext("Not valid JSON: %(reason)s.") % {"reason": json_reason(exc)}
    return gettext("Not valid JSON.")


def has_lone_surrogate(data: Any) -> bool:
    """Whether parsed JSON holds a lone surrogate anywhere (keys included), in one dump."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
