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
        raise ValueError("nested too deeply") from exc
    if _SURROGATE_ESCAPE.search(text) and has_lone_surrogate(data):
        raise ValueError("a \\u escape names a lone surrogate (half of a UTF-16 pair)")
    return data


def has_lone_surrogate(data: Any) -> bool:
    """Whether parsed JSON holds a lone surrogate anywhere (keys included), in one dump."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
